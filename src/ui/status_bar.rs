//! The status bar: informer state in plain words (listing progress, watching,
//! backoff with countdown, errors with what to do) and how fresh the table
//! is (`[data-testid=freshness]`: "synced" only while watching; otherwise
//! since when it shows the last synced state, or that a recording plays;
//! the words come from `crate::model::status_line`), and the hooks the
//! browser tests read, `store-stats` and `history-stats` (which also says, in `data-held`,
//! how many deltas the history holds now, and in `data-warm` that the
//! table is the one stored in this browser, not yet caught up), plus `memory-stats`
//! (`data-wasm-bytes`: the size of the page's WebAssembly memory, for the soak run).

use yew::prelude::*;

/// The status bar's props: the informers service's snapshot of the shown informer.
pub use crate::service::ViewStatus as StatusProps;

#[function_component(StatusBar)]
pub fn status_bar(props: &StatusProps) -> Html {
    let state_class = format!("state state-{} label-{}", props.state, props.label);
    html! {
        <footer class="status-bar" role="status" aria-live="polite">
            <span
                data-testid="store-stats"
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
            </span>
            <span class="freshness" data-testid="freshness">{ &props.freshness }</span>
            <span class="detail" title={props.detail.clone()}>{ &props.detail }</span>
            <span class={format!("channel channel-{}", props.channel.state)} data-testid="channel-state"
                data-state={props.channel.state} title="How this page's watches reach deltascope serve (the count is the resource views' watches; the page's own watch of CustomResourceDefinitions, which keeps the resource list current, is left out)">
                { &props.channel.words }
            </span>
            <span class="counters">
                { format!("{} events · {} relists", props.events, props.relists) }
            </span>
            <span data-testid="history-stats" data-deltas={props.deltas.to_string()} data-dropped={props.dropped.to_string()}
                data-held={props.held.to_string()}>
                { crate::model::status_line::history_words(props.deltas, props.held, props.dropped) }
            </span>
            <span class="digest" title="SHA-256 of every KEY RV in the store">{ short(&props.digest) }</span>
            <span data-testid="memory-stats" data-wasm-bytes={wasm_memory_bytes().to_string()} hidden=true></span>
        </footer>
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
