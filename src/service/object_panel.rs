//! What the object view needs beyond the object's own informer: an events
//! informer (the user's kept one when there is one, else the page's own,
//! started the first time an object is opened and kept until the page
//! closes, so events the cluster deletes an hour later stay readable), and
//! the object's events, related objects and story read across every kept
//! informer (`crate::model::object_story`). Those scan the histories, so
//! they are rebuilt at most every [`STORY_REFRESH_MS`] while the view is
//! open, or at once for another object (or when serve's record of it
//! arrives). When serve keeps a history, the object's recorded past is
//! asked for once per object opened (`crate::app::object_reach` decides,
//! `crate::transport::serve_history::get` asks) and joined to the page's
//! own versions (`crate::model::object_versions`); for a workload, the
//! records of what it owns too (`crate::app::family_reach`), which the
//! story follows down the owner references. So that Related and the story
//! name the object's relatives from the current objects without the user
//! keeping their resources, the panel reads those resources itself while
//! the object is shown (`crate::app::related_reads` says which: its
//! namespace's, or a node's pods), informers of its own like the events'.

use std::cell::{Ref, RefCell};
use std::rc::Rc;

use super::kept_informers::{informer_config, KeptInformers};
use super::object_usage::ObjectUsage;
use super::persistence::UsageStore;
use crate::address::route::Route;
use crate::app::family_reach::{FamilyReach, FAMILY_MAX_BYTES};
use crate::app::object_reach::{ObjectReach, ReachTarget};
use crate::app::related_reads::related_reads;
use crate::informer::{Informer, Millis};
use crate::model::object_details::{object_details, ObjectDetails, VersionCache};
use crate::model::object_related::related;
use crate::model::object_story::{events_about, story_with, StorySource, Subject};
use crate::model::object_versions::Reach;
use crate::model::serve_history::ServeHistory;
use crate::model::story_who::StoryWho;
use crate::transport::Driver;

/// How stale the events, related objects and story may be while shown.
pub const STORY_REFRESH_MS: Millis = 1_000;

/// When a story is built: the clocks, and serve's answers so far.
#[derive(Clone, Copy)]
struct Moment {
    now_ms: Millis,
    now_unix: i64,
    answered: u64,
}

/// How long one frame may spend reading versions' changes.
const VERSIONS_MS_PER_FRAME: f64 = 8.0;

/// The extras of one object, as last built.
struct Built {
    source: u64,
    key: String,
    at: Millis,
    /// serve's answers applied when it was built.
    answered: u64,
    events_kept: bool,
    events_synced: bool,
    events: Rc<Vec<crate::model::object_story::EventRow>>,
    related: Rc<Vec<crate::model::object_related::RelatedLink>>,
    story: Rc<Vec<crate::model::object_story::StoryRow>>,
    /// Some of its rows' attributions are still to be read: built again
    /// next frame.
    story_unread: bool,
}

#[derive(Default)]
pub struct ObjectPanel {
    /// The page's own events informer (when no kept resource is events).
    events: Option<(Route, Driver)>,
    built: Option<Built>,
    versions: VersionCache,
    /// serve's record of the object shown (filled by a request of its own).
    reach: Rc<RefCell<ObjectReach>>,
    /// serve's records of what it owns (a request per owned resource).
    family: Rc<RefCell<FamilyReach>>,
    /// Its CPU and memory over time.
    usage: ObjectUsage,
    /// What is read for the shown object's relatives.
    reads: Option<RelatedReads>,
    /// The story's attributions, kept across its rebuilds.
    story_who: RefCell<StoryWho>,
}

/// The informers read for one shown object's relatives.
struct RelatedReads {
    /// The object: (kept id, key).
    of: (u64, String),
    informers: Vec<(Route, Driver)>,
}

/// What the page knows of serve's record, as the models read it.
fn reach_of<'a>(
    state: &'a ObjectReach,
    family: &'a FamilyReach,
    serve: Option<&ServeHistory>,
) -> Reach<'a> {
    Reach {
        phase: state.phase().cloned(),
        record: state.record(),
        recorder: state.recorder_watched(serve),
        clock: super::wall_clock(),
        family: family.records(serve),
    }
}

