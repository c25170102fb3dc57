//! The object view (Enter on a row): the object as YAML or JSON with
//! `managedFields` folded, its labels and owner references (as links to the
//! owners' tables), and its delta history — every version the page saw, with
//! the fields each delta changed, noisy bookkeeping fields folded by default,
//! and a diff between any two chosen versions (JSON-pointer paths, old → new,
//! added and removed fields highlighted), and who made each update (the
//! field managers). Versions serve's recorder holds from before the page
//! opened come first, marked (`data-source`), with the record's gaps among
//! them and a line on the record (`object-reach`); the first version says
//! how the object began ("created", or "first seen …"). Its story, events
//! and related objects are laid out by `object_story_view`; a pod's,
//! node's or workload's CPU and memory over time by `usage_chart`.

use std::rc::Rc;

use yew::prelude::*;

use super::object_story_view::{events_list, related_list, story_list, who_lines};
use super::usage_chart::UsageCharts;
use crate::address::object_route::ObjectTab;
use crate::model::object_details::{GapRow, ObjectDetails, ReachNote, VersionRow};
use crate::model::object_story::EventRow;
use crate::model::object_text::{diff_lines, DiffLine};
use crate::model::object_versions::VersionSource;

#[derive(Properties, Clone, PartialEq)]
pub struct ObjectProps {
    pub details: Rc<ObjectDetails>,
    pub on_close: Callback<()>,
    /// Its logs view's address, when it has logs (a pod or a workload).
    #[prop_or_default]
    pub logs: Option<AttrValue>,
    /// The range its usage charts show (the timeline's).
    #[prop_or_default]
    pub chart_range: (crate::informer::Millis, crate::informer::Millis),
    /// The charts show only the part of the range they hold samples of.
    #[prop_or_default]
    pub chart_fits: bool,
    /// How many of the newest versions the History shows.
    #[prop_or(crate::model::object_details::HISTORY_PAGE)]
    pub history_shown: usize,
    /// Show a page of older versions.
    #[prop_or_default]
    pub on_older: Callback<()>,
    /// The tab its address names (`?tab=`), else the YAML.
    #[prop_or_default]
    pub tab: Option<ObjectTab>,
    /// serve's name of its cluster, when not the default one.
    #[prop_or_default]
    pub cluster: Option<AttrValue>,
}

