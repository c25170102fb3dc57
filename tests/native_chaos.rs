//! Native chaos property test ("never diverge"): the sans-IO informer
//! driven by a thin native transport (hyper over loopback) against the real
//! simulated cluster (`deltascope_sim`, in process, served by hyper),
//! while the cluster churns and a seeded schedule injects every fault kind of
//! `POST /_sim/fault` (docs/contracts.md) — drop-watches, compact, throttle,
//! error, garbage-line, restart — plus a paginated list cut mid-page (the
//! history is compacted right before a `continue` request, so the token has
//! expired). Then churn and faults stop and, at quiescence, the informer must
//! have converged on its own: watching, synced (and never un-synced), store
//! digest equal to the cluster's, handlers' mirror equal to the store, and a
//! history with no delta the cluster did not produce (every Added/Updated is
//! a committed ADDED/MODIFIED of that key and resourceVersion, relists are
//! Replaced, deletions found by relists are tombstones).
//!
//! `DELTASCOPE_CHAOS_SEEDS=N` runs N seeds (default 24),
//! `DELTASCOPE_CHAOS_FIRST_SEED=S` starts at S (replay one failing seed with
//! `..._SEEDS=1 ..._FIRST_SEED=S`), `DELTASCOPE_CHAOS_JOBS=J` runs J seeds at
//! a time (default 4). A failure prints the seed, its plan (the fault
//! schedule) and the last requests of the driver.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use deltascope::informer::{
    Action, DeltaObject, DeltaType, EventHandler, Informer, InformerConfig, Input, Millis,
    ObjectRef, Phase, RequestId, RequestKind, ResourceRef, SplitMix64,
};
use deltascope_sim::{Sim, SimConfig, VersionLog, VersionOrigin};
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::mpsc;

// ---- the plan of one seed -------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    DropWatches,
    Compact,
    Throttle(u64),
    Error(u64),
    GarbageLine(u64),
    Restart,
}

impl Fault {
    fn body(self) -> String {
        let (kind, count) = match self {
            Fault::DropWatches => ("drop-watches", 1),
            Fault::Compact => ("compact", 1),
            Fault::Throttle(n) => ("throttle", n),
            Fault::Error(n) => ("error", n),
            Fault::GarbageLine(n) => ("garbage-line", n),
            Fault::Restart => ("restart", 1),
        };
        format!(r#"{{"kind": "{kind}", "count": {count}}}"#)
    }
}

/// Everything random about one run, derived from its seed.
#[derive(Debug, Clone)]
struct Plan {
    seed: u64,
    pods: usize,
    /// Watch-resume / snapshot window of the cluster (small: 410s happen on their own).
    history: usize,
    streaming_list: bool,
    page_size: u32,
    churn_per_sec: f64,
    chaos_ms: u64,
    /// (ms after start, fault), sorted.
    faults: Vec<(u64, Fault)>,
    /// How many `continue` requests get their token expired right before
    /// they are sent (a list cut mid-page).
    list_cuts: u32,
}

impl Plan {
    fn new(seed: u64) -> Plan {
        let mut rng = SplitMix64::new(seed ^ 0xc4a0_5eed);
        let streaming_list = rng.range(0, 2) == 0;
        let chaos_ms = rng.range(1_200, 2_600);
        let mut faults: Vec<(u64, Fault)> = (0..rng.range(3, 9))
            .map(|_| {
                let at = rng.range(0, chaos_ms);
                let fault = match rng.range(0, 6) {
                    0 => Fault::DropWatches,
                    1 => Fault::Compact,
                    2 => Fault::Throttle(rng.range(1, 3)),
                    3 => Fault::Error(rng.range(1, 4)),
                    4 => Fault::GarbageLine(1),
                    _ => Fault::Restart,
                };
                (at, fault)
            })
            .collect();
        faults.sort_by_key(|(at, _)| *at);
        Plan {
            seed,
            pods: rng.range(20, 90) as usize,
            history: [40, 300, 5_000][rng.range(0, 3) as usize],
            streaming_list,
            page_size: rng.range(4, 30) as u32,
            churn_per_sec: rng.range(20, 120) as f64,
            chaos_ms,
            faults,
            list_cuts: if streaming_list {
                0
            } else {
                rng.range(1, 3) as u32
            },
        }
    }
}

// ---- the simulated cluster over loopback ------------------------------------

/// Serves the sim's API and control routes on a loopback port; like
/// `deltascope sim`, every connection is dropped on the `restart` fault.
async fn serve_sim(sim: &Sim) -> SocketAddr {
    let app = sim.api_router().merge(sim.control_router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port for the simulated cluster");
    let addr = listener.local_addr().expect("local address");
    let sim = sim.clone();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            let mut restart = sim.restart_signal();
            tokio::spawn(async move {
                let conn = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service);
                tokio::select! {
                    _ = conn => {}
                    _ = restart.changed() => {}
                }
            });
        }
    });
    addr
}

