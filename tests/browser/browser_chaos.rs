//! "Never diverge", the browser half: what the page shows is what the
//! cluster holds, whatever the network did in between. Headless Chromium
//! watches pods while the simulated cluster churns at 200 events/s and every
//! fault kind is injected twice at seeded random moments — the simulated
//! cluster's six (drop-watches, compact, throttle, error, garbage-line,
//! restart) and the ones the path adds (the tab offline through chromedriver's
//! network emulation; in the chain, `kubectl proxy` killed and restarted on
//! the same port). After every fault the page must be watching and synced
//! again without a reload, within the backoff bounds, and the status bar must
//! have said what happened (state backoff with a countdown and the reason).
//! Once churn stops, the page's `store-stats` digest must equal the simulated
//! cluster's; the exported history must hold no delta the server did not
//! produce (relists are Replaced or tombstone Deleted, each server write at
//! most once, resourceVersions never going back); and the browser log may
//! hold no error but the failed requests of the injected faults.
//!
//! Configurations: `deltascope serve --demo` (streaming lists), and the chain
//! `deltascope sim --no-watch-list` ← real `kubectl proxy` ←
//! `deltascope serve --upstream` (paged lists, as against an apiserver without
//! WatchList). A third test cuts a paged list mid-way: the history is
//! compacted between two pages, so the next `continue` token has expired.
//!
//! Faults are grouped into rounds; each round is a fresh page load, because
//! the reflector's backoff (client-go's: 800 ms doubling to 30 s, reset only
//! after 2 minutes of health) would otherwise make one page's recovery time
//! grow with every fault. Within a round nothing is reloaded. CI runs one
//! seed per configuration; `DELTASCOPE_CHAOS_SEEDS=N` runs N seeds, and
//! `DELTASCOPE_CHAOS_ROUND=K` allows K backoff-causing faults per round
//! (default 3; a large K puts every fault on one page and lets backoff reach
//! its cap — then run with `cargo test`, which has no per-test time limit).
#![cfg(not(target_arch = "wasm32"))]

use crate::support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::chain::{kubectl, start_serve_upstream, start_sim, KubectlProxy};
use support::{browser_log, http, network_conditions, Browser, DemoServer};

/// Churn while faults play.
const CHURN_PER_SEC: u32 = 200;
/// Longest a page may take to be watching again after a fault: the backoff
/// cap (30 s, jitter included) plus a relist and slack for a loaded machine.
const RECOVERY_BOUND: Duration = Duration::from_secs(45);

// ---------------------------------------------------------------- seeds

/// splitmix64, so a seed replays the same schedule.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo).max(1)
    }

    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .filter(|n| *n > 0)
        .unwrap_or(default)
}

/// `first`, or `first..first+N` with `DELTASCOPE_CHAOS_SEEDS=N`.
fn seeds(first: u64) -> Vec<u64> {
    (0..env_number("DELTASCOPE_CHAOS_SEEDS", 1) as u64)
        .map(|i| first + i)
        .collect()
}

// ---------------------------------------------------------------- faults

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    DropWatches,
    Compact,
    Throttle,
    Error,
    GarbageLine,
    Restart,
    /// The tab goes offline (chromedriver network emulation), then online.
    Offline,
    /// `kubectl proxy` is killed, then started again on the same port.
    KubectlProxyRestart,
}

impl Fault {
    const SIMULATED: [Fault; 6] = [
        Fault::DropWatches,
        Fault::Compact,
        Fault::Throttle,
        Fault::Error,
        Fault::GarbageLine,
        Fault::Restart,
    ];

