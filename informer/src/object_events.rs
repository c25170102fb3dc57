//! Events as a story of the object they are about. Kubernetes writes them
//! in two shapes — `core/v1` Events (`involvedObject`, `source`, `count`,
//! `firstTimestamp`/`lastTimestamp`) and `events.k8s.io/v1` Events
//! (`regarding`, `reportingController`, `series.count`, `eventTime`,
//! `deprecated*` fields) — and this module reads both into one
//! [`ObjectEvent`], and says which object an event is about: by uid when
//! both sides have one, else by kind, namespace and name (an event can
//! outlive the object's uid, or be written before the uid is known).

use deltascope_facts::time::parse_rfc3339;

use crate::compact_sort;
use crate::json::JsonRef;

/// Which object an event is about.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InvolvedObject {
    pub kind: String,
    /// `""` for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// `""` when the event does not say.
    pub uid: String,
    /// `spec.containers{web}` and the like, when the event is about a part.
    pub field_path: String,
}

impl InvolvedObject {
    /// Whether the event is about the object of `kind` `namespace/name`
    /// with `uid` (empty when unknown).
    pub fn is_about(&self, kind: &str, namespace: &str, name: &str, uid: &str) -> bool {
        if !self.uid.is_empty() && !uid.is_empty() {
            return self.uid == uid;
        }
        self.kind == kind && self.namespace == namespace && self.name == name
    }
}

/// One event, whichever API wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ObjectEvent {
    /// The Event object's own `namespace/name`.
    pub key: String,
    pub involved: InvolvedObject,
    /// `Normal` or `Warning`.
    pub event_type: String,
    pub reason: String,
    /// What happened, in the reporter's words (`note` in events.k8s.io/v1).
    pub message: String,
    /// How many times it happened (1 when the event does not say).
    pub count: u64,
    /// RFC 3339 times; `""` when the event carries none.
    pub first_seen: String,
    pub last_seen: String,
    /// The component that reported it (`kubelet`, `deployment-controller`).
    pub reporter: String,
}

impl ObjectEvent {
    /// Reads an Event of either API; `None` if `object` names no
    /// involved object (not an Event).
    pub fn from_object(key: &str, object: JsonRef<'_>) -> Option<ObjectEvent> {
        let text = |v: Option<JsonRef<'_>>| v.and_then(JsonRef::as_str).unwrap_or("").to_owned();
        let first_text = |pointers: &[&str]| {
            pointers
                .iter()
                .map(|p| text(object.pointer(p)))
                .find(|t| !t.is_empty())
                .unwrap_or_default()
        };
        let involved = object
            .get("involvedObject")
            .or_else(|| object.get("regarding"))?;
        let involved = InvolvedObject {
            kind: text(involved.get("kind")),
            namespace: text(involved.get("namespace")),
            name: text(involved.get("name")),
            uid: text(involved.get("uid")),
            field_path: text(involved.get("fieldPath")),
        };
        let count = ["/series/count", "/count", "/deprecatedCount"]
            .iter()
            .find_map(|p| object.pointer(p).and_then(JsonRef::as_u64))
            .unwrap_or(1);
        let first_seen =
            first_text(&["/firstTimestamp", "/deprecatedFirstTimestamp", "/eventTime"]);
        let last_seen = first_text(&[
            "/series/lastObservedTime",
            "/lastTimestamp",
            "/deprecatedLastTimestamp",
            "/eventTime",
            "/firstTimestamp",
        ]);
        Some(ObjectEvent {
            key: key.to_owned(),
            involved,
            event_type: text(object.get("type")),
            reason: text(object.get("reason")),
            message: first_text(&["/message", "/note"]),
            count,
            first_seen: if first_seen.is_empty() {
                last_seen.clone()
            } else {
                first_seen
            },
            last_seen,
            reporter: first_text(&[
                "/source/component",
                "/reportingController",
                "/deprecatedSource/component",
            ]),
        })
    }

    pub fn is_warning(&self) -> bool {
        self.event_type == WARNING
    }
}

/// An Event's `type` when it warns.
const WARNING: &str = "Warning";

/// What a Warning event is about — the involved object's API group (empty
/// for the core group) and kind — read without building an
/// [`ObjectEvent`]; `None` for any other event. The timeline asks this of
/// every held Event each time it is drawn, too often to build each one.
pub fn warning_about(object: JsonRef<'_>) -> Option<(&str, &str)> {
    if object.get("type").and_then(JsonRef::as_str) != Some(WARNING) {
        return None;
    }
    let involved = object
        .get("involvedObject")
        .or_else(|| object.get("regarding"))?;
    let group = involved
        .get("apiVersion")
        .and_then(JsonRef::as_str)
        .and_then(|version| version.rsplit_once('/'))
        .map_or("", |(group, _)| group);
    let kind = involved.get("kind").and_then(JsonRef::as_str).unwrap_or("");
    Some((group, kind))
}

