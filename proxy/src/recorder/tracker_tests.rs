//! The tracker driven through a real informer with made-up responses: what
//! a first list, watch events, a 410 relist and a restore lead it to write.

use deltascope_history::{GapReason, RecordedState, Write};
use deltascope_informer::{
    Action, Informer, InformerConfig, Input, RequestId, RequestKind, ResourceRef,
};
use serde_json::json;

use super::clock::Clock;
use super::gap_causes::GapCauses;
use super::tracker::{unbounded_history, Tracker, WatermarkTiming};

fn pod(name: &str, uid: &str, rv: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv},
        "spec": {"nodeName": format!("node-{rv}")}})
}

fn list(rv: &str, items: &[serde_json::Value]) -> String {
    json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": rv}, "items": items})
        .to_string()
}

fn event(kind: &str, object: serde_json::Value) -> String {
    format!("{}\n", json!({"type": kind, "object": object}))
}

struct Harness {
    informer: Informer,
    tracker: Tracker,
    writes: Vec<Write>,
    now: u64,
    current: Option<(RequestId, RequestKind, String)>,
}

impl Harness {
    fn new() -> Harness {
        let mut config = InformerConfig::new(ResourceRef::new("", "v1", "pods", true))
            .streaming_list(false)
            .resync(None);
        config.history = unbounded_history();
        Harness {
            informer: Informer::new(config),
            tracker: Tracker::new("pods".into(), Clock::new(), WatermarkTiming::default()),
            writes: Vec::new(),
            now: 0,
            current: None,
        }
    }

    /// What the driver does after an input.
    fn step(&mut self, was_warm: bool) {
        let mut list_applied = false;
        while let Some(action) = self.informer.poll_action() {
            if let Action::Send {
                id,
                kind,
                path_and_query,
                ..
            } = action
            {
                list_applied |= self
                    .tracker
                    .saw_send(&self.informer, kind == RequestKind::List);
                self.current = Some((id, kind, path_and_query));
            }
        }
        self.writes
            .extend(self.tracker.gap_before(&self.informer, list_applied));
        while let Some(delta) = self.tracker.next_delta(&self.informer) {
            self.writes.push(delta);
        }
        self.writes
            .extend(self.tracker.finish_step(&mut self.informer, was_warm));
    }

    fn input(&mut self, input: Input<'_>) {
        self.now += 10;
        let was_warm = self.informer.is_warm();
        self.informer.handle(input, self.now);
        self.step(was_warm);
    }

    fn request(&self) -> (RequestId, RequestKind, String) {
        self.current.clone().expect("a request in flight")
    }

    /// Answers the request in flight with 200 and `body`, ending it if `end`.
    fn answer(&mut self, kind: RequestKind, body: &str, end: bool) {
        let (id, sent, path) = self.request();
        assert_eq!(sent, kind, "{path}");
        self.input(Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        });
        self.input(Input::BodyChunk {
            id,
            bytes: body.as_bytes(),
        });
        if end {
            self.input(Input::BodyEnd { id });
        }
    }

    /// Ticks until a request of `kind` is sent.
    fn tick_until(&mut self, kind: RequestKind) {
        for _ in 0..100 {
            if self.current.as_ref().is_some_and(|(_, k, _)| *k == kind) {
                return;
            }
            self.now += 1_000;
            let was_warm = self.informer.is_warm();
            self.informer.handle(Input::Tick, self.now);
            self.step(was_warm);
        }
        panic!("no {kind:?} sent");
    }

    fn take(&mut self) -> Vec<Write> {
        std::mem::take(&mut self.writes)
    }
}

fn summary(writes: &[Write]) -> Vec<String> {
    writes
        .iter()
        .map(|w| match w {
            Write::Delta(d) => format!(
                "{} {} rv{} store{}{}",
                d.kind.as_str(),
                d.name,
                d.resource_version,
                d.store_resource_version,
                if d.tombstone { " tombstone" } else { "" }
            ),
            Write::Gap(g) => format!("gap {}", g.reason.as_str()),
            Write::Watermark(m) => format!("mark {}", m.store_resource_version),
            Write::Usage(u) => format!("usage {}", u.resource.as_str()),
        })
        .collect()
}

