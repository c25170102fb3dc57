//! Tests of `timeline` and of the `delta_list` over the same histories, in
//! their own file to keep those readable.

use super::*;
use crate::informer::{HistoryConfig, KubeObject};
use crate::model::delta_list::DeltaRow;
use crate::model::delta_select::{select_deltas, select_deltas_across, DeltaQuery, DeltaRef};
use serde_json::json;
use std::sync::Arc;

fn history(entries: &[(Millis, DeltaType, &str)]) -> History {
    let mut history = History::new(HistoryConfig::default());
    for (i, (at, kind, key)) in entries.iter().enumerate() {
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let mut meta = json!({"name": name, "resourceVersion": (i + 1).to_string()});
        if !namespace.is_empty() {
            meta["namespace"] = json!(namespace);
        }
        let object = KubeObject::from_value(json!({"metadata": meta})).expect("object");
        history.record(*at, *kind, Arc::new(object), false, key);
    }
    history
}

fn input(range: (Millis, Millis), mode: LaneMode) -> TimelineInput<'static> {
    TimelineInput {
        gaps: &[],
        relists: &[],
        range,
        mode,
        resource: "pods",
    }
}

#[test]
fn live_follow_tracks_now_and_pauses_when_the_user_looks_back() {
    let live = Viewport::default();
    assert_eq!(live.resolve(Some(1_000), 10_000), (1_000, 10_000));
    assert_eq!(live.resolve(None, 10_000), (10_000, 11_000));
    // Zooming in around the middle ends before now: paused.
    let zoomed = Viewport::zoomed((0, 10_000), 0.5, 0.5, 10_000);
    assert_eq!(
        zoomed,
        Viewport::Fixed {
            start: 2_500,
            end: 7_500
        }
    );
    assert!(!zoomed.is_live());
    // Zooming in at the right edge keeps following, with the new span.
    let at_edge = Viewport::zoomed((0, 10_000), 0.5, 1.0, 10_000);
    assert_eq!(at_edge, Viewport::Live { span: Some(5_000) });
    assert_eq!(at_edge.resolve(Some(0), 20_000), (15_000, 20_000));
    // Panning back pauses; panning forward to now resumes.
    let back = Viewport::panned((5_000, 10_000), -0.4, 10_000);
    assert_eq!(
        back,
        Viewport::Fixed {
            start: 3_000,
            end: 8_000
        }
    );
    let forward = Viewport::panned((3_000, 8_000), 2.0, 10_000);
    assert_eq!(forward, Viewport::Live { span: Some(5_000) });
    // Never before time zero, never narrower than the minimum span.
    assert_eq!(
        Viewport::panned((1_000, 2_000), -5.0, 10_000),
        Viewport::Fixed {
            start: 0,
            end: 1_000
        }
    );
    let tiny = Viewport::zoomed((1_000, 1_100), 0.001, 0.0, 10_000);
    assert_eq!(
        tiny,
        Viewport::Fixed {
            start: 1_000,
            end: 1_000 + MIN_SPAN_MS
        }
    );
}

#[test]
fn lanes_split_by_namespace_and_type_and_count_only_the_range() {
    let h = history(&[
        (0, DeltaType::Replaced, "a/p1"),
        (0, DeltaType::Replaced, "b/p2"),
        (500, DeltaType::Updated, "a/p1"),
        (999, DeltaType::Deleted, "b/p2"),
        (1_000, DeltaType::Added, "node-1"),
    ]);
    let one = TimelineData::build(&h, input((0, 1_000), LaneMode::Resource));
    assert_eq!(one.lanes.len(), 1);
    assert_eq!(one.in_view, 4, "the delta at 1000 is outside [0, 1000)");
    assert_eq!(one.total, 5);
    assert_eq!(one.lanes[0].columns[0][type_index(DeltaType::Replaced)], 2);
    assert_eq!(one.lanes[0].columns[300][type_index(DeltaType::Updated)], 1);
    assert_eq!(
        one.lanes[0].columns[COLUMNS - 1][type_index(DeltaType::Deleted)],
        1
    );

    let by_ns = TimelineData::build(&h, input((0, 2_000), LaneMode::Namespace));
    let names: Vec<(&str, u64)> = by_ns
        .lanes
        .iter()
        .map(|l| (l.name.as_str(), l.count))
        .collect();
    assert_eq!(names, [("a", 2), ("b", 2), ("(cluster)", 1)]);

    let by_type = TimelineData::build(&h, input((0, 2_000), LaneMode::Type));
    let counts: Vec<(&str, u64)> = by_type
        .lanes
        .iter()
        .map(|l| (l.name.as_str(), l.count))
        .collect();
    assert_eq!(
        counts,
        [
            ("Deleted", 1),
            ("Updated", 1),
            ("Added", 1),
            ("Sync", 0),
            ("Replaced", 2)
        ]
    );
}

