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
//!
//! Here: the `Driver` and its state; its loop (carrying out the queued
//! actions, feeding inputs, the timer) is `pump`. Plain requests of their
//! own: API discovery (`discovery`) and serve's history (`serve_history`);
//! the metrics API's lists ride the channel too (`channel::get_streamed`).
//! The browser's database: the kept views' records (`database`), one
//! database per cluster (`database_directory`) and the objects' usage
//! series (`stored_usage`).

pub mod budget;
pub mod channel;
pub mod database;
pub mod database_directory;
pub mod discovery;
mod fetch;
mod pump;
mod replay;
pub mod serve_history;
pub(crate) mod slicing;
pub mod stored_usage;
pub(crate) mod timer;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use web_sys::AbortController;

use crate::informer::{Informer, InformerConfig, Millis, RequestId};

use pump::{cancel_all, drain_later, pump, DRAIN_STEP};
pub(crate) use pump::{feed, set_in_flight, start_fetch};

/// Milliseconds on the page's clock: since the Unix epoch, as the
/// performance timeline counts them (`timeOrigin + now()`: monotonic while
/// the page lives, and comparable across reloads, so a history restored
/// from the browser's database keeps its times).
pub fn now() -> Millis {
    web_sys::window()
        .and_then(|w| w.performance())
        .map(|p| (p.time_origin() + p.now()).max(0.0) as Millis)
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
    /// A background informer's watch waiting its turn
    /// ([`BACKGROUND_WATCH_DELAY_MS`]).
    Held,
}

/// The watches of background informers (the CRD watch behind discovery)
/// are sent this long after their reflector asks: when a server closes
/// every watch at once, the views' own watches ask again first (and meet
/// whatever the server answers first, e.g. a one-off 429), and the page's
/// bookkeeping never competes with what the user looks at.
pub const BACKGROUND_WATCH_DELAY_MS: Millis = 5_000;

pub(crate) struct DriverState {
    pub(crate) informer: Informer,
    in_flight: HashMap<RequestId, InFlight>,
    /// When its view was last shown ([`Driver::mark_shown`]): who gets a
    /// connection first when there is no channel.
    pub(crate) shown_at: f64,
    /// The one timer: its generation (a newer one voids older ones) and
    /// the deadline it is armed for (the informer's `poll_timeout`).
    timer_generation: u64,
    timer_armed: Option<Millis>,
    on_change: Rc<dyn Fn()>,
    stopped: bool,
    /// Offline: requests are answered from a recording.
    replay: Option<replay::ReplaySource>,
    /// The page's own bookkeeping (the CRD watch behind discovery): leaves
    /// no performance marks, so the metrics and benchmarks count only the
    /// informers of resource views.
    quiet: bool,
    /// A task is applying the informer's queued deltas a step at a time.
    draining: bool,
    /// Not started yet: its store may be restored from the browser's
    /// database first ([`Driver::waiting`]).
    waiting: bool,
}

