//! When the object view's story asks serve for the record of what the
//! object owns — a Deployment's ReplicaSets and their pods, replaced ones
//! included, a Job's pods — so the story tells it without the user keeping
//! those resources first; and what the answers mean. A small state machine,
//! tested natively, beside `crate::app::object_reach` (the object's own
//! record): once per object opened, while serve's summary says it keeps a
//! history holding the owned resource, it asks
//! `GET /_deltascope/history?resource=R&namespace=NS` for each owned
//! resource of a workload (the owner references are followed in
//! `crate::model::object_story`), and for the namespace's events of any
//! namespaced object (the events serve kept, those the cluster has expired
//! too, join the object's Events and its story). An answer is read up to
//! [`FAMILY_MAX_BYTES`]; one over it, or a failure, is said in the story's
//! `data-family` words and the story keeps what the page holds.

use crate::api::object_record::{resource_history_path, ObjectRecord};
use crate::app::object_reach::{read_outcome, records_state, ReachTarget, RecordAnswer};
use crate::model::first_seen::Watched;
use crate::model::object_versions::ReachPhase;
use crate::model::serve_history::ServeHistory;

/// The most of one owned resource's record the story reads (a namespace's
/// pods over the record's whole span): the answer is parsed in one task,
/// so a bound of a few megabytes keeps that task short.
pub const FAMILY_MAX_BYTES: usize = 8 << 20;

/// The resources whose objects `resource`'s objects own, down the owner
/// references (as in `data-resource`): what a story reads of serve's record.
pub fn owned_resources(resource: &str) -> &'static [&'static str] {
    match resource {
        "deployments.apps" => &["replicasets.apps", "pods"],
        "cronjobs.batch" => &["jobs.batch", "pods"],
        "replicasets.apps" | "statefulsets.apps" | "daemonsets.apps" | "jobs.batch" => &["pods"],
        _ => &[],
    }
}

/// One owned resource's record, as asked and answered.
#[derive(Debug, Clone)]
pub struct FamilyPart {
    pub resource: String,
    pub phase: ReachPhase,
    pub record: Option<ObjectRecord>,
}

/// serve's record of what the object on screen owns.
#[derive(Debug, Default)]
pub struct FamilyReach {
    target: Option<ReachTarget>,
    asked: bool,
    parts: Vec<FamilyPart>,
    answered: u64,
}

impl FamilyReach {
    /// The object view shows `target` (`None`: closed) and serve says
    /// `serve` of its history. Returns what to ask now, once per object:
    /// each owned resource and its path.
    pub fn want(
        &mut self,
        target: Option<ReachTarget>,
        serve: Option<&ServeHistory>,
    ) -> Vec<(String, String)> {
        if target != self.target {
            *self = FamilyReach {
                target,
                answered: self.answered,
                ..FamilyReach::default()
            };
        }
        let Some(target) = self.target.as_ref() else {
            return Vec::new();
        };
        let Some(serve) = serve.filter(|s| s.keeps_history()) else {
            return Vec::new();
        };
        let Some((namespace, _)) = target.key.split_once('/') else {
            return Vec::new(); // cluster-scoped: owns nothing namespaced here
        };
        if self.asked {
            return Vec::new();
        }
        self.asked = true;
        let asks: Vec<(String, String)> = owned_resources(&target.resource)
            .iter()
            .chain(&["events"])
            .filter(|resource| serve.recorded(resource).is_some())
            .map(|resource| {
                let path = resource_history_path(resource, Some(namespace), None, None);
                let path = target.scoped(path);
                (resource.to_string(), path)
            })
            .collect();
        self.parts = asks
            .iter()
            .map(|(resource, _)| FamilyPart {
                resource: resource.clone(),
                phase: ReachPhase::Reading,
                record: None,
            })
            .collect();
        asks
    }

    /// The answer for `resource` of `target` came; one for an object no
    /// longer shown is dropped.
    pub fn answered(&mut self, target: &ReachTarget, resource: &str, answer: RecordAnswer<'_>) {
        self.answered += 1;
        if self.target.as_ref() != Some(target) {
            return;
        }
        let Some(part) = self.parts.iter_mut().find(|p| p.resource == resource) else {
            return;
        };
        (part.phase, part.record) = read_outcome(answer, || {
            format!(
                "serve's record of {resource} in this namespace is over {} MiB",
                FAMILY_MAX_BYTES >> 20
            )
        });
    }

