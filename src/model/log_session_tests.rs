//! The logs session driven by hand, as the informers service drives it:
//! sources per container and per pod, pods joining and leaving, breaks
//! placed among the lines, errors kept per source.

use super::*;
use crate::informer::{JsonValue, RequestKind};

fn pod(name: &str, containers: &[&str]) -> PodLogInfo {
    PodLogInfo {
        name: name.into(),
        containers: containers.iter().map(|c| c.to_string()).collect(),
    }
}

/// Sends every queued request; (source, id, path) of the opened ones.
fn sent(session: &mut LogSession) -> Vec<(u32, crate::informer::RequestId, String)> {
    let mut out = Vec::new();
    while let Some((source, action)) = session.poll_action() {
        if let Action::Send {
            id,
            kind: RequestKind::Watch,
            path_and_query,
            ..
        } = action
        {
            out.push((source, id, path_and_query));
        }
    }
    out
}

fn answer(session: &mut LogSession, source: u32, id: crate::informer::RequestId, body: &str) {
    session.handle(
        source,
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        0,
    );
    session.handle(
        source,
        Input::BodyChunk {
            id,
            bytes: body.as_bytes(),
        },
        0,
    );
}

fn shown(session: &LogSession) -> Vec<String> {
    session
        .rows(0, usize::MAX)
        .into_iter()
        .map(|row| match row {
            LogRow::Line(l) => format!(
                "{} {}",
                session.sources()[l.source as usize].label(),
                l.text
            ),
            LogRow::Break(b) => format!("-- break {}", b.source),
        })
        .collect()
}

#[test]
fn reads_containers_from_a_pod_init_first() {
    let value = JsonValue::from(serde_json::json!({
        "metadata": {"name": "web-1"},
        "spec": {"initContainers": [{"name": "init"}], "containers": [{"name": "web"}, {"name": "sidecar"}]}
    }));
    assert_eq!(
        PodLogInfo::from_pod(value.root()),
        Some(pod("web-1", &["init", "web", "sidecar"]))
    );
}

#[test]
fn a_workloads_pods_interleave_join_and_leave() {
    let mut session = LogSession::new("shop", None, LogOptions::default(), RingBounds::default());
    session.set_pods(&[pod("web-1", &["web"]), pod("web-2", &["web"])], 0);
    let requests = sent(&mut session);
    assert_eq!(requests.len(), 2);
    assert!(requests[0].2.contains("/pods/web-1/log?container=web"));
    answer(
        &mut session,
        0,
        requests[0].1,
        "2026-11-25T10:00:01Z a1\n2026-11-25T10:00:03Z a3\n",
    );
    answer(&mut session, 1, requests[1].1, "2026-11-25T10:00:02Z b2\n");
    assert_eq!(
        shown(&session),
        vec!["web-1/web a1", "web-2/web b2", "web-1/web a3"]
    );

    // web-2 goes, web-3 comes: one cancel, one new request, lines kept.
    session.set_pods(&[pod("web-1", &["web"]), pod("web-3", &["web"])], 10);
    let mut cancels = 0;
    let mut opened = Vec::new();
    while let Some((source, action)) = session.poll_action() {
        match action {
            Action::Cancel { .. } => cancels += 1,
            Action::Send { path_and_query, .. } => opened.push((source, path_and_query)),
        }
    }
    assert_eq!(cancels, 1);
    assert_eq!(opened.len(), 1);
    assert!(opened[0].1.contains("/pods/web-3/log"));
    assert_eq!(session.sources()[1].state, SourceState::Left);
    assert_eq!(session.sources()[2].colour, SOURCE_COLOURS[2]);
    assert_eq!(shown(&session).len(), 3);
    assert!(session.is_live());
}

#[test]
fn one_container_only_and_its_refusal_kept() {
    let mut session = LogSession::new(
        "shop",
        Some("nope".into()),
        LogOptions::default(),
        RingBounds::default(),
    );
    session.set_pods(&[pod("web-1", &["web", "sidecar"])], 0);
    let requests = sent(&mut session);
    assert_eq!(requests.len(), 1);
    let id = requests[0].1;
    session.handle(
        0,
        Input::ResponseStarted {
            id,
            status: 400,
            retry_after_secs: None,
        },
        0,
    );
    let body = r#"{"kind":"Status","status":"Failure","message":"container nope is not valid for pod web-1","reason":"BadRequest","code":400}"#;
    session.handle(
        0,
        Input::BodyChunk {
            id,
            bytes: body.as_bytes(),
        },
        0,
    );
    session.handle(0, Input::BodyEnd { id }, 0);
    assert!(matches!(
        &session.sources()[0].state,
        SourceState::Ended {
            error: Some(LogError::UnknownContainer { .. })
        }
    ));
    assert!(!session.is_live());
    assert_eq!(session.poll_timeout(), None);
}

