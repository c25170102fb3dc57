//! The simulated cluster's tests against its real HTTP, the real `kubectl`
//! and the `kube` crate, one module per area, built as one test binary
//! (`sim_support` and the kubectl helpers compiled and linked once; nextest
//! still runs each test in a process of its own).

#[path = "../shared/kubectl.rs"]
mod kubectl;
#[path = "../shared/sim_support.rs"]
mod support;

mod sim_bench;
mod sim_changes;
mod sim_changes_kubectl;
mod sim_crd;
mod sim_crd_runtime;
mod sim_digest_at;
mod sim_forbid;
mod sim_http;
mod sim_kube;
mod sim_kubectl;
mod sim_kubectl_proxy;
mod sim_metrics;
mod sim_no_watch_list;
mod sim_python;
mod sim_watch_param;
