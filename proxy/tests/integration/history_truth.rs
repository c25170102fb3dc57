//! The recorded history's truth under faults, on the team's path: `deltascope
//! sim` (300 pods) churning 500 changes a second for a minute, one
//! `deltascope record --upstream SIM --history postgres://…` writing into a
//! PostgreSQL of this test's own, and a `deltascope serve --upstream SIM
//! --history postgres://… --history-read-only` answering the history routes
//! (bearer token), as each user of a team runs it.
//!
//! Through the minute: the sim drops every watch (t = 8 s), compacts (16 s:
//! watchers get 410 and relist), restarts (24 s: every connection dropped,
//! state and kube-system uid kept); the recorder is killed with SIGKILL
//! (32 s) and started again 3 s later; PostgreSQL is stopped for 10 s
//! (42 s). Then, for `pods` and `deployments.apps`:
//! - the stored gaps cover the time the recorder was killed (`not-running`),
//!   the database outage (`database-unavailable`) and the 410 (`expired`),
//!   and each begins and ends near a fault;
//! - no version of an object, and no deletion, is stored twice (across the
//!   restarts and relists);
//! - for 20 moments T spread over the minute, and at the edges of every
//!   gap, `history/state?at=T` either answers the state whose digest
//!   `/_sim/digest?rv=RV` gives for the RV it names, or 409 for a T inside
//!   a stored gap; at least [`ANSWERED_AT_LEAST`] of the 20, and every
//!   edge, are answered.
//!
//! Needs `DELTASCOPE_TEST_PG_BIN` and (as root) `DELTASCOPE_TEST_PG_USER`,
//! as `cargo xtask test` sets them; fails naming them otherwise.

use crate::private_postgres;
use crate::serve_support;
use crate::truth_support;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use deltascope_proxy::recorder::wall_now_ms;
use private_postgres::PrivatePostgres;
use serve_support::{digest_of_objects, scratch_dir, serve_binary, Served};
use truth_support::*;

const TOKEN: &str = "history-truth-token-0123456789abcdef0123456";
/// The resources whose past states are checked.
const CHECKED: [&str; 2] = ["pods", "deployments.apps"];
const PODS: usize = 300;
/// Changes a second while the minute runs.
const CHURN: f64 = 500.0;
/// Moments checked over the minute, and how many of them must be answered
/// (not in a gap). The faults' gaps take 25 to 27 s of the 60 by design —
/// the outage's 10 s and the recorder's probes backing off 1, 2, 4, 8 s
/// (it is back about 15 s after the outage began), the kill's 3 s and the
/// restart's catch-up, the relist after the 410 — so 10 to 12 of the 20
/// moments land outside them (10 to 13 in the runs so far); 9 keeps a
/// record that answers 409 everywhere from passing without making a slow
/// machine's longer catch-up a failure. Every gap's edges must be answered
/// besides, and every gap must begin and end near a fault.
const MOMENTS: i64 = 20;
const ANSWERED_AT_LEAST: usize = 9;

/// When each thing happened (wall ms, the recorder's clock).
#[derive(Debug, Default)]
struct Timeline {
    recording: i64,
    start: i64,
    drop_watches: i64,
    compact: i64,
    sim_restart: i64,
    killed: i64,
    respawned: i64,
    database_down: i64,
    database_up: i64,
    end: i64,
}

impl Timeline {
    /// The minute's faults (see [`Fault`]).
    fn faults(&self) -> [Fault; 5] {
        let moment = |what, at| Fault {
            what,
            from: at,
            to: at,
            must_cover: None,
            after: 10_000,
        };
        [
            moment("drop-watches", self.drop_watches),
            moment("the compaction", self.compact),
            moment("the sim's restart", self.sim_restart),
            Fault {
                what: "the kill -9",
                from: self.killed,
                to: self.respawned,
                must_cover: Some("not-running"),
                after: 10_000,
            },
            Fault {
                what: "the PostgreSQL outage",
                from: self.database_down,
                to: self.database_up,
                must_cover: Some("database-unavailable"),
                // the recorder probes 1, 2, 4, 8 s apart: back ~15 s after the outage began
                after: 20_000,
            },
        ]
    }
}

/// A fault of the minute: when it began and ended, the gap reason that must
/// cover that span (`None`: the recorder watches through it, resuming or
/// relisting), and how long after its end a gap it explains may last.
struct Fault {
    what: &'static str,
    from: i64,
    to: i64,
    must_cover: Option<&'static str>,
    after: i64,
}

/// A gap starts at the last moment the record was known complete: at most
/// this long before the fault that caused it (the writer's lag behind the
/// watch; watermarks come every 5 s, deltas far more often here).
const LAG: i64 = 6_000;

