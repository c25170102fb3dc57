//! A container killed by the kernel's OOM killer at its memory limit and
//! restarted by the kubelet, written as a cluster writes it: the kubelet's
//! status (`restartCount` + 1, `lastState.terminated` `OOMKilled` with exit
//! code 137, the container running again under a new id), the
//! node-problem-detector's `OOMKilling` Warning on the Node (its kernel
//! monitor's words for the kernel's log line) and the kubelet's Pulled,
//! Created and Started on the pod. The metrics' leak (`metrics::leak`)
//! decides when; nothing here draws from the workload's random sequence, so
//! the churn of a seed stays the same whenever kills happen.

use serde_json::{json, Value};

use super::super::events::{Occurrence, KERNEL_MONITOR};
use super::super::managed::managers::KUBELET_STATUS;
use super::super::metrics::quantity;
use super::super::objects;
use super::super::resources::{NODES, PODS};
use super::super::store::{hash_parts, Store};
use super::Workload;

/// Exit code of a process killed by SIGKILL, as the runtime reports an OOM kill.
const OOM_EXIT_CODE: u64 = 137;

impl Workload {
    /// Kills `container` of pod `key` for reaching its memory limit and
    /// restarts it. Returns the new run's `containerID` (`None` when the
    /// pod or the container is gone).
    pub fn oom_kill(&mut self, store: &Store, key: &str, container: &str) -> Option<String> {
        let pod = store.get(PODS, key)?.value();
        let statuses = pod["status"]["containerStatuses"].as_array()?;
        let index = statuses.iter().position(|c| c["name"] == container)?;
        let restarts = statuses[index]["restartCount"].as_u64().unwrap_or(0) + 1;
        let old_id = statuses[index]["containerID"].as_str().unwrap_or_default();
        let new_id = format!(
            "containerd://{:016x}",
            hash_parts(restarts, &[key, container, old_id])
        );
        let now = objects::rfc3339_now();
        store.update(PODS, key, KUBELET_STATUS, |v| {
            let status = &mut v["status"]["containerStatuses"][index];
            status["lastState"] = json!({"terminated": {
                "exitCode": OOM_EXIT_CODE, "reason": "OOMKilled",
                "startedAt": status["state"]["running"]["startedAt"].clone(),
                "finishedAt": now, "containerID": status["containerID"].clone()
            }});
            status["restartCount"] = json!(restarts);
            status["containerID"] = json!(new_id);
            status["state"] = json!({"running": {"startedAt": now}});
            status["ready"] = json!(true);
            status["started"] = json!(true);
        })?;
        let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
        let killed = Occurrence::warning(
            KERNEL_MONITOR,
            "OOMKilling",
            kernel_line(store, &pod, container, key, restarts),
        );
        self.events.record(store, NODES, node, killed);
        let image = pod["spec"]["containers"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["name"] == container))
            .and_then(|c| c["image"].as_str())
            .unwrap_or_default()
            .to_string();
        self.started_events(store, key, container, &image);
        Some(new_id)
    }
}

/// The kernel's log line for the kill, as node-problem-detector's kernel
/// monitor reports it: `Memory cgroup out of memory: Killed process 4242
/// (cart) total-vm:…kB, anon-rss:…kB, file-rss:…kB, shmem-rss:0kB,
/// UID:65532 pgtables:…kB oom_score_adj:993`. The score is the kubelet's
/// for a Burstable pod: 1000 − 1000 × request ÷ the node's memory.
fn kernel_line(store: &Store, pod: &Value, container: &str, key: &str, run: u64) -> String {
    let spec = pod["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == container))
        .cloned()
        .unwrap_or(Value::Null);
    let resources = &spec["resources"];
    let limit = resources["limits"]["memory"]
        .as_str()
        .and_then(quantity::parse_bytes)
        .unwrap_or(0);
    let request = resources["requests"]["memory"]
        .as_str()
        .and_then(quantity::parse_bytes)
        .unwrap_or(0);
    let node = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    let capacity = store
        .get(NODES, node)
        .and_then(|n| {
            n.value()["status"]["capacity"]["memory"]
                .as_str()
                .and_then(quantity::parse_bytes)
        })
        .unwrap_or(0);
    let score = match capacity {
        0 => 999,
        c => (1000 - (1000 * request / c).min(998)).min(999),
    };
    let h = hash_parts(run, &[key, container]);
    let anon_kb = (limit / 1024).saturating_sub(h % 512);
    let file_kb = h % 2048;
    // the process name is cut to the kernel's 15 characters
    let comm: String = container.chars().take(15).collect();
    format!(
        "Memory cgroup out of memory: Killed process {} ({comm}) total-vm:{}kB, anon-rss:{anon_kb}kB, file-rss:{file_kb}kB, shmem-rss:0kB, UID:65532 pgtables:{}kB oom_score_adj:{score}",
        1000 + h % 60_000,
        anon_kb * 3 + 180_224,
        anon_kb / 256 + 96,
    )
}
