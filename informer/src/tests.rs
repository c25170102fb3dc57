//! Cross-module tests of the informer (reflector + DeltaFIFO + store +
//! history) driven through the sans-IO API with a fake clock: scripted
//! request/response exchanges for each client-go reflector behaviour, and a
//! property test against a small simulated API server with fault injection.

use serde_json::{json, Value};

use super::*;

use crate::reflector::STREAMING_MAX;
use crate::test_support::*;

#[derive(Default, Clone)]
struct Recorder(std::rc::Rc<std::cell::RefCell<Vec<String>>>);

impl EventHandler for Recorder {
    fn on_add(&mut self, obj: &ObjectRef, is_in_initial_list: bool) {
        self.0.borrow_mut().push(format!(
            "add {} {} {}",
            obj.key, obj.resource_version, is_in_initial_list
        ));
    }
    fn on_update(&mut self, old: &ObjectRef, new: &ObjectRef) {
        self.0.borrow_mut().push(format!(
            "update {} {}->{}",
            new.key, old.resource_version, new.resource_version
        ));
    }
    fn on_delete(&mut self, obj: &DeltaObject) {
        self.0.borrow_mut().push(format!(
            "delete {} {} tombstone={}",
            obj.key(),
            obj.object().resource_version,
            obj.is_tombstone()
        ));
    }
}

// ---- list ------------------------------------------------------------------

#[test]
fn first_list_uses_rv_0_and_limit_then_watches_from_list_rv() {
    // client-go relistResourceVersion: "0" for the first list; watch from the list's RV
    let mut inf = Informer::new(cfg());
    inf.start(0);
    let (id, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::List);
    assert!(path.starts_with("/api/v1/pods?"), "{path}");
    let q = query(&path);
    assert_eq!(q["limit"], "500");
    assert_eq!(q["resourceVersion"], "0");
    assert_eq!(inf.status().phase.as_str(), "listing");
    respond(
        &mut inf,
        id,
        200,
        &list_body(&[pod("a", "5"), pod("b", "6")], "10", None),
        5,
    );
    assert!(inf.has_synced());
    assert!(inf.status().synced);
    assert_eq!(inf.store().len(), 2);
    assert_eq!(inf.status().last_resource_version, "10");
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    let q = query(&path);
    assert_eq!(q["watch"], "true");
    assert_eq!(q["resourceVersion"], "10");
    assert_eq!(q["allowWatchBookmarks"], "true");
    assert_eq!(inf.status().phase, Phase::Watching);
    assert_eq!(
        inf.store().digest(),
        digest_of([("default/a", "5"), ("default/b", "6")].into_iter())
    );
}

#[test]
fn namespace_and_selectors_are_percent_encoded() {
    let c = cfg()
        .namespace("kube-system")
        .labels("app=web,tier!=db")
        .fields("status.phase=Running");
    let mut inf = Informer::new(c);
    inf.start(0);
    let (_, _, path) = one_send(&drain(&mut inf));
    assert!(
        path.starts_with("/api/v1/namespaces/kube-system/pods?"),
        "{path}"
    );
    assert!(
        path.contains("labelSelector=app%3Dweb%2Ctier%21%3Ddb"),
        "{path}"
    );
    assert!(
        path.contains("fieldSelector=status.phase%3DRunning"),
        "{path}"
    );
    assert_eq!(query(&path)["labelSelector"], "app=web,tier!=db");
}

#[test]
fn paginated_list_follows_continue_and_replaces_once() {
    // client-go pager: limit + continue, the store sees one Replace
    let mut c = cfg();
    c.page_size = 2;
    let mut inf = Informer::new(c);
    inf.start(0);
    let (id, _, path) = one_send(&drain(&mut inf));
    assert_eq!(query(&path)["limit"], "2");
    respond(
        &mut inf,
        id,
        200,
        &list_body(&[pod("a", "1"), pod("b", "2")], "9", Some("tok/1=")),
        0,
    );
    assert_eq!(inf.store().len(), 0, "nothing applied before the last page");
    assert!(matches!(
        inf.status().phase,
        Phase::Listing {
            pages: 1,
            items: 2,
            ..
        }
    ));
    let (id, _, path) = one_send(&drain(&mut inf));
    let q = query(&path);
    assert_eq!(q["continue"], "tok/1=");
    assert!(
        !q.contains_key("resourceVersion"),
        "continue pages carry no RV: {path}"
    );
    respond(
        &mut inf,
        id,
        200,
        &list_body(&[pod("c", "3")], "9", None),
        0,
    );
    assert_eq!(inf.store().len(), 3);
    assert!(inf.has_synced());
    assert_eq!(inf.history().len(), 3);
    assert!(inf.history().iter().all(|e| e.kind == DeltaType::Replaced));
}

#[test]
fn gone_on_continue_restarts_list_with_empty_rv() {
    // client-go pager / reflector: 410 on a continue token restarts the list; RV "" (consistent read)
    let mut c = cfg();
    c.page_size = 1;
    let mut inf = Informer::new(c);
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(
        &mut inf,
        id,
        200,
        &list_body(&[pod("a", "1")], "9", Some("t")),
        0,
    );
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(
        &mut inf,
        id,
        410,
        &status_body(410, "Expired", "continue token expired"),
        0,
    );
    let (id, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::List);
    let q = query(&path);
    assert!(!q.contains_key("continue"));
    assert!(
        !q.contains_key("resourceVersion"),
        "RV \"\" is sent as no RV: {path}"
    );
    respond(
        &mut inf,
        id,
        200,
        &list_body(&[pod("b", "2")], "12", None),
        0,
    );
    assert_eq!(
        inf.store().list_keys().collect::<Vec<_>>(),
        vec!["default/b"]
    );
}

