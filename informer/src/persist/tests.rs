//! Native tests of persistence: an in-memory stand-in for the browser's
//! database carries out the writer's batches exactly as the page does
//! (deletions, then records, then the meta record), and a restore through
//! [`Restorer`] must give back the store and the history the informer held,
//! resume with a watch (never a list), stay warm until the watch caught up,
//! relist with a recorded gap after a 410 — after any sequence of changes,
//! relists, failed writes and reloads (a property test).

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;
use crate::test_support::*;
use crate::*;

/// The database: records by key, as IndexedDB holds them.
#[derive(Default, Clone)]
pub(super) struct FakeDb {
    meta: Option<String>,
    chunks: BTreeMap<(u32, u32), Vec<u8>>,
    log: BTreeMap<u64, Vec<u8>>,
}

impl FakeDb {
    pub(super) fn apply(&mut self, batch: WriteBatch) {
        for delete in batch.deletes {
            match delete {
                Delete::ChunksOf(g) => self.chunks.retain(|(gen, _), _| *gen != g),
                Delete::ChunksExcept(g) => self.chunks.retain(|(gen, _), _| *gen == g),
                Delete::LogBelow(seq) => self.log.retain(|first, _| *first >= seq),
                Delete::AllLog => self.log.clear(),
            }
        }
        self.chunks.extend(batch.chunks);
        self.log.extend(batch.blocks);
        if let Some(meta) = batch.meta {
            self.meta = Some(serde_json::to_string(&meta).expect("meta serialises"));
        }
    }

    fn bytes(&self) -> usize {
        self.chunks.values().map(Vec::len).sum::<usize>()
            + self.log.values().map(Vec::len).sum::<usize>()
    }
}

pub(super) fn small() -> Limits {
    Limits {
        chunk_bytes: 200,
        block_bytes: 300,
        batch_bytes: 1_000,
        min_compact_bytes: 1_000,
        snapshot_step: 3,
    }
}

/// Writes everything due at `now`.
pub(super) fn flush(writer: &mut StoreWriter, informer: &Informer, db: &mut FakeDb, now: Millis) {
    for _ in 0..10_000 {
        let Some(batch) = writer.poll_now(informer, now, 7) else {
            if writer.encoding() {
                continue;
            }
            return;
        };
        db.apply(batch);
        writer.done(Ok(()));
    }
    panic!("the writer never finished");
}

/// A reload: a new informer restored from `db`, resumed at `now`.
pub(super) fn restore(
    db: &FakeDb,
    config: InformerConfig,
    now: Millis,
) -> Result<(Informer, StoredMeta), PersistError> {
    restore_with(db, config, now, |_, _| {})
}

/// [`restore`], with `once_faced` run once the faces are in, before the
/// chunks are read (where the page watches ahead).
pub(super) fn restore_with(
    db: &FakeDb,
    config: InformerConfig,
    now: Millis,
    once_faced: impl FnOnce(&mut Informer, &StoredMeta),
) -> Result<(Informer, StoredMeta), PersistError> {
    let text = db
        .meta
        .as_ref()
        .ok_or(PersistError::Missing("the meta record".into()))?;
    let mut restorer = Restorer::from_json(text)?;
    let meta = restorer.meta().clone();
    let mut informer = Informer::new(config);
    // as the page does: the face first, every row shown, then the chunks
    for index in restorer.face_chunks() {
        let key = (meta.generation, index);
        let bytes = db
            .chunks
            .get(&key)
            .ok_or(PersistError::Missing(format!("the face {key:?}")))?;
        let mut faces = restorer.face(bytes)?;
        while faces.left() > 0 {
            informer.restore_faces(
                faces.next_objects(3)?,
                meta.base_at,
                meta.columns.as_deref(),
            );
        }
    }
    once_faced(&mut informer, &meta);
    while let Some(key) = restorer.next_chunk() {
        let bytes = db
            .chunks
            .get(&key)
            .ok_or(PersistError::Missing(format!("chunk {key:?}")))?;
        let objects = restorer.chunk(bytes)?;
        informer.restore_objects(objects);
    }
    for info in restorer.blocks().to_vec() {
        let bytes = db
            .log
            .get(&info.first_seq)
            .ok_or(PersistError::Missing(format!("block {}", info.first_seq)))?;
        let store = informer.store();
        let base = |key: &str, rv: &str| {
            store
                .get_by_key(key)
                .filter(|o| o.resource_version == rv)
                .cloned()
        };
        restorer.block(bytes, &base)?;
    }
    let restored = restorer.finish()?;
    for entry in &restored.replay {
        informer.restore_delta(entry);
    }
    informer.resume(restored.resume, now)?;
    Ok((informer, meta))
}

