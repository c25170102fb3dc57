//! The usage chart's layout: lines, breaks, levels, marks, axis.

use super::*;
use crate::informer::JsonValue;
use crate::model::usage_series::SampleSource;

fn sample(at: Millis, memory_mi: u64) -> UsageSample {
    UsageSample {
        at,
        window: 15_000,
        cpu_nanocores: 250_000_000,
        memory_bytes: memory_mi << 20,
        pods: None,
        containers: Vec::new(),
        source: SampleSource::Page,
    }
}

fn json(text: &str) -> JsonValue {
    JsonValue::parse(text.as_bytes()).expect("json")
}

fn input<'a>(
    samples: &'a [&'a UsageSample],
    levels: &'a Levels,
    marks: &'a [UsageMark],
) -> ChartInput<'a> {
    ChartInput {
        samples,
        metric: Metric::Memory,
        container: None,
        range: (0, 120_000),
        levels,
        marks,
        gaps: &[],
        utc_offset_minutes: 0,
    }
}

#[test]
fn the_line_climbs_to_its_limit_and_breaks_where_no_window_was_measured() {
    let owned = [
        sample(0, 10),
        sample(15_000, 20),
        sample(30_000, 30),
        sample(90_000, 5),
    ];
    let samples: Vec<&UsageSample> = owned.iter().collect();
    let levels = Levels {
        request: Some(16 << 20),
        limit: Some(32 << 20),
        limit_label: "limit",
    };
    let chart = layout(&input(&samples, &levels, &[]));
    assert_eq!(chart.points, 4);
    assert_eq!(
        chart.runs.len(),
        2,
        "60 s without a 15 s window breaks the line"
    );
    assert_eq!(chart.peak, Some(30 << 20));
    assert_eq!(chart.last, Some(5 << 20));
    // the limit (32Mi) + 10% → 50Mi, the next round top
    assert_eq!(chart.top, 50 << 20);
    let limit = chart.limit.expect("a limit line");
    assert_eq!(limit.label, "limit 32Mi");
    assert!(
        limit.y < chart.request.expect("a request line").y,
        "the limit is higher"
    );
    assert_eq!(chart.runs[0].split(' ').count(), 3);
    assert!(chart.runs[0].starts_with("0.0,120.0") || chart.runs[0].starts_with("0.0,"));
}

#[test]
fn marks_and_gaps_outside_the_range_are_left_out() {
    let levels = Levels::default();
    let marks = [
        UsageMark {
            at: 60_000,
            kind: MarkKind::OomKilled,
            title: "x".into(),
        },
        UsageMark {
            at: 500_000,
            kind: MarkKind::Warning,
            title: "later".into(),
        },
    ];
    let gaps = [RecordGap {
        from_ms: 100_000,
        to_ms: 400_000,
        reason: "not-running".into(),
    }];
    let mut chart_input = input(&[], &levels, &marks);
    chart_input.gaps = &gaps;
    let chart = layout(&chart_input);
    assert_eq!(chart.marks.len(), 1);
    assert_eq!(chart.marks[0].0, 500.0);
    assert_eq!(chart.gaps.len(), 1);
    let (from, to, why) = &chart.gaps[0];
    assert_eq!((from.round(), to.round()), (833.0, 1000.0));
    assert!(why.contains("not-running"));
    assert_eq!(chart.points, 0);
    assert!(chart.runs.is_empty());
}

#[test]
fn values_print_as_the_tables_print_them() {
    assert_eq!(format_value(Metric::Cpu, 250_000_001), "251m");
    assert_eq!(format_value(Metric::Memory, 45 << 20), "45Mi");
    assert_eq!(nice_top(Metric::Cpu, 1), 1_000_000);
    assert_eq!(nice_top(Metric::Cpu, 110_000_000), 200_000_000);
    assert_eq!(nice_top(Metric::Memory, 600 << 20), 1000 << 20);
}

#[test]
fn time_ticks_fall_on_round_local_times() {
    let ticks = time_ticks((3_590_000, 3_600_000 + 3 * 60_000), 60);
    let labels: Vec<&str> = ticks.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(
        labels,
        ["02:00:00", "02:00:30", "02:01:00", "02:01:30", "02:02:00", "02:02:30"]
    );
    let hours = time_ticks((0, 6 * 3_600_000), 0);
    assert_eq!(hours.len(), 5, "{hours:?}");
    assert_eq!(hours[0].1, "01:00");
}

#[test]
fn hovering_finds_the_nearest_sample() {
    let owned = [sample(0, 1), sample(60_000, 2), sample(120_000, 3)];
    let samples: Vec<&UsageSample> = owned.iter().collect();
    let at = |f| nearest(&samples, (0, 120_000), f).map(|s| s.at);
    assert_eq!(at(0.0), Some(0));
    assert_eq!(at(0.4), Some(60_000));
    assert_eq!(at(2.0), Some(120_000));
    assert_eq!(nearest(&[], (0, 1), 0.5), None);
}