#[test]
fn list_expired_rv_relists_with_empty_rv_and_too_large_too() {
    // client-go isExpiredError / isTooLargeResourceVersionError on LIST -> setIsLastSyncResourceVersionUnavailable(true)
    for (code, body) in [
        (410, status_body(410, "Expired", "too old resource version")),
        (
            504,
            serde_json::to_vec(&json!({"kind":"Status","code":504,"reason":"Timeout","message":"Too large resource version: 20, current: 10",
            "details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}]}}))
            .unwrap(),
        ),
    ] {
        let mut inf = Informer::new(cfg());
        let (wid, _) = listed(&mut inf, &[pod("a", "1")], "5");
        // watch expires -> relist (after backoff) from the last seen RV
        open(&mut inf, wid, 200, 0);
        chunk(&mut inf, wid, &ev("ERROR", json!({"kind":"Status","code":410,"reason":"Expired","message":"too old"})), 2000);
        let d = drain(&mut inf);
        assert_eq!(d.cancels, vec![wid]);
        assert!(d.sends.is_empty());
        let wake = d.wake.unwrap();
        inf.handle(Input::Tick, wake);
        let (id, kind, path) = one_send(&drain(&mut inf));
        assert_eq!(kind, RequestKind::List);
        assert_eq!(query(&path)["resourceVersion"], "5", "relist from the last seen RV first");
        respond(&mut inf, id, code, &body, wake);
        let (id, kind, path) = one_send(&drain(&mut inf));
        assert_eq!(kind, RequestKind::List);
        assert!(!query(&path).contains_key("resourceVersion"), "then from \"\": {path}");
        respond(&mut inf, id, 200, &list_body(&[], "30", None), wake);
        assert_eq!(inf.store().len(), 0);
        assert_eq!(inf.status().relists, 2);
        // and the RV is usable again afterwards
        let (wid, _, path) = one_send(&drain(&mut inf));
        assert_eq!(query(&path)["resourceVersion"], "30");
        open(&mut inf, wid, 200, wake);
        chunk(&mut inf, wid, &ev("ERROR", json!({"kind":"Status","code":410,"reason":"Expired"})), wake + 10);
        let w = drain(&mut inf).wake.unwrap();
        inf.handle(Input::Tick, w);
        let (_, _, path) = one_send(&drain(&mut inf));
        assert_eq!(query(&path)["resourceVersion"], "30");
    }
}

// ---- watch -----------------------------------------------------------------

#[test]
fn watch_events_apply_in_order_and_every_event_advances_rv() {
    // client-go watchHandler: Added/Modified/Deleted applied, RV from every event incl. bookmarks
    let mut inf = Informer::new(cfg());
    let rec = Recorder::default();
    inf.add_handler(Box::new(rec.clone()));
    let mut first_reader = inf.change_cursor();
    let mut second_reader = inf.change_cursor();
    let (wid, path) = listed(&mut inf, &[pod("a", "1")], "5");
    let t: u64 = query(&path)["timeoutSeconds"].parse().unwrap();
    assert!((300..600).contains(&t));
    open(&mut inf, wid, 200, 0);
    let mut stream = Vec::new();
    stream.extend(ev("ADDED", pod("b", "6")));
    stream.extend(ev("MODIFIED", pod("a", "7")));
    stream.extend(ev("DELETED", pod("b", "8")));
    chunk(&mut inf, wid, &stream, 10);
    assert_eq!(inf.status().last_resource_version, "8");
    chunk(&mut inf, wid, &bookmark("42", false), 20);
    assert_eq!(inf.status().last_resource_version, "42");
    assert_eq!(inf.status().events, 4);
    assert_eq!(
        inf.store().list_keys().collect::<Vec<_>>(),
        vec!["default/a"]
    );
    assert_eq!(
        *rec.0.borrow(),
        vec![
            "add default/a 1 true",
            "add default/b 6 false",
            "update default/a 1->7",
            "delete default/b 8 tombstone=false"
        ]
    );
    let kinds: Vec<_> = inf
        .history()
        .iter()
        .map(|e| (e.kind, e.resource_version()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (DeltaType::Replaced, "1"),
            (DeltaType::Added, "6"),
            (DeltaType::Updated, "7"),
            (DeltaType::Deleted, "8")
        ]
    );
    let expected = vec![
        ("default/a", ChangeKind::Added),
        ("default/b", ChangeKind::Added),
        ("default/a", ChangeKind::Updated),
        ("default/b", ChangeKind::Deleted),
    ];
    // Two readers each see every change; a read moves only its own cursor.
    for cursor in [&mut first_reader, &mut second_reader] {
        let ChangeRead::Changes(changes) = inf.read_changes(cursor) else {
            panic!("no reader lags within the log's bound");
        };
        let seen: Vec<_> = changes.map(|c| (c.key.as_str(), c.kind)).collect();
        assert_eq!(seen, expected);
        assert!(matches!(inf.read_changes(cursor), ChangeRead::Changes(rest) if rest.len() == 0));
    }
}

#[test]
fn clean_close_rewatches_from_last_rv_without_relist() {
    // client-go: watch channel closed -> new watch from lastSyncResourceVersion, no LIST
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    chunk(&mut inf, wid, &bookmark("9", false), 100);
    inf.handle(Input::BodyEnd { id: wid }, 300_000);
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "9");
    assert_eq!(inf.status().relists, 0);
    assert_eq!(inf.status().watch_restarts, 1);
    // a long watch without events that closes cleanly is fine too
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    inf.handle(Input::BodyEnd { id: wid }, 5_000);
    let (_, kind, _) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
}

#[test]
fn very_short_watch_is_an_error_with_backoff_then_relist() {
    // client-go handleWatch: "very short watch" (<1s, 0 events) is an error
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 100);
    inf.handle(Input::BodyEnd { id: wid }, 500);
    let d = drain(&mut inf);
    assert!(d.sends.is_empty());
    let wake = d.wake.unwrap();
    assert!((500 + 800..=500 + 1000).contains(&wake), "{wake}");
    assert!(matches!(inf.status().phase, Phase::Backoff { until, .. } if until == wake));
    assert_eq!(inf.status().phase.as_str(), "backoff");
    assert!(matches!(
        inf.status().last_error,
        Some(ReflectorError::ShortWatch { .. })
    ));
    inf.handle(Input::Tick, wake - 1);
    let d = drain(&mut inf);
    assert!(d.sends.is_empty(), "no request before the backoff ends");
    assert_eq!(d.wake, Some(wake), "an early tick re-arms the timer");
    inf.handle(Input::Tick, wake);
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::List);
    assert_eq!(query(&path)["resourceVersion"], "5");
}

