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
use super::super::store::splitmix;
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

/// The kubelet's choice of run (`validateContainerLogStatus`).
pub fn run_of(
    pod: &Value,
    pod_name: &str,
    container: &str,
    previous: bool,
    seed: u64,
) -> Result<Chosen, ApiError> {
    let refuse = |message: String| ApiError::bad_request(message);
    let Some(status) = status_of(pod, container) else {
        return Err(refuse(format!(
            "container \"{container}\" in pod \"{pod_name}\" is not available"
        )));
    };
    let state = &status["state"];
    let last = &status["lastState"]["terminated"];
    let has_last = last["containerID"]
        .as_str()
        .is_some_and(|id| !id.is_empty());
    let terminated = |t: &Value| -> Result<(String, i128, Option<i128>, bool), ApiError> {
        let id = t["containerID"].as_str().unwrap_or_default().to_string();
        let start = nanos(&t["startedAt"]).unwrap_or(0) + FIRST_LINE_AFTER;
        let end = nanos(&t["finishedAt"]).unwrap_or(start).max(start);
        Ok((
            id,
            start,
            Some(end),
            t["exitCode"].as_i64().unwrap_or(0) != 0,
        ))
    };
    let (id, start, end, crashed) = if previous {
        if !has_last {
            return Err(refuse(format!(
                "previous terminated container \"{container}\" in pod \"{pod_name}\" not found"
            )));
        }
        terminated(last)?
    } else if state["running"].is_object() {
        let id = status["containerID"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        (
            id,
            nanos(&state["running"]["startedAt"]).unwrap_or(0),
            None,
            false,
        )
    } else if state["terminated"].is_object() {
        if state["terminated"]["containerID"]
            .as_str()
            .is_some_and(|id| !id.is_empty())
        {
            terminated(&state["terminated"])?
        } else if has_last {
            terminated(last)?
        } else {
            return Err(refuse(format!(
                "container \"{container}\" in pod \"{pod_name}\" is terminated"
            )));
        }
    } else if last.is_object() {
        if !has_last {
            return Err(refuse(format!(
                "container \"{container}\" in pod \"{pod_name}\" is terminated"
            )));
        }
        terminated(last)?
    } else if let Some(reason) = state["waiting"]["reason"].as_str() {
        let why = match reason {
            "ErrImagePull" => "image can't be pulled",
            "ImagePullBackOff" => "trying and failing to pull image",
            other => other,
        };
        return Err(refuse(format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start: {why}"
        )));
    } else {
        return Err(refuse(format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start - no logs yet"
        )));
    };
    let voice = if container == "log-shipper" {
        Voice::Shipper
    } else if pod["metadata"]["labels"]["tier"].as_str() == Some("web") {
        Voice::Access
    } else {
        Voice::Json
    };
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    let identity = [namespace, pod_name, container, &id]
        .iter()
        .fold(splitmix(seed), |h, part| {
            part.bytes()
                .fold(splitmix(h ^ 0xff), |h, b| splitmix(h ^ u64::from(b)))
        });
    Ok(Chosen {
        container: container.to_string(),
        run: Run {
            identity,
            start,
            end,
            voice,
            crashed,
        },
        container_id: id,
    })
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
