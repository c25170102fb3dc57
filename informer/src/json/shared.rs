//! Subtrees held once however many documents hold them: the `fieldsV1` set
//! of each `metadata.managedFields` entry, the labels, annotations and owner
//! references, each object- or array-valued member of `spec` (a Pod's
//! containers, volumes, tolerations; a Deployment's template), and the image
//! digest in each of a Pod's container statuses.
//!
//! Why: 100,000 Pods held 585 MB in the page, 0.66× their JSON, and three
//! fifths of each Pod's compact form was its `managedFields`. Their
//! `fieldsV1` sets repeat across objects (one per ReplicaSet for the
//! controller's, one per image for the scheduler's) and across versions of
//! one object (a status update changes values, not which fields a manager
//! owns); so do the container specs of a ReplicaSet's Pods. Held once, a
//! Pod takes about half the bytes, and who-changed, the digest and every
//! reader see the same document as before.
//!
//! How: [`JsonValue::with_shared_subtrees`] copies a document with each such
//! subtree replaced by a `SHARED` value — the tag, then the address and the
//! length of an interned buffer (8 bytes each, little-endian) — and keeps an
//! `Arc` of every buffer it names in the document's `shared` list. A reader
//! meets a `SHARED` value only where `read` splits a container's elements,
//! and follows it there (`reference`), so every `JsonRef` it hands out is
//! the subtree's own encoding; the buffers never hold a `SHARED` value
//! themselves.
//!
//! The one rule that keeps this sound: **a tape holds a `SHARED` value only
//! while its `JsonValue` holds an `Arc` of the buffer it names.** Tapes
//! read from storage never hold one (`check` refuses the tag); every
//! operation that copies part of a document into another either carries the
//! source's `shared` list along ([`JsonValue::apply_patch`]) or writes the
//! subtrees out in full ([`JsonRef::to_owned_value`],
//! [`JsonValue::object_of`], [`JsonValue::compact_bytes`]).
//!
//! The intern table is one per process (a `Mutex`; the page has one
//! thread, the recorder's informers several), so equal subtrees are the very
//! same buffer and two versions that share one compare equal byte for
//! byte. Buffers nobody holds any more are swept out when the table has
//! grown by half since the last sweep.

use std::borrow::Cow;
use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock, Mutex, PoisonError};

use super::read::Members;
use super::reference::write_reference;
use super::tape::{tag, JsonArray, JsonKind, JsonRef, JsonValue};
use super::write::{close_container, open_container, write_str};

/// A subtree is shared only from this many bytes on: smaller ones cost
/// more as a reference (17 bytes, a slot in `shared`, a table entry) than
/// they save.
const MIN_SHARED: usize = 48;

/// One interned buffer and its hash, kept so that growing the table moves
/// entries without hashing their bytes again: at 100,000 Pods the table
/// holds a few hundred thousand buffers, and one growth of a table that
/// hashed them all again held the page's thread for 100–200 ms.
struct Held {
    hash: u64,
    buffer: Arc<[u8]>,
}

/// The buffers by their hash (hashbrown's `HashTable`, already in the page's
/// build through indexmap: a table that keeps what the entry holds).
/// foldhash, a fast non-cryptographic hash, seeded per process: a few
/// subtrees of a few hundred bytes are hashed for every object parsed.
struct Interner {
    table: hashbrown::HashTable<Held>,
    hasher: foldhash::fast::RandomState,
    /// Sweep again when the table is this large.
    sweep_at: usize,
}

static INTERNER: LazyLock<Mutex<Interner>> = LazyLock::new(|| {
    Mutex::new(Interner {
        table: hashbrown::HashTable::new(),
        hasher: foldhash::fast::RandomState::default(),
        sweep_at: 1024,
    })
});

/// The one buffer holding `bytes`.
fn intern(bytes: &[u8]) -> Arc<[u8]> {
    let mut guard = INTERNER.lock().unwrap_or_else(PoisonError::into_inner);
    let interner = &mut *guard;
    let hash = interner.hasher.hash_one(bytes);
    if let Some(held) = interner
        .table
        .find(hash, |held| held.hash == hash && *held.buffer == *bytes)
    {
        return Arc::clone(&held.buffer);
    }
    let buffer: Arc<[u8]> = Arc::from(bytes);
    interner.table.insert_unique(
        hash,
        Held {
            hash,
            buffer: Arc::clone(&buffer),
        },
        |held| held.hash,
    );
    if interner.table.len() >= interner.sweep_at {
        // only the table holds a buffer whose count is 1: no document can
        // take another `Arc` of it but through the table, under this lock
        interner
            .table
            .retain(|held| Arc::strong_count(&held.buffer) > 1);
        interner.sweep_at = (interner.table.len() + interner.table.len() / 2).max(1024);
    }
    buffer
}

/// Shared buffers held in the process, and their bytes (for measurements).
pub fn shared_buffers() -> (usize, usize) {
    let interner = INTERNER.lock().unwrap_or_else(PoisonError::into_inner);
    let live = interner
        .table
        .iter()
        .filter(|held| Arc::strong_count(&held.buffer) > 1);
    live.fold((0, 0), |(n, bytes), held| {
        (n + 1, bytes + held.buffer.len())
    })
}

