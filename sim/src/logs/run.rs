//! Which container run a log request reads, decided as the apiserver and
//! the kubelet decide it, with their words: the apiserver picks the
//! container (`a container name must be specified for pod web-1, choose one
//! of: [web sidecar]`, `container nosuch is not valid for pod web-1`), the
//! kubelet picks the run from the container's status (the running one; a
//! crash-looping container's last terminated one; `previous` only when a
//! terminated run is recorded; `is waiting to start: ContainerCreating`).

use axum::http::StatusCode;
use serde_json::Value;

use super::super::status::ApiError;
use super::super::store::hash_parts;
use super::lines::{Run, Voice};

const NANOS: i128 = 1_000_000_000;

/// The run a request reads, and whether it can still grow (follow).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    pub container: String,
    pub run: Run,
    /// The container id the run is written by (the follower ends when it changes).
    pub container_id: String,
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The apiserver's choice of container (`pod/log` REST: LogLocation).
pub fn container_of(pod: &Value, pod_name: &str, asked: Option<&str>) -> Result<String, ApiError> {
    let containers = names(&pod["spec"]["containers"]);
    let init = names(&pod["spec"]["initContainers"]);
    let ephemeral = names(&pod["spec"]["ephemeralContainers"]);
    let Some(asked) = asked.filter(|c| !c.is_empty()) else {
        return match containers.as_slice() {
            [only] => Ok(only.clone()),
            [] => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod_name}"
            ))),
            _ => {
                let mut message = format!(
                    "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                    containers.join(" ")
                );
                if !init.is_empty() {
                    message.push_str(&format!(
                        " or one of the init containers: [{}]",
                        init.join(" ")
                    ));
                }
                Err(ApiError::bad_request(message))
            }
        };
    };
    if [&containers, &init, &ephemeral]
        .iter()
        .any(|l| l.iter().any(|n| n == asked))
    {
        Ok(asked.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "container {asked} is not valid for pod {pod_name}"
        )))
    }
}

fn status_of<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .filter_map(|field| pod["status"][field].as_array())
    .flatten()
    .find(|s| s["name"].as_str() == Some(container))
}

/// A run's first line comes a second after its `startedAt`: the status is
/// written within the second it names, so no line can appear in the past of
/// a request that saw the container not yet started.
const FIRST_LINE_AFTER: i128 = NANOS;

fn nanos(field: &Value) -> Option<i128> {
    field
        .as_str()
        .and_then(deltascope_facts::time::parse_rfc3339)
        .map(|secs| i128::from(secs) * NANOS)
}

/// A run's container id, first line's time, end (none while it runs) and
/// whether it crashed.
struct Times {
    id: String,
    start: i128,
    end: Option<i128>,
    crashed: bool,
}

/// A terminated run (`state.terminated` or `lastState.terminated`).
fn terminated(t: &Value) -> Times {
    let start = nanos(&t["startedAt"]).unwrap_or(0) + FIRST_LINE_AFTER;
    Times {
        id: t["containerID"].as_str().unwrap_or_default().to_string(),
        start,
        end: Some(nanos(&t["finishedAt"]).unwrap_or(start).max(start)),
        crashed: t["exitCode"].as_i64().unwrap_or(0) != 0,
    }
}

/// The running run.
fn running(status: &Value) -> Times {
    Times {
        id: status["containerID"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        start: nanos(&status["state"]["running"]["startedAt"]).unwrap_or(0),
        end: None,
        crashed: false,
    }
}

/// The kubelet's choice of run (`validateContainerLogStatus`).
pub fn run_of(
    pod: &Value,
    pod_name: &str,
    container: &str,
    previous: bool,
    seed: u64,
) -> Result<Chosen, ApiError> {
    let Some(status) = status_of(pod, container) else {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{pod_name}\" is not available"
        )));
    };
    let times = if previous {
        previous_run(status, pod_name, container)?
    } else {
        current_run(status, pod_name, container)?
    };
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let identity = hash_parts(seed, &[namespace, pod_name, container, &times.id]);
    Ok(Chosen {
        container: container.to_string(),
        run: Run {
            identity,
            start: times.start,
            end: times.end,
            voice: voice_of(pod, container),
            crashed: times.crashed,
        },
        container_id: times.id,
    })
}

/// Is a terminated run recorded (with its container id) in `lastState`?
fn has_last(status: &Value) -> bool {
    status["lastState"]["terminated"]["containerID"]
        .as_str()
        .is_some_and(|id| !id.is_empty())
}

