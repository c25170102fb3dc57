//! `deltascope serve --context` given what goes wrong, with the real kubectl:
//! an unknown context and no kubectl stop serve at once with words that say
//! what to do; a context whose server is a closed port, or whose `kubectl
//! proxy` exits at once, does not stop serve: that cluster's `error` in
//! `/_deltascope/clusters` carries kubectl's own words, the proxy is started
//! again with backoff, and the other cluster works. Fails with a clear
//! message when there is no kubectl.

use crate::clusters_support;
use crate::kubectl;

use std::time::Duration;

use clusters_support::*;

/// Runs serve to its end (it must end within 30 s): (success, stderr).
async fn run_to_end(mut command: tokio::process::Command) -> (bool, String) {
    let dir = scratch("end");
    command
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null());
    let out = tokio::time::timeout(Duration::from_secs(30), command.output())
        .await
        .expect("serve ends within 30 s")
        .expect("serve runs");
    let _ = std::fs::remove_dir_all(&dir);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test]
async fn an_unknown_context_or_no_kubectl_stops_serve_with_what_to_do() {
    kubectl::kubectl();
    let dir = scratch("unknown");
    let config = kubeconfig(
        &dir,
        &[
            ("alpha", Some("http://127.0.0.1:9")),
            ("beta", Some("http://127.0.0.1:9")),
        ],
    );
    let config = config.to_str().expect("UTF-8");

    let (ok, stderr) = run_to_end(serve_command(
        &dir,
        &["--context", "nope", "--kubeconfig", config],
    ))
    .await;
    assert!(!ok, "serve started with an unknown context");
    assert!(
        stderr.contains("no context \"nope\"") && stderr.contains("alpha, beta"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");

    // No kubectl on PATH (serve itself is named by its full path).
    let mut command = serve_command(&dir, &["--context", "alpha", "--kubeconfig", config]);
    let empty = dir.join("empty-path");
    std::fs::create_dir_all(&empty).expect("an empty directory");
    command.env("PATH", &empty);
    let (ok, stderr) = run_to_end(command).await;
    assert!(!ok, "serve started without kubectl");
    assert!(
        stderr.contains("kubectl is not on PATH") && stderr.contains("--upstream"),
        "{stderr}"
    );

    // Two clusters of the same name.
    let (ok, stderr) = run_to_end(serve_command(
        &dir,
        &[
            "--context",
            "alpha",
            "--upstream",
            "alpha=http://127.0.0.1:9",
            "--kubeconfig",
            config,
        ],
    ))
    .await;
    assert!(
        !ok && stderr.contains("two clusters are named \"alpha\""),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_fails_says_why_and_the_others_keep_working() {
    kubectl::kubectl();
    let sim = SimProcess::start(None, 3).await;
    let closed = free_port();
    let dir = scratch("failing");
    let config = kubeconfig(
        &dir,
        &[
            ("closed", Some(&format!("http://{closed}"))),
            ("good", Some(&sim.url())),
            ("broken", None),
        ],
    );
    let config = config.to_str().expect("UTF-8");
    // The failing cluster is the default: serve starts all the same.
    let served = start_serve(
        &dir,
        &[
            "--context",
            "closed",
            "--context",
            "good",
            "--context",
            "broken",
            "--kubeconfig",
            config,
        ],
    )
    .await;

    let good = get(&served, "/clusters/good/api/v1/pods").await;
    assert_eq!(good.status, 200, "{}", good.text());
    assert_eq!(
        pod_names(&good.json()),
        pod_names(&sim.get_json("/api/v1/pods").await)
    );
    assert_eq!(cluster(&served, "good").await["state"], "up");

    // The closed port: kubectl proxy runs and says why the cluster does not answer.
    let entry = wait_for(
        &served,
        &dir,
        "closed",
        Duration::from_secs(30),
        "refused",
        |c| {
            c["error"]
                .as_str()
                .is_some_and(|e| e.contains("connection refused"))
        },
    )
    .await;
    assert_ne!(entry["state"], "up", "{entry}");
    assert!(entry["identity"].is_null(), "{entry}");
    let default = get(&served, "/api/v1/pods").await;
    assert!(
        default.status >= 500,
        "{}: {}",
        default.status,
        default.text()
    );

    // The broken context: kubectl proxy exits at once, again and again,
    // its own words kept; serve goes on restarting it.
    let entry = wait_for(
        &served,
        &dir,
        "broken",
        Duration::from_secs(30),
        "restarted twice",
        |c| c["restarts"].as_u64() >= Some(2),
    )
    .await;
    assert_eq!(entry["state"], "down", "{entry}");
    let error = entry["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("kubectl proxy exited") && error.contains("kubectl proxy said:"),
        "{entry}"
    );
    let log = serve_log(&dir);
    assert!(
        log.contains("kubectl proxy:") && log.contains("starting it again"),
        "{log}"
    );
    assert!(
        log.contains("does not answer yet"),
        "serve says at start which clusters do not answer: {log}"
    );

    // Still serving the good one.
    let good = get(&served, "/clusters/good/api/v1/namespaces").await;
    assert_eq!(good.status, 200, "{}", good.text());
    let serve_pid = served.child.id().expect("serve runs");
    let (_, socket) = kubectl_proxy_of(serve_pid, "good").expect("its kubectl proxy");
    stop_serve(served).await;
    let socket_dir = socket.parent().expect("the sockets' directory");
    assert!(
        !socket_dir.exists(),
        "{} outlived serve",
        socket_dir.display()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