#[test]
fn many_namespaces_share_an_other_lane() {
    let keys: Vec<String> = (0..12).map(|i| format!("ns{i:02}/p")).collect();
    let entries: Vec<(Millis, DeltaType, &str)> = keys
        .iter()
        .enumerate()
        .flat_map(|(i, k)| {
            std::iter::repeat_n((i as Millis, DeltaType::Updated, k.as_str()), 12 - i)
        })
        .collect();
    let h = history(&entries);
    let data = TimelineData::build(&h, input((0, 100), LaneMode::Namespace));
    assert_eq!(data.lanes.len(), MAX_LANES);
    assert_eq!(data.lanes[0].name, "ns00");
    assert_eq!(data.lanes[MAX_LANES - 1].name, "5 other namespaces");
    assert_eq!(data.lanes[MAX_LANES - 1].count, 5 + 4 + 3 + 2 + 1);
    assert_eq!(data.in_view, h.len() as u64);
}

#[test]
fn the_delta_list_filters_and_is_newest_first() {
    let h = history(&[
        (10, DeltaType::Added, "shop/web-1"),
        (20, DeltaType::Added, "data/db-1"),
        (30, DeltaType::Updated, "shop/web-1"),
        (40, DeltaType::Deleted, "shop/WEB-2"),
        (50, DeltaType::Updated, "data/db-1"),
    ]);
    let all = select_deltas(&h, &DeltaQuery::default());
    assert_eq!(all, [4, 3, 2, 1, 0]);
    let range = DeltaQuery {
        from: 20,
        to: 50,
        ..DeltaQuery::default()
    };
    assert_eq!(select_deltas(&h, &range), [3, 2, 1]);
    let shop = DeltaQuery {
        namespace: Some("shop".into()),
        ..DeltaQuery::default()
    };
    assert_eq!(select_deltas(&h, &shop), [3, 2, 0]);
    let text = DeltaQuery {
        text: "web".into(),
        ..DeltaQuery::default()
    };
    assert_eq!(select_deltas(&h, &text), [3, 2, 0], "case-insensitive");
    let mut types = [false; 5];
    types[type_index(DeltaType::Updated)] = true;
    let updates = DeltaQuery {
        types,
        ..DeltaQuery::default()
    };
    assert_eq!(select_deltas(&h, &updates), [4, 2]);
}

#[test]
fn a_delta_row_says_what_its_entry_is_and_how_long_ago() {
    let h = history(&[
        (10, DeltaType::Added, "shop/web-1"),
        (2_500, DeltaType::Deleted, "shop/web-1"),
    ]);
    let entry = h.get(1).expect("held");
    let row = DeltaRow::of(7, "pods".into(), entry, 4_000);
    assert_eq!(
        (
            row.source,
            row.resource.as_str(),
            row.seq,
            row.when.as_str()
        ),
        (7, "pods", 1, "1.5 s ago")
    );
    assert_eq!(
        (
            row.kind.as_str(),
            row.key.as_str(),
            row.resource_version.as_str()
        ),
        ("Deleted", "shop/web-1", "2")
    );
    assert!(!row.tombstone && row.managers.is_empty());
}

fn source<'a>(
    name: &'a str,
    history: &'a History,
    gaps: &'a [(Millis, Millis)],
    relists: &'a [Millis],
) -> HistorySource<'a> {
    HistorySource {
        name,
        // `b: pods` is of cluster b, as the page names other clusters' lanes
        cluster: name.split_once(": ").map_or("", |(cluster, _)| cluster),
        history,
        gaps,
        relists,
    }
}

