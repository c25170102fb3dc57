//! The browser side of the network, and the only code that touches `fetch`.
//! A `Driver` owns one `Informer` and carries out what its sans-IO reflector
//! asks for: GET requests, their bodies chunk by chunk, and wake-ups via
//! `setTimeout`. Every outcome is fed back as an `Input`; after each, the
//! view is told that the store may have changed.
//!
//! Where a request goes: a watch rides the page's one multiplexed channel
//! ([`channel`]) when serve offers it; without one (`trunk serve` straight in
//! front of `kubectl proxy`), a few watches get connections of their own and
//! the rest wait, paused ([`budget`]). Lists are ordinary `fetch`es, a few at
//! a time ([`budget::run_list`]), so none is starved of a connection.

pub mod budget;
pub mod channel;
pub mod discovery;
mod fetch;
pub mod metrics;
mod replay;
mod timer;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::{Rc, Weak};

use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

use crate::informer::{Action, Informer, InformerConfig, Input, Millis, RequestId, RequestKind};

/// Milliseconds on the page's monotonic clock.
pub fn now() -> Millis {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now().max(0.0) as Millis)
        .unwrap_or(0)
}

/// How one of the reflector's requests is being carried out.
pub(crate) enum InFlight {
    /// A `fetch` of its own.
    Fetch(AbortController),
    /// A stream on the page's channel.
    Channel(deltascope_channel::StreamId),
    /// A watch held back by the browser's connection limit (no channel).
    Paused,
}

pub(crate) struct DriverState {
    pub(crate) informer: Informer,
    in_flight: HashMap<RequestId, InFlight>,
    /// When its view was last shown ([`Driver::mark_shown`]): who gets a
    /// connection first when there is no channel.
    pub(crate) shown_at: f64,
    timer_generation: u64,
    on_change: Rc<dyn Fn()>,
    stopped: bool,
    /// Offline: requests are answered from a recording.
    replay: Option<replay::ReplaySource>,
}

/// One running informer in the page. Dropping the last `Driver` does not stop
/// the requests; call [`Driver::stop`].
#[derive(Clone)]
pub struct Driver {
    state: Rc<RefCell<DriverState>>,
}

impl Driver {
    /// Starts listing and watching; `on_change` runs after every input that may have changed the store or status.
    pub fn start(config: InformerConfig, on_change: Rc<dyn Fn()>) -> Driver {
        let state = Rc::new(RefCell::new(DriverState {
            informer: Informer::new(config),
            in_flight: HashMap::new(),
            timer_generation: 0,
            on_change,
            stopped: false,
            replay: None,
            shown_at: crate::transport::budget::clock(),
        }));
        metrics::mark("list-start");
        state.borrow_mut().informer.start(now());
        pump(&state);
        Driver { state }
    }

    /// Replays a recording offline through the same informer path, `speed` times faster than recorded.
    pub fn replay(
        mut config: InformerConfig,
        events: Vec<crate::time_travel::RecordedEvent>,
        speed: f64,
        on_change: Rc<dyn Fn()>,
    ) -> Driver {
        config.streaming_list = false;
        let state = Rc::new(RefCell::new(DriverState {
            informer: Informer::new(config),
            in_flight: HashMap::new(),
            timer_generation: 0,
            on_change,
            stopped: false,
            shown_at: crate::transport::budget::clock(),
            replay: Some(replay::ReplaySource {
                script: Rc::new(RefCell::new(crate::time_travel::ReplayScript::new(events))),
                speed,
                started: now(),
            }),
        }));
        state.borrow_mut().informer.start(now());
        pump(&state);
        Driver { state }
    }

    /// Read or update the informer (the views read the store, status and history through this).
    pub fn with_informer<R>(&self, f: impl FnOnce(&mut Informer) -> R) -> R {
        f(&mut self.state.borrow_mut().informer)
    }

    /// Reads the informer while the guard lives (to read several informers'
    /// histories at once); no input is fed meanwhile, as feeding happens in
    /// callbacks that run after the render returns.
    pub fn informer(&self) -> std::cell::Ref<'_, Informer> {
        std::cell::Ref::map(self.state.borrow(), |state| &state.informer)
    }

    /// True once [`Driver::stop`] ran (its requests are aborted).
    pub fn is_stopped(&self) -> bool {
        self.state.borrow().stopped
    }

    /// Its view is on screen: without a channel, it gets a connection
    /// before the resources shown less recently.
    pub fn mark_shown(&self) {
        self.state.borrow_mut().shown_at = budget::clock();
        budget::reconsider(&self.state);
    }

    /// A watch of it waits for a connection (no channel, the browser's limit reached).
    pub fn is_paused(&self) -> bool {
        self.state
            .borrow()
            .in_flight
            .values()
            .any(|f| matches!(f, InFlight::Paused))
    }

    /// Aborts in-flight requests and stops the timer.
    pub fn stop(&self) {
        {
            let mut state = self.state.borrow_mut();
            state.stopped = true;
            state.informer.stop();
        }
        pump(&self.state);
        let ids: Vec<RequestId> = {
            let mut state = self.state.borrow_mut();
            state.timer_generation += 1;
            state.in_flight.keys().copied().collect()
        };
        for id in ids {
            cancel(&self.state, id);
        }
    }
}