type HttpClient = Client<HttpConnector, Empty<Bytes>>;

async fn post_control(base: &str, path: &str, body: String) -> Result<(), String> {
    let client: Client<HttpConnector, Full<Bytes>> =
        Client::builder(TokioExecutor::new()).build_http();
    let req = hyper::Request::post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.clone())))
        .map_err(|e| format!("building POST {path}: {e}"))?;
    let resp = tokio::time::timeout(Duration::from_secs(5), client.request(req))
        .await
        .map_err(|_| format!("POST {path} {body} timed out"))?
        .map_err(|e| format!("POST {path} {body}: {e}"))?;
    let status = resp.status();
    let text = resp
        .into_body()
        .collect()
        .await
        .map(|c| String::from_utf8_lossy(&c.to_bytes()).into_owned())
        .unwrap_or_default();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("POST {path} {body}: HTTP {status}: {text}"))
    }
}

// ---- the native driver --------------------------------------------------------

/// What a request task reports back to the driver loop.
enum Wire {
    Started {
        id: RequestId,
        status: u16,
        retry_after_secs: Option<u64>,
    },
    Chunk {
        id: RequestId,
        bytes: Bytes,
    },
    End {
        id: RequestId,
    },
    Failed {
        id: RequestId,
        message: String,
    },
}

/// One GET, its body streamed frame by frame.
async fn run_request(
    client: HttpClient,
    url: String,
    id: RequestId,
    tx: mpsc::UnboundedSender<Wire>,
) {
    let req = match hyper::Request::get(&url)
        .header("accept", "application/json")
        .body(Empty::<Bytes>::new())
    {
        Ok(req) => req,
        Err(e) => {
            let _ = tx.send(Wire::Failed {
                id,
                message: format!("cannot build GET {url}: {e}"),
            });
            return;
        }
    };
    let resp = match client.request(req).await {
        Ok(resp) => resp,
        Err(e) => {
            let _ = tx.send(Wire::Failed {
                id,
                message: format!("GET {url}: {e}"),
            });
            return;
        }
    };
    let retry_after_secs = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok());
    let _ = tx.send(Wire::Started {
        id,
        status: resp.status().as_u16(),
        retry_after_secs,
    });
    let mut body = resp.into_body();
    loop {
        match body.frame().await {
            None => {
                let _ = tx.send(Wire::End { id });
                return;
            }
            Some(Err(e)) => {
                let _ = tx.send(Wire::Failed {
                    id,
                    message: format!("reading {url}: {e}"),
                });
                return;
            }
            Some(Ok(frame)) => {
                if let Ok(bytes) = frame.into_data() {
                    if tx.send(Wire::Chunk { id, bytes }).is_err() {
                        return;
                    }
                }
            }
        }
    }
}

/// Rebuilds the store from the handler callbacks (`key → RV`).
struct Mirror(Rc<RefCell<BTreeMap<String, String>>>);