/// What a history says, comparably.
pub(super) fn history_of(
    informer: &Informer,
) -> Vec<(u64, Millis, String, String, String, bool, String)> {
    informer
        .history()
        .iter()
        .map(|e| {
            (
                e.seq,
                e.at,
                format!("{:?}", e.kind),
                e.key().to_owned(),
                e.resource_version().to_owned(),
                e.tombstone,
                e.writers.join(","),
            )
        })
        .collect()
}

fn counters(informer: &Informer) -> (u64, u64, u64, usize) {
    let h = informer.history();
    (h.recorded(), h.dropped(), h.first_seq(), h.len())
}

fn with_manager(mut object: Value, manager: &str, time: &str) -> Value {
    object["metadata"]["managedFields"] = json!([{
        "manager": manager, "operation": "Update", "apiVersion": "v1", "time": time,
        "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}
    }]);
    object
}

#[test]
fn a_store_and_its_history_come_back_and_resume_with_a_watch_from_the_stored_version() {
    let (mut live, wid) = watching(cfg(), 10);
    let mut lines = ev(
        "MODIFIED",
        with_manager(pod("p1", "11"), "kubectl-edit", "2026-01-01T00:00:00Z"),
    );
    lines.extend(ev("DELETED", pod("p2", "12")));
    lines.extend(ev("ADDED", pod("p20", "13")));
    lines.extend(bookmark("14", false));
    chunk(&mut live, wid, &lines, 50);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    flush(&mut writer, &live, &mut db, 100);
    assert!(
        db.chunks.len() > 1,
        "the base is in several chunks: {:?}",
        db.chunks.values().map(Vec::len).collect::<Vec<_>>()
    );
    chunk(&mut live, wid, &ev("MODIFIED", pod("p3", "15")), 200);
    flush(&mut writer, &live, &mut db, 200);

    let (mut back, meta) = restore(&db, cfg(), 1_000).expect("restores");
    assert_eq!(meta.resource_version, "15");
    assert_eq!(back.store().digest(), live.store().digest());
    // the face was read first; the chunks then put every whole object back
    assert!(meta.face_chunks >= 1, "a face is stored");
    let face: Vec<&Vec<u8>> = (0..meta.face_chunks)
        .map(|i| &db.chunks[&(meta.generation, meta.base_chunks + i)])
        .collect();
    assert_eq!(
        face.iter().map(|f| f.len() as u64).sum::<u64>(),
        meta.face_bytes
    );
    let faces: Vec<ObjectRef> = face
        .iter()
        .flat_map(|f| codec::decode_objects(f, "the face").expect("a face decodes"))
        .collect();
    assert_eq!(faces.len() as u64, meta.base_objects);
    assert!(faces
        .iter()
        .all(|f| f.value.pointer("/metadata/managedFields").is_none()));
    assert!(
        back.store().list().eq(live.store().list()),
        "whole objects, not faces"
    );
    assert_eq!(back.faces_as_of(), None, "resumed: no face is shown");
    assert_eq!(history_of(&back), history_of(&live));
    assert_eq!(counters(&back), counters(&live));
    assert!(
        history_of(&back).iter().any(|h| h.6 == "kubectl-edit"),
        "who wrote a delta is kept"
    );
    assert!(back.is_warm() && !back.has_synced());
    let (_, kind, path) = one_send(&drain(&mut back));
    assert_eq!(
        kind,
        RequestKind::Watch,
        "a restored store is not listed again"
    );
    assert_eq!(query(&path)["resourceVersion"], "15");
    assert_eq!(query(&path)["allowWatchBookmarks"], "true");
}

