//! The logs view's I/O: a [`LogsRunner`] owns one [`LogSession`] (the
//! sans-IO followers, ring and breaks) and carries out what it asks —
//! each request a stream on the page's channel ([`channel::open_stream`],
//! a fetch of its own without a channel), cancels, and the followers'
//! reconnect timers — feeding every input back and asking for a frame.
//! Which pods it follows comes from the pods informer the page keeps for
//! the namespace (and, for a workload, the workload's informer for its
//! selector): pods that come and go join and leave the view.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use deltascope_channel::StreamId;
use wasm_bindgen_futures::spawn_local;

use super::kept_informers::KeptInformers;
use crate::address::log_route::{LogRoute, LogTarget};
use crate::address::route::Route;
use crate::informer::compact_sort;
use crate::informer::logs::{LogOptions, RingBounds};
use crate::informer::relations::pod_selector;
use crate::informer::{Action, Input, Millis, RequestId};
use crate::model::log_session::{LogSession, PodLogInfo};
use crate::transport::{channel, now, timer};

/// `localStorage` key of the logs view's ring bounds.
const BOUNDS_KEY: &str = "deltascope.logBounds";

struct Shared {
    session: RefCell<LogSession>,
    streams: RefCell<HashMap<RequestId, StreamId>>,
    on_change: Rc<dyn Fn()>,
    stopped: Cell<bool>,
    /// Where the pods' cluster's API is under serve (`Route::api_root`).
    api_root: String,
    /// The wake-up scheduled (time, generation).
    timer: Cell<(Option<Millis>, u64)>,
}

/// One logs view's followers and the pods they follow.
pub struct LogsRunner {
    pub route: LogRoute,
    shared: Rc<Shared>,
    /// The pods last given to the session (to skip unchanged updates).
    pods: RefCell<Option<Vec<PodLogInfo>>>,
}

impl LogsRunner {
    pub fn start(route: LogRoute, on_change: Rc<dyn Fn()>) -> LogsRunner {
        let options = LogOptions {
            previous: route.previous,
            tail_lines: route.tail,
            since_seconds: route.since,
            // A previous run is over: read it once, as `kubectl logs --previous`.
            follow: !route.previous,
            ..LogOptions::default()
        };
        let container = match &route.target {
            LogTarget::Pod { container } => container.clone(),
            LogTarget::Workload { .. } => None,
        };
        let session = LogSession::new(&route.namespace, container.clone(), options, load_bounds());
        let runner = LogsRunner {
            shared: Rc::new(Shared {
                session: RefCell::new(session),
                streams: RefCell::new(HashMap::new()),
                on_change,
                stopped: Cell::new(false),
                api_root: crate::address::route::api_root(route.cluster.as_deref()),
                timer: Cell::new((None, 0)),
            }),
            route,
            pods: RefCell::new(None),
        };
        if container.is_some() {
            // One named container: read at once, before the pods are known.
            let pod = PodLogInfo {
                name: runner.route.name.clone(),
                containers: Vec::new(),
            };
            runner.set_pods(vec![pod]);
        }
        runner
    }

    /// The containers of the first pod it follows (init containers first).
    pub fn containers(&self) -> Vec<String> {
        self.pods
            .borrow()
            .as_ref()
            .and_then(|pods| pods.first())
            .map(|pod| pod.containers.clone())
            .unwrap_or_default()
    }

    /// Reads the session (for the frame).
    pub fn session(&self) -> std::cell::Ref<'_, LogSession> {
        self.shared.session.borrow()
    }

    pub fn stop(&self) {
        self.shared.session.borrow_mut().stop();
        pump(&self.shared);
        self.shared.stopped.set(true);
    }

    /// New bounds for the ring, saved for the next load.
    pub fn set_bounds(&self, bounds: RingBounds) {
        self.shared.session.borrow_mut().set_bounds(bounds);
        save_bounds(bounds);
        (self.shared.on_change)();
    }

    fn set_pods(&self, pods: Vec<PodLogInfo>) {
        if self.pods.borrow().as_ref() == Some(&pods) {
            return;
        }
        self.shared.session.borrow_mut().set_pods(&pods, now());
        *self.pods.borrow_mut() = Some(pods);
        pump(&self.shared);
    }

    /// Keeps the informers it needs live (pods of the namespace, and the
    /// workload's resource) and follows the pods they show now.
    pub fn observe(&self, kept: &mut KeptInformers, seed: u64, on_change: Rc<dyn Fn()>) {
        let route = &self.route;
        let pods_route = route.pods_route();
        let Some(pods_informer) = find_or_keep(kept, &pods_route, seed, on_change.clone()) else {
            return;
        };
        let workload = match &route.target {
            LogTarget::Workload { kind } => {
                let workload_route = route.resource_route();
                let Some(id) = find_or_keep(kept, &workload_route, seed, on_change) else {
                    return;
                };
                Some((id, *kind))
            }
            LogTarget::Pod { .. } => None,
        };
        let Some(pods_source) = kept.get(pods_informer) else {
            return;
        };
        let pods_informer = pods_source.driver.informer();
        if !pods_informer.has_synced() {
            return;
        }
        let key = format!("{}/{}", route.namespace, route.name);
        let selected: Vec<PodLogInfo> = match workload {
            None => pods_informer
                .store()
                .get_by_key(&key)
                .and_then(|pod| PodLogInfo::from_pod(pod.value.root()))
                .into_iter()
                .collect(),
            Some((id, kind)) => {
                let Some(source) = kept.get(id) else {
                    return;
                };
                let informer = source.driver.informer();
                if !informer.has_synced() {
                    return;
                }
                let selector = informer
                    .store()
                    .get_by_key(&key)
                    .and_then(|object| pod_selector(kind, object.value.root()));
                let mut pods: Vec<PodLogInfo> = match selector {
                    Some(selector) => pods_informer
                        .store()
                        .list()
                        .filter(|pod| pod.namespace() == Some(route.namespace.as_str()))
                        .filter(|pod| selector.matches(pod.value.pointer("/metadata/labels")))
                        .filter_map(|pod| PodLogInfo::from_pod(pod.value.root()))
                        .collect(),
                    None => Vec::new(),
                };
                compact_sort::sort_by(&mut pods, |a, b| a.name.cmp(&b.name));
                pods
            }
        };
        drop(pods_informer);
        self.set_pods(selected);
    }
}