/// `previous`: the last terminated run, which must be recorded.
fn previous_run(status: &Value, pod_name: &str, container: &str) -> Result<Times, ApiError> {
    if !has_last(status) {
        return Err(ApiError::bad_request(format!(
            "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
        )));
    }
    Ok(terminated(&status["lastState"]["terminated"]))
}

/// The current run: the running one, else the terminated one (its own, or
/// the last recorded), else the refusal of a container still waiting.
fn current_run(status: &Value, pod_name: &str, container: &str) -> Result<Times, ApiError> {
    let state = &status["state"];
    let last = &status["lastState"]["terminated"];
    // "container \"web\" in pod \"web-1\" is terminated", "… is waiting to start: …"
    let it_is = |what: &str| {
        ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{pod_name}\" is {what}"
        ))
    };
    if state["running"].is_object() {
        return Ok(running(status));
    }
    if state["terminated"].is_object() {
        return if state["terminated"]["containerID"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
        {
            Ok(terminated(&state["terminated"]))
        } else if has_last(status) {
            Ok(terminated(last))
        } else {
            Err(it_is("terminated"))
        };
    }
    if last.is_object() {
        return if has_last(status) {
            Ok(terminated(last))
        } else {
            Err(it_is("terminated"))
        };
    }
    Err(match state["waiting"]["reason"].as_str() {
        Some(reason) => {
            let why = match reason {
                "ErrImagePull" => "image can't be pulled",
                "ImagePullBackOff" => "trying and failing to pull image",
                other => other,
            };
            it_is(&format!("waiting to start: {why}"))
        }
        None => it_is("waiting to start - no logs yet"),
    })
}

/// How a container's lines read: the shipper's, a web server's access
/// log, or an app's JSON.
fn voice_of(pod: &Value, container: &str) -> Voice {
    if container == "log-shipper" {
        Voice::Shipper
    } else if pod["metadata"]["labels"]["tier"].as_str() == Some("web") {
        Voice::Access
    } else {
        Voice::Json
    }
}

/// `PodLogOptions "web-1" is invalid: …` (422), as the apiserver validates them.
pub fn invalid(pod_name: &str, what: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("PodLogOptions \"{pod_name}\" is invalid: {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(statuses: Value) -> Value {
        json!({"metadata": {"name": "web-1", "namespace": "shop", "labels": {"tier": "web"}},
               "spec": {"containers": [{"name": "web"}, {"name": "sidecar"}], "initContainers": []},
               "status": {"containerStatuses": statuses}})
    }

    #[test]
    fn the_apiserver_picks_the_container() {
        let p = pod(json!([]));
        let e = container_of(&p, "web-1", None).err().map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some("a container name must be specified for pod web-1, choose one of: [web sidecar]")
        );
        let e = container_of(&p, "web-1", Some("nosuch"))
            .err()
            .map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some("container nosuch is not valid for pod web-1")
        );
        assert_eq!(
            container_of(&p, "web-1", Some("sidecar")).ok().as_deref(),
            Some("sidecar")
        );
        let one = json!({"spec": {"containers": [{"name": "web"}]}});
        assert_eq!(
            container_of(&one, "web-1", None).ok().as_deref(),
            Some("web")
        );
    }

    #[test]
    fn the_kubelet_picks_the_run() {
        let waiting = pod(
            json!([{"name": "web", "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}]),
        );
        let e = run_of(&waiting, "web-1", "web", false, 1)
            .err()
            .map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some("container \"web\" in pod \"web-1\" is waiting to start: ContainerCreating")
        );
        let running = pod(
            json!([{"name": "web", "containerID": "containerd://b", "state": {"running": {"startedAt": "2026-11-25T10:00:00Z"}}, "lastState": {}}]),
        );
        let e = run_of(&running, "web-1", "web", true, 1)
            .err()
            .map(|e| e.message);
        assert_eq!(
            e.as_deref(),
            Some("previous terminated container \"web\" in pod \"web-1\" not found")
        );
        let run = run_of(&running, "web-1", "web", false, 1).map(|c| (c.run.end, c.run.voice));
        assert_eq!(run.ok(), Some((None, Voice::Access)));
        let looping = pod(
            json!([{"name": "web", "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "containerID": "containerd://a",
                "startedAt": "2026-11-25T10:00:00Z", "finishedAt": "2026-11-25T10:00:30Z"}}}]),
        );
        let current = run_of(&looping, "web-1", "web", false, 1).map(|c| c.run);
        let previous = run_of(&looping, "web-1", "web", true, 1).map(|c| c.run);
        assert!(current.as_ref().is_ok_and(|r| r.crashed && r.end.is_some()));
        assert_eq!(current.ok(), previous.ok());
    }
}
