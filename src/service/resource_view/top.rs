//! `kubectl top`'s numbers for the pods, nodes or workloads table on
//! screen: while its `LiveView` lives, one task asks the metrics API for
//! the whole resource's list (`crate::api::resource_metrics`: every pod, or
//! the view's namespace's, or every node — never an object at a time; a
//! workloads table the pods with their labels, each row summing those it
//! selects: `crate::model::top_workloads`) once per
//! window, as `crate::app::metrics_poll` schedules it, through the
//! page's channel (`crate::transport::channel::get_streamed`: a stream
//! beside the watches, or a fetch of its own without a channel), read as
//! it arrives ([`read_metrics`]: 100,000 pods' 40 MB never in one task). The
//! view reads the last window as columns (`crate::model::table::top_columns`)
//! and rebuilds its columns when a new one arrives; dropping the view
//! (another route) ends the task.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::address::route::Route;
use crate::api::resource_metrics::Keep;
use crate::app::metrics_poll::{AnswerReader, MetricsPoll, ReadAnswer};
use crate::model::table::{top_columns, Column};
use crate::model::top::{MetricsNote, TopTable};

/// The metrics of one pods or nodes view, asked for while it lives.
pub(super) struct TopPoll {
    table: TopTable,
    poll: Rc<RefCell<MetricsPoll>>,
    /// Cleared when the view goes: the task sends nothing more.
    alive: Rc<Cell<bool>>,
    /// Set while the view's own list is synced: before (or after a list
    /// that failed) nothing is asked — the metrics of a table that is not
    /// there yet are not worth a request, and a bad selector would fail
    /// again every window.
    ready: Rc<Cell<bool>>,
    /// The poll's generation the view's columns were built from.
    built: u64,
}

impl TopPoll {
    /// Starts asking when `route` names pods or nodes; `on_change` asks for
    /// a frame after each answer.
    pub(super) fn start(route: &Route, on_change: Rc<dyn Fn()>) -> Option<TopPoll> {
        let table = TopTable::of_route(&route.group, &route.version, &route.resource)?;
        let (path, keep) = match table {
            // the table's label selector picks workloads, not their pods
            TopTable::Workloads(_) => (
                table.measured().list_path(route.namespace.as_deref(), None),
                Keep {
                    containers: false,
                    labels: true,
                },
            ),
            _ => (
                table
                    .measured()
                    .list_path(route.namespace.as_deref(), route.label_selector.as_deref()),
                Keep::default(),
            ),
        };
        let path = format!("{}{path}", route.api_root());
        let poll = Rc::new(RefCell::new(
            MetricsPoll::new(table.measured()).keeping(keep),
        ));
        let alive = Rc::new(Cell::new(true));
        let ready = Rc::new(Cell::new(false));
        let task = Task {
            path,
            poll: poll.clone(),
            alive: alive.clone(),
            ready: ready.clone(),
        };
        wasm_bindgen_futures::spawn_local(task.run(on_change));
        Some(TopPoll {
            table,
            poll,
            alive,
            ready,
            built: 0,
        })
    }

    /// Whether the view's list is synced now (see `ready`).
    pub(super) fn set_ready(&self, synced: bool) {
        self.ready.set(synced);
    }

    /// True once after each change of what the columns show.
    pub(super) fn take_change(&mut self) -> bool {
        let generation = self.poll.borrow().generation();
        std::mem::replace(&mut self.built, generation) != generation
    }

    /// The usage columns of the last window (none without one); `wide`
    /// adds a pod's usage of its requests and limits.
    pub(super) fn columns(&self, wide: bool) -> Vec<Column> {
        let poll = self.poll.borrow();
        poll.state()
            .window()
            .map(|window| top_columns(self.table, window, wide))
            .unwrap_or_default()
    }

    /// What the page says of the metrics API.
    pub(super) fn note(&self) -> MetricsNote {
        self.poll.borrow().note()
    }
}

impl Drop for TopPoll {
    fn drop(&mut self) {
        self.alive.set(false);
    }
}

/// The asking task's side of a [`TopPoll`].
struct Task {
    path: String,
    poll: Rc<RefCell<MetricsPoll>>,
    alive: Rc<Cell<bool>>,
    ready: Rc<Cell<bool>>,
}

/// How often a task whose view is not synced looks again.
const NOT_READY_MS: crate::informer::Millis = 500;

impl Task {
    /// Asks for `path` whenever the poll says and the view is synced,
    /// until the view goes.
    async fn run(self, on_change: Rc<dyn Fn()>) {
        while self.alive.get() {
            let wait = if self.ready.get() {
                self.poll.borrow().wait_ms(crate::transport::now())
            } else {
                NOT_READY_MS
            };
            if wait > 0 {
                crate::transport::timer::sleep_ms(wait).await;
                continue;
            }
            let reader = self.poll.borrow().reader();
            let answer = read_metrics(&self.path, reader, || {
                crate::metrics::mark("metrics-window-start");
            })
            .await;
            if !self.alive.get() {
                break;
            }
            self.poll
                .borrow_mut()
                .answered_read(answer, crate::transport::now());
            crate::metrics::measure("metrics-window", "metrics-window-start");
            on_change();
        }
    }
}

/// Asks the metrics API for `path` and reads its answer into `reader` as
/// it arrives, a frame at a time; `on_start` runs when the response
/// starts. `None` when no answer came.
pub(in crate::service) async fn read_metrics(
    path: &str,
    reader: AnswerReader,
    on_start: impl Fn() + 'static,
) -> Option<ReadAnswer> {
    let reader = Rc::new(RefCell::new(Some(reader)));
    let (starts, chunks) = (reader.clone(), reader.clone());
    let got = crate::transport::channel::get_streamed(
        path,
        move |status| {
            on_start();
            if let Some(reader) = starts.borrow_mut().as_mut() {
                reader.started(status);
            }
        },
        move |bytes| {
            if let Some(reader) = chunks.borrow_mut().as_mut() {
                reader.chunk(bytes);
            }
        },
    )
    .await;
    let reader = reader.borrow_mut().take()?;
    got.ok()?;
    reader.finish()
}
