//! API discovery for the page, kept current (a CRD added while the page is
//! open must reach the picker without a reload): the resources the
//! picker and the `:` commands offer, and the problem to show while
//! discovery fails. [`ApiDiscovery`], owned by the informers service, runs
//! discovery at load, again with backoff after a failure (the message goes
//! when a run succeeds), every few minutes, and soon after the cluster's
//! CustomResourceDefinitions change — seen by a watch of them through the
//! ordinary informer machinery, on the page's channel. When to run is
//! decided by `crate::app::discovery_schedule`. The views read a
//! [`Discovery`] of plain data (`Informers::discovery`); the service asks
//! for a render whenever it changes.
//!
//! There is one per cluster the page shows (`Informers::discovery_of`):
//! the default one's from load, another's from when it is first shown.
//!
//! The CRD watch starts only once the channel is open (without a channel it
//! would take one of the few connections the resource views need; then the
//! periodic refresh alone keeps the picker current) and stops for good if
//! the cluster does not serve CRDs to this user (a 404).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::api::resources::ApiResource;
use crate::app::discovery_schedule::{DiscoveryRefresh, Outcome};
use crate::informer::{
    ChangeCursor, ChangeRead, HistoryConfig, InformerConfig, Millis, ResourceRef,
};
use crate::transport::channel::{self, ChannelStatus};
use crate::transport::Driver;

/// How often the schedule and the CRD watch are looked at.
const POLL_MS: Millis = 1_000;
const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_PLURAL: &str = "customresourcedefinitions";

/// What discovery knows, for the picker, the `:` commands, the notices and
/// the hidden test hook (`[data-testid=discovery]`).
#[derive(Clone, PartialEq)]
pub struct Discovery {
    pub resources: Rc<Vec<ApiResource>>,
    /// The last run's problem and when it retries, until a run succeeds.
    pub problem: Option<String>,
    /// Discovery runs finished.
    pub runs: u64,
    /// The CRD watch: `off`, `waiting` (asked for, not synced yet) or
    /// `open` (synced, and discovery checked against the CRDs it listed:
    /// from then on every CRD added or removed refreshes discovery).
    pub crd_watch: &'static str,
}

/// Discovery's loop and its CRD watch, for the page's lifetime (see the
/// module doc).
pub struct ApiDiscovery {
    shared: Rc<Shared>,
}

/// What the loop and the service share.
struct Shared {
    alive: Cell<bool>,
    resources: RefCell<Rc<Vec<ApiResource>>>,
    problem: RefCell<Option<String>>,
    runs: Cell<u64>,
    watch: RefCell<Option<Driver>>,
    /// Where the cluster's API is under serve (`Route::api_root`).
    api_root: String,
    /// The CRD watch has synced and discovery was checked against it.
    crd_baseline: Cell<bool>,
    /// Asks for a frame: called when what the views read changed.
    on_change: Rc<dyn Fn()>,
}

impl ApiDiscovery {
    /// Starts the loop of the cluster at `api_root` in a task of its own,
    /// after this one.
    pub fn start(api_root: String, on_change: Rc<dyn Fn()>) -> ApiDiscovery {
        let shared = Rc::new(Shared {
            alive: Cell::new(true),
            resources: RefCell::new(Rc::new(Vec::new())),
            problem: RefCell::new(None),
            runs: Cell::new(0),
            watch: RefCell::new(None),
            api_root,
            crd_baseline: Cell::new(false),
            on_change,
        });
        super::spawn_after_this_task(run(shared.clone()));
        ApiDiscovery { shared }
    }

    /// What discovery knows now.
    pub fn snapshot(&self) -> Discovery {
        Discovery {
            resources: self.shared.resources.borrow().clone(),
            problem: self.shared.problem.borrow().clone(),
            runs: self.shared.runs.get(),
            crd_watch: self.crd_watch(),
        }
    }

    /// Streams the CRD watch holds on the channel now (the status line
    /// counts the watches of the resource views).
    pub fn background_streams(&self) -> usize {
        self.shared
            .watch
            .borrow()
            .as_ref()
            .map_or(0, Driver::channel_streams)
    }

    fn crd_watch(&self) -> &'static str {
        match self.shared.watch.borrow().as_ref() {
            None => "off",
            Some(driver)
                if self.shared.crd_baseline.get()
                    && driver.with_informer(|informer| informer.is_watch_open()) =>
            {
                "open"
            }
            Some(_) => "waiting",
        }
    }

    /// The page goes away: the loop ends and the CRD watch stops.
    pub fn stop(&self) {
        self.shared.alive.set(false);
        if let Some(driver) = self.shared.watch.borrow_mut().take() {
            driver.stop();
        }
    }
}

/// What the loop remembers between polls.
#[derive(Default)]
struct Seen {
    /// The CRD watch has synced and its digest was given to the schedule.
    crds_baseline: bool,
    /// The cluster does not serve CRDs to this page: no watch.
    no_crd_watch: bool,
    /// Where the CRD watch's change log has been read up to.
    crd_changes: ChangeCursor,
}

