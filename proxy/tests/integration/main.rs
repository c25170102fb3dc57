//! serve's, the recorder's and the history routes' tests against real
//! processes and real HTTP, one module per area, built as one test binary
//! (the support modules compiled and linked once, not once per area; nextest
//! still runs each test in a process of its own). `serve_chain`, which runs
//! the real `kubectl proxy`, runs in nextest's `browser` group.

#[path = "../channel_support/mod.rs"]
mod channel_support;
#[path = "../clusters_support/mod.rs"]
mod clusters_support;
#[path = "../../../sim/tests/shared/kubectl.rs"]
mod kubectl;
#[path = "../private_postgres/mod.rs"]
mod private_postgres;
#[path = "../recorder_support/mod.rs"]
mod recorder_support;
#[path = "../serve_support/mod.rs"]
mod serve_support;
#[path = "../../../sim/tests/shared/sim_support.rs"]
mod sim_support;
#[path = "../truth_support/mod.rs"]
mod truth_support;

mod history_postgres;
mod history_process;
mod history_serve;
mod history_truth;
mod history_usage;
mod recorder_discovery;
mod recorder_identity;
mod recorder_memory;
mod recorder_record;
mod recorder_restart;
mod recorder_throughput;
mod serve_bench;
mod serve_built_in_page;
mod serve_chain;
mod serve_channel;
mod serve_channel_limits;
mod serve_clusters;
mod serve_clusters_bad_input;
mod serve_clusters_channel;
mod serve_demo;
mod serve_hardening;
mod serve_hardening_web;
mod serve_logs;
mod serve_memory_bound;
mod serve_process;
mod serve_security;
mod serve_sign_in_link;
mod serve_stream;
mod sim_standalone;