#[test]
fn a_list_watch_events_and_a_relist_write_only_what_changed() {
    let mut h = Harness::new();
    h.informer.start(0);
    h.step(false);
    let body = list(
        "10",
        &[
            pod("a", "ua", "5"),
            pod("b", "ub", "6"),
            pod("c", "uc", "7"),
        ],
    );
    h.answer(RequestKind::List, &body, true);
    assert_eq!(
        summary(&h.take()),
        [
            "Replaced a rv5 store10",
            "Replaced b rv6 store10",
            "Replaced c rv7 store10"
        ]
    );
    h.answer(
        RequestKind::Watch,
        &event("MODIFIED", pod("a", "ua", "11")),
        false,
    );
    let writes = h.take();
    assert_eq!(summary(&writes), ["Updated a rv11 store11"]);
    let Write::Delta(update) = &writes[0] else {
        unreachable!()
    };
    assert!(update
        .previous
        .as_ref()
        .is_some_and(|p| p.to_string().contains("\"5\"")));
    assert!(update.object.to_string().contains("node-11"));
    assert!(h.tracker.shares_the_store(&h.informer));
    assert!(h.tracker.healthy(&h.informer));
    assert_eq!(
        summary(
            &h.tracker
                .watermark_due(&h.informer)
                .into_iter()
                .collect::<Vec<_>>()
        ),
        ["mark 11"]
    );
    assert!(
        h.tracker.watermark_due(&h.informer).is_none(),
        "not again at once"
    );

    // 410: relisted; a unchanged, b changed, c gone, d new
    let (id, ..) = h.request();
    let expired = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410,
        "reason": "Expired", "message": "too old resource version"});
    h.input(Input::BodyChunk {
        id,
        bytes: event("ERROR", expired).as_bytes(),
    });
    h.tick_until(RequestKind::List);
    assert!(!h.tracker.healthy(&h.informer));
    let body = list(
        "20",
        &[
            pod("a", "ua", "11"),
            pod("b", "ub", "15"),
            pod("d", "ud", "18"),
        ],
    );
    h.answer(RequestKind::List, &body, true);
    assert_eq!(
        summary(&h.take()),
        [
            "gap expired",
            "Replaced b rv15 store20",
            "Replaced d rv18 store20",
            "Deleted c rv7 store20 tombstone"
        ]
    );
    // a, unchanged, is held once: the relist's copy, not the one it replaced
    assert!(h.tracker.shares_the_store(&h.informer));
    assert!(
        h.tracker.watermark_due(&h.informer).is_none(),
        "the watch is not open yet"
    );
    let (id, ..) = h.request();
    h.input(Input::ResponseStarted {
        id,
        status: 200,
        retry_after_secs: None,
    });
    assert_eq!(
        summary(
            &h.tracker
                .watermark_due(&h.informer)
                .into_iter()
                .collect::<Vec<_>>()
        ),
        ["mark 20"]
    );
}

fn recorded(rv: &str, through_ms: i64) -> RecordedState {
    RecordedState {
        store_resource_version: rv.into(),
        through_ms,
        objects: vec![
            pod("a", "ua", "5").to_string(),
            pod("b", "ub", "7").to_string(),
        ],
    }
}