/// Writes a document's copy with the subtrees this module shares either
/// shared (`share`) or written out in full (a shared document made
/// self-contained again).
struct Rewriter<'o> {
    out: &'o mut Vec<u8>,
    /// The buffers the written tape names.
    shared: Vec<Arc<[u8]>>,
    share: bool,
}

impl Rewriter<'_> {
    /// Writes one subtree of those this module shares: interned when
    /// sharing and it is large enough to be worth it, else its own bytes
    /// (a `JsonRef` read from its container is always those, followed).
    fn subtree(&mut self, value: JsonRef<'_>) {
        if !self.share || value.bytes.len() < MIN_SHARED {
            self.out.extend_from_slice(value.bytes);
            return;
        }
        let buffer = intern(value.bytes);
        write_reference(&buffer, self.out);
        self.shared.push(buffer);
    }

    /// Writes the object `value` with each member `rewrite` answers for
    /// rewritten by it, the others copied as they are held.
    fn members(
        &mut self,
        value: JsonRef<'_>,
        mut rewrite: impl FnMut(&mut Self, &str, JsonRef<'_>) -> bool,
    ) {
        let JsonKind::Object(object) = value.kind() else {
            self.out.extend_from_slice(value.bytes);
            return;
        };
        let len_at = open_container(self.out, tag::OBJECT);
        for (key, member) in (Members { rest: object.body }) {
            self.out.extend_from_slice(key.bytes);
            let name = key.as_str().unwrap_or_default();
            if !rewrite(self, name, member) {
                self.out.extend_from_slice(member.bytes);
            }
        }
        close_container(self.out, len_at);
    }

    /// Writes the array `list` with each element, an object, written as
    /// [`Rewriter::members`] does with `rewrite`.
    fn elements(
        &mut self,
        list: JsonArray<'_>,
        mut rewrite: impl FnMut(&mut Self, &str, JsonRef<'_>) -> bool,
    ) {
        let len_at = open_container(self.out, tag::ARRAY);
        for element in list.iter() {
            self.members(element, &mut rewrite);
        }
        close_container(self.out, len_at);
    }

    /// A Kubernetes object: its `metadata`, `spec` and `status` rewritten.
    fn object(&mut self, object: JsonRef<'_>) {
        self.members(object, |this, name, value| {
            match name {
                "metadata" => this.metadata(value),
                "spec" => this.spec(value),
                "status" => this.status(value),
                _ => return false,
            }
            true
        });
    }

    /// `status`: the `imageID` of each container's status — an image's
    /// digest (`registry/app:1.2@sha256:` and 64 hex digits), the same for
    /// every Pod that runs the image, where the rest of a container's
    /// status (its container ID, start time) is the Pod's own.
    fn status(&mut self, status: JsonRef<'_>) {
        self.members(status, |this, name, statuses| {
            let kinds = [
                "containerStatuses",
                "initContainerStatuses",
                "ephemeralContainerStatuses",
            ];
            let Some(list) = statuses.as_array().filter(|_| kinds.contains(&name)) else {
                return false;
            };
            this.elements(list, |this, name, image_id| {
                if name != "imageID" {
                    return false;
                }
                this.subtree(image_id);
                true
            });
            true
        });
    }

    /// `metadata`: each `managedFields` entry's `fieldsV1`, the labels,
    /// annotations and owners (the same for a ReplicaSet's Pods, and from
    /// one version of an object to the next).
    fn metadata(&mut self, metadata: JsonRef<'_>) {
        self.members(metadata, |this, name, entries| {
            if matches!(name, "labels" | "annotations" | "ownerReferences") {
                this.subtree(entries);
                return true;
            }
            let Some(list) = entries.as_array().filter(|_| name == "managedFields") else {
                return false;
            };
            this.elements(list, |this, name, fields| {
                if name != "fieldsV1" || !fields.is_object() {
                    return false;
                }
                this.field_set(fields);
                true
            });
            true
        });
    }

    /// A `fieldsV1` set: held whole, as a controller's set repeats for every
    /// object of one template; but a set that owns status fields names the
    /// object's own keys there (`k:{"ip":"10.64.15.65"}`), so its
    /// `f:status` parts are held one by one — the conditions' part is the
    /// same for every Pod — and what is the Pod's own stays with it.
    fn field_set(&mut self, fields: JsonRef<'_>) {
        if fields.get("f:status").is_none() {
            self.subtree(fields);
            return;
        }
        self.members(fields, |this, name, part| {
            if name == "f:status" && part.is_object() {
                this.members(part, |this, _, status_part| {
                    this.subtree(status_part);
                    true
                });
            } else {
                this.subtree(part);
            }
            true
        });
    }

    /// `spec`: each member that is an object or an array, held whole. A
    /// Pod's are its template's (containers, volumes, tolerations, security
    /// context) but for `nodeName`, a string; any object's spec mostly
    /// stays as it was while its status changes, so its versions in the
    /// history share them too. A member that is the object's own (a real
    /// cluster names each Pod's token volume apart) costs a reference more
    /// than it saves.
    fn spec(&mut self, spec: JsonRef<'_>) {
        self.members(spec, |this, _, member| {
            if !(member.is_array() || member.is_object()) {
                return false;
            }
            this.subtree(member);
            true
        });
    }
}

/// A copy of `plain` with its repeating subtrees shared, or `None` when it
/// has none. `plain` must name no shared subtree itself: the parts it does
/// not share are copied as they are.
pub(super) fn shared_copy(plain: JsonRef<'_>) -> Option<JsonValue> {
    let worth_it = plain.is_object()
        && ["metadata", "spec", "status"]
            .iter()
            .any(|part| plain.get(part).is_some());
    if !worth_it {
        return None;
    }
    let mut shared = Vec::new();
    let value = JsonValue::build_with(|out| {
        let mut rewriter = Rewriter {
            out,
            shared: Vec::new(),
            share: true,
        };
        rewriter.object(plain);
        shared = rewriter.shared;
    });
    // none was large enough: the plain document is the smaller
    (!shared.is_empty()).then(|| value.holding(shared))
}

impl JsonValue {
    /// This document with its repeating subtrees held once (see the module
    /// doc); itself when it has none, or already holds them so.
    pub fn with_shared_subtrees(self) -> JsonValue {
        if self.holds_shared() {
            return self;
        }
        // a document that names no shared subtree: copying parts of it
        // as they are keeps the module's rule
        shared_copy(self.root()).unwrap_or(self)
    }

    /// Does this document name shared subtrees?
    pub fn holds_shared(&self) -> bool {
        !self.shared.is_empty()
    }

    /// This document, keeping `shared` (the buffers its tape names).
    pub(super) fn holding(mut self, shared: Vec<Arc<[u8]>>) -> JsonValue {
        self.shared = shared.into_boxed_slice();
        self
    }

    /// The compact form with every shared subtree written out in full:
    /// what storage and other processes take.
    pub(super) fn self_contained(&self) -> Cow<'_, [u8]> {
        if self.shared.is_empty() {
            return Cow::Borrowed(&self.tape);
        }
        // the shared subtrees sit only where `Rewriter` puts them: every
        // copy of part of a document keeps each part in its place, and
        // `to_owned_value` writes them out
        let mut out = Vec::with_capacity(self.tape.len() * 2);
        Rewriter {
            out: &mut out,
            shared: Vec::new(),
            share: false,
        }
        .object(self.root());
        debug_assert!(!names_shared(&out), "a shared subtree out of its place");
        Cow::Owned(out)
    }
}

