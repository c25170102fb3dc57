//! The `:` command bar (k9s habits: `:pods`, `:deploy`, `:ns shop`). It
//! takes the keyboard as soon as it opens: the input is focused from an
//! effect once it is in the DOM, because browsers ignore `autofocus` on an
//! element inserted after the page loaded. Enter runs the command
//! (`crate::app::command`): a new route on success, an error under the input
//! otherwise; Esc (handled by the page's key listener) closes it.

use std::rc::Rc;

use yew::prelude::*;

use crate::address::route::Route;
use crate::api::cluster_identity::ServedCluster;
use crate::api::resources::ApiResource;
use crate::app::command::Known;

#[derive(Properties, PartialEq)]
pub struct CommandBarProps {
    /// The view the command starts from (`:ns` keeps the resource).
    pub route: Route,
    /// What discovery found (names, short names, CRDs).
    pub resources: Rc<Vec<ApiResource>>,
    /// serve's clusters (`:ctx`).
    pub clusters: Rc<Vec<ServedCluster>>,
    /// A command ran: the view it names.
    pub on_run: Callback<Route>,
}

#[function_component(CommandBar)]
pub fn command_bar(props: &CommandBarProps) -> Html {
    let input = use_node_ref();
    let text = use_state(String::new);
    let error = use_state(|| None::<String>);
    {
        let input = input.clone();
        use_effect_with((), move |_| {
            if let Some(element) = input.cast::<web_sys::HtmlElement>() {
                let _ = element.focus();
            }
        });
    }
    let oninput = {
        let text = text.clone();
        Callback::from(move |event: InputEvent| {
            if let Some(input) = event.target_dyn_into::<web_sys::HtmlInputElement>() {
                text.set(input.value());
            }
        })
    };
    let onkeydown = {
        let (text, error) = (text.clone(), error.clone());
        let (route, resources, clusters, on_run) = (
            props.route.clone(),
            props.resources.clone(),
            props.clusters.clone(),
            props.on_run.clone(),
        );
        Callback::from(move |event: KeyboardEvent| {
            if event.key() != "Enter" {
                return;
            }
            // The input's own value: keys typed since the last render count too.
            let typed = event
                .target_dyn_into::<web_sys::HtmlInputElement>()
                .map_or_else(|| (*text).clone(), |input| input.value());
            let known = Known {
                resources: &resources,
                clusters: &clusters,
            };
            match crate::app::command::apply(&typed, &route, known) {
                Ok(next) => {
                    error.set(None);
                    on_run.emit(next);
                }
                Err(why) => error.set(Some(why.to_string())),
            }
        })
    };
    html! {
        <div class="command-bar">
            <span>{ ":" }</span>
            <input type="text" ref={input} data-testid="command-input" value={(*text).clone()}
                {oninput} {onkeydown} aria-label="command"
                placeholder="pods, deploy, svc, ns NAME, ctx CLUSTER … (Enter)" />
            if let Some(why) = (*error).clone() {
                <span class="error" role="alert">{ why }</span>
            }
        </div>
    }
}
