//! The `deltascope` command: `serve` (the auth proxy in front of `kubectl proxy`
//! or the embedded simulated cluster) and `sim` (the simulated cluster alone).
//! This file only parses the command line and maps it onto the library's
//! configs (the simulated cluster's flags are refused without `--demo`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use deltascope_proxy::clusters::{ClusterFlag, ClusterPlan};
use deltascope_proxy::serve::{ServeConfig, Upstream};
use deltascope_sim::SimConfig;

mod history_args;

#[global_allocator]
static ALLOCATOR: deltascope_proxy::allocator::ProcessAllocator =
    deltascope_proxy::allocator::ProcessAllocator;

use history_args::HistoryArgs;

#[derive(Parser, Debug)]
#[command(
    name = "deltascope",
    version,
    about = "Live Kubernetes tables and change history in the browser"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Serve the dashboard: authenticate the browser and forward read-only API calls.
    Serve(Box<ServeArgs>),
    /// Run the simulated cluster alone (loopback only, no auth), for kubectl and tests.
    Sim(SimArgs),
    /// Record the cluster's history alone (no page, no sign-in): one per
    /// cluster for a team, into the PostgreSQL their `serve --history-read-only` reads.
    Record(RecordArgs),
}

#[derive(Args, Debug)]
struct RecordArgs {
    /// The Kubernetes API to record, normally `kubectl proxy`.
    #[arg(long, default_value = "http://127.0.0.1:8001")]
    upstream: String,
    #[command(flatten)]
    history: HistoryArgs,
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// A kubeconfig context to serve: serve runs `kubectl proxy` for it on a
    /// private Unix socket (no TCP port carries your credentials). Repeat for
    /// several clusters; the first cluster given is the default. With no
    /// --context, --upstream or --demo: the kubeconfig's current context.
    #[arg(long = "context", value_name = "NAME", conflicts_with = "demo")]
    contexts: Vec<String>,
    /// The kubeconfig kubectl reads for --context (default: KUBECONFIG, else ~/.kube/config).
    #[arg(long, value_name = "PATH", conflicts_with = "demo")]
    kubeconfig: Option<PathBuf>,
    /// A Kubernetes API you run a proxy for yourself (e.g. `kubectl proxy`),
    /// as URL or NAME=URL; repeatable, and may be mixed with --context.
    #[arg(long = "upstream", value_name = "[NAME=]URL", conflicts_with = "demo")]
    upstreams: Vec<String>,
    /// The clusters of --context and --upstream in the order given (filled by `parse_cli`).
    #[arg(skip)]
    clusters: Vec<ClusterFlag>,
    /// Use the embedded simulated cluster instead of an upstream.
    #[arg(long)]
    demo: bool,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Serve the page from this directory (trunk's output, for the dev loop)
    /// instead of the page built into this binary.
    #[arg(long, value_name = "DIR")]
    dist: Option<PathBuf>,
    /// Session token (at least 32 bytes); a random 256-bit token when omitted.
    /// Visible to other users in `ps`: prefer --token-file or DELTASCOPE_TOKEN.
    #[arg(long, conflicts_with = "token_file")]
    token: Option<String>,
    /// Read the session token from the first line of this file (keep it `chmod 600`).
    /// Without --token or --token-file, the environment variable DELTASCOPE_TOKEN is used if set.
    #[arg(long, value_name = "PATH")]
    token_file: Option<PathBuf>,
    /// Extra Host header values to accept (DNS-rebinding defence allows only these and the listen address).
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// Let non-GET requests through to the cluster.
    #[arg(long)]
    allow_writes: bool,
    /// Do not redact Secret values.
    #[arg(long)]
    show_secrets: bool,
    /// Watches (and followed logs) open at once per session.
    #[arg(long, default_value_t = deltascope_proxy::limits::DEFAULT_MAX_WATCHES)]
    max_watches: usize,
    /// Other upstream requests (lists, gets, logs) in flight at once per session.
    #[arg(long, default_value_t = deltascope_proxy::limits::DEFAULT_MAX_REQUESTS)]
    max_requests: usize,
    /// Serve no multiplexed channel: the page then keeps at most a few
    /// watches on their own connections and pauses the rest (for trying that fallback).
    #[arg(long)]
    no_channel: bool,
    /// Browser connections open at once; at the cap, connections that have not
    /// authenticated are closed first (lowered to fit the open-file limit).
    #[arg(long, default_value_t = deltascope_proxy::conn::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Time a connection that has not authenticated gets to send a request head
    /// (from its opening or its previous response), e.g. `10s`.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    header_read_timeout: Duration,
    /// Time an authenticated connection may stay open with no request in flight.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    idle_timeout: Duration,
    /// A browser session unused this long ends (a page with a live view open keeps it in use).
    #[arg(long, default_value = "12h", value_parser = parse_duration)]
    session_idle_timeout: Duration,
    /// For tests only (hidden): how long a sign-in link's one-time code stays
    /// valid, instead of 5 minutes, so a test can see one expire.
    #[arg(long, hide = true, value_parser = parse_duration)]
    sign_in_code_ttl: Option<Duration>,
    /// Read the history (--history) without recording: a `deltascope record`
    /// elsewhere writes it (a team's PostgreSQL), and recording twice would
    /// store every change twice.
    #[arg(long)]
    history_read_only: bool,
    #[command(flatten)]
    history: HistoryArgs,
    #[command(flatten)]
    sim: SimWorkloadArgs,
}

/// Where the session token comes from, in order: `--token`, `--token-file`,
/// `DELTASCOPE_TOKEN`, else a random one (`None`).
fn resolve_token(args: &ServeArgs) -> Result<Option<String>, String> {
    if let Some(token) = &args.token {
        return Ok(Some(token.clone()));
    }
    if let Some(path) = &args.token_file {
        return deltascope_proxy::auth::read_token_file(path)
            .map(Some)
            .map_err(|e| e.to_string());
    }
    match std::env::var(TOKEN_ENV) {
        Ok(token) if token.is_empty() => Err(format!(
            "{TOKEN_ENV} is set but empty (unset it for a random token)"
        )),
        Ok(token) => Ok(Some(token)),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{TOKEN_ENV} is not valid UTF-8")),
    }
}

const TOKEN_ENV: &str = "DELTASCOPE_TOKEN";

/// `500ms`, `90s`, `15m`, `12h`; a bare number is seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = history_args::number_and_unit(text)
        .ok_or_else(|| format!("{text:?} is not a duration like 500ms, 90s, 15m or 12h"))?;
    let duration = match unit {
        "ms" => Duration::from_millis(number),
        "" | "s" => Duration::from_secs(number),
        "m" => Duration::from_secs(number.saturating_mul(60)),
        "h" => Duration::from_secs(number.saturating_mul(3600)),
        _ => {
            return Err(format!(
                "unknown unit {unit:?} in {text:?}: use ms, s, m or h"
            ))
        }
    };
    if duration.is_zero() {
        return Err("a timeout must be longer than zero".into());
    }
    Ok(duration)
}

