//! Deltas per second through the whole informer: bytes in 64 KiB chunks →
//! framer → event decoding → reflector → DeltaFIFO → indexer (namespace,
//! label, owner indexes) → history, for ConfigMaps (~300 B) and Pods (~4 KB).

mod common;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use deltascope::informer::{Action, Informer, InformerConfig, Input, RequestKind, ResourceRef};

fn run(stream: &[u8]) -> Option<Informer> {
    let mut cfg =
        InformerConfig::new(ResourceRef::new("", "v1", "pods", true)).streaming_list(false);
    cfg.history.max_deltas = usize::MAX;
    cfg.history.max_bytes = usize::MAX;
    let mut inf = Informer::new(cfg);
    inf.start(0);
    let mut watch = None;
    // answer the list with an empty page, then feed the stream to the watch
    for round in 0..2 {
        while let Some(a) = inf.poll_action() {
            if let Action::Send { id, kind, .. } = a {
                match kind {
                    RequestKind::List => {
                        inf.handle(
                            Input::ResponseStarted {
                                id,
                                status: 200,
                                retry_after_secs: None,
                            },
                            0,
                        );
                        inf.handle(
                            Input::BodyChunk {
                                id,
                                bytes: br#"{"metadata":{"resourceVersion":"1000"},"items":[]}"#,
                            },
                            0,
                        );
                        inf.handle(Input::BodyEnd { id }, 0);
                    }
                    RequestKind::Watch => watch = Some(id),
                }
            }
        }
        if round == 0 && watch.is_some() {
            break;
        }
    }
    let id = watch?;
    inf.handle(
        Input::ResponseStarted {
            id,
            status: 200,
            retry_after_secs: None,
        },
        1,
    );
    for c in stream.chunks(64 * 1024) {
        inf.handle(Input::BodyChunk { id, bytes: c }, 2);
    }
    Some(inf)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("pipeline");
    g.sample_size(10);
    for (name, make, n) in [
        (
            "configmap",
            common::configmap as fn(usize, u64) -> serde_json::Value,
            5_000usize,
        ),
        (
            "pod",
            common::pod as fn(usize, u64) -> serde_json::Value,
            1_000usize,
        ),
    ] {
        let (stream, lines) = common::stream(n, make);
        g.throughput(Throughput::Elements(lines as u64));
        g.bench_with_input(BenchmarkId::new("deltas", name), &stream, |b, s| {
            b.iter_with_large_drop(|| run(s))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
