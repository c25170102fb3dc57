//! The delta list under the timeline: every delta of the selected range (the
//! brush, else the range in view, else everything held) of every resource
//! kept live, merged by time, that passes the filters — resource, cluster
//! (`[data-testid=delta-cluster]`, with two or more), namespace, name text,
//! field manager, delta types — newest first. Virtualised: only the rows in the
//! scroll window are in the DOM, with spacers for the rest ([`DELTA_ROWS`],
//! drawn by `use_virtual_rows`; the app reads those rows with the frame). A
//! click on a row opens that object's view (its versions and diffs). Rows
//! carry `data-seq` (per resource), `data-resource`, `data-delta-key`,
//! `data-delta-type`, `data-rv`.

use crate::model::decimal::short;
use std::rc::Rc;

use yew::prelude::*;

use super::virtual_rows::{use_virtual_rows, End, InView, RowWindow};
use crate::app::scroll::ScrollPosition;
pub use crate::model::delta_list::DeltaRow;
use crate::model::delta_select::DeltaQuery;
use crate::model::timeline::{DEFAULT_CLUSTER_LANE, DELTA_TYPES};

pub const DELTA_ROW_HEIGHT_PX: f64 = 22.0;

/// The delta rows drawn: those that fit in the scroll area, 5 above and 10 below.
pub const DELTA_ROWS: RowWindow = RowWindow {
    row_height: DELTA_ROW_HEIGHT_PX,
    above: 5,
    below: 10,
    in_view: InView::Whole,
};

