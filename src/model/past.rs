//! Time travel: the store as it was at a moment, rebuilt from the history
//! (for each key, its last delta at or before the moment; a Deleted delta
//! means absent). Tested with the recordings in `crate::api::recording`.

use std::collections::BTreeMap;

use crate::informer::{DeltaType, History, HistoryEntry, Millis};

/// The objects present at `at`, by key (sorted). Complete only when the
/// history has evicted nothing (`history.dropped() == 0`).
pub fn store_at(history: &History, at: Millis) -> BTreeMap<&str, &HistoryEntry> {
    let mut state: BTreeMap<&str, &HistoryEntry> = BTreeMap::new();
    for entry in history.iter().take_while(|e| e.at <= at) {
        match entry.kind {
            DeltaType::Deleted => {
                state.remove(entry.key());
            }
            _ => {
                state.insert(entry.key(), entry);
            }
        }
    }
    state
}
