//! Figures for the delta history and the timeline: the timeline's bucketing of 10k
//! and 100k marks into lanes × pixel columns (the part of a timeline render
//! that grows with the marks; the canvas then draws at most lanes × 600
//! bars), also with the marks spread over 8 kept resources (a lane each) and
//! the delta list merged across them, the memory one recorded delta costs,
//! the diff of two 50 KB objects (JSON Patch + the readable lines the
//! object view shows), and who changed one update of a 50 KB object (its
//! field managers' FieldsV1 sets intersected with the diff), and an
//! object's usage chart laid out from a day of samples.
//!
//! `cargo bench --bench history_figures [-- --quick]`. Times are medians of
//! repeated runs; memory is counted by a global allocator that tallies live
//! bytes, so it is exact for this process.

mod common;
mod tsv_row;

use tsv_row::row;

use std::sync::Arc;
use std::time::Instant;

use deltascope::informer::json::JsonValue;
use deltascope::informer::{DeltaType, History, HistoryConfig, KubeObject, Millis};
use deltascope::model::delta_select::{select_deltas_across, DeltaQuery};
use deltascope::model::object_text::diff_lines;
use deltascope::model::timeline::{HistorySource, LaneMode, TimelineData, TimelineInput};
use deltascope::model::usage_chart::{layout, ChartInput, Levels};
use deltascope::model::usage_series::{ContainerUsage, Metric, SampleSource, UsageSample};
use deltascope::model::who_changed::who_changed;
use serde_json::{json, Value};

#[global_allocator]
static ALLOCATOR: deltascope::metrics::heap::CountingAllocator =
    deltascope::metrics::heap::CountingAllocator;

/// Live heap bytes of the process.
fn live_bytes() -> isize {
    deltascope::metrics::heap::live_bytes() as isize
}

fn median_ms(runs: usize, mut f: impl FnMut()) -> f64 {
    let mut times: Vec<f64> = (0..runs)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn pod_object(i: usize, rv: u64) -> Arc<KubeObject> {
    Arc::new(KubeObject::from_value(common::pod(i, rv)).expect("pod"))
}

/// `n` deltas over 10 minutes across 2,000 pods in 20 namespaces.
fn history_of(n: usize, objects: &[Arc<KubeObject>]) -> History {
    let mut history = History::new(HistoryConfig {
        max_deltas: usize::MAX,
        max_bytes: usize::MAX,
    });
    for i in 0..n {
        let object = objects[i % objects.len()].clone();
        let kind = match i % 10 {
            0 => DeltaType::Added,
            9 => DeltaType::Deleted,
            _ => DeltaType::Updated,
        };
        let key = object.key.clone();
        history.record(
            (i as Millis * 600_000) / n as Millis,
            kind,
            object,
            false,
            &key,
        );
    }
    history
}

/// A ~50 KB object: a ConfigMap-like body of many entries.
fn big_object(version: usize) -> Value {
    let mut data = serde_json::Map::new();
    for i in 0..930 {
        let value = if i % 97 == 0 {
            format!("value-{i}-v{version}-padding-padding-padding")
        } else {
            format!("value-{i}-padding-padding-padding-padding")
        };
        data.insert(format!("key-{i:04}"), Value::String(value));
    }
    let mut labels = json!({"app": "web", "tier": "frontend"});
    if version > 0 {
        labels["release"] = json!(format!("r{version}"));
    }
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "shop", "resourceVersion": (100 + version).to_string(),
            "labels": labels},
        "data": data
    })
}

const FRAME_MS: f64 = 1000.0 / 60.0;