#[test]
fn too_many_requests_honours_retry_after() {
    // client-go: 429 on watch -> wait (Retry-After) and re-watch
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    inf.handle(
        Input::ResponseStarted {
            id: wid,
            status: 429,
            retry_after_secs: Some(7),
        },
        1_000,
    );
    inf.handle(
        Input::BodyChunk {
            id: wid,
            bytes: &status_body(429, "TooManyRequests", "slow down"),
        },
        1_000,
    );
    inf.handle(Input::BodyEnd { id: wid }, 1_000);
    let d = drain(&mut inf);
    assert_eq!(d.wake, Some(8_000));
    assert!(inf
        .status()
        .last_error
        .as_ref()
        .unwrap()
        .to_string()
        .contains("429"));
    inf.handle(Input::Tick, 7_999);
    assert!(drain(&mut inf).sends.is_empty());
    inf.handle(Input::Tick, 8_000);
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "5");
    // on a list too
    let mut inf = Informer::new(cfg());
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    inf.handle(
        Input::ResponseStarted {
            id,
            status: 429,
            retry_after_secs: Some(3),
        },
        10,
    );
    inf.handle(
        Input::Failed {
            id,
            message: "reset".into(),
        },
        10,
    );
    assert_eq!(drain(&mut inf).wake, Some(3_010));
}

#[test]
fn backoff_grows_caps_and_resets_after_two_healthy_minutes() {
    // client-go backoff manager: 800ms x2 up to 30s, reset after 2 min without failure
    let mut c = cfg();
    c.backoff.jitter = 0.0;
    let mut inf = Informer::new(c);
    inf.start(0);
    let mut now = 0;
    let mut delays = vec![];
    for _ in 0..8 {
        let (id, _, _) = one_send(&drain(&mut inf));
        inf.handle(
            Input::Failed {
                id,
                message: "connection refused".into(),
            },
            now,
        );
        let wake = drain(&mut inf).wake.unwrap();
        delays.push(wake - now);
        now = wake;
        inf.handle(Input::Tick, now);
    }
    assert_eq!(
        delays,
        vec![800, 1600, 3200, 6400, 12800, 25600, 30000, 30000]
    );
    let msg = inf.status().last_error.as_ref().unwrap().to_string();
    assert!(
        msg.contains("connection refused") && msg.contains("listing pods"),
        "{msg}"
    );
    // succeed, stay healthy for 2 minutes, fail again: back to 800ms
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(&mut inf, id, 200, &list_body(&[], "1", None), now);
    let (wid, _, _) = one_send(&drain(&mut inf));
    now += 120_000;
    inf.handle(
        Input::Failed {
            id: wid,
            message: "reset".into(),
        },
        now,
    );
    assert_eq!(drain(&mut inf).wake.unwrap() - now, 800);
}

#[test]
fn forbidden_is_an_error_phase_with_server_message_and_keeps_retrying() {
    // client-go keeps retrying a failing ListAndWatch with backoff (a role may be granted later)
    let mut inf = Informer::new(cfg());
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(
        &mut inf,
        id,
        403,
        &status_body(
            403,
            "Forbidden",
            "pods is forbidden: User \"alice\" cannot list resource \"pods\"",
        ),
        0,
    );
    match &inf.status().phase {
        Phase::Error { message } => {
            assert!(message.contains("403"), "{message}");
            assert!(message.contains("cannot list resource"), "{message}");
            assert_eq!(
                inf.status().last_error.as_ref().and_then(|e| e.status()),
                Some(403)
            );
        }
        p => panic!("{p:?}"),
    }
    assert_eq!(inf.status().phase.as_str(), "error");
    let wake = drain(&mut inf).wake.unwrap();
    inf.handle(Input::Tick, wake);
    let (id, kind, _) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::List);
    // 404 without a Status body: the reason from the status code, the body as the message
    respond(&mut inf, id, 404, b"404 page not found", wake);
    let msg = inf.status().last_error.as_ref().unwrap().to_string();
    assert!(msg.contains("404 Not Found: 404 page not found"), "{msg}");
}

#[test]
fn garbage_line_is_reported_and_rewatches_from_last_good_rv() {
    // robustness: an undecodable line never panics; re-watch from the last good RV
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    let mut s = ev("ADDED", pod("a", "6"));
    s.extend_from_slice(b"{not json\n");
    s.extend(ev("ADDED", pod("b", "7")));
    chunk(&mut inf, wid, &s, 10);
    let d = drain(&mut inf);
    assert_eq!(d.cancels, vec![wid]);
    assert_eq!(
        inf.store().len(),
        1,
        "events after the garbage line are ignored"
    );
    assert!(matches!(
        inf.status().last_error,
        Some(ReflectorError::Decode { .. })
    ));
    // late input for the cancelled request is ignored
    chunk(&mut inf, wid, &ev("ADDED", pod("c", "8")), 11);
    inf.handle(Input::BodyEnd { id: wid }, 11);
    assert_eq!(inf.store().len(), 1);
    inf.handle(Input::Tick, d.wake.unwrap());
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "6");
}

#[test]
fn line_too_long_is_a_clear_error() {
    let mut c = cfg();
    c.max_line_bytes = 64;
    let mut inf = Informer::new(c);
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    chunk(&mut inf, wid, &[b'x'; 100], 10);
    assert_eq!(drain(&mut inf).cancels, vec![wid]);
    let msg = inf.status().last_error.as_ref().unwrap().to_string();
    assert!(msg.contains("longer than the limit of 64 bytes"), "{msg}");
}

