//! Virtual scrolling as a hook: a scroll area of `total` rows of a fixed
//! height draws only the rows in view (plus some either side), padded above
//! and below so the scroll bar is the whole list's. The scroll position is
//! the caller's state (the page's reducer), told through `on_scrolled`;
//! when `stick_to_end` is set the area is kept scrolled to its end, so a
//! growing list (a followed log) shows its newest rows.

use yew::prelude::*;

use crate::app::state::ScrollPosition;

/// Rows drawn beyond the visible ones on each side.
const OVERSCAN: usize = 20;

/// What to draw and where.
pub struct VirtualRows {
    /// The first row to draw and how many.
    pub first: usize,
    pub count: usize,
    /// Space above and below the drawn rows, in pixels.
    pub pad_top: f64,
    pub pad_bottom: f64,
    /// Put on the scroll area.
    pub node: NodeRef,
    pub onscroll: Callback<Event>,
}

/// The rows of `total` to draw for the scroll area at `scroll`; `on_scrolled`
/// gets the new position and whether the end is in view.
#[hook]
pub fn use_virtual_rows(
    scroll: ScrollPosition,
    total: usize,
    row_height: f64,
    stick_to_end: bool,
    on_scrolled: Callback<(ScrollPosition, bool)>,
) -> VirtualRows {
    let node = use_node_ref();
    let (top, height) = scroll;
    let visible = (height / row_height).ceil() as usize + 1;
    let count = visible + 2 * OVERSCAN;
    let first = if stick_to_end {
        total.saturating_sub(visible + OVERSCAN)
    } else {
        ((top / row_height) as usize)
            .saturating_sub(OVERSCAN)
            .min(total)
    };
    let drawn = count.min(total - first);
    {
        let node = node.clone();
        let full = total as f64 * row_height;
        use_effect(move || {
            if stick_to_end {
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
                on_scrolled.emit(((top, height), at_end));
            }
        })
    };
    VirtualRows {
        first,
        count: drawn,
        pad_top: first as f64 * row_height,
        pad_bottom: (total - first - drawn) as f64 * row_height,
        node,
        onscroll,
    }
}
