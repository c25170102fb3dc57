//! The informer's change log: every change to the store in order
//! ([`StoreChange`]), bounded ([`DEFAULT_CHANGE_LOG_CAPACITY`]) and read
//! through cursors ([`ChangeCursor`]), any number of them, each at its own
//! pace; a reader that fell behind the bound is told so
//! ([`ChangeRead::Lagged`]) rather than handed a shortened list.

use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    Added,
    Updated,
    Deleted,
}

/// One change to the store, for incremental re-rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreChange {
    pub key: String,
    pub kind: ChangeKind,
}

/// Changes the log holds at most by default: a 30,000-object list and the
/// churn of several seconds fit, at roughly 60 bytes a change.
pub const DEFAULT_CHANGE_LOG_CAPACITY: usize = 65_536;

/// Where one reader of the change log is: the sequence number of the next
/// change it will read. Cheap to copy; the informer keeps no list of them.
/// The default cursor reads from the informer's first change on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChangeCursor {
    next: u64,
}

/// What [`Informer::read_changes`](super::Informer::read_changes) found.
#[derive(Debug)]
pub enum ChangeRead<'a> {
    /// Every change since the cursor's last read, oldest first (possibly none).
    Changes(std::collections::vec_deque::Iter<'a, StoreChange>),
    /// The changes the cursor had not read were partly dropped (the log is
    /// bounded): rebuild from [`Informer::store`](super::Informer::store). The cursor now points
    /// past the newest change, so the next read continues from the store.
    Lagged,
}

/// The store's changes in order, bounded: the oldest go first. Each change
/// has a sequence number (`first_seq` + its index) that cursors count in.
#[derive(Debug)]
pub(super) struct ChangeLog {
    entries: VecDeque<StoreChange>,
    /// Sequence number of `entries[0]`.
    first_seq: u64,
    capacity: usize,
}

impl ChangeLog {
    pub(super) fn new(capacity: usize) -> ChangeLog {
        ChangeLog {
            entries: VecDeque::new(),
            first_seq: 0,
            capacity,
        }
    }

    /// A cursor that reads the changes pushed from now on.
    pub(super) fn cursor_at_end(&self) -> ChangeCursor {
        ChangeCursor { next: self.end() }
    }

    pub(super) fn end(&self) -> u64 {
        self.first_seq + self.entries.len() as u64
    }

    pub(super) fn push(&mut self, change: StoreChange) {
        self.entries.push_back(change);
        self.trim();
    }

    fn trim(&mut self) {
        while self.entries.len() > self.capacity {
            self.entries.pop_front();
            self.first_seq += 1;
        }
    }

    pub(super) fn set_capacity(&mut self, capacity: usize) {
        self.capacity = capacity;
        self.trim();
        self.entries.shrink_to(capacity.min(1024));
    }

    pub(super) fn read(&self, cursor: &mut ChangeCursor) -> ChangeRead<'_> {
        let end = self.end();
        // A cursor past the end came from another informer: it cannot know
        // what it missed here either.
        if cursor.next < self.first_seq || cursor.next > end {
            cursor.next = end;
            return ChangeRead::Lagged;
        }
        let start = (cursor.next - self.first_seq) as usize;
        cursor.next = end;
        ChangeRead::Changes(self.entries.range(start..))
    }
}

#[cfg(test)]
mod tests;
