//! An open object's usage over time (the object view's Usage tab): while
//! a pod, node or workload is shown, one task asks the metrics API for the
//! list that holds it — its namespace's pods (a workload's through its
//! selector), or every node; never an object at a time — once per window,
//! as `crate::app::metrics_poll` schedules it, and adds the object's
//! sample to its series (`crate::model::usage_series`). The samples
//! serve's recorder kept are asked for as the chart's range reaches back
//! (`crate::app::usage_reach` decides). The series is kept in the
//! browser's database (`crate::transport::stored_usage`): read back when
//! the object is shown again (after a reload too), written after each new
//! window by the tab that writes. The task stops when a frame no longer
//! shows the object (the view closed, another object opened).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::api::resource_metrics::Keep;
use crate::app::metrics_poll::{window_of, MetricsPoll, ReadAnswer};
use crate::app::usage_reach::UsageReach;
use crate::informer::Millis;
use crate::model::object_details::ObjectDetails;
use crate::model::serve_history::ServeHistory;
use crate::model::usage_chart::{all_levels, history_marks, warnings_of, UsagePanel};
use crate::model::usage_series::{UsageSeries, UsageSubject};
use crate::model::usage_stored::{decode, encode, stored_key};

use super::persistence::UsageStore;

/// Whether the series stored in the browser's database was read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    /// Not yet: the database is not open (or storing is off).
    NotRead,
    Reading,
    /// Read (or there was none): from now on the series may be written.
    Read,
}

/// What one shown object's task and the frames share.
struct Shared {
    poll: MetricsPoll,
    series: Rc<UsageSeries>,
    reach: UsageReach,
    /// The poll's generation whose window was added to the series.
    added: u64,
    /// The browser's database, as the last frame knew it.
    store: Option<UsageStore>,
    stored: Stored,
}

/// The object whose usage is followed.
struct Tracked {
    subject: UsageSubject,
    /// Where its cluster's API is under serve (`Route::api_root`).
    api_root: String,
    shared: Rc<RefCell<Shared>>,
    /// Cleared when the task ends (or is to end).
    alive: Rc<Cell<bool>>,
    /// Set by each frame that shows the object, cleared by the task after
    /// each answer: still clear at the next request, the view is gone.
    shown: Rc<Cell<bool>>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.alive.set(false);
    }
}

/// The marks of the last versions and events read, kept while they are
/// the same: the versions' count and newest, the events' list (`Rc`
/// identity: the story's cache keeps it between refreshes).
type MarksKey = (usize, String, usize);
type MarksCache = Option<(MarksKey, Rc<Vec<crate::model::usage_chart::UsageMark>>)>;

#[derive(Default)]
pub(super) struct ObjectUsage {
    tracked: Option<Tracked>,
    marks: MarksCache,
}

impl ObjectUsage {
    /// Fills `details.usage` for the object shown (`group`/`resource`),
    /// its chart showing `range`; starts or keeps the object's task.
    pub(super) fn fill(
        &mut self,
        details: &mut ObjectDetails,
        (group, resource, api_root): (&str, &str, &str),
        object: Option<&crate::informer::ObjectRef>,
        (range, store): ((Millis, Millis), Option<UsageStore>),
        serve: Option<&ServeHistory>,
        on_change: &Rc<dyn Fn()>,
    ) {
        let subject = object.and_then(|o| UsageSubject::of(group, resource, o.value.root()));
        let Some(subject) = subject else {
            self.tracked = None;
            return;
        };
        let running = self
            .tracked
            .as_ref()
            .is_some_and(|t| t.subject == subject && t.api_root == api_root && t.alive.get());
        if !running {
            self.tracked = Some(start(subject.clone(), api_root, on_change.clone()));
        }
        let workload = matches!(subject, UsageSubject::Workload { .. });
        let node = matches!(subject, UsageSubject::Node { .. });
        let marks = self.marks(details, workload);
        let Some(tracked) = &self.tracked else {
            return;
        };
        tracked.shown.set(true);
        read_stored(tracked, store, on_change);
        let now = crate::transport::now();
        ask_record(tracked, range, serve, now, on_change);
        let shared = tracked.shared.borrow();
        details.usage = Some(Rc::new(UsagePanel {
            subject,
            series: shared.series.clone(),
            note: shared.poll.note(),
            recorded: shared.reach.words(),
            gaps: Rc::new(shared.reach.gaps().to_vec()),
            marks,
            levels: Rc::new(object.map_or_else(Vec::new, |o| all_levels(o.value.root(), node))),
        }));
    }

