//! What the status bar says about the history deltascope serve records on its
//! side (see ARCHITECTURE.md, *The recorded history*): recording (and how many
//! resources), reading a history another recorder writes, none because the
//! database cannot be used (serve's own sentence, as a warning), or off.
//! [`ServeHistory`] is what a summary (`crate::api::history_summary`) means;
//! [`history_words`] its words and the DOM hook's state word. Whether a summary
//! is asked for and what an answer that is no summary means are decided in
//! `crate::app::serve_history`; with no serve in front of the page, nothing is
//! said at all. [`history_stats`] is `[data-testid=history-stats]`: how far
//! back the shown resource's history reaches ("recorded since 03:12:40 by
//! serve", or "history starts when the page opened").

use deltascope_facts::percent::encode_query_value;

use crate::api::history_summary::{
    ClusterSummary, HistorySummary, RecorderSummary, ResourceSummary,
};

/// One resource serve holds a record of (this cluster's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedResource {
    /// As in `data-resource`: `pods`, `deployments.apps`.
    pub resource: String,
    /// Its first recorded delta (ms since the Unix epoch).
    pub first_ms: Option<i64>,
    pub gaps: i64,
}

/// What serve does with the cluster's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServeHistory {
    /// serve records into `database`; `state` is its recorder's own line
    /// ("recording 16 resources; 556 deltas stored", "recorder paused: …").
    Recording {
        /// serve's name of the cluster this is the record of (`None`: the
        /// default one); asked for with `cluster=`.
        cluster: Option<String>,
        state: String,
        resources: u64,
        deltas: u64,
        database: Option<String>,
        /// What its database holds, per resource.
        recorded: Vec<RecordedResource>,
    },
    /// serve reads a history it does not record (`--history-read-only`:
    /// a `deltascope record` elsewhere writes it).
    Reading {
        /// As in `Recording`.
        cluster: Option<String>,
        database: String,
        recorded: Vec<RecordedResource>,
    },
    /// serve keeps none although one was asked for; its words say why.
    Unavailable { message: String },
    /// serve keeps none (`--history off`).
    Off,
}

impl ServeHistory {
    /// What a summary says of the default cluster; `unavailable` first
    /// (then serve has no database).
    pub fn of(summary: &HistorySummary) -> ServeHistory {
        // An older serve, or one that has not learned the identity yet,
        // lists one cluster's resources: all of them are the default's.
        let identity = summary.cluster.as_deref();
        let ours = |r: &&ResourceSummary| identity.is_none_or(|c| c == r.cluster);
        Self::built(summary, (None, summary.recording.as_ref()), ours)
    }

    /// What a summary says of serve's cluster `of` (one of its `clusters`):
    /// the resources recorded under its identity (none before serve knows
    /// it), its recorder's state.
    pub fn of_cluster(summary: &HistorySummary, of: &ClusterSummary) -> ServeHistory {
        let identity = of.cluster.as_deref();
        let ours = |r: &&ResourceSummary| identity == Some(r.cluster.as_str());
        let name = of.name.clone().filter(|_| !of.default);
        Self::built(summary, (name, of.recording.as_ref()), ours)
    }

    fn built(
        summary: &HistorySummary,
        (cluster, recording): (Option<String>, Option<&RecorderSummary>),
        ours: impl FnMut(&&ResourceSummary) -> bool,
    ) -> ServeHistory {
        if let Some(message) = summary.unavailable.as_ref().filter(|m| !m.is_empty()) {
            return ServeHistory::Unavailable {
                message: message.clone(),
            };
        }
        let recorded = summary
            .resources
            .iter()
            .filter(ours)
            .map(|r| RecordedResource {
                resource: r.resource.clone(),
                first_ms: r.first_ms,
                gaps: r.gaps,
            })
            .collect();
        match (recording, &summary.history) {
            (Some(recording), database) => ServeHistory::Recording {
                cluster,
                state: recording.state.clone(),
                resources: recording.resources,
                deltas: recording.deltas_written,
                database: database.clone(),
                recorded,
            },
            (None, Some(database)) => ServeHistory::Reading {
                cluster,
                database: database.clone(),
                recorded,
            },
            (None, None) => ServeHistory::Off,
        }
    }