/// [`big_object`] as two field managers wrote it: `helm` owns every key but
/// the changed ones, `ops-cli` those (`version` bumps the time of its entry).
fn managed_big_object(version: usize) -> Value {
    let mut object = big_object(version);
    let keys: Vec<String> = object["data"]
        .as_object()
        .map(|data| data.keys().cloned().collect())
        .unwrap_or_default();
    let set = |owned: &mut dyn Iterator<Item = &String>| {
        let data: serde_json::Map<String, Value> =
            owned.map(|k| (format!("f:{k}"), json!({}))).collect();
        json!({"f:data": data})
    };
    let changed = |k: &&String| {
        k.trim_start_matches("key-")
            .parse::<usize>()
            .is_ok_and(|i| i % 97 == 0)
    };
    let helm = set(&mut keys.iter().filter(|k| !changed(k)));
    let ops = set(&mut keys.iter().filter(changed));
    object["metadata"]["managedFields"] = json!([
        {"manager": "helm", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
         "fieldsType": "FieldsV1", "fieldsV1": helm},
        {"manager": "ops-cli", "operation": "Update", "apiVersion": "v1",
         "time": format!("2026-01-01T00:0{version}:00Z"), "fieldsType": "FieldsV1", "fieldsV1": ops},
    ]);
    object
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let quick = args.iter().any(|a| a == "--quick");
    let out = args
        .iter()
        .position(|a| a == "--out")
        .and_then(|i| args.get(i + 1).cloned());
    let mut tsv = String::new();
    let runs = if quick { 5 } else { 21 };
    println!(
        "history figures ({} runs per timing{})",
        runs,
        if quick { ", --quick" } else { "" }
    );

    let objects: Vec<Arc<KubeObject>> = (0..2_000).map(|i| pod_object(i, i as u64)).collect();
    timeline_figures(runs, &objects, &mut tsv);
    kept_resources_figures(runs, &objects);
    memory_figures(quick, &objects, &mut tsv);
    diff_figure(runs, &mut tsv);
    who_changed_figure(runs, &mut tsv);
    usage_chart_figure(runs, &mut tsv);
    if let Some(out) = out {
        write_figures(&out, quick, &tsv);
    }
}

/// Timeline bucketing: 10k and 100k marks into resource and namespace lanes.
fn timeline_figures(runs: usize, objects: &[Arc<KubeObject>], tsv: &mut String) {
    for n in [10_000usize, 100_000] {
        let history = history_of(n, objects);
        for mode in [LaneMode::Resource, LaneMode::Namespace] {
            let mut marks = 0;
            let ms = median_ms(runs, || {
                let data = TimelineData::build(
                    &history,
                    TimelineInput {
                        gaps: &[],
                        relists: &[],
                        range: (0, 600_000),
                        mode,
                        resource: "pods",
                    },
                );
                marks = data.in_view;
            });
            assert_eq!(marks, n as u64);
            println!(
                "timeline build, {n} marks, {} lanes: {ms:.3} ms",
                mode.as_str()
            );
            tsv.push_str(&row(
                &format!("timeline.build.{}k.{}", n / 1000, mode.as_str()),
                &format!(
                    "timeline: bucket {}k marks into {} lanes (per render)",
                    n / 1000,
                    mode.as_str()
                ),
                "ms",
                ms,
                FRAME_MS,
                "one 60 Hz frame",
                "≤ 1 frame",
                ms <= FRAME_MS,
                &format!("median of {runs}; native, the same code the page runs"),
            ));
        }
    }
}

/// Printed only: 100k marks in 8 kept resources' lanes, and their delta list.
fn kept_resources_figures(runs: usize, objects: &[Arc<KubeObject>]) {
    // Several kept resources: 100k marks in 8 histories, a lane each (or by
    // namespace across them), and the delta list merged newest first.
    let kept: Vec<History> = (0..8).map(|_| history_of(12_500, objects)).collect();
    let names: Vec<String> = (0..8).map(|i| format!("resource-{i}")).collect();
    let sources: Vec<HistorySource<'_>> = kept
        .iter()
        .zip(&names)
        .map(|(history, name)| HistorySource {
            name,
            cluster: "",
            history,
            gaps: &[],
            relists: &[],
        })
        .collect();
    for mode in [LaneMode::Resource, LaneMode::Namespace] {
        let mut marks = 0;
        let ms = median_ms(runs, || {
            marks = TimelineData::build_sources(&sources, (0, 600_000), mode).in_view;
        });
        assert_eq!(marks, 100_000);
        println!(
            "timeline build, 100000 marks in 8 kept resources, {} lanes: {ms:.3} ms",
            mode.as_str()
        );
    }
    let mut listed = 0;
    let ms = median_ms(runs, || {
        listed = select_deltas_across(&sources, &DeltaQuery::default()).len();
    });
    assert_eq!(listed, 100_000);
    println!("delta list, 100000 deltas of 8 kept resources merged newest first: {ms:.3} ms");
    drop(sources);
    drop(kept);
}