#[function_component(ObjectView)]
pub fn object_view(props: &ObjectProps) -> Html {
    let tab = use_state(|| props.tab.unwrap_or_default());
    {
        // Another address naming a tab (a link, the back button) shows it.
        let tab = tab.clone();
        use_effect_with(props.tab, move |named| {
            if let Some(named) = named {
                tab.set(*named);
            }
        });
    }
    let show_noisy = use_state(|| false);
    // The two versions to compare, if chosen (`version_key`).
    let compare = use_state(|| (None::<String>, None::<String>));
    let events_label: &'static str = match props.details.events.len() {
        0 => "Events",
        _ if props.details.events.iter().any(|e| e.event.is_warning()) => "Events ⚠",
        _ => "Events •",
    };
    let related_label = "Related";
    let tab_button = |which: ObjectTab, label: &'static str| {
        let tab = tab.clone();
        let selected = *tab == which;
        html! {
            <button role="tab" aria-selected={selected.to_string()} class={classes!(selected.then_some("active"))}
                onclick={Callback::from(move |_| {
                    tab.set(which);
                    crate::ui::dom::show_object_tab(which);
                })}>{ label }</button>
        }
    };
    let on_close = props.on_close.reform(|_: MouseEvent| ());
    let body = match *tab {
        ObjectTab::Yaml => highlighted(&props.details.yaml),
        ObjectTab::Json => highlighted(&props.details.json),
        ObjectTab::Story => story_list(&props.details.story, props.details.family.as_ref()),
        ObjectTab::Events => events_list(
            &props.details.events,
            props.details.events_kept,
            props.details.events_synced,
        ),
        ObjectTab::Related => related_list(&props.details.related),
        ObjectTab::Usage => match &props.details.usage {
            Some(usage) => {
                html! { <UsageCharts usage={usage.clone()} range={props.chart_range} fit={props.chart_fits} /> }
            }
            None => {
                html! { <p class="muted">{ "Only pods, nodes and workloads have a usage." }</p> }
            }
        },
        ObjectTab::History => {
            let toggle = {
                let show_noisy = show_noisy.clone();
                Callback::from(move |_| show_noisy.set(!*show_noisy))
            };
            html! {
                <div class="history" data-testid="object-history">
                    <label class="noise-toggle">
                        <input type="checkbox" checked={*show_noisy} onchange={toggle} />
                        { " show bookkeeping fields (resourceVersion, managedFields, timestamps)" }
                    </label>
                    if let Some(note) = &props.details.reach {
                        { reach_line(note) }
                    }
                    { compare_view(&props.details.versions, props.history_shown, &compare, *show_noisy) }
                    if props.details.pending_versions > 0 {
                        <p class="muted" data-testid="versions-pending">{ format!("reading the changes of {} older version(s)…", props.details.pending_versions) }</p>
                    }
                    if props.details.versions.is_empty() {
                        <p class="muted">{ "No history held for this object (evicted by retention, or not seen yet)." }</p>
                    }
                    <ol class="versions">
                        { for history_rows(&props.details, *show_noisy, props.history_shown) }
                    </ol>
                    { older_versions(props.details.versions.len(), props.history_shown, &props.on_older) }
                </div>
            }
        }
    };
    html! {
        <section class="object-view" data-testid="object-view" data-key={props.details.object_key.clone()}
            data-cluster={props.cluster.clone().unwrap_or_default()} aria-label="object">
            <header>
                <h2>{ &props.details.object_key }</h2>
                if let Some(cluster) = props.cluster.clone() {
                    <span class="badge cluster" data-testid="object-cluster" title="The cluster this object is in">
                        { "in " }{ cluster }
                    </span>
                }
                if !props.details.present {
                    <span class="badge deleted">{ "deleted" }</span>
                }
                if props.details.restoring {
                    <span class="badge restoring" data-testid="object-restoring"
                        title="This view is being restored from the browser's database: until it is done, this may be the object's row as stored (its labels, owners and times), not the whole object.">
                        { "restoring" }
                    </span>
                }
                <div class="tabs" role="tablist">
                    { tab_button(ObjectTab::Yaml, "YAML") }
                    { tab_button(ObjectTab::Json, "JSON") }
                    { tab_button(ObjectTab::History, "History") }
                    { tab_button(ObjectTab::Story, "Story") }
                    { tab_button(ObjectTab::Events, events_label) }
                    { tab_button(ObjectTab::Related, related_label) }
                    if props.details.usage.is_some() {
                        { tab_button(ObjectTab::Usage, "Usage") }
                    }
                </div>
                if let Some(href) = props.logs.clone() {
                    <a class="logs-link" data-testid="open-logs" {href} title="Logs (l)">{ "Logs" }</a>
                }
                <button class="close" onclick={on_close} title="Back to the table (Esc)">{ "✕" }</button>
            </header>
            <div class="meta">
                { for props.details.labels.iter().map(|(k, v)| html! { <span class="chip">{ format!("{k}={v}") }</span> }) }
                { for props.details.owners.iter().map(|o| match &o.href {
                    Some(href) => html! { <a class="owner" href={href.clone()}>{ format!("↑ {} {}", o.kind, o.name) }</a> },
                    None => html! { <span class="owner">{ format!("↑ {} {}", o.kind, o.name) }</span> },
                }) }
                if props.details.folded_managed_fields > 0 {
                    <span class="muted">{ format!("managedFields ({} entries) folded", props.details.folded_managed_fields) }</span>
                }
            </div>
            <div class="object-body">{ body }</div>
        </section>
    }
}

