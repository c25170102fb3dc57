//! How an object's known history begins, in words: a creation only when
//! it was observed — a watch's Added, or a first version whose
//! `creationTimestamp` falls inside a span someone was watching (the page
//! since its first list, serve's recorder since its first record, each
//! without its gaps) — else "first seen 14:02 (created 20d ago)": the
//! first list of an object that already existed is no creation. The
//! object view's History and its Story say it alike; the clock time is the
//! browser's (its UTC offset handed in), so it is tested natively.

use crate::informer::{DeltaType, History, KubeObject};
use deltascope_facts::time::{format_age, parse_rfc3339};

/// One watcher's span: from `from_ms` on, except its gaps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    pub from_ms: i64,
    /// Spans it did not watch, `(from, to)` in ms.
    pub gaps: Vec<(i64, i64)>,
}

impl Watched {
    /// What the page's informer watched, as its history says: from its
    /// oldest held delta (retention may have evicted older ones: then
    /// less is claimed, never more), except its gaps. `None` for an empty
    /// history.
    pub fn of_history(history: &History) -> Option<Watched> {
        let first = history.iter().next()?;
        Some(Watched {
            from_ms: i64::try_from(first.at).unwrap_or(i64::MAX),
            gaps: history
                .gaps()
                .map(|gap| {
                    (
                        i64::try_from(gap.from).unwrap_or(i64::MAX),
                        i64::try_from(gap.to).unwrap_or(i64::MAX),
                    )
                })
                .collect(),
        })
    }

    fn saw(&self, at_ms: i64) -> bool {
        at_ms >= self.from_ms
            && !self
                .gaps
                .iter()
                .any(|(from, to)| at_ms > *from && at_ms < *to)
    }
}

/// Everyone who watched a resource: a moment is observed if any of them
/// watched it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed(pub Vec<Watched>);

impl Observed {
    /// The page's own history alone.
    pub fn of_history(history: &History) -> Observed {
        Observed(Watched::of_history(history).into_iter().collect())
    }

    /// And another watcher (serve's recorder).
    pub fn and(mut self, watched: Option<Watched>) -> Observed {
        self.0.extend(watched);
        self
    }

    pub fn saw(&self, at_ms: i64) -> bool {
        self.0.iter().any(|w| w.saw(at_ms))
    }
}

/// How an object's first known version came to be known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beginning {
    /// Its creation was observed.
    Created,
    /// It already existed when it was first seen at `at_ms`; created at
    /// `created_ms` (its `creationTimestamp`), if it says.
    FirstSeen { at_ms: i64, created_ms: Option<i64> },
}

/// `metadata.creationTimestamp`, in ms since the Unix epoch.
pub fn creation_ms(object: &KubeObject) -> Option<i64> {
    let text = object
        .value
        .get("metadata")?
        .get("creationTimestamp")?
        .as_str()?;
    parse_rfc3339(text).map(|s| s.saturating_mul(1000))
}

/// How the first version held of an object (delta `kind` at `at_ms`)
/// began, given who watched its resource.
pub fn beginning(
    kind: DeltaType,
    at_ms: i64,
    object: &KubeObject,
    observed: &Observed,
) -> Beginning {
    let created_ms = creation_ms(object);
    let created = kind == DeltaType::Added || created_ms.is_some_and(|c| observed.saw(c));
    if created {
        Beginning::Created
    } else {
        Beginning::FirstSeen { at_ms, created_ms }
    }
}

/// The browser's clock: its offset from UTC (seconds east).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WallClock {
    pub utc_offset_secs: i64,
}

impl WallClock {
    /// `HH:MM` of `unix_ms` on this clock.
    pub fn hh_mm(&self, unix_ms: i64) -> String {
        let (h, m, _) = self.parts(unix_ms);
        format!("{h:02}:{m:02}")
    }

    /// `HH:MM:SS` of `unix_ms` on this clock.
    pub fn hh_mm_ss(&self, unix_ms: i64) -> String {
        let (h, m, s) = self.parts(unix_ms);
        format!("{h:02}:{m:02}:{s:02}")
    }

    fn parts(&self, unix_ms: i64) -> (i64, i64, i64) {
        let local = unix_ms
            .div_euclid(1000)
            .saturating_add(self.utc_offset_secs)
            .rem_euclid(86_400);
        (local / 3600, local % 3600 / 60, local % 60)
    }
}