    fn name(self) -> &'static str {
        match self {
            Fault::DropWatches => "drop-watches",
            Fault::Compact => "compact",
            Fault::Throttle => "throttle",
            Fault::Error => "error",
            Fault::GarbageLine => "garbage-line",
            Fault::Restart => "restart",
            Fault::Offline => "offline",
            Fault::KubectlProxyRestart => "kubectl-proxy-restart",
        }
    }

    /// Words of which the status bar's reason must contain one (lowercase),
    /// or None when the fault needs no word to the user (a clean watch close
    /// is re-watched at once).
    fn reason_words(self) -> Option<&'static [&'static str]> {
        Some(match self {
            Fault::DropWatches => return None,
            Fault::Compact => &["410", "too old", "expired"],
            Fault::Throttle => &["429", "throttl"],
            Fault::Error => &["500", "internal"],
            Fault::GarbageLine => &["cannot read"],
            Fault::Restart => &["connection"],
            Fault::Offline => &["connection", "reach"],
            Fault::KubectlProxyRestart => &["502", "503", "bad gateway", "connection", "reach"],
        })
    }
}

/// Each kind twice, shuffled by `seed`, in rounds of at most `per_round`
/// faults that make the page back off.
fn schedule(kinds: &[Fault], seed: u64, per_round: usize) -> Vec<Vec<Fault>> {
    let mut all: Vec<Fault> = kinds.iter().chain(kinds.iter()).copied().collect();
    Rng(seed).shuffle(&mut all);
    let mut rounds: Vec<Vec<Fault>> = vec![Vec::new()];
    let mut backoffs = 0;
    for fault in all {
        let backs_off = fault.reason_words().is_some();
        if backs_off && backoffs == per_round {
            rounds.push(Vec::new());
            backoffs = 0;
        }
        backoffs += usize::from(backs_off);
        if let Some(round) = rounds.last_mut() {
            round.push(fault);
        }
    }
    rounds
}

// ---------------------------------------------------------------- processes

/// Waits for the first stdout line starting with `prefix`; returns the rest.
/// The simulated cluster's control API: the sim itself (no auth) or `serve --demo` (bearer).
#[derive(Clone)]
struct Control {
    addr: SocketAddr,
    bearer: Option<String>,
}

impl Control {
    fn post(&self, path: &str, body: &Value) -> Value {
        let bearer = self.bearer.as_ref().map(|t| format!("Bearer {t}"));
        let mut headers = vec![("Content-Type", "application/json")];
        if let Some(bearer) = &bearer {
            headers.push(("Authorization", bearer));
        }
        let body = body.to_string();
        let (status, reply) = http(self.addr, "POST", path, &headers, Some(body.as_bytes()));
        assert_eq!(
            status,
            200,
            "POST {path} {body}: {}",
            String::from_utf8_lossy(&reply)
        );
        serde_json::from_slice(&reply).unwrap_or(Value::Null)
    }

    fn get(&self, path: &str) -> Value {
        let bearer = self.bearer.as_ref().map(|t| format!("Bearer {t}"));
        let headers: Vec<(&str, &str)> = bearer
            .iter()
            .map(|b| ("Authorization", b.as_str()))
            .collect();
        let (status, reply) = http(self.addr, "GET", path, &headers, None);
        assert_eq!(
            status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&reply)
        );
        serde_json::from_slice(&reply).expect("JSON")
    }

    fn churn(&self, per_sec: u32) {
        self.post("/_sim/churn", &json!({ "events_per_sec": per_sec }));
    }

    fn fault(&self, kind: &str) -> String {
        let reply = self.post("/_sim/fault", &json!({ "kind": kind }));
        reply["effect"].as_str().unwrap_or_default().to_string()
    }

    /// A fault that hits the next request of one resource.
    fn aimed_fault(&self, kind: &str, resource: &str) -> String {
        let reply = self.post(
            "/_sim/fault",
            &json!({ "kind": kind, "resource": resource }),
        );
        reply["effect"].as_str().unwrap_or_default().to_string()
    }

    fn digest(&self) -> (String, u64) {
        let reply = self.get("/_sim/digest?resource=pods");
        (
            reply["digest"].as_str().expect("digest").to_string(),
            reply["count"].as_u64().expect("count"),
        )
    }
}

// ---------------------------------------------------------------- browser log