/// Bytes per recorded delta, the object shared with the store or not.
fn memory_figures(quick: bool, objects: &[Arc<KubeObject>], tsv: &mut String) {
    // Memory per recorded delta. The history shares the object with the
    // store (an Arc), so its own cost is its entry in the history;
    // a delta whose object nothing else holds also costs the object itself.
    let n = if quick { 20_000 } else { 100_000 };
    let before = live_bytes();
    let shared_history = history_of(n, objects);
    let shared = (live_bytes() - before) as f64 / n as f64;
    drop(shared_history);
    let before = live_bytes();
    let mut own = History::new(HistoryConfig {
        max_deltas: usize::MAX,
        max_bytes: usize::MAX,
    });
    let owned_n = n / 10;
    for i in 0..owned_n {
        let object = pod_object(i % 2_000, i as u64 + 10_000);
        let key = object.key.clone();
        own.record(i as Millis, DeltaType::Updated, object, false, &key);
    }
    let owned = (live_bytes() - before) as f64 / owned_n as f64;
    let approx = own.bytes() as f64 / owned_n as f64;
    drop(own);
    println!("memory per recorded delta, object shared with the store: {shared:.0} B");
    let json_per_object = objects
        .iter()
        .map(|o| serde_json::to_string(&o.value).map_or(0, |s| s.len()))
        .sum::<usize>() as f64
        / objects.len() as f64;
    tsv.push_str(&row(
        "timeline.memory.shared",
        "history: bytes per recorded delta, object shared with the store",
        "B",
        shared,
        json_per_object,
        "the object's JSON size",
        "(reported)",
        true,
        &format!("{n} deltas"),
    ));
    tsv.push_str(&row(
        "timeline.memory.owned",
        "history: bytes per recorded delta, object held only by the history",
        "B",
        owned,
        json_per_object,
        "the object's JSON size",
        "(reported)",
        true,
        &format!("{owned_n} deltas; retention charges {approx:.0} B each"),
    ));
    println!(
        "memory per recorded delta, object owned by the history (~4 KB pod JSON): {owned:.0} B (retention charges {approx:.0} B)"
    );
}

/// A diff of two 50 KB objects: JSON Patch and the changed lines.
fn diff_figure(runs: usize, tsv: &mut String) {
    // Diff of two 50 KB objects.
    let (a, b) = (big_object(0), big_object(1));
    let size = serde_json::to_string(&a).map(|s| s.len()).unwrap_or(0);
    let mut lines = 0;
    let ms = median_ms(runs * 4, || {
        let patch = json_patch::diff(&a, &b);
        lines = diff_lines(&a, &patch).len();
    });
    println!(
        "diff of two {:.0} KB objects ({lines} changed paths, JSON Patch + lines): {ms:.3} ms",
        size as f64 / 1024.0
    );
    tsv.push_str(&row(
        "timeline.diff.50kb",
        &format!(
            "diff of two {:.0} KB objects (JSON Patch + changed lines)",
            size as f64 / 1024.0
        ),
        "ms",
        ms,
        FRAME_MS,
        "one 60 Hz frame",
        "≤ 1 frame",
        ms <= FRAME_MS,
        &format!("{lines} changed paths; median of {}", runs * 4),
    ));
}

