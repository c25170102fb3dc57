//! Resource usage over time on both engines: windows written and read back
//! for one object and summed for an owner's pods, thinned to the points
//! asked for (each bucket's peak), the pods' gaps over the range, a window
//! stored twice kept once, and retention's cut.

use crate::support;

use std::time::Duration;

use deltascope_history::{
    ContainerUsage, GapReason, GapRecord, HistoryStore, Retention, UsageQuery, UsageRecord,
    UsageResource, UsageSample, UsageTarget, Write,
};
use support::{cluster, fresh_store};

fn pod_sample(name: &str, cpu: i64, memory: i64, owner: (&str, &str)) -> UsageSample {
    UsageSample {
        namespace: "shop".into(),
        name: name.into(),
        cpu_nanocores: cpu + 1_000,
        memory_bytes: memory + 4_096,
        containers: vec![
            ContainerUsage {
                name: "main".into(),
                cpu_nanocores: cpu,
                memory_bytes: memory,
            },
            ContainerUsage {
                name: "proxy".into(),
                cpu_nanocores: 1_000,
                memory_bytes: 4_096,
            },
        ],
        controller: owner.0.into(),
        workload: owner.1.into(),
    }
}

const WEB: (&str, &str) = ("ReplicaSet/web-7d9", "Deployment/web");
const NIGHTLY: (&str, &str) = ("Job/nightly-29", "CronJob/nightly");

/// Window `i` (at 10 s + i s) of three pods and a node.
fn window(i: i64) -> Vec<Write> {
    let at_ms = 10_000 + i * 1_000;
    let pods = UsageRecord {
        resource: UsageResource::Pods,
        at_ms,
        window_ms: 1_000,
        samples: vec![
            pod_sample("web-7d9-a", 10_000_000 + i, 50 << 20, WEB),
            pod_sample("web-7d9-b", 20_000_000 + i, 60 << 20, WEB),
            pod_sample("nightly-29-x", 5_000_000, 10 << 20, NIGHTLY),
        ],
    };
    let nodes = UsageRecord {
        resource: UsageResource::Nodes,
        at_ms,
        window_ms: 1_000,
        samples: vec![UsageSample {
            namespace: String::new(),
            name: "node-1".into(),
            cpu_nanocores: 900_000_000 + i,
            memory_bytes: 2 << 30,
            containers: Vec::new(),
            controller: String::new(),
            workload: String::new(),
        }],
    };
    vec![Write::Usage(pods), Write::Usage(nodes)]
}

fn query(target: UsageTarget, since_ms: i64, until_ms: i64, points: usize) -> UsageQuery {
    UsageQuery {
        resource: UsageResource::Pods,
        namespace: Some("shop".into()),
        target,
        since_ms,
        until_ms,
        points,
    }
}

async fn write_windows(store: &HistoryStore, windows: std::ops::Range<i64>) {
    let writes: Vec<Write> = windows.flat_map(window).collect();
    store.write(&cluster(), &writes).await.expect("written");
}