#[test]
fn network_failure_during_watch_rewatches_after_backoff() {
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    chunk(&mut inf, wid, &bookmark("6", false), 10);
    inf.handle(
        Input::Failed {
            id: wid,
            message: "network error".into(),
        },
        5_000,
    );
    let d = drain(&mut inf);
    assert!(d.sends.is_empty());
    inf.handle(Input::Tick, d.wake.unwrap());
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "6");
}

#[test]
fn relist_replaces_and_tombstones_missing_objects() {
    // client-go DeltaFIFO.Replace: Replaced for listed, Deleted(DeletedFinalStateUnknown) for missing
    let mut inf = Informer::new(cfg());
    let rec = Recorder::default();
    inf.add_handler(Box::new(rec.clone()));
    let (wid, _) = listed(&mut inf, &[pod("a", "1"), pod("b", "2")], "5");
    expire_and_relist(&mut inf, wid, &[pod("a", "3"), pod("c", "4")], "9");
    assert_eq!(
        inf.store().list_keys().collect::<Vec<_>>(),
        vec!["default/a", "default/c"]
    );
    let log = rec.0.borrow().clone();
    assert!(
        log.contains(&"delete default/b 2 tombstone=true".to_string()),
        "{log:?}"
    );
    assert!(
        log.contains(&"update default/a 1->3".to_string()),
        "{log:?}"
    );
    assert!(
        log.contains(&"add default/c 4 false".to_string()),
        "{log:?}"
    );
    let tomb = inf
        .history()
        .iter()
        .find(|e| e.kind == DeltaType::Deleted)
        .unwrap();
    assert!(tomb.tombstone);
    assert_eq!(tomb.key(), "default/b");
    assert!(inf.has_synced());
}

#[test]
fn stop_cancels_in_flight_and_sends_nothing_more() {
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    inf.stop();
    let d = drain(&mut inf);
    assert_eq!(d.cancels, vec![wid]);
    assert_eq!(inf.status().phase, Phase::Stopped);
    inf.handle(Input::BodyEnd { id: wid }, 10);
    inf.handle(Input::Tick, 1_000_000);
    let d = drain(&mut inf);
    assert!(d.sends.is_empty() && d.cancels.is_empty());
}

#[test]
fn resync_timer_emits_sync_for_every_object() {
    // client-go resyncChan -> DeltaFIFO.Resync -> Sync deltas -> OnUpdate(old, old)
    let mut inf = Informer::new(cfg().resync(Some(60_000)));
    let rec = Recorder::default();
    inf.add_handler(Box::new(rec.clone()));
    let (wid, _) = listed(&mut inf, &[pod("a", "1"), pod("b", "2")], "5");
    open(&mut inf, wid, 200, 0);
    // the resync is the informer's timeout
    inf.handle(Input::Tick, 59_999);
    assert_eq!(drain(&mut inf).wake, Some(60_000));
    assert_eq!(
        inf.history()
            .iter()
            .filter(|e| e.kind == DeltaType::Sync)
            .count(),
        0
    );
    inf.handle(Input::Tick, 60_000);
    assert_eq!(drain(&mut inf).wake, Some(120_000));
    assert_eq!(
        inf.history()
            .iter()
            .filter(|e| e.kind == DeltaType::Sync)
            .count(),
        2
    );
    assert!(rec
        .0
        .borrow()
        .contains(&"update default/a 1->1".to_string()));
    let mut from_start = ChangeCursor::default();
    let ChangeRead::Changes(mut changes) = inf.read_changes(&mut from_start) else {
        panic!("the log holds every change of this small test");
    };
    assert!(
        changes.all(|c| c.kind == ChangeKind::Added),
        "sync does not change the store"
    );
}

#[test]
fn late_handler_gets_existing_objects() {
    let mut inf = Informer::new(cfg());
    listed(&mut inf, &[pod("a", "1")], "5");
    let rec = Recorder::default();
    inf.add_handler(Box::new(rec.clone()));
    assert_eq!(*rec.0.borrow(), vec!["add default/a 1 false"]);
}

// ---- streaming list -----------------------------------------------------------

#[test]
fn streaming_list_ends_at_initial_events_end_bookmark_and_keeps_watching() {
    // client-go watchList: sendInitialEvents + NotOlderThan, sync at the annotated bookmark
    let mut inf = Informer::new(cfg().streaming_list(true));
    let rec = Recorder::default();
    inf.add_handler(Box::new(rec.clone()));
    inf.start(0);
    let (id, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    let q = query(&path);
    assert_eq!(q["sendInitialEvents"], "true");
    assert_eq!(q["resourceVersionMatch"], "NotOlderThan");
    assert_eq!(q["allowWatchBookmarks"], "true");
    assert!(!q.contains_key("resourceVersion"));
    open(&mut inf, id, 200, 0);
    let mut s = ev("ADDED", pod("a", "3"));
    s.extend(ev("ADDED", pod("b", "4")));
    chunk(&mut inf, id, &s, 10);
    assert_eq!(
        inf.store().len(),
        0,
        "initial events are collected, then replaced at once"
    );
    assert!(!inf.has_synced());
    assert!(matches!(
        inf.status().phase,
        Phase::Listing { items: 2, .. }
    ));
    chunk(&mut inf, id, &bookmark("7", true), 20);
    assert!(inf.has_synced());
    assert_eq!(inf.store().len(), 2);
    assert_eq!(inf.status().phase, Phase::Watching);
    assert_eq!(inf.status().last_resource_version, "7");
    chunk(&mut inf, id, &ev("MODIFIED", pod("a", "8")), 30);
    assert_eq!(
        inf.store()
            .get_by_key("default/a")
            .unwrap()
            .resource_version,
        "8"
    );
    let d = drain(&mut inf);
    assert!(
        d.sends.is_empty() && d.cancels.is_empty(),
        "same stream continues as the watch"
    );
    assert_eq!(
        *rec.0.borrow(),
        vec![
            "add default/a 3 true",
            "add default/b 4 true",
            "update default/a 3->8"
        ]
    );
    // a later clean close re-watches normally
    inf.handle(Input::BodyEnd { id }, 400_000);
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "8");
    assert!(!query(&path).contains_key("sendInitialEvents"));
}

