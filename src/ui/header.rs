//! The top bar: the resource picker (what it offers is
//! `model::resource_picker`'s: discovery's resources, or a short well-known
//! list until it arrives; a route naming a resource the cluster does not
//! serve is shown as such, not as whatever option comes first),
//! the server-side filters (namespace, label and field selectors: each
//! change is a new hash route), the client-side text filter, and the Wide
//! and Settings toggles.

use std::rc::Rc;

use yew::prelude::*;

use super::cluster_picker::cluster_picker;
use super::context::StateContext;
use super::dom::set_hash;
use crate::address::route::Route;
use crate::api::resources::ApiResource;
use crate::model::resource_picker::ResourcePicker;

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
    let clusters = use_context::<StateContext>()
        .map(|state| state.0.clusters.clone())
        .unwrap_or_default();
    let picker = Rc::new(ResourcePicker::new(&props.resources, &route));
    let on_resource = {
        let (route, picker) = (route.clone(), picker.clone());
        Callback::from(move |event: Event| {
            let Some(select) = event.target_dyn_into::<web_sys::HtmlSelectElement>() else {
                return;
            };
            if let Some(choice) = picker.find(&select.value()) {
                set_hash(&choice.route_from(&route));
            }
        })
    };
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
            { cluster_picker(&clusters, &route) }
            <label>{ "resource " }
                <select onchange={on_resource} aria-label="resource" data-testid="resource-select">
                    if let Some(label) = picker.unlisted.clone() {
                        <option value="" selected=true disabled=true data-testid="unlisted-resource">{ label }</option>
                    }
                    { for picker.groups.iter().map(|group| html! {
                        <optgroup label={group.label.clone()}>
                            { for group.choices.iter().map(|choice| html! {
                                <option value={choice.label.clone()} selected={choice.is_shown_by(&route)}>
                                    { choice.label.clone() }
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