impl DriverState {
    /// Runs `step` on the informer and leaves the "synced" performance mark
    /// if it made the informer synced (the page's own informers leave none).
    fn marking_synced<R>(&mut self, step: impl FnOnce(&mut Informer) -> R) -> R {
        let was_synced = self.informer.has_synced();
        let result = step(&mut self.informer);
        if !was_synced && self.informer.has_synced() && !self.quiet {
            crate::metrics::mark("synced");
        }
        result
    }
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
        crate::metrics::mark("list-start");
        Self::start_with(config, on_change, false)
    }

    /// Starts an informer of the page's own (the CRD watch behind API
    /// discovery): no performance marks, and it is the last in line for a
    /// connection of its own. Start it only when the channel is open.
    pub fn start_background(config: InformerConfig, on_change: Rc<dyn Fn()>) -> Driver {
        Self::start_with(config, on_change, true)
    }

    /// An informer that sends nothing yet: its store may come back from the
    /// browser's database ([`Driver::resume`]), or it starts listing
    /// ([`Driver::begin`]).
    pub fn waiting(config: InformerConfig, on_change: Rc<dyn Fn()>) -> Driver {
        let driver = Self::create(config, on_change, false);
        driver.state.borrow_mut().waiting = true;
        driver
    }

    /// A waiting informer starts listing (nothing was restored).
    pub fn begin(&self) {
        {
            let mut state = self.state.borrow_mut();
            if !state.waiting || state.stopped {
                return;
            }
            state.waiting = false;
            state.informer.start(now());
        }
        crate::metrics::mark("list-start");
        pump(&self.state);
    }

    /// A waiting informer whose store is being restored watches from the
    /// resourceVersion the stored data will be current at, while the rest
    /// is read (see [`Informer::watch_ahead`]); it stays waiting, and what
    /// the watch brings is applied at [`Driver::resume`].
    pub fn watch_ahead(
        &self,
        resource_version: &str,
        columns: Option<Vec<crate::informer::table::ColumnDefinition>>,
    ) {
        {
            let mut state = self.state.borrow_mut();
            if !state.waiting || state.stopped {
                return;
            }
            state.informer.watch_ahead(resource_version, columns, now());
        }
        pump(&self.state);
    }

    /// A waiting informer whose store was restored: the deltas recorded
    /// after the stored snapshot are applied, then it watches from the
    /// stored resourceVersion — or applies what its watch ahead brought —
    /// warm until it caught up.
    pub fn resume(
        &self,
        restored: crate::informer::persist::Restored,
    ) -> Result<(), crate::informer::RestoreError> {
        {
            let mut state = self.state.borrow_mut();
            if !state.waiting || state.stopped {
                return Ok(());
            }
            for entry in &restored.replay {
                state.informer.restore_delta(entry);
            }
            state.marking_synced(|informer| informer.resume(restored.resume, now()))?;
            state.waiting = false;
        }
        pump(&self.state);
        drain_later(&self.state);
        Ok(())
    }

    /// Not started yet (see [`Driver::waiting`]).
    pub fn is_waiting(&self) -> bool {
        self.state.borrow().waiting
    }

    /// A waiting informer whose restore failed: whatever it put back is
    /// dropped, and it waits again (to [`Driver::begin`]).
    /// A watch ahead of the restore is cancelled.
    pub fn forget_restored(&self) {
        if !self.state.borrow().waiting {
            return;
        }
        cancel_all(&self.state);
        let mut state = self.state.borrow_mut();
        let config = state.informer.config().clone();
        state.informer = Informer::new(config);
        state.informer.set_drain_step(DRAIN_STEP);
    }

    fn start_with(config: InformerConfig, on_change: Rc<dyn Fn()>, quiet: bool) -> Driver {
        let driver = Self::create(config, on_change, quiet);
        driver.state.borrow_mut().informer.start(now());
        pump(&driver.state);
        driver
    }

    fn create(config: InformerConfig, on_change: Rc<dyn Fn()>, quiet: bool) -> Driver {
        let state = Rc::new(RefCell::new(DriverState {
            informer: Informer::new(config),
            in_flight: HashMap::new(),
            timer_generation: 0,
            timer_armed: None,
            on_change,
            stopped: false,
            replay: None,
            shown_at: if quiet {
                f64::NEG_INFINITY
            } else {
                crate::transport::budget::clock()
            },
            quiet,
            draining: false,
            waiting: false,
        }));
        state.borrow_mut().informer.set_drain_step(DRAIN_STEP);
        Driver { state }
    }

    /// The user's Retry: a failed or backing-off informer asks again now.
    pub fn retry(&self) {
        if self.is_stopped() {
            return;
        }
        self.state.borrow_mut().informer.retry(now());
        pump(&self.state);
    }

    /// Streams it holds on the page's channel now (0 or 1).
    pub fn channel_streams(&self) -> usize {
        self.state
            .borrow()
            .in_flight
            .values()
            .filter(|f| matches!(f, InFlight::Channel(_)))
            .count()
    }

    /// Replays a recording offline through the same informer path, `speed` times faster than recorded.
    pub fn replay(
        mut config: InformerConfig,
        events: Vec<crate::api::recording::RecordedEvent>,
        speed: f64,
        on_change: Rc<dyn Fn()>,
    ) -> Driver {
        config.streaming_list = false;
        let driver = Self::create(config, on_change, false);
        driver.state.borrow_mut().replay = Some(replay::ReplaySource {
            script: Rc::new(RefCell::new(crate::api::recording::ReplayScript::new(
                events,
            ))),
            speed,
            started: now(),
        });
        driver.state.borrow_mut().informer.start(now());
        pump(&driver.state);
        driver
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
        cancel_all(&self.state);
    }
}