#[test]
fn streaming_list_falls_back_on_rejection() {
    // servers without WatchList reject sendInitialEvents (422/400/403)
    for code in [400, 403, 422] {
        let mut inf = Informer::new(cfg().streaming_list(true));
        inf.start(0);
        let (id, _, _) = one_send(&drain(&mut inf));
        respond(
            &mut inf,
            id,
            code,
            &status_body(code, "Invalid", "sendInitialEvents is forbidden"),
            5,
        );
        let (id, kind, path) = one_send(&drain(&mut inf));
        assert_eq!(kind, RequestKind::List, "{code}");
        assert_eq!(query(&path)["resourceVersion"], "0");
        respond(
            &mut inf,
            id,
            200,
            &list_body(&[pod("a", "1")], "3", None),
            6,
        );
        assert!(inf.has_synced());
        assert_eq!(inf.status().relists, 0, "a fallback is not a relist");
    }
}

#[test]
fn streaming_list_falls_back_when_server_ignores_it() {
    // an older server ignores sendInitialEvents and just watches: no bookmark ever comes
    let mut inf = Informer::new(cfg().streaming_list(true));
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    open(&mut inf, id, 200, 0);
    chunk(&mut inf, id, &ev("ADDED", pod("a", "3")), 50);
    let d = drain(&mut inf);
    assert_eq!(d.wake, Some(3_000));
    // bytes keep arriving: the quiet period restarts
    chunk(&mut inf, id, &ev("ADDED", pod("b", "4")), 2_500);
    assert_eq!(drain(&mut inf).wake, Some(4_500));
    inf.handle(Input::Tick, 4_499);
    assert!(drain(&mut inf).sends.is_empty());
    inf.handle(Input::Tick, 4_500);
    let d = drain(&mut inf);
    assert_eq!(d.cancels, vec![id]);
    let (lid, kind, _) = one_send(&d);
    assert_eq!(kind, RequestKind::List);
    assert!(!inf.has_synced());
    respond(
        &mut inf,
        lid,
        200,
        &list_body(&[pod("a", "3")], "3", None),
        2_001,
    );
    assert!(inf.has_synced());
    // with no events at all, the fallback comes after streaming_fallback_after
    let mut inf = Informer::new(cfg().streaming_list(true));
    inf.start(0);
    let d = drain(&mut inf);
    assert_eq!(d.wake, Some(10_000));
    let (id, _, _) = one_send(&d);
    open(&mut inf, id, 200, 0);
    inf.handle(Input::Tick, 10_000);
    assert_eq!(one_send(&drain(&mut inf)).1, RequestKind::List);
}

#[test]
fn a_long_streaming_list_is_not_cut_short_while_events_keep_coming() {
    // 100,000 pods as Tables stream for longer than streaming_fallback_after
    // to a busy page: the list goes on while events arrive, and ends at the
    // initial-events-end bookmark without any List request
    let mut inf = Informer::new(cfg().streaming_list(true));
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    open(&mut inf, id, 200, 0);
    let mut now = 0;
    for i in 0..60u64 {
        now = 50 + i * 500;
        chunk(&mut inf, id, &ev("ADDED", pod(&format!("p{i}"), "3")), now);
        inf.handle(Input::Tick, now);
        let d = drain(&mut inf);
        assert!(d.sends.is_empty() && d.cancels.is_empty(), "at {now} ms");
    }
    assert!(now > 25_000);
    chunk(&mut inf, id, &bookmark("9", true), now + 100);
    let d = drain(&mut inf);
    assert!(d.sends.is_empty() && d.cancels.is_empty());
    assert!(inf.has_synced());
    assert_eq!(inf.store().len(), 60);
}

#[test]
fn a_streaming_list_falls_back_at_a_plain_bookmark_or_after_streaming_max() {
    // an older server ignoring sendInitialEvents sends its periodic
    // bookmark (no initial-events-end annotation) while it streams: that
    // is the sign, at once
    let mut inf = Informer::new(cfg().streaming_list(true));
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    open(&mut inf, id, 200, 0);
    chunk(&mut inf, id, &ev("ADDED", pod("a", "3")), 50);
    chunk(&mut inf, id, &bookmark("4", false), 700);
    let d = drain(&mut inf);
    assert_eq!(d.cancels, vec![id]);
    assert_eq!(one_send(&d).1, RequestKind::List);
    // one that never sends a bookmark, under churn that never goes quiet:
    // given up STREAMING_MAX after the start
    let mut inf = Informer::new(cfg().streaming_list(true));
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    open(&mut inf, id, 200, 0);
    let mut now = 0;
    while now + 1_000 < STREAMING_MAX {
        now += 1_000;
        chunk(
            &mut inf,
            id,
            &ev("MODIFIED", pod("a", &now.to_string())),
            now,
        );
        inf.handle(Input::Tick, now);
        assert!(drain(&mut inf).sends.is_empty(), "at {now} ms");
    }
    inf.handle(Input::Tick, STREAMING_MAX);
    let d = drain(&mut inf);
    assert_eq!(d.cancels, vec![id]);
    assert_eq!(one_send(&d).1, RequestKind::List);
}