/// Errors in the log that are not the logged, handled failure of an
/// injected fault: a request of the page's API path that failed with a
/// fault's status or a broken/refused connection is expected (the reflector
/// handled it); anything else — an exception, a console error, a failed asset
/// — is not.
fn unexpected_errors(log: &[Value]) -> Vec<String> {
    const FAULT_STATUSES: [&str; 7] = [
        "status of 410",
        "status of 422",
        "status of 429",
        "status of 500",
        "status of 502",
        "status of 503",
        "status of 504",
    ];
    log.iter()
        .filter(|entry| entry["level"] == "SEVERE")
        .filter_map(|entry| {
            let message = entry["message"].as_str().unwrap_or_default();
            if message.contains("blob:captured") {
                // The test's own capture of the history export (HISTORY_CHECK).
                return None;
            }
            // The API, and the channel that carries its watches (its control
            // requests fail with the connection when the tab goes offline),
            // and serve's history summary (asked every 30 s: one that fails
            // leaves the status bar's item as it was).
            let api = message.contains("/api/")
                || message.contains("/apis/")
                || message.contains("/_deltascope/channel")
                || message.contains("/_deltascope/history/summary");
            let network = entry["source"] == "network";
            let handled = network
                && api
                && (FAULT_STATUSES.iter().any(|s| message.contains(s))
                    || message.contains("net::ERR_"));
            (!handled).then(|| message.to_string())
        })
        .collect()
}

// ---------------------------------------------------------------- the page

/// Installs a recorder of every change of the status bar's state and detail
/// (a MutationObserver, so a 1 s backoff is not missed between polls).
const RECORDER: &str = r#"
if (!window.__chaos) {
  const rec = { log: [], last: '' };
  const sample = () => {
    const s = document.querySelector('[data-testid=store-stats]');
    if (!s) return;
    const d = document.querySelector('.status-bar .detail');
    const c = document.querySelector('.status-bar .counters');
    const entry = [s.dataset.state, s.dataset.synced, d ? d.textContent : '', c ? c.textContent : ''];
    const key = entry.slice(0, 3).join('|');
    if (key !== rec.last) {
      rec.last = key;
      rec.log.push([Math.round(performance.now())].concat(entry));
      if (rec.log.length > 20000) rec.log.splice(0, 5000);
    }
  };
  new MutationObserver(sample).observe(document.body, {
    subtree: true, childList: true, characterData: true, attributes: true,
    attributeFilter: ['data-state', 'data-synced'] });
  sample();
  window.__chaos = rec;
}
return true;
"#;

/// One recorded status bar state.
#[derive(Debug, Clone)]
struct Status {
    state: String,
    synced: bool,
    detail: String,
}