#[test]
fn faces_show_with_the_server_columns_their_cells_were_printed_with() {
    let column = |name: &str| ColumnDefinition {
        name: name.into(),
        type_: "string".into(),
        format: String::new(),
        description: String::new(),
        priority: 0,
    };
    let mut informer = Informer::new(cfg());
    assert!(informer.server_columns().is_none());
    let stored = vec![column("Name"), column("Status")];
    informer.restore_faces(Vec::new(), 5, Some(&stored));
    assert_eq!(informer.server_columns().map(|c| c.to_vec()), Some(stored));
    assert_eq!(informer.faces_as_of(), Some(5));
}

#[test]
fn a_base_and_its_face_are_written_in_key_order() {
    let (live, _) = watching(cfg(), 30);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    flush(&mut writer, &live, &mut db, 100);
    let meta: StoredMeta = serde_json::from_str(db.meta.as_ref().unwrap()).unwrap();
    let keys_of = |indexes: std::ops::Range<u32>| -> Vec<String> {
        indexes
            .flat_map(|i| {
                codec::decode_objects(&db.chunks[&(meta.generation, i)], "a chunk").unwrap()
            })
            .map(|o| o.key.clone())
            .collect()
    };
    let base = keys_of(0..meta.base_chunks);
    assert!(meta.face_chunks > 1, "the face is in several chunks");
    let face = keys_of(meta.base_chunks..meta.base_chunks + meta.face_chunks);
    let expected: Vec<String> = live
        .store()
        .keys_in_order()
        .iter()
        .map(|k| k.to_string())
        .collect();
    assert_eq!(base, expected, "the base's objects in key order");
    assert_eq!(face, expected, "the face's rows in key order");
}

/// An informer configured by `config` that listed pods `p0..p{count}` at
/// resourceVersion 10 and is watching; its watch request.
pub(super) fn watching(config: InformerConfig, count: usize) -> (Informer, RequestId) {
    let items: Vec<Value> = (0..count).map(|i| pod(&format!("p{i}"), "10")).collect();
    let mut live = Informer::new(config);
    let (wid, _) = listed(&mut live, &items, "10");
    open(&mut live, wid, 200, 0);
    (live, wid)
}

/// `live` after a list and a flush; a restored copy resumed at 1,000 and
/// its watch request.
fn stored_and_restored() -> (Informer, FakeDb, Informer, RequestId) {
    let (live, _) = watching(cfg(), 6);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false);
    flush(&mut writer, &live, &mut db, 100);
    let (mut back, _) = restore(&db, cfg(), 1_000).expect("restores");
    let (wid, _, _) = one_send(&drain(&mut back));
    (live, db, back, wid)
}

#[test]
fn a_resumed_watch_is_warm_until_its_first_bookmark() {
    let (_, _, mut back, wid) = stored_and_restored();
    open(&mut back, wid, 200, 1_010);
    chunk(&mut back, wid, &ev("MODIFIED", pod("p1", "11")), 1_020);
    assert!(
        back.is_warm() && !back.has_synced(),
        "an event is not yet caught up"
    );
    assert_eq!(
        back.store()
            .get_by_key("default/p1")
            .map(|o| o.resource_version.as_str()),
        Some("11")
    );
    chunk(&mut back, wid, &bookmark("12", false), 1_030);
    assert!(
        !back.is_warm() && back.has_synced(),
        "the bookmark says synced here"
    );
    assert_eq!(back.status().phase, Phase::Watching);
    let last = back
        .history()
        .iter()
        .last()
        .expect("the update is recorded");
    assert_eq!((last.resource_version(), last.at), ("11", 1_020));
    assert_eq!(
        back.history().gaps().count(),
        0,
        "a resumed watch leaves no gap"
    );
}