#[test]
fn phase_strings_match_design_data_state() {
    assert_eq!(Phase::Idle.as_str(), "listing");
    assert_eq!(
        Phase::Listing {
            pages: 0,
            items: 0,
            bytes: 0
        }
        .as_str(),
        "listing"
    );
    assert_eq!(Phase::Watching.as_str(), "watching");
    assert_eq!(
        Phase::Backoff {
            until: 0,
            reason: String::new()
        }
        .as_str(),
        "backoff"
    );
    assert_eq!(
        Phase::Error {
            message: String::new()
        }
        .as_str(),
        "error"
    );
}

#[test]
fn watch_error_event_internal_error_rewatches_but_other_errors_relist() {
    // client-go watch(): IsInternalError / IsTooManyRequests retry the watch; other errors relist
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    chunk(&mut inf, wid, &bookmark("6", false), 1);
    chunk(
        &mut inf,
        wid,
        &ev(
            "ERROR",
            json!({"kind":"Status","code":500,"reason":"InternalError","message":"etcd hiccup"}),
        ),
        2,
    );
    let wake = drain(&mut inf).wake.unwrap();
    let msg = inf.status().last_error.as_ref().unwrap().to_string();
    assert!(msg.contains("500 InternalError: etcd hiccup"), "{msg}");
    inf.handle(Input::Tick, wake);
    let (wid, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "6");
    open(&mut inf, wid, 200, wake);
    chunk(
        &mut inf,
        wid,
        &ev(
            "ERROR",
            json!({"kind":"Status","code":400,"reason":"BadRequest","message":"odd"}),
        ),
        wake + 1,
    );
    let w2 = drain(&mut inf).wake.unwrap();
    inf.handle(Input::Tick, w2);
    assert_eq!(one_send(&drain(&mut inf)).1, RequestKind::List);
}

#[test]
fn body_end_without_headers_is_a_network_error() {
    let mut inf = Informer::new(cfg());
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    inf.handle(Input::BodyEnd { id }, 5);
    assert!(matches!(
        inf.status().last_error,
        Some(ReflectorError::Network { .. })
    ));
    assert_eq!(inf.status().phase.as_str(), "backoff");
}

#[test]
fn hung_watch_is_reopened_after_its_timeout() {
    // the server must close a watch after timeoutSeconds; one still open a minute later is presumed hung
    let mut inf = Informer::new(cfg());
    let (wid, path) = listed(&mut inf, &[], "5");
    let t: u64 = query(&path)["timeoutSeconds"].parse().unwrap();
    open(&mut inf, wid, 200, 0);
    chunk(&mut inf, wid, &bookmark("7", false), 1);
    let deadline = (t + 60) * 1000;
    inf.handle(Input::Tick, deadline - 1);
    assert!(drain(&mut inf).sends.is_empty());
    inf.handle(Input::Tick, deadline);
    let d = drain(&mut inf);
    assert_eq!(d.cancels, vec![wid]);
    let (_, kind, path) = one_send(&d);
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["resourceVersion"], "7");
    assert!(inf.status().last_error.is_none());
}

/// A recorded watch stream (as a real apiserver sends it) fed through the
/// whole informer split at every byte offset gives the same store and the
/// same history.
#[test]
fn recorded_stream_split_at_every_offset_gives_same_result() {
    let mut stream = Vec::new();
    stream.extend(ev("ADDED", pod("a", "11")));
    stream.extend(bookmark("12", false));
    stream.extend(ev("MODIFIED", pod("a", "13")));
    stream.extend(ev("ADDED", pod("ü-b", "14")));
    stream.extend(ev("DELETED", pod("a", "15")));
    // CRLF line ending and a final line without newline
    let mut last = ev("MODIFIED", pod("ü-b", "16"));
    last.pop();
    stream.extend_from_slice(b"\r\n");
    stream.extend_from_slice(&last);

    let run = |splits: &[usize]| {
        let mut inf = Informer::new(cfg());
        let (wid, _) = listed(&mut inf, &[], "10");
        open(&mut inf, wid, 200, 0);
        let mut prev = 0;
        for &s in splits {
            chunk(&mut inf, wid, &stream[prev..s], 1);
            prev = s;
        }
        chunk(&mut inf, wid, &stream[prev..], 1);
        inf.handle(Input::BodyEnd { id: wid }, 400_000);
        let hist: Vec<(DeltaType, String, String)> = inf
            .history()
            .iter()
            .map(|e| {
                (
                    e.kind,
                    e.key().to_string(),
                    e.resource_version().to_string(),
                )
            })
            .collect();
        assert!(
            inf.status().last_error.is_none(),
            "{:?}",
            inf.status().last_error
        );
        (
            inf.store().digest(),
            hist,
            inf.status().last_resource_version.clone(),
        )
    };
    let want = run(&[]);
    assert_eq!(want.1.len(), 5);
    assert_eq!(want.2, "16");
    for i in 0..=stream.len() {
        assert_eq!(run(&[i]), want, "split at {i}");
    }
    let mut rng = SplitMix64::new(3);
    for _ in 0..200 {
        let mut cuts: Vec<usize> = (0..rng.range(2, 20))
            .map(|_| rng.range(0, stream.len() as u64 + 1) as usize)
            .collect();
        cuts.sort_unstable();
        assert_eq!(run(&cuts), want, "cuts {cuts:?}");
    }
}

#[test]
fn share_key_normalises_and_request_ids_are_unique_across_informers() {
    let a = cfg().namespace("").labels(" ");
    let b = cfg();
    assert_eq!(a.share_key(), b.share_key());
    assert_ne!(cfg().namespace("x").share_key(), b.share_key());
    let nodes = InformerConfig::new(ResourceRef::new("", "v1", "nodes", false)).namespace("x");
    assert_eq!(nodes.share_key().namespace, None);
    let mut i1 = Informer::new(cfg());
    let mut i2 = Informer::new(cfg());
    i1.start(0);
    i2.start(0);
    assert_ne!(one_send(&drain(&mut i1)).0, one_send(&drain(&mut i2)).0);
}

