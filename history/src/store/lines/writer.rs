//! The writer of `GET /_deltascope/history`'s lines: it takes the rows the
//! reader hands it (`super::Work`), on a blocking thread of its own,
//! rebuilds each object — a row written since schema version 4 from itself
//! and the chain's full that comes with it; in a database written before,
//! from the chains' lead-in and the last versions held (at most
//! [`HELD_OBJECTS`]) — and writes each delta's line and the gap lines
//! among them in time order, about 64 KB of lines to a message.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deltascope_facts::time::format_rfc3339_millis;
use deltascope_informer::DeltaType;
use serde_json::json;
use tokio::sync::mpsc;

use super::{Row, Work};
use crate::codec::{BodyKind, CodecError};
use crate::error::HistoryError;
use crate::rebuild::Rebuild;
use crate::store::rows::kind_of;
use crate::store::HistoryStore;

/// Last versions held to rebuild the next patch without reading back.
const HELD_OBJECTS: usize = 20_000;

/// One query's rebuilding state.
pub(super) struct LineWriter {
    resource: String,
    /// To read a chain back when its last version was not held.
    store: Arc<HistoryStore>,
    held: HashMap<i64, Rebuild>,
    /// Objects alive at their last line (a next line is a MODIFIED).
    seen: HashSet<i64>,
    /// The first line's time (`at` counts from it).
    start: Option<i64>,
    /// Gaps not written yet, latest first.
    gaps: Vec<(i64, i64, String)>,
}

impl LineWriter {
    pub(super) fn new(resource: String, store: Arc<HistoryStore>) -> LineWriter {
        LineWriter {
            resource,
            store,
            held: HashMap::new(),
            seen: HashSet::new(),
            start: None,
            gaps: Vec::new(),
        }
    }

    /// Writes the lines of what `work` brings until it ends, the reader
    /// fails (its error is the last thing sent) or the receiver of `send`
    /// is gone. Runs on a blocking thread.
    pub(super) fn run(
        mut self,
        mut work: mpsc::Receiver<Work>,
        send: mpsc::Sender<Result<String, HistoryError>>,
    ) {
        let handle = tokio::runtime::Handle::current();
        let mut chunk = Chunk::new(send);
        while let Some(item) = work.blocking_recv() {
            let done = match item {
                Work::Gaps(gaps) => {
                    self.gaps = gaps;
                    Ok(())
                }
                Work::LeadIns(rows) => {
                    rows.into_iter()
                        .try_for_each(|(object_id, body_kind, body, _)| {
                            self.lead_in(object_id, body_kind, &body)
                        })
                }
                Work::Rows(rows) => {
                    let mut done = Ok(());
                    for row in rows {
                        done = self.row(row, &handle, &mut chunk.text);
                        if done.is_err() || !chunk.send_when_full() {
                            break;
                        }
                    }
                    done
                }
                Work::Failed(error) => Err(error),
            };
            if let Err(error) = done {
                if chunk.send_rest() {
                    let _ = chunk.send.blocking_send(Err(error));
                }
                return;
            }
            if chunk.gone {
                return;
            }
        }
        while let Some(gap) = self.gaps.pop() {
            push_line(&mut chunk.text, &gap_line(&gap));
        }
        chunk.send_rest();
    }

    fn corrupt(&self, object_id: i64) -> impl Fn(CodecError) -> HistoryError + '_ {
        move |error| HistoryError::Corrupt {
            resource: self.resource.clone(),
            object: object_id.to_string(),
            detail: error.to_string(),
        }
    }

    /// A row of a chain before the window, read onto its object.
    fn lead_in(&mut self, object_id: i64, body_kind: i64, body: &[u8]) -> Result<(), HistoryError> {
        let mut object = self.held.remove(&object_id).unwrap_or_default();
        let applied = object.apply(body_kind, body);
        self.held.insert(object_id, object);
        applied.map_err(self.corrupt(object_id))
    }

    /// The version a window's row stands for. A row written since schema
    /// version 4 brings what it needs (its own full, or its chain's); a
    /// patch between versions (written before) goes onto the version held,
    /// or the one read back from the store.
    fn version_of(
        &mut self,
        row: &Row,
        handle: &tokio::runtime::Handle,
    ) -> Result<Rebuild, HistoryError> {
        let (id, object_id, body_kind, base_id, body) = (row.0, row.1, row.7, row.8, &row.9);
        let held = if self.store.between_version_patches {
            self.held.remove(&object_id)
        } else {
            None
        };
        let mut object = match held {
            Some(object) => object,
            None => match from_row(row) {
                Some(rebuilt) => return rebuilt.map_err(self.corrupt(object_id)),
                None => handle.block_on(self.store.rebuild_before(
                    object_id,
                    (base_id, body_kind),
                    id,
                ))?,
            },
        };
        object
            .apply(body_kind, body)
            .map_err(self.corrupt(object_id))?;
        Ok(object)
    }

    /// A row of the window: the gaps before it, then its line.
    fn row(
        &mut self,
        row: Row,
        handle: &tokio::runtime::Handle,
        lines: &mut String,
    ) -> Result<(), HistoryError> {
        let mut object = self.version_of(&row, handle)?;
        let (object_id, at_ms, kind, tombstone, rv, managers) =
            (row.1, row.2, row.3, row.4, row.5, row.6);
        while self.gaps.last().is_some_and(|gap| gap.0 <= at_ms) {
            if let Some(gap) = self.gaps.pop() {
                push_line(lines, &gap_line(&gap));
            }
        }
        let kind = kind_of(kind).unwrap_or(DeltaType::Updated);
        let event_type = match kind {
            DeltaType::Deleted => "DELETED",
            _ if self.seen.contains(&object_id) => "MODIFIED",
            _ => "ADDED",
        };
        if kind == DeltaType::Deleted {
            self.seen.remove(&object_id);
        } else {
            self.seen.insert(object_id);
        }
        let start = *self.start.get_or_insert(at_ms);
        let line = delta_line(DeltaLine {
            at: at_ms - start,
            time: format_rfc3339_millis(at_ms),
            event_type,
            delta_type: kind.as_str(),
            resource: &self.resource,
            resource_version: &rv,
            managers: &managers,
            tombstone: tombstone != 0,
            object: &mut object,
        })
        .map_err(self.corrupt(object_id))?;
        if self.store.between_version_patches {
            if self.held.len() >= HELD_OBJECTS {
                self.held.clear();
            }
            self.held.insert(object_id, object);
        }
        push_line(lines, &line);
        Ok(())
    }
}