#[test]
fn a_resumed_watch_that_stays_quiet_has_caught_up() {
    let (_, _, mut back, wid) = stored_and_restored();
    open(&mut back, wid, 200, 1_010);
    let wake = drain(&mut back).wake.expect("a timer for the quiet watch");
    assert_eq!(wake, 1_010 + reflector::CATCH_UP_QUIET);
    back.handle(Input::Tick, wake - 1);
    assert!(back.is_warm());
    back.handle(Input::Tick, wake);
    assert!(!back.is_warm() && back.has_synced());
}

#[test]
fn a_410_on_resume_relists_tombstones_what_vanished_and_records_the_gap() {
    let (live, _, mut back, wid) = stored_and_restored();
    // The server compacted past the stored version while the page was closed.
    respond(
        &mut back,
        wid,
        410,
        &status_body(410, "Expired", "too old resource version: 10"),
        1_010,
    );
    assert!(back.is_warm(), "still showing the stored state");
    let wake = drain(&mut back).wake.expect("a relist is scheduled");
    back.handle(Input::Tick, wake);
    let (lid, kind, _) = one_send(&drain(&mut back));
    assert_eq!(kind, RequestKind::List);
    let now_items: Vec<Value> = (1..6)
        .map(|i| pod(&format!("p{i}"), "90"))
        .chain([pod("p9", "91")])
        .collect();
    respond(
        &mut back,
        lid,
        200,
        &list_body(&now_items, "95", None),
        5_000,
    );
    assert!(!back.is_warm() && back.has_synced());
    let gaps: Vec<&Gap> = back.history().gaps().collect();
    let as_of = live
        .history()
        .iter()
        .next()
        .map(|_| 100)
        .expect("stored at 100");
    assert_eq!(
        gaps,
        [&Gap {
            from: as_of,
            to: 5_000
        }]
    );
    let p0 = back
        .history()
        .iter()
        .find(|e| e.key() == "default/p0" && e.kind == DeltaType::Deleted)
        .expect("p0 vanished while the page was closed");
    assert!(p0.tombstone, "its final state is unknown");
    assert_eq!(back.store().len(), 6);
    assert_eq!(back.status().relists, 1);
}

#[test]
fn a_few_deltas_wait_for_a_batch_worth_writing_unless_the_page_goes_away() {
    let (mut live, wid) = watching(cfg(), 4);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false);
    flush(&mut writer, &live, &mut db, 100);
    let stored = |db: &FakeDb| {
        serde_json::from_str::<StoredMeta>(db.meta.as_ref().unwrap())
            .unwrap()
            .next_seq()
    };
    let written = stored(&db);
    chunk(&mut live, wid, &ev("MODIFIED", pod("p1", "11")), 200);
    assert!(
        writer.poll(&live, 1_000, 7).is_none(),
        "one delta is not yet due"
    );
    chunk(&mut live, wid, &bookmark("12", false), 300);
    assert!(writer.poll(&live, 1_000, 7).is_none(), "nor is a bookmark");
    let batch = writer
        .poll(&live, 100 + META_EVERY, 7)
        .expect("due after a while");
    db.apply(batch);
    writer.done(Ok(()));
    assert_eq!(stored(&db), written + 1);
    chunk(&mut live, wid, &ev("MODIFIED", pod("p2", "13")), 400);
    let batch = writer
        .poll_now(&live, 100 + META_EVERY + 1, 7)
        .expect("written at once when asked");
    db.apply(batch);
    writer.done(Ok(()));
    assert_eq!(stored(&db), written + 2);
}

#[test]
fn a_log_larger_than_half_the_base_becomes_a_new_base() {
    let (mut live, wid) = watching(cfg(), 8);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    flush(&mut writer, &live, &mut db, 100);
    let first_generation = writer.stored().expect("stored").generation;
    for rv in 11..60 {
        chunk(
            &mut live,
            wid,
            &ev("MODIFIED", pod(&format!("p{}", rv % 8), &rv.to_string())),
            rv,
        );
        flush(&mut writer, &live, &mut db, rv);
    }
    let meta = writer.stored().expect("stored").clone();
    assert!(
        meta.generation > first_generation,
        "compacted into a new base"
    );
    assert!(
        db.chunks.keys().all(|(g, _)| *g == meta.generation),
        "old chunks deleted"
    );
    assert!(
        db.log.keys().next().copied() == meta.blocks.first().map(|b| b.first_seq),
        "no block older than the meta lists"
    );
    let (back, _) = restore(&db, cfg(), 1_000).expect("restores");
    assert_eq!(back.store().digest(), live.store().digest());
    assert_eq!(history_of(&back), history_of(&live));
}