#[test]
fn streaming_relist_after_expiry_drops_the_expired_rv() {
    // client-go watchList: after an expired RV the next attempt asks for RV "" (rewatchResourceVersion)
    let mut inf = Informer::new(cfg().streaming_list(true));
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    open(&mut inf, id, 200, 0);
    chunk(&mut inf, id, &bookmark("7", true), 10);
    assert!(inf.has_synced());
    chunk(
        &mut inf,
        id,
        &ev(
            "ERROR",
            json!({"kind":"Status","code":410,"reason":"Expired"}),
        ),
        20,
    );
    let wake = drain(&mut inf).wake.unwrap();
    inf.handle(Input::Tick, wake);
    let (id, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert_eq!(query(&path)["sendInitialEvents"], "true");
    assert_eq!(
        query(&path)["resourceVersion"],
        "7",
        "first retry: not older than the last seen RV"
    );
    respond(
        &mut inf,
        id,
        410,
        &status_body(410, "Expired", "too old"),
        wake,
    );
    let wake = drain(&mut inf).wake.unwrap();
    inf.handle(Input::Tick, wake);
    let (_, kind, path) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    assert!(!query(&path).contains_key("resourceVersion"), "{path}");
    assert!(inf.has_synced(), "a relist never un-syncs");
}

#[test]
fn resource_versions_are_opaque_strings() {
    // resourceVersions are opaque: never compared as numbers; arrival order is the truth
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[pod("a", "zz-9")], "b10");
    open(&mut inf, wid, 200, 0);
    chunk(&mut inf, wid, &ev("MODIFIED", pod("a", "b9")), 1);
    chunk(&mut inf, wid, &ev("MODIFIED", pod("a", "a100")), 2);
    assert_eq!(
        inf.store()
            .get_by_key("default/a")
            .unwrap()
            .resource_version,
        "a100"
    );
    assert_eq!(inf.status().last_resource_version, "a100");
    inf.handle(Input::BodyEnd { id: wid }, 400_000);
    let (_, _, path) = one_send(&drain(&mut inf));
    assert_eq!(query(&path)["resourceVersion"], "a100");
}

#[test]
fn broken_list_body_and_mid_body_failure_apply_nothing_and_relist() {
    let mut inf = Informer::new(cfg());
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(&mut inf, id, 200, b"{\"items\":[", 0);
    assert!(matches!(
        inf.status().last_error,
        Some(ReflectorError::Decode { op: Op::List, .. })
    ));
    let wake = drain(&mut inf).wake.unwrap();
    inf.handle(Input::Tick, wake);
    let (id, kind, _) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::List);
    open(&mut inf, id, 200, wake);
    let body = list_body(&[pod("a", "1")], "5", None);
    chunk(&mut inf, id, &body[..body.len() / 2], wake);
    assert!(
        matches!(inf.status().phase, Phase::Listing { bytes, .. } if bytes == (body.len() / 2) as u64)
    );
    inf.handle(
        Input::Failed {
            id,
            message: "connection reset".into(),
        },
        wake,
    );
    assert_eq!(inf.store().len(), 0);
    assert!(!inf.has_synced());
    assert!(matches!(
        inf.status().last_error,
        Some(ReflectorError::Network { op: Op::List, .. })
    ));
    let wake2 = drain(&mut inf).wake.unwrap();
    assert!(wake2 - wake >= 1600, "second failure backs off longer");
}

#[test]
fn unknown_request_ids_are_ignored_in_every_state() {
    let mut inf = Informer::new(cfg());
    let bogus = RequestId(u64::MAX);
    let poke = |inf: &mut Informer| {
        inf.handle(
            Input::ResponseStarted {
                id: bogus,
                status: 500,
                retry_after_secs: None,
            },
            1,
        );
        inf.handle(
            Input::BodyChunk {
                id: bogus,
                bytes: b"garbage\n",
            },
            1,
        );
        inf.handle(Input::BodyEnd { id: bogus }, 1);
        inf.handle(
            Input::Failed {
                id: bogus,
                message: "x".into(),
            },
            1,
        );
    };
    poke(&mut inf); // idle
    assert_eq!(inf.status().phase, Phase::Idle);
    inf.start(0);
    drain(&mut inf);
    poke(&mut inf); // listing
    assert!(matches!(inf.status().phase, Phase::Listing { .. }));
    let mut inf = Informer::new(cfg());
    let (wid, _) = listed(&mut inf, &[], "5");
    open(&mut inf, wid, 200, 0);
    poke(&mut inf); // watching
    assert_eq!(inf.status().phase, Phase::Watching);
    assert!(inf.status().last_error.is_none());
}

#[test]
fn history_retention_is_reported_for_the_stats_hook() {
    // the page's history-stats hook: data-deltas = recorded(), data-dropped = dropped()
    let mut c = cfg();
    c.history.max_deltas = 3;
    let mut inf = Informer::new(c);
    let (wid, _) = listed(&mut inf, &[pod("a", "1"), pod("b", "2")], "5");
    open(&mut inf, wid, 200, 0);
    for rv in 6..10 {
        chunk(
            &mut inf,
            wid,
            &ev("MODIFIED", pod("a", &rv.to_string())),
            rv,
        );
    }
    assert_eq!(inf.history().recorded(), 6);
    assert_eq!(inf.history().dropped(), 3);
    assert_eq!(inf.history().len(), 3);
    let versions: Vec<_> = inf
        .history()
        .versions("default/a")
        .map(|e| e.resource_version().to_string())
        .collect();
    assert_eq!(versions, vec!["7", "8", "9"]);
    // time range for the timeline: entries recorded at now = 8 and 9
    assert_eq!(inf.history().range(8, 10).count(), 2);
    let last = inf.history().iter().last().unwrap().seq;
    let patch = serde_json::to_value(inf.history().diff_with_previous(last).unwrap()).unwrap();
    assert_eq!(patch[0]["path"], "/metadata/resourceVersion");
    assert_eq!(patch[0]["value"], "9");
}