/// `key` as `driver`'s informer holds it: in its store, else its last
/// version in the history (a deleted object).
fn held_object(driver: &Driver, key: &str) -> Option<crate::informer::ObjectRef> {
    let informer = driver.informer();
    informer.store().get_by_key(key).cloned().or_else(|| {
        informer
            .history()
            .versions(key)
            .last()
            .map(|e| e.object.clone())
    })
}

fn is_events(route: &Route) -> bool {
    route.resource == "events"
        && matches!(route.group.as_str(), "" | "events.k8s.io")
        && route.namespace.is_none()
        && route.label_selector.is_none()
        && route.field_selector.is_none()
}

impl ObjectPanel {
    /// Starts the page's own events informer of the object's cluster
    /// unless a kept one covers every namespace there (one of another
    /// cluster stops).
    fn ensure_events(
        &mut self,
        cluster: Option<&String>,
        kept: &KeptInformers,
        on_change: &Rc<dyn Fn()>,
        seed: u64,
    ) {
        let in_cluster = |route: &Route| route.cluster.as_ref() == cluster;
        if let Some((route, driver)) = self.events.take() {
            match in_cluster(&route) {
                true => self.events = Some((route, driver)),
                false => driver.stop(),
            }
        }
        let kept_events = kept
            .by_age()
            .iter()
            .any(|(_, s)| is_events(&s.route) && in_cluster(&s.route));
        if kept_events || self.events.is_some() {
            return;
        }
        let route = Route::new("", "v1", "events").in_cluster(cluster.cloned());
        let mut config = informer_config(&route, seed, Some(true)).server_table(false);
        config.history = kept.retention().clone();
        // Not a background start: those wait 5 s before they watch, and the
        // first object opened would say it has no events meanwhile.
        let driver = Driver::start(config, on_change.clone());
        driver.with_informer(|informer| informer.set_change_log_capacity(0));
        self.events = Some((route, driver));
    }

    /// Reads the resources the relatives of `key` (of kept informer
    /// `source`, at `route`) live in, unless kept ones cover them; what an
    /// object shown before read and this one does not want stops.
    fn ensure_related(
        &mut self,
        (source, route, key): (u64, &Route, &str),
        kept: &KeptInformers,
        on_change: &Rc<dyn Fn()>,
        seed: u64,
    ) {
        if self
            .reads
            .as_ref()
            .is_some_and(|reads| reads.of.0 == source && reads.of.1 == key)
        {
            return;
        }
        let kept_routes: Vec<Route> = kept.iter().map(|(_, s)| s.route.clone()).collect();
        let wanted = related_reads(route, key, &kept_routes);
        let mut before = self
            .reads
            .take()
            .map(|reads| reads.informers)
            .unwrap_or_default();
        let mut reads = Vec::with_capacity(wanted.len());
        for route in wanted {
            if let Some(at) = before.iter().position(|(r, _)| *r == route) {
                reads.push(before.swap_remove(at));
                continue;
            }
            let namespaced = route.namespace.is_some() || route.resource == "pods";
            let mut config = informer_config(&route, seed, Some(namespaced)).server_table(false);
            config.history = kept.retention().clone();
            let driver = Driver::start(config, on_change.clone());
            driver.with_informer(|informer| informer.set_change_log_capacity(0));
            reads.push((route, driver));
        }
        for (_, driver) in before {
            driver.stop();
        }
        self.reads = Some(RelatedReads {
            of: (source, key.to_string()),
            informers: reads,
        });
    }

    /// The History shows the newest `count` versions: only those are read.
    pub fn show_versions(&mut self, count: usize) {
        self.versions.set_window(count);
    }

    /// The object view closed: what was read for its relatives stops.
    pub fn release_related(&mut self) {
        if let Some(reads) = self.reads.take() {
            for (_, driver) in reads.informers {
                driver.stop();
            }
        }
    }