    /// `path` (a history route's, with its query) asked of this cluster's
    /// record ([`in_cluster`]).
    pub fn scoped(&self, path: String) -> String {
        match self {
            ServeHistory::Recording { cluster, .. } | ServeHistory::Reading { cluster, .. } => {
                in_cluster(path, cluster.as_deref())
            }
            _ => path,
        }
    }

    /// serve holds a history the page can read (it records, or reads
    /// another recorder's).
    pub fn keeps_history(&self) -> bool {
        matches!(
            self,
            ServeHistory::Recording { .. } | ServeHistory::Reading { .. }
        )
    }

    /// What serve holds of `resource` (as in `data-resource`), if any.
    pub fn recorded(&self, resource: &str) -> Option<&RecordedResource> {
        match self {
            ServeHistory::Recording { recorded, .. } | ServeHistory::Reading { recorded, .. } => {
                recorded.iter().find(|r| r.resource == resource)
            }
            _ => None,
        }
    }

    /// When serve's record of `resource` begins (ms since the Unix epoch).
    pub fn recorded_from(&self, resource: &str) -> Option<i64> {
        self.recorded(resource)?.first_ms
    }
}

/// `path` (a history route's, with its query) asked of the record of
/// serve's cluster `cluster`: `&cluster=NAME` added for one other than the
/// default (`None`).
pub fn in_cluster(mut path: String, cluster: Option<&str>) -> String {
    if let Some(name) = cluster {
        path.push_str("&cluster=");
        path.push_str(&encode_query_value(name));
    }
    path
}

/// What serve says of each of its clusters' records: the default one's,
/// and each other's by serve's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeHistories {
    pub default: ServeHistory,
    pub others: Vec<(String, ServeHistory)>,
}

impl ServeHistories {
    /// One cluster's, or what is true of every cluster (no database).
    pub fn only(default: ServeHistory) -> ServeHistories {
        ServeHistories {
            default,
            others: Vec::new(),
        }
    }

    /// What a summary says of each cluster.
    pub fn of(summary: &HistorySummary) -> ServeHistories {
        let others = summary.clusters.iter().filter(|c| !c.default);
        ServeHistories {
            default: ServeHistory::of(summary),
            others: others
                .filter_map(|c| Some((c.name.clone()?, ServeHistory::of_cluster(summary, c))))
                .collect(),
        }
    }

    /// What serve says of `cluster`'s record (`None`: the default one's).
    /// No database is no database for any cluster; a name serve's summary
    /// does not list has no record.
    pub fn of_cluster(&self, cluster: Option<&str>) -> Option<&ServeHistory> {
        let Some(name) = cluster else {
            return Some(&self.default);
        };
        match self.others.iter().find(|(n, _)| n == name) {
            Some((_, history)) => Some(history),
            None => (!self.default.keeps_history()).then_some(&self.default),
        }
    }
}

/// The status bar's item: `[data-history-status]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryWords {
    /// `recording`, `reading`, `unavailable` or `off` (the hook's value).
    pub state: &'static str,
    /// The words shown.
    pub text: String,
    /// More, on hover.
    pub title: String,
    /// Shown as a warning: no history although one was asked for, or a
    /// recorder that is not recording everything.
    pub warning: bool,
}

/// The status bar's words for what serve does with the history.
pub fn history_words(history: &ServeHistory) -> HistoryWords {
    match history {
        ServeHistory::Recording {
            state,
            resources,
            deltas,
            database,
            ..
        } => recording_words(state, *resources, *deltas, database.as_deref()),
        ServeHistory::Reading { database, .. } => HistoryWords {
            state: "reading",
            text: "serve: reads a record kept by another recorder".to_string(),
            title: format!(
                "deltascope serve reads the cluster's history in {database}; another recorder (deltascope record) writes it"
            ),
            warning: false,
        },
        ServeHistory::Unavailable { message } => HistoryWords {
            state: "unavailable",
            text: message.clone(),
            title: format!(
                "deltascope serve keeps no history of the cluster: {message}. The page works live as before."
            ),
            warning: true,
        },
        ServeHistory::Off => HistoryWords {
            state: "off",
            text: "serve keeps no history (--history off)".to_string(),
            title: "deltascope serve keeps no history of the cluster (started with --history off)"
                .to_string(),
            warning: false,
        },
    }
}

