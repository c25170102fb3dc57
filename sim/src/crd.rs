//! The demo CustomResourceDefinition (`widgets.demo.deltascope.dev`) installed
//! and uninstalled at runtime, behind `POST /_sim/crd {"installed": bool}`,
//! so tests can watch a client notice a CRD that appears or goes while it
//! runs (issue 26: the page's discovery refresh).
//!
//! Uninstalling does what an apiserver does when a CRD is deleted: its custom
//! objects are deleted (DELETED events to their watchers), the watches of
//! the resource end, the CRD object itself is deleted (a DELETED event to
//! CRD watchers), and from then on discovery omits the group and every
//! request for the resource answers 404. Installing creates the CRD object
//! again (ADDED), discovery lists the group again, and the demo's nine
//! widgets are created again, as applying the demo's manifests would.
//! The cluster starts with the CRD installed.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use super::resources::{ResourceType, CRDS, CRD_GROUP, WIDGETS};
use super::status::{json_response, ApiError};
use super::store::{Msg, Store};
use super::Inner;

/// Whether the demo CRD is installed. The lock is held for a whole install
/// or uninstall, so two controls never interleave their writes.
#[derive(Debug)]
pub struct CrdState {
    installed: std::sync::Mutex<bool>,
}

impl Default for CrdState {
    fn default() -> Self {
        CrdState {
            installed: std::sync::Mutex::new(true),
        }
    }
}

/// What a control did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Unchanged,
    Installed { widgets: usize },
    Uninstalled { widgets: usize },
}

impl CrdState {
    /// Is the demo CRD installed now?
    pub fn installed(&self) -> bool {
        *self.installed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Is `r` served now? Everything is, except the CRD's own resource
    /// while the CRD is uninstalled.
    pub fn serves(&self, r: &ResourceType) -> bool {
        r.group != CRD_GROUP || self.installed()
    }

    /// Install or uninstall the CRD in `store`.
    pub fn set(&self, store: &Store, installed: bool) -> Change {
        let mut now = self.installed.lock().unwrap_or_else(|e| e.into_inner());
        if *now == installed {
            return Change::Unchanged;
        }
        if installed {
            store.create(
                CRDS,
                super::objects::widget_crd(),
                super::managed::managers::HELM,
            );
            *now = true;
            let widgets = super::workload::seed_widgets(store, false);
            Change::Installed { widgets }
        } else {
            let keys = store.keys(WIDGETS);
            for key in &keys {
                store.delete(WIDGETS, key);
            }
            // After the DELETED events, in the same broadcast order.
            store.broadcast(Msg::Close(WIDGETS));
            store.delete(CRDS, &crd_name());
            *now = false;
            Change::Uninstalled {
                widgets: keys.len(),
            }
        }
    }
}

/// `widgets.demo.deltascope.dev`: the CRD object's name.
pub fn crd_name() -> String {
    format!("widgets.{CRD_GROUP}")
}

#[derive(Deserialize)]
struct CrdBody {
    installed: bool,
}

/// `POST /_sim/crd {"installed": false|true}`.
pub async fn control(State(inner): State<Arc<Inner>>, body: Bytes) -> Response {
    let b: CrdBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return ApiError::bad_request(format!(
            "invalid JSON body ({e}); expected {{\"installed\": false}} or {{\"installed\": true}}"
        ))
            .into_response()
        }
    };
    let name = crd_name();
    let effect = match inner.crd.set(&inner.store, b.installed) {
        Change::Unchanged if b.installed => format!("{name} was already installed"),
        Change::Unchanged => format!("{name} was already uninstalled"),
        Change::Installed { widgets } => format!(
            "installed {name}: discovery lists {CRD_GROUP}/v1 again; created {widgets} widgets"
        ),
        Change::Uninstalled { widgets } => format!(
            "uninstalled {name}: deleted {widgets} widgets and closed their watches; discovery omits {CRD_GROUP} and its requests answer 404"
        ),
    };
    tracing::info!(installed = b.installed, %effect, "sim CRD control");
    let rv = inner.store.rv_string(inner.store.revision());
    json_response(
        serde_json::to_vec(&json!({"crd": name, "installed": b.installed, "effect": effect, "resourceVersion": rv}))
            .unwrap_or_default(),
    )
}