/// A gap of `fault.must_cover` covering the fault's span; else what is
/// wrong, with the delta lines stored around the span.
fn check_covered(
    resource: &str,
    gaps: &[Gap],
    deltas: &[DeltaLine],
    fault: &Fault,
) -> Result<(), String> {
    let Some(reason) = fault.must_cover else {
        return Ok(());
    };
    let what = format!(
        "{resource}: {} ({}..{})",
        fault.what,
        time_text(fault.from),
        time_text(fault.to)
    );
    if let Some(gap) = gaps
        .iter()
        .find(|g| g.reason == reason && g.from <= fault.from && g.to >= fault.to)
    {
        println!("{what}: covered by {gap}");
        return Ok(());
    }
    let listed: Vec<String> = gaps.iter().map(Gap::to_string).collect();
    let before = deltas.iter().rfind(|d| d.ms < fault.from);
    let after = deltas.iter().find(|d| d.ms >= fault.from);
    let line = |d: Option<&DeltaLine>| {
        d.map_or("none".to_string(), |d| {
            format!("{} rv {} {}", time_text(d.ms), d.key.1, d.key.2)
        })
    };
    Err(format!(
        "{what}: no {reason} gap covers it; the last delta stored before: {}, the first \
         after: {}; stored gaps: {listed:#?}",
        line(before),
        line(after)
    ))
}

/// The gaps no fault explains: each gap must begin and end near a fault
/// (from [`LAG`] before one to its `after` past its end; a gap may run from
/// one fault into the next).
fn unexplained(resource: &str, gaps: &[Gap], faults: &[Fault]) -> Vec<String> {
    let near = |ms: i64| {
        faults
            .iter()
            .any(|f| f.from - LAG <= ms && ms <= f.to + f.after)
    };
    gaps.iter()
        .filter(|g| !(near(g.from) && near(g.to)))
        .map(|g| format!("{resource}: the gap {g} is far from every fault"))
        .collect()
}

/// What one moment's state check found.
enum Checked {
    Matched,
    InGap,
    Wrong(String),
}

/// `history/state` of `resource` at `at`, compared with the sim's digest at
/// the resourceVersion it names; or its 409, which must fall in a stored gap.
async fn check_moment(
    serve: SocketAddr,
    sim: &SimProcess,
    resource: &str,
    at: i64,
    gaps: &[Gap],
) -> Checked {
    let target = format!(
        "/_deltascope/history/state?resource={resource}&at={}",
        time_text(at)
    );
    let state = serve_get(serve, TOKEN, &target).await;
    let moment = format!("{resource} at {}", time_text(at));
    if state.status == 409 {
        let message = state.json()["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        return match gaps.iter().find(|g| g.holds(at)) {
            Some(gap) => {
                println!("{moment}: 409 in gap {gap}");
                Checked::InGap
            }
            None => Checked::Wrong(format!("{moment}: 409 outside every stored gap: {message}")),
        };
    }
    if state.status != 200 {
        return Checked::Wrong(format!("{moment}: {} {}", state.status, state.text()));
    }
    let list = state.json();
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let ours = digest_of_objects(items.iter());
    let truth = sim.digest_at(resource, &rv).await;
    if truth.status != 200 {
        return Checked::Wrong(format!(
            "{moment} (rv {rv}): the sim gives no digest: {} {}",
            truth.status,
            truth.text()
        ));
    }
    let truth = truth.json();
    let theirs = truth["digest"].as_str().unwrap_or_default();
    if theirs != ours {
        return Checked::Wrong(format!(
            "{moment} (rv {rv}): recorded {} objects, digest {ours}; \
             the sim had {} objects, digest {theirs}",
            items.len(),
            truth["count"]
        ));
    }
    println!("{moment}: rv {rv}, {} objects, digest {ours}", items.len());
    Checked::Matched
}