#[test]
fn informers_with_the_same_seed_jitter_differently_per_resource() {
    // no thundering herd: many informers in one page must not retry in lockstep
    let fail_once = |res: ResourceRef| {
        let mut inf = Informer::new(InformerConfig::new(res).streaming_list(false).seed(1));
        inf.start(0);
        let (id, _, _) = one_send(&drain(&mut inf));
        inf.handle(
            Input::Failed {
                id,
                message: "refused".into(),
            },
            0,
        );
        drain(&mut inf).wake.unwrap()
    };
    let a = fail_once(pods());
    let b = fail_once(ResourceRef::new("", "v1", "configmaps", true));
    assert_ne!(a, b);
    assert_eq!(a, fail_once(pods()), "still reproducible from the seed");
}

#[test]
fn unauthorized_says_what_to_do() {
    let mut inf = Informer::new(cfg());
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(
        &mut inf,
        id,
        401,
        &status_body(401, "Unauthorized", "Unauthorized"),
        0,
    );
    let msg = match &inf.status().phase {
        Phase::Error { message } => message.clone(),
        p => panic!("{p:?}"),
    };
    assert!(
        msg.starts_with("listing pods failed: HTTP 401 Unauthorized"),
        "{msg}"
    );
    assert!(inf
        .status()
        .last_error
        .as_ref()
        .is_some_and(|e| e.needs_user()));
    assert!(drain(&mut inf).wake.is_some(), "keeps retrying");
}

#[test]
fn a_list_applied_in_steps_ends_as_the_same_store_and_history_and_syncs_last() {
    let items: Vec<Value> = (0..100).map(|i| pod(&format!("p{i:03}"), "1")).collect();
    let mut whole = Informer::new(cfg());
    listed(&mut whole, &items, "7");
    let mut stepped = Informer::new(cfg());
    stepped.set_drain_step(30);
    stepped.start(0);
    let (id, _, _) = one_send(&drain(&mut stepped));
    respond(&mut stepped, id, 200, &list_body(&items, "7", None), 0);
    let mut steps = 1;
    while stepped.has_queued_deltas() {
        assert!(
            !stepped.has_synced(),
            "not synced while the list is still queued"
        );
        assert!(stepped.store().len() < 100);
        stepped.drain(0);
        steps += 1;
    }
    assert_eq!(steps, 7, "100 keys queued 30 a step, then popped 30 a step");
    assert!(stepped.has_synced());
    assert_eq!(stepped.store().digest(), whole.store().digest());
    let kinds = |inf: &Informer| -> Vec<(String, DeltaType)> {
        inf.history()
            .iter()
            .map(|e| (e.key().to_string(), e.kind))
            .collect()
    };
    assert_eq!(kinds(&stepped), kinds(&whole));
    // the watch was asked for once the list was in (as without steps)
    let (_, kind, _) = one_send(&drain(&mut stepped));
    assert_eq!(kind, RequestKind::Watch);
}

#[test]
fn watch_events_behind_a_queued_list_keep_their_order() {
    let items: Vec<Value> = (0..50).map(|i| pod(&format!("p{i:03}"), "1")).collect();
    let mut inf = Informer::new(cfg());
    inf.set_drain_step(10);
    inf.start(0);
    let (id, _, _) = one_send(&drain(&mut inf));
    respond(&mut inf, id, 200, &list_body(&items, "7", None), 0);
    let (wid, kind, _) = one_send(&drain(&mut inf));
    assert_eq!(kind, RequestKind::Watch);
    open(&mut inf, wid, 200, 0);
    // an update of a listed pod and a delete of another arrive while queued
    let mut lines = ev("MODIFIED", pod("p049", "8"));
    lines.extend(ev("DELETED", pod("p000", "9")));
    chunk(&mut inf, wid, &lines, 0);
    while inf.has_queued_deltas() {
        inf.drain(0);
    }
    assert!(inf.has_synced());
    assert_eq!(inf.store().len(), 49);
    assert_eq!(
        inf.store()
            .get_by_key("default/p049")
            .map(|o| o.resource_version.clone()),
        Some("8".to_string())
    );
    let last: Vec<(String, DeltaType)> = inf
        .history()
        .iter()
        .rev()
        .take(2)
        .map(|e| (e.key().to_string(), e.kind))
        .collect();
    assert!(
        last.contains(&("default/p000".to_string(), DeltaType::Deleted))
            && last.contains(&("default/p049".to_string(), DeltaType::Updated)),
        "{last:?}"
    );
}

#[test]
fn a_relist_queued_in_steps_tombstones_exactly_what_one_replace_does() {
    // listed a..e, then (after a 410) a relist without b and d, with f new
    let first: Vec<Value> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| pod(n, "1"))
        .collect();
    let second: Vec<Value> = ["a", "c", "e", "f"].iter().map(|n| pod(n, "2")).collect();
    let run = |step: Option<usize>| {
        let mut inf = Informer::new(cfg());
        let rec = Recorder::default();
        inf.add_handler(Box::new(rec.clone()));
        if let Some(step) = step {
            inf.set_drain_step(step);
        }
        let (wid, _) = listed(&mut inf, &first, "5");
        while inf.has_queued_deltas() {
            inf.drain(0);
        }
        let wake = expire_and_relist(&mut inf, wid, &second, "9");
        while inf.has_queued_deltas() {
            inf.drain(wake);
        }
        let history: Vec<(String, DeltaType, bool)> = inf
            .history()
            .iter()
            .map(|e| (e.key().to_string(), e.kind, e.tombstone))
            .collect();
        let log = rec.0.borrow().clone();
        (inf.store().digest(), history, log, inf.has_synced())
    };
    let whole = run(None);
    for step in [1, 2, 3] {
        assert_eq!(run(Some(step)), whole, "step {step}");
    }
    assert!(whole
        .1
        .contains(&("default/b".to_string(), DeltaType::Deleted, true)));
    assert!(whole.3);
}