#[test]
fn a_bases_log_is_encoded_a_batch_worth_per_poll() {
    let (mut live, wid) = watching(cfg(), 8);
    for rv in 11..60 {
        let line = ev("MODIFIED", pod(&format!("p{}", rv % 8), &rv.to_string()));
        chunk(&mut live, wid, &line, rv);
    }
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    let mut encoding_polls = 0;
    loop {
        match writer.poll_now(&live, 100, 7) {
            Some(batch) => {
                db.apply(batch);
                writer.done(Ok(()));
            }
            None if writer.encoding() => encoding_polls += 1,
            None => break,
        }
    }
    // one poll took the snapshot; 41 of the 49 updates are versions the
    // base does not hold (written whole), over 1,000 bytes: more than one
    // poll encoded them
    assert!(
        encoding_polls >= 3,
        "{encoding_polls} polls encoded the log"
    );
    let (back, _) = restore(&db, cfg(), 1_000).expect("restores");
    assert_eq!(back.store().digest(), live.store().digest());
    assert_eq!(history_of(&back), history_of(&live));
}

#[test]
fn a_page_gone_after_a_log_batch_cut_by_its_budget_lists_again_on_reload() {
    let (mut live, wid) = watching(cfg(), 8);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false).with_limits(small());
    flush(&mut writer, &live, &mut db, 100);
    let mut server: BTreeMap<String, u32> = (0..8).map(|i| (format!("p{i}"), 10)).collect();
    for rv in 11..40 {
        let name = format!("p{}", rv % 8);
        chunk(
            &mut live,
            wid,
            &ev("MODIFIED", pod(&name, &rv.to_string())),
            rv.into(),
        );
        server.insert(name, rv);
    }
    // One batch is written (29 whole objects are more than its budget),
    // then the page goes away before the next.
    let batch = writer.poll_now(&live, 200, 7).expect("due");
    db.apply(batch);
    writer.done(Ok(()));
    let meta = writer.stored().expect("stored").clone();
    assert!(
        meta.next_seq() < live.history().next_seq(),
        "the budget cut the log: {} of {}",
        meta.next_seq(),
        live.history().next_seq()
    );
    let (mut back, _) = restore(&db, cfg(), 1_000).expect("what was written comes back");
    assert!(back.is_warm(), "shown as stored");
    // The store it rebuilds was never the server's at the stored version:
    // a watch from there would never bring the deltas the log lacks.
    let (lid, kind, _) = one_send(&drain(&mut back));
    assert_eq!(kind, RequestKind::List, "listed again, not watched");
    let items: Vec<Value> = server
        .iter()
        .map(|(name, rv)| pod(name, &rv.to_string()))
        .collect();
    respond(&mut back, lid, 200, &list_body(&items, "39", None), 2_000);
    assert!(!back.is_warm() && back.has_synced());
    assert_eq!(back.store().digest(), live.store().digest());
    assert_eq!(
        back.history().gaps().count(),
        1,
        "the deltas never written are a gap in the history"
    );
}

#[test]
fn a_written_base_lets_go_of_its_objects_a_slice_at_a_time() {
    let (live, _) = watching(cfg(), RELEASE_STEP + 100);
    let object = live.store().list().next().cloned().expect("an object");
    let held_by_others = Arc::strong_count(&object) - 1;
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false);
    flush(&mut writer, &live, &mut db, 100);
    assert!(writer.stored().is_some(), "the base is written");
    // the base's snapshot still holds every object, until released
    assert_eq!(Arc::strong_count(&object) - 1, held_by_others + 1);
    assert!(
        writer.release_step(),
        "one slice released, 100 objects left"
    );
    assert!(!writer.release_step(), "all released");
    assert_eq!(Arc::strong_count(&object) - 1, held_by_others);
}