/// Newest first (by last seen, then first seen, then key), as an object's
/// events are listed.
pub fn newest_first(events: &mut [ObjectEvent]) {
    let seconds = |text: &str| parse_rfc3339(text).unwrap_or(i64::MIN);
    compact_sort::sort_by(events, |a, b| {
        seconds(&b.last_seen)
            .cmp(&seconds(&a.last_seen))
            .then_with(|| b.last_seen.cmp(&a.last_seen))
            .then_with(|| seconds(&b.first_seen).cmp(&seconds(&a.first_seen)))
            .then_with(|| a.key.cmp(&b.key))
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::JsonValue;
    use serde_json::json;

    fn read(value: serde_json::Value) -> Option<ObjectEvent> {
        let value = JsonValue::from(value);
        ObjectEvent::from_object("shop/e1", value.root())
    }

    #[test]
    fn a_warning_says_what_it_is_about_in_either_api() {
        let about = |value: serde_json::Value| {
            let value = JsonValue::from(value);
            warning_about(value.root()).map(|(group, kind)| (group.to_owned(), kind.to_owned()))
        };
        let core = json!({"type": "Warning",
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web-1"}});
        assert_eq!(about(core), Some((String::new(), "Pod".into())));
        let regarding = json!({"type": "Warning",
            "regarding": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}});
        assert_eq!(about(regarding), Some(("apps".into(), "Deployment".into())));
        let normal = json!({"type": "Normal",
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web-1"}});
        assert_eq!(about(normal), None);
        assert_eq!(about(json!({"type": "Warning"})), None, "about nothing");
    }

    #[test]
    fn core_v1_events() {
        let event = read(json!({
            "kind": "Event", "apiVersion": "v1",
            "involvedObject": {"kind": "Pod", "namespace": "shop", "name": "web-1", "uid": "u1",
                               "fieldPath": "spec.containers{web}"},
            "type": "Warning", "reason": "BackOff", "message": "Back-off restarting failed container",
            "count": 7, "firstTimestamp": "2026-11-25T10:00:00Z", "lastTimestamp": "2026-11-25T10:05:00Z",
            "source": {"component": "kubelet", "host": "node-1"}
        }))
        .expect("an event");
        assert_eq!(event.involved.name, "web-1");
        assert_eq!(event.involved.field_path, "spec.containers{web}");
        assert!(event.is_warning());
        assert_eq!((event.count, event.reporter.as_str()), (7, "kubelet"));
        assert_eq!(event.first_seen, "2026-11-25T10:00:00Z");
        assert_eq!(event.last_seen, "2026-11-25T10:05:00Z");
    }

    #[test]
    fn events_k8s_io_v1_events() {
        let event = read(json!({
            "kind": "Event", "apiVersion": "events.k8s.io/v1",
            "regarding": {"kind": "Deployment", "namespace": "shop", "name": "web", "uid": "d1"},
            "type": "Normal", "reason": "ScalingReplicaSet", "note": "Scaled up replica set web-5d to 3",
            "eventTime": "2026-11-25T10:00:00.123456Z", "reportingController": "deployment-controller",
            "series": {"count": 2, "lastObservedTime": "2026-11-25T10:01:00.000000Z"}
        }))
        .expect("an event");
        assert_eq!(event.involved.kind, "Deployment");
        assert_eq!(event.message, "Scaled up replica set web-5d to 3");
        assert_eq!(event.count, 2);
        assert_eq!(event.first_seen, "2026-11-25T10:00:00.123456Z");
        assert_eq!(event.last_seen, "2026-11-25T10:01:00.000000Z");
        assert_eq!(event.reporter, "deployment-controller");
    }

    #[test]
    fn matching_by_uid_else_by_name() {
        let involved = InvolvedObject {
            kind: "Pod".into(),
            namespace: "shop".into(),
            name: "web-1".into(),
            uid: "u1".into(),
            field_path: String::new(),
        };
        assert!(involved.is_about("Pod", "shop", "web-1", "u1"));
        // a new pod with the same name is another object
        assert!(!involved.is_about("Pod", "shop", "web-1", "u2"));
        assert!(involved.is_about("Pod", "shop", "web-1", ""));
        assert!(!involved.is_about("Pod", "other", "web-1", ""));
        let no_uid = InvolvedObject {
            uid: String::new(),
            ..involved
        };
        assert!(no_uid.is_about("Pod", "shop", "web-1", "u9"));
    }

    #[test]
    fn not_an_event_and_newest_first() {
        assert_eq!(
            read(json!({"kind": "Pod", "metadata": {"name": "x"}})),
            None
        );
        let at = |key: &str, last: &str| ObjectEvent {
            key: key.into(),
            last_seen: last.into(),
            ..ObjectEvent::default()
        };
        let mut events = vec![
            at("a", "2026-01-01T00:00:01Z"),
            at("b", "2026-01-01T00:00:03Z"),
            at("c", "2026-01-01T00:00:02Z"),
        ];
        newest_first(&mut events);
        let keys: Vec<&str> = events.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, vec!["b", "c", "a"]);
    }
}