/// Text sent in one piece once it holds this much: one line per message
/// cost a wake-up of the reader and of the writer each (3,000 lines of 4 KB
/// in a namespace's 10-minute window).
const CHUNK_BYTES: usize = 64 * 1024;

/// The lines written and not sent yet, and where they go.
struct Chunk {
    text: String,
    send: mpsc::Sender<Result<String, HistoryError>>,
    /// The receiver is gone: nothing more to write.
    gone: bool,
}

impl Chunk {
    fn new(send: mpsc::Sender<Result<String, HistoryError>>) -> Chunk {
        Chunk {
            text: String::with_capacity(CHUNK_BYTES + 8 * 1024),
            send,
            gone: false,
        }
    }

    /// Sends the text once it is [`CHUNK_BYTES`] long; `false` when the
    /// receiver is gone.
    fn send_when_full(&mut self) -> bool {
        self.text.len() < CHUNK_BYTES || self.send_rest()
    }

    /// Sends what is written, if anything; `false` when the receiver is
    /// gone.
    fn send_rest(&mut self) -> bool {
        if !self.text.is_empty() {
            let full = std::mem::replace(
                &mut self.text,
                String::with_capacity(CHUNK_BYTES + 8 * 1024),
            );
            self.gone = self.send.blocking_send(Ok(full)).is_err();
        }
        !self.gone
    }
}

fn push_line(text: &mut String, line: &str) {
    text.push_str(line);
    text.push('\n');
}

/// A row's object when the row brings all it needs: a full, or a patch
/// against its chain's full with that full; `None` otherwise.
fn from_row(row: &Row) -> Option<Result<Rebuild, CodecError>> {
    let (body_kind, body, base_kind, base_body) = (row.7, &row.9, row.10, &row.11);
    let mut object = Rebuild::default();
    if body_kind == BodyKind::BasePatch as i64 {
        let (Some(base_kind), Some(base_body)) = (base_kind, base_body) else {
            return None;
        };
        if let Err(error) = object.apply(base_kind, base_body) {
            return Some(Err(error));
        }
    } else if body_kind != BodyKind::Full as i64 {
        return None;
    }
    Some(object.apply(body_kind, body).map(|()| object))
}

/// One delta's line (fields as the module doc names them).
struct DeltaLine<'a> {
    at: i64,
    time: Option<String>,
    event_type: &'a str,
    delta_type: &'a str,
    resource: &'a str,
    resource_version: &'a str,
    /// As stored: a JSON array of names.
    managers: &'a str,
    tombstone: bool,
    object: &'a mut Rebuild,
}

/// The line's text, the object written from the version held (its stored
/// text, or its tape) and never copied into the line first.
fn delta_line(line: DeltaLine<'_>) -> Result<String, CodecError> {
    // Room for the fields and the object, so the line is not moved while
    // it is written (an object's text is most of it).
    let mut out = Vec::with_capacity(line.object.text_len().unwrap_or(4_096) + 1_024);
    field(&mut out, "at", &line.at);
    field(&mut out, "time", &line.time);
    field(&mut out, "type", &line.event_type);
    field(&mut out, "deltaType", &line.delta_type);
    field(&mut out, "resource", &line.resource);
    field(&mut out, "resourceVersion", &line.resource_version);
    let managers: Vec<&str> = serde_json::from_str(line.managers).unwrap_or_default();
    field(&mut out, "managers", &managers);
    if line.tombstone {
        field(&mut out, "tombstone", &true);
    }
    out.extend_from_slice(b",\"object\":");
    line.object.write_json(&mut out)?;
    out.push(b'}');
    // serde_json and the stored bodies (checked as JSON) are UTF-8.
    Ok(String::from_utf8(out).unwrap_or_default())
}

/// Appends `"name":value` to a line's object, opening it at the first.
fn field(out: &mut Vec<u8>, name: &str, value: &impl serde::Serialize) {
    out.push(if out.is_empty() { b'{' } else { b',' });
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    // Writing strings and numbers into a Vec cannot fail.
    let _ = serde_json::to_writer(out, value);
}

fn gap_line((from_ms, to_ms, reason): &(i64, i64, String)) -> String {
    json!({"gap": {
        "from": format_rfc3339_millis(*from_ms),
        "to": format_rfc3339_millis(*to_ms),
        "reason": reason,
    }})
    .to_string()
}