#[derive(Args, Debug)]
struct SimArgs {
    /// Address to listen on; must be a loopback address.
    #[arg(long, default_value = "127.0.0.1:8001")]
    listen: SocketAddr,
    #[command(flatten)]
    sim: SimWorkloadArgs,
}

#[derive(Args, Debug)]
struct SimWorkloadArgs {
    /// Seed of the simulated workload (deterministic for a given seed).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Pods created at start.
    #[arg(long, default_value_t = 200)]
    pods: usize,
    /// Refuse streaming lists (`sendInitialEvents`) with 422, like an apiserver
    /// without the WatchList feature: clients then list page by page.
    #[arg(long)]
    no_watch_list: bool,
    /// Workload changes per second at start (0 = quiet until told otherwise).
    #[arg(long, default_value_t = 5.0)]
    churn: f64,
    /// Prefix for resourceVersions, to prove clients treat them as opaque.
    #[arg(long)]
    rv_prefix: Option<String>,
    /// The minor version reported by /version.
    #[arg(long, default_value_t = 32)]
    minor_version: u32,
    /// Resources to answer `403 Forbidden` for, as RBAC would (e.g. `secrets,widgets.demo.deltascope.dev`).
    #[arg(long, value_delimiter = ',')]
    forbid: Vec<String>,
    /// Seconds an Event is kept after its last write (the apiserver's
    /// `--event-ttl`, one hour there; shorter here so expiry is seen).
    #[arg(long, value_name = "SECS", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(1..=86400))]
    event_ttl: u64,
    /// Serve no metrics API (`metrics.k8s.io`), like a cluster without
    /// metrics-server: `kubectl top` says "Metrics API not available".
    #[arg(long)]
    no_metrics: bool,
    /// Seconds one metrics window lasts: the metrics API's numbers change
    /// once per window (metrics-server's `--metric-resolution`).
    #[arg(long, value_name = "SECS", default_value_t = 15,
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    metrics_resolution: u64,
    /// Windows the leaking container (`shop`'s `cart`) takes to climb to its
    /// memory limit, where it is OOMKilled.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u32).range(2..=10_000))]
    metrics_leak_windows: u32,
}