/// Each lane's name and how many Warning marks it has.
fn lane_warnings(data: &TimelineData) -> Vec<(&str, usize)> {
    data.lanes
        .iter()
        .map(|l| (l.name.as_str(), l.warnings.len()))
        .collect()
}

fn names_and_counts(data: &TimelineData) -> Vec<(&str, u64)> {
    data.lanes
        .iter()
        .map(|l| (l.name.as_str(), l.count))
        .collect()
}

#[test]
fn one_lane_per_kept_resource_and_mixed_lanes_across_them() {
    let pods = history(&[
        (0, DeltaType::Replaced, "a/p1"),
        (100, DeltaType::Updated, "a/p1"),
        (900, DeltaType::Deleted, "a/p1"),
    ]);
    let deployments = history(&[
        (50, DeltaType::Replaced, "a/web"),
        (500, DeltaType::Updated, "b/api"),
        (2_000, DeltaType::Updated, "b/api"),
    ]);
    let sources = [
        source("pods", &pods, &[(200, 300)], &[300]),
        source("deployments.apps", &deployments, &[(250, 400)], &[40]),
    ];
    let by_resource = TimelineData::build_sources(&sources, (0, 1_000), LaneMode::Resource);
    assert_eq!(
        names_and_counts(&by_resource),
        [("pods", 3), ("deployments.apps", 2)]
    );
    let replaced = type_index(DeltaType::Replaced);
    assert_eq!(by_resource.lanes[0].columns[0][replaced], 1);
    assert_eq!(by_resource.lanes[1].columns[30][replaced], 1);
    assert_eq!(
        by_resource.lanes[1].columns[300][type_index(DeltaType::Updated)],
        1
    );
    // Each lane is shaded where its own informer was blind; the strip
    // as a whole where any was.
    assert_eq!(by_resource.lanes[0].gaps, [(200, 300)]);
    assert_eq!(by_resource.lanes[1].gaps, [(250, 400)]);
    assert_eq!(by_resource.gaps, [(200, 400)]);
    assert_eq!(by_resource.relists, [40, 300]);
    assert_eq!((by_resource.total, by_resource.in_view), (6, 5));

    let by_namespace = TimelineData::build_sources(&sources, (0, 1_000), LaneMode::Namespace);
    assert_eq!(names_and_counts(&by_namespace), [("a", 4), ("b", 1)]);
    assert!(by_namespace.lanes.iter().all(|l| l.gaps.is_empty()));
    let by_type = TimelineData::build_sources(&sources, (0, 1_000), LaneMode::Type);
    assert_eq!(
        names_and_counts(&by_type),
        [
            ("Deleted", 1),
            ("Updated", 2),
            ("Added", 0),
            ("Sync", 0),
            ("Replaced", 2)
        ]
    );
    // Nothing kept yet: no lanes, nothing in view.
    let empty = TimelineData::build_sources(&[], (0, 1_000), LaneMode::Resource);
    assert!(empty.lanes.is_empty());
    assert_eq!((empty.total, empty.in_view), (0, 0));
}

#[test]
fn the_delta_list_merges_resources_by_time_and_filters_by_resource() {
    let pods = history(&[
        (0, DeltaType::Replaced, "shop/web-1"),
        (100, DeltaType::Updated, "shop/web-1"),
        (900, DeltaType::Deleted, "shop/web-1"),
    ]);
    let deployments = history(&[
        (50, DeltaType::Replaced, "shop/web"),
        (100, DeltaType::Updated, "data/db"),
    ]);
    let sources = [
        source("pods", &pods, &[], &[]),
        source("deployments.apps", &deployments, &[], &[]),
    ];
    let refs = |query: &DeltaQuery| -> Vec<(usize, u64)> {
        select_deltas_across(&sources, query)
            .into_iter()
            .map(|r| (r.source, r.seq))
            .collect()
    };
    // Newest first; at equal times the earlier source first.
    assert_eq!(
        refs(&DeltaQuery::default()),
        [(0, 2), (0, 1), (1, 1), (1, 0), (0, 0)]
    );
    let deployments_only = DeltaQuery {
        resource: Some("deployments.apps".into()),
        ..DeltaQuery::default()
    };
    assert_eq!(refs(&deployments_only), [(1, 1), (1, 0)]);
    let web_in_shop = DeltaQuery {
        text: "WEB".into(),
        namespace: Some("shop".into()),
        from: 10,
        ..DeltaQuery::default()
    };
    assert_eq!(refs(&web_in_shop), [(0, 2), (0, 1), (1, 0)]);
    let unknown = DeltaQuery {
        resource: Some("services".into()),
        ..DeltaQuery::default()
    };
    assert!(refs(&unknown).is_empty());
}

