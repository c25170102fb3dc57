//! The writer's queue against a store that holds its first batch: what the
//! drivers can hand over meanwhile is bounded in bytes, not only in
//! messages, and everything is stored once the store answers.

use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deltascope_history::{ClusterId, DeltaRecord, RecordedState, Write};
use deltascope_informer::{DeltaType, JsonValue};
use serde_json::json;
use tokio::sync::{mpsc, Semaphore};

use super::clock::Clock;
use super::status::Board;
use super::store::{RecordStore, StoreUnavailable};
use super::writer::{queue, Msg, Writer, BATCH_BYTES, QUEUE_BYTES, WRITE_QUEUE};

const MIB: usize = 1024 * 1024;

/// Stores nothing until the gate opens; counts what it stored.
struct Gated {
    gate: Arc<Semaphore>,
    stored: Arc<AtomicUsize>,
}

impl Gated {
    fn closed() -> Arc<Gated> {
        Arc::new(Gated {
            gate: Arc::new(Semaphore::new(0)),
            stored: Arc::new(AtomicUsize::new(0)),
        })
    }
}

impl RecordStore for Gated {
    fn write(
        &self,
        _: &ClusterId,
        writes: Vec<Write>,
    ) -> impl Future<Output = Result<(), StoreUnavailable>> + Send {
        let (gate, stored) = (self.gate.clone(), self.stored.clone());
        async move {
            let _open = gate.acquire().await;
            stored.fetch_add(writes.len(), Ordering::SeqCst);
            Ok(())
        }
    }

    fn recorded_state(
        &self,
        _: &ClusterId,
        _: &str,
    ) -> impl Future<Output = Result<Option<RecordedState>, StoreUnavailable>> + Send {
        std::future::ready(Ok(None))
    }
}

/// A ConfigMap of about `bytes` bytes.
fn large(i: usize, bytes: usize) -> Msg {
    let name = format!("cm-{i}");
    let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("u{i}"), "resourceVersion": "1"},
        "data": {"blob": "x".repeat(bytes)}});
    Msg::Write(Write::Delta(DeltaRecord {
        resource: "configmaps".into(),
        namespace: "ns".into(),
        name,
        uid: format!("u{i}"),
        resource_version: "1".into(),
        store_resource_version: "1".into(),
        kind: DeltaType::Replaced,
        tombstone: false,
        at_ms: 0,
        managers: Vec::new(),
        object: JsonValue::from(object),
        previous: None,
    }))
}

/// Starts a writer on `store`; its queue.
fn writer(store: Arc<Gated>) -> (super::writer::Queue, tokio::task::JoinHandle<()>) {
    let (queue, receiver) = queue();
    let (board, _) = Board::new();
    let (failures, _) = mpsc::channel(1);
    let writer = Writer {
        store,
        cluster: ClusterId("c".into()),
        board,
        clock: Clock::new(),
        failures,
        batches: Arc::new(AtomicU64::new(0)),
    };
    (queue, tokio::task::spawn_local(writer.run(receiver)))
}

#[tokio::test]
async fn what_waits_for_the_store_is_bounded_in_bytes() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let store = Gated::closed();
            let (queue, writer) = writer(store.clone());
            let count = 40;
            assert!(
                count < WRITE_QUEUE,
                "far fewer writes than the queue has places"
            );
            let handed = Arc::new(AtomicUsize::new(0));
            let driver = {
                let handed = handed.clone();
                tokio::task::spawn_local(async move {
                    for i in 0..count {
                        queue.send(large(i, MIB)).await.unwrap();
                        handed.fetch_add(1, Ordering::SeqCst);
                    }
                })
            };
            tokio::time::sleep(Duration::from_millis(500)).await;
            let waiting = handed.load(Ordering::SeqCst);
            assert!(
                (BATCH_BYTES / MIB..=QUEUE_BYTES / MIB).contains(&waiting),
                "{waiting} writes of 1 MiB handed over while the store holds a batch \
                 (the writes' budget is {} MiB)",
                QUEUE_BYTES / MIB
            );
            assert_eq!(store.stored.load(Ordering::SeqCst), 0);
            // the store answers: the budget comes back as batches are stored
            store.gate.add_permits(Semaphore::MAX_PERMITS / 2);
            tokio::time::timeout(Duration::from_secs(10), driver)
                .await
                .expect("every write handed over")
                .unwrap();
            tokio::time::timeout(Duration::from_secs(10), writer)
                .await
                .expect("the writer stores everything and ends")
                .unwrap();
            assert_eq!(store.stored.load(Ordering::SeqCst), count);
        })
        .await;
}

#[tokio::test]
async fn a_write_larger_than_the_budget_goes_alone() {
    let local = tokio::task::LocalSet::new();
    local
        .run_until(async {
            let store = Gated::closed();
            store.gate.add_permits(Semaphore::MAX_PERMITS / 2);
            let (queue, writer) = writer(store.clone());
            let sent = async {
                queue.send(large(0, MIB)).await.unwrap();
                queue.send(large(1, QUEUE_BYTES + MIB)).await.unwrap();
                queue.send(large(2, MIB)).await.unwrap();
                drop(queue);
            };
            tokio::time::timeout(Duration::from_secs(10), sent)
                .await
                .expect("the large write handed over once the budget was free");
            tokio::time::timeout(Duration::from_secs(10), writer)
                .await
                .expect("the writer stores everything and ends")
                .unwrap();
            assert_eq!(store.stored.load(Ordering::SeqCst), 3);
        })
        .await;
}