impl JsonRef<'_> {
    /// A document of its own holding a copy of this value (any shared
    /// subtree in it written out in full).
    pub fn to_owned_value(self) -> JsonValue {
        JsonValue::build_with(|out| expanded_into(self, out))
    }
}

impl JsonValue {
    /// An object of `members`, in order, each value copied as it is held
    /// (a shared subtree written out in full): a part of a document kept on
    /// its own. The keys must differ, as they do when taken from one
    /// object.
    pub fn object_of<'v>(members: impl IntoIterator<Item = (&'v str, JsonRef<'v>)>) -> JsonValue {
        JsonValue::build_with(|out| {
            let len_at = open_container(out, tag::OBJECT);
            for (key, value) in members {
                write_str(out, key);
                expanded_into(value, out);
            }
            close_container(out, len_at);
        })
    }
}

/// Writes `value` with every shared subtree in it written out in full:
/// any value, wherever in a document it is (one walk to find whether it
/// names one, and only then a copy that re-encodes its containers).
fn expanded_into(value: JsonRef<'_>, out: &mut Vec<u8>) {
    if names_shared(value.bytes) {
        write_resolving(value, out);
    } else {
        out.extend_from_slice(value.bytes);
    }
}

/// Writes `value`, its containers re-encoded, each shared subtree followed.
fn write_resolving(value: JsonRef<'_>, out: &mut Vec<u8>) {
    match value.kind() {
        JsonKind::Object(object) => {
            let len_at = open_container(out, tag::OBJECT);
            for (key, member) in (Members { rest: object.body }) {
                out.extend_from_slice(key.bytes);
                write_resolving(member, out);
            }
            close_container(out, len_at);
        }
        JsonKind::Array(array) => {
            let len_at = open_container(out, tag::ARRAY);
            for element in array.iter() {
                write_resolving(element, out);
            }
            close_container(out, len_at);
        }
        _ => out.extend_from_slice(value.bytes),
    }
}

/// Does the value encoded at the start of `bytes` hold a `SHARED` value
/// anywhere inside (a walk of its containers, without following any)?
fn names_shared(bytes: &[u8]) -> bool {
    let Some(&first) = bytes.first() else {
        return false;
    };
    if first != tag::ARRAY && first != tag::OBJECT {
        return false;
    }
    let body = JsonRef { bytes }.raw_body();
    super::read::raw_values(body).any(|raw| match raw.first() {
        Some(&tag::SHARED) => true,
        Some(&tag::ARRAY) | Some(&tag::OBJECT) => names_shared(raw),
        _ => false,
    })
}

#[cfg(test)]
mod tests;
