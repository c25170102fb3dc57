//! The `deltascope` command: `serve` (the auth proxy in front of `kubectl proxy`
//! or the embedded simulated cluster) and `sim` (the simulated cluster alone).
//! This file only parses the command line and maps it onto the library's configs.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use deltascope_proxy::serve::{ServeConfig, Upstream};
use deltascope_proxy::sim::SimConfig;

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
    Serve(ServeArgs),
    /// Run the simulated cluster alone (loopback only, no auth), for kubectl and tests.
    Sim(SimArgs),
}

#[derive(Args, Debug)]
struct ServeArgs {
    /// The Kubernetes API to forward to, normally `kubectl proxy`.
    #[arg(long, default_value = "http://127.0.0.1:8001", conflicts_with = "demo")]
    upstream: String,
    /// Use the embedded simulated cluster instead of an upstream.
    #[arg(long)]
    demo: bool,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    /// Directory with the built page (trunk's output).
    #[arg(long, default_value = "dist")]
    dist: PathBuf,
    /// Session token; a random 256-bit token when omitted.
    #[arg(long)]
    token: Option<String>,
    /// Extra Host header values to accept (DNS-rebinding defence allows only these and the listen address).
    #[arg(long = "allow-host")]
    allow_hosts: Vec<String>,
    /// Let non-GET requests through to the cluster.
    #[arg(long)]
    allow_writes: bool,
    /// Do not redact Secret values.
    #[arg(long)]
    show_secrets: bool,
    /// Concurrent watches allowed per session.
    #[arg(long, default_value_t = 256)]
    max_watches: usize,
    /// Serve no multiplexed channel: the page then keeps at most a few
    /// watches on their own connections and pauses the rest (for trying that fallback).
    #[arg(long)]
    no_channel: bool,
    #[command(flatten)]
    sim: SimWorkloadArgs,
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
            ..SimConfig::default()
        }
    }
}

fn cannot_start(error: std::io::Error) -> String {
    format!("cannot start the async runtime: {error}")
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let result = match cli.command {
        Command::Serve(args) => {
            let upstream = if args.demo {
                Upstream::Demo(args.sim.to_config())
            } else {
                Upstream::Url(args.upstream)
            };
            let config = ServeConfig {
                listen: args.listen,
                upstream,
                dist: args.dist,
                token: args.token,
                allow_hosts: args.allow_hosts,
                allow_writes: args.allow_writes,
                show_secrets: args.show_secrets,
                max_watches_per_session: args.max_watches,
                channel: !args.no_channel,
            };
            deltascope_proxy::serve::runtime(&config.upstream)
                .map_err(cannot_start)
                .and_then(|runtime| {
                    runtime
                        .block_on(deltascope_proxy::serve::run(config))
                        .map_err(|e| e.to_string())
                })
        }
        Command::Sim(args) => tokio::runtime::Runtime::new()
            .map_err(cannot_start)
            .and_then(|runtime| {
                runtime
                    .block_on(deltascope_proxy::sim::run_standalone(
                        args.listen,
                        args.sim.to_config(),
                    ))
                    .map_err(|e| e.to_string())
            }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("deltascope: {message}");
            ExitCode::FAILURE
        }
    }
}
