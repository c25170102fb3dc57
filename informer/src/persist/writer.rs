//! [`StoreWriter`]: what to write to the browser's database next for one
//! informer, and when. Sans-IO: [`StoreWriter::poll`] hands out one
//! [`WriteBatch`] (deletions, then records, then the meta record — one
//! transaction), the page carries it out and reports with
//! [`StoreWriter::done`]; nothing else is handed out meanwhile.
//!
//! It writes only while the informer is quiet (nothing queued, its store
//! matching its resourceVersion), so what is stored is always a state the
//! server had. New deltas go to the log; a new base is written when nothing
//! is stored yet, when the log since the base outgrew half of it, or when
//! deltas needed to rebuild the store were evicted by retention before they
//! were written (a relist of more objects than the history holds). A base
//! is written a chunk per batch from a snapshot of the store (shared
//! objects, no copy), and takes effect only with its last batch, which
//! writes the meta record pointing at it; a base interrupted by a reload
//! leaves only chunks nothing points at, deleted by the next base. New
//! deltas are encoded a budget's worth per batch; a meta record written
//! with a log cut short says so (`log_cut`), and a restore from it lists
//! again instead of watching from a resourceVersion its store never had.

mod base;
mod batch;
mod blocks;
mod job;
mod snapshot;

use super::meta::{
    log_end, BlockInfo, StoredMeta, BLOCK_BYTES, CHUNK_BYTES, FORMAT_VERSION, MIN_COMPACT_BYTES,
};
use crate::clock::Millis;
use crate::informer::Informer;
use crate::object::ObjectRef;
use crate::reflector::Phase;
use batch::{BaseInfo, InFlight};
pub use batch::{Delete, WriteBatch, WriteFailure};
use blocks::encode_blocks;
use job::BaseJob;
pub use job::RELEASE_STEP;
use snapshot::{Finished, Snapshotting};

/// The meta record is rewritten at least this often while the informer
/// watches, so a resume's gap starts at most this long before the page
/// went away.
pub const META_EVERY: Millis = 5_000;

/// Objects a new base's snapshot looks up per poll: a few milliseconds of
/// the page's time (a lookup is a cache miss or two).
pub const SNAPSHOT_STEP: usize = 8_192;

/// Sizes the writer works with (the defaults are the module's constants;
/// tests use small ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// About how many bytes one base chunk holds.
    pub chunk_bytes: usize,
    /// About how many bytes one log block holds.
    pub block_bytes: usize,
    /// At most this many bytes of log are encoded per batch (more waits
    /// for the next), so one batch is a few milliseconds of copying.
    pub batch_bytes: usize,
    /// A new base is due once the log since the last one holds more than
    /// half the base and more than this.
    pub min_compact_bytes: u64,
    /// Objects a new base's snapshot looks up per poll.
    pub snapshot_step: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            chunk_bytes: CHUNK_BYTES,
            block_bytes: BLOCK_BYTES,
            batch_bytes: BLOCK_BYTES,
            min_compact_bytes: MIN_COMPACT_BYTES,
            snapshot_step: SNAPSHOT_STEP,
        }
    }
}

/// Plans one informer's writes (see the module doc).
pub struct StoreWriter {
    resource: String,
    limits: Limits,
    /// What is stored (the last meta written), if anything this writer may
    /// build on.
    stored: Option<StoredMeta>,
    /// What is stored belongs to another lineage (another tab, or data this
    /// tab did not restore): replaced wholesale by the first base.
    replace_all: bool,
    /// A new base's snapshot being taken, before its job begins.
    snapshotting: Option<Snapshotting>,
    job: Option<BaseJob>,
    in_flight: Option<InFlight>,
    /// Nothing more is written (the browser's storage is full).
    paused: Option<String>,
    /// Stored blocks below this go with the next batch (storage was full).
    trim_below: Option<u64>,
    /// History before this sequence number is not stored (the user forgot
    /// the stored history then).
    min_seq: u64,
    /// What the user should know about the last write, if anything.
    notice: Option<String>,
    /// Objects a finished or abandoned base held, released a slice at a
    /// time ([`StoreWriter::release_step`]): when a relist has replaced
    /// them, the base holds the last references, and dropping 100k
    /// objects at once is one long task on the page's thread.
    released: Vec<ObjectRef>,
    /// The last poll encoded part of a base's log and more is left: poll
    /// again (see [`StoreWriter::encoding`]).
    encoding: bool,
}

