//! API discovery for the page, kept current (a CRD added while the page is
//! open must reach the picker without a reload): the resources the
//! picker and the `:` commands offer, and the problem to show while
//! discovery fails. [`use_discovery`] runs discovery at load, again with
//! backoff after a failure (the message goes when a run succeeds), every few
//! minutes, and soon after the cluster's CustomResourceDefinitions change —
//! seen by a watch of them through the ordinary informer machinery, on the
//! page's channel. When to run is decided by `crate::app::discovery_schedule`.
//!
//! The CRD watch starts only once the channel is open (without a channel it
//! would take one of the few connections the resource views need; then the
//! periodic refresh alone keeps the picker current) and stops for good if
//! the cluster does not serve CRDs to this user (a 404).
//!
//! Hook for tests: `[data-testid=discovery]` (hidden) with `data-runs`
//! (discovery runs finished), `data-resources` (resources found) and
//! `data-crd-watch` (`off`, `waiting`, `open`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use yew::prelude::*;

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

/// What discovery knows, for the picker, the `:` commands and the notices.
#[derive(Clone)]
pub struct Discovery {
    pub resources: Rc<Vec<ApiResource>>,
    /// The last run's problem and when it retries, until a run succeeds.
    pub problem: Option<String>,
    /// Discovery runs finished.
    pub runs: u64,
    watch: Rc<RefCell<Option<Driver>>>,
    /// The CRD watch has synced and discovery was checked against it.
    crd_baseline: Rc<Cell<bool>>,
}

impl Discovery {
    /// Streams the CRD watch holds on the channel now (the status line
    /// counts the watches of the resource views).
    pub fn background_streams(&self) -> usize {
        self.watch
            .borrow()
            .as_ref()
            .map_or(0, Driver::channel_streams)
    }

    /// The CRD watch: `off`, `waiting` (asked for, not synced yet) or
    /// `open` (synced, and discovery checked against the CRDs it listed:
    /// from then on every CRD added or removed refreshes discovery).
    pub fn crd_watch(&self) -> &'static str {
        match self.watch.borrow().as_ref() {
            None => "off",
            Some(driver)
                if self.crd_baseline.get()
                    && driver.with_informer(|informer| informer.is_watch_open()) =>
            {
                "open"
            }
            Some(_) => "waiting",
        }
    }

    /// The hidden test hook (see the module doc).
    pub fn hook(&self) -> Html {
        html! {
            <span data-testid="discovery" hidden=true data-runs={self.runs.to_string()}
                data-resources={self.resources.len().to_string()} data-crd-watch={self.crd_watch()}></span>
        }
    }
}

/// Runs discovery for the page's lifetime (see the module doc).
#[hook]
pub fn use_discovery() -> Discovery {
    let resources = use_state(|| Rc::new(Vec::<ApiResource>::new()));
    let problem = use_state(|| None::<String>);
    let runs = use_state(|| 0_u64);
    let watch: Rc<RefCell<Option<Driver>>> = use_mut_ref(|| None);
    let crd_baseline = (*use_memo((), |_| Rc::new(Cell::new(false)))).clone();
    {
        let (resources, problem, runs, watch, crd_baseline) = (
            resources.clone(),
            problem.clone(),
            runs.clone(),
            watch.clone(),
            crd_baseline.clone(),
        );
        use_effect_with((), move |_| {
            let alive = Rc::new(Cell::new(true));
            let loop_state = Keeper {
                alive: alive.clone(),
                resources,
                problem,
                runs,
                watch: watch.clone(),
                crd_baseline,
            };
            super::spawn_after_this_task(loop_state.run());
            move || {
                alive.set(false);
                if let Some(driver) = watch.borrow_mut().take() {
                    driver.stop();
                }
            }
        });
    }
    Discovery {
        resources: (*resources).clone(),
        problem: (*problem).clone(),
        runs: *runs,
        watch,
        crd_baseline,
    }
}