proptest::proptest! {
    /// Merging keeps every matching delta of every source exactly once,
    /// newest first, each source's own order intact; and the lanes of
    /// all three modes count the same deltas.
    #[test]
    fn merging_is_a_time_ordered_interleaving(
        streams in proptest::collection::vec(
            proptest::collection::vec((0u64..50, 0usize..5, 0u8..4), 0..40), 1..5),
        types in proptest::array::uniform5(proptest::bool::ANY),
        from in 0u64..300,
        span in 1u64..2_000,
    ) {
        let histories: Vec<History> = streams
            .iter()
            .map(|stream| {
                let mut at = 0;
                let keys: Vec<(Millis, DeltaType, String)> = stream
                    .iter()
                    .map(|(step, kind, ns)| {
                        at += step;
                        (at, DELTA_TYPES[*kind], format!("ns{ns}/o{}", at % 7))
                    })
                    .collect();
                let entries: Vec<(Millis, DeltaType, &str)> =
                    keys.iter().map(|(at, k, key)| (*at, *k, key.as_str())).collect();
                history(&entries)
            })
            .collect();
        let names: Vec<String> = (0..histories.len()).map(|i| format!("r{i}")).collect();
        let sources: Vec<HistorySource<'_>> = histories
            .iter()
            .zip(&names)
            .map(|(h, name)| source(name, h, &[], &[]))
            .collect();
        let query = DeltaQuery { from, to: from + span, types, ..DeltaQuery::default() };
        let merged = select_deltas_across(&sources, &query);
        let at_of = |r: &DeltaRef| histories[r.source].get(r.seq).map(|e| e.at);
        for pair in merged.windows(2) {
            proptest::prop_assert!(at_of(&pair[0]) >= at_of(&pair[1]));
        }
        for (index, history) in histories.iter().enumerate() {
            let own: Vec<u64> = merged.iter().filter(|r| r.source == index).map(|r| r.seq).collect();
            proptest::prop_assert_eq!(own, select_deltas(history, &query));
        }
        let range = (from, from + span);
        let counts: Vec<u64> = LaneMode::ALL
            .iter()
            .map(|mode| TimelineData::build_sources(&sources, range, *mode).in_view)
            .collect();
        let in_range: u64 = histories.iter().map(|h| h.range(range.0, range.1).count() as u64).sum();
        proptest::prop_assert!(counts.iter().all(|c| *c == in_range), "{counts:?} vs {in_range}");
    }
}

#[test]
fn lane_modes_round_trip_through_their_names() {
    for mode in LaneMode::ALL {
        assert_eq!(LaneMode::parse(mode.as_str()), Some(mode));
    }
    assert_eq!(LaneMode::parse("kind"), None);
}

#[test]
fn the_delta_list_filters_by_the_field_manager_that_wrote_a_delta() {
    let mut history = History::new(HistoryConfig::default());
    let pod = |managers: &[&str], rv: &str| {
        let entries: Vec<serde_json::Value> = managers
            .iter()
            .map(|m| json!({"manager": m, "operation": "Update", "time": format!("2026-01-01T00:00:0{rv}Z"),
                            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {}}}))
            .collect();
        Arc::new(
            KubeObject::from_value(json!({"metadata": {"name": "web", "namespace": "shop",
                "resourceVersion": rv, "managedFields": entries}}))
            .expect("object"),
        )
    };
    let written = |writers: &[&str]| writers.iter().map(|w| w.to_string()).collect();
    history.record_written(
        1,
        DeltaType::Added,
        pod(&["kubectl"], "1"),
        false,
        "shop/web",
        written(&["kubectl"]),
    );
    history.record_written(
        2,
        DeltaType::Updated,
        pod(&["kubectl", "kubelet"], "2"),
        false,
        "shop/web",
        written(&["kubelet"]),
    );
    history.record_written(
        3,
        DeltaType::Updated,
        pod(&["kubectl", "kubelet"], "3"),
        false,
        "shop/web",
        written(&["kubectl"]),
    );
    let by = |manager: &str| {
        select_deltas(
            &history,
            &DeltaQuery {
                manager: manager.into(),
                ..DeltaQuery::default()
            },
        )
    };
    assert_eq!(by(""), [2, 1, 0]);
    assert_eq!(by("kubelet"), [1]);
    assert_eq!(by("KUBECTL"), [2, 0], "case-insensitive");
    assert!(by("helm").is_empty());
}