/// "serve: recording 16 resources", or the recorder's own words when it
/// is starting, paused or stopped, or some of its resources fail.
fn recording_words(
    state: &str,
    resources: u64,
    deltas: u64,
    database: Option<&str>,
) -> HistoryWords {
    let healthy = state.starts_with("recording") && !state.contains("failing");
    let text = if healthy {
        format!("serve: recording {}", count(resources, "resource"))
    } else {
        // serve's line without its running count ("; N deltas stored")
        let head = state.split("; ").next().unwrap_or(state).trim();
        if head.is_empty() {
            "serve: recording".to_string()
        } else {
            format!("serve: {head}")
        }
    };
    let into = database.map(|d| format!(" into {d}")).unwrap_or_default();
    let said = if state.is_empty() {
        String::new()
    } else {
        format!(" ({state})")
    };
    HistoryWords {
        state: "recording",
        text,
        title: format!(
            "deltascope serve records the cluster's history{into}: {} stored since it started{said}",
            count(deltas, "delta")
        ),
        warning: !healthy && state != "recorder starting" && !state.is_empty(),
    }
}

fn count(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `[data-testid=history-stats]`: how far back the shown resource's
/// history reaches, in words, and `data-recorded-from`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryStats {
    pub text: String,
    pub title: String,
    /// RFC 3339 of serve's first recorded delta of the resource; empty
    /// without a recorder.
    pub recorded_from: String,
}

/// "recorded since 03:12:40 by serve · 42 deltas since the page opened"
/// when serve holds a record of the resource from `recorded_from_ms` on,
/// else "history starts when the page opened · 42 deltas"; the page's own
/// counts in the title (`crate::model::status_line::history_words`).
pub fn history_stats(
    recorded_from_ms: Option<i64>,
    clock: &crate::model::first_seen::WallClock,
    recorded: u64,
    held: usize,
    evicted: u64,
) -> HistoryStats {
    let deltas = match recorded {
        1 => "1 delta".to_string(),
        n => format!("{n} deltas"),
    };
    let evicted_words = match evicted {
        0 => String::new(),
        n => format!(" ({n} evicted)"),
    };
    let (text, recorded_from) = match recorded_from_ms {
        Some(first) => (
            format!(
                "recorded since {} by serve · {deltas} since the page opened{evicted_words}",
                clock.hh_mm_ss(first)
            ),
            deltascope_facts::time::format_rfc3339_millis(first).unwrap_or_default(),
        ),
        None => (
            format!("history starts when the page opened · {deltas}{evicted_words}"),
            String::new(),
        ),
    };
    HistoryStats {
        text,
        title: crate::model::status_line::history_words(recorded, held, evicted),
        recorded_from,
    }
}

/// For tests: serve recording `resources`, each from its first time (ms).
#[cfg(test)]
pub fn recording_since(resources: &[(&str, i64)]) -> ServeHistory {
    recording_in(None, resources)
}