impl SimWorkloadArgs {
    // `..default()` keeps this compiling while SimConfig grows fields.
    #[allow(clippy::needless_update)]
    fn to_config(&self) -> SimConfig {
        SimConfig {
            seed: self.seed,
            initial_pods: self.pods,
            churn_per_sec: self.churn,
            watch_list: !self.no_watch_list,
            rv_prefix: self.rv_prefix.clone().unwrap_or_default(),
            minor_version: self.minor_version,
            forbidden: self.forbid.clone(),
            event_ttl: std::time::Duration::from_secs(self.event_ttl),
            metrics: !self.no_metrics,
            metrics_resolution: std::time::Duration::from_secs(self.metrics_resolution),
            metrics_leak_windows: self.metrics_leak_windows,
            ..SimConfig::default()
        }
    }
}

/// The simulated cluster's flags given to `serve` without `--demo`: they
/// would be ignored, so they are refused, each named as typed.
fn sim_flags_without_demo(matches: &ArgMatches) -> Vec<String> {
    let Some(("serve", serve)) = matches.subcommand() else {
        return Vec::new();
    };
    if serve.get_flag("demo") {
        return Vec::new();
    }
    SimWorkloadArgs::augment_args(clap::Command::new("sim"))
        .get_arguments()
        .filter(|arg| serve.value_source(arg.get_id().as_str()) == Some(ValueSource::CommandLine))
        .map(|arg| format!("--{}", arg.get_long().unwrap_or(arg.get_id().as_str())))
        .collect()
}

/// Parses the command line; exits with clap's usage error for sim flags
/// given to `serve --upstream`.
fn parse_cli() -> Cli {
    let matches = Cli::command().get_matches();
    let misplaced = sim_flags_without_demo(&matches);
    if !misplaced.is_empty() {
        Cli::command()
            .error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "{} set the simulated cluster, which serve runs only with --demo: add --demo, or leave them out to serve an --upstream cluster",
                    misplaced.join(", ")
                ),
            )
            .exit();
    }
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    if let (Command::Serve(args), Some(("serve", serve))) = (&mut cli.command, matches.subcommand())
    {
        args.clusters = cluster_flags(serve);
    }
    cli
}

/// serve's `--context` and `--upstream` values in the order they were
/// given: the first is the default cluster.
fn cluster_flags(serve: &ArgMatches) -> Vec<ClusterFlag> {
    let mut flags: Vec<(usize, ClusterFlag)> = Vec::new();
    for id in ["contexts", "upstreams"] {
        let (Some(indices), Some(values)) = (serve.indices_of(id), serve.get_many::<String>(id))
        else {
            continue;
        };
        flags.extend(indices.zip(values).map(|(index, value)| match id {
            "contexts" => (index, ClusterFlag::Context(value.clone())),
            _ => (index, ClusterFlag::upstream(value)),
        }));
    }
    flags.sort_by_key(|(index, _)| *index);
    flags.into_iter().map(|(_, flag)| flag).collect()
}

/// The loud warning `--record-secret-values-in-plain-text` earns.
fn warn_secret_values(history: &HistoryArgs) {
    if history.stores_secret_values() {
        eprintln!(
            "deltascope: WARNING: --record-secret-values-in-plain-text: every Secret's values \
             are being written to the history database in plain text"
        );
    }
}

fn cannot_start(error: std::io::Error) -> String {
    format!("cannot start the async runtime: {error}")
}

