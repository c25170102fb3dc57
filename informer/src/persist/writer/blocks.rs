//! The history's deltas encoded as log blocks ([`encode_blocks`]), and which
//! deltas refer to a base's own objects ([`BaseObjects`]) so they are
//! written as references to it rather than whole.

use std::sync::Arc;

use super::super::codec::BlockWriter;
use super::super::meta::BlockInfo;
use crate::informer::Informer;
use crate::object::ObjectRef;

fn addr(object: &ObjectRef) -> usize {
    Arc::as_ptr(object) as *const u8 as usize
}

/// The addresses of a base's objects, sorted: which deltas refer to the
/// base's own version of an object.
pub(super) struct BaseObjects(Vec<usize>);

impl BaseObjects {
    /// The objects of `snapshot`, to tell its own versions from others.
    pub(super) fn of(snapshot: &[ObjectRef]) -> BaseObjects {
        let mut addresses: Vec<usize> = snapshot.iter().map(addr).collect();
        addresses.sort_unstable();
        BaseObjects(addresses)
    }

    fn holds(&self, object: &ObjectRef) -> bool {
        self.0.binary_search(&addr(object)).is_ok()
    }
}

/// The held deltas from `from` on, in blocks of about `block_bytes`, up to
/// about `budget` bytes; `in_base` turns deltas of the base's objects into
/// references.
pub(super) fn encode_blocks(
    informer: &Informer,
    from: u64,
    (block_bytes, budget): (usize, usize),
    in_base: Option<&BaseObjects>,
) -> Vec<(BlockInfo, Vec<u8>)> {
    let history = informer.history();
    let mut blocks = Vec::new();
    let mut block = BlockWriter::entries();
    let mut first = from;
    let mut total = 0;
    let mut seq = from;
    while seq < history.next_seq() && total < budget {
        let Some(entry) = history.get(seq) else {
            break;
        };
        let before = block.len();
        block.push_entry(entry, in_base.is_some_and(|base| base.holds(&entry.object)));
        total += block.len() - before;
        seq += 1;
        if block.len() >= block_bytes {
            let done = std::mem::replace(&mut block, BlockWriter::entries());
            blocks.push(seal(done, first, seq));
            first = seq;
        }
    }
    if !block.is_empty() {
        blocks.push(seal(block, first, seq));
    }
    blocks
}

/// A finished log block of deltas `first_seq..end_seq`, with its listing.
fn seal(block: BlockWriter, first_seq: u64, end_seq: u64) -> (BlockInfo, Vec<u8>) {
    let bytes = block.finish();
    let info = BlockInfo {
        first_seq,
        end_seq,
        bytes: bytes.len() as u64,
    };
    (info, bytes)
}
