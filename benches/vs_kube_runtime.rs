//! Our store apply against kube-runtime 5's `reflector::store::Writer` on the
//! same recorded watch stream, and the bytes of memory each holds per object.
//!
//! Both sides split the stream into lines the same way, decode each line
//! (ours: `decode_event` into an untyped `KubeObject`; kube: `WatchEvent<
//! DynamicObject>`) and apply it to their store. Ours is measured with the
//! app's three indexes (namespace, label, owner) and without any.
//!
//! kube-runtime is an optional dependency so that normal builds and tests
//! never compile it: run with
//! `cargo bench --bench vs_kube_runtime --features kube-runtime,kube-core,k8s-openapi`.

mod common;

use criterion::{BenchmarkId, Criterion, Throughput};
use deltascope::informer::{decode_event, Indexer, LineFramer, WatchEvent};
use kube_core::{ApiResource, DynamicObject};
use kube_runtime::reflector::store::Writer;
use kube_runtime::watcher::Event;

#[global_allocator]
static ALLOCATOR: deltascope::metrics::heap::CountingAllocator =
    deltascope::metrics::heap::CountingAllocator;

fn lines(stream: &[u8], mut f: impl FnMut(&[u8])) {
    let mut framer = LineFramer::default();
    let _ = framer.push(stream, &mut f);
    if let Ok(Some(l)) = framer.finish() {
        f(&l);
    }
}

fn ours(stream: &[u8], indexed: bool) -> Indexer {
    let mut store = if indexed {
        Indexer::new()
    } else {
        Indexer::without_indexes()
    };
    lines(stream, |l| match decode_event(l) {
        Ok(WatchEvent::Added(o)) | Ok(WatchEvent::Modified(o)) => {
            store.add(o);
        }
        Ok(WatchEvent::Deleted(o)) => {
            store.delete_key(&o.key);
        }
        _ => {}
    });
    store
}

fn api_resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

fn kube(stream: &[u8], ar: &ApiResource) -> Writer<DynamicObject> {
    let mut w = Writer::new(ar.clone());
    lines(stream, |l| {
        if let Ok(ev) = serde_json::from_slice::<kube_core::WatchEvent<DynamicObject>>(l) {
            match ev {
                kube_core::WatchEvent::Added(o) | kube_core::WatchEvent::Modified(o) => {
                    w.apply_watcher_event(&Event::Apply(o))
                }
                kube_core::WatchEvent::Deleted(o) => w.apply_watcher_event(&Event::Delete(o)),
                _ => {}
            }
        }
    });
    w
}

fn live() -> isize {
    deltascope::metrics::heap::live_bytes() as isize
}

/// Bytes held per object after loading `n` objects (ADDED only).
fn memory(
    n: usize,
    make: fn(usize, u64) -> serde_json::Value,
    ar: &ApiResource,
) -> (f64, f64, f64) {
    let mut stream = Vec::new();
    for i in 0..n {
        serde_json::to_writer(
            &mut stream,
            &serde_json::json!({"type":"ADDED","object":make(i, 1000 + i as u64)}),
        )
        .unwrap_or_default();
        stream.push(b'\n');
    }
    let per = |before: isize, after: isize| (after - before) as f64 / n as f64;
    let b = live();
    let s = ours(&stream, true);
    let ours_indexed = per(b, live());
    drop(s);
    let b = live();
    let s = ours(&stream, false);
    let ours_plain = per(b, live());
    drop(s);
    let b = live();
    let w = kube(&stream, ar);
    let k = per(b, live());
    assert_eq!(w.as_reader().state().len(), n);
    drop(w);
    (ours_indexed, ours_plain, k)
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let cases = [
        (
            "configmap",
            common::configmap as fn(usize, u64) -> serde_json::Value,
            5_000usize,
            api_resource("ConfigMap", "configmaps"),
        ),
        (
            "pod",
            common::pod as fn(usize, u64) -> serde_json::Value,
            1_000usize,
            api_resource("Pod", "pods"),
        ),
    ];
    for (name, make, n, ar) in &cases {
        let (oi, op, k) = memory(*n, *make, ar);
        println!(
            "memory/{name}: ours {oi:.0} B/object (indexed), {op:.0} B/object (no indexes); kube-runtime {k:.0} B/object; ratio {:.2} / {:.2}",
            oi / k,
            op / k
        );
    }
    let mut g = c.benchmark_group("store_apply");
    g.sample_size(10);
    for (name, make, n, ar) in &cases {
        let (stream, lines) = common::stream(*n, *make);
        g.throughput(Throughput::Elements(lines as u64));
        g.bench_with_input(BenchmarkId::new("ours_indexed", name), &stream, |b, s| {
            b.iter_with_large_drop(|| ours(s, true))
        });
        g.bench_with_input(BenchmarkId::new("ours_no_index", name), &stream, |b, s| {
            b.iter_with_large_drop(|| ours(s, false))
        });
        g.bench_with_input(BenchmarkId::new("kube_runtime", name), &stream, |b, s| {
            b.iter_with_large_drop(|| kube(s, ar))
        });
    }
    g.finish();
    c.final_summary();
}