fn main() -> ExitCode {
    let cli = parse_cli();
    init_logging();
    // Every browser connection may hold an upstream connection too.
    deltascope_proxy::conn::raise_file_limit();
    let result = match cli.command {
        Command::Serve(args) => serve(*args),
        Command::Record(args) => record(args),
        Command::Sim(args) => sim(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("deltascope: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Logs on stderr, at `RUST_LOG`'s levels (`info` when unset).
fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        // colours only for a terminal: a log piped to a file stays plain text
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

/// `deltascope serve`, until it is stopped.
fn serve(args: ServeArgs) -> Result<(), String> {
    let config = serve_config(args)?;
    deltascope_proxy::serve::runtime(&config.upstream)
        .map_err(cannot_start)
        .and_then(|runtime| {
            runtime
                .block_on(deltascope_proxy::serve::run(config))
                .map_err(|e| e.to_string())
        })
}

/// serve's flags as the library's config (warning about plain-text Secret
/// values once the history's flags are read).
fn serve_config(args: ServeArgs) -> Result<ServeConfig, String> {
    let token = resolve_token(&args)?;
    let history = args.history.to_options(!args.history_read_only)?;
    warn_secret_values(&args.history);
    let upstream = if args.demo {
        Upstream::Demo(args.sim.to_config())
    } else {
        Upstream::Clusters(ClusterPlan {
            flags: args.clusters.clone(),
            kubeconfig: args.kubeconfig.clone(),
        })
    };
    Ok(ServeConfig {
        listen: args.listen,
        dist: args.dist,
        token,
        allow_hosts: args.allow_hosts,
        allow_writes: args.allow_writes,
        show_secrets: args.show_secrets,
        max_watches_per_session: args.max_watches,
        max_requests_per_session: args.max_requests,
        channel: !args.no_channel,
        max_connections: args.max_connections,
        header_read_timeout: args.header_read_timeout,
        idle_timeout: args.idle_timeout,
        session_idle_timeout: args.session_idle_timeout,
        sign_in_code_ttl: args
            .sign_in_code_ttl
            .unwrap_or(deltascope_proxy::sign_in_code::CODE_TTL),
        history,
        ..ServeConfig::new(upstream)
    })
}

/// `deltascope record`, until it is stopped.
fn record(args: RecordArgs) -> Result<(), String> {
    let options = args.history.to_options(true)?;
    warn_secret_values(&args.history);
    tokio::runtime::Runtime::new()
        .map_err(cannot_start)
        .and_then(|runtime| {
            runtime.block_on(deltascope_proxy::recording::record(
                &args.upstream,
                &options,
            ))
        })
}

/// `deltascope sim`, until it is stopped.
fn sim(args: SimArgs) -> Result<(), String> {
    tokio::runtime::Runtime::new()
        .map_err(cannot_start)
        .and_then(|runtime| {
            runtime
                .block_on(deltascope_sim::run_standalone(
                    args.listen,
                    args.sim.to_config(),
                ))
                .map_err(|e| e.to_string())
        })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    fn misplaced(args: &[&str]) -> Vec<String> {
        let matches = super::Cli::command()
            .try_get_matches_from(args)
            .expect("parses");
        super::sim_flags_without_demo(&matches)
    }

    #[test]
    fn serve_refuses_the_sims_flags_without_demo() {
        assert_eq!(
            misplaced(&["deltascope", "serve", "--pods", "5", "--forbid", "pods"]),
            ["--pods", "--forbid"]
        );
        assert_eq!(
            misplaced(&[
                "deltascope",
                "serve",
                "--upstream",
                "http://x",
                "--no-watch-list"
            ]),
            ["--no-watch-list"]
        );
        assert!(misplaced(&[
            "deltascope",
            "serve",
            "--demo",
            "--pods",
            "5",
            "--churn",
            "0"
        ])
        .is_empty());
        assert!(misplaced(&["deltascope", "serve"]).is_empty());
        assert!(misplaced(&["deltascope", "sim", "--pods", "5"]).is_empty());
    }

    #[test]
    fn contexts_and_upstreams_keep_the_order_they_were_given_in() {
        use deltascope_proxy::clusters::ClusterFlag;
        let matches = super::Cli::command()
            .try_get_matches_from([
                "deltascope",
                "serve",
                "--upstream",
                "u=http://x",
                "--context",
                "a",
                "--upstream",
                "http://y",
                "--context",
                "b",
            ])
            .expect("parses");
        let Some(("serve", serve)) = matches.subcommand() else {
            panic!("serve")
        };
        assert_eq!(
            super::cluster_flags(serve),
            [
                ClusterFlag::upstream("u=http://x"),
                ClusterFlag::Context("a".into()),
                ClusterFlag::upstream("http://y"),
                ClusterFlag::Context("b".into()),
            ]
        );
    }

    #[test]
    fn durations() {
        use std::time::Duration;
        assert_eq!(
            super::parse_duration("500ms"),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(super::parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(super::parse_duration("15m"), Ok(Duration::from_secs(900)));
        assert_eq!(super::parse_duration("12h"), Ok(Duration::from_secs(43200)));
        assert!(super::parse_duration("0s").is_err());
        assert!(super::parse_duration("1d").is_err());
        assert!(super::parse_duration("s").is_err());
    }
}