impl EventHandler for Mirror {
    fn on_add(&mut self, obj: &ObjectRef, _: bool) {
        self.0
            .borrow_mut()
            .insert(obj.key.clone(), obj.resource_version.clone());
    }
    fn on_update(&mut self, _: &ObjectRef, new: &ObjectRef) {
        self.0
            .borrow_mut()
            .insert(new.key.clone(), new.resource_version.clone());
    }
    fn on_delete(&mut self, obj: &DeltaObject) {
        self.0.borrow_mut().remove(obj.key());
    }
}

struct Driver {
    informer: Informer,
    mirror: Rc<RefCell<BTreeMap<String, String>>>,
    client: HttpClient,
    base: String,
    tx: mpsc::UnboundedSender<Wire>,
    rx: mpsc::UnboundedReceiver<Wire>,
    in_flight: HashMap<RequestId, tokio::task::AbortHandle>,
    wake_at: Option<Millis>,
    epoch: Instant,
    rng: SplitMix64,
    list_cuts_left: u32,
    list_cuts_done: u32,
    /// has_synced went from true back to false at some point
    unsynced: Option<String>,
    requests: u64,
    /// the last requests and outcomes, for the failure report
    trace: VecDeque<String>,
}

impl Driver {
    fn new(plan: &Plan, base: String) -> Driver {
        let mut config = InformerConfig::new(ResourceRef::new("", "v1", "pods", true))
            .streaming_list(plan.streaming_list)
            .seed(plan.seed);
        config.page_size = plan.page_size;
        // keep the test fast: short backoff (the shape is unit-tested)
        config.backoff.initial = 20;
        config.backoff.max = 300;
        config.streaming_fallback_after = 3_000;
        let mut informer = Informer::new(config);
        let mirror = Rc::new(RefCell::new(BTreeMap::new()));
        informer.add_handler(Box::new(Mirror(mirror.clone())));
        let (tx, rx) = mpsc::unbounded_channel();
        Driver {
            informer,
            mirror,
            client: Client::builder(TokioExecutor::new()).build_http(),
            base,
            tx,
            rx,
            in_flight: HashMap::new(),
            wake_at: None,
            epoch: Instant::now(),
            rng: SplitMix64::new(plan.seed ^ 0xd71e),
            list_cuts_left: plan.list_cuts,
            list_cuts_done: 0,
            unsynced: None,
            requests: 0,
            trace: VecDeque::new(),
        }
    }

    fn now(&self) -> Millis {
        self.epoch.elapsed().as_millis() as Millis
    }

    fn note(&mut self, s: String) {
        if self.trace.len() >= 40 {
            self.trace.pop_front();
        }
        let t = self.now();
        self.trace.push_back(format!("{t:>6} ms {s}"));
    }

    async fn start(&mut self) -> Result<(), String> {
        let now = self.now();
        self.informer.start(now);
        self.pump().await
    }

    fn handle(&mut self, input: Input<'_>) {
        let was_synced = self.informer.has_synced();
        let now = self.now();
        self.informer.handle(input, now);
        if was_synced && !self.informer.has_synced() && self.unsynced.is_none() {
            self.unsynced = Some(format!("has_synced flipped back to false at {now} ms"));
        }
    }

    /// Carries out the informer's actions.
    async fn pump(&mut self) -> Result<(), String> {
        while let Some(action) = self.informer.poll_action() {
            match action {
                Action::Send {
                    id,
                    kind,
                    path_and_query,
                    ..
                } => {
                    self.requests += 1;
                    if kind == RequestKind::List
                        && path_and_query.contains("&continue=")
                        && self.list_cuts_left > 0
                    {
                        // cut the list mid-page: the continue token expires
                        self.list_cuts_left -= 1;
                        self.list_cuts_done += 1;
                        post_control(&self.base, "/_sim/fault", Fault::Compact.body()).await?;
                        self.note("fault compact (list cut before a continue page)".into());
                    }
                    self.note(format!("send #{} {path_and_query}", id.0));
                    let task = tokio::spawn(run_request(
                        self.client.clone(),
                        format!("{}{path_and_query}", self.base),
                        id,
                        self.tx.clone(),
                    ));
                    self.in_flight.insert(id, task.abort_handle());
                }
                Action::Cancel { id } => {
                    if let Some(task) = self.in_flight.remove(&id) {
                        task.abort();
                        self.note(format!("cancel #{}", id.0));
                    }
                }
            }
        }
        self.wake_at = self.informer.poll_timeout();
        Ok(())
    }