async fn samples_read_back_by_name_and_by_owner(engine: support::Engine) {
    let (store, _target) = fresh_store(engine).await;
    write_windows(&store, 0..3).await;
    // the same windows again (a sampler restarted within one): kept once
    write_windows(&store, 1..3).await;
    let name = UsageTarget::Name("web-7d9-a".into());
    let series = store
        .usage(&cluster(), &query(name.clone(), 10_000, 12_000, 100))
        .await
        .unwrap();
    // until is not in the range
    assert_eq!(series.points.len(), 2);
    assert!(!series.thinned);
    assert_eq!(series.window_ms, Some(1_000));
    let first = &series.points[0];
    assert_eq!(
        (first.at_ms, first.cpu_nanocores, first.memory_bytes),
        (10_000, 10_001_000, (50 << 20) + 4_096)
    );
    assert_eq!(first.pods, None);
    assert_eq!(first.containers.len(), 2);
    assert_eq!(first.containers[0].cpu_nanocores, 10_000_000);
    assert_eq!(series.points[1].containers[0].cpu_nanocores, 10_000_001);

    for owner in ["Deployment/web", "ReplicaSet/web-7d9"] {
        let series = store
            .usage(
                &cluster(),
                &query(UsageTarget::Owner(owner.into()), 0, 20_000, 100),
            )
            .await
            .unwrap();
        assert_eq!(series.points.len(), 3, "{owner}");
        for (i, point) in series.points.iter().enumerate() {
            let i = i as i64;
            assert_eq!(point.at_ms, 10_000 + i * 1_000);
            assert_eq!(point.pods, Some(2));
            assert_eq!(point.cpu_nanocores, 30_000_000 + 2 * i + 2_000);
            assert_eq!(point.memory_bytes, (110 << 20) + 8_192);
            assert!(point.containers.is_empty());
        }
    }
    let cron = UsageTarget::Owner("CronJob/nightly".into());
    let series = store
        .usage(&cluster(), &query(cron, 0, 20_000, 100))
        .await
        .unwrap();
    assert_eq!(series.points[0].pods, Some(1));
    let elsewhere = UsageQuery {
        namespace: Some("other".into()),
        ..query(UsageTarget::Owner("Deployment/web".into()), 0, 20_000, 100)
    };
    assert!(store
        .usage(&cluster(), &elsewhere)
        .await
        .unwrap()
        .points
        .is_empty());
    let node = UsageQuery {
        resource: UsageResource::Nodes,
        namespace: None,
        ..query(UsageTarget::Name("node-1".into()), 0, 20_000, 100)
    };
    let nodes = store.usage(&cluster(), &node).await.unwrap();
    assert_eq!(nodes.points.len(), 3);
    assert_eq!(nodes.points[2].cpu_nanocores, 900_000_002);
    assert!(nodes.points[2].containers.is_empty());
    let summary = store.usage_summary().await.unwrap().expect("samples");
    assert_eq!(summary.samples, 12);
    assert_eq!(
        (summary.first_ms, summary.last_ms),
        (Some(10_000), Some(12_000))
    );
    // usage is no resource's deltas: the summary lists no resource for it
    assert!(store.summary().await.unwrap().is_empty());
}
on_both_engines!(read_back, samples_read_back_by_name_and_by_owner);

async fn thinning_reports_each_buckets_peak(engine: support::Engine) {
    let (store, _target) = fresh_store(engine).await;
    write_windows(&store, 0..100).await;
    let name = UsageTarget::Name("web-7d9-b".into());
    let series = store
        .usage(&cluster(), &query(name, 10_000, 110_000, 10))
        .await
        .unwrap();
    assert!(series.thinned);
    assert_eq!(series.points.len(), 10);
    for (b, point) in series.points.iter().enumerate() {
        let last = b as i64 * 10 + 9;
        assert_eq!(point.at_ms, 10_000 + last * 1_000, "bucket {b}");
        // cpu grows with the window: the bucket's peak is its last
        assert_eq!(point.cpu_nanocores, 20_000_000 + last + 1_000);
        assert_eq!(point.containers[0].cpu_nanocores, 20_000_000 + last);
    }
    let owner = UsageTarget::Owner("Deployment/web".into());
    let summed = store
        .usage(&cluster(), &query(owner, 10_000, 110_000, 4))
        .await
        .unwrap();
    assert!(summed.thinned);
    assert_eq!(summed.points.len(), 4);
    assert_eq!(summed.points[3].cpu_nanocores, 30_000_000 + 2 * 99 + 2_000);
}
on_both_engines!(thinning, thinning_reports_each_buckets_peak);

