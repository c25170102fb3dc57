//! Where a scroll area is scrolled, as the page's state keeps it: the
//! table's, the delta list's and the logs view's positions are state (a
//! re-render or a view that comes back starts where the user was), and the
//! virtual-scrolling hook reads them to pick the rows to draw. A module of
//! its own because both the state (`state`) and the logs view's display
//! (`log_ui`) hold one, and neither should import the other for it.

/// A scroll area's position, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScrollPosition {
    /// How far down the area is scrolled (`scrollTop`).
    pub top: f64,
    /// How tall its visible part is (`clientHeight`).
    pub height: f64,
}

impl ScrollPosition {
    /// At the top of an area `height` pixels tall.
    pub const fn at_top(height: f64) -> ScrollPosition {
        ScrollPosition { top: 0.0, height }
    }
}