impl StoreWriter {
    /// A writer for a resource with nothing stored (or stored data this
    /// informer did not come from: `replace_all`).
    pub fn new(resource: impl Into<String>, replace_all: bool) -> StoreWriter {
        StoreWriter {
            resource: resource.into(),
            limits: Limits::default(),
            stored: None,
            replace_all,
            snapshotting: None,
            job: None,
            in_flight: None,
            paused: None,
            trim_below: None,
            min_seq: 0,
            notice: None,
            released: Vec::new(),
            encoding: false,
        }
    }

    /// A writer continuing what `meta` describes: the informer was restored
    /// from it.
    pub fn restored(meta: StoredMeta) -> StoreWriter {
        let resource = meta.resource.clone();
        StoreWriter {
            stored: Some(meta),
            ..StoreWriter::new(resource, false)
        }
    }

    /// The same writer working with other sizes.
    pub fn with_limits(mut self, limits: Limits) -> StoreWriter {
        self.limits = limits;
        self
    }

    /// Stores history only from sequence number `seq` on (the store itself
    /// is stored whole, as ever).
    pub fn storing_from(mut self, seq: u64) -> StoreWriter {
        self.min_seq = seq;
        self
    }

    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The meta record last written.
    pub fn stored(&self) -> Option<&StoredMeta> {
        self.stored.as_ref()
    }

    /// A base is being written: (objects written, of how many).
    pub fn base_progress(&self) -> Option<(usize, usize)> {
        let job = self.job.as_ref()?;
        Some((job.next, job.snapshot.len()))
    }

    /// Why nothing more is written, if so.
    pub fn paused(&self) -> Option<&str> {
        self.paused.as_deref()
    }

    /// What the user should know (storage full, deltas dropped), once.
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    /// The next batch to write, if one is due now. `shown_at` is when the
    /// view was last shown (the order views come back in). Deltas wait for
    /// a batch worth writing — [`META_EVERY`] since the last write, about a
    /// block's sixteenth of bytes, or a quarter of what retention holds —
    /// so a quiet resource is not a write a second; [`StoreWriter::poll_now`]
    /// writes whatever is pending (the page is going away).
    pub fn poll(
        &mut self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
    ) -> Option<WriteBatch> {
        self.poll_with(informer, now, shown_at, false)
    }

    /// [`StoreWriter::poll`], writing pending deltas and state at once.
    pub fn poll_now(
        &mut self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
    ) -> Option<WriteBatch> {
        self.poll_with(informer, now, shown_at, true)
    }

    fn poll_with(
        &mut self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
        force: bool,
    ) -> Option<WriteBatch> {
        self.encoding = false;
        if self.in_flight.is_some() || self.paused.is_some() || !quiet(informer) {
            return None;
        }
        if self.job.is_none() && self.snapshotting.is_none() && self.needs_base(informer) {
            self.snapshotting = Some(Snapshotting::begin(informer));
        }
        if let Some(mut snapshotting) = self.snapshotting.take() {
            // The snapshot is looked up a step per poll, and the first chunk
            // encoded by the poll after it, after a yield: done at once, the
            // whole is one long task on the page's thread.
            let step = self.limits.snapshot_step;
            if snapshotting.step(informer, step) {
                match snapshotting.finish(informer, step) {
                    Finished::Objects(objects) => self.start_base(informer, now, objects),
                    Finished::BeginsAgain(again, looked_up) => {
                        self.released.extend(looked_up);
                        self.snapshotting = Some(again);
                    }
                }
            } else {
                self.snapshotting = Some(snapshotting);
            }
            self.encoding = true;
            return None;
        }
        if self.job.is_some() {
            return self.base_batch(informer, now, shown_at);
        }
        let history = informer.history();
        let stored = self.stored.as_ref()?;
        let persisted = stored.next_seq();
        let since_write = now.saturating_sub(stored.saved_at);
        let gaps_changed = stored.gaps.len() != history.gaps().len();
        if history.next_seq() > persisted {
            let pending = history.next_seq() - persisted;
            let pending_bytes: usize = (persisted..history.next_seq())
                .filter_map(|seq| history.get(seq))
                .map(|entry| entry.bytes)
                .sum();
            let due = force
                || gaps_changed
                || since_write >= META_EVERY
                || stored.log_cut
                || pending_bytes >= self.limits.block_bytes / 16
                || pending.saturating_mul(4) >= history.config().max_deltas as u64;
            return due.then(|| self.log_batch(informer, now, shown_at));
        }
        let stale = since_write >= META_EVERY
            || gaps_changed
            || stored.shown_at != shown_at
            || stored.columns.is_none() != informer.server_columns().is_none()
            || (force && stored.resource_version != informer.status().last_resource_version);
        if stale || self.trim_below.is_some() {
            return Some(self.hand_out(
                informer,
                now,
                shown_at,
                None,
                false,
                Vec::new(),
                Vec::new(),
            ));
        }
        None
    }