/// Two version pickers and, once both are chosen, the diff from the first to the second.
fn compare_view(
    versions: &Rc<Vec<VersionRow>>,
    shown: usize,
    compare: &UseStateHandle<(Option<String>, Option<String>)>,
    show_noisy: bool,
) -> Html {
    if versions.len() < 2 {
        return html! {};
    }
    let picker = |which: usize, test_id: &'static str, label: &'static str| {
        let compare = compare.clone();
        let current = if which == 0 { &compare.0 } else { &compare.1 };
        let current = current.clone();
        let chosen_from = versions.clone();
        let onchange = Callback::from(move |event: Event| {
            let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() else {
                return;
            };
            // An option's value is its place among the versions; what is
            // kept is the version itself, which older versions read later
            // (put before it) do not move.
            let chosen = select
                .value()
                .parse::<usize>()
                .ok()
                .and_then(|index| chosen_from.get(index))
                .map(version_key);
            let mut next = (*compare).clone();
            if which == 0 {
                next.0 = chosen;
            } else {
                next.1 = chosen;
            }
            compare.set(next);
        });
        // The versions the History shows (the newest `shown`) and the
        // ones chosen.
        let listed = versions.iter().enumerate().rev().filter(|(at, v)| {
            (versions.len() - at <= shown && v.read)
                || current.as_deref() == Some(version_key(v).as_str())
        });
        html! {
            <select {onchange} aria-label={label} data-testid={test_id}>
                <option value="" selected={current.is_none()}>{ label }</option>
                { for listed.map(|(index, v)| html! {
                    <option value={index.to_string()} selected={current.as_deref() == Some(version_key(v).as_str())}>
                        { format!("rv {} · {} · {}{}", v.resource_version, v.kind, v.when,
                            if v.source == VersionSource::Recorder { " · recorded by serve" } else { "" }) }
                    </option>
                }) }
            </select>
        }
    };
    let find = |key: &Option<String>| {
        key.as_ref()
            .and_then(|key| versions.iter().find(|v| version_key(v) == *key))
    };
    let result = match (find(&compare.0), find(&compare.1)) {
        (Some(old), Some(new)) if version_key(old) != version_key(new) => {
            let (a, b) = (old.object.0.value.to_json(), new.object.0.value.to_json());
            let changes = diff_lines(&a, &json_patch::diff(&a, &b));
            let visible: Vec<&DiffLine> =
                changes.iter().filter(|c| show_noisy || !c.noisy).collect();
            let hidden = changes.len() - visible.len();
            html! {
                <div class="version-diff" data-testid="version-diff"
                    data-from-rv={old.resource_version.clone()} data-to-rv={new.resource_version.clone()}
                    data-changes={changes.len().to_string()}>
                    <div class="version-head">
                        { format!("rv {} → rv {}: {} change(s)", old.resource_version, new.resource_version, changes.len()) }
                    </div>
                    { change_list(&visible, hidden) }
                </div>
            }
        }
        (Some(_), Some(_)) => html! { <p class="muted">{ "The same version: no changes." }</p> },
        _ => html! {},
    };
    html! {
        <div class="compare">
            <span class="muted">{ "Compare " }</span>
            { picker(0, "diff-from", "from version…") }
            { " → " }
            { picker(1, "diff-to", "to version…") }
            { result }
        </div>
    }
}

fn change_list(visible: &[&DiffLine], hidden: usize) -> Html {
    html! {
        <ul class="changes">
            { for visible.iter().map(|c| {
                let class = match (&c.old, &c.new) {
                    (None, Some(_)) => "change added",
                    (Some(_), None) => "change removed",
                    _ => "change",
                };
                html! {
                    <li class={class} data-path={c.path.clone()}>
                        <code class="path">{ &c.path }</code>
                        if let Some(old) = &c.old { <span class="old">{ old }</span> }
                        { if c.old.is_some() && c.new.is_some() { " → " } else { " " } }
                        if let Some(new) = &c.new { <span class="new">{ new }</span> }
                    </li>
                }
            }) }
            if hidden > 0 {
                <li class="muted">{ format!("{hidden} bookkeeping change(s) folded") }</li>
            }
        </ul>
    }
}

/// The versions, newest first, with the object's warning events and the
/// record's gaps among them where they happened.
/// "Show older versions", when the History holds more than it shows.
fn older_versions(held: usize, shown: usize, on_older: &Callback<()>) -> Html {
    if held <= shown {
        return html! {};
    }
    let more = (held - shown).min(crate::model::object_details::HISTORY_PAGE);
    html! {
        <button type="button" class="older-versions" data-testid="history-older"
            data-held={held.to_string()} data-shown={shown.to_string()}
            onclick={on_older.reform(|_: MouseEvent| ())}>
            { format!("Show {more} older versions (showing the newest {shown} of {held})") }
        </button>
    }
}

/// The newest `shown` versions, newest first, with the warnings and the
/// record's gaps between them: each drawn once its changes are read (the
/// newest first, a few per frame), so the top of the History is drawn at
/// once and the rest follows; `versions-pending` says how many are left.
fn history_rows(details: &ObjectDetails, show_noisy: bool, shown: usize) -> Vec<Html> {
    let mut warnings = details
        .events
        .iter()
        .filter(|row| row.event.is_warning())
        .peekable();
    let mut gaps = details.gaps.iter().peekable();
    let mut rows = Vec::new();
    for version in details
        .versions
        .iter()
        .rev()
        .take(shown)
        .take_while(|v| v.read)
    {
        while let Some(warning) = warnings.next_if(|w| w.ago_secs <= version.ago_secs) {
            rows.push(warning_row(warning));
        }
        while let Some(gap) = gaps.next_if(|g| g.to_ms > version.at_ms) {
            rows.push(gap_row(gap));
        }
        rows.push(version_row(version, show_noisy));
    }
    if details.versions.len() <= shown && details.versions.iter().all(|v| v.read) {
        // older than every version: only when the oldest is shown
        rows.extend(warnings.map(warning_row));
        rows.extend(gaps.map(gap_row));
    }
    rows
}