#[test]
fn manager_lanes_hold_what_each_field_manager_wrote() {
    let mut history = History::new(HistoryConfig::default());
    let object = |rv: &str| {
        Arc::new(
            KubeObject::from_value(
                json!({"metadata": {"name": "web", "namespace": "shop", "resourceVersion": rv}}),
            )
            .expect("object"),
        )
    };
    let written = |writers: &[&str]| writers.iter().map(|w| w.to_string()).collect();
    history.record_written(
        1_000,
        DeltaType::Added,
        object("1"),
        false,
        "shop/web",
        written(&["helm", "kubectl"]),
    );
    history.record_written(
        2_000,
        DeltaType::Updated,
        object("2"),
        false,
        "shop/web",
        written(&["kubelet"]),
    );
    history.record_written(
        3_000,
        DeltaType::Updated,
        object("3"),
        false,
        "shop/web",
        written(&["kubelet"]),
    );
    history.record_written(
        4_000,
        DeltaType::Deleted,
        object("4"),
        false,
        "shop/web",
        Vec::new(),
    );
    let data = TimelineData::build(&history, input((0, 10_000), LaneMode::Manager));
    assert_eq!(
        names_and_counts(&data),
        [
            ("kubelet", 2),
            ("(no field manager)", 1),
            ("helm", 1),
            ("kubectl", 1)
        ]
    );
    assert_eq!(data.in_view, 4, "four deltas, though five marks");
    assert_eq!(LaneMode::parse("manager"), Some(LaneMode::Manager));
}

#[test]
fn a_warning_event_marks_the_lane_of_the_resource_it_is_about() {
    let pods = history(&[(1_000, DeltaType::Added, "shop/web-1")]);
    let mut events = History::new(HistoryConfig::default());
    let event = |name: &str, kind: &str, api_version: &str, type_: &str| {
        Arc::new(
            KubeObject::from_value(json!({"metadata": {"name": name, "namespace": "shop", "resourceVersion": "1"},
                "involvedObject": {"kind": kind, "apiVersion": api_version, "name": "x", "namespace": "shop"},
                "type": type_, "reason": "BackOff"}))
            .expect("event"),
        )
    };
    events.record(
        5_000,
        DeltaType::Added,
        event("a", "Pod", "v1", "Warning"),
        false,
        "shop/a",
    );
    events.record(
        6_000,
        DeltaType::Added,
        event("b", "Pod", "v1", "Normal"),
        false,
        "shop/b",
    );
    events.record(
        9_000,
        DeltaType::Updated,
        event("c", "Deployment", "apps/v1", "Warning"),
        false,
        "shop/c",
    );
    let deployments = history(&[]);
    let sources = [
        source("pods", &pods, &[], &[]),
        source("events", &events, &[], &[]),
        source("deployments.apps", &deployments, &[], &[]),
    ];
    let data = TimelineData::build_sources(&sources, (0, 10_000), LaneMode::Resource);
    let warnings = lane_warnings(&data);
    assert_eq!(
        warnings,
        [("pods", 1), ("events", 0), ("deployments.apps", 1)]
    );
    assert_eq!(data.lanes[0].warnings, [COLUMNS / 2], "at 5 s of 10");

    // Another cluster's events mark its own lanes, never the default one's.
    let sources = [
        source("pods", &pods, &[], &[]),
        source("b: pods", &pods, &[], &[]),
        source("b: events", &events, &[], &[]),
    ];
    let data = TimelineData::build_sources(&sources, (0, 10_000), LaneMode::Resource);
    let warnings = lane_warnings(&data);
    assert_eq!(warnings, [("pods", 0), ("b: pods", 1), ("b: events", 0)]);
}