/// The discovery loop's handles.
struct Keeper {
    alive: Rc<Cell<bool>>,
    resources: UseStateHandle<Rc<Vec<ApiResource>>>,
    problem: UseStateHandle<Option<String>>,
    runs: UseStateHandle<u64>,
    watch: Rc<RefCell<Option<Driver>>>,
    crd_baseline: Rc<Cell<bool>>,
}

/// What the loop remembers between polls.
#[derive(Default)]
struct Seen {
    /// The resources last shown (a state handle held across awaits reads
    /// the value of the render it came from, so compare with this).
    resources: Rc<Vec<ApiResource>>,
    problem: Option<String>,
    /// The CRD watch has synced and its digest was given to the schedule.
    crds_baseline: bool,
    /// The cluster does not serve CRDs to this page: no watch.
    no_crd_watch: bool,
    /// Where the CRD watch's change log has been read up to.
    crd_changes: ChangeCursor,
}

impl Keeper {
    async fn run(self) {
        let seed = (js_sys::Math::random() * 9.0e15) as u64;
        let mut schedule = DiscoveryRefresh::new(seed);
        let mut seen = Seen::default();
        while self.alive.get() {
            if schedule.due(crate::transport::now()) {
                schedule.started();
                let outcome = match crate::transport::discovery::discover().await {
                    Ok((found, warnings)) => {
                        if *seen.resources != found {
                            seen.resources = Rc::new(found);
                            if self.alive.get() {
                                self.resources.set(seen.resources.clone());
                            }
                        }
                        if warnings.is_empty() {
                            Outcome::Complete
                        } else {
                            Outcome::Partial(format!(
                                "API discovery skipped: {}",
                                warnings.join("; ")
                            ))
                        }
                    }
                    Err(error) => Outcome::Failed {
                        message: format!("API discovery failed: {error}"),
                        retry_after: error.retry_after_ms(),
                    },
                };
                schedule.finished(&outcome, crate::transport::now());
                if self.alive.get() {
                    self.runs.set(schedule.runs());
                }
            }
            if !self.alive.get() {
                return;
            }
            let words = problem_words(&schedule, crate::transport::now());
            if words != seen.problem {
                seen.problem = words.clone();
                self.problem.set(words);
            }
            self.tend_crd_watch(&mut schedule, &mut seen);
            crate::transport::timer::sleep_ms(POLL_MS).await;
        }
    }

    /// Starts the CRD watch when it can run, stops it when it cannot, and
    /// gives the schedule the CRDs' digest when they changed.
    fn tend_crd_watch(&self, schedule: &mut DiscoveryRefresh, seen: &mut Seen) {
        let status = channel::status();
        let mut slot = self.watch.borrow_mut();
        let Some(driver) = slot.as_ref() else {
            let serves_crds = seen
                .resources
                .iter()
                .any(|r| r.group == CRD_GROUP && r.plural == CRD_PLURAL);
            if serves_crds && !seen.no_crd_watch && status == ChannelStatus::Open {
                *slot = Some(start_crd_watch());
            }
            return;
        };
        let halted = driver.with_informer(|informer| informer.is_halted());
        if halted || matches!(status, ChannelStatus::Unavailable { .. }) {
            driver.stop();
            *slot = None;
            seen.no_crd_watch = true;
            self.crd_baseline.set(false);
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
                    .any(|crd| !discovered(&seen.resources, crd.value.root()))
            });
            if missing {
                schedule.run_soon(now);
            }
            seen.crds_baseline = true;
            self.crd_baseline.set(true);
        }
        schedule.crds_seen(&digest, now);
    }
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
            format!("{problem} — retrying in {seconds:.0} s")
        }
        None => format!("{problem} — retrying now"),
    })
}

/// A watch of the cluster's CRDs: only their keys and resourceVersions
/// matter, so it keeps almost no history.
fn start_crd_watch() -> Driver {
    let resource = ResourceRef::new(CRD_GROUP, "v1", CRD_PLURAL, false);
    let mut config = InformerConfig::new(resource);
    config.history = HistoryConfig {
        max_deltas: 1,
        max_bytes: 64 * 1024,
    };
    config.seed = (js_sys::Math::random() * 9.0e15) as u64;
    Driver::start_background(config, Rc::new(|| {}))
}
