//! Several clusters in one serve, each behind a `kubectl proxy` only serve
//! can reach: two `deltascope sim` processes named by two contexts of a
//! kubeconfig, `deltascope serve --context a --context b --kubeconfig K`
//! with the real kubectl. Each cluster answers under `/clusters/{name}/`
//! what its sim holds, the default paths answer the first, and
//! `/_deltascope/clusters` tells them apart by identity. A `kubectl proxy`
//! killed with SIGKILL is started again while the other cluster's watch
//! goes on (a plain watch and a channel stream); no child listens on TCP,
//! the sockets' directory is the user's alone (another user's connection is
//! refused), and it all goes when serve stops. With no cluster flag serve
//! takes the current context, its recorder records through the same
//! socket, and a cluster replaced behind its name is noticed. Fails with a
//! clear message when there is no kubectl.

use crate::channel_support;
use crate::clusters_support;
use crate::kubectl;
use crate::serve_support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use channel_support::{control, opens, ChannelClient};
use clusters_support::*;
use serve_support::{open, read_occurrences, req, send, Served};

const ADDED: &str = "\"type\":\"ADDED\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_contexts_each_through_a_private_kubectl_proxy_that_is_restarted_when_killed() {
    kubectl::kubectl(); // fails here, saying what to install, without one
    let (sim_a, sim_b) = (
        SimProcess::start(None, 4).await,
        SimProcess::start(None, 6).await,
    );
    let dir = scratch("two");
    let config = kubeconfig(
        &dir,
        &[("a", Some(&sim_a.url())), ("b", Some(&sim_b.url()))],
    );
    let config = config.to_str().expect("a UTF-8 path");
    let history = format!("sqlite:{}", dir.join("history.sqlite").display());
    let args = [
        "--context",
        "a",
        "--context",
        "b",
        "--kubeconfig",
        config,
        "--history",
        &history,
    ];
    let served = start_serve(&dir, &args).await;
    let serve_pid = served.child.id().expect("serve runs");
    let (pods_a, pods_b) = each_cluster_answers_as_its_sim(&served, &dir, &sim_a, &sim_b).await;
    both_up_with_their_identities(&served, &sim_a, &sim_b).await;
    // The health checks of the kubectl proxies serve just started are quiet
    // while those come up: serve says when a cluster stops answering.
    assert!(
        !serve_log(&dir).contains("upstream request failed"),
        "{}",
        serve_log(&dir)
    );
    each_recorded_under_its_identity(&served, &dir, &[&sim_a, &sim_b]).await;
    each_record_read_by_name(&served, &pods_a, &pods_b).await;
    let (pid_a, pid_b, socket_dir) = only_serve_listens_and_the_sockets_are_private(&served);

    // A watch of b, plain and as a channel stream, open across the death
    // of a's kubectl proxy.
    let list_b = get(&served, "/clusters/b/api/v1/pods").await.json();
    let rv = list_b["metadata"]["resourceVersion"]
        .as_str()
        .expect("an rv");
    let watch = format!("/clusters/b/api/v1/pods?watch=1&resourceVersion={rv}");
    let mut stream = open(served.addr, req("GET", &watch).bearer(TOKEN)).await;
    let credentials = ("Authorization", &*format!("Bearer {TOKEN}"));
    let mut channel = ChannelClient::open_as(served.addr, credentials, None).await;
    control(
        served.addr,
        &channel.id.clone(),
        &opens(&[(1, &watch, None)]),
    )
    .await;
    channel
        .read_until(Duration::from_secs(10), "the watch's start", |c| {
            c.started(1)
        })
        .await;
    assert_eq!(channel.stream(1).status(), Some(200));

    signal(pid_a, "-9");
    let restarted = |c: &serde_json::Value| c["restarts"].as_u64() >= Some(1) && c["state"] == "up";
    wait_for(
        &served,
        &dir,
        "a",
        Duration::from_secs(30),
        "restarted and up",
        restarted,
    )
    .await;
    let (new_pid, _) = kubectl_proxy_of(serve_pid, "a").expect("a new kubectl proxy for a");
    assert_ne!(new_pid, pid_a);
    assert!(
        serve_log(&dir).contains("kubectl proxy exited"),
        "{}",
        serve_log(&dir)
    );
    let again = get(&served, "/clusters/a/api/v1/pods").await;
    assert_eq!(again.status, 200, "{}", again.text());
    assert_eq!(pod_names(&again.json()), pods_a);
    assert_eq!(cluster(&served, "b").await["restarts"], 0);

    // b's watches never broke: a pod added now comes through both.
    let scale = req("POST", "/_sim/scale").header("Content-Type", "application/json");
    let scaled = send(
        sim_b.addr,
        scale.body(&format!("{{\"pods\":{}}}", pods_b.len() + 1)),
    )
    .await;
    assert!(scaled.status < 300, "scale: {}", scaled.text());
    read_occurrences(
        &mut stream,
        &mut Vec::new(),
        ADDED,
        1,
        Duration::from_secs(15),
    )
    .await;
    let added = |c: &ChannelClient| c.stream(1).has(ADDED);
    channel
        .read_until(Duration::from_secs(15), "the ADDED on the channel", added)
        .await;
    assert!(
        !channel.ended(1),
        "the channel's watch ended: {}",
        channel.summary()
    );

    // SIGTERM: the kubectl proxies and the sockets' directory go with serve.
    drop(stream);
    stop_serve(served).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while [new_pid, pid_b].into_iter().any(running) {
        assert!(Instant::now() < deadline, "a kubectl proxy outlived serve");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !socket_dir.exists(),
        "{} outlived serve",
        socket_dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Each cluster answers with what its own sim holds, the default is the
/// first, and the prefix keeps every rule; returns each sim's pod names.
async fn each_cluster_answers_as_its_sim(
    served: &Served,
    dir: &std::path::Path,
    sim_a: &SimProcess,
    sim_b: &SimProcess,
) -> (Vec<String>, Vec<String>) {
    let pods_a = pod_names(&sim_a.get_json("/api/v1/pods").await);
    let pods_b = pod_names(&sim_b.get_json("/api/v1/pods").await);
    assert_ne!(pods_a, pods_b);
    for (path, want) in [
        ("/clusters/a/api/v1/pods", &pods_a),
        ("/clusters/b/api/v1/pods", &pods_b),
        ("/api/v1/pods", &pods_a),
    ] {
        let resp = get(served, path).await;
        assert_eq!(
            resp.status,
            200,
            "{path}: {}\n{}",
            resp.text(),
            serve_log(dir)
        );
        assert_eq!(&pod_names(&resp.json()), want, "{path}");
    }
    let exec = get(served, "/clusters/b/api/v1/namespaces/default/pods/x/exec").await;
    assert_eq!(exec.status, 403, "{}", exec.text());
    let secrets = get(served, "/clusters/b/api/v1/secrets").await;
    assert_eq!(secrets.status, 200);
    assert!(secrets.text().contains("<redacted: "), "{}", secrets.text());
    assert_eq!(get(served, "/clusters/zz/api/v1/pods").await.status, 404);
    let anonymous = send(served.addr, req("GET", "/_deltascope/clusters")).await;
    assert_eq!(anonymous.status, 401);
    (pods_a, pods_b)
}

/// `/_deltascope/clusters`: both up, the first the default, each with its
/// sim's identity.
async fn both_up_with_their_identities(served: &Served, sim_a: &SimProcess, sim_b: &SimProcess) {
    let (id_a, id_b) = (sim_a.identity().await, sim_b.identity().await);
    assert_ne!(id_a, id_b);
    let listed = clusters(served).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    for (entry, name, id, default) in [
        (&listed[0], "a", &id_a, true),
        (&listed[1], "b", &id_b, false),
    ] {
        assert_eq!(entry["name"], name, "{entry}");
        assert_eq!(entry["default"], default, "{entry}");
        assert_eq!(entry["source"], "context", "{entry}");
        assert_eq!(entry["state"], "up", "{entry}");
        assert_eq!(entry["identity"], id.as_str(), "{entry}");
        assert_eq!(entry["restarts"], 0, "{entry}");
    }
}

/// The recorder of each cluster writes its pods under that cluster's
/// identity (the history summary lists every cluster's resources).
async fn each_recorded_under_its_identity(
    served: &Served,
    dir: &std::path::Path,
    sims: &[&SimProcess],
) {
    let mut ids = Vec::new();
    for sim in sims {
        ids.push(sim.identity().await);
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let summary = get(served, "/_deltascope/history/summary").await.json();
        let rows = summary["resources"].as_array().cloned().unwrap_or_default();
        let recorded = |id: &String| {
            rows.iter().any(|r| {
                r["cluster"] == id.as_str()
                    && r["resource"] == "pods"
                    && r["deltas"].as_u64() > Some(0)
            })
        };
        if ids.iter().all(recorded) {
            assert_eq!(
                summary["cluster"],
                ids[0].as_str(),
                "the routes read the default"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not every cluster recorded: {summary}\n{}",
            serve_log(dir)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The history routes read the cluster `cluster=` names, each its own
/// record: b's pods from b's recorder only, a's (the default) with or
/// without its name; an unknown name is a 404 naming serve's clusters.
async fn each_record_read_by_name(served: &Served, pods_a: &[String], pods_b: &[String]) {
    let recorded_pods = |text: String| {
        let mut names: Vec<String> = text
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|line| line.get("gap").is_none())
            .map(|line| {
                let meta = &line["object"]["metadata"];
                format!("{}/{}", meta["namespace"], meta["name"])
            })
            .collect();
        names.sort();
        names.dedup();
        names
    };
    for (path, want) in [
        ("/_deltascope/history?resource=pods&cluster=b", pods_b),
        ("/_deltascope/history?cluster=a&resource=pods", pods_a),
        ("/_deltascope/history?resource=pods", pods_a),
    ] {
        let answer = get(served, path).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text());
        assert_eq!(recorded_pods(answer.text()), want, "{path}");
    }
    let summary = get(served, "/_deltascope/history/summary?cluster=b")
        .await
        .json();
    assert_eq!(summary["name"], "b", "{summary}");
    let listed = summary["clusters"].as_array().cloned().unwrap_or_default();
    let names: Vec<_> = listed
        .iter()
        .map(|c| (c["name"].clone(), c["default"].clone()))
        .collect();
    assert_eq!(
        names,
        [("a".into(), true.into()), ("b".into(), false.into())],
        "{summary}"
    );
    assert_eq!(summary["cluster"], listed[1]["cluster"], "{summary}");
    assert_ne!(listed[0]["cluster"], listed[1]["cluster"], "{summary}");
    assert!(listed[1]["recording"]["state"].is_string(), "{summary}");
    let unknown = get(served, "/_deltascope/history?resource=pods&cluster=zz").await;
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    assert!(
        unknown
            .text()
            .contains("no cluster named \\\"zz\\\" (it serves: a, b)"),
        "{}",
        unknown.text()
    );
    let twice = get(served, "/_deltascope/history/usage?cluster=a&cluster=b").await;
    assert_eq!(twice.status, 400, "{}", twice.text());
    assert!(
        twice.text().contains("cluster is given more than once"),
        "{}",
        twice.text()
    );
}

/// No `kubectl proxy` of serve listens on TCP, serve only on its own port;
/// their sockets' directory is 0700 and another user cannot connect.
/// Returns the two proxies' pids and the directory.
fn only_serve_listens_and_the_sockets_are_private(served: &Served) -> (u32, u32, PathBuf) {
    let serve_pid = served.child.id().expect("serve runs");
    let (pid_a, socket_a) = kubectl_proxy_of(serve_pid, "a").expect("serve's kubectl proxy for a");
    let (pid_b, socket_b) = kubectl_proxy_of(serve_pid, "b").expect("serve's kubectl proxy for b");
    assert_eq!(tcp_listening_ports(serve_pid), [served.addr.port()]);
    for pid in [pid_a, pid_b] {
        let listening = tcp_listening_ports(pid);
        assert!(
            listening.is_empty(),
            "kubectl proxy {pid} listens on TCP {listening:?}"
        );
    }
    let socket_dir = socket_a
        .parent()
        .expect("the sockets' directory")
        .to_owned();
    assert_eq!(socket_b.parent(), Some(socket_dir.as_path()));
    let mode = std::fs::metadata(&socket_dir)
        .expect("the directory")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{}", socket_dir.display());
    let (connected, said) = connect_as_nobody(&socket_a);
    assert!(
        !connected && said.contains("PermissionError"),
        "another user: {said}"
    );
    let ours = std::os::unix::net::UnixStream::connect(&socket_a);
    assert!(ours.is_ok(), "the user connects: {ours:?}");
    (pid_a, pid_b, socket_dir)
}

/// serve's history summary once it reads `identity` and holds pods
/// recorded under it.
async fn summary_recording(
    served: &Served,
    dir: &std::path::Path,
    identity: &str,
    what: &str,
) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let summary = get(served, "/_deltascope/history/summary").await.json();
        let recorded = summary["resources"].as_array().is_some_and(|rows| {
            rows.iter().any(|r| {
                r["cluster"] == identity
                    && r["resource"] == "pods"
                    && r["deltas"].as_u64() > Some(0)
            })
        });
        if summary["cluster"] == identity && recorded {
            return summary;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: {summary}\n{}",
            serve_log(dir)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_different_cluster_behind_the_same_name_is_noticed() {
    kubectl::kubectl();
    let sim = SimProcess::start(None, 3).await;
    let dir = scratch("identity");
    let config = kubeconfig(&dir, &[("only", Some(&sim.url()))]);
    // No --context: the kubeconfig's current context.
    let history = format!("sqlite:{}", dir.join("history.sqlite").display());
    let config = config.to_str().expect("UTF-8");
    let served = start_serve(&dir, &["--kubeconfig", config, "--history", &history]).await;
    let first = sim.identity().await;
    // The recorder reads over the same private socket, under the cluster's identity.
    let summary = summary_recording(&served, &dir, &first, "nothing recorded").await;
    assert_eq!(summary["cluster"], first.as_str());
    let entry = cluster(&served, "only").await;
    assert_eq!(entry["identity"], first.as_str(), "{entry}");
    assert_eq!(entry["default"], true);
    assert!(entry.get("identity_changed_from").is_none(), "{entry}");

    let old_pods = |summary: &serde_json::Value| {
        summary["resources"].as_array().and_then(|rows| {
            rows.iter()
                .find(|r| r["cluster"] == first.as_str() && r["resource"] == "pods")
                .map(|r| r["deltas"].clone())
        })
    };
    let before = old_pods(&get(&served, "/_deltascope/history/summary").await.json());
    assert!(before.is_some());

    // The same address, a new cluster (a new kube-system uid).
    let addr = sim.kill().await;
    let sim = SimProcess::start(Some(addr), 3).await;
    let second = sim.identity().await;
    assert_ne!(first, second);
    let entry = wait_for(
        &served,
        &dir,
        "only",
        Duration::from_secs(40),
        "re-identified",
        |c| c["identity"] == second.as_str(),
    )
    .await;
    assert_eq!(entry["identity_changed_from"], first.as_str(), "{entry}");
    assert_eq!(entry["state"], "up");
    // The recorder records the new cluster apart, under its identity; the
    // old one's record is kept as it was.
    let summary = summary_recording(&served, &dir, &second, "not recorded apart").await;
    assert_eq!(old_pods(&summary), before, "the old record grew: {summary}");
    assert!(
        serve_log(&dir).contains("recording it apart"),
        "{}",
        serve_log(&dir)
    );
    assert!(
        serve_log(&dir).contains("a different cluster now answers"),
        "{}",
        serve_log(&dir)
    );
    let serve_pid = served.child.id().expect("serve runs");
    let (_, socket) = kubectl_proxy_of(serve_pid, "only").expect("its kubectl proxy");
    stop_serve(served).await;
    assert!(!socket.exists(), "{} outlived serve", socket.display());
    let _ = std::fs::remove_dir_all(&dir);
}