fn gap_row(gap: &GapRow) -> Html {
    html! {
        <li class="history-gap" data-testid="object-gap" data-reason={gap.reason.clone()}
            data-from={gap.from.clone()} data-to={gap.to.clone()}>
            <span class="muted">{ &gap.words }</span>
        </li>
    }
}

/// What the view says of serve's record of the object.
fn reach_line(note: &ReachNote) -> Html {
    html! {
        <p class={classes!("muted", "object-reach", (note.state == "error").then_some("warning"))}
            data-testid="object-reach" data-state={note.state}>{ &note.text }</p>
    }
}

fn warning_row(row: &EventRow) -> Html {
    let e = &row.event;
    html! {
        <li class="history-warning" data-testid="history-warning" data-reason={e.reason.clone()}
            data-expired={row.expired.to_string()}>
            <div class="version-head">
                <span class="delta-kind warning">{ format!("Warning: {}", e.reason) }</span>
                <span class="when">{ &row.last_seen }</span>
                if e.count > 1 { <span class="muted">{ format!("×{}", e.count) }</span> }
                if row.expired { <span class="muted">{ "expired from the cluster" }</span> }
            </div>
            <p class="message">{ &e.message }</p>
        </li>
    }
}

fn version_row(version: &VersionRow, show_noisy: bool) -> Html {
    let visible: Vec<&DiffLine> = version
        .changes
        .iter()
        .filter(|c| show_noisy || !c.noisy)
        .collect();
    let hidden = version.changes.len() - visible.len();
    let source = version.source.as_str();
    html! {
        <li class={classes!("version", format!("delta-{}", version.kind.to_ascii_lowercase()), format!("source-{source}"))} data-rv={version.resource_version.clone()}
            data-seq={version.seq.map(|seq| seq.to_string())} data-delta-type={version.kind.clone()}
            data-testid="object-delta" data-managers={version.who.managers_attr()}
            data-source={source} data-time={version.time.clone()}>
            <div class="version-head">
                <span class="delta-kind">{ &version.kind }{ if version.tombstone { " (last known state)" } else { "" } }</span>
                <span class="rv">{ format!("rv {}", version.resource_version) }</span>
                <span class="when" title={version.time.clone()}>{ &version.when }</span>
                if version.source == VersionSource::Recorder {
                    <span class="badge recorded" title="Recorded by deltascope serve before this page saw the object">{ "recorded by serve" }</span>
                }
                if let Some(beginning) = &version.beginning {
                    <span class="beginning" data-testid="object-beginning">{ beginning }</span>
                }
            </div>
            { who_lines(&version.who) }
            { change_list(&visible, hidden) }
        </li>
    }
}

/// What a compare picker keeps of a version: its resourceVersion and
/// delta type (a deletion carries its last update's resourceVersion).
fn version_key(version: &VersionRow) -> String {
    format!("{}/{}", version.resource_version, version.kind)
}

/// Light syntax colouring for YAML and pretty JSON: keys, strings, numbers.
fn highlighted(text: &str) -> Html {
    html! {
        <pre class="code">
            { for text.lines().map(|line| {
                let (key, rest) = split_key(line);
                html! { <><span class="k">{ key }</span><span class={value_class(rest)}>{ rest }</span>{ "\n" }</> }
            }) }
        </pre>
    }
}

fn split_key(line: &str) -> (&str, &str) {
    let at = line
        .find("\": ")
        .map(|i| i + 2)
        .or_else(|| line.find(": ").map(|i| i + 1));
    match at {
        Some(i) => line.split_at(i),
        None if line.trim_end().ends_with(':') => (line, ""),
        None => ("", line),
    }
}

fn value_class(value: &str) -> &'static str {
    let v = value.trim().trim_end_matches(',');
    if v.starts_with('"') {
        "s"
    } else if v.parse::<f64>().is_ok() || v == "true" || v == "false" || v == "null" {
        "n"
    } else {
        "v"
    }
}
