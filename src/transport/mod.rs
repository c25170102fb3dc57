//! The browser side of the network, and the only code that touches `fetch`.
//! A `Driver` owns one `Informer` and carries out what its sans-IO reflector
//! asks for: GET requests through `fetch` with an `AbortController`, their
//! bodies read as a `ReadableStream` chunk by chunk, and wake-ups via
//! `setTimeout`. Every outcome is fed back as an `Input`; after each, the
//! view is told that the store may have changed.

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

pub(crate) struct DriverState {
    pub(crate) informer: Informer,
    in_flight: HashMap<RequestId, AbortController>,
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

    /// Aborts in-flight requests and stops the timer.
    pub fn stop(&self) {
        {
            let mut state = self.state.borrow_mut();
            state.stopped = true;
            state.informer.stop();
        }
        pump(&self.state);
        let mut state = self.state.borrow_mut();
        for (_, controller) in state.in_flight.drain() {
            controller.abort();
        }
        state.timer_generation += 1;
    }
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
            guard.in_flight.remove(id);
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
                state.borrow_mut().in_flight.insert(id, controller);
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
                kind: _,
                path_and_query,
                accept,
            } => {
                let controller = match AbortController::new() {
                    Ok(controller) => controller,
                    Err(_) => {
                        let message =
                            "the browser refused to create an AbortController".to_string();
                        state
                            .borrow_mut()
                            .informer
                            .handle(Input::Failed { id, message }, now());
                        continue;
                    }
                };
                let signal = controller.signal();
                state.borrow_mut().in_flight.insert(id, controller);
                spawn_local(fetch::run_request(
                    Rc::downgrade(state),
                    id,
                    path_and_query,
                    accept,
                    signal,
                ));
            }
            Action::Cancel { id } => {
                if let Some(controller) = state.borrow_mut().in_flight.remove(&id) {
                    controller.abort();
                }
            }
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