async fn the_pods_gaps_come_with_their_usage(engine: support::Engine) {
    let (store, _target) = fresh_store(engine).await;
    write_windows(&store, 0..5).await;
    let gap = Write::Gap(GapRecord {
        resource: "pods".into(),
        from_ms: 11_500,
        to_ms: 12_500,
        reason: GapReason::NotRunning,
    });
    store.write(&cluster(), &[gap]).await.unwrap();
    let name = UsageTarget::Name("web-7d9-a".into());
    let series = store
        .usage(&cluster(), &query(name.clone(), 0, 20_000, 100))
        .await
        .unwrap();
    assert_eq!(series.gaps.len(), 1);
    assert_eq!(series.gaps[0].reason, GapReason::NotRunning);
    let before = store
        .usage(&cluster(), &query(name, 0, 11_000, 100))
        .await
        .unwrap();
    assert!(before.gaps.is_empty());
}
on_both_engines!(gaps, the_pods_gaps_come_with_their_usage);

async fn retention_cuts_old_samples(engine: support::Engine) {
    let (store, _target) = fresh_store(engine).await;
    write_windows(&store, 0..10).await;
    // now = 80 s, keep 65 s: the cut is at 15 s
    let retention = Retention {
        max_age: Some(Duration::from_secs(65)),
        max_bytes: None,
    };
    store.enforce(retention, 80_000).await.unwrap();
    let name = UsageTarget::Name("web-7d9-a".into());
    let series = store
        .usage(&cluster(), &query(name, 0, 100_000, 100))
        .await
        .unwrap();
    let times: Vec<i64> = series.points.iter().map(|p| p.at_ms).collect();
    assert_eq!(times, vec![15_000, 16_000, 17_000, 18_000, 19_000]);
    let summary = store.usage_summary().await.unwrap().expect("samples");
    assert_eq!(summary.samples, 5 * 4);
    assert_eq!(
        (summary.first_ms, summary.last_ms),
        (Some(15_000), Some(19_000))
    );
    store
        .enforce(
            Retention {
                max_age: Some(Duration::from_secs(60)),
                max_bytes: None,
            },
            100_000,
        )
        .await
        .unwrap();
    assert_eq!(store.usage_summary().await.unwrap(), None);
}
on_both_engines!(retention, retention_cuts_old_samples);

/// The figures in the report (`cargo test -p deltascope-history --test
/// integration -- --ignored --nocapture usage::figures`): bytes per stored sample in SQLite,
/// and the time to read 24 h of one pod's windows (one a minute) by name
/// and summed for its owner's 50 pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn figures() {
    let (store, target) = fresh_store(support::Engine::Sqlite).await;
    let deltascope_history::HistoryTarget::Sqlite(path) = &target else {
        unreachable!()
    };
    let before = store.used_bytes().await.unwrap();
    let pods = 50;
    let windows = 24 * 60;
    for batch in 0..windows / 60 {
        let writes: Vec<Write> = (batch * 60..batch * 60 + 60)
            .map(|w| {
                let samples = (0..pods)
                    .map(|p| {
                        pod_sample(
                            &format!("web-7d9c8f6b5-{p:05}"),
                            10_000_000 + w,
                            (50 << 20) + p,
                            WEB,
                        )
                    })
                    .collect();
                Write::Usage(UsageRecord {
                    resource: UsageResource::Pods,
                    at_ms: 1_700_000_000_000 + w * 60_000,
                    window_ms: 15_000,
                    samples,
                })
            })
            .collect();
        store.write(&cluster(), &writes).await.unwrap();
    }
    let samples = (pods * windows) as u64;
    let after = store.used_bytes().await.unwrap();
    println!(
        "{samples} samples: {} bytes each in SQLite (file {})",
        (after - before) / samples,
        path.display()
    );
    let day = (1_700_000_000_000, 1_700_000_000_000 + 86_400_000);
    for (target, label) in [
        (UsageTarget::Name("web-7d9c8f6b5-00007".into()), "one pod"),
        (
            UsageTarget::Owner("Deployment/web".into()),
            "its Deployment (50 pods)",
        ),
    ] {
        let query = UsageQuery {
            points: 2_000,
            ..query(target, day.0, day.1, 2_000)
        };
        let started = std::time::Instant::now();
        let series = store.usage(&cluster(), &query).await.unwrap();
        println!(
            "24 h of {label}: {} points in {:?}",
            series.points.len(),
            started.elapsed()
        );
        assert_eq!(series.points.len(), windows as usize);
    }
}
