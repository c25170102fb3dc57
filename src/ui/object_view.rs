//! The object view (Enter on a row): the object as YAML or JSON with
//! `managedFields` folded, its labels and owner references (as links to the
//! owners' tables), and its delta history — every version the page saw, with
//! the fields each delta changed, noisy bookkeeping fields folded by default.

use std::rc::Rc;

use yew::prelude::*;

use crate::object_text::DiffLine;

#[derive(Clone, PartialEq)]
pub struct VersionRow {
    pub seq: u64,
    pub when: String,
    pub kind: String,
    pub resource_version: String,
    pub tombstone: bool,
    pub changes: Vec<DiffLine>,
}

#[derive(Clone, PartialEq)]
pub struct OwnerLink {
    pub kind: String,
    pub name: String,
    pub href: Option<String>,
}

#[derive(Properties, Clone, PartialEq)]
pub struct ObjectProps {
    pub object_key: String,
    /// False once the object was deleted while the view was open.
    pub present: bool,
    pub yaml: Rc<String>,
    pub json: Rc<String>,
    pub folded_managed_fields: usize,
    pub labels: Rc<Vec<(String, String)>>,
    pub owners: Rc<Vec<OwnerLink>>,
    pub versions: Rc<Vec<VersionRow>>,
    pub on_close: Callback<()>,
}

#[derive(Clone, Copy, PartialEq)]
enum Tab {
    Yaml,
    Json,
    History,
}

#[function_component(ObjectView)]
pub fn object_view(props: &ObjectProps) -> Html {
    let tab = use_state(|| Tab::Yaml);
    let show_noisy = use_state(|| false);
    let tab_button = |which: Tab, label: &'static str| {
        let tab = tab.clone();
        let selected = *tab == which;
        html! {
            <button role="tab" aria-selected={selected.to_string()} class={classes!(selected.then_some("active"))}
                onclick={Callback::from(move |_| tab.set(which))}>{ label }</button>
        }
    };
    let on_close = props.on_close.reform(|_: MouseEvent| ());
    let body = match *tab {
        Tab::Yaml => highlighted(&props.yaml),
        Tab::Json => highlighted(&props.json),
        Tab::History => {
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
                    if props.versions.is_empty() {
                        <p class="muted">{ "No history held for this object (evicted by retention, or not seen yet)." }</p>
                    }
                    <ol class="versions">
                        { for props.versions.iter().rev().map(|v| version_row(v, *show_noisy)) }
                    </ol>
                </div>
            }
        }
    };
    html! {
        <section class="object-view" data-testid="object-view" data-key={props.object_key.clone()} aria-label="object">
            <header>
                <h2>{ &props.object_key }</h2>
                if !props.present {
                    <span class="badge deleted">{ "deleted" }</span>
                }
                <div class="tabs" role="tablist">
                    { tab_button(Tab::Yaml, "YAML") }
                    { tab_button(Tab::Json, "JSON") }
                    { tab_button(Tab::History, "History") }
                </div>
                <button class="close" onclick={on_close} title="Back to the table (Esc)">{ "✕" }</button>
            </header>
            <div class="meta">
                { for props.labels.iter().map(|(k, v)| html! { <span class="chip">{ format!("{k}={v}") }</span> }) }
                { for props.owners.iter().map(|o| match &o.href {
                    Some(href) => html! { <a class="owner" href={href.clone()}>{ format!("↑ {} {}", o.kind, o.name) }</a> },
                    None => html! { <span class="owner">{ format!("↑ {} {}", o.kind, o.name) }</span> },
                }) }
                if props.folded_managed_fields > 0 {
                    <span class="muted">{ format!("managedFields ({} entries) folded", props.folded_managed_fields) }</span>
                }
            </div>
            <div class="object-body">{ body }</div>
        </section>
    }
}

fn version_row(version: &VersionRow, show_noisy: bool) -> Html {
    let visible: Vec<&DiffLine> = version
        .changes
        .iter()
        .filter(|c| show_noisy || !c.noisy)
        .collect();
    let hidden = version.changes.len() - visible.len();
    html! {
        <li class={classes!("version", format!("delta-{}", version.kind.to_lowercase()))} data-rv={version.resource_version.clone()}>
            <div class="version-head">
                <span class="delta-kind">{ &version.kind }{ if version.tombstone { " (last known state)" } else { "" } }</span>
                <span class="rv">{ format!("rv {}", version.resource_version) }</span>
                <span class="when">{ &version.when }</span>
            </div>
            <ul class="changes">
                { for visible.iter().map(|c| html! {
                    <li class="change">
                        <code class="path">{ &c.path }</code>
                        if let Some(old) = &c.old { <span class="old">{ old }</span> }
                        { if c.old.is_some() && c.new.is_some() { " → " } else { " " } }
                        if let Some(new) = &c.new { <span class="new">{ new }</span> }
                    </li>
                }) }
                if hidden > 0 {
                    <li class="muted">{ format!("{hidden} bookkeeping change(s) folded") }</li>
                }
            </ul>
        </li>
    }
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