async fn take_statuses(browser: &Browser) -> Vec<Status> {
    let value = browser
        .client
        .execute(
            "const l = window.__chaos ? window.__chaos.log : []; if (window.__chaos) window.__chaos.log = []; return l;",
            vec![],
        )
        .await
        .unwrap_or(Value::Null);
    value
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| Status {
                    state: e[1].as_str().unwrap_or_default().to_string(),
                    synced: e[2] == "true",
                    detail: e[3].as_str().unwrap_or_default().to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Opens `url` and waits for the first sync; installs the status recorder.
async fn open_page(browser: &Browser, url: &str) {
    browser.client.goto(url).await.expect("open the page");
    browser
        .wait_for(
            "the pods table to sync",
            Duration::from_secs(60),
            || async {
                let (count, synced, state, _) = browser.store_stats().await?;
                (synced == "true" && state == "watching" && count != "0").then_some(())
            },
        )
        .await;
    browser
        .client
        .execute(RECORDER, vec![])
        .await
        .expect("install the status recorder");
}

/// Analyses the exported history inside the page (it can be tens of MB) and
/// returns the verdict: delta counts, violations, and the (key, RV) pairs of
/// the store the history replays to.
const HISTORY_CHECK: &str = r#"
const done = arguments[arguments.length - 1];
const original = URL.createObjectURL;
URL.createObjectURL = (blob) => {
  URL.createObjectURL = original;
  blob.text().then((text) => {
    const counts = {}, violations = [], last = new Map(), present = new Set(), writes = new Set();
    const lines = text.split('\n').filter((l) => l.length > 0);
    lines.forEach((line, i) => {
      const e = JSON.parse(line), m = e.object.metadata || {};
      const key = m.namespace ? m.namespace + '/' + m.name : m.name;
      const rv = BigInt(m.resourceVersion), kind = e.deltaType, prev = last.get(key);
      const bad = (why) => { if (violations.length < 20) violations.push(`delta ${i + 1}: ${kind} ${key} at ${rv}: ${why}`); };
      let counted = kind;
      if (kind === 'Replaced') {
        if (prev !== undefined && rv < prev) bad(`goes back from ${prev}`);
        present.add(key);
      } else if (kind === 'Added' || kind === 'Updated') {
        if (kind === 'Added' && present.has(key)) bad('added while present');
        if (kind === 'Updated' && !present.has(key)) bad('updated while absent');
        if (prev !== undefined && rv <= prev) bad(`not newer than ${prev}: not a server write`);
        if (writes.has(rv)) bad('a server write delivered twice');
        writes.add(rv);
        present.add(key);
      } else if (kind === 'Deleted') {
        if (!present.has(key)) bad('deleted while absent');
        if (prev !== undefined && rv === prev) {
          counted = 'DeletedTombstone';
        } else {
          if (prev !== undefined && rv < prev) bad(`goes back from ${prev}`);
          if (writes.has(rv)) bad('a server write delivered twice');
          writes.add(rv);
        }
        present.delete(key);
      } else {
        bad('a delta type the page must not produce here');
      }
      counts[counted] = (counts[counted] || 0) + 1;
      last.set(key, rv);
    });
    const store = [...present].map((k) => [k, String(last.get(k))]);
    done({ counts, violations, store, deltas: lines.length });
  });
  return 'blob:captured';
};
document.querySelector('[data-testid=export]').click();
"#;

#[derive(Debug)]
struct HistoryVerdict {
    counts: BTreeMap<String, u64>,
    violations: Vec<String>,
    replayed_digest: String,
}

async fn check_history(browser: &Browser) -> HistoryVerdict {
    let dropped = browser
        .attr("[data-testid=history-stats]", "data-dropped")
        .await;
    assert_eq!(
        dropped.as_deref(),
        Some("0"),
        "retention evicted deltas: the history check needs all of them"
    );
    let verdict = browser
        .client
        .execute_async(HISTORY_CHECK, vec![])
        .await
        .expect("export and analyse the history");
    let counts = verdict["counts"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let violations = verdict["violations"]
        .as_array()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let pairs: Vec<(String, String)> = verdict["store"]
        .as_array()
        .map(|pairs| {
            pairs
                .iter()
                .filter_map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let replayed_digest =
        deltascope::informer::digest_of(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    HistoryVerdict {
        counts,
        violations,
        replayed_digest,
    }
}

/// What one fault did to the page.
#[derive(Debug)]
struct Outcome {
    fault: Fault,
    /// The first backoff/error status shown, if any.
    told: Option<String>,
    recovered_after: Duration,
}

/// Injects `fault`, then waits until the page was told (when the fault must
/// produce a word) and is watching and synced again.
async fn play(
    browser: &Browser,
    control: &Control,
    kubectl_proxy: Option<&mut KubectlProxy>,
    fault: Fault,
    rng: &mut Rng,
) -> Outcome {
    take_statuses(browser).await;
    let started = Instant::now();
    let mut effect = String::new();
    match fault {
        Fault::Offline => {
            network_conditions(browser, true, 0).await;
            // DevTools offline spares established connections, which a real
            // network loss would not: end the watch so the page must reconnect.
            effect = control.fault(Fault::DropWatches.name());
            tokio::time::sleep(Duration::from_millis(rng.range(1000, 3000))).await;
            network_conditions(browser, false, 0).await;
        }
        Fault::KubectlProxyRestart => {
            let proxy = kubectl_proxy.expect("a kubectl proxy in this configuration");
            proxy.kill();
            tokio::time::sleep(Duration::from_millis(rng.range(500, 2500))).await;
            proxy.restart();
        }
        Fault::Throttle | Fault::Error => {
            // They hit the next requests of pods; the page has none while it
            // watches, so end its watches cleanly: the pods re-watch meets
            // the fault. Aimed at pods, not at any request, because the page
            // holds more watches than the shown view's (the CRD watch behind
            // discovery re-watches too, in either order).
            effect = control.aimed_fault(fault.name(), "pods");
            effect.push_str("; ");
            effect.push_str(&control.fault(Fault::DropWatches.name()));
        }
        _ => effect = control.fault(fault.name()),
    }
    let mut told: Option<String> = None;
    let mut seen: Vec<Status> = Vec::new();
    loop {
        let statuses = take_statuses(browser).await;
        for status in &statuses {
            if told.is_none() && matches!(status.state.as_str(), "backoff" | "error") {
                told = Some(status.detail.clone());
            }
        }
        seen.extend(statuses);
        let now = browser.store_stats().await;
        let watching = now
            .as_ref()
            .is_some_and(|(_, synced, state, _)| synced == "true" && state == "watching");
        let must_tell = fault.reason_words().is_some();
        if watching
            && (told.is_some() || !must_tell)
            && started.elapsed() > Duration::from_millis(300)
        {
            break;
        }
        if started.elapsed() > RECOVERY_BOUND {
            let trail: Vec<String> = seen
                .iter()
                .map(|s| format!("{} synced={} {:?}", s.state, s.synced, s.detail))
                .collect();
            panic!(
                "after {} ({effect}) the page was not {} within {RECOVERY_BOUND:?}; now {now:?}; status trail:\n{}",
                fault.name(),
                if must_tell && told.is_none() { "told (backoff with a reason) and watching" } else { "watching and synced" },
                trail.join("\n")
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Outcome {
        fault,
        told,
        recovered_after: started.elapsed(),
    }
}

/// Checks (4): every fault that must be told was told with a countdown and its reason.
fn assert_told(outcome: &Outcome) {
    let Some(words) = outcome.fault.reason_words() else {
        return;
    };
    let told = outcome.told.as_deref().unwrap_or_default();
    let lower = told.to_lowercase();
    assert!(
        lower.contains("retrying in") && words.iter().any(|w| lower.contains(w)),
        "after {} the status bar should show a backoff countdown and the reason ({words:?}); it said {told:?}",
        outcome.fault.name()
    );
}

/// Waits until the page's digest equals the cluster's (churn stopped).
async fn converge(browser: &Browser, control: &Control) -> (String, u64) {
    control.churn(0);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (expected, count) = control.digest();
    let settled = Instant::now();
    browser
        .wait_for(
            "the page's digest to equal the cluster's at quiescence",
            RECOVERY_BOUND,
            || async {
                let (page_count, synced, state, digest) = browser.store_stats().await?;
                (synced == "true"
                    && state == "watching"
                    && digest == expected
                    && page_count == count.to_string())
                .then_some(())
            },
        )
        .await;
    eprintln!(
        "chaos: converged on {count} pods in {:?}",
        settled.elapsed()
    );
    (expected, count)
}

/// One configuration under chaos: every round is a fresh page load.
async fn run_chaos(
    label: &str,
    login_url: &str,
    control: &Control,
    mut kubectl_proxy: Option<&mut KubectlProxy>,
    kinds: &[Fault],
    seed: u64,
) {
    let per_round = env_number("DELTASCOPE_CHAOS_ROUND", 3);
    let rounds = schedule(kinds, seed, per_round);
    let mut rng = Rng(seed ^ 0xC4A0_5EED);
    let browser = Browser::start().await;
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (round_index, round) in rounds.iter().enumerate() {
        eprintln!(
            "chaos {label} seed {seed} round {}: {:?}",
            round_index + 1,
            round.iter().map(|f| f.name()).collect::<Vec<_>>()
        );
        open_page(&browser, login_url).await;
        control.churn(CHURN_PER_SEC);
        for fault in round {
            tokio::time::sleep(Duration::from_millis(rng.range(200, 1800))).await;
            let outcome = play(
                &browser,
                control,
                kubectl_proxy.as_deref_mut(),
                *fault,
                &mut rng,
            )
            .await;
            eprintln!(
                "chaos {label} seed {seed}: {} recovered after {:?}; told {:?}",
                fault.name(),
                outcome.recovered_after,
                outcome.told
            );
            assert_told(&outcome);
            outcomes.push(outcome);
        }
        let (expected, count) = converge(&browser, control).await;
        let history = check_history(&browser).await;
        eprintln!(
            "chaos {label} seed {seed} round {}: history {:?}",
            round_index + 1,
            history.counts
        );
        assert!(
            history.violations.is_empty(),
            "{label} seed {seed}: the history holds deltas the server did not produce:\n{}",
            history.violations.join("\n")
        );
        assert_eq!(
            history.replayed_digest, expected,
            "{label} seed {seed}: replaying the history must give the cluster's {count} pods"
        );
        assert!(
            history.counts.get("Updated").copied().unwrap_or(0) > 0,
            "churn reached the page as watch events: {:?}",
            history.counts
        );
        let errors = unexpected_errors(&browser_log(&browser).await);
        assert!(
            errors.is_empty(),
            "{label} seed {seed}: browser errors that are not handled faults:\n{}",
            errors.join("\n")
        );
    }
    let slowest = outcomes
        .iter()
        .max_by_key(|o| o.recovered_after)
        .map(|o| (o.fault.name(), o.recovered_after));
    eprintln!(
        "chaos {label} seed {seed}: {} faults, slowest recovery {slowest:?}",
        outcomes.len()
    );
    browser.client.close().await.expect("close the browser");
}

// ---------------------------------------------------------------- tests

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_page_never_diverges_under_every_fault() {
    let mut kinds = Fault::SIMULATED.to_vec();
    kinds.push(Fault::Offline);
    for seed in seeds(8) {
        let seed_arg = seed.to_string();
        let server = DemoServer::start(&["--seed", &seed_arg, "--pods", "300", "--churn", "0"]);
        let control = Control {
            addr: server.addr,
            bearer: Some(server.token.clone()),
        };
        run_chaos("demo", &server.login_url, &control, None, &kinds, seed).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn page_behind_kubectl_proxy_never_diverges_under_every_fault() {
    let kubectl = kubectl();
    let mut kinds = Fault::SIMULATED.to_vec();
    kinds.push(Fault::KubectlProxyRestart);
    kinds.push(Fault::Offline);
    for seed in seeds(80) {
        let seed_arg = seed.to_string();
        // Paged lists (1200 pods: three pages of 500), as against an apiserver without WatchList.
        let (_sim, sim_addr) = start_sim(&[
            "--seed",
            &seed_arg,
            "--pods",
            "1200",
            "--churn",
            "0",
            "--no-watch-list",
        ]);
        let mut proxy = KubectlProxy::start(kubectl.clone(), format!("http://{sim_addr}"));
        let (_serve, login_url) = start_serve_upstream(&proxy.url(), &[]);
        let control = Control {
            addr: sim_addr,
            bearer: None,
        };
        run_chaos(
            "chain",
            &login_url,
            &control,
            Some(&mut proxy),
            &kinds,
            seed,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_cut_mid_page_by_an_expired_continue_token_starts_over() {
    // 4000 pods in pages of 500, from a cluster without streaming lists; each
    // request is delayed 250 ms so the list is still running when the
    // history is compacted under it.
    let server = DemoServer::start(&[
        "--seed",
        "21",
        "--pods",
        "4000",
        "--churn",
        "0",
        "--no-watch-list",
    ]);
    let control = Control {
        addr: server.addr,
        bearer: Some(server.token.clone()),
    };
    let browser = Browser::start().await;
    network_conditions(&browser, false, 250).await;
    browser
        .client
        .goto(&server.login_url)
        .await
        .expect("open the page");
    let pages = browser
        .wait_for(
            "the list to be past its first page",
            Duration::from_secs(60),
            || async {
                let detail = browser
                    .client
                    .execute(
                        "const d = document.querySelector('.status-bar .detail'); return d ? d.textContent : '';",
                        vec![],
                    )
                    .await
                    .ok()?;
                let detail = detail.as_str()?.to_string();
                let pages: u32 = detail
                    .strip_prefix("listing: ")?
                    .split(" in ")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse()
                    .ok()?;
                (pages >= 1).then_some(pages)
            },
        )
        .await;
    let effect = control.fault("compact");
    assert!(
        effect.contains(" 0 open watches"),
        "the page was still listing (no watch open) when the history was compacted: {effect}"
    );
    network_conditions(&browser, false, 0).await;
    let (expected, count) = control.digest();
    browser
        .wait_for(
            "the page to list again and sync to the cluster's digest",
            Duration::from_secs(60),
            || async {
                let (page_count, synced, state, digest) = browser.store_stats().await?;
                (synced == "true"
                    && state == "watching"
                    && digest == expected
                    && page_count == count.to_string())
                .then_some(())
            },
        )
        .await;
    let counters = browser
        .client
        .execute(
            "return document.querySelector('.status-bar .counters').textContent;",
            vec![],
        )
        .await
        .expect("counters");
    assert!(
        counters.as_str().is_some_and(|c| c.ends_with(" 1 relists")),
        "one relist after the cut list (compacted after page {pages}): {counters}"
    );
    let log = browser_log(&browser).await;
    assert!(
        log.iter().any(|e| {
            let m = e["message"].as_str().unwrap_or_default();
            m.contains("continue=") && m.contains("status of 410")
        }),
        "the browser saw the expired continue token answered 410: {log:#?}"
    );
    let errors = unexpected_errors(&log);
    assert!(
        errors.is_empty(),
        "unexpected browser errors:\n{}",
        errors.join("\n")
    );
    // The cut list never reached the store: one Replaced per pod, nothing invented.
    let history = check_history(&browser).await;
    assert!(history.violations.is_empty(), "{:?}", history.violations);
    assert_eq!(
        history.counts,
        BTreeMap::from([("Replaced".to_string(), count)]),
        "the history is exactly the one completed list"
    );
    assert_eq!(history.replayed_digest, expected);
    browser.client.close().await.expect("close the browser");
}

#[test]
fn the_schedule_injects_every_kind_twice_in_bounded_rounds() {
    let kinds = Fault::SIMULATED;
    for seed in 0..20 {
        let rounds = schedule(&kinds, seed, 3);
        let all: Vec<Fault> = rounds.iter().flatten().copied().collect();
        for kind in kinds {
            assert_eq!(all.iter().filter(|f| **f == kind).count(), 2, "{kind:?}");
        }
        for round in &rounds {
            let backoffs = round.iter().filter(|f| f.reason_words().is_some()).count();
            assert!((1..=3).contains(&backoffs) || round.iter().all(|f| *f == Fault::DropWatches));
        }
        assert_eq!(schedule(&kinds, seed, 3), rounds, "a seed replays");
    }
}

#[test]
fn only_failed_api_requests_of_faults_are_tolerated_in_the_log() {
    let log = vec![
        json!({"level": "SEVERE", "source": "network", "message": "http://127.0.0.1:1/api/v1/pods?watch=true - Failed to load resource: the server responded with a status of 500 (Internal Server Error)"}),
        json!({"level": "SEVERE", "source": "network", "message": "http://127.0.0.1:1/api/v1/pods?watch=true - Failed to load resource: net::ERR_INCOMPLETE_CHUNKED_ENCODING"}),
        json!({"level": "SEVERE", "source": "network", "message": "http://127.0.0.1:1/_deltascope/channel/ab - Failed to load resource: net::ERR_INTERNET_DISCONNECTED"}),
        json!({"level": "INFO", "source": "console-api", "message": "hello"}),
        json!({"level": "SEVERE", "source": "javascript", "message": "Uncaught RuntimeError: unreachable"}),
        json!({"level": "SEVERE", "source": "network", "message": "http://127.0.0.1:1/app_bg.wasm - Failed to load resource: the server responded with a status of 404 (Not Found)"}),
    ];
    let errors = unexpected_errors(&log);
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].contains("unreachable") && errors[1].contains("wasm"));
}
