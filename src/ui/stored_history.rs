//! What the browser's database holds, in the settings panel (history that
//! survives a reload, `service::persistence`):
//! who stores (this tab, another tab, or nothing and why), per kept view the
//! objects, deltas and bytes stored, the browser's own estimate of what the
//! page uses of its quota, what went wrong lately (dropped data, a full
//! quota), and "Forget stored history". Hooks:
//! `[data-testid=stored-history]` with `data-items`, one
//! `[data-testid=stored-item]` per view with `data-resource`,
//! `data-objects`, `data-deltas`, `data-bytes`; `stored-state`,
//! `stored-notice`, `forget-stored`. One database per cluster: the
//! cluster it stores for (`[data-testid=stored-cluster]` with
//! `data-identity`, `data-name`, `data-database`), and one
//! `[data-testid=stored-other-cluster]` per other cluster this browser
//! stores history of (`data-identity`, `data-name`, `data-views`,
//! `data-bytes`), each with its `forget-other-cluster` button. Each other
//! cluster of serve's whose views this page stores follows the default
//! one's: its own `stored-cluster` line, its `stored-state` (with
//! `data-cluster`) and its views' `[data-testid=stored-item]` rows (with
//! `data-cluster`).

use std::rc::Rc;

use yew::prelude::*;

use crate::app::cluster_identity::{cluster_words, short_identity};
use crate::service::persistence::{ClusterSummary, OtherCluster, ServedStore, StoredView};
use crate::service::StoredSummary;

#[derive(Properties, PartialEq)]
pub struct StoredHistoryProps {
    pub summary: Rc<StoredSummary>,
    pub on_forget: Callback<()>,
    /// Forget another cluster's database (by name).
    pub on_forget_other: Callback<String>,
}

/// Whose history is stored, in a line.
fn this_cluster(cluster: &ClusterSummary) -> Html {
    let words = match &cluster.unidentified {
        Some(why) => format!("stored for a cluster that does not say who it is ({why})"),
        None => format!(
            "stored for {} (kube-system {})",
            cluster_words(cluster.name.as_deref()),
            short_identity(&cluster.identity)
        ),
    };
    html! {
        <p class="muted" data-testid="stored-cluster" data-identity={cluster.identity.clone()}
            data-name={cluster.name.clone().unwrap_or_default()} data-database={cluster.database.clone()}>
            { words }
        </p>
    }
}

/// The other clusters' stored history, each forgettable.
fn other_clusters(others: &[OtherCluster], on_forget_other: &Callback<String>) -> Html {
    if others.is_empty() {
        return html! {};
    }
    html! {
        <>
            <h3>{ "Other clusters stored in this browser" }</h3>
            <table class="usage">
                <thead><tr><th>{ "cluster" }</th><th>{ "kube-system" }</th><th>{ "views" }</th><th>{ "MB" }</th><th></th></tr></thead>
                <tbody>
                    { for others.iter().map(|other| {
                        let database = other.database.clone();
                        let on_click = on_forget_other.reform(move |_: MouseEvent| database.clone());
                        html! {
                            <tr data-testid="stored-other-cluster" data-identity={other.identity.clone()}
                                data-name={other.name.clone().unwrap_or_default()} data-views={other.views.to_string()}
                                data-bytes={other.bytes.to_string()}>
                                <td>{ other.name.clone().unwrap_or_else(|| "(no name)".into()) }</td>
                                <td>{ short_identity(&other.identity).to_string() }</td>
                                <td>{ other.views }</td>
                                <td>{ megabytes(other.bytes as f64) }</td>
                                <td><button type="button" onclick={on_click} data-testid="forget-other-cluster"
                                    title="Delete what this browser stores of that cluster">{ "Forget" }</button></td>
                            </tr>
                        }
                    }) }
                </tbody>
            </table>
        </>
    }
}

/// The stored views of one cluster, a row each.
fn stored_items(items: &[StoredView], cluster: Option<&str>) -> Html {
    html! {
        <table class="usage">
            <thead><tr><th>{ "resource" }</th><th>{ "objects in its snapshot" }</th><th>{ "deltas" }</th><th>{ "MB" }</th></tr></thead>
            <tbody>
                { for items.iter().map(|item| html! {
                    <tr data-testid="stored-item" data-resource={item.label.clone()} data-objects={item.objects.to_string()}
                        data-deltas={item.deltas.to_string()} data-bytes={item.bytes.to_string()}
                        data-cluster={cluster.unwrap_or_default().to_string()}>
                        <td>{ item.label.clone() }</td>
                        <td>{ item.objects }</td>
                        <td>{ item.deltas }</td>
                        <td>{ megabytes(item.bytes as f64) }</td>
                    </tr>
                }) }
            </tbody>
        </table>
    }
}

/// Another cluster's store: whose, who writes it, its views.
fn served_store(store: &ServedStore) -> Html {
    let name = store.cluster.name.clone().unwrap_or_default();
    html! {
        <>
            { this_cluster(&store.cluster) }
            <p class="muted" data-testid="stored-state" data-cluster={name.clone()}>{ &store.state }</p>
            { stored_items(&store.items, Some(&name)) }
        </>
    }
}

fn megabytes(bytes: f64) -> String {
    format!("{} MB", crate::model::decimal::fixed(bytes / 1e6, 1))
}

#[function_component(StoredHistory)]
pub fn stored_history(props: &StoredHistoryProps) -> Html {
    let summary = &props.summary;
    let on_forget = {
        let on_forget = props.on_forget.clone();
        Callback::from(move |_: MouseEvent| on_forget.emit(()))
    };
    let items = summary.items.len()
        + summary
            .served
            .iter()
            .map(|store| store.items.len())
            .sum::<usize>();
    let served = summary.served.iter().flat_map(|store| &store.items);
    let total: u64 = summary
        .items
        .iter()
        .chain(served)
        .map(|item| item.bytes)
        .sum();
    html! {
        <section class="stored-history" data-testid="stored-history" data-items={items.to_string()}>
            <h2>{ "Stored in this browser" }</h2>
            <p class="muted" data-testid="stored-state">{ &summary.state }</p>
            { for summary.cluster.as_ref().map(this_cluster) }
            { stored_items(&summary.items, None) }
            { for summary.served.iter().map(served_store) }
            <p class="muted">
                { format!("{} stored for these views", megabytes(total as f64)) }
                if let Some((used, quota)) = summary.usage {
                    { format!("; the browser counts {} used of {} allowed for this page", megabytes(used), megabytes(quota)) }
                }
            </p>
            { for summary.notices.iter().map(|notice| html! {
                <p class="notice" role="status" data-testid="stored-notice">{ notice }</p>
            }) }
            <button type="button" onclick={on_forget} data-testid="forget-stored"
                title="Delete everything stored; from now on only new changes are stored">
                { "Forget stored history" }
            </button>
            { other_clusters(&summary.others, &props.on_forget_other) }
        </section>
    }
}
