//! The record's marks on both engines (SQLite and a real PostgreSQL): the
//! deltas of a range counted per bucket and type, by namespace when asked,
//! with the gaps over the range — what the page's timeline draws for the
//! time before it opened.

use crate::support;

use deltascope_history::{
    BucketCounts, GapReason, GapRecord, MarkGap, MarksQuery, Write, MAX_MARK_BUCKETS,
};
use deltascope_informer::DeltaType;
use support::{cluster, delta, fresh_store, pod};

/// Ten pods in `default` and two in `other` added at 1000 ms, each of the
/// ten updated once between 2000 and 2900, one deleted at 5000, and a gap
/// from 3000 to 3500.
async fn record(store: &deltascope_history::HistoryStore) {
    let mut writes = Vec::new();
    let mut rv = 100;
    let mut pods = Vec::new();
    for (i, namespace) in (0..12).map(|i| (i, if i < 10 { "default" } else { "other" })) {
        rv += 1;
        let object = pod(namespace, &format!("web-{i}"), rv, "Pending", 0);
        writes.push(delta(DeltaType::Added, &object, 1_000 + i, None));
        pods.push(object);
    }
    for (i, before) in pods.iter().take(10).enumerate() {
        rv += 1;
        let object = pod("default", &format!("web-{i}"), rv, "Running", 0);
        writes.push(delta(
            DeltaType::Updated,
            &object,
            2_000 + 100 * i as i64,
            Some(before),
        ));
    }
    rv += 1;
    let gone = pod("default", "web-0", rv, "Running", 0);
    writes.push(delta(DeltaType::Deleted, &gone, 5_000, None));
    writes.push(Write::Gap(GapRecord {
        resource: "pods".into(),
        from_ms: 3_000,
        to_ms: 3_500,
        reason: GapReason::Unreachable,
    }));
    store.write(&cluster(), &writes).await.expect("write");
}

fn query(namespace: Option<&str>, since_ms: i64, until_ms: i64, buckets: usize) -> MarksQuery {
    MarksQuery {
        resource: "pods".into(),
        namespace: namespace.map(str::to_string),
        since_ms,
        until_ms,
        buckets,
    }
}

async fn a_range_is_counted_per_bucket_and_type(engine: support::Engine) {
    let (store, _) = fresh_store(engine).await;
    record(&store).await;
    let marks = store
        .marks(&cluster(), &query(None, 0, 10_000, 10))
        .await
        .expect("marks")
        .expect("pods are recorded");
    let added = BucketCounts {
        added: 12,
        ..Default::default()
    };
    let updated = BucketCounts {
        updated: 10,
        ..Default::default()
    };
    let deleted = BucketCounts {
        deleted: 1,
        ..Default::default()
    };
    assert_eq!(marks.buckets, vec![(1, added), (2, updated), (5, deleted)]);
    assert_eq!(
        marks.gaps,
        vec![MarkGap {
            from_ms: 3_000,
            to_ms: 3_500,
            reason: GapReason::Unreachable
        }]
    );
    assert_eq!(marks.first_ms, Some(1_000));

    // One namespace; a range that ends before the gap and cuts the updates.
    let marks = store
        .marks(&cluster(), &query(Some("other"), 0, 2_500, 5))
        .await
        .unwrap()
        .unwrap();
    let two = BucketCounts {
        added: 2,
        ..Default::default()
    };
    assert_eq!(marks.buckets, vec![(2, two)], "1000 ms of 0..2500 in 5");
    assert!(marks.gaps.is_empty());
    let marks = store
        .marks(&cluster(), &query(None, 2_000, 2_500, 1))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(marks.buckets.len(), 1);
    assert_eq!(marks.buckets[0].1.total(), 5, "updates at 2000..2400");

    // Far more buckets than allowed are clamped, never an error.
    let marks = store
        .marks(&cluster(), &query(None, 0, 10_000, usize::MAX))
        .await
        .unwrap()
        .unwrap();
    assert!(marks.buckets.iter().all(|(b, _)| *b < MAX_MARK_BUCKETS));
    let total: u64 = marks.buckets.iter().map(|(_, c)| c.total()).sum();
    assert_eq!(total, 23);

    // A resource never recorded.
    let mut other = query(None, 0, 10_000, 10);
    other.resource = "services".into();
    assert_eq!(store.marks(&cluster(), &other).await.unwrap(), None);
}
on_both_engines!(counted, a_range_is_counted_per_bucket_and_type);
