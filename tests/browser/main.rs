//! The page's browser tests, one module per area, built as one test binary
//! (one link of the shared `support` instead of one per area; nextest still
//! runs each test in a process of its own, one browser test at a time: the
//! `browser` group in `.config/nextest.toml`). The bench programs
//! (`browser_*_bench`) and the soak stay binaries of their own, which
//! `cargo xtask bench` and `cargo xtask soak` name.

#[path = "../support/mod.rs"]
mod support;

mod browser_channel;
mod browser_channel_chaos;
mod browser_chaos;
mod browser_cluster_identity;
mod browser_clusters;
mod browser_clusters_record;
mod browser_columns_errors;
mod browser_first_hour;
mod browser_history;
mod browser_lanes_settings;
mod browser_logs;
mod browser_many_lanes;
mod browser_metrics_columns;
mod browser_object_reach;
mod browser_persist;
mod browser_recorded_gap;
mod browser_serve_history;
mod browser_server_columns;
mod browser_slice;
mod browser_story;
mod browser_table_scroll;
mod browser_tables;
mod browser_time_travel_record;
mod browser_timeline;
mod browser_trunk;
mod browser_usage_chart;