#[test]
fn deltas_evicted_before_they_were_written_force_a_new_base() {
    let mut config = cfg();
    config.history = HistoryConfig {
        max_deltas: 4,
        max_bytes: usize::MAX,
    };
    let (mut live, wid) = watching(config.clone(), 3);
    let mut db = FakeDb::default();
    let mut writer = StoreWriter::new("core/v1/pods", false);
    flush(&mut writer, &live, &mut db, 100);
    // ten changes, four held: the log cannot continue
    let mut lines = Vec::new();
    for rv in 11..21 {
        lines.extend(ev("ADDED", pod(&format!("n{rv}"), &rv.to_string())));
    }
    chunk(&mut live, wid, &lines, 150);
    flush(&mut writer, &live, &mut db, 200);
    assert_eq!(writer.stored().map(|m| m.generation), Some(2));
    let (back, _) = restore(&db, config, 1_000).expect("restores");
    assert_eq!(back.store().digest(), live.store().digest());
    assert_eq!(history_of(&back), history_of(&live));
    assert_eq!(counters(&back), counters(&live));
}

#[test]
fn damaged_or_foreign_records_are_refused_with_a_reason() {
    let (_, db, _, _) = stored_and_restored();
    let mut other = db.clone();
    let meta: StoredMeta = serde_json::from_str(other.meta.as_ref().unwrap()).unwrap();
    let mut foreign = meta.clone();
    foreign.format = FORMAT_VERSION + 1;
    other.meta = Some(serde_json::to_string(&foreign).unwrap());
    assert!(matches!(
        restore(&other, cfg(), 0),
        Err(PersistError::OtherFormat { .. })
    ));

    let mut torn = db.clone();
    torn.chunks.clear();
    assert!(matches!(
        restore(&torn, cfg(), 0),
        Err(PersistError::Missing(_))
    ));

    let mut garbage = db.clone();
    garbage.meta = Some("{\"format\": ".into());
    assert!(matches!(
        restore(&garbage, cfg(), 0),
        Err(PersistError::Meta(_))
    ));

    // a record from before faces were stored comes back from its chunks
    let mut faceless = db.clone();
    let mut text: Value = serde_json::to_value(&meta).unwrap();
    text.as_object_mut().unwrap().remove("face_bytes");
    text.as_object_mut().unwrap().remove("face_chunks");
    faceless.meta = Some(text.to_string());
    faceless
        .chunks
        .retain(|(_, index), _| *index < meta.base_chunks);
    assert!(restore(&faceless, cfg(), 0).is_ok());

    // the face is read first; then the chunks
    for (cut_face, says) in [(true, "face"), (false, "chunk 0")] {
        let mut cut = db.clone();
        for ((_, index), bytes) in cut.chunks.iter_mut() {
            if (*index >= meta.base_chunks) == cut_face {
                bytes.truncate(bytes.len() / 2);
            }
        }
        let Err(error) = restore(&cut, cfg(), 0) else {
            panic!("a cut {says} is refused");
        };
        assert!(error.to_string().contains(says), "{error}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Any byte of a stored record changed: the restore is refused or gives
    /// objects that read back; it never panics.
    #[test]
    fn a_changed_byte_never_panics(chunk_or_log in any::<bool>(), at in any::<prop::sample::Index>(), value in any::<u8>()) {
        let (_, db, _, _) = stored_and_restored();
        let mut changed = db.clone();
        let record = if chunk_or_log {
            changed.chunks.values_mut().next()
        } else {
            changed.log.values_mut().next()
        };
        if let Some(bytes) = record {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Ok((back, _)) = restore(&changed, cfg(), 0) {
            for object in back.store().list() {
                let _ = object.value.to_json();
            }
        }
    }
}

/// One step of the property test's session.
#[derive(Debug, Clone)]
enum Step {
    Update(u8),
    Add,
    Delete(u8),
    Bookmark,
    /// The server expires the watch; the page relists.
    Relist,
    /// The writer writes what is due.
    Flush,
    /// The next batch fails (storage refused it).
    FailNext,
    /// The page reloads: restore, resume, catch up; the watch resumed
    /// ahead of the restore or after it.
    Reload {
        ahead: bool,
    },
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => any::<u8>().prop_map(Step::Update),
        2 => Just(Step::Add),
        2 => any::<u8>().prop_map(Step::Delete),
        1 => Just(Step::Bookmark),
        1 => Just(Step::Relist),
        3 => Just(Step::Flush),
        1 => Just(Step::FailNext),
        1 => any::<bool>().prop_map(|ahead| Step::Reload { ahead }),
    ]
}

/// A session: a server's objects, the page's informer and writer, the database.
struct Session {
    objects: BTreeMap<String, u64>,
    rv: u64,
    next_name: u32,
    now: Millis,
    informer: Informer,
    watch: RequestId,
    writer: StoreWriter,
    db: FakeDb,
    config: InformerConfig,
    fail_next: bool,
}

impl Session {
    fn start(max_deltas: usize) -> Session {
        let mut config = cfg();
        config.history.max_deltas = max_deltas;
        let objects: BTreeMap<String, u64> = (0..5).map(|i| (format!("p{i}"), 1)).collect();
        let mut informer = Informer::new(config.clone());
        let items: Vec<Value> = objects
            .iter()
            .map(|(n, rv)| pod(n, &rv.to_string()))
            .collect();
        let (watch, _) = listed(&mut informer, &items, "1");
        open(&mut informer, watch, 200, 0);
        Session {
            objects,
            rv: 1,
            next_name: 100,
            now: 10,
            informer,
            watch,
            writer: StoreWriter::new("core/v1/pods", false).with_limits(small()),
            db: FakeDb::default(),
            config,
            fail_next: false,
        }
    }

    fn event(&mut self, kind: &str, name: &str) {
        self.rv += 1;
        self.now += 1;
        let line = ev(kind, pod(name, &self.rv.to_string()));
        chunk(&mut self.informer, self.watch, &line, self.now);
    }

    fn nth(&self, i: u8) -> Option<String> {
        let n = self.objects.len();
        (n > 0)
            .then(|| self.objects.keys().nth(i as usize % n).cloned())
            .flatten()
    }

    fn run(&mut self, step: &Step) {
        match step {
            Step::Update(i) => {
                if let Some(name) = self.nth(*i) {
                    self.event("MODIFIED", &name);
                    self.objects.insert(name, self.rv);
                }
            }
            Step::Add => {
                let name = format!("n{}", self.next_name);
                self.next_name += 1;
                self.event("ADDED", &name);
                self.objects.insert(name, self.rv);
            }
            Step::Delete(i) => {
                if let Some(name) = self.nth(*i) {
                    self.event("DELETED", &name);
                    self.objects.remove(&name);
                }
            }
            Step::Bookmark => {
                self.now += 1;
                let line = bookmark(&self.rv.to_string(), false);
                chunk(&mut self.informer, self.watch, &line, self.now);
            }
            Step::Relist => self.relist(),
            Step::Flush => {
                // a second or more: some flushes find deltas not yet due
                self.now += 3_000;
                let mut batches = 0;
                loop {
                    let Some(batch) = self.writer.poll(&self.informer, self.now, 7) else {
                        if self.writer.encoding() {
                            continue;
                        }
                        break;
                    };
                    batches += 1;
                    assert!(batches < 10_000, "the writer never finished");
                    if std::mem::take(&mut self.fail_next) {
                        self.writer.done(Err(WriteFailure::Other("refused".into())));
                    } else {
                        self.db.apply(batch);
                        self.writer.done(Ok(()));
                    }
                }
            }
            Step::FailNext => self.fail_next = true,
            Step::Reload { ahead } => self.reload(*ahead),
        }
    }

    fn items(&self) -> Vec<Value> {
        self.objects
            .iter()
            .map(|(n, rv)| pod(n, &rv.to_string()))
            .collect()
    }

    /// The watch ends with 410; the relist answers the server's objects.
    fn relist(&mut self) {
        self.now += 1;
        let error = ev(
            "ERROR",
            json!({"kind":"Status","code":410,"reason":"Expired"}),
        );
        chunk(&mut self.informer, self.watch, &error, self.now);
        self.answer_relist();
    }

    fn answer_relist(&mut self) {
        let wake = drain(&mut self.informer)
            .wake
            .expect("a relist is scheduled");
        self.now = self.now.max(wake);
        self.informer.handle(Input::Tick, self.now);
        let (id, kind, _) = one_send(&drain(&mut self.informer));
        assert_eq!(kind, RequestKind::List);
        let body = list_body(&self.items(), &self.rv.to_string(), None);
        respond(&mut self.informer, id, 200, &body, self.now);
        let (watch, _, _) = one_send(&drain(&mut self.informer));
        self.watch = watch;
        open(&mut self.informer, watch, 200, self.now);
    }

    /// Everything due is written, the page reloads and catches up with a
    /// bookmark (the server kept every change since) — with the watch
    /// resumed `ahead` of reading the chunks, or after.
    fn reload(&mut self, ahead: bool) {
        self.fail_next = false;
        flush(&mut self.writer, &self.informer, &mut self.db, self.now);
        if self.db.meta.is_none() {
            return;
        }
        let stored_digest = self.informer.store().digest();
        let stored_history = history_of(&self.informer);
        self.now += 1_000;
        let (now, caught_up) = (self.now, bookmark(&self.rv.to_string(), false));
        let mut watched_ahead = None;
        let (mut back, meta) =
            restore_with(&self.db, self.config.clone(), now, |informer, meta| {
                if !ahead {
                    return;
                }
                informer.watch_ahead(&meta.resource_version, meta.columns.clone(), now);
                let (watch, kind, path) = one_send(&drain(informer));
                assert_eq!(kind, RequestKind::Watch);
                assert_eq!(query(&path)["resourceVersion"], meta.resource_version);
                open(informer, watch, 200, now);
                chunk(informer, watch, &caught_up, now);
                assert!(!informer.has_synced() && !informer.has_queued_deltas());
                watched_ahead = Some(watch);
            })
            .expect("restores");
        assert_eq!(back.store().digest(), stored_digest, "the stored store");
        assert_eq!(history_of(&back), stored_history, "the stored history");
        let watch = match watched_ahead {
            Some(watch) => {
                assert!(drain(&mut back).sends.is_empty(), "no second watch");
                watch
            }
            None => {
                assert!(back.is_warm());
                let (watch, kind, path) = one_send(&drain(&mut back));
                assert_eq!(kind, RequestKind::Watch);
                assert_eq!(query(&path)["resourceVersion"], meta.resource_version);
                open(&mut back, watch, 200, now);
                chunk(&mut back, watch, &caught_up, now);
                watch
            }
        };
        assert!(back.has_synced() && !back.is_warm());
        self.writer = StoreWriter::restored(meta).with_limits(small());
        self.informer = back;
        self.watch = watch;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Whatever happens — changes, relists, failed writes, reloads — what a
    /// reload restores is exactly what the informer held at the last write,
    /// and the server's objects after catching up.
    #[test]
    fn a_reload_restores_what_was_held(
        steps in prop::collection::vec(step(), 1..60),
        max_deltas in prop_oneof![Just(3usize), Just(12), Just(1_000)],
        ahead_at_the_end in any::<bool>(),
    ) {
        let mut session = Session::start(max_deltas);
        for step in &steps {
            session.run(step);
        }
        session.reload(ahead_at_the_end);
        let server: BTreeMap<String, String> = session
            .objects
            .iter()
            .map(|(n, rv)| (format!("default/{n}"), rv.to_string()))
            .collect();
        let held: BTreeMap<String, String> = session
            .informer
            .store()
            .list()
            .map(|o| (o.key.clone(), o.resource_version.clone()))
            .collect();
        prop_assert_eq!(held, server);
        prop_assert!(session.db.bytes() > 0);
    }
}