impl Beginning {
    /// "created", or "first seen 14:02 (created 20d ago)".
    pub fn words(&self, clock: &WallClock, now_unix: i64) -> String {
        match self {
            Beginning::Created => "created".to_string(),
            Beginning::FirstSeen { at_ms, created_ms } => {
                let seen = format!("first seen {}", clock.hh_mm(*at_ms));
                match created_ms {
                    Some(created) => format!(
                        "{seen} (created {} ago)",
                        format_age(now_unix.saturating_sub(created.div_euclid(1000)))
                    ),
                    None => seen,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::informer::{Gap, HistoryConfig};
    use serde_json::json;
    use std::sync::Arc;

    /// 2026-11-28T14:02:00Z.
    const PAGE_OPENED_MS: i64 = 1_795_874_520_000;
    const DAY_MS: i64 = 86_400_000;

    fn deployment(created: &str) -> KubeObject {
        KubeObject::from_value(json!({"metadata": {"name": "web", "namespace": "shop",
            "resourceVersion": "7", "creationTimestamp": created}}))
        .expect("an object")
    }

    fn page_from(ms: i64) -> Observed {
        Observed(vec![Watched {
            from_ms: ms,
            gaps: Vec::new(),
        }])
    }

    #[test]
    fn the_first_list_of_an_old_object_is_no_creation() {
        let old = deployment("2026-11-08T14:02:00Z"); // 20 days before
        let began = beginning(
            DeltaType::Replaced,
            PAGE_OPENED_MS,
            &old,
            &page_from(PAGE_OPENED_MS),
        );
        assert_eq!(
            began,
            Beginning::FirstSeen {
                at_ms: PAGE_OPENED_MS,
                created_ms: Some(PAGE_OPENED_MS - 20 * DAY_MS)
            }
        );
        let utc = WallClock::default();
        let now_unix = PAGE_OPENED_MS / 1000 + 10;
        assert_eq!(
            began.words(&utc, now_unix),
            "first seen 14:02 (created 20d ago)"
        );
        let paris = WallClock {
            utc_offset_secs: 3600,
        };
        assert_eq!(
            began.words(&paris, now_unix),
            "first seen 15:02 (created 20d ago)"
        );
        // No creationTimestamp: only when it was first seen.
        let bare = KubeObject::from_value(json!({"metadata": {"name": "x"}})).expect("object");
        assert_eq!(
            beginning(DeltaType::Replaced, PAGE_OPENED_MS, &bare, &page_from(0)).words(&utc, 0),
            "first seen 14:02"
        );
    }

    #[test]
    fn a_creation_is_said_only_when_observed() {
        let utc = WallClock::default();
        // A watch's Added is a creation, whatever the timestamp says.
        let old = deployment("2026-11-08T14:02:00Z");
        assert_eq!(
            beginning(DeltaType::Added, PAGE_OPENED_MS, &old, &Observed::default()),
            Beginning::Created
        );
        // Created after the page's first list, first seen by a relist: observed.
        let young = deployment("2026-11-28T14:05:00Z");
        let at = PAGE_OPENED_MS + 10 * 60_000;
        assert_eq!(
            beginning(DeltaType::Replaced, at, &young, &page_from(PAGE_OPENED_MS)).words(&utc, 0),
            "created"
        );
        // ... unless it was created while nobody watched (a gap).
        let gap = Observed(vec![Watched {
            from_ms: PAGE_OPENED_MS,
            gaps: vec![(PAGE_OPENED_MS + 60_000, PAGE_OPENED_MS + 9 * 60_000)],
        }]);
        assert!(matches!(
            beginning(DeltaType::Replaced, at, &young, &gap),
            Beginning::FirstSeen { .. }
        ));
        // Created before the page opened, inside serve's record: observed.
        let recorded = deployment("2026-11-28T13:30:00Z");
        let page = page_from(PAGE_OPENED_MS);
        assert!(matches!(
            beginning(DeltaType::Replaced, PAGE_OPENED_MS, &recorded, &page),
            Beginning::FirstSeen { .. }
        ));
        let with_recorder = page.and(Some(Watched {
            from_ms: PAGE_OPENED_MS - 3 * 3_600_000,
            gaps: Vec::new(),
        }));
        assert_eq!(
            beginning(
                DeltaType::Replaced,
                PAGE_OPENED_MS,
                &recorded,
                &with_recorder
            ),
            Beginning::Created
        );
    }

    #[test]
    fn the_page_watched_from_its_oldest_delta_except_its_gaps() {
        let mut history = History::new(HistoryConfig::default());
        assert_eq!(Observed::of_history(&history), Observed::default());
        let object = Arc::new(deployment("2026-11-08T14:02:00Z"));
        history.record(
            5_000,
            DeltaType::Replaced,
            object.clone(),
            false,
            "shop/web",
        );
        history.record_gap(Gap {
            from: 6_000,
            to: 9_000,
        });
        let observed = Observed::of_history(&history);
        assert!(!observed.saw(4_999));
        assert!(observed.saw(5_000) && observed.saw(6_000));
        assert!(!observed.saw(7_000));
        assert!(observed.saw(9_000));
    }

    #[test]
    fn clock_times_wrap_around_midnight() {
        let clock = WallClock {
            utc_offset_secs: -5 * 3600,
        };
        assert_eq!(clock.hh_mm_ss(PAGE_OPENED_MS - 14 * 3_600_000), "19:02:00");
        assert_eq!(WallClock::default().hh_mm_ss(-1_000), "23:59:59");
    }
}