    /// The object's history as marks, read again only when its versions or
    /// events changed.
    fn marks(
        &mut self,
        details: &ObjectDetails,
        workload: bool,
    ) -> Rc<Vec<crate::model::usage_chart::UsageMark>> {
        let newest = details.versions.last().map(|v| v.resource_version.clone());
        let key = (
            details.versions.len(),
            newest.unwrap_or_default(),
            Rc::as_ptr(&details.events) as usize,
        );
        if let Some((cached, marks)) = &self.marks {
            if *cached == key {
                return marks.clone();
            }
        }
        let objects: Vec<(Millis, crate::informer::JsonRef<'_>)> = details
            .versions
            .iter()
            .map(|v| (v.at_ms.max(0) as Millis, v.object.0.value.root()))
            .collect();
        let marks = Rc::new(history_marks(
            &objects,
            &warnings_of(&details.events),
            workload,
        ));
        self.marks = Some((key, marks.clone()));
        marks
    }
}

/// Starts the task that measures `subject` once per window.
fn start(subject: UsageSubject, api_root: &str, on_change: Rc<dyn Fn()>) -> Tracked {
    let shared = Rc::new(RefCell::new(Shared {
        poll: MetricsPoll::new(subject.measured()).keeping(Keep {
            containers: true,
            labels: false,
        }),
        series: Rc::new(UsageSeries::default()),
        reach: UsageReach::default(),
        added: 0,
        store: None,
        stored: Stored::NotRead,
    }));
    let tracked = Tracked {
        subject: subject.clone(),
        api_root: api_root.to_string(),
        shared: shared.clone(),
        alive: Rc::new(Cell::new(true)),
        shown: Rc::new(Cell::new(true)),
    };
    let (alive, shown) = (tracked.alive.clone(), tracked.shown.clone());
    let tracked_root = tracked.api_root.clone();
    wasm_bindgen_futures::spawn_local(async move {
        let path = format!("{}{}", tracked_root, subject.list_path());
        while alive.get() {
            let wait = shared.borrow().poll.wait_ms(crate::transport::now());
            if wait > 0 {
                crate::transport::timer::sleep_ms(wait).await;
                continue;
            }
            if !shown.replace(false) {
                break; // no frame showed the object since the last answer
            }
            let reader = shared.borrow().poll.reader();
            let answer = super::resource_view::read_metrics(&path, reader, || {}).await;
            if !alive.get() {
                break;
            }
            measured(&mut shared.borrow_mut(), &subject, answer);
            on_change();
        }
        alive.set(false);
    });
    tracked
}

/// A metrics answer: the poll's state, and the object's sample of a new
/// window added to its series.
fn measured(shared: &mut Shared, subject: &UsageSubject, answer: Option<ReadAnswer>) {
    shared.poll.answered_read(answer, crate::transport::now());
    let generation = shared.poll.generation();
    if shared.added == generation {
        return;
    }
    shared.added = generation;
    let Some(list) = shared.poll.state().window().cloned() else {
        return;
    };
    let (at, window) = window_of(&list);
    let sample = at.and_then(|at| subject.sample_in(&list, at, window));
    if let Some(sample) = sample {
        Rc::make_mut(&mut shared.series).add(sample);
        write_stored(shared, subject);
    }
}

/// Reads the object's stored series once the database is open; the
/// samples join those measured meanwhile.
fn read_stored(tracked: &Tracked, store: Option<UsageStore>, on_change: &Rc<dyn Fn()>) {
    let mut shared = tracked.shared.borrow_mut();
    shared.store = store;
    let Some(store) = shared.store.clone() else {
        return;
    };
    if shared.stored != Stored::NotRead {
        return;
    }
    shared.stored = Stored::Reading;
    let (shared, key, on_change) = (
        tracked.shared.clone(),
        stored_key(&tracked.subject),
        on_change.clone(),
    );
    wasm_bindgen_futures::spawn_local(async move {
        let read = store.db.stored_usage(&key).await;
        let mut shared = shared.borrow_mut();
        shared.stored = Stored::Read;
        // a damaged or foreign record is dropped (overwritten at the next
        // window), never a crash
        let decoded = read.map_err(|e| e.to_string()).and_then(|bytes| {
            bytes
                .map(|bytes| decode(&bytes).map_err(|e| e.to_string()))
                .transpose()
        });
        let samples = match decoded {
            Ok(Some(samples)) => samples,
            Ok(None) => return,
            Err(error) => return warn(&format!("the stored usage of {key}: {error}")),
        };
        let series = Rc::make_mut(&mut shared.series);
        for sample in samples {
            series.add(sample);
        }
        drop(shared);
        on_change();
    });
}

/// Writes the series (the writer tab, once the stored one was read).
fn write_stored(shared: &Shared, subject: &UsageSubject) {
    let Some(store) = shared.store.clone().filter(|s| s.writes) else {
        return;
    };
    if shared.stored != Stored::Read {
        return;
    }
    let bytes = encode(shared.series.samples());
    let key = stored_key(subject);
    wasm_bindgen_futures::spawn_local(async move {
        let now = crate::transport::now();
        if let Err(error) = store.db.store_usage(&key, &bytes, now).await {
            warn(&format!("storing the usage of {key}: {error}"));
        }
    });
}

fn warn(text: &str) {
    web_sys::console::warn_1(&text.into());
}

/// Asks serve for the recorded samples the chart's range reaches, if due.
fn ask_record(
    tracked: &Tracked,
    range: (Millis, Millis),
    serve: Option<&ServeHistory>,
    now: Millis,
    on_change: &Rc<dyn Fn()>,
) {
    let want = tracked
        .shared
        .borrow_mut()
        .reach
        .want(&tracked.subject, range, serve, now);
    let Some((path, span)) = want else {
        return;
    };
    let (shared, subject, on_change) = (
        tracked.shared.clone(),
        tracked.subject.clone(),
        on_change.clone(),
    );
    wasm_bindgen_futures::spawn_local(async move {
        let answer = crate::transport::serve_history::get(&path).await;
        let answer = answer.as_ref().ok().map(|a| (a.status, a.body.as_slice()));
        let mut shared = shared.borrow_mut();
        if let Some(usage) = shared.reach.answered(&subject, span, answer) {
            Rc::make_mut(&mut shared.series).add_recorded(usage.samples);
        }
        drop(shared);
        on_change();
    });
}
