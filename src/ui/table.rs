//! The resource table: virtualised (only the rows in view are in the DOM, with
//! spacers above and below), keyed by `namespace/name`, one `Row` component per
//! row so yew skips every row whose cells did not change. DESIGN §4 hooks:
//! `tr[data-key][data-rv]`.

use std::rc::Rc;

use yew::prelude::*;

pub const ROW_HEIGHT_PX: f64 = 28.0;

#[derive(Clone, PartialEq)]
pub struct RowData {
    pub key: String,
    pub resource_version: String,
    pub cells: Vec<String>,
    pub flash: bool,
}

#[derive(Properties, PartialEq)]
pub struct TableProps {
    pub titles: Rc<Vec<&'static str>>,
    pub rows: Rc<Vec<RowData>>,
    /// Index of `rows[0]` among all rows, and the number of all rows.
    pub first: usize,
    pub total: usize,
    /// (scrollTop, clientHeight) of the scroll container.
    pub on_scroll: Callback<(f64, f64)>,
    pub empty_text: AttrValue,
}

#[function_component(ResourceTable)]
pub fn resource_table(props: &TableProps) -> Html {
    let container = use_node_ref();
    let onscroll = {
        let container = container.clone();
        let on_scroll = props.on_scroll.clone();
        Callback::from(move |_: Event| {
            if let Some(element) = container.cast::<web_sys::Element>() {
                on_scroll.emit((
                    f64::from(element.scroll_top()),
                    f64::from(element.client_height()),
                ));
            }
        })
    };
    let top = props.first as f64 * ROW_HEIGHT_PX;
    let bottom = props.total.saturating_sub(props.first + props.rows.len()) as f64 * ROW_HEIGHT_PX;
    let columns = props.titles.len();
    html! {
        <div class="table-scroll" ref={container} {onscroll}>
            <table class="resource-table">
                <thead>
                    <tr>{ for props.titles.iter().map(|t| html! { <th scope="col">{ *t }</th> }) }</tr>
                </thead>
                <tbody>
                    if props.total == 0 {
                        <tr class="empty"><td colspan={columns.to_string()}>{ props.empty_text.clone() }</td></tr>
                    }
                    if top > 0.0 {
                        <tr class="spacer" aria-hidden="true" style={format!("height:{top}px")}></tr>
                    }
                    { for props.rows.iter().map(|row| html! { <Row key={row.key.clone()} data={row.clone()} /> }) }
                    if bottom > 0.0 {
                        <tr class="spacer" aria-hidden="true" style={format!("height:{bottom}px")}></tr>
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
    html! {
        <tr data-key={data.key.clone()} data-rv={data.resource_version.clone()} class={classes!(data.flash.then_some("changed"))}>
            { for data.cells.iter().map(|cell| html! { <td>{ cell }</td> }) }
        </tr>
    }
}