/// Who changed it: one update of a 50 KB object read from compact documents.
fn who_changed_figure(runs: usize, tsv: &mut String) {
    // Who changed it: the field managers of one update of a 50 KB object
    // (two managers' FieldsV1 sets over its 930 keys, one of them changed).
    // Both versions as the history holds them: compact documents.
    let (a, b) = (managed_big_object(0), managed_big_object(1));
    let size = serde_json::to_string(&b).map(|s| s.len()).unwrap_or(0);
    let (a, b) = (JsonValue::from(a), JsonValue::from(b));
    let mut attributed = 0;
    let ms = median_ms(runs * 4, || {
        let who = who_changed(a.root(), b.root());
        attributed = who.lines.len();
    });
    assert!(attributed > 0, "the update is attributed");
    let first_read_frames = (ms * 1000.0 / 8.0).ceil();
    println!(
        "who changed one update of a {:.0} KB object ({attributed} fields attributed): {:.1} µs; a history of 1,000 such deltas is read once, 8 ms a frame: {first_read_frames} frames",
        size as f64 / 1024.0,
        ms * 1000.0
    );
    tsv.push_str(&row(
        "story.attribution.50kb",
        &format!(
            "who changed one update of a {:.0} KB object, read from the history's compact documents (FieldsV1 sets × the diff's paths)",
            size as f64 / 1024.0
        ),
        "µs",
        ms * 1000.0,
        FRAME_MS,
        "one frame ÷ 1,000 deltas",
        "≤ 1 frame for 1,000 deltas",
        ms * 1000.0 <= FRAME_MS,
        &format!(
            "{attributed} fields attributed; median of {}; the object view reads each version once, newest first, 8 ms a frame ({first_read_frames} frames for 1,000), then only new ones",
            runs * 4
        ),
    ));
}

/// Writes the figures' TSV beside `out`, and `out` itself.
fn write_figures(out: &str, quick: bool, tsv: &str) {
    let path = std::path::Path::new(out).with_extension("tsv");
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).expect("create the output directory");
    }
    std::fs::write(&path, tsv).expect("write the figures");
    std::fs::write(
        out,
        format!("{{\"bench\":\"history_figures\",\"quick\":{quick}}}"),
    )
    .expect("write the results");
    println!("history figures: wrote {}", path.display());
}

/// A day of one pod's samples (5,760 windows of 15 s, two containers, one
/// climbing and restarting) laid out as the Usage tab's charts: memory and
/// CPU of the whole pod and of one container, per render.
fn usage_chart_figure(runs: usize, tsv: &mut String) {
    const WINDOWS: u64 = 5_760;
    const WINDOW: Millis = 15_000;
    let samples: Vec<UsageSample> = (0..WINDOWS)
        .map(|i| {
            let leak = (i % 480) * 1_000_000;
            let containers = vec![
                ContainerUsage {
                    name: "app".into(),
                    cpu_nanocores: 40_000_000 + (i * 7919 % 10_000_000),
                    memory_bytes: 100_000_000 + leak,
                },
                ContainerUsage {
                    name: "sidecar".into(),
                    cpu_nanocores: 2_000_000,
                    memory_bytes: 20_000_000,
                },
            ];
            UsageSample {
                at: 1_700_000_000_000 + i * WINDOW,
                window: WINDOW,
                cpu_nanocores: containers.iter().map(|c| c.cpu_nanocores).sum(),
                memory_bytes: containers.iter().map(|c| c.memory_bytes).sum(),
                pods: None,
                containers,
                source: SampleSource::Page,
            }
        })
        .collect();
    let refs: Vec<&UsageSample> = samples.iter().collect();
    let range = (refs[0].at, refs[refs.len() - 1].at + WINDOW);
    let levels = Levels {
        request: Some(128_000_000),
        limit: Some(600_000_000),
        limit_label: "limit",
    };
    let mut points = 0;
    let ms = median_ms(runs, || {
        for (metric, container) in [
            (Metric::Memory, None),
            (Metric::Cpu, None),
            (Metric::Memory, Some("app")),
            (Metric::Cpu, Some("app")),
        ] {
            let chart = layout(&ChartInput {
                samples: &refs,
                metric,
                container,
                range,
                levels: &levels,
                marks: &[],
                gaps: &[],
                utc_offset_minutes: 0,
            });
            points += chart.points;
        }
    });
    assert!(points >= 4 * WINDOWS as usize, "{points} points laid out");
    println!("usage charts, a day of samples: {ms:.3} ms");
    tsv.push_str(&row(
        "usage.chart.24h",
        "usage charts: a day of one pod's samples (5,760 windows) laid out, pod and container, CPU and memory (per render)",
        "ms",
        ms,
        FRAME_MS,
        "one 60 Hz frame",
        "≤ 1 frame",
        ms <= FRAME_MS,
        &format!("median of {runs}; native, the same code the page runs; the page then hands the browser 4 SVG polylines"),
    ));
}
