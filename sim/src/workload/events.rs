//! The workload's event recorder: it records Events the way the apiserver
//! and client-go's recorder leave them, so the page sees what a cluster
//! shows. A repeat of an event (same object, reason, message and source)
//! while the first is still stored bumps `count`, `lastTimestamp` and
//! `series` on that Event (MODIFIED) instead of creating another; every
//! Event is deleted once it was not written for the TTL (the apiserver's
//! `--event-ttl`, counted from the last write), and the oldest are deleted
//! first beyond [`MAX_EVENTS`] (the sim's memory bound under heavy churn).

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use tokio::time::Instant;

use super::super::events::{self, Occurrence};
use super::super::managed::{micro_time_now, Writer};
use super::super::objects;
use super::super::resources::EVENTS;
use super::super::store::Store;

/// Events kept at most, whatever the TTL.
pub const MAX_EVENTS: usize = 2000;

/// The cluster's default event TTL here (a real apiserver's is 1 h).
pub const DEFAULT_TTL: Duration = Duration::from_secs(300);

/// What makes two events the same one (client-go's aggregation key).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Same {
    uid: String,
    field_path: Option<String>,
    reason: &'static str,
    message: String,
    component: &'static str,
}

struct Live {
    same: Same,
    last_write: Instant,
}

pub struct Recorder {
    ttl: Duration,
    counter: u64,
    by_same: HashMap<Same, String>,
    live: HashMap<String, Live>,
    /// Keys in creation order (some may be gone already).
    order: VecDeque<String>,
}

impl Recorder {
    pub fn new(ttl: Duration) -> Recorder {
        Recorder {
            ttl,
            counter: 0,
            by_same: HashMap::new(),
            live: HashMap::new(),
            order: VecDeque::new(),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn set_ttl(&mut self, ttl: Duration) {
        self.ttl = ttl;
    }

    pub fn count(&self) -> usize {
        self.live.len()
    }

    /// Records `what` about the object `res`/`key`; returns the writes made.
    pub fn record(&mut self, store: &Store, res: usize, key: &str, what: Occurrence) -> u64 {
        let Some(involved) = store.get(res, key) else {
            return 0;
        };
        let involved = involved.value();
        let same = Same {
            uid: involved["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            field_path: what.field_path.clone(),
            reason: what.reason,
            message: what.message.clone(),
            component: what.reporter.component,
        };
        let by = Writer::update(what.reporter.manager);
        let time = objects::rfc3339_now();
        let micro = micro_time_now();
        if let Some(event_key) = self.by_same.get(&same).cloned() {
            let seen = store.update(EVENTS, &event_key, by, |e| events::repeat(e, &time, &micro));
            if seen.is_some() {
                if let Some(live) = self.live.get_mut(&event_key) {
                    live.last_write = Instant::now();
                }
                return 1;
            }
            self.forget(&event_key);
        }
        self.counter += 1;
        let name = format!(
            "{}.{:016x}",
            involved["metadata"]["name"].as_str().unwrap_or("object"),
            self.counter
        );
        let event = events::core_event(&name, &involved, &what, &time, &micro);
        let obj = store.create(EVENTS, event, by);
        self.by_same.insert(same.clone(), obj.key.clone());
        self.live.insert(
            obj.key.clone(),
            Live {
                same,
                last_write: Instant::now(),
            },
        );
        self.order.push_back(obj.key.clone());
        let mut writes = 1;
        while self.live.len() > MAX_EVENTS {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            if self.live.contains_key(&oldest) {
                store.delete(EVENTS, &oldest);
                self.forget(&oldest);
                writes += 1;
            }
        }
        writes
    }

    fn forget(&mut self, event_key: &str) {
        if let Some(live) = self.live.remove(event_key) {
            self.by_same.remove(&live.same);
        }
    }

    /// Deletes the events not written for the TTL; returns how many.
    pub fn expire(&mut self, store: &Store) -> usize {
        let now = Instant::now();
        let expired: Vec<String> = self
            .live
            .iter()
            .filter(|(_, live)| now.duration_since(live.last_write) >= self.ttl)
            .map(|(key, _)| key.clone())
            .collect();
        for key in &expired {
            store.delete(EVENTS, key);
            self.forget(key);
        }
        if !expired.is_empty() {
            self.order.retain(|k| self.live.contains_key(k));
        }
        expired.len()
    }
}
