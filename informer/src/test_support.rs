//! Helpers for the informer's native tests: Kubernetes bodies (pods,
//! lists, watch events, bookmarks, Status) and a scripted driver for the
//! sans-IO API (drain the actions, answer a request, open a stream).

use deltascope_facts::percent::decode_query_value;
use serde_json::{json, Value};
use std::collections::HashMap;

use crate::*;

pub(crate) fn pods() -> ResourceRef {
    ResourceRef::new("", "v1", "pods", true)
}

pub(crate) fn cfg() -> InformerConfig {
    InformerConfig::new(pods()).streaming_list(false).seed(1)
}

pub(crate) fn pod(name: &str, rv: &str) -> Value {
    json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":name,"namespace":"default","uid":format!("uid-{name}"),"resourceVersion":rv,"labels":{"app":"web"}}})
}

pub(crate) fn list_body(items: &[Value], rv: &str, cont: Option<&str>) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = cont {
        meta["continue"] = json!(c);
    }
    serde_json::to_vec(&json!({"kind":"PodList","apiVersion":"v1","metadata":meta,"items":items}))
        .unwrap()
}

pub(crate) fn ev(kind: &str, obj: Value) -> Vec<u8> {
    let mut v = serde_json::to_vec(&json!({"type":kind,"object":obj})).unwrap();
    v.push(b'\n');
    v
}

pub(crate) fn bookmark(rv: &str, end: bool) -> Vec<u8> {
    let mut meta = json!({"resourceVersion": rv});
    if end {
        meta["annotations"] = json!({"k8s.io/initial-events-end":"true"});
    }
    ev(
        "BOOKMARK",
        json!({"kind":"Pod","apiVersion":"v1","metadata":meta}),
    )
}

pub(crate) fn status_body(code: u16, reason: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({"kind":"Status","apiVersion":"v1","status":"Failure","code":code,"reason":reason,"message":message})).unwrap()
}

/// Drains actions; returns the sends (id, kind, path), the cancels and the
/// informer's timeout afterwards.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    pub(crate) sends: Vec<(RequestId, RequestKind, String)>,
    pub(crate) cancels: Vec<RequestId>,
    pub(crate) wake: Option<Millis>,
}

pub(crate) fn drain(inf: &mut Informer) -> Drained {
    let mut d = Drained::default();
    while let Some(a) = inf.poll_action() {
        match a {
            Action::Send {
                id,
                kind,
                path_and_query,
                ..
            } => d.sends.push((id, kind, path_and_query)),
            Action::Cancel { id } => d.cancels.push(id),
        }
    }
    d.wake = inf.poll_timeout();
    d
}

pub(crate) fn one_send(d: &Drained) -> (RequestId, RequestKind, String) {
    assert_eq!(d.sends.len(), 1, "expected exactly one send: {d:?}");
    d.sends[0].clone()
}

pub(crate) fn query(path: &str) -> HashMap<String, String> {
    let q = path.split_once('?').map(|x| x.1).unwrap_or("");
    q.split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (
                k.to_owned(),
                decode_query_value(v).expect("the reflector wrote a well-formed query"),
            )
        })
        .collect()
}

pub(crate) fn respond(inf: &mut Informer, id: RequestId, status: u16, body: &[u8], now: Millis) {
    open(inf, id, status, now);
    chunk(inf, id, body, now);
    inf.handle(Input::BodyEnd { id }, now);
}

pub(crate) fn open(inf: &mut Informer, id: RequestId, status: u16, now: Millis) {
    inf.handle(
        Input::ResponseStarted {
            id,
            status,
            retry_after_secs: None,
        },
        now,
    );
}

pub(crate) fn chunk(inf: &mut Informer, id: RequestId, bytes: &[u8], now: Millis) {
    inf.handle(Input::BodyChunk { id, bytes }, now);
}

/// Starts an informer and completes its first list with `items` at `rv`;
/// returns the watch request.
pub(crate) fn listed(inf: &mut Informer, items: &[Value], rv: &str) -> (RequestId, String) {
    inf.start(0);
    let (id, kind, _) = one_send(&drain(inf));
    assert_eq!(kind, RequestKind::List);
    respond(inf, id, 200, &list_body(items, rv, None), 0);
    let (wid, kind, path) = one_send(&drain(inf));
    assert_eq!(kind, RequestKind::Watch);
    (wid, path)
}

/// The open watch `wid` ends with 410 Expired; the relist that follows
/// answers `items` at `rv`. Returns when the relist was answered.
pub(crate) fn expire_and_relist(
    inf: &mut Informer,
    wid: RequestId,
    items: &[Value],
    rv: &str,
) -> Millis {
    open(inf, wid, 200, 0);
    chunk(
        inf,
        wid,
        &ev(
            "ERROR",
            json!({"kind":"Status","code":410,"reason":"Expired"}),
        ),
        10,
    );
    let wake = drain(inf).wake.expect("a relist is scheduled");
    inf.handle(Input::Tick, wake);
    let (id, _, _) = one_send(&drain(inf));
    respond(inf, id, 200, &list_body(items, rv, None), wake);
    wake
}
