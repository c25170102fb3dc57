//! What the kept resources list and the settings show about each kept
//! informer (plain data the informers service fills in from each one's
//! status and history).

use crate::informer::{History, Phase};

/// One kept resource's chip.
#[derive(Clone, Debug, PartialEq)]
pub struct KeptItem {
    pub id: u64,
    pub label: String,
    /// The view's address (`#/…`).
    pub href: String,
    /// listing / watching / backoff / error, or paused (waiting for a
    /// connection: no channel, and the browser's limit reached).
    pub state: String,
    /// Deltas its history holds.
    pub held: usize,
    /// The table shows it.
    pub shown: bool,
}

/// A kept resource's state in one word: its informer's phase, or
/// `paused` while it waits for a connection.
pub fn kept_state(paused: bool, phase: &Phase) -> String {
    if paused {
        "paused".to_string()
    } else {
        phase.as_str().to_string()
    }
}

/// What one kept resource's history holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Usage {
    pub label: String,
    pub held: usize,
    pub bytes: usize,
    pub recorded: u64,
    pub dropped: u64,
}

impl Usage {
    /// What `history`, the kept resource `label`'s, holds.
    pub fn of(label: &str, history: &History) -> Usage {
        Usage {
            label: label.to_string(),
            held: history.len(),
            bytes: history.bytes(),
            recorded: history.recorded(),
            dropped: history.dropped(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{DeltaType, HistoryConfig, KubeObject};
    use std::sync::Arc;

    #[test]
    fn a_kept_resource_says_its_phase_or_that_it_waits() {
        assert_eq!(kept_state(false, &Phase::Watching), "watching");
        assert_eq!(kept_state(true, &Phase::Watching), "paused");
    }

    #[test]
    fn usage_is_what_the_history_holds_and_dropped() {
        let mut history = History::new(HistoryConfig {
            max_deltas: 2,
            ..HistoryConfig::default()
        });
        for rv in 1..=3u64 {
            let object = KubeObject::from_value(serde_json::json!({
                "metadata": {"name": "a", "namespace": "ns", "resourceVersion": rv.to_string()}
            }))
            .expect("object");
            history.record(rv, DeltaType::Updated, Arc::new(object), false, "ns/a");
        }
        let usage = Usage::of("pods", &history);
        assert_eq!(
            (
                usage.label.as_str(),
                usage.held,
                usage.recorded,
                usage.dropped
            ),
            ("pods", 2, 3, 1)
        );
        assert!(usage.bytes > 0);
    }
}