    /// The page carried out the last batch (`Ok`), or could not. A failed
    /// batch changed nothing stored; `quota` says the browser's storage is
    /// full, and the oldest stored history goes first (or, with nothing
    /// left to drop, writing stops and the notice says so).
    pub fn done(&mut self, result: Result<(), WriteFailure>) {
        let Some(in_flight) = self.in_flight.take() else {
            return;
        };
        match (in_flight, result) {
            (InFlight::Chunk { bytes }, Ok(())) => {
                if let Some(job) = &mut self.job {
                    job.chunks += 1;
                    job.bytes += bytes;
                }
            }
            (InFlight::Meta(meta), Ok(())) => {
                if self
                    .job
                    .as_ref()
                    .is_some_and(|job| job.generation == meta.generation)
                {
                    self.end_base();
                    self.replace_all = false;
                }
                self.stored = Some(*meta);
            }
            (_, Err(WriteFailure::Quota)) => {
                self.end_base();
                self.make_room();
            }
            (_, Err(WriteFailure::Other(why))) => {
                // Tried again from scratch later; nothing stored changed.
                self.end_base();
                self.notice = Some(format!("could not store {}: {why}", self.resource));
            }
        }
    }

    /// Storage is full: drop the oldest stored history that is not needed
    /// to rebuild the store (blocks before the base) with the next batch,
    /// else stop writing.
    fn make_room(&mut self) {
        let droppable: Vec<BlockInfo> = self
            .stored
            .iter()
            .flat_map(|stored| {
                let base_seq = stored.base_seq;
                stored
                    .blocks
                    .iter()
                    .copied()
                    .filter(move |b| b.end_seq <= base_seq)
            })
            .filter(|b| self.trim_below.is_none_or(|below| b.first_seq >= below))
            .collect();
        let Some(last) = droppable.get(droppable.len().div_ceil(2).saturating_sub(1)) else {
            let paused = format!(
                "the browser's storage is full: {} is no longer stored (what is stored stays as of its last write)",
                self.resource
            );
            self.notice = Some(paused.clone());
            self.paused = Some(paused);
            return;
        };
        let deltas = last.end_seq - droppable[0].first_seq;
        self.trim_below = Some(last.end_seq);
        self.notice = Some(format!(
            "the browser's storage is full: the oldest {deltas} stored deltas of {} are dropped from what is stored",
            self.resource
        ));
    }

    /// The last poll handed out nothing but made progress encoding a
    /// base's log: poll again after a yield.
    pub fn encoding(&self) -> bool {
        self.encoding
    }

    /// New deltas since the last write, up to [`LOG_BYTES_PER_BATCH`].
    fn log_batch(&mut self, informer: &Informer, now: Millis, shown_at: Millis) -> WriteBatch {
        let from = self.stored.as_ref().map_or(0, StoredMeta::next_seq);
        let limits = (self.limits.block_bytes, self.limits.batch_bytes);
        let blocks = encode_blocks(informer, from, limits, None);
        self.hand_out(informer, now, shown_at, None, false, Vec::new(), blocks)
    }