/// For tests: [`recording_since`] of serve's cluster `cluster`.
#[cfg(test)]
pub fn recording_in(cluster: Option<&str>, resources: &[(&str, i64)]) -> ServeHistory {
    ServeHistory::Recording {
        cluster: cluster.map(str::to_owned),
        state: "recording 2 resources; 9 deltas stored".into(),
        resources: 2,
        deltas: 9,
        database: None,
        recorded: resources
            .iter()
            .map(|(resource, first_ms)| RecordedResource {
                resource: resource.to_string(),
                first_ms: Some(*first_ms),
                gaps: 0,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::history_summary::{parse_summary, RecorderSummary};

    fn recording(state: &str, resources: u64) -> ServeHistory {
        ServeHistory::of(&HistorySummary {
            history: Some("sqlite:/home/u/.local/state/deltascope/history.sqlite".into()),
            recording: Some(RecorderSummary {
                state: state.into(),
                resources,
                deltas_written: 556,
                last_write_ms: None,
            }),
            ..HistorySummary::default()
        })
    }

    #[test]
    fn recording_says_how_many_resources() {
        let words = history_words(&recording("recording 16 resources; 556 deltas stored", 16));
        assert_eq!(words.state, "recording");
        assert_eq!(words.text, "serve: recording 16 resources");
        assert!(!words.warning);
        assert!(words.title.contains("556 deltas"), "{}", words.title);
        assert!(words.title.contains("history.sqlite"), "{}", words.title);
        let one = history_words(&recording("recording 1 resource; 3 deltas stored", 1));
        assert_eq!(one.text, "serve: recording 1 resource");
    }

    #[test]
    fn a_recorder_in_trouble_says_so_as_a_warning() {
        let starting = history_words(&recording("recorder starting", 0));
        assert_eq!(starting.text, "serve: recorder starting");
        assert!(!starting.warning, "starting is no trouble");
        let paused = history_words(&recording(
            "recorder paused: the history database is unavailable (disk full); retrying in 4 s",
            16,
        ));
        assert_eq!(
            paused.text,
            "serve: recorder paused: the history database is unavailable (disk full)"
        );
        assert!(paused.warning);
        assert_eq!(paused.state, "recording");
        let failing = history_words(&recording(
            "recording 16 resources (1 failing: pods: HTTP 403); 9 deltas stored",
            16,
        ));
        assert_eq!(
            failing.text,
            "serve: recording 16 resources (1 failing: pods: HTTP 403)"
        );
        assert!(failing.warning);
    }

    #[test]
    fn no_history_says_why_as_a_warning() {
        let body = br#"{"cluster":null,"history":null,"recording":null,"resources":[],"unavailable":"no history: the history database sqlite:/tmp/h.sqlite cannot be read (file is not a database); deltascope left it as it is; serving live only"}"#;
        let history = ServeHistory::of(&parse_summary(body).expect("summary"));
        let words = history_words(&history);
        assert_eq!(words.state, "unavailable");
        assert!(words.warning);
        assert_eq!(
            words.text,
            "no history: the history database sqlite:/tmp/h.sqlite cannot be read (file is not a database); deltascope left it as it is; serving live only"
        );
    }

    #[test]
    fn off_and_read_only() {
        let off = ServeHistory::of(&HistorySummary::default());
        assert_eq!(off, ServeHistory::Off);
        let words = history_words(&off);
        assert_eq!(
            (words.state, words.text.as_str()),
            ("off", "serve keeps no history (--history off)")
        );
        assert!(!words.warning);
        let reading = ServeHistory::of(&HistorySummary {
            history: Some("postgres://team@db/history".into()),
            ..HistorySummary::default()
        });
        let words = history_words(&reading);
        assert_eq!(words.state, "reading");
        assert!(words.title.contains("postgres://team@db/history"));
        assert!(!words.warning);
    }

    #[test]
    fn an_empty_unavailable_is_no_reason() {
        let summary = HistorySummary {
            unavailable: Some(String::new()),
            ..HistorySummary::default()
        };
        assert_eq!(ServeHistory::of(&summary), ServeHistory::Off);
    }

    #[test]
    fn the_record_of_each_resource_of_this_cluster_is_known() {
        let summary = parse_summary(
            br#"{"cluster":"c1","history":"sqlite:/tmp/h.sqlite","recording":{"resources":2,"state":"recording 2 resources"},
                "resources":[{"cluster":"c1","resource":"pods","firstMs":1000,"gaps":1},
                             {"cluster":"c0","resource":"nodes","firstMs":5},
                             {"cluster":"c1","resource":"deployments.apps"}]}"#,
        )
        .expect("a summary");
        let history = ServeHistory::of(&summary);
        assert!(history.keeps_history());
        assert_eq!(history.recorded_from("pods"), Some(1000));
        assert_eq!(history.recorded("pods").map(|r| r.gaps), Some(1));
        assert!(history.recorded("nodes").is_none(), "another cluster's");
        assert!(history.recorded("deployments.apps").is_some());
        assert_eq!(history.recorded_from("deployments.apps"), None);
        assert!(!ServeHistory::Off.keeps_history());
        assert_eq!(ServeHistory::Off.recorded_from("pods"), None);
    }

    #[test]
    fn history_says_how_far_back_it_reaches() {
        use crate::model::first_seen::WallClock;
        let utc = WallClock::default();
        let serve = history_stats(Some(1_795_828_528_336), &utc, 42, 42, 0);
        assert_eq!(
            serve.text,
            "recorded since 01:15:28 by serve · 42 deltas since the page opened"
        );
        assert_eq!(serve.recorded_from, "2026-11-28T01:15:28.336Z");
        assert_eq!(serve.title, "history: 42 deltas");
        let own = history_stats(None, &utc, 1, 1, 0);
        assert_eq!(own.text, "history starts when the page opened · 1 delta");
        assert_eq!(own.recorded_from, "");
        let evicted = history_stats(None, &utc, 50, 40, 10);
        assert_eq!(
            evicted.text,
            "history starts when the page opened · 50 deltas (10 evicted)"
        );
    }

    #[test]
    fn each_cluster_has_its_own_record_and_recorder_and_is_asked_by_name() {
        let summary = parse_summary(
            br#"{"cluster":"uid-a","name":"a","history":"sqlite:/tmp/h.sqlite",
                "recording":{"resources":1,"state":"recording 1 resource"},
                "resources":[{"cluster":"uid-a","resource":"pods","firstMs":1000},
                             {"cluster":"uid-b","resource":"pods","firstMs":2000},
                             {"cluster":"uid-b","resource":"nodes","firstMs":3000}],
                "clusters":[{"name":"a","default":true,"cluster":"uid-a","recording":{"state":"recording 1 resource"}},
                            {"name":"b","default":false,"cluster":"uid-b","recording":{"state":"recorder starting"}},
                            {"name":"c","default":false,"cluster":null,"recording":null}]}"#,
        )
        .expect("a summary");
        let histories = ServeHistories::of(&summary);
        let of = |name| histories.of_cluster(name).expect("known");
        assert_eq!(of(None).recorded_from("pods"), Some(1000));
        assert!(of(None).recorded("nodes").is_none(), "b's");
        assert_eq!(of(Some("b")).recorded_from("pods"), Some(2000));
        assert_eq!(of(Some("b")).recorded_from("nodes"), Some(3000));
        assert_eq!(
            history_words(of(Some("b"))).text,
            "serve: recorder starting"
        );
        // c's identity is not known yet: nothing is its record; it reads
        // (no recorder) what another writes.
        assert!(of(Some("c")).keeps_history());
        assert!(of(Some("c")).recorded("pods").is_none());
        assert_eq!(history_words(of(Some("c"))).state, "reading");
        assert_eq!(histories.of_cluster(Some("zz")), None);
        let path = "/_deltascope/history?resource=pods".to_string();
        assert_eq!(of(None).scoped(path.clone()), path);
        assert_eq!(
            of(Some("b")).scoped(path.clone()),
            format!("{path}&cluster=b")
        );
        assert_eq!(
            in_cluster(path.clone(), Some("arn:aws:eks:eu-west-1:1:cluster/prod")),
            format!("{path}&cluster=arn%3Aaws%3Aeks%3Aeu-west-1%3A1%3Acluster%2Fprod")
        );
        // No database is none for every cluster.
        let none = ServeHistories::only(ServeHistory::Unavailable {
            message: "no history".into(),
        });
        assert_eq!(none.of_cluster(Some("b")), Some(&none.default));
    }

    #[test]
    fn a_cluster_without_a_name_is_passed_over_and_the_summary_still_read() {
        let summary = parse_summary(
            br#"{"cluster":"u","history":"sqlite:/tmp/h.sqlite","recording":{"state":"recording 1 resource"},
                "resources":[{"cluster":"u","resource":"pods","firstMs":7}],
                "clusters":[{"name":null,"default":true,"cluster":"u"},{"default":false,"cluster":"v"}]}"#,
        )
        .expect("a summary");
        let histories = ServeHistories::of(&summary);
        assert_eq!(histories.default.recorded_from("pods"), Some(7));
        assert!(histories.others.is_empty());
    }
}
