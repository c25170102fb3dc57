//! The resource table: virtualised (only the rows in view are in the DOM, with
//! spacers above and below: [`TABLE_ROWS`], drawn by `use_virtual_rows`; the
//! app reads those rows with the frame), one `Row` component per drawn row
//! so yew skips every row whose cells did not change. Rows are keyed by
//! their place among the rows drawn, not by object: scrolling rewrites the
//! drawn rows' cells in place, instead of destroying components and their
//! elements and creating others (at 100k pods, a 15 s pass down the table
//! left 24–37 % of its frames late keyed by object with 10 rows above and
//! 20 below, about 1 % keyed by place with 4 and 8). A row's
//! flash or fade carries on from when it began (`animation_since`) when
//! another element comes to draw it.
//! Clicks are handled once at the table (event delegation), so rows carry no
//! callbacks that would defeat that comparison. The hooks the browser tests
//! read: `tr[data-key][data-rv]`. A deleted row that is fading out keeps its key
//! and last resourceVersion and adds `data-deleted="true"` (class
//! `deleted`); it is not in the store.

use crate::model::decimal::short;
use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::JsCast;
use yew::prelude::*;

use super::context::StateContext;
use super::dom::{open_object, query};
use super::virtual_rows::{use_virtual_rows, End, InView, RowWindow};
use crate::address::object_route::ObjectRoute;
use crate::address::route::Route;
use crate::app::scroll::ScrollPosition;
use crate::app::state::Action;
pub use crate::model::table::RowData;
use crate::model::table::SortOrder;
use crate::service::Frame;

pub const ROW_HEIGHT_PX: f64 = 28.0;
/// The sticky header row, which the viewport arithmetic must leave room for.
pub const HEADER_HEIGHT_PX: f64 = 30.0;

/// The table rows drawn: those that fit in the scroll area (its height
/// includes the header row), 4 above and 8 below. Few: each drawn row is
/// laid out again in every frame of a fast scroll.
pub const TABLE_ROWS: RowWindow = RowWindow {
    row_height: ROW_HEIGHT_PX,
    above: 4,
    below: 8,
    in_view: InView::Whole,
};

/// Scrolls the table so row `index` is visible.
pub fn scroll_row_into_view(index: usize) {
    let Some(container) = query("[data-testid=table-scroll]") else {
        return;
    };
    let top = index as f64 * ROW_HEIGHT_PX;
    let view_top = f64::from(container.scroll_top());
    let view_height = f64::from(container.client_height()) - HEADER_HEIGHT_PX;
    if top < view_top {
        container.set_scroll_top(top as i32);
    } else if top + ROW_HEIGHT_PX > view_top + view_height {
        container.set_scroll_top((top + ROW_HEIGHT_PX - view_height).max(0.0) as i32);
    }
}

#[derive(Properties, PartialEq)]
pub struct TableProps {
    pub titles: Rc<Vec<String>>,
    pub rows: Rc<Vec<RowData>>,
    /// Index of `rows[0]` among all rows, and the number of all rows.
    pub first: usize,
    pub total: usize,
    /// The current sort.
    pub sort: SortOrder,
    pub on_sort: Callback<usize>,
    /// (key, open): a click selects a row, a double click opens it.
    pub on_row: Callback<(String, bool)>,
    /// Where the scroll container is scrolled.
    pub on_scroll: Callback<ScrollPosition>,
    pub empty_text: AttrValue,
    /// `server` when the columns are the server's Table columns, else `client`.
    #[prop_or_default]
    pub columns_from: AttrValue,
}

/// What a click on one of `frame`'s rows does: selects it; a double click
/// also opens its object.
pub fn on_row(state: &StateContext, route: &Route, frame: &Frame) -> Callback<(String, bool)> {
    let (state, route) = (state.clone(), route.clone());
    let keys: Vec<String> = frame.rows.iter().map(|r| r.key.clone()).collect();
    let first = frame.first;
    Callback::from(move |(key, open): (String, bool)| {
        if let Some(offset) = keys.iter().position(|k| *k == key) {
            state.dispatch(Action::Select(first + offset));
        }
        if open {
            open_object(&ObjectRoute::in_table(&route, &key));
        }
    })
}

/// Keeps the sort on its column's title when columns come or go (the
/// server's arrive, the wide view). The app holds it for its lifetime: the
/// table is not drawn under the logs view, and would forget the titles.
#[hook]
pub fn use_sort_follower() -> SortFollower {
    SortFollower(use_mut_ref(|| Rc::new(Vec::new())))
}

