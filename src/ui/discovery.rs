//! What API discovery knows, for the app: [`use_discovery`] reads it from
//! the informers service, which runs discovery and its CRD watch and asks
//! for a render whenever what it knows changes (`service::api_discovery`).
//!
//! Hook for tests: `[data-testid=discovery]` (hidden, [`hook`]) with
//! `data-runs` (discovery runs finished), `data-resources` (resources found)
//! and `data-crd-watch` (`off`, `waiting`, `open`).

use yew::prelude::*;

use crate::service::{Discovery, Informers};

/// What discovery knows of `cluster` (`None`: the default one) at this
/// render.
#[hook]
pub fn use_discovery(informers: &Informers, cluster: Option<&str>) -> Discovery {
    informers.discovery_of(cluster)
}

/// The hidden test hook (see the module doc).
pub fn hook(discovery: &Discovery) -> Html {
    html! {
        <span data-testid="discovery" hidden=true data-runs={discovery.runs.to_string()}
            data-resources={discovery.resources.len().to_string()} data-crd-watch={discovery.crd_watch}></span>
    }
}