    /// The object view of `key` in `driver`'s informer (of `route`; none
    /// for a recording): its versions' changes read at most
    /// [`VERSIONS_MS_PER_FRAME`] per call, newest first, with serve's
    /// recorded ones before them once read (asked for here, once).
    pub fn details(
        &mut self,
        driver: &Driver,
        key: &str,
        route: Option<&Route>,
        serve: Option<&ServeHistory>,
        on_change: &Rc<dyn Fn()>,
        now_ms: Millis,
    ) -> ObjectDetails {
        let target = route.map(|route| ReachTarget {
            resource: route.stats_name(),
            key: key.to_string(),
            cluster: route.cluster.clone(),
        });
        let page_first = driver
            .informer()
            .history()
            .versions(key)
            .next()
            .map(|e| e.at);
        let ask = self
            .reach
            .borrow_mut()
            .want(target.clone(), serve, page_first);
        if let (Some(path), Some(target)) = (ask, target.clone()) {
            let (reach, on_change) = (self.reach.clone(), on_change.clone());
            let answer = crate::transport::serve_history::get(&path);
            wasm_bindgen_futures::spawn_local(async move {
                let answer = answer.await;
                let answer = answer
                    .as_ref()
                    .ok()
                    .map(|answer| (answer.status, answer.body.as_slice()));
                reach.borrow_mut().answered(&target, answer);
                on_change();
            });
        }
        self.ask_family(target, serve, on_change);
        let clock = || {
            web_sys::window()
                .and_then(|w| w.performance())
                .map_or(0.0, |p| p.now())
        };
        // The budget runs from the first version read, not from here: what
        // comes before (joining serve's record) must not eat it, or a long
        // history is read a version per frame.
        let deadline = std::cell::Cell::new(None::<f64>);
        let more_time = || {
            let now = clock();
            let until = deadline.get().unwrap_or(now + VERSIONS_MS_PER_FRAME);
            deadline.set(Some(until));
            now < until
        };
        let state = self.reach.borrow();
        let family = self.family.borrow();
        object_details(
            &driver.informer(),
            key,
            now_ms,
            &reach_of(&state, &family, serve),
            &mut self.versions,
            &more_time,
        )
    }

    /// Asks serve for the records of what `target` owns, once per object
    /// (`crate::app::family_reach` decides), each read up to its bound.
    fn ask_family(
        &self,
        target: Option<ReachTarget>,
        serve: Option<&ServeHistory>,
        on_change: &Rc<dyn Fn()>,
    ) {
        let asks = self.family.borrow_mut().want(target.clone(), serve);
        let Some(target) = target else {
            return;
        };
        for (resource, path) in asks {
            let (family, on_change, target) =
                (self.family.clone(), on_change.clone(), target.clone());
            wasm_bindgen_futures::spawn_local(async move {
                super::read_record_bounded(&path, FAMILY_MAX_BYTES, |answer| {
                    family.borrow_mut().answered(&target, &resource, answer);
                })
                .await;
                on_change();
            });
        }
    }

    /// Fills `details` (of `key` in `driver`'s informer of `route`) with
    /// its usage over time, its chart showing `range`, its series kept in
    /// `store` (the browser's database) when there is one.
    pub fn usage(
        &mut self,
        details: &mut ObjectDetails,
        driver: &Driver,
        route: Option<&Route>,
        (range, store): ((Millis, Millis), Option<UsageStore>),
        serve: Option<&ServeHistory>,
        on_change: &Rc<dyn Fn()>,
    ) {
        let Some(route) = route else {
            return; // a recording: no cluster to measure
        };
        let object = driver
            .informer()
            .store()
            .get_by_key(&details.object_key)
            .cloned();
        self.usage.fill(
            details,
            (&route.group, &route.resource, &route.api_root()),
            object.as_ref(),
            (range, store),
            serve,
            on_change,
        );
    }

    /// Stops the page's own events informer and forgets what was read (the
    /// page closes, or another cluster answers behind a name).
    pub fn stop(&mut self) {
        if let Some((_, driver)) = self.events.take() {
            driver.stop();
        }
        self.release_related();
        // Nothing read before is kept: another cluster behind the same
        // name may hold an object of the same key, whose record is not the
        // one read (an answer still on its way lands in the old state).
        *self = ObjectPanel::default();
    }

