//! The notices above the table when the view cannot show what it names:
//! the resource is not served (discovery says so), the session is gone
//! (401), or the informer's last error in plain words (`crate::model::plain_error`)
//! with what to do about it — clear the selectors the server rejected, pick
//! another resource, or Retry now (for a request deltascope no longer sends
//! on its own, or only slowly). One notice per problem: a resource that
//! discovery already calls unserved does not get the 404 words as well.
//! Below them, for a pods or nodes table, one quiet line when the metrics
//! API cannot fill `kubectl top`'s columns (not served, or forbidden) —
//! never an error: the table is whole without them. The line is the hook
//! `[data-testid=metrics-state]` (`data-state`, `data-window`), hidden while
//! the columns show or the first answer is awaited.

use yew::prelude::*;

use crate::address::route::Route;
use crate::model::plain_error::PlainError;
use crate::model::top::MetricsNote;

#[derive(Properties, PartialEq)]
pub struct NoticesProps {
    pub route: Route,
    /// Discovery does not list the route's resource.
    pub unserved: bool,
    /// The session is missing or expired (401).
    pub unauthorized: bool,
    /// The informer's last error, while it fails.
    pub plain: Option<PlainError>,
    /// Offer "Retry now": the informer halted, or retries only slowly.
    pub can_retry: bool,
    pub on_retry: Callback<()>,
    /// What the page says of the metrics API (pods and nodes tables).
    #[prop_or_default]
    pub metrics: Option<MetricsNote>,
}

#[function_component(Notices)]
pub fn notices(props: &NoticesProps) -> Html {
    let route = &props.route;
    let plain = props
        .plain
        .as_ref()
        .filter(|plain| !(props.unserved && plain.kind == "not-found"));
    let without_selectors = Route {
        label_selector: None,
        field_selector: None,
        ..route.clone()
    };
    let has_selectors = route.label_selector.is_some() || route.field_selector.is_some();
    let on_retry = props.on_retry.reform(|_: MouseEvent| ());
    html! {
        <>
            if props.unserved {
                <section class="notice error" data-testid="unknown-resource">
                    <h2>{ format!("The cluster does not serve {}", route.stats_name()) }</h2>
                    <p>{ "Pick a resource from the list above, or type : and a name (press ? for keys)." }</p>
                    if props.can_retry {
                        <p class="actions">
                            <button onclick={on_retry.clone()} data-testid="retry"
                                title="Ask the cluster again now (a CRD may have been installed)">{ "Retry now" }</button>
                        </p>
                    }
                </section>
            }
            if props.unauthorized {
                <section class="notice error" data-testid="sign-in">
                    <h2>{ "Sign in to deltascope" }</h2>
                    <p>{ "Your session is missing or has expired. Open a new sign-in link from the " }
                       <code>{ "deltascope serve" }</code>
                       { " command (it ends in ?code=…; each signs in one browser, once): reload this \
                          page, and its sign-in page has serve print one in its terminal, or takes the token." }</p>
                </section>
            }
            if let Some(plain) = plain {
                <section class="notice error" data-testid="plain-error" data-kind={plain.kind} role="alert">
                    <h2>{ &plain.title }</h2>
                    <p>{ &plain.advice }</p>
                    <p class="actions">
                        if plain.kind == "bad-request" && has_selectors {
                            <a href={without_selectors.to_string()} data-testid="clear-selectors">
                                { "Show it without selectors" }</a>
                        }
                        if plain.kind == "not-found" {
                            <a href={Route::default().to_string()}>{ "Show pods" }</a>
                        }
                        if props.can_retry {
                            <button onclick={on_retry} data-testid="retry"
                                title="Send the request again now">{ "Retry now" }</button>
                        }
                    </p>
                </section>
            }
            if let Some(note) = &props.metrics {
                <p class="notice quiet" data-testid="metrics-state" data-state={note.state}
                    data-window={note.window.clone()} title={note.title.clone()} hidden={note.words.is_empty()}>
                    { &note.words }
                </p>
            }
        </>
    }
}
