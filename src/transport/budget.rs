//! The page's connection budget. Browsers give an origin six HTTP/1.1
//! connections, and a long-lived request holds one for as long as it lives:
//! a seventh waits, silently, for one to free. So:
//!
//! - **Lists** run at most [`LIST_CONCURRENCY`] at a time, the rest queued in
//!   order, so discovery, control requests and the object view always find a
//!   connection, and no list waits behind watches.
//! - **Watches without a channel** (serve offers none: `trunk serve` straight
//!   in front of `kubectl proxy`, `serve --no-channel`, an older serve) get
//!   at most [`OWN_CONNECTION_WATCHES`] connections of their own. The others
//!   wait, *paused*, and the kept chips say so. The resource on screen always
//!   gets one: the watch of the resource shown least recently is ended
//!   cleanly to make room (its reflector re-watches from its last
//!   resourceVersion once it gets a connection back, so nothing is missed,
//!   only delivered later). A freed connection goes to the most recently
//!   shown waiting watch.
//!
//! With the channel, every watch shares its one connection and none of this
//! limits them.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::rc::{Rc, Weak};

use wasm_bindgen_futures::spawn_local;

use super::{feed, start_fetch, DriverState, InFlight};
use crate::informer::{Input, RequestId, RequestKind};

/// Watches on connections of their own at most, without a channel.
pub const OWN_CONNECTION_WATCHES: usize = 4;

/// Lists in flight at most (with the channel and the watches above, six).
pub const LIST_CONCURRENCY: usize = 2;

type Driver = Weak<RefCell<DriverState>>;

/// A list request waiting for its turn.
type Queued = std::pin::Pin<Box<dyn Future<Output = ()>>>;

struct Holder {
    driver: Driver,
    id: RequestId,
}

struct Waiter {
    driver: Driver,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
}

#[derive(Default)]
struct Budget {
    watches: Vec<Holder>,
    waiting: Vec<Waiter>,
    lists_running: usize,
    lists_queued: VecDeque<Queued>,
}

thread_local! {
    static BUDGET: RefCell<Budget> = RefCell::new(Budget::default());
}

/// Milliseconds since the page loaded (orders who was shown last).
pub fn clock() -> f64 {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| p.now())
        .unwrap_or(0.0)
}

fn shown_at(driver: &Driver) -> Option<f64> {
    let driver = driver.upgrade()?;
    let state = driver.borrow();
    (!state.stopped).then_some(state.shown_at)
}

/// Watches on their own connections now, and those waiting (for the status line).
pub fn watches_in_use() -> (usize, usize) {
    BUDGET.with(|b| {
        let b = b.borrow();
        (b.watches.len(), b.waiting.len())
    })
}

/// A watch without a channel: on a connection of its own if the budget
/// allows (or it is shown more recently than a holder), else paused.
pub(crate) fn request_watch(
    state: &Rc<RefCell<DriverState>>,
    id: RequestId,
    path: String,
    accept: Option<&'static str>,
) {
    let me = Rc::downgrade(state);
    let mine = state.borrow().shown_at;
    let victim = BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        b.watches.retain(|h| shown_at(&h.driver).is_some());
        if b.watches.len() < OWN_CONNECTION_WATCHES {
            b.watches.push(Holder {
                driver: me.clone(),
                id,
            });
            return Ok(None);
        }
        let least = b
            .watches
            .iter()
            .enumerate()
            .filter_map(|(i, h)| Some((i, shown_at(&h.driver)?)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match least {
            Some((index, theirs)) if theirs < mine => {
                let victim = b.watches.remove(index);
                b.watches.push(Holder {
                    driver: me.clone(),
                    id,
                });
                Ok(Some(victim))
            }
            _ => {
                b.waiting.push(Waiter {
                    driver: me.clone(),
                    id,
                    path: path.clone(),
                    accept,
                });
                Err(())
            }
        }
    });
    match victim {
        Ok(victim) => {
            start_fetch(state, id, RequestKind::Watch, path, accept);
            if let Some(victim) = victim {
                end_for_room(victim);
            }
        }
        Err(()) => super::set_in_flight(state, id, InFlight::Paused),
    }
}

/// Ends a holder's watch cleanly, as a server closing a watch would: its
/// reflector re-watches from its last resourceVersion, and that request waits.
fn end_for_room(victim: Holder) {
    let Some(driver) = victim.driver.upgrade() else {
        return;
    };
    let controller = match driver.borrow_mut().in_flight.remove(&victim.id) {
        Some(InFlight::Fetch(controller)) => controller,
        Some(other) => {
            driver.borrow_mut().in_flight.insert(victim.id, other);
            return;
        }
        None => return,
    };
    controller.abort();
    // Fed as its own: in_flight no longer holds it, so mark it live again.
    driver
        .borrow_mut()
        .in_flight
        .insert(victim.id, InFlight::Paused);
    feed(&victim.driver, Input::BodyEnd { id: victim.id });
}

/// Request `id` no longer holds or waits for a connection: hand a freed one
/// to the most recently shown waiting watch.
pub fn release(id: RequestId) {
    let next = BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        b.waiting
            .retain(|w| w.id != id && shown_at(&w.driver).is_some());
        b.watches
            .retain(|h| h.id != id && shown_at(&h.driver).is_some());
        if b.watches.len() >= OWN_CONNECTION_WATCHES {
            return None;
        }
        let best = b
            .waiting
            .iter()
            .enumerate()
            .filter_map(|(i, w)| Some((i, shown_at(&w.driver)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?
            .0;
        Some(b.waiting.remove(best))
    });
    if let Some(waiter) = next {
        resume(waiter);
    }
}

/// A driver was shown: if a watch of it waits, it gets a connection now.
pub(crate) fn reconsider(state: &Rc<RefCell<DriverState>>) {
    let me = Rc::downgrade(state);
    let waiter = BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        let index = b.waiting.iter().position(|w| w.driver.ptr_eq(&me))?;
        Some(b.waiting.remove(index))
    });
    if let Some(waiter) = waiter {
        resume(waiter);
    }
}

fn resume(waiter: Waiter) {
    let Some(driver) = waiter.driver.upgrade() else {
        return;
    };
    let still_wanted = matches!(
        driver.borrow().in_flight.get(&waiter.id),
        Some(InFlight::Paused)
    );
    if still_wanted {
        driver.borrow_mut().in_flight.remove(&waiter.id);
        request_watch(&driver, waiter.id, waiter.path, waiter.accept);
        // It may have changed what the view shows (paused → running).
        let on_change = driver.borrow().on_change.clone();
        on_change();
    }
}

/// Runs a list request when fewer than [`LIST_CONCURRENCY`] are in flight.
pub fn run_list(request: impl Future<Output = ()> + 'static) {
    let mut request: Option<Queued> = Some(Box::pin(request));
    BUDGET.with(|b| {
        let mut b = b.borrow_mut();
        if b.lists_running < LIST_CONCURRENCY {
            b.lists_running += 1;
        } else if let Some(request) = request.take() {
            b.lists_queued.push_back(request);
        }
    });
    let Some(request) = request else {
        return;
    };
    // It got a slot: run it, then whatever queued meanwhile.
    spawn_local(async move {
        request.await;
        loop {
            let queued = BUDGET.with(|b| {
                let mut b = b.borrow_mut();
                let queued = b.lists_queued.pop_front();
                if queued.is_none() {
                    b.lists_running -= 1;
                }
                queued
            });
            match queued {
                Some(request) => request.await,
                None => break,
            }
        }
    });
}