#[test]
fn a_break_sits_after_the_last_line_before_it_and_search_counts_it() {
    let mut session = LogSession::new("shop", None, LogOptions::default(), RingBounds::default());
    session.set_pods(&[pod("web-1", &["web"])], 0);
    let (_, id, _) = sent(&mut session).remove(0);
    answer(
        &mut session,
        0,
        id,
        "2026-11-25T10:00:01Z one\n2026-11-25T10:00:02Z two\n",
    );
    session.handle(
        0,
        Input::Failed {
            id,
            message: "cut".into(),
        },
        5,
    );
    assert!(matches!(
        session.sources()[0].state,
        SourceState::Reconnecting { .. }
    ));
    let at = session.poll_timeout().unwrap();
    session.tick(at);
    let (_, id, path) = sent(&mut session).remove(0);
    assert!(path.contains("sinceTime=2026-11-25T10%3A00%3A02Z"));
    // The server resends the last second: not shown twice.
    answer(
        &mut session,
        0,
        id,
        "2026-11-25T10:00:02Z two\n2026-11-25T10:00:03Z three\n",
    );
    assert_eq!(
        shown(&session),
        vec![
            "web-1/web one",
            "web-1/web two",
            "-- break 0",
            "web-1/web three"
        ]
    );
    assert_eq!(session.row_count(), 4);
    assert_eq!(session.repeated(), 1, "two was sent again");
    assert_eq!(session.search_rows("THREE"), vec![3]);
    assert_eq!(session.rows(2, 5).len(), 2);
    assert!(matches!(session.rows(2, 1)[0], LogRow::Break(_)));
    assert_eq!(
        session.text(),
        "web-1/web 2026-11-25T10:00:01Z one\nweb-1/web 2026-11-25T10:00:02Z two\nweb-1/web 2026-11-25T10:00:03Z three\n"
    );
}

#[test]
fn the_bound_evicts_and_counts() {
    let mut session = LogSession::new(
        "shop",
        None,
        LogOptions::default(),
        RingBounds {
            max_lines: 2,
            max_bytes: usize::MAX,
        },
    );
    session.set_pods(&[pod("web-1", &["web"])], 0);
    let (_, id, _) = sent(&mut session).remove(0);
    answer(
        &mut session,
        0,
        id,
        "2026-11-25T10:00:01Z 1\n2026-11-25T10:00:02Z 2\n2026-11-25T10:00:03Z 3\n",
    );
    assert_eq!(session.ring().len(), 2);
    assert_eq!(session.ring().evicted().0, 1);
    let before = session.version();
    session.set_bounds(RingBounds {
        max_lines: 1,
        max_bytes: usize::MAX,
    });
    assert!(session.version() > before);
    assert_eq!(shown(&session), vec!["web-1/web 3"]);
}

#[test]
fn a_stream_that_keeps_ending_with_nothing_new_is_one_break() {
    let mut session = LogSession::new("shop", None, LogOptions::default(), RingBounds::default());
    session.set_pods(&[pod("job-1", &["work"])], 0);
    let (_, mut id, _) = sent(&mut session).remove(0);
    answer(&mut session, 0, id, "2026-11-25T10:00:01Z done\n");
    for _ in 0..3 {
        session.handle(0, Input::BodyEnd { id }, 0);
        let at = session.poll_timeout().unwrap();
        session.tick(at);
        id = sent(&mut session).remove(0).1;
        answer(&mut session, 0, id, "2026-11-25T10:00:01Z done\n");
    }
    assert_eq!(shown(&session), vec!["job-1/work done", "-- break 0"]);
    assert_eq!(session.breaks_seen(), 3);
}

#[test]
fn no_pod_to_read_is_said_once_the_pods_are_known() {
    let mut session = LogSession::new("shop", None, LogOptions::default(), RingBounds::default());
    // the store has not synced: nothing to say yet
    assert!(!session.has_no_pods());
    session.set_pods(&[], 0);
    assert!(session.has_no_pods(), "a pod not in the cluster");
    assert!(sent(&mut session).is_empty());
    // a workload's first pod starts: its lines are what the view shows
    session.set_pods(&[pod("web-1", &["web"])], 10);
    assert!(!session.has_no_pods());
    // and when it leaves, it is marked as left, not as never there
    session.set_pods(&[], 20);
    assert!(!session.has_no_pods());
}