    fn on_wire(&mut self, wire: Wire) {
        let id = match &wire {
            Wire::Started { id, .. }
            | Wire::Chunk { id, .. }
            | Wire::End { id }
            | Wire::Failed { id, .. } => *id,
        };
        if !self.in_flight.contains_key(&id) {
            return; // cancelled
        }
        match wire {
            Wire::Started {
                id,
                status,
                retry_after_secs,
            } => {
                if status != 200 {
                    self.note(format!("#{} HTTP {status}", id.0));
                }
                self.handle(Input::ResponseStarted {
                    id,
                    status,
                    retry_after_secs,
                });
            }
            Wire::Chunk { id, bytes } => {
                // feed the frame in random pieces: lines cross chunk borders
                let mut rest: &[u8] = &bytes;
                while !rest.is_empty() {
                    let take = if self.rng.range(0, 3) == 0 {
                        self.rng.range(1, rest.len() as u64 + 1) as usize
                    } else {
                        rest.len()
                    };
                    let (piece, tail) = rest.split_at(take);
                    self.handle(Input::BodyChunk { id, bytes: piece });
                    rest = tail;
                }
            }
            Wire::End { id } => {
                self.in_flight.remove(&id);
                self.note(format!("#{} end", id.0));
                self.handle(Input::BodyEnd { id });
            }
            Wire::Failed { id, message } => {
                self.in_flight.remove(&id);
                self.note(format!("#{} failed: {message}", id.0));
                self.handle(Input::Failed { id, message });
            }
        }
    }

    /// Runs the loop until `until` (an instant on the real clock).
    async fn run_until(&mut self, until: Instant) -> Result<(), String> {
        loop {
            let now = Instant::now();
            if now >= until {
                return Ok(());
            }
            let wake = self
                .wake_at
                .map(|at| self.epoch + Duration::from_millis(at))
                .unwrap_or(until)
                .min(until);
            tokio::select! {
                wire = self.rx.recv() => {
                    if let Some(wire) = wire {
                        self.on_wire(wire);
                    }
                }
                _ = tokio::time::sleep_until(wake.into()) => {
                    if self.wake_at.is_some_and(|at| self.now() >= at) {
                        self.wake_at = None;
                        self.handle(Input::Tick);
                    }
                }
            }
            self.pump().await?;
        }
    }

    fn store_digest(&self) -> String {
        self.informer.store().digest()
    }
}

// ---- one seed ------------------------------------------------------------------

#[derive(Debug, Default)]
struct Outcome {
    millis: u64,
    converged_after_ms: u64,
    requests: u64,
    relists: u32,
    watch_restarts: u32,
    list_cuts: u32,
    deltas: u64,
    objects: usize,
}

