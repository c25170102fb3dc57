//! The writer of `GET /_deltascope/history`'s lines: it takes the rows the
//! reader hands it (`super::Work`), on a blocking thread of its own,
//! rebuilds each object from its chain as the rows pass — the chains'
//! lead-in first, then the window's rows, with at most [`HELD_OBJECTS`]
//! last versions held — and writes each delta's line and the gap lines
//! among them in time order.

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
        let mut lines = Vec::new();
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
                Work::Rows(rows) => rows
                    .into_iter()
                    .try_for_each(|row| self.row(row, &handle, &mut lines)),
                Work::Failed(error) => Err(error),
            };
            for line in lines.drain(..) {
                if send.blocking_send(Ok(line)).is_err() {
                    return;
                }
            }
            if let Err(error) = done {
                let _ = send.blocking_send(Err(error));
                return;
            }
        }
        while let Some(gap) = self.gaps.pop() {
            if send.blocking_send(Ok(gap_line(&gap))).is_err() {
                return;
            }
        }
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

    /// A row of the window: the gaps before it, then its line.
    fn row(
        &mut self,
        row: Row,
        handle: &tokio::runtime::Handle,
        lines: &mut Vec<String>,
    ) -> Result<(), HistoryError> {
        let (id, object_id, at_ms, kind, tombstone, rv, managers, body_kind, base_id, body) = row;
        while self.gaps.last().is_some_and(|gap| gap.0 <= at_ms) {
            if let Some(gap) = self.gaps.pop() {
                lines.push(gap_line(&gap));
            }
        }
        let mut object = self.held.remove(&object_id).unwrap_or_default();
        let patch = [BodyKind::Patch as i64, BodyKind::BasePatch as i64].contains(&body_kind);
        if patch && object.is_empty() {
            object = handle.block_on(self.store.rebuild_before(
                object_id,
                (base_id, body_kind),
                id,
            ))?;
        }
        object
            .apply(body_kind, &body)
            .map_err(self.corrupt(object_id))?;
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
        if self.held.len() >= HELD_OBJECTS {
            self.held.clear();
        }
        self.held.insert(object_id, object);
        lines.push(line);
        Ok(())
    }
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
    let mut out = Vec::with_capacity(4_096);
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
