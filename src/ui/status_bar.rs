//! The status bar: informer state in plain words (listing progress, watching,
//! backoff with countdown, errors with what to do) and how fresh the table
//! is (`[data-testid=freshness]`: "synced" only while watching; otherwise
//! since when it shows the last synced state, or that a recording plays;
//! the words come from `crate::model::status_line`), and the hooks the
//! browser tests read, `store-stats` (with `data-cluster`: serve's name
//! of the view's cluster, empty for the default one) and `history-stats` (which also says, in `data-held`,
//! how many deltas the history holds now, in `data-recorded-from` since when
//! serve's record of the resource reaches back — its words "recorded since
//! 03:12:40 by serve", or "history starts when the page opened" — and in `data-warm` that the
//! table is the one stored in this browser, not yet caught up), plus `memory-stats`
//! (`data-wasm-bytes`: the size of the page's WebAssembly memory, for the soak run).
//! It also says what deltascope serve does with the cluster's history
//! (`[data-history-status]`: `recording`, `reading`, `unavailable` or `off`,
//! with `data-warning`; the words from `crate::model::serve_history`, read
//! from the app state), and nothing when no serve answers for it.

use yew::prelude::*;

use super::context::StateContext;
use crate::model::serve_history::{history_stats, history_words, ServeHistory};

/// The status bar's props: the informers service's snapshot of the shown informer.
pub use crate::service::ViewStatus as StatusProps;

#[function_component(StatusBar)]
pub fn status_bar(props: &StatusProps) -> Html {
    let cluster = Some(props.cluster.as_str()).filter(|c| !c.is_empty());
    let serve_history =
        use_context::<StateContext>().and_then(|state| state.0.serve_history_in(cluster).cloned());
    let state_class = format!("state state-{} label-{}", props.state, props.label);
    let stats = history_stats(
        serve_history
            .as_ref()
            .and_then(|serve| serve.recorded_from(&props.resource)),
        &crate::service::wall_clock(),
        props.deltas,
        props.held,
        props.dropped,
    );
    html! {
        <footer class="status-bar" role="status" aria-live="polite">
            <span
                data-testid="store-stats"
                data-cluster={props.cluster.clone()}
                data-resource={props.resource.clone()}
                data-count={props.count.to_string()}
                data-synced={props.synced.to_string()}
                data-warm={props.warm.to_string()}
                data-state={props.state.clone()}
                data-digest={props.digest.clone()}
                class={state_class}
            >
                <strong>{ props.label }</strong>
                { " · " }{ props.count }{ " " }{ &props.resource }
                if !props.cluster.is_empty() {
                    { " in " }<span class="cluster-name">{ &props.cluster }</span>
                }
            </span>
            <span class="freshness" data-testid="freshness">{ &props.freshness }</span>
            <span class="detail" title={props.detail.clone()}>{ &props.detail }</span>
            <span class={format!("channel channel-{}", props.channel.state)} data-testid="channel-state"
                data-state={props.channel.state} title="How this page's watches reach deltascope serve (the count is the resource views' watches; the page's own watch of CustomResourceDefinitions, which keeps the resource list current, is left out)">
                { &props.channel.words }
            </span>
            { for serve_history.as_ref().map(serve_history_item) }
            <span class="counters">
                { format!("{} events · {} relists", props.events, props.relists) }
            </span>
            <span data-testid="history-stats" data-deltas={props.deltas.to_string()} data-dropped={props.dropped.to_string()}
                data-held={props.held.to_string()} data-recorded-from={stats.recorded_from} title={stats.title}>
                { stats.text }
            </span>
            <span class="digest" title="SHA-256 of every KEY RV in the store">{ short(&props.digest) }</span>
            <span data-testid="memory-stats" data-wasm-bytes={wasm_memory_bytes().to_string()} hidden=true></span>
        </footer>
    }
}

/// One line at most (serve's reasons name a path); the whole sentence is in
/// the title.
const HISTORY_ITEM_STYLE: &str =
    "max-width: 36em; white-space: nowrap; overflow: hidden; text-overflow: ellipsis;";

/// `[data-history-status]`: what serve does with the cluster's history.
fn serve_history_item(history: &ServeHistory) -> Html {
    let words = history_words(history);
    let style = if words.warning {
        format!("{HISTORY_ITEM_STYLE} color: var(--warn);")
    } else {
        HISTORY_ITEM_STYLE.to_string()
    };
    let title = words.title;
    html! {
        <span class={classes!("history-status", words.warning.then_some("warning"))}
            data-history-status={words.state} data-warning={words.warning.to_string()}
            {style} {title}>
            { words.text }
        </span>
    }
}

fn short(digest: &str) -> String {
    digest
        .get(..12)
        .map(|d| format!("digest {d}…"))
        .unwrap_or_default()
}

/// Bytes of WebAssembly linear memory the page has grown to (it never shrinks).
fn wasm_memory_bytes() -> u64 {
    use wasm_bindgen::JsCast;
    wasm_bindgen::memory()
        .dyn_into::<js_sys::WebAssembly::Memory>()
        .ok()
        .and_then(|memory| memory.buffer().dyn_into::<js_sys::ArrayBuffer>().ok())
        .map_or(0, |buffer| u64::from(buffer.byte_length()))
}