fn check_history(informer: &Informer, log: &VersionLog) -> Result<(), String> {
    if log.lagged() {
        return Err("the version recorder fell behind the cluster (log incomplete)".into());
    }
    let mut by_origin: HashMap<VersionOrigin, HashSet<(String, String)>> = HashMap::new();
    for v in log.versions() {
        if v.resource == "pods" {
            by_origin
                .entry(v.origin)
                .or_default()
                .insert((v.key, v.resource_version));
        }
    }
    let has = |origins: &[VersionOrigin], key: &str, rv: &str| {
        let pair = (key.to_owned(), rv.to_owned());
        origins
            .iter()
            .any(|o| by_origin.get(o).is_some_and(|s| s.contains(&pair)))
    };
    use VersionOrigin::*;
    let mut last_rv: HashMap<&str, u64> = HashMap::new();
    for e in informer.history().iter() {
        let (key, rv) = (e.key(), e.resource_version());
        let ok = match (e.kind, e.tombstone) {
            (DeltaType::Added, _) => has(&[Added], key, rv),
            (DeltaType::Updated, _) => has(&[Modified], key, rv),
            (DeltaType::Deleted, false) => has(&[Deleted], key, rv),
            // a deletion found by a relist: the last state the informer knew
            (DeltaType::Deleted, true) => has(&[Existing, Added, Modified], key, rv),
            (DeltaType::Replaced | DeltaType::Sync, _) => {
                has(&[Existing, Added, Modified], key, rv)
            }
        };
        if !ok {
            return Err(format!(
                "history delta #{} {:?}{} {key} @{rv} is not a version the cluster produced as such",
                e.seq,
                e.kind,
                if e.tombstone { " (tombstone)" } else { "" },
            ));
        }
        // the cluster's RVs are numbers: a key never goes back in time
        let n: u64 = rv
            .parse()
            .map_err(|_| format!("unexpected resourceVersion {rv:?}"))?;
        if let Some(prev) = last_rv.insert(key, n) {
            if n < prev {
                return Err(format!(
                    "history delta #{} {:?} {key} @{rv} goes back from @{prev}",
                    e.seq, e.kind
                ));
            }
        }
    }
    Ok(())
}