#[test]
fn a_restored_store_resumes_its_watch_and_says_it_was_not_running() {
    let mut h = Harness::new();
    let state = recorded("10", 1_000);
    let causes = GapCauses::starting(0, GapReason::NotRunning);
    let restored = h
        .tracker
        .restore(&mut h.informer, state, &causes, 0)
        .unwrap();
    let [Write::Gap(at_once)] = &restored[..] else {
        unreachable!("one gap: {}", restored.len())
    };
    // written before the catch-up: from the record's end to the restore
    assert_eq!(at_once.reason, GapReason::NotRunning);
    assert_eq!(at_once.from_ms, 1_000);
    assert!(at_once.to_ms >= at_once.from_ms);
    h.step(true);
    let (_, kind, path) = h.request();
    assert_eq!(kind, RequestKind::Watch);
    assert!(path.contains("resourceVersion=10"), "{path}");
    assert!(
        h.tracker.final_watermark(&h.informer).is_none(),
        "not current yet"
    );
    let body = event("MODIFIED", pod("a", "ua", "11"))
        + &event(
            "BOOKMARK",
            json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"resourceVersion": "12"}}),
        );
    h.answer(RequestKind::Watch, &body, false);
    let writes = h.take();
    assert_eq!(
        summary(&writes),
        ["Updated a rv11 store11", "gap not-running"]
    );
    let (Write::Delta(update), Write::Gap(gap)) = (&writes[0], &writes[1]) else {
        unreachable!()
    };
    assert_eq!(update.previous, None, "not handed by this recorder");
    // the rest, from the restore to caught up, goes on where the first ended
    assert_eq!(gap.from_ms, at_once.to_ms);
    assert_eq!(
        summary(
            &h.tracker
                .final_watermark(&h.informer)
                .into_iter()
                .collect::<Vec<_>>()
        ),
        ["mark 12"]
    );
}

#[test]
fn a_restored_store_whose_version_expired_relists_and_writes_the_differences() {
    let mut h = Harness::new();
    let at_once = h
        .tracker
        .restore(
            &mut h.informer,
            recorded("10", 1_000),
            &GapCauses::starting(0, GapReason::DatabaseUnavailable),
            0,
        )
        .unwrap();
    assert_eq!(summary(&at_once), ["gap database-unavailable"]);
    h.step(true);
    let (id, ..) = h.request();
    let gone = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired"});
    h.input(Input::ResponseStarted {
        id,
        status: 410,
        retry_after_secs: None,
    });
    h.input(Input::BodyChunk {
        id,
        bytes: gone.to_string().as_bytes(),
    });
    h.input(Input::BodyEnd { id });
    h.tick_until(RequestKind::List);
    let body = list("30", &[pod("a", "ua", "5"), pod("c", "uc", "25")]);
    h.answer(RequestKind::List, &body, true);
    assert_eq!(
        summary(&h.take()),
        [
            "gap database-unavailable",
            "Replaced c rv25 store30",
            "Deleted b rv7 store30 tombstone"
        ]
    );
    let writes: Vec<Write> = h.take();
    assert!(writes.is_empty());
    assert!(h.tracker.shares_the_store(&h.informer));
}

#[test]
fn a_watch_cut_off_then_expired_is_an_unreachable_gap_and_a_resumed_one_none() {
    let mut h = Harness::new();
    h.informer.start(0);
    h.step(false);
    h.answer(RequestKind::List, &list("10", &[pod("a", "ua", "5")]), true);
    h.answer(
        RequestKind::Watch,
        &event("MODIFIED", pod("a", "ua", "11")),
        false,
    );
    h.take();

    // the connection drops; the watch resumes from its resourceVersion
    let (id, ..) = h.request();
    h.input(Input::Failed {
        id,
        message: "connection reset".into(),
    });
    assert!(!h.tracker.healthy(&h.informer));
    h.current = None;
    h.tick_until(RequestKind::Watch);
    let (_, _, path) = h.request();
    assert!(path.contains("resourceVersion=11"), "{path}");
    h.answer(
        RequestKind::Watch,
        &event("MODIFIED", pod("a", "ua", "12")),
        false,
    );
    assert_eq!(summary(&h.take()), ["Updated a rv12 store12"], "no gap");

    // cut off again, and by the time it connects the version is gone
    let (id, ..) = h.request();
    h.input(Input::Failed {
        id,
        message: "connection refused".into(),
    });
    h.current = None;
    h.tick_until(RequestKind::Watch);
    let (id, ..) = h.request();
    h.input(Input::ResponseStarted {
        id,
        status: 410,
        retry_after_secs: None,
    });
    h.input(Input::BodyEnd { id });
    h.tick_until(RequestKind::List);
    h.answer(
        RequestKind::List,
        &list("40", &[pod("a", "ua", "30")]),
        true,
    );
    assert_eq!(
        summary(&h.take()),
        ["gap unreachable", "Replaced a rv30 store40"]
    );
}
