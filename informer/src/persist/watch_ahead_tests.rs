//! Native tests of the watch that resumes ahead of the restore
//! ([`Informer::watch_ahead`]): the page asks for it once the faces are
//! shown, so the server's answer and the catching up come while the
//! chunks are read. Nothing it brings may touch the store or the history
//! before [`Informer::resume`]; then it all applies, in order, after the
//! stored deltas — as if the watch had been sent at the resume.

use super::tests::{flush, history_of, restore_with, small, watching, FakeDb};
use super::*;
use crate::test_support::*;
use crate::*;

/// Six pods listed at 10, updated to 11 and stored at 100.
fn stored() -> (Informer, FakeDb) {
    let (mut live, wid) = watching(cfg(), 6);
    chunk(&mut live, wid, &ev("MODIFIED", pod("p1", "11")), 50);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    flush(&mut writer, &live, &mut db, 100);
    (live, db)
}

fn rv_of(informer: &Informer, key: &str) -> Option<String> {
    informer
        .store()
        .get_by_key(key)
        .map(|o| o.resource_version.clone())
}

#[test]
fn what_the_watch_brings_ahead_of_the_restore_waits_and_then_applies_in_order() {
    let (live, db) = stored();
    let stored_history = history_of(&live);
    let (mut back, meta) = restore_with(&db, cfg(), 2_000, |informer, meta| {
        informer.watch_ahead(&meta.resource_version, meta.columns.clone(), 1_000);
        assert!(informer.is_watching_ahead());
        let (watch, kind, path) = one_send(&drain(informer));
        assert_eq!(kind, RequestKind::Watch);
        assert_eq!(query(&path)["resourceVersion"], "11");
        open(informer, watch, 200, 1_010);
        chunk(informer, watch, &ev("MODIFIED", pod("p2", "12")), 1_020);
        let mut lines = ev("DELETED", pod("p3", "13"));
        lines.extend(ev("ADDED", pod("p9", "14")));
        lines.extend(bookmark("15", false));
        chunk(informer, watch, &lines, 1_030);
        // held: the faces are untouched, nothing is queued to drain
        assert_eq!(rv_of(informer, "default/p2").as_deref(), Some("10"));
        assert!(rv_of(informer, "default/p3").is_some());
        assert!(rv_of(informer, "default/p9").is_none());
        assert!(!informer.has_queued_deltas(), "nothing to drain while held");
        assert!(!informer.has_synced() && !informer.is_warm());
        assert_eq!(informer.history().len(), 0);
    })
    .expect("restores");
    assert_eq!(meta.resource_version, "11");
    assert!(!back.is_watching_ahead());
    assert!(
        drain(&mut back).sends.is_empty(),
        "the watch ahead is the resumed watch: no second one"
    );
    // after the stored history, the watch's three changes, in order, as of
    // when they arrived (not the resume)
    let history = history_of(&back);
    assert_eq!(history[..stored_history.len()], stored_history[..]);
    let after: Vec<(String, String, Millis)> = history[stored_history.len()..]
        .iter()
        .map(|(_, at, kind, key, rv, ..)| (format!("{kind} {key}"), rv.clone(), *at))
        .collect();
    assert_eq!(
        after,
        [
            ("Updated default/p2".to_string(), "12".to_string(), 1_020),
            ("Deleted default/p3".to_string(), "13".to_string(), 1_030),
            ("Added default/p9".to_string(), "14".to_string(), 1_030),
        ]
    );
    assert_eq!(rv_of(&back, "default/p2").as_deref(), Some("12"));
    assert!(rv_of(&back, "default/p3").is_none());
    assert_eq!(back.store().len(), 6);
    assert!(
        back.has_synced() && !back.is_warm(),
        "the bookmark it held says caught up"
    );
    assert_eq!(back.history().gaps().count(), 0);
}

#[test]
fn a_watch_ahead_that_has_not_caught_up_leaves_the_restored_store_warm() {
    let (_, db) = stored();
    let mut ahead = None;
    let (mut back, _) = restore_with(&db, cfg(), 2_000, |informer, meta| {
        informer.watch_ahead(&meta.resource_version, meta.columns.clone(), 1_000);
        let (watch, ..) = one_send(&drain(informer));
        open(informer, watch, 200, 1_990);
        ahead = Some(watch);
    })
    .expect("restores");
    let watch = ahead.expect("watched ahead");
    assert!(back.is_warm() && !back.has_synced());
    chunk(&mut back, watch, &ev("MODIFIED", pod("p4", "12")), 2_100);
    assert_eq!(rv_of(&back, "default/p4").as_deref(), Some("12"));
    assert!(back.is_warm(), "an event is not yet caught up");
    let wake = drain(&mut back).wake.expect("a timer for the quiet watch");
    back.handle(Input::Tick, wake);
    assert!(!back.is_warm() && back.has_synced());
}

#[test]
fn a_410_ahead_of_the_restore_relists_after_it_and_records_the_gap() {
    let (_, db) = stored();
    let (back, _) = restore_with(&db, cfg(), 9_000, |informer, meta| {
        informer.watch_ahead(&meta.resource_version, meta.columns.clone(), 1_000);
        let (watch, ..) = one_send(&drain(informer));
        respond(
            informer,
            watch,
            410,
            &status_body(410, "Expired", "too old resource version: 11"),
            1_010,
        );
        let wake = drain(informer).wake.expect("a relist is scheduled");
        informer.handle(Input::Tick, wake);
        let (list, kind, _) = one_send(&drain(informer));
        assert_eq!(kind, RequestKind::List);
        let items: Vec<_> = (1..4).map(|i| pod(&format!("p{i}"), "90")).collect();
        respond(informer, list, 200, &list_body(&items, "95", None), 5_000);
        assert_eq!(
            informer.store().len(),
            6,
            "the relist waits for the restore"
        );
    })
    .expect("restores");
    assert!(!back.is_warm() && back.has_synced());
    assert_eq!(back.store().len(), 3);
    assert_eq!(back.status().relists, 1);
    let gaps: Vec<&history::Gap> = back.history().gaps().collect();
    assert_eq!(gaps.len(), 1, "the relist is marked: {gaps:?}");
    assert_eq!((gaps[0].from, gaps[0].to), (100, 9_000));
    let vanished = back
        .history()
        .iter()
        .find(|e| e.key() == "default/p5" && e.kind == DeltaType::Deleted)
        .expect("p5 vanished while the page was closed");
    assert!(vanished.tombstone);
}

#[test]
fn a_started_informer_does_not_watch_ahead() {
    let (mut live, _) = watching(cfg(), 2);
    live.watch_ahead("10", None, 1_000);
    assert!(!live.is_watching_ahead());
    assert!(drain(&mut live).sends.is_empty());
}
