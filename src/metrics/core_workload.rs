//! A fixed informer workload — a ConfigMap list and the watch stream that
//! follows it, as NDJSON bytes, fed in 64 KiB chunks to the whole sans-IO
//! informer — compiled into both the page (exposed to the benchmark as
//! `window.__deltascope.benchCore`) and native code, so `cargo xtask bench`
//! can compare the core's speed in Chromium's wasm engine with the same core
//! natively, on the same bytes. No web dependency; nothing in the product
//! path calls it.

use crate::informer::{
    Action, HistoryConfig, Informer, InformerConfig, Input, RequestKind, ResourceRef,
};

/// The recorded bytes of one run.
pub struct Workload {
    pub list: Vec<u8>,
    pub events: Vec<u8>,
    /// Deltas the informer applies when fed both.
    pub deltas: usize,
}

/// Why the workload could not be played (a bug in it, not bad input).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    #[error("the informer did not ask for a {0:?} request")]
    NoRequest(&'static str),
}

const CHUNK: usize = 64 * 1024;

fn configmap(i: usize, version: usize, rv: usize) -> String {
    format!(
        concat!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"settings-{i}","namespace":"team-{ns}","#,
            r#""uid":"3f0c2c7e-8a51-4b7f-9d7e-{i:012x}","resourceVersion":"{rv}","creationTimestamp":"2026-01-01T00:00:00Z","#,
            r#""labels":{{"app":"shop","tier":"t{tier}"}}}},"data":{{"mode":"fast","version":"v{version}","#,
            r#""config.yaml":"replicas: 3\nlogLevel: info\n"}}}}"#
        ),
        i = i,
        ns = i % 25,
        tier = i % 3,
        rv = rv,
        version = version,
    )
}

/// `listed` ConfigMaps, then `events` watch events: mostly updates, some
/// deletions and re-creations.
pub fn configmaps(listed: usize, events: usize) -> Workload {
    let listed = listed.max(1);
    let mut rv = 1;
    let mut items = Vec::with_capacity(listed);
    for i in 0..listed {
        rv += 1;
        items.push(configmap(i, 0, rv));
    }
    let list = format!(
        r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}},"items":[{}]}}"#,
        items.join(",")
    )
    .into_bytes();
    let mut present = vec![true; listed];
    let mut stream = String::new();
    for n in 0..events {
        rv += 1;
        let i = (n * 7919) % listed;
        let (kind, object) = match (n % 10, present[i]) {
            (9, true) => {
                present[i] = false;
                ("DELETED", configmap(i, n, rv))
            }
            (_, false) => {
                present[i] = true;
                ("ADDED", configmap(i, n, rv))
            }
            _ => ("MODIFIED", configmap(i, n, rv)),
        };
        stream.push_str(&format!(r#"{{"type":"{kind}","object":{object}}}"#));
        stream.push('\n');
    }
    Workload {
        list,
        events: stream.into_bytes(),
        deltas: listed + events,
    }
}

fn sent(inf: &mut Informer, want: RequestKind) -> Option<crate::informer::RequestId> {
    while let Some(action) = inf.poll_action() {
        if let Action::Send { id, kind, .. } = action {
            return (kind == want).then_some(id);
        }
    }
    None
}

fn feed(inf: &mut Informer, id: crate::informer::RequestId, body: &[u8]) {
    inf.handle(
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        1_000,
    );
    for chunk in body.chunks(CHUNK) {
        inf.handle(Input::BodyChunk { id, bytes: chunk }, 1_000);
    }
}

/// Feeds the workload to a new informer (list, then watch; framer → decode →
/// Reflector → DeltaFIFO → Indexer with its indexes → History) and returns
/// it, so that a caller timing this does not time the informer's drop (what
/// freeing costs differs between allocators more than the work does).
pub fn play(workload: &Workload) -> Result<Informer, WorkloadError> {
    let mut config = InformerConfig::new(ResourceRef::new("", "v1", "configmaps", true))
        .streaming_list(false)
        .resync(None);
    config.history = HistoryConfig::default();
    let mut inf = Informer::new(config);
    inf.start(1_000);
    let list = sent(&mut inf, RequestKind::List).ok_or(WorkloadError::NoRequest("list"))?;
    feed(&mut inf, list, &workload.list);
    inf.handle(Input::BodyEnd { id: list }, 1_000);
    let watch = sent(&mut inf, RequestKind::Watch).ok_or(WorkloadError::NoRequest("watch"))?;
    feed(&mut inf, watch, &workload.events);
    Ok(inf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workload_plays_to_the_expected_store() {
        let w = configmaps(200, 1_000);
        let held = play(&w).expect("plays").store().len();
        // every 10th event deletes a present object, re-created by its next event
        assert!(held > 150 && held <= 200, "{held}");
        assert_eq!(w.deltas, 1_200);
    }
}