async fn run_seed(plan: &Plan) -> Result<Outcome, String> {
    let started = Instant::now();
    let sim = Sim::start(SimConfig {
        seed: plan.seed,
        initial_pods: plan.pods,
        churn_per_sec: 0.0,
        bookmark_interval: Duration::from_millis(200),
        history: plan.history,
        ..SimConfig::default()
    });
    let log = sim.record_versions();
    let addr = serve_sim(&sim).await;
    let base = format!("http://{addr}");
    let mut driver = Driver::new(plan, base.clone());

    let result = async {
        post_control(
            &base,
            "/_sim/churn",
            format!(r#"{{"events_per_sec": {}}}"#, plan.churn_per_sec),
        )
        .await?;
        driver.start().await?;
        let chaos_start = Instant::now();
        for (at, fault) in &plan.faults {
            driver
                .run_until(chaos_start + Duration::from_millis(*at))
                .await?;
            match post_control(&base, "/_sim/fault", fault.body()).await {
                // the restart drops every connection, possibly this one
                // before its answer is written
                Err(e) if *fault != Fault::Restart => return Err(e),
                _ => driver.note(format!("fault {fault:?}")),
            }
        }
        driver
            .run_until(chaos_start + Duration::from_millis(plan.chaos_ms))
            .await?;
        post_control(&base, "/_sim/churn", r#"{"events_per_sec": 0}"#.into()).await?;
        let quiet_from = Instant::now();
        // quiescence: the cluster no longer changes; the informer must catch
        // up on its own and then stay put
        let deadline = quiet_from + Duration::from_secs(20);
        let mut stable_since: Option<Instant> = None;
        loop {
            let step = Instant::now() + Duration::from_millis(50);
            driver.run_until(step).await?;
            let converged = driver.informer.status().phase == Phase::Watching
                && driver.informer.has_synced()
                && driver.store_digest() == sim.digest("pods");
            match (converged, stable_since) {
                (true, None) => stable_since = Some(Instant::now()),
                (true, Some(t)) if t.elapsed() >= Duration::from_millis(400) => break,
                (false, _) => stable_since = None,
                _ => {}
            }
            if Instant::now() >= deadline {
                let st = driver.informer.status();
                return Err(format!(
                    "did not converge within 20 s of quiescence: phase {:?}, synced {}, {} objects vs the cluster's digest {} (store {}), last error {:?}",
                    st.phase,
                    driver.informer.has_synced(),
                    driver.informer.store().len(),
                    sim.digest("pods"),
                    driver.store_digest(),
                    st.last_error.as_ref().map(ToString::to_string),
                ));
            }
        }
        let converged_after_ms = quiet_from.elapsed().as_millis() as u64;
        if let Some(flip) = &driver.unsynced {
            return Err(flip.clone());
        }
        let mirror = deltascope::informer::digest_of(
            driver
                .mirror
                .borrow()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        if mirror != driver.store_digest() {
            return Err("the handlers' mirror differs from the store".into());
        }
        check_history(&driver.informer, &log)?;
        let st = driver.informer.status();
        Ok(Outcome {
            millis: started.elapsed().as_millis() as u64,
            converged_after_ms,
            requests: driver.requests,
            relists: st.relists,
            watch_restarts: st.watch_restarts,
            list_cuts: driver.list_cuts_done,
            deltas: driver.informer.history().recorded(),
            objects: driver.informer.store().len(),
        })
    }
    .await;
    for (_, task) in driver.in_flight.drain() {
        task.abort();
    }
    result.map_err(|e| {
        let trace: Vec<String> = driver.trace.iter().cloned().collect();
        format!(
            "seed {} FAILED: {e}\nplan: {plan:#?}\nlast driver events:\n  {}\nreplay: DELTASCOPE_CHAOS_SEEDS=1 DELTASCOPE_CHAOS_FIRST_SEED={} cargo nextest run -p deltascope --test native_chaos",
            plan.seed,
            trace.join("\n  "),
            plan.seed
        )
    })
}

/// (seed, what happened), as the worker threads finish them.
type SeedResults = Vec<(u64, Result<Outcome, String>)>;

fn env_u64(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

#[test]
fn informer_never_diverges_from_the_simulated_cluster_under_faults() {
    let seeds = env_u64("DELTASCOPE_CHAOS_SEEDS", 24);
    let first = env_u64("DELTASCOPE_CHAOS_FIRST_SEED", 1);
    let jobs = env_u64("DELTASCOPE_CHAOS_JOBS", 4).max(1);
    let next = Arc::new(AtomicU64::new(first));
    let results: Arc<Mutex<SeedResults>> = Arc::default();
    let started = Instant::now();
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let next = next.clone();
            let results = results.clone();
            std::thread::spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::SeqCst);
                if seed >= first + seeds {
                    return;
                }
                let plan = Plan::new(seed);
                // a fresh runtime per seed: the sim's tasks end with it
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("tokio runtime");
                let outcome = rt.block_on(run_seed(&plan));
                rt.shutdown_timeout(Duration::from_secs(1));
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((seed, outcome));
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker thread panicked");
    }
    let mut results = std::mem::take(&mut *results.lock().unwrap_or_else(|p| p.into_inner()));
    results.sort_by_key(|(seed, _)| *seed);
    let mut failures = Vec::new();
    let (mut cuts, mut relists, mut restarts, mut worst_converge, mut total_ms) = (0, 0, 0, 0, 0);
    let (mut requests, mut deltas, mut objects) = (0, 0, 0);
    for (seed, r) in &results {
        match r {
            Ok(o) => {
                cuts += o.list_cuts;
                relists += o.relists;
                restarts += o.watch_restarts;
                worst_converge = worst_converge.max(o.converged_after_ms);
                total_ms += o.millis;
                requests += o.requests;
                deltas += o.deltas;
                objects += o.objects;
                if seeds <= 30 {
                    println!("seed {seed}: {o:?}");
                }
            }
            Err(e) => failures.push(format!("{e}\n")),
        }
    }
    println!(
        "{} seeds ({} jobs) in {:.1} s: {} passed, {} failed; {relists} relists, {restarts} watch restarts, {cuts} lists cut mid-page, {requests} requests, {deltas} deltas, {objects} objects at the end; slowest convergence {worst_converge} ms after quiescence; mean seed {} ms",
        results.len(),
        jobs,
        started.elapsed().as_secs_f64(),
        results.len() - failures.len(),
        failures.len(),
        total_ms / (results.len() - failures.len()).max(1) as u64,
    );
    assert!(
        failures.is_empty(),
        "{} of {} seeds diverged:\n{}",
        failures.len(),
        results.len(),
        failures.join("\n")
    );
}
