//! A `Driver`'s loop: carrying out what its informer's reflector asks for
//! (requests on the channel, on a `fetch` of their own or paused by the
//! connection budget; a background informer's delayed watch), feeding back
//! each outcome as an `Input`, applying queued keys a budget of work per
//! task, keeping one timer armed at the informer's next deadline, and
//! cancelling requests however they are carried out.

use std::cell::RefCell;
use std::rc::{Rc, Weak};

use wasm_bindgen_futures::spawn_local;
use web_sys::AbortController;

use super::{
    budget, channel, fetch, now, replay, slicing, timer, DriverState, InFlight,
    BACKGROUND_WATCH_DELAY_MS,
};
use crate::informer::{Action, Input, RequestId, RequestKind};

/// Disarms the timer and stops every request in flight.
pub(super) fn cancel_all(state: &Rc<RefCell<DriverState>>) {
    let ids: Vec<RequestId> = {
        let mut state = state.borrow_mut();
        state.timer_generation += 1;
        state.timer_armed = None;
        state.in_flight.keys().copied().collect()
    };
    for id in ids {
        cancel(state, id);
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
        Some(InFlight::Held) | None => {}
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
        if guard.quiet {
            guard.informer.handle(input, now());
            drop(guard);
            pump(&state);
            drain_later(&state);
            return true;
        }
        let events_before = guard.informer.status().events;
        let started = crate::metrics::perf_now();
        guard.marking_synced(|informer| informer.handle(input, now()));
        crate::metrics::add_feed(crate::metrics::perf_now() - started);
        crate::metrics::events_fed(
            started,
            guard.informer.status().events.saturating_sub(events_before),
        );
    }
    pump(&state);
    drain_later(&state);
    true
}

/// The most queued keys an informer applies in one step: 2–5 ms of a
/// release page's work at 100k pods (a relist's keys cost the most: each is
/// compared with the object it replaces). [`drain_later`] takes steps until
/// the task's budget is spent, so a large list is applied over many tasks
/// and the page draws between them. At 2,000 keys a step, a
/// relist of 100k pods was a run of 20 ms tasks, and frames of 33–50 ms.
pub(super) const DRAIN_STEP: usize = 500;

/// Applies what the informer still has queued, steps of [`DRAIN_STEP`]
/// keys until the task's budget ([`slicing::TaskBudget`]) is spent, then
/// yields to the event loop, until nothing is queued.
pub(super) fn drain_later(state: &Rc<RefCell<DriverState>>) {
    {
        let mut guard = state.borrow_mut();
        if guard.draining || guard.stopped || !guard.informer.has_queued_deltas() {
            return;
        }
        guard.draining = true;
    }
    let weak = Rc::downgrade(state);
    spawn_local(async move {
        loop {
            slicing::yield_to_event_loop().await;
            let Some(state) = weak.upgrade() else {
                return;
            };
            let more = {
                let mut guard = state.borrow_mut();
                if guard.stopped {
                    guard.draining = false;
                    return;
                }
                let budget = slicing::TaskBudget::default();
                loop {
                    guard.marking_synced(|informer| informer.drain(now()));
                    if !guard.informer.has_queued_deltas() || budget.used_up() {
                        break;
                    }
                }
                let more = guard.informer.has_queued_deltas();
                guard.draining = more;
                more
            };
            pump(&state);
            if !more {
                return;
            }
        }
    });
}

/// A background informer's watch: on the channel after
/// [`BACKGROUND_WATCH_DELAY_MS`], unless it was cancelled meanwhile; never
/// on a connection of its own (without a channel it fails, and its owner
/// stops it).
fn send_background_watch(
    state: &Rc<RefCell<DriverState>>,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
) {
    set_in_flight(state, id, InFlight::Held);
    let weak = Rc::downgrade(state);
    spawn_local(async move {
        timer::sleep_ms(BACKGROUND_WATCH_DELAY_MS).await;
        let Some(state) = weak.upgrade() else {
            return;
        };
        let held = {
            let guard = state.borrow();
            !guard.stopped && matches!(guard.in_flight.get(&id), Some(InFlight::Held))
        };
        if !held {
            return;
        }
        if matches!(
            channel::status(),
            channel::ChannelStatus::Unavailable { .. }
        ) {
            let message = "serve offers no channel for background watches".to_string();
            feed(&weak, Input::Failed { id, message });
            return;
        }
        state.borrow_mut().in_flight.remove(&id);
        channel::send_watch(&state, id, path, accept);
    });
}

/// Carries out every queued action, then tells the view.
pub(super) fn pump(state: &Rc<RefCell<DriverState>>) {
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
            } if state.borrow().quiet => send_background_watch(state, id, path_and_query, accept),
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
        }
    }
    arm_timer(state);
    let on_change = state.borrow().on_change.clone();
    on_change();
}

/// Keeps one timer armed at the informer's `poll_timeout`, re-arming only
/// when the deadline moved; when it fires the informer gets a `Tick`.
fn arm_timer(state: &Rc<RefCell<DriverState>>) {
    let (generation, at) = {
        let mut guard = state.borrow_mut();
        let at = if guard.stopped {
            None
        } else {
            guard.informer.poll_timeout()
        };
        if at == guard.timer_armed {
            return;
        }
        guard.timer_armed = at;
        guard.timer_generation += 1;
        (guard.timer_generation, at)
    };
    let Some(at) = at else {
        return;
    };
    let delay = at.saturating_sub(now());
    let weak = Rc::downgrade(state);
    spawn_local(async move {
        timer::sleep_ms(delay).await;
        let Some(state) = weak.upgrade() else {
            return;
        };
        {
            let mut guard = state.borrow_mut();
            if guard.timer_generation != generation {
                return;
            }
            guard.timer_armed = None;
        }
        feed(&weak, Input::Tick);
    });
}