/// The column titles of the last frame read (see [`use_sort_follower`]).
pub struct SortFollower(Rc<RefCell<Rc<Vec<String>>>>);

impl SortFollower {
    /// This frame's titles: the sorted column moves with its title, or the
    /// sort ends when its title is gone.
    pub fn follow(&self, state: &StateContext, titles: &Rc<Vec<String>>) {
        let previous = self.0.replace(titles.clone());
        if *previous != **titles {
            if let Some(index) = state.0.spec.sort_column {
                let title = previous.get(index);
                let moved = title.and_then(|t| titles.iter().position(|now| now == t));
                if moved != Some(index) {
                    state.dispatch(Action::SortColumnMoved(moved));
                }
            }
        }
    }
}

fn row_key_of(event: &MouseEvent) -> Option<String> {
    let target = event.target()?.dyn_into::<web_sys::Element>().ok()?;
    target
        .closest("tr[data-key]")
        .ok()??
        .get_attribute("data-key")
}

#[function_component(ResourceTable)]
pub fn resource_table(props: &TableProps) -> Html {
    let on_scrolled = props
        .on_scroll
        .reform(|(position, _at_end): (ScrollPosition, bool)| position);
    let area = use_virtual_rows(TABLE_ROWS, props.total, End::Free, on_scrolled);
    let onclick = {
        let on_row = props.on_row.clone();
        Callback::from(move |event: MouseEvent| {
            if let Some(key) = row_key_of(&event) {
                on_row.emit((key, false));
            }
        })
    };
    let ondblclick = {
        let on_row = props.on_row.clone();
        Callback::from(move |event: MouseEvent| {
            if let Some(key) = row_key_of(&event) {
                on_row.emit((key, true));
            }
        })
    };
    let (top, bottom) = area.spacers(props.first, props.rows.len());
    let columns = props.titles.len();
    let SortOrder {
        column: sort_column,
        descending,
    } = props.sort;
    html! {
        <div class="table-scroll" ref={area.node.clone()} onscroll={area.onscroll.clone()} data-testid="table-scroll">
            <table class="resource-table" data-columns={props.columns_from.clone()}>
                <thead>
                    <tr>{ for props.titles.iter().enumerate().map(|(index, title)| {
                        let on_sort = props.on_sort.clone();
                        let sorted = sort_column == Some(index);
                        let aria = if !sorted { "none" } else if descending { "descending" } else { "ascending" };
                        html! {
                            <th scope="col" aria-sort={aria} onclick={Callback::from(move |_| on_sort.emit(index))}
                                title="Sort by this column (click again to reverse, a third time for the default order)">
                                { title.clone() }{ if sorted { if descending { " ▼" } else { " ▲" } } else { "" } }
                            </th>
                        }
                    }) }</tr>
                </thead>
                <tbody {onclick} {ondblclick}>
                    if props.total == 0 {
                        <tr class="empty"><td colspan={columns.to_string()}>{ props.empty_text.clone() }</td></tr>
                    }
                    if top > 0.0 {
                        <tr class="spacer" aria-hidden="true" style={format!("height:{}px", short(top))}></tr>
                    }
                    { for props.rows.iter().enumerate().map(|(place, row)| html! { <Row key={place} data={row.clone()} /> }) }
                    if bottom > 0.0 {
                        <tr class="spacer" aria-hidden="true" style={format!("height:{}px", short(bottom))}></tr>
                    }
                </tbody>
            </table>
        </div>
    }
}

#[derive(Properties, PartialEq)]
struct RowProps {
    data: RowData,
}

#[function_component(Row)]
fn row(props: &RowProps) -> Html {
    let data = &props.data;
    // How far into its flash or fade the row is when this element starts
    // drawing it: kept for as long as it draws the same object's same
    // change, so a re-render does not move the animation on twice.
    let animation_delay = use_memo((data.key.clone(), data.animation_since), |(_, since)| {
        since.map(|since| {
            format!(
                "--animation-delay:{}ms",
                crate::model::decimal::fixed(since - crate::transport::now() as f64, 0)
            )
        })
    });
    html! {
        <tr data-key={data.key.clone()} data-rv={data.resource_version.clone()}
            aria-selected={data.selected.to_string()}
            data-deleted={data.deleted.then_some("true")}
            title={data.deleted.then_some("deleted")}
            style={(*animation_delay).clone()}
            class={classes!(
                (data.flash && !data.deleted).then_some("changed"),
                data.deleted.then_some("deleted"),
                data.selected.then_some("selected"),
            )}>
            { for data.cells.iter().map(|cell| html! { <td>{ cell }</td> }) }
        </tr>
    }
}