/// A kept informer showing `route`'s objects (one of all namespaces will
/// do), kept now if there is none.
fn find_or_keep(
    kept: &mut KeptInformers,
    route: &Route,
    seed: u64,
    on_change: Rc<dyn Fn()>,
) -> Option<u64> {
    let serves = |r: &Route| {
        r.cluster == route.cluster
            && r.group == route.group
            && r.resource == route.resource
            && r.label_selector.is_none()
            && r.field_selector.is_none()
            && (r.namespace.is_none() || r.namespace == route.namespace)
    };
    let found = |kept: &KeptInformers| {
        kept.by_age()
            .into_iter()
            .find(|(_, source)| serves(&source.route))
            .map(|(id, _)| id)
    };
    if let Some(id) = found(kept) {
        return Some(id);
    }
    kept.keep(route, seed, on_change, Some(true));
    found(kept)
}

/// Carries out the session's actions, arms its timer and asks for a frame.
fn pump(shared: &Rc<Shared>) {
    let actions: Vec<(u32, Action)> = {
        let mut session = shared.session.borrow_mut();
        std::iter::from_fn(|| session.poll_action()).collect()
    };
    for (source, action) in actions {
        match action {
            Action::Send {
                id,
                path_and_query,
                accept,
                ..
            } => {
                if shared.stopped.get() {
                    continue;
                }
                let weak = Rc::downgrade(shared);
                let feed: channel::StreamFeed = Rc::new(move |input| feed(&weak, source, input));
                let path_and_query = format!("{}{path_and_query}", shared.api_root);
                let stream = channel::open_stream(id, path_and_query, accept, feed);
                shared.streams.borrow_mut().insert(id, stream);
            }
            Action::Cancel { id } => {
                if let Some(stream) = shared.streams.borrow_mut().remove(&id) {
                    channel::close(stream);
                }
            }
        }
    }
    arm_timer(shared);
    (shared.on_change)();
}

fn feed(shared: &Weak<Shared>, source: u32, input: Input<'_>) -> bool {
    let Some(shared) = shared.upgrade() else {
        return false;
    };
    if shared.stopped.get() {
        return false;
    }
    if let Input::BodyEnd { id } | Input::Failed { id, .. } = &input {
        shared.streams.borrow_mut().remove(id);
    }
    shared.session.borrow_mut().handle(source, input, now());
    pump(&shared);
    true
}

fn arm_timer(shared: &Rc<Shared>) {
    let Some(at) = shared.session.borrow().poll_timeout() else {
        return;
    };
    let (armed, generation) = shared.timer.get();
    if armed == Some(at) {
        return;
    }
    let generation = generation + 1;
    shared.timer.set((Some(at), generation));
    let weak = Rc::downgrade(shared);
    spawn_local(async move {
        timer::sleep_ms(at.saturating_sub(now())).await;
        let Some(shared) = weak.upgrade() else {
            return;
        };
        if shared.stopped.get() || shared.timer.get().1 != generation {
            return;
        }
        shared.timer.set((None, generation));
        shared.session.borrow_mut().tick(now());
        pump(&shared);
    });
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The bounds saved by the user, else the default.
pub fn load_bounds() -> RingBounds {
    let saved = storage()
        .and_then(|s| s.get_item(BOUNDS_KEY).ok().flatten())
        .and_then(|text| {
            let (lines, bytes) = text.split_once(',')?;
            Some(RingBounds {
                max_lines: lines.trim().parse().ok()?,
                max_bytes: bytes.trim().parse().ok()?,
            })
        });
    saved.unwrap_or_default()
}

fn save_bounds(bounds: RingBounds) {
    if let Some(storage) = storage() {
        let _ = storage.set_item(
            BOUNDS_KEY,
            &format!("{},{}", bounds.max_lines, bounds.max_bytes),
        );
    }
}