    /// Fills `details` (of `key` in informer `source`, shown by `driver`)
    /// with its events, related objects and story.
    #[allow(clippy::too_many_arguments)]
    pub fn fill(
        &mut self,
        details: &mut ObjectDetails,
        source: u64,
        driver: &Driver,
        kept: &KeptInformers,
        on_change: &Rc<dyn Fn()>,
        seed: u64,
        serve: Option<&ServeHistory>,
        now_ms: Millis,
        now_unix: i64,
    ) {
        let Some(route) = kept.get(source).map(|s| s.route.clone()) else {
            return; // a recording: its own informer, no cluster around it
        };
        self.ensure_events(route.cluster.as_ref(), kept, on_change, seed);
        self.ensure_related((source, &route, &details.object_key), kept, on_change, seed);
        let answered = self.reach.borrow().answered_count() + self.family.borrow().answered_count();
        let fresh = self.built.as_ref().is_some_and(|b| {
            b.source == source
                && b.key == details.object_key
                && b.answered == answered
                && !b.story_unread
                && now_ms.saturating_sub(b.at) < STORY_REFRESH_MS
        });
        if !fresh {
            let state = self.reach.borrow();
            let family = self.family.borrow();
            let reach = reach_of(&state, &family, serve);
            let at = Moment {
                now_ms,
                now_unix,
                answered,
            };
            let built = self.build(source, &route, driver, kept, details, &reach, at);
            drop((state, family));
            if built.story_unread {
                on_change(); // the next attributions next frame
            }
            self.built = Some(built);
        }
        if let Some(built) = &self.built {
            details.events_kept = built.events_kept;
            details.events_synced = built.events_synced;
            details.events = built.events.clone();
            details.related = built.related.clone();
            details.story = built.story.clone();
        }
        details.family = self.family.borrow().state();
    }

    #[allow(clippy::too_many_arguments)]
    fn build(
        &self,
        source: u64,
        route: &Route,
        driver: &Driver,
        kept: &KeptInformers,
        details: &ObjectDetails,
        reach: &Reach<'_>,
        at: Moment,
    ) -> Built {
        let Moment {
            now_ms,
            now_unix,
            answered,
        } = at;
        // Only the object's cluster's stores tell its story.
        let mut routes: Vec<(Route, Driver)> = kept
            .by_age()
            .into_iter()
            .filter(|(id, s)| *id != source && s.route.cluster == route.cluster)
            .map(|(_, s)| (s.route.clone(), s.driver.clone()))
            .collect();
        let own_index = routes.len();
        routes.push((route.clone(), driver.clone()));
        routes.extend(self.events.clone());
        if let Some(reads) = &self.reads {
            routes.extend(reads.informers.iter().cloned());
        }
        let informers: Vec<Ref<'_, Informer>> = routes.iter().map(|(_, d)| d.informer()).collect();
        let sources: Vec<StorySource<'_>> = routes
            .iter()
            .zip(&informers)
            .map(|((route, _), informer)| StorySource {
                group: &route.group,
                version: &route.version,
                resource: &route.resource,
                store: informer.store(),
                history: informer.history(),
            })
            .collect();
        let own = sources.get(own_index);
        let events_kept = self.events.is_some() || routes.iter().any(|(route, _)| is_events(route));
        let events_synced = routes
            .iter()
            .zip(&informers)
            .any(|((route, _), informer)| is_events(route) && informer.has_synced());
        let object = held_object(driver, &details.object_key);
        let (events, related_links, story_rows) = match (own, object) {
            (Some(own), Some(object)) => (
                events_about(
                    &sources,
                    &[Subject::of(own, &object)],
                    &reach.recorded_events(),
                    now_unix,
                ),
                related(&sources, own, &object),
                story_with(
                    &sources,
                    own,
                    &object,
                    reach,
                    (now_ms, now_unix),
                    &mut self.story_who.borrow_mut(),
                ),
            ),
            _ => Default::default(),
        };
        let story_unread = self.story_who.borrow().left() > 0;
        Built {
            source,
            key: details.object_key.clone(),
            at: now_ms,
            answered,
            events_kept,
            events_synced,
            events: Rc::new(events),
            related: Rc::new(related_links),
            story: Rc::new(story_rows),
            story_unread,
        }
    }
}
