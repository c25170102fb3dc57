//! Native tests of a new base's snapshot taken a step per poll
//! (`writer::snapshot`): the page's thread gets a yield between steps
//! (no long task), and what is stored is still exactly the store as it was
//! when the snapshot ended, whatever changed between the steps.

use super::tests::{flush, restore, small, watching, FakeDb};
use super::*;
use crate::test_support::*;
use crate::*;

/// Key → resourceVersion of what `informer` holds.
fn held(informer: &Informer) -> Vec<(String, String)> {
    informer
        .store()
        .list()
        .map(|o| (o.key.clone(), o.resource_version.clone()))
        .collect::<std::collections::BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

#[test]
fn a_base_snapshot_and_its_first_chunk_are_two_polls() {
    // the snapshot of 30k pods and the encoding of their first chunk were
    // one 38 ms task in the page
    let (live, _) = watching(cfg(), 8);
    let mut writer = StoreWriter::new("core/v1/pods", false);
    assert!(writer.poll(&live, 100, 7).is_none(), "the snapshot only");
    assert!(writer.encoding(), "and more to do at once");
    let batch = writer.poll(&live, 100, 7).expect("then the first chunk");
    assert_eq!(batch.chunks.len(), 1, "the base's first chunk");
    assert!(batch.meta.is_none(), "the base is not done yet");
}

#[test]
fn a_snapshot_taken_over_several_polls_is_the_store_when_it_ended() {
    let (mut live, wid) = watching(cfg(), 8);
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    // three of eight keys looked up (p0, p1, p2)
    assert!(writer.poll(&live, 100, 7).is_none());
    assert!(writer.encoding(), "the snapshot goes on");
    // between the steps: a key looked up changes and one goes, a key not
    // looked up yet goes, and keys come that were not there when it began
    // (one before every key, one among those looked up, one after all)
    chunk(&mut live, wid, &ev("MODIFIED", pod("p1", "11")), 110);
    chunk(&mut live, wid, &ev("DELETED", pod("p0", "12")), 111);
    chunk(&mut live, wid, &ev("DELETED", pod("p6", "13")), 112);
    chunk(&mut live, wid, &ev("ADDED", pod("a0", "14")), 113);
    chunk(&mut live, wid, &ev("ADDED", pod("p10", "15")), 114);
    chunk(&mut live, wid, &ev("ADDED", pod("z9", "16")), 115);
    assert!(writer.poll(&live, 120, 7).is_none(), "p3, p4, p5");
    chunk(&mut live, wid, &ev("MODIFIED", pod("p4", "17")), 121);
    let mut db = FakeDb::default();
    flush(&mut writer, &live, &mut db, 130);
    let (back, _) = restore(&db, cfg(), 1_000).expect("restores");
    assert_eq!(held(&back), held(&live));
    assert_eq!(back.store().digest(), live.store().digest());
}

#[test]
fn a_snapshot_whose_changes_were_dropped_looks_the_store_up_again() {
    let (mut live, wid) = watching(cfg(), 8);
    // an informer nobody reads incrementally keeps no change log
    live.set_change_log_capacity(0);
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    assert!(writer.poll(&live, 100, 7).is_none());
    chunk(&mut live, wid, &ev("MODIFIED", pod("p1", "11")), 110);
    chunk(&mut live, wid, &ev("DELETED", pod("p6", "12")), 111);
    let mut db = FakeDb::default();
    flush(&mut writer, &live, &mut db, 130);
    let (back, _) = restore(&db, cfg(), 1_000).expect("restores");
    assert_eq!(held(&back), held(&live));
}

#[test]
fn a_snapshot_left_far_behind_begins_again_a_step_per_poll() {
    let (mut live, wid) = watching(cfg(), 8);
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    assert!(writer.poll(&live, 100, 7).is_none(), "p0, p1, p2");
    // more changes than four steps (of 3 keys) would patch in: a relist's
    // worth, for this store
    let mut rv = 10;
    for round in 0..2 {
        for i in 0..8 {
            rv += 1;
            let at = 110 + round * 8 + i;
            chunk(
                &mut live,
                wid,
                &ev("MODIFIED", pod(&format!("p{i}"), &rv.to_string())),
                at,
            );
        }
    }
    assert!(writer.poll(&live, 130, 7).is_none(), "p3, p4, p5");
    assert!(
        writer.poll(&live, 131, 7).is_none(),
        "p6, p7: it begins again"
    );
    // begun again, it looks the store up a step per poll as before (looked
    // up at once, this poll would hand out the base's first chunk)
    assert!(writer.poll(&live, 132, 7).is_none(), "p0, p1, p2 again");
    assert!(writer.encoding(), "the snapshot goes on");
    let mut db = FakeDb::default();
    flush(&mut writer, &live, &mut db, 140);
    let (back, _) = restore(&db, cfg(), 1_000).expect("restores");
    assert_eq!(held(&back), held(&live));
    assert_eq!(back.store().digest(), live.store().digest());
}