/// Runs the minute of churn and faults; when each thing happened.
async fn churn_through_faults(
    sim: &SimProcess,
    postgres: &PrivatePostgres,
    recorder: &mut tokio::process::Child,
    log: &std::path::Path,
    at: &mut Timeline,
) -> tokio::process::Child {
    at.start = wall_now_ms();
    let start = at.start;
    let second = |s: i64| start + s * 1_000;
    sim.churn(CHURN).await;
    sleep_until(second(8)).await;
    at.drop_watches = wall_now_ms();
    sim.fault("drop-watches").await;
    sleep_until(second(16)).await;
    at.compact = wall_now_ms();
    sim.fault("compact").await;
    sleep_until(second(24)).await;
    at.sim_restart = wall_now_ms();
    sim.fault("restart").await;
    sleep_until(second(32)).await;
    recorder.start_kill().unwrap(); // SIGKILL: nothing flushed, no last watermark
    recorder.wait().await.unwrap();
    at.killed = wall_now_ms();
    sleep_until(second(35)).await;
    at.respawned = wall_now_ms();
    let respawned = start_recorder(&sim.url(), &postgres.url(), log).await;
    sleep_until(second(42)).await;
    postgres.down();
    at.database_down = wall_now_ms();
    sleep_until(at.database_down + 10_000).await;
    at.database_up = wall_now_ms();
    postgres.up();
    sleep_until(second(60)).await;
    sim.churn(0.0).await;
    at.end = wall_now_ms();
    respawned
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorded_history_is_the_cluster_s_own_through_faults() {
    let begun = Instant::now();
    let postgres = PrivatePostgres::start();
    let history = postgres.url();
    let sim = SimProcess::start(PODS).await;
    let upstream = sim.url();
    let log = scratch_dir().join("record.stderr");
    println!(
        "deltascope record's and serve's stderr: {}",
        log.parent().unwrap().display()
    );

    let mut at = Timeline {
        recording: wall_now_ms(),
        ..Timeline::default()
    };
    let mut recorder = start_recorder(&upstream, &history, &log).await;
    let mut reader = serve_binary(&[
        "--upstream",
        &upstream,
        "--history",
        &history,
        "--history-read-only",
        "--token",
        TOKEN,
    ]);
    let serve_log = log.with_file_name("serve.stderr");
    reader.stderr(std::fs::File::create(&serve_log).unwrap());
    let reader = Served::start(reader).await; // killed when dropped
    let serve = reader.addr;
    wait_complete_through(serve, TOKEN, &CHECKED, 1, Duration::from_secs(30)).await;

    let _recorder = churn_through_faults(&sim, &postgres, &mut recorder, &log, &mut at).await;
    println!("timeline: {at:?}");
    let complete = at.end + 1_000;
    wait_complete_through(serve, TOKEN, &CHECKED, complete, Duration::from_secs(60)).await;
    println!("minute recorded, {:.1} s in", begun.elapsed().as_secs_f64());

    let faults = at.faults();
    let mut problems = Vec::new();
    let mut gaps_of = HashMap::new();
    for resource in CHECKED {
        let whole = (at.recording - 1_000, complete);
        let (deltas, gaps) = read_history(serve, TOKEN, resource, whole, 10_000).await;
        let listed: Vec<String> = gaps.iter().map(Gap::to_string).collect();
        println!("{resource}: {} delta lines, gaps {listed:#?}", deltas.len());
        let twice = stored_twice(&deltas);
        if !twice.is_empty() {
            problems.push(format!(
                "{resource}: {} versions stored twice: {twice:#?}",
                twice.len()
            ));
        }
        for fault in &faults {
            if let Err(why) = check_covered(resource, &gaps, &deltas, fault) {
                problems.push(why);
            }
        }
        problems.extend(unexplained(resource, &gaps, &faults));
        match gaps
            .iter()
            .find(|g| g.reason == "expired" && g.to >= at.compact && g.from < at.sim_restart)
        {
            None => problems.push(format!(
                "{resource}: no expired gap after the compaction at {}: {listed:#?}",
                time_text(at.compact)
            )),
            Some(gap) if gap.to - gap.from > 10_000 => {
                problems.push(format!("{resource}: {gap} is longer than a relist"))
            }
            Some(_) => {}
        }
        gaps_of.insert(resource, gaps);
    }
    println!("histories read, {:.1} s in", begun.elapsed().as_secs_f64());

    let span = at.end - at.start;
    for resource in CHECKED {
        let gaps = &gaps_of[resource];
        let (mut matched, mut in_gaps) = (0, 0);
        for i in 0..MOMENTS {
            let moment = at.start + span * (2 * i + 1) / (2 * MOMENTS);
            match check_moment(serve, &sim, resource, moment, gaps).await {
                Checked::Matched => matched += 1,
                Checked::InGap => in_gaps += 1,
                Checked::Wrong(why) => problems.push(why),
            }
        }
        println!(
            "{resource}: {matched} of {MOMENTS} moments answered and matched, {in_gaps} in gaps"
        );
        if matched < ANSWERED_AT_LEAST {
            problems.push(format!(
                "{resource}: only {matched} of {MOMENTS} moments answered and matched \
                 ({in_gaps} in gaps); at least {ANSWERED_AT_LEAST} must be"
            ));
        }
        // The edges of each gap: the record as it was last known complete,
        // and as it is current again (restored, relisted).
        for gap in gaps.iter().filter(|g| g.to < at.end) {
            for edge in [gap.from, gap.to, gap.to + 1] {
                // inside another gap (overlapping ones), a 409 is right
                let covered = gaps.iter().any(|g| g.from < edge && edge < g.to);
                match check_moment(serve, &sim, resource, edge, gaps).await {
                    Checked::Matched => {}
                    Checked::InGap if covered => {}
                    Checked::InGap => problems.push(format!(
                        "{resource} at {}, an edge of the gap {gap}: 409",
                        time_text(edge)
                    )),
                    Checked::Wrong(why) => problems.push(why),
                }
            }
        }
    }
    println!("done, {:.1} s in", begun.elapsed().as_secs_f64());
    assert!(
        problems.is_empty(),
        "the recorded history is not the cluster's own:\n{}\n(deltascope record's stderr: {})",
        problems.join("\n"),
        log.display()
    );
}
