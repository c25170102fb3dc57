//! How the reflector fails: a request the server calls wrong (400
//! for a bad selector, 404 for a resource it does not serve) halts the
//! informer with the reason instead of retrying forever, a 403 is retried
//! only slowly, and the user's Retry asks again at once.

use super::*;
use crate::test_support::{pods, respond, status_body};

/// The sends and the latest wake-up the informer asked for.
fn drain(inf: &mut Informer) -> (Vec<(RequestId, RequestKind, String)>, Option<Millis>) {
    let mut sends = Vec::new();
    while let Some(action) = inf.poll_action() {
        match action {
            Action::Send {
                id,
                kind,
                path_and_query,
                ..
            } => sends.push((id, kind, path_and_query)),
            Action::Cancel { .. } => {}
        }
    }
    (sends, inf.poll_timeout())
}

#[test]
fn a_bad_selector_halts_after_the_streaming_fallback_and_retry_asks_again() {
    let config = InformerConfig::new(pods()).labels("app==,,=").seed(3);
    let mut inf = Informer::new(config);
    inf.start(0);
    let (sends, _) = drain(&mut inf);
    let (watch, kind, _) = sends[0].clone();
    assert_eq!(kind, RequestKind::Watch, "a streaming list first");
    let bad = status_body(400, "BadRequest", "unable to parse requirement");
    // 400 on the streaming list: maybe the server lacks streaming lists; try a plain list.
    respond(&mut inf, watch, 400, &bad, 10);
    let (sends, _) = drain(&mut inf);
    assert_eq!(sends.len(), 1);
    let (list, kind, path) = sends[0].clone();
    assert_eq!(kind, RequestKind::List);
    assert!(path.contains("labelSelector="), "{path}");
    // 400 on the list too: the request itself is wrong; nothing more is sent.
    respond(&mut inf, list, 400, &bad, 20);
    let (sends, wake) = drain(&mut inf);
    assert!(sends.is_empty() && wake.is_none(), "{sends:?} {wake:?}");
    assert!(inf.is_halted());
    match &inf.status().phase {
        Phase::Failed { message } => {
            assert!(message.contains("HTTP 400"), "{message}");
            assert!(message.contains("unable to parse requirement"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(inf.status().phase.as_str(), "error");
    assert!(inf.status().phase.is_failing());
    // Time passing changes nothing.
    inf.handle(Input::Tick, 600_000);
    assert!(drain(&mut inf).0.is_empty());
    // The user's Retry: a list again, at once.
    inf.retry(700_000);
    let (sends, _) = drain(&mut inf);
    assert_eq!(sends.len(), 1, "{sends:?}");
    assert_eq!(sends[0].1, RequestKind::List);
    assert!(!inf.is_halted());
    assert!(matches!(inf.status().phase, Phase::Listing { .. }));
}

#[test]
fn a_resource_the_server_does_not_serve_halts_at_once() {
    let mut inf = Informer::new(InformerConfig::new(ResourceRef::new(
        "", "v1", "nosuch", true,
    )));
    inf.start(0);
    let (sends, _) = drain(&mut inf);
    let watch = sends[0].0;
    respond(
        &mut inf,
        watch,
        404,
        &status_body(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
        5,
    );
    let (sends, wake) = drain(&mut inf);
    assert!(sends.is_empty() && wake.is_none(), "{sends:?} {wake:?}");
    assert!(matches!(inf.status().phase, Phase::Failed { .. }));
    assert_eq!(
        inf.status().last_error.as_ref().and_then(|e| e.status()),
        Some(404)
    );
}

#[test]
fn forbidden_is_retried_slowly() {
    let mut inf = Informer::new(InformerConfig::new(pods()).streaming_list(false).seed(9));
    inf.start(0);
    let mut now = 0;
    let mut delays = Vec::new();
    for _ in 0..8 {
        let (sends, _) = drain(&mut inf);
        assert_eq!(sends.len(), 1, "{sends:?}");
        let denied = status_body(403, "Forbidden", "pods is forbidden");
        respond(&mut inf, sends[0].0, 403, &denied, now);
        assert!(matches!(inf.status().phase, Phase::Error { .. }));
        let (_, wake) = drain(&mut inf);
        let at = wake.expect("a 403 is retried");
        delays.push(at - now);
        now = at;
        inf.handle(Input::Tick, now);
    }
    assert!(delays[0] >= 5_000, "{delays:?}");
    assert!(delays[1] >= 10_000, "{delays:?}");
    assert!(delays.iter().all(|d| *d <= 300_000), "{delays:?}");
    assert!(
        delays[7] >= 240_000,
        "at most every 5 minutes later: {delays:?}"
    );
    // Retry does not wait.
    let (sends, _) = drain(&mut inf);
    respond(&mut inf, sends[0].0, 403, b"", now);
    drain(&mut inf);
    inf.retry(now + 1);
    assert_eq!(drain(&mut inf).0.len(), 1);
}