#[test]
fn cluster_lanes_gather_each_clusters_resources_and_the_list_filters_by_cluster() {
    let pods = history(&[
        (0, DeltaType::Replaced, "a/p1"),
        (100, DeltaType::Updated, "a/p1"),
    ]);
    let other_pods = history(&[(50, DeltaType::Replaced, "a/p1")]);
    let other_deployments = history(&[(70, DeltaType::Added, "a/d")]);
    let gaps = [(10, 20)];
    let sources = [
        source("b: pods", &other_pods, &gaps, &[]),
        source("pods", &pods, &[], &[]),
        source("b: deployments.apps", &other_deployments, &[], &[60]),
    ];
    let data = TimelineData::build_sources(&sources, (0, 1_000), LaneMode::Cluster);
    assert_eq!(
        names_and_counts(&data),
        [("b", 2), (DEFAULT_CLUSTER_LANE, 2)]
    );
    assert_eq!(
        (
            data.lanes[0].gaps.as_slice(),
            data.lanes[0].relists.as_slice()
        ),
        (&gaps[..], &[60][..])
    );
    assert_eq!(data.in_view, 4);
    assert_eq!(LaneMode::parse("cluster"), Some(LaneMode::Cluster));
    let in_cluster = |cluster: &str| -> Vec<(usize, u64)> {
        let query = DeltaQuery {
            cluster: Some(cluster.into()),
            ..DeltaQuery::default()
        };
        select_deltas_across(&sources, &query)
            .into_iter()
            .map(|r| (r.source, r.seq))
            .collect()
    };
    assert_eq!(in_cluster("b"), [(2, 0), (0, 0)]);
    assert_eq!(in_cluster(""), [(1, 1), (1, 0)]);
    assert!(in_cluster("c").is_empty());
}

#[test]
fn the_delta_list_takes_serve_s_record_filtered_once_each_and_merged_by_time() {
    use crate::api::object_record::{ObjectRecord, RecordedVersion};
    use crate::model::delta_select::{merge_newest_first, select_recorded};
    // The page's own history of pods from 10 s on (rv 1: shop/a).
    let own = history(&[(10_000, DeltaType::Replaced, "shop/a")]);
    let version = |time_ms: i64, kind, key: &str, rv: &str, managers: &[&str]| {
        let (namespace, name) = key.split_once('/').expect("namespaced");
        RecordedVersion {
            time_ms,
            kind,
            tombstone: false,
            managers: managers.iter().map(|m| m.to_string()).collect(),
            object: Arc::new(
                KubeObject::from_value(json!({"metadata": {"name": name,
                    "namespace": namespace, "resourceVersion": rv}}))
                .expect("object"),
            ),
        }
    };
    let record = ObjectRecord {
        versions: vec![
            version(2_000, DeltaType::Added, "shop/a", "0", &["kubectl"]),
            version(
                4_000,
                DeltaType::Updated,
                "kube-system/dns",
                "7",
                &["kubelet"],
            ),
            version(6_000, DeltaType::Updated, "shop/b", "8", &["kubelet"]),
            // the version the page listed, recorded too: the page's
            version(10_000, DeltaType::Updated, "shop/a", "1", &[]),
        ],
        gaps: Vec::new(),
    };
    let all = DeltaQuery::default();
    assert_eq!(
        select_recorded(&record, Some(&own), &all),
        [(2, 6_000), (1, 4_000), (0, 2_000)],
        "newest first, the page's copy left out"
    );
    let shop_by_kubelet = DeltaQuery {
        namespace: Some("shop".into()),
        manager: "KUBELET".into(),
        ..DeltaQuery::default()
    };
    assert_eq!(
        select_recorded(&record, Some(&own), &shop_by_kubelet),
        [(2, 6_000)]
    );
    let brushed = DeltaQuery {
        from: 3_000,
        to: 6_000,
        ..DeltaQuery::default()
    };
    assert_eq!(select_recorded(&record, None, &brushed), [(1, 4_000)]);
    // Merged with the page's own, newest first; two lanes' records sorted.
    let merged = merge_newest_first(
        vec![("page-a", 10_000), ("page-b", 5_000)],
        vec![("rec-6", 6_000), ("rec-2", 2_000), ("other-lane-7", 7_000)],
    );
    assert_eq!(
        merged,
        ["page-a", "other-lane-7", "rec-6", "page-b", "rec-2"]
    );
}
