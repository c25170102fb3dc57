//! Recording every object version the cluster holds or commits
//! ([`VersionLog`]), so a test can check that a client never shows a
//! version the cluster did not produce.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::store::{EventType, Msg, Store};

/// How a recorded object version came to be (see [`crate::Sim::record_versions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VersionOrigin {
    /// Already stored when recording started.
    Existing,
    Added,
    Modified,
    /// The deletion event (the last state restamped with the deletion's revision).
    Deleted,
}

/// One object version the simulated cluster held or committed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RecordedVersion {
    /// `pods`, `deployments.apps`, ...
    pub resource: String,
    /// `namespace/name`, or `name` for cluster-scoped objects.
    pub key: String,
    pub resource_version: String,
    pub origin: VersionOrigin,
}

/// Every object version since [`crate::Sim::record_versions`] was called, filled by
/// a background task; tests check a client never shows a version the
/// cluster did not produce.
#[derive(Clone)]
pub struct VersionLog {
    versions: Arc<Mutex<Vec<RecordedVersion>>>,
    /// The recorder fell behind the store's broadcast and missed events.
    lagged: Arc<AtomicBool>,
}

impl VersionLog {
    /// A copy of everything recorded so far, in commit order.
    pub fn versions(&self) -> Vec<RecordedVersion> {
        self.versions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// True if events were missed (the log is then incomplete).
    pub fn lagged(&self) -> bool {
        self.lagged.load(Ordering::SeqCst)
    }
}

/// Starts recording every object version of `store`: those stored now and
/// every later change, in commit order. Must be called inside the runtime.
pub(crate) fn record(store: &Arc<Store>) -> VersionLog {
    let (now, mut rx) = store.subscribe_everything();
    let names: std::collections::HashMap<usize, String> =
        store.resource_names().into_iter().collect();
    let name = |res: usize| names.get(&res).cloned().unwrap_or_default();
    let initial = now
        .into_iter()
        .map(|(res, key, rev)| RecordedVersion {
            resource: name(res),
            key,
            resource_version: store.rv_string(rev),
            origin: VersionOrigin::Existing,
        })
        .collect();
    let log = VersionLog {
        versions: Arc::new(Mutex::new(initial)),
        lagged: Arc::new(AtomicBool::new(false)),
    };
    let out = log.clone();
    let store = store.clone();
    tokio::spawn(async move {
        use tokio::sync::broadcast::error::RecvError;
        loop {
            match rx.recv().await {
                Ok(Msg::Event(e)) => {
                    let origin = match e.etype {
                        EventType::Added => VersionOrigin::Added,
                        EventType::Modified => VersionOrigin::Modified,
                        EventType::Deleted => VersionOrigin::Deleted,
                    };
                    let v = RecordedVersion {
                        resource: store
                            .resource(e.res)
                            .map(|r| r.qualified())
                            .unwrap_or_default(),
                        key: e.obj.key.clone(),
                        resource_version: store.rv_string(e.rev),
                        origin,
                    };
                    out.versions
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(v);
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => out.lagged.store(true, Ordering::SeqCst),
                Err(RecvError::Closed) => return,
            }
        }
    });
    log
}