    /// The owned resources' records read so far, each with what serve's
    /// recorder watched of it (from its first record, except the gaps).
    pub fn records<'a>(
        &'a self,
        serve: Option<&ServeHistory>,
    ) -> Vec<(&'a str, &'a ObjectRecord, Option<Watched>)> {
        self.parts
            .iter()
            .filter_map(|part| {
                let record = part.record.as_ref()?;
                let watched = serve?.recorded_from(&part.resource).map(|from_ms| Watched {
                    from_ms,
                    gaps: record.gaps.iter().map(|g| (g.from_ms, g.to_ms)).collect(),
                });
                Some((part.resource.as_str(), record, watched))
            })
            .collect()
    }

    /// The story's `data-family`: `reading`, `read` or `error` (with why),
    /// `None` when nothing was asked.
    pub fn state(&self) -> Option<(&'static str, Option<String>)> {
        let phases = self.parts.iter().map(|p| (p.resource.as_str(), &p.phase));
        records_state(phases, |failed| {
            format!("serve's record of what it owns could not be read ({failed}); the story shows what the page holds")
        })
    }

    /// Requests answered so far (a new record means the story is stale).
    pub fn answered_count(&self) -> u64 {
        self.answered
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::serve_history::recording_since;

    fn shown(resource: &str, key: &str) -> ReachTarget {
        ReachTarget {
            resource: resource.into(),
            key: key.into(),
            cluster: None,
        }
    }

    fn web() -> Option<ReachTarget> {
        Some(shown("deployments.apps", "shop/web"))
    }

    const POD: &[u8] = br#"{"at":0,"time":"2026-11-28T01:15:28.336Z","type":"ADDED","deltaType":"Replaced","resource":"pods","resourceVersion":"3","managers":[],"object":{"metadata":{"name":"web-1","namespace":"shop","resourceVersion":"3"}}}"#;

    #[test]
    fn asks_once_per_object_for_each_owned_resource_serve_records() {
        let serve = recording_since(&[("deployments.apps", 1), ("pods", 1)]);
        let mut family = FamilyReach::default();
        let asks = family.want(web(), Some(&serve));
        assert_eq!(
            asks,
            [(
                "pods".to_string(),
                "/_deltascope/history?resource=pods&namespace=shop".to_string()
            )],
            "replicasets are not recorded: not asked"
        );
        assert_eq!(family.state(), Some(("reading", None)));
        assert!(family.want(web(), Some(&serve)).is_empty(), "once");
        let target = web().expect("target");
        family.answered(&target, "pods", RecordAnswer::Answered(Some((200, POD))));
        assert_eq!(family.state(), Some(("read", None)));
        let records = family.records(Some(&serve));
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].0, "pods");
        assert_eq!(records[0].1.versions.len(), 1);
        assert_eq!(records[0].2.as_ref().map(|w| w.from_ms), Some(1));
        // another object: asked again, the old answer dropped
        let other = shown("jobs.batch", "shop/backup");
        assert_eq!(family.want(Some(other), Some(&serve)).len(), 1);
        family.answered(&target, "pods", RecordAnswer::Answered(Some((200, POD))));
        assert!(family.records(Some(&serve)).is_empty());
    }

    #[test]
    fn asks_for_the_namespace_s_events_of_any_namespaced_object() {
        let serve = recording_since(&[("events", 1), ("pods", 1)]);
        let config_map = shown("configmaps", "shop/settings");
        let asks = FamilyReach::default().want(Some(config_map), Some(&serve));
        assert_eq!(
            asks,
            [(
                "events".to_string(),
                "/_deltascope/history?resource=events&namespace=shop".to_string()
            )]
        );
        let asks = FamilyReach::default().want(web(), Some(&serve));
        let resources: Vec<&str> = asks.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(resources, ["pods", "events"]);
    }

    #[test]
    fn asks_nothing_without_a_recorder_or_for_what_owns_nothing() {
        let serve = recording_since(&[("pods", 1), ("replicasets.apps", 1)]);
        let mut family = FamilyReach::default();
        assert!(family.want(web(), None).is_empty());
        assert!(family.want(web(), Some(&ServeHistory::Off)).is_empty());
        assert_eq!(family.state(), None);
        let mut family = FamilyReach::default();
        let config_map = shown("configmaps", "shop/settings");
        assert!(family.want(Some(config_map), Some(&serve)).is_empty());
        let node = shown("deployments.apps", "cluster-scoped");
        assert!(FamilyReach::default()
            .want(Some(node), Some(&serve))
            .is_empty());
    }

    #[test]
    fn a_failure_or_a_record_too_large_is_said_and_nothing_is_read() {
        let serve = recording_since(&[("pods", 1), ("replicasets.apps", 1)]);
        let mut family = FamilyReach::default();
        assert_eq!(family.want(web(), Some(&serve)).len(), 2);
        let target = web().expect("target");
        family.answered(
            &target,
            "replicasets.apps",
            RecordAnswer::Answered(Some((500, b"boom"))),
        );
        family.answered(&target, "pods", RecordAnswer::TooLarge);
        let (state, words) = family.state().expect("asked");
        assert_eq!(state, "error");
        let words = words.expect("why");
        assert!(words.contains("replicasets.apps: HTTP 500"), "{words}");
        assert!(
            words.contains("pods: serve's record of pods in this namespace is over 8 MiB"),
            "{words}"
        );
        assert!(family.records(Some(&serve)).is_empty());
    }
}
