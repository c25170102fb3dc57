//! The status bar: informer state in plain words (listing progress, watching,
//! backoff with countdown, errors with what to do) and how fresh the table
//! is (`[data-testid=freshness]`: "synced" only while watching; otherwise
//! since when it shows the last synced state, or that a recording plays;
//! the words come from `crate::model::status_line`), and the DESIGN §4 test
//! hooks `store-stats` and `history-stats` (which also says, in `data-held`,
//! how many deltas the history holds now), plus `memory-stats`
//! (`data-wasm-bytes`: the size of the page's WebAssembly memory, for the soak run).

use yew::prelude::*;

#[derive(Properties, PartialEq, Clone)]
pub struct StatusProps {
    pub resource: String,
    pub count: usize,
    /// Synced at least once (DESIGN §4 `data-synced`).
    pub synced: bool,
    /// DESIGN §4 `data-state`: listing / watching / backoff / error.
    pub state: String,
    /// The state in one word, shown in bold.
    pub label: &'static str,
    /// How fresh the table is, in words.
    pub freshness: String,
    pub detail: String,
    pub digest: String,
    pub deltas: u64,
    pub dropped: u64,
    /// Deltas held now (recorded minus evicted).
    pub held: usize,
    pub events: u64,
    pub relists: u32,
    /// How the watches travel: `[data-testid=channel-state]`'s `data-state`
    /// (idle / connecting / open / broken / unavailable) and its words.
    pub channel: (&'static str, String),
}

/// The channel's state in plain words, with the connection budget when
/// there is no channel (`watches`: on their own connections, paused).
pub fn channel_words(
    status: &crate::transport::channel::ChannelStatus,
    streams: usize,
    watches: (usize, usize),
) -> (&'static str, String) {
    use crate::transport::channel::ChannelStatus;
    match status {
        ChannelStatus::Idle => ("idle", String::new()),
        ChannelStatus::Connecting => (
            "connecting",
            "connecting the channel to deltascope serve…".into(),
        ),
        ChannelStatus::Open => (
            "open",
            format!(
                "{streams} watch{} on one channel",
                if streams == 1 { "" } else { "es" }
            ),
        ),
        ChannelStatus::Broken {
            since_unix_ms,
            reason,
        } => (
            "broken",
            format!(
                "channel to deltascope serve broken since {}: {reason} — reconnecting",
                clock_time(*since_unix_ms)
            ),
        ),
        ChannelStatus::Unavailable { reason } => (
            "unavailable",
            format!(
                "no channel ({reason}): {} watches on connections of their own, {} paused by the \
                 browser's connection limit",
                watches.0, watches.1
            ),
        ),
    }
}

/// `HH:MM:SS` in the browser's time zone.
pub(crate) fn clock_time(unix_ms: f64) -> String {
    let date = js_sys::Date::new(&unix_ms.into());
    format!(
        "{:02}:{:02}:{:02}",
        date.get_hours(),
        date.get_minutes(),
        date.get_seconds()
    )
}

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
                data-state={props.state.clone()}
                data-digest={props.digest.clone()}
                class={state_class}
            >
                <strong>{ props.label }</strong>
                { " · " }{ props.count }{ " " }{ &props.resource }
            </span>
            <span class="freshness" data-testid="freshness">{ &props.freshness }</span>
            <span class="detail" title={props.detail.clone()}>{ &props.detail }</span>
            <span class={format!("channel channel-{}", props.channel.0)} data-testid="channel-state"
                data-state={props.channel.0} title="How this page's watches reach deltascope serve (the count is the resource views' watches; the page's own watch of CustomResourceDefinitions, which keeps the resource list current, is left out)">
                { &props.channel.1 }
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
