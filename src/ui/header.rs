//! The top bar: the resource picker (from API discovery, or a short
//! well-known list until it arrives; a route naming a resource the cluster
//! does not serve is shown as such, not as whatever option comes first),
//! the server-side filters (namespace, label and field selectors: each
//! change is a new hash route), the client-side text filter, and the Wide
//! and Settings toggles.

use std::rc::Rc;

use yew::prelude::*;

use super::dom::set_hash;
use crate::api::resources::ApiResource;
use crate::app::route::Route;

/// A resource the picker offers: (label, group, version, plural).
type Choice = (String, String, String, String);

#[derive(Properties, PartialEq)]
pub struct HeaderProps {
    pub route: Route,
    pub filter: String,
    pub on_filter: Callback<String>,
    /// From discovery; empty until it arrives (then the well-known list is offered).
    pub resources: Rc<Vec<ApiResource>>,
    /// `Some(on)` when the server's Table has columns only the wide view shows.
    #[prop_or_default]
    pub wide: Option<bool>,
    /// Opens or closes the settings panel.
    #[prop_or_default]
    pub on_settings: Callback<()>,
    #[prop_or_default]
    pub settings_open: bool,
}

/// Resource switcher, server-side filters (each change is a new hash route)
/// and the client-side text filter.
#[function_component(Header)]
pub fn header(props: &HeaderProps) -> Html {
    let route = props.route.clone();
    // (label, group, version, plural), grouped by API group in discovery order.
    let choices: Vec<Choice> = if props.resources.is_empty() {
        // before discovery answers: the everyday built-in resources
        deltascope_facts::BUILTIN_RESOURCES
            .iter()
            .filter(|r| r.everyday)
            .map(|r| {
                (
                    r.plural.to_string(),
                    r.group.to_string(),
                    r.version.to_string(),
                    r.plural.to_string(),
                )
            })
            .collect()
    } else {
        props
            .resources
            .iter()
            .map(|r| {
                (
                    r.display_name(),
                    r.group.clone(),
                    r.version.clone(),
                    r.plural.clone(),
                )
            })
            .collect()
    };
    // The route's resource, when the picker does not offer it (a typo, a
    // resource the cluster does not serve): shown as such and selected, so
    // the picker never claims another resource is on screen.
    let listed = choices
        .iter()
        .any(|(_, group, _, plural)| *group == route.group && *plural == route.resource);
    let unlisted = (!listed).then(|| {
        if props.resources.is_empty() {
            route.stats_name() // discovery has not answered yet
        } else {
            format!("{} (not served)", route.stats_name())
        }
    });
    let on_resource = {
        let route = route.clone();
        let choices = choices.clone();
        Callback::from(move |event: Event| {
            let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() else {
                return;
            };
            if let Some((_, group, version, plural)) =
                choices.iter().find(|c| c.0 == select.value())
            {
                let mut next = Route::new(group, version, plural);
                next.namespace = route.namespace.clone();
                set_hash(&next);
            }
        })
    };
    let mut groups: Vec<(String, Vec<&Choice>)> = Vec::new();
    for choice in &choices {
        let label = crate::app::route::group_segment(&choice.1).to_string();
        match groups.iter_mut().find(|(g, _)| *g == label) {
            Some((_, members)) => members.push(choice),
            None => groups.push((label, vec![choice])),
        }
    }
    let route_input = |field: fn(&mut Route) -> &mut Option<String>| {
        let route = route.clone();
        Callback::from(move |event: Event| {
            let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() else {
                return;
            };
            let mut next = route.clone();
            let value = input.value().trim().to_string();
            *field(&mut next) = Some(value).filter(|v| !v.is_empty());
            set_hash(&next);
        })
    };
    let on_wide = {
        let route = route.clone();
        Callback::from(move |_: MouseEvent| {
            let mut next = route.clone();
            next.wide = !next.wide;
            set_hash(&next);
        })
    };
    let on_text = {
        let on_filter = props.on_filter.clone();
        Callback::from(move |event: InputEvent| {
            if let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() {
                on_filter.emit(input.value());
            }
        })
    };
    html! {
        <header class="top-bar">
            <h1>{ "deltascope" }</h1>
            <label>{ "resource " }
                <select onchange={on_resource} aria-label="resource" data-testid="resource-select">
                    if let Some(label) = unlisted {
                        <option value="" selected=true disabled=true data-testid="unlisted-resource">{ label }</option>
                    }
                    { for groups.iter().map(|(group, members)| html! {
                        <optgroup label={group.clone()}>
                            { for members.iter().map(|(label, g, _, plural)| html! {
                                <option value={label.clone()} selected={route.resource == *plural && route.group == *g}>
                                    { label.clone() }
                                </option>
                            }) }
                        </optgroup>
                    }) }
                </select>
            </label>
            <label>{ "namespace " }
                <input type="text" placeholder="all" value={route.namespace.clone().unwrap_or_default()}
                    onchange={route_input(|r| &mut r.namespace)} data-testid="namespace-filter" />
            </label>
            <label>{ "labels " }
                <input type="text" placeholder="app=web,tier!=db" value={route.label_selector.clone().unwrap_or_default()}
                    onchange={route_input(|r| &mut r.label_selector)} data-testid="label-filter" />
            </label>
            <label>{ "fields " }
                <input type="text" placeholder="status.phase=Running" value={route.field_selector.clone().unwrap_or_default()}
                    onchange={route_input(|r| &mut r.field_selector)} data-testid="field-filter" />
            </label>
            <label>{ "filter " }
                <input type="search" placeholder="/ to filter rows" value={props.filter.clone()} oninput={on_text}
                    data-testid="text-filter" />
            </label>
            <button class="wide-toggle" data-testid="wide-toggle" onclick={on_wide}
                aria-pressed={(props.wide == Some(true)).to_string()} disabled={props.wide.is_none()}
                title="Show every column the server prints (kubectl -o wide), or only the default ones">
                { "Wide" }</button>
            <button class="settings-toggle" data-testid="settings" onclick={props.on_settings.reform(|_: MouseEvent| ())}
                aria-pressed={props.settings_open.to_string()} aria-haspopup="dialog"
                title="History retention: how many deltas and MiB each kept resource may hold">
                { "Settings" }</button>
            // A plain form: serve ends the session, clears its cookie and
            // answers with its sign-in page (the CSP allows posting to 'self').
            <form class="sign-out" method="post" action="/_deltascope/sign-out">
                <button type="submit" data-testid="sign-out"
                    title="End this browser's session with deltascope serve (its watches stop); sign in again with the token">
                    { "Sign out" }</button>
            </form>
            <span class="muted hint">{ "? for keys" }</span>
        </header>
    }
}