    /// A batch writing `blocks` and the meta that goes with them.
    #[allow(clippy::too_many_arguments)]
    fn hand_out(
        &mut self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
        base: Option<BaseInfo>,
        fresh: bool,
        mut deletes: Vec<Delete>,
        blocks: Vec<(BlockInfo, Vec<u8>)>,
    ) -> WriteBatch {
        let infos = blocks.iter().map(|(info, _)| *info).collect();
        let meta = self.next_meta_from(informer, now, shown_at, base, fresh, infos);
        if let Some(first) = meta.blocks.first() {
            deletes.push(Delete::LogBelow(first.first_seq));
        }
        self.trim_below = None;
        self.in_flight = Some(InFlight::Meta(Box::new(meta.clone())));
        WriteBatch {
            deletes,
            chunks: Vec::new(),
            blocks: blocks
                .into_iter()
                .map(|(info, bytes)| (info.first_seq, bytes))
                .collect(),
            meta: Some(meta),
        }
    }

    /// The meta record after this write: the stored one (unless `fresh`)
    /// with `base` and `new_blocks`, blocks no longer needed dropped, and
    /// the informer's state.
    fn next_meta_from(
        &self,
        informer: &Informer,
        now: Millis,
        shown_at: Millis,
        base: Option<BaseInfo>,
        fresh: bool,
        new_blocks: Vec<BlockInfo>,
    ) -> StoredMeta {
        let previous = self.stored.as_ref().filter(|_| !fresh);
        let base = base
            .or_else(|| {
                previous.map(|p| BaseInfo {
                    generation: p.generation,
                    base_seq: p.base_seq,
                    chunks: p.base_chunks,
                    objects: p.base_objects,
                    bytes: p.base_bytes,
                    face_chunks: p.face_chunks,
                    face_bytes: p.face_bytes,
                    at: p.base_at,
                })
            })
            .unwrap_or_default();
        let history = informer.history();
        let mut blocks: Vec<BlockInfo> = previous.map(|p| p.blocks.clone()).unwrap_or_default();
        blocks.extend(new_blocks);
        // Blocks wholly before both the base and the history are not needed.
        let keep_from = base.base_seq.min(history.first_seq());
        let keep_from = match self.trim_below {
            Some(below) => keep_from.max(below.min(base.base_seq)),
            None => keep_from,
        };
        blocks.retain(|b| b.end_seq > keep_from);
        let log_first = blocks.first().map_or(base.base_seq, |b| b.first_seq);
        // A batch's budget stopped the log short of the informer's state.
        let log_cut = log_end(&blocks, base.base_seq) < history.next_seq();
        let history_first_seq = history.first_seq().max(log_first);
        let status = informer.status();
        let current = !log_cut
            && matches!(status.phase, Phase::Watching)
            && informer.is_watch_open()
            && informer.has_synced();
        StoredMeta {
            format: FORMAT_VERSION,
            fingerprint: crate::well_known::fingerprint(),
            resource: self.resource.clone(),
            shown_at,
            generation: base.generation,
            base_seq: base.base_seq,
            base_chunks: base.chunks,
            base_objects: base.objects,
            base_bytes: base.bytes,
            face_chunks: base.face_chunks,
            face_bytes: base.face_bytes,
            base_at: base.at,
            blocks,
            resource_version: status.last_resource_version.clone(),
            log_cut,
            history_first_seq,
            recorded: history.recorded(),
            dropped: history.dropped() + (history_first_seq - history.first_seq()),
            gaps: history.gaps().cloned().collect(),
            columns: informer.server_columns().map(|c| c.to_vec()),
            saved_at: now,
            current_at: if current {
                now
            } else {
                previous.map_or(now, |p| p.current_at)
            },
        }
    }
}

/// The informer's store matches its resourceVersion and the deltas
/// recorded: nothing is queued and it has a state worth storing.
fn quiet(informer: &Informer) -> bool {
    !informer.has_queued_deltas()
        && (informer.has_synced() || informer.is_warm())
        && !matches!(informer.status().phase, Phase::Listing { .. } | Phase::Idle)
}