/// Stops request `id` however it is carried out (later inputs for it are ignored).
fn cancel(state: &Rc<RefCell<DriverState>>, id: RequestId) {
    let removed = state.borrow_mut().in_flight.remove(&id);
    match removed {
        Some(InFlight::Fetch(controller)) => {
            controller.abort();
            budget::release(id);
        }
        Some(InFlight::Channel(stream)) => channel::close(stream),
        Some(InFlight::Paused) => budget::release(id),
        None => {}
    }
}

/// Starts `id` on a `fetch` of its own (a list, or a watch without a channel).
pub(crate) fn start_fetch(
    state: &Rc<RefCell<DriverState>>,
    id: RequestId,
    kind: RequestKind,
    path_and_query: String,
    accept: Option<&'static str>,
) {
    let controller = match AbortController::new() {
        Ok(controller) => controller,
        Err(_) => {
            let message = "the browser refused to create an AbortController".to_string();
            feed(&Rc::downgrade(state), Input::Failed { id, message });
            return;
        }
    };
    let signal = controller.signal();
    state
        .borrow_mut()
        .in_flight
        .insert(id, InFlight::Fetch(controller));
    let request = fetch::run_request(Rc::downgrade(state), id, path_and_query, accept, signal);
    match kind {
        RequestKind::List => budget::run_list(request),
        RequestKind::Watch => spawn_local(request),
    }
}

/// Marks `id` as carried by something other than a fetch of its own.
pub(crate) fn set_in_flight(state: &Rc<RefCell<DriverState>>, id: RequestId, how: InFlight) {
    state.borrow_mut().in_flight.insert(id, how);
}

/// Feeds one input for request `id` (ignored once the request was cancelled or the driver stopped).
pub(crate) fn feed(state: &Weak<RefCell<DriverState>>, input: Input<'_>) -> bool {
    let Some(state) = state.upgrade() else {
        return false;
    };
    {
        let mut guard = state.borrow_mut();
        if guard.stopped {
            return false;
        }
        let live = match &input {
            Input::ResponseStarted { id, .. }
            | Input::BodyChunk { id, .. }
            | Input::BodyEnd { id }
            | Input::Failed { id, .. } => guard.in_flight.contains_key(id),
            Input::Tick => true,
        };
        if !live {
            return false;
        }
        if let Input::BodyEnd { id } | Input::Failed { id, .. } = &input {
            if let Some(InFlight::Fetch(_)) = guard.in_flight.remove(id) {
                budget::release(*id);
            }
        }
        let was_synced = guard.informer.has_synced();
        let events_before = guard.informer.status().events;
        let started = metrics::perf_now();
        guard.informer.handle(input, now());
        metrics::add_feed(metrics::perf_now() - started);
        metrics::events_fed(
            started,
            guard.informer.status().events.saturating_sub(events_before),
        );
        if !was_synced && guard.informer.has_synced() {
            metrics::mark("synced");
        }
    }
    pump(&state);
    true
}

/// Carries out every queued action, then tells the view.
fn pump(state: &Rc<RefCell<DriverState>>) {
    let actions: Vec<Action> = {
        let mut guard = state.borrow_mut();
        std::iter::from_fn(|| guard.informer.poll_action()).collect()
    };
    for action in actions {
        match action {
            Action::Send { id, kind, .. } if state.borrow().replay.is_some() => {
                let Ok(controller) = AbortController::new() else {
                    continue;
                };
                set_in_flight(state, id, InFlight::Fetch(controller));
                let weak = Rc::downgrade(state);
                let mut guard = state.borrow_mut();
                let Some(source) = guard.replay.as_mut() else {
                    continue;
                };
                let script = source.script.clone();
                match kind {
                    RequestKind::List => spawn_local(replay::answer_list(weak, id, script)),
                    RequestKind::Watch => {
                        spawn_local(replay::play(weak, id, script, source.speed, source.started))
                    }
                }
            }
            Action::Send {
                id,
                kind: RequestKind::Watch,
                path_and_query,
                accept,
            } => channel::send_watch(state, id, path_and_query, accept),
            Action::Send {
                id,
                kind: RequestKind::List,
                path_and_query,
                accept,
            } => start_fetch(state, id, RequestKind::List, path_and_query, accept),
            Action::Cancel { id } => cancel(state, id),
            Action::WakeAt { at } => {
                let generation = {
                    let mut guard = state.borrow_mut();
                    guard.timer_generation += 1;
                    guard.timer_generation
                };
                let delay = at.saturating_sub(now());
                let weak = Rc::downgrade(state);
                spawn_local(async move {
                    timer::sleep_ms(delay).await;
                    let current = weak.upgrade().map(|s| s.borrow().timer_generation);
                    if current == Some(generation) {
                        feed(&weak, Input::Tick);
                    }
                });
            }
        }
    }
    let on_change = state.borrow().on_change.clone();
    on_change();
}
