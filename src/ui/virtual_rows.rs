//! Virtual scrolling, the one way the page's long lists scroll (the resource
//! table, the delta list, the logs): a scroll area of `total` rows of one
//! fixed height draws only the rows in view and some either side, with
//! spacers above and below so the scroll bar is the whole list's.
//!
//! Two halves, because the table's and the delta list's rows are read with
//! the frame, before those views render:
//! - [`RowWindow`] is the arithmetic: which rows to draw for a scroll
//!   position. The app asks the frame for the table's and the delta list's
//!   ([`RowWindow::rows`]; the frame clamps them to the rows there are), the
//!   logs view asks its log frame ([`RowWindow::rows_of`]).
//! - [`use_virtual_rows`] wires the scroll area: its node, the scroll handler
//!   that reports the new position, the spacers for the rows not drawn and,
//!   for a followed log, keeping the area scrolled to its end so a growing
//!   list shows its newest rows.
//!
//! The scroll position is the caller's, kept in the page's state
//! (`AppState::table_scroll`, `delta_scroll`, the logs view's
//! `LogUi::scroll`), so it outlives the view that draws it.

use yew::prelude::*;

use crate::app::scroll::ScrollPosition;

/// Which rows a scroll area draws around the ones in view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowWindow {
    /// Every row's height in pixels (the stylesheet's).
    pub row_height: f64,
    /// Rows drawn above the first row in view.
    pub above: usize,
    /// Rows drawn below the last row in view.
    pub below: usize,
    /// How the rows in view are counted.
    pub in_view: InView,
}

/// How many rows an area of some height has in view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InView {
    /// The rows that fit whole in the height.
    Whole,
    /// Every row that can show at least in part at any offset: the height
    /// in rows rounded up, and one more for a row cut at the top.
    Partly,
}

/// Whether a scroll area keeps its end in view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum End {
    /// It stays where the user scrolled it.
    Free,
    /// It is kept scrolled to its end (a followed log), and draws the last rows.
    Follow,
}

impl RowWindow {
    fn rows_in_view(&self, height: f64) -> usize {
        match self.in_view {
            InView::Whole => (height / self.row_height) as usize,
            InView::Partly => (height / self.row_height).ceil() as usize + 1,
        }
    }

    /// The rows to draw for the area at `scroll`: (first, count), not
    /// clamped to the rows there are (a frame that reads them clamps them
    /// as [`RowWindow::rows_of`] does).
    pub fn rows(&self, ScrollPosition { top, height }: ScrollPosition) -> (usize, usize) {
        let first = ((top / self.row_height) as usize).saturating_sub(self.above);
        (first, self.rows_in_view(height) + self.above + self.below)
    }

    /// The rows of `total` to draw for the area at `scroll`: (first, count);
    /// following the end, the last ones.
    pub fn rows_of(&self, scroll: ScrollPosition, total: usize, end: End) -> (usize, usize) {
        let (first, count) = self.rows(scroll);
        let first = match end {
            End::Free => first.min(total),
            End::Follow => total.saturating_sub(self.rows_in_view(scroll.height) + self.above),
        };
        (first, count.min(total - first))
    }
}

/// The scroll area's wiring.
pub struct VirtualRows {
    /// Put on the scroll area.
    pub node: NodeRef,
    pub onscroll: Callback<Event>,
    row_height: f64,
    total: usize,
}

impl VirtualRows {
    /// The spacers' heights in pixels, above and below `drawn` rows from
    /// row `first`.
    pub fn spacers(&self, first: usize, drawn: usize) -> (f64, f64) {
        (
            first as f64 * self.row_height,
            self.total.saturating_sub(first + drawn) as f64 * self.row_height,
        )
    }
}

/// A scroll area of `total` rows laid out by `window`; `on_scrolled` gets
/// the new position and whether the end is in view. With [`End::Follow`]
/// the area is scrolled to its end after each render that left it short.
#[hook]
pub fn use_virtual_rows(
    window: RowWindow,
    total: usize,
    end: End,
    on_scrolled: Callback<(ScrollPosition, bool)>,
) -> VirtualRows {
    let node = use_node_ref();
    let row_height = window.row_height;
    {
        let node = node.clone();
        let full = total as f64 * row_height;
        use_effect(move || {
            if end == End::Follow {
                if let Some(element) = node.cast::<web_sys::Element>() {
                    if (element.scroll_top() as f64) < full - element.client_height() as f64 - 1.0 {
                        element.set_scroll_top(full as i32);
                    }
                }
            }
        });
    }
    let onscroll = {
        let node = node.clone();
        Callback::from(move |_: Event| {
            if let Some(element) = node.cast::<web_sys::Element>() {
                let top = element.scroll_top() as f64;
                let height = element.client_height() as f64;
                let at_end = top + height >= element.scroll_height() as f64 - row_height;
                on_scrolled.emit((ScrollPosition { top, height }, at_end));
            }
        })
    };
    VirtualRows {
        node,
        onscroll,
        row_height,
        total,
    }
}
