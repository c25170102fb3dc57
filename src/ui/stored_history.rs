//! What the browser's database holds, in the settings panel (history that
//! survives a reload, `service::persistence`):
//! who stores (this tab, another tab, or nothing and why), per kept view the
//! objects, deltas and bytes stored, the browser's own estimate of what the
//! page uses of its quota, what went wrong lately (dropped data, a full
//! quota), and "Forget stored history". Hooks:
//! `[data-testid=stored-history]` with `data-items`, one
//! `[data-testid=stored-item]` per view with `data-resource`,
//! `data-objects`, `data-deltas`, `data-bytes`; `stored-state`,
//! `stored-notice`, `forget-stored`.

use std::rc::Rc;

use yew::prelude::*;

use crate::service::StoredSummary;

#[derive(Properties, PartialEq)]
pub struct StoredHistoryProps {
    pub summary: Rc<StoredSummary>,
    pub on_forget: Callback<()>,
}

fn megabytes(bytes: f64) -> String {
    format!("{:.1} MB", bytes / 1e6)
}

#[function_component(StoredHistory)]
pub fn stored_history(props: &StoredHistoryProps) -> Html {
    let summary = &props.summary;
    let on_forget = {
        let on_forget = props.on_forget.clone();
        Callback::from(move |_: MouseEvent| on_forget.emit(()))
    };
    let total: u64 = summary.items.iter().map(|item| item.bytes).sum();
    html! {
        <section class="stored-history" data-testid="stored-history" data-items={summary.items.len().to_string()}>
            <h2>{ "Stored in this browser" }</h2>
            <p class="muted" data-testid="stored-state">{ &summary.state }</p>
            <table class="usage">
                <thead><tr><th>{ "resource" }</th><th>{ "objects in its snapshot" }</th><th>{ "deltas" }</th><th>{ "MB" }</th></tr></thead>
                <tbody>
                    { for summary.items.iter().map(|item| html! {
                        <tr data-testid="stored-item" data-resource={item.label.clone()} data-objects={item.objects.to_string()}
                            data-deltas={item.deltas.to_string()} data-bytes={item.bytes.to_string()}>
                            <td>{ item.label.clone() }</td>
                            <td>{ item.objects }</td>
                            <td>{ item.deltas }</td>
                            <td>{ megabytes(item.bytes as f64) }</td>
                        </tr>
                    }) }
                </tbody>
            </table>
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
        </section>
    }
}