async fn run(shared: Rc<Shared>) {
    let seed = (js_sys::Math::random() * 9.0e15) as u64;
    let mut schedule = DiscoveryRefresh::new(seed);
    let mut seen = Seen::default();
    while shared.alive.get() {
        if schedule.due(crate::transport::now()) {
            schedule.started();
            let outcome = match crate::transport::discovery::discover(&shared.api_root).await {
                Ok((found, warnings)) => {
                    if **shared.resources.borrow() != found {
                        *shared.resources.borrow_mut() = Rc::new(found);
                    }
                    if warnings.is_empty() {
                        Outcome::Complete
                    } else {
                        Outcome::Partial(format!("API discovery skipped: {}", warnings.join("; ")))
                    }
                }
                Err(error) => Outcome::Failed {
                    message: format!("API discovery failed: {error}"),
                    retry_after: error.retry_after_ms(),
                },
            };
            schedule.finished(&outcome, crate::transport::now());
            shared.runs.set(schedule.runs());
            if shared.alive.get() {
                (shared.on_change)();
            }
        }
        if !shared.alive.get() {
            return;
        }
        let words = problem_words(&schedule, crate::transport::now());
        if words != *shared.problem.borrow() {
            *shared.problem.borrow_mut() = words;
            (shared.on_change)();
        }
        tend_crd_watch(&shared, &mut schedule, &mut seen);
        crate::transport::timer::sleep_ms(POLL_MS).await;
    }
}

/// Starts the CRD watch when it can run, stops it when it cannot, and
/// gives the schedule the CRDs' digest when they changed.
fn tend_crd_watch(shared: &Shared, schedule: &mut DiscoveryRefresh, seen: &mut Seen) {
    let status = channel::status();
    let resources = shared.resources.borrow().clone();
    let mut slot = shared.watch.borrow_mut();
    let Some(driver) = slot.as_ref() else {
        let serves_crds = resources
            .iter()
            .any(|r| r.group == CRD_GROUP && r.plural == CRD_PLURAL);
        if serves_crds && !seen.no_crd_watch && status == ChannelStatus::Open {
            *slot = Some(start_crd_watch(&shared.api_root));
        }
        return;
    };
    let halted = driver.with_informer(|informer| informer.is_halted());
    if halted || matches!(status, ChannelStatus::Unavailable { .. }) {
        driver.stop();
        *slot = None;
        seen.no_crd_watch = true;
        shared.crd_baseline.set(false);
        return;
    }
    let digest = driver.with_informer(|informer| {
        let changed = match informer.read_changes(&mut seen.crd_changes) {
            ChangeRead::Changes(mut changes) => changes.next().is_some(),
            ChangeRead::Lagged => true,
        };
        let first = !seen.crds_baseline;
        (informer.has_synced() && (changed || first)).then(|| informer.store().digest())
    });
    let Some(digest) = digest else {
        return;
    };
    let now = crate::transport::now();
    if !seen.crds_baseline {
        // A CRD created between discovery's run and the watch's list is
        // in neither the baseline's change log nor discovery: compare.
        let missing = driver.with_informer(|informer| {
            informer
                .store()
                .list()
                .any(|crd| !discovered(&resources, crd.value.root()))
        });
        if missing {
            schedule.run_soon(now);
        }
        seen.crds_baseline = true;
        shared.crd_baseline.set(true);
    }
    schedule.crds_seen(&digest, now);
}

/// Whether discovery lists the resource the CRD `crd` defines.
fn discovered(resources: &[ApiResource], crd: crate::informer::JsonRef<'_>) -> bool {
    let text = |pointer: &str| crd.pointer(pointer).and_then(|v| v.as_str()).unwrap_or("");
    let (group, plural) = (text("/spec/group"), text("/spec/names/plural"));
    resources
        .iter()
        .any(|r| r.group == group && r.plural == plural)
}

/// The problem to show, with when discovery tries again.
fn problem_words(schedule: &DiscoveryRefresh, now: Millis) -> Option<String> {
    let problem = schedule.problem()?;
    Some(match schedule.next_at() {
        Some(at) => {
            let seconds = (at.saturating_sub(now) as f64 / 1000.0).ceil();
            format!(
                "{problem} — retrying in {} s",
                crate::model::decimal::fixed(seconds, 0)
            )
        }
        None => format!("{problem} — retrying now"),
    })
}

/// A watch of the cluster's CRDs: only their keys and resourceVersions
/// matter, so it keeps almost no history.
fn start_crd_watch(api_root: &str) -> Driver {
    let resource = ResourceRef::new(CRD_GROUP, "v1", CRD_PLURAL, false);
    let mut config = InformerConfig::new(resource);
    config.api_root = api_root.to_string();
    config.history = HistoryConfig {
        max_deltas: 1,
        max_bytes: 64 * 1024,
    };
    config.seed = (js_sys::Math::random() * 9.0e15) as u64;
    Driver::start_background(config, Rc::new(|| {}))
}