#[test]
fn restarts_oom_kills_rollouts_and_warnings_become_marks() {
    let pod = |restarts: i64, reason: &str| {
        json(&format!(
            r#"{{"metadata":{{"generation":1}},"status":{{"containerStatuses":[
                {{"name":"app","restartCount":{restarts},"lastState":{{"terminated":{{"reason":"{reason}"}}}}}},
                {{"name":"proxy","restartCount":0}}]}}}}"#
        ))
    };
    let versions = [
        pod(0, "Completed"),
        pod(0, "Completed"),
        pod(1, "OOMKilled"),
        pod(2, "Error"),
    ];
    let objects: Vec<(Millis, JsonRef<'_>)> = versions
        .iter()
        .enumerate()
        .map(|(i, v)| (i as Millis * 10, v.root()))
        .collect();
    let marks = history_marks(&objects, &[(15, "BackOff: restarting".into())], false);
    let kinds: Vec<(Millis, MarkKind)> = marks.iter().map(|m| (m.at, m.kind)).collect();
    assert_eq!(
        kinds,
        [
            (15, MarkKind::Warning),
            (20, MarkKind::OomKilled),
            (30, MarkKind::Restart)
        ]
    );
    assert!(
        marks[1].title.starts_with("app restarted"),
        "{}",
        marks[1].title
    );

    let deployment =
        |generation: i64| json(&format!(r#"{{"metadata":{{"generation":{generation}}}}}"#));
    let versions = [deployment(3), deployment(3), deployment(4)];
    let objects: Vec<(Millis, JsonRef<'_>)> = versions.iter().map(|v| (7, v.root())).collect();
    let marks = history_marks(&objects, &[], true);
    assert_eq!(marks.len(), 1);
    assert_eq!(marks[0].kind, MarkKind::Rollout);
    assert!(
        history_marks(&objects, &[], false).is_empty(),
        "a pod has no rollouts"
    );
}

#[test]
fn levels_are_a_containers_or_all_of_them_summed_when_each_sets_one() {
    let pod = json(
        r#"{"spec":{"containers":[
            {"name":"app","resources":{"requests":{"memory":"64Mi","cpu":"100m"},"limits":{"memory":"128Mi"}}},
            {"name":"proxy","resources":{"requests":{"memory":"16Mi"}}}]}}"#,
    );
    let all = levels_of(pod.root(), false, Metric::Memory, None);
    assert_eq!(all.request, Some(80 << 20));
    assert_eq!(all.limit, None, "proxy sets no memory limit");
    let app = levels_of(pod.root(), false, Metric::Memory, Some("app"));
    assert_eq!((app.request, app.limit), (Some(64 << 20), Some(128 << 20)));
    let cpu = levels_of(pod.root(), false, Metric::Cpu, Some("app"));
    assert_eq!(cpu.request, Some(100_000_000));
    let node = json(r#"{"status":{"allocatable":{"cpu":"4","memory":"8Gi"}}}"#);
    let levels = levels_of(node.root(), true, Metric::Cpu, None);
    assert_eq!(
        (levels.limit, levels.limit_label),
        (Some(4_000_000_000), "allocatable")
    );
}

#[test]
fn a_fitted_range_starts_at_the_first_sample_and_spans_two_minutes_at_least() {
    let range = (0, 3_600_000);
    assert_eq!(
        fitted(range, Some((3_000_000, 15_000))),
        (2_985_000, 3_600_000)
    );
    assert_eq!(
        fitted(range, Some((3_590_000, 15_000))),
        (3_480_000, 3_600_000)
    );
    assert_eq!(fitted(range, None), (3_480_000, 3_600_000));
    assert_eq!(fitted(range, Some((10, 15_000))), (0, 3_600_000));
    assert_eq!(
        fitted((100, 200), Some((150, 1))),
        (100, 200),
        "a range shorter than the least"
    );
}

#[test]
fn samples_a_minute_apart_are_one_line_and_a_missing_stretch_still_breaks_it() {
    let owned: Vec<UsageSample> = [0, 60_000, 120_000, 180_000, 600_000, 660_000]
        .into_iter()
        .map(|at| sample(at, 10))
        .collect();
    let samples: Vec<&UsageSample> = owned.iter().collect();
    let levels = Levels::default();
    let mut chart_input = input(&samples, &levels, &[]);
    chart_input.range = (0, 700_000);
    let chart = layout(&chart_input);
    assert_eq!(chart.runs.len(), 2, "{:?}", chart.runs);
    assert_eq!(chart.runs[0].split(' ').count(), 4);
}

#[test]
fn a_day_of_windows_is_drawn_through_its_envelope_with_peaks_and_drops_kept() {
    // 5,760 windows of 15 s; memory climbs by 1Mi a window and drops to 10Mi
    // every 480 (an OOM kill), one spike of 900Mi in the middle
    let owned: Vec<UsageSample> = (0..5_760u64)
        .map(|i| {
            let memory = if i == 2_881 { 900 } else { 10 + i % 480 };
            sample(i * 15_000, memory)
        })
        .collect();
    let samples: Vec<&UsageSample> = owned.iter().collect();
    let levels = Levels::default();
    let mut day = input(&samples, &levels, &[]);
    day.range = (0, 5_760 * 15_000);
    let chart = layout(&day);
    assert_eq!(chart.points, 5_760, "every sample counts");
    assert_eq!(chart.runs.len(), 1);
    let points: Vec<(f64, f64)> = chart.runs[0]
        .split(' ')
        .map(|p| {
            let (x, y) = p.split_once(',').expect("x,y");
            (x.parse().expect("x"), y.parse().expect("y"))
        })
        .collect();
    assert!(points.len() <= 4 * 2_000, "{} points drawn", points.len());
    assert!(points.len() < 5_760, "fewer points than samples");
    assert!(points.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    // the spike and every drop after a climb are drawn
    let y_of = |mi: u64| HEIGHT - (mi << 20) as f64 / chart.top as f64 * HEIGHT;
    let drawn = |mi: u64| points.iter().any(|p| (p.1 - y_of(mi)).abs() < 0.06);
    assert!(drawn(900), "the spike is drawn");
    assert!(
        drawn(10) && drawn(489),
        "the lowest and highest of each climb"
    );
    let drops = points.windows(2).filter(|w| w[1].1 - w[0].1 > 50.0).count();
    assert!(drops >= 11, "the 11 drops after a climb: {drops}");
}
