//! What a CRD's coming and going does to the store, as the apiserver does
//! it. Adding one serves its resource (discovery lists its group and
//! version), then creates the CRD object (ADDED to CRD watchers) and its
//! objects. Removing one deletes its objects (DELETED to their watchers),
//! ends the resource's watches, stops serving it (discovery omits it, its
//! requests answer 404) and deletes the CRD object (DELETED). The demo CRD
//! (`widgets.demo.deltascope.dev`) is one of them; installing it again
//! brings back the demo's nine widgets, as applying its manifests would.

use super::body::NewCrd;
use crate::managed::managers::{APISERVER_STATUS, CLIENT_SIDE_APPLY, HELM};
use crate::managed::Authors;
use crate::objects;
use crate::resources::{ResIdx, ResourceType, CRDS, CRD_GROUP, WIDGETS};
use crate::store::{Msg, Store};

/// A CRD added with `kubectl apply`; the apiserver writes its status.
const APPLIED_CRD: Authors<'static> = Authors {
    main: CLIENT_SIDE_APPLY,
    parts: &[(&["status"], APISERVER_STATUS)],
};

/// Why a CRD could not be added or removed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdError {
    #[error("customresourcedefinitions.apiextensions.k8s.io \"{0}\" already exists")]
    AlreadyExists(String),
    #[error("{0} is the demo CRD: install it with {{\"installed\": true}}")]
    Demo(String),
    #[error("{name} is already served (not by a CRD this cluster can remove)")]
    Served { name: String },
    #[error("customresourcedefinitions.apiextensions.k8s.io \"{0}\" not found")]
    NotFound(String),
}

/// `widgets.demo.deltascope.dev`: the demo CRD's name.
pub fn demo_name() -> String {
    format!("widgets.{CRD_GROUP}")
}

/// What installing or uninstalling the demo CRD did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DemoChange {
    Unchanged,
    Installed { widgets: usize },
    Uninstalled { widgets: usize },
}

/// Installs (`true`) or uninstalls the demo CRD.
pub fn set_demo(store: &Store, installed: bool) -> DemoChange {
    if store.serves(WIDGETS) == installed {
        return DemoChange::Unchanged;
    }
    if installed {
        store.set_served(WIDGETS, true);
        store.create(CRDS, objects::widget_crd(), HELM);
        let widgets = crate::workload::seed_widgets(store, false);
        DemoChange::Installed { widgets }
    } else {
        let widgets = take_down(store, WIDGETS, &demo_name());
        DemoChange::Uninstalled { widgets }
    }
}

/// Adds `crd`: returns its resource's position and how many objects came
/// with it.
pub fn add(store: &Store, crd: NewCrd) -> Result<(ResIdx, usize), CrdError> {
    let name = crd.name();
    if name == demo_name() {
        return Err(CrdError::Demo(name));
    }
    if store.get(CRDS, &name).is_some() {
        return Err(CrdError::AlreadyExists(name));
    }
    let object = objects::custom_resource_definition(
        &crd.group,
        &crd.version,
        &crd.kind,
        &crd.plural,
        crd.namespaced,
    );
    let def = ResourceType::custom(crd.group, crd.version, crd.plural, crd.kind, crd.namespaced);
    let res = store.define(def).map_err(|_| CrdError::Served { name })?;
    store.create(CRDS, object, APPLIED_CRD);
    let count = crd.objects.len();
    for object in crd.objects {
        store.create(res, object, CLIENT_SIDE_APPLY);
    }
    Ok((res, count))
}

/// Removes the CRD called `name`: returns how many of its objects were
/// deleted.
pub fn remove(store: &Store, name: &str) -> Result<usize, CrdError> {
    let not_found = || CrdError::NotFound(name.to_string());
    store.get(CRDS, name).ok_or_else(not_found)?;
    let res = store.position_of(name).ok_or_else(not_found)?;
    Ok(take_down(store, res, name))
}

/// Deletes the objects of `res`, ends its watches, stops serving it and
/// deletes its CRD object `name`; returns how many objects went.
fn take_down(store: &Store, res: ResIdx, name: &str) -> usize {
    let keys = store.keys(res);
    for key in &keys {
        store.delete(res, key);
    }
    // After the DELETED events, in the same broadcast order.
    store.broadcast(Msg::Close(res));
    store.set_served(res, false);
    store.delete(CRDS, name);
    keys.len()
}
