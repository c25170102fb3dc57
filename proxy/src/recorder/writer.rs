//! The one task that writes: it takes [`Msg`]s from every resource's driver
//! over one bounded [`Queue`] and hands the store batches of at most
//! [`BATCH_WRITES`] writes or [`BATCH_BYTES`] of objects, each gathered for
//! at most [`BATCH_WAIT`] after its first write. The queue holds at most
//! [`WRITE_QUEUE`] messages and, queued and in the batch being stored
//! together, [`QUEUE_BYTES`] of objects (a write larger than that alone):
//! a list of large objects (ConfigMaps, CRDs of a few hundred KB each, and
//! their previous versions) fills it by bytes long before 1024 messages. A
//! full queue makes the drivers wait, so they stop reading their upstream:
//! nothing piles up in memory. The first failed batch ends the writer (it
//! reports why and writes nothing more, so nothing after a lost write can
//! be stored); the supervisor restarts everything from the record.
//!
//! A [`Msg::Flush`] is answered once everything queued before it is
//! stored: a driver flushes before it reads its resource's recorded state,
//! so that state holds every write an earlier driver of that resource made.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use deltascope_history::{ClusterId, Write};
use tokio::sync::{mpsc, oneshot, OwnedSemaphorePermit, Semaphore};

use super::clock::Clock;
use super::status::Board;
use super::store::{RecordStore, StoreUnavailable};

/// Messages queued for the writer at most (each a write or a flush).
pub const WRITE_QUEUE: usize = 1024;
/// Writes in one batch at most.
pub const BATCH_WRITES: usize = 1000;
/// Object bytes (objects and previous versions, compact) in one batch at most.
pub const BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Object bytes handed to the writer and not stored yet at most: queued,
/// or in the batch being stored. Twice a batch, so that drivers fill the
/// next batch while one is stored.
pub const QUEUE_BYTES: usize = 2 * BATCH_BYTES;
/// How long a batch waits for more after its first write.
pub const BATCH_WAIT: Duration = Duration::from_millis(100);

/// What the drivers send the writer.
// Nearly every message is a write: boxing it would allocate once more per
// delta to shrink the rare flush.
#[allow(clippy::large_enum_variant)]
pub enum Msg {
    Write(Write),
    /// Answered once everything queued before it is stored.
    Flush(oneshot::Sender<()>),
}

fn write_bytes(write: &Write) -> usize {
    match write {
        Write::Delta(delta) => {
            delta.object.held_bytes() + delta.previous.as_ref().map_or(0, |p| p.held_bytes()) + 256
        }
        // a usage sample counts against the bytes bound as a delta does
        Write::Usage(usage) => usage.held_bytes(),
        _ => 64,
    }
}

/// The drivers' end of the writer's queue.
#[derive(Clone)]
pub struct Queue {
    sender: mpsc::Sender<Queued>,
    /// [`QUEUE_BYTES`] permits, one a byte: a write holds its bytes' worth
    /// from the moment it is queued until its batch is stored.
    budget: Arc<Semaphore>,
}

/// A message as queued: with the bytes of budget its write holds.
pub struct Queued {
    msg: Msg,
    held: Option<OwnedSemaphorePermit>,
}

/// The writer is gone.
#[derive(Debug, thiserror::Error)]
#[error("the recorder's writer has stopped")]
pub struct WriterGone;

/// A new queue: the drivers' end, and the writer's.
pub fn queue() -> (Queue, mpsc::Receiver<Queued>) {
    let (sender, receiver) = mpsc::channel(WRITE_QUEUE);
    let budget = Arc::new(Semaphore::new(QUEUE_BYTES));
    (Queue { sender, budget }, receiver)
}

impl Queue {
    /// Queues `msg`, waiting for room: a place in the queue and, for a
    /// write, its bytes of the budget (all of it for a write larger).
    pub async fn send(&self, msg: Msg) -> Result<(), WriterGone> {
        let held = match &msg {
            Msg::Write(write) => {
                let bytes = write_bytes(write).min(QUEUE_BYTES);
                let permits = u32::try_from(bytes).unwrap_or(u32::MAX);
                let held = self.budget.clone().acquire_many_owned(permits).await;
                Some(held.map_err(|_| WriterGone)?)
            }
            Msg::Flush(_) => None,
        };
        self.sender
            .send(Queued { msg, held })
            .await
            .map_err(|_| WriterGone)
    }
}

/// The writer's inputs.
pub struct Writer<S> {
    pub store: Arc<S>,
    pub cluster: ClusterId,
    pub board: Board,
    pub clock: Clock,
    /// Where the first failure goes.
    pub failures: mpsc::Sender<StoreUnavailable>,
    /// Batches stored (by this writer).
    pub batches: Arc<AtomicU64>,
}

impl<S: RecordStore> Writer<S> {
    /// Writes until every sender is gone (then everything queued is
    /// stored) or a batch fails.
    pub async fn run(self, mut queue: mpsc::Receiver<Queued>) {
        let mut batch: Vec<Write> = Vec::new();
        // the budget the batch's writes hold, given back once it is stored
        let mut held: Vec<OwnedSemaphorePermit> = Vec::new();
        let mut flushes: Vec<oneshot::Sender<()>> = Vec::new();
        loop {
            let Some(first) = queue.recv().await else {
                return;
            };
            let mut bytes = 0;
            let mut open = true;
            let deadline = tokio::time::Instant::now() + BATCH_WAIT;
            let mut next = Some(first);
            loop {
                match next.take() {
                    Some(Queued {
                        msg: Msg::Write(write),
                        held: budget,
                    }) => {
                        bytes += write_bytes(&write);
                        batch.push(write);
                        held.extend(budget);
                    }
                    Some(Queued {
                        msg: Msg::Flush(done),
                        ..
                    }) => {
                        // answered once what came before is stored
                        flushes.push(done);
                        break;
                    }
                    None => {}
                }
                if batch.len() >= BATCH_WRITES || bytes >= BATCH_BYTES {
                    break;
                }
                next = match queue.try_recv() {
                    Ok(msg) => Some(msg),
                    Err(mpsc::error::TryRecvError::Disconnected) => {
                        open = false;
                        break;
                    }
                    Err(mpsc::error::TryRecvError::Empty) => {
                        tokio::select! {
                            msg = queue.recv() => match msg {
                                Some(msg) => Some(msg),
                                None => { open = false; break; }
                            },
                            _ = tokio::time::sleep_until(deadline) => break,
                        }
                    }
                };
            }
            if !batch.is_empty() {
                if let Err(failure) = self.store_batch(std::mem::take(&mut batch)).await {
                    tracing::warn!(error = %failure, "recorder: the history database failed a write");
                    let _ = self.failures.try_send(failure);
                    return;
                }
            }
            held.clear();
            for done in flushes.drain(..) {
                let _ = done.send(());
            }
            if !open {
                return;
            }
        }
    }

    async fn store_batch(&self, batch: Vec<Write>) -> Result<(), StoreUnavailable> {
        let deltas = batch
            .iter()
            .filter(|w| matches!(w, Write::Delta(_)))
            .count() as u64;
        let gaps = batch.iter().filter(|w| matches!(w, Write::Gap(_))).count() as u64;
        self.store.write(&self.cluster, batch).await?;
        self.batches.fetch_add(1, Ordering::Relaxed);
        let now = self.clock.wall_now();
        self.board.update(|status| {
            status.deltas_written += deltas;
            status.gaps_written += gaps;
            status.last_write_ms = Some(now);
        });
        Ok(())
    }
}