#[derive(Properties, PartialEq)]
pub struct DeltaListProps {
    /// The rows in the scroll window, starting at row `first`.
    pub rows: Rc<Vec<DeltaRow>>,
    pub first: usize,
    /// Rows matching the filters.
    pub total: usize,
    /// serve's record of the range (`data-recorded`: reading, read or
    /// error) and why it could not be read; `None`: nothing was asked.
    pub recorded: Option<(&'static str, Option<String>)>,
    /// What range the list covers, in words.
    pub range_label: String,
    pub query: DeltaQuery,
    /// The resources (lane names) the list covers, for its resource filter.
    pub resources: Rc<Vec<String>>,
    /// The clusters they are of (`""`: the default one), for its cluster
    /// filter (shown with two or more).
    pub clusters: Rc<Vec<String>>,
    pub on_query: Callback<DeltaQuery>,
    /// Where the scroll container is scrolled.
    pub on_scroll: Callback<ScrollPosition>,
    /// (source, key) of the row clicked.
    pub on_open: Callback<(u64, String)>,
}

#[function_component(DeltaList)]
pub fn delta_list(props: &DeltaListProps) -> Html {
    let on_scrolled = props
        .on_scroll
        .reform(|(position, _at_end): (ScrollPosition, bool)| position);
    let area = use_virtual_rows(DELTA_ROWS, props.total, End::Free, on_scrolled);
    let onclick = {
        let on_open = props.on_open.clone();
        Callback::from(move |event: MouseEvent| {
            let row = event
                .target_dyn_into::<web_sys::Element>()
                .and_then(|e| e.closest("tr[data-delta-key]").ok().flatten());
            let key = row.as_ref().and_then(|r| r.get_attribute("data-delta-key"));
            let source = row
                .as_ref()
                .and_then(|r| r.get_attribute("data-source"))
                .and_then(|s| s.parse().ok());
            if let (Some(source), Some(key)) = (source, key) {
                on_open.emit((source, key));
            }
        })
    };
    let (top, bottom) = area.spacers(props.first, props.rows.len());
    html! {
        <section class="delta-list" data-testid="delta-list" data-total={props.total.to_string()}
            data-recorded={props.recorded.as_ref().map(|(state, _)| *state)} aria-label="deltas">
            { filters(props) }
            if let Some(words) = props.recorded.as_ref().and_then(|(_, words)| words.clone()) {
                <p class="muted" data-testid="delta-recorded-note">{ words }</p>
            }
            <div class="delta-scroll" ref={area.node.clone()} onscroll={area.onscroll.clone()} data-testid="delta-scroll">
                <table>
                    <tbody {onclick}>
                        <tr class="spacer" style={format!("height:{}px", short(top))}></tr>
                        { for props.rows.iter().map(delta_row) }
                        <tr class="spacer" style={format!("height:{}px", short(bottom))}></tr>
                    </tbody>
                </table>
                if props.total == 0 {
                    <p class="muted">{ "No deltas in this range match the filters." }</p>
                }
            </div>
        </section>
    }
}

/// The query with one field set from an input's trimmed text.
fn query_input(props: &DeltaListProps, set: fn(&mut DeltaQuery, String)) -> Callback<InputEvent> {
    let (query, on_query) = (props.query.clone(), props.on_query.clone());
    Callback::from(move |event: InputEvent| {
        if let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() {
            let mut next = query.clone();
            set(&mut next, input.value().trim().to_string());
            on_query.emit(next);
        }
    })
}

/// A select's choice, written into the query by `set`.
fn query_select(props: &DeltaListProps, set: fn(&mut DeltaQuery, String)) -> Callback<Event> {
    let (query, on_query) = (props.query.clone(), props.on_query.clone());
    Callback::from(move |event: Event| {
        if let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() {
            let mut next = query.clone();
            set(&mut next, select.value());
            on_query.emit(next);
        }
    })
}

/// The filters over the list: resource, cluster, namespace, name, manager, types.
fn filters(props: &DeltaListProps) -> Html {
    let on_text = query_input(props, |query, value| query.text = value);
    let on_manager = query_input(props, |query, value| query.manager = value);
    let on_namespace = query_input(props, |query, value| {
        query.namespace = (!value.is_empty()).then_some(value)
    });
    let on_resource = query_select(props, |query, value| {
        query.resource = (!value.is_empty()).then_some(value)
    });
    // "*": any cluster ("" is the default one's value)
    let on_cluster = query_select(props, |query, value| {
        query.cluster = (value != "*").then_some(value)
    });
    let type_toggle = |index: usize| {
        let (query, on_query) = (props.query.clone(), props.on_query.clone());
        Callback::from(move |_: Event| {
            let mut next = query.clone();
            next.types[index] = !next.types[index];
            on_query.emit(next);
        })
    };
    html! {
        <div class="delta-filters">
            <strong>{ format!("{} deltas", props.total) }</strong>
            <span class="muted">{ &props.range_label }</span>
            <select onchange={on_resource} aria-label="resource" data-testid="delta-resource">
                <option value="" selected={props.query.resource.is_none()}>{ "all resources" }</option>
                { for props.resources.iter().map(|name| html! {
                    <option value={name.clone()} selected={props.query.resource.as_deref() == Some(name.as_str())}>
                        { name.clone() }</option>
                }) }
            </select>
            if props.clusters.len() > 1 {
                <select onchange={on_cluster} aria-label="cluster" data-testid="delta-cluster">
                    <option value="*" selected={props.query.cluster.is_none()}>{ "all clusters" }</option>
                    { for props.clusters.iter().map(|name| html! {
                        <option value={name.clone()} selected={props.query.cluster.as_deref() == Some(name.as_str())}>
                            { if name.is_empty() { DEFAULT_CLUSTER_LANE.to_string() } else { name.clone() } }</option>
                    }) }
                </select>
            }
            <input type="text" placeholder="namespace" aria-label="namespace"
                value={props.query.namespace.clone().unwrap_or_default()} oninput={on_namespace}
                data-testid="delta-namespace" />
            <input type="search" placeholder="name" aria-label="name"
                value={props.query.text.clone()} oninput={on_text} data-testid="delta-text" />
            <input type="search" placeholder="changed by" aria-label="changed by (field manager)"
                title="Only deltas written by this field manager (kubectl, helm, kube-controller-manager…)"
                value={props.query.manager.clone()} oninput={on_manager} data-testid="delta-manager" />
            { for DELTA_TYPES.iter().enumerate().map(|(index, kind)| html! {
                <label class={classes!("type-toggle", format!("delta-{}", format!("{kind:?}").to_ascii_lowercase()))}>
                    <input type="checkbox" checked={props.query.types[index]} onchange={type_toggle(index)}
                        data-testid={format!("delta-type-{kind:?}")} />
                    { format!("{kind:?}") }
                </label>
            }) }
        </div>
    }
}

/// One delta's row; a click opens its object.
fn delta_row(row: &DeltaRow) -> Html {
    html! {
        <tr key={format!("{}:{}:{}", row.source, row.recorded, row.seq)} data-seq={row.seq.to_string()}
                data-source={row.source.to_string()} data-resource={row.resource.clone()}
                data-recorded={row.recorded.to_string()}
                data-delta-key={row.key.clone()}
                data-delta-type={row.kind.clone()} data-rv={row.resource_version.clone()}
                data-managers={row.managers.clone()}
                class={classes!(format!("delta-{}", row.kind.to_ascii_lowercase()))}
                title="Open this object">
                <td class="when">{ &row.when }</td>
                <td class="kind">{ &row.kind }{ if row.tombstone { " (last known)" } else { "" } }</td>
                <td class="resource">{ &row.resource }</td>
                <td class="key">{ &row.key }</td>
                <td class="rv">{ format!("rv {}", row.resource_version) }</td>
                <td class="managers">{ &row.managers }
                    if row.recorded {
                        <span class="badge recorded">{ "recorded by serve" }</span>
                    }
                </td>
            </tr>
    }
}
