//! One logs view's followers and what they gave out, sans-IO like the
//! followers themselves: a [`LogSession`] keeps a [`LogFollower`] per
//! (pod, container) it shows — one container, all of a pod's (init
//! containers included), or every pod a workload selects — and starts or
//! stops them as pods come and go ([`LogSession::set_pods`]). Lines go into
//! one [`LogRing`] interleaved by timestamp; breaks are kept beside it and
//! shown where they happened; each source keeps its state (following,
//! reconnecting, ended with an error, left). The informers service carries
//! out its actions and timers; the view reads [`LogSession::rows`].

use std::collections::VecDeque;

use crate::informer::compact_sort;
use crate::informer::logs::{
    LogError, LogEvent, LogFollower, LogLine, LogOptions, LogRing, LogSource, RingBounds,
};
use crate::informer::{Action, Input, JsonRef, Millis};

/// How many break marks a view keeps (the oldest go first).
const MAX_BREAKS: usize = 500;

/// Colours a source may get, in order (readable on the page's background).
pub const SOURCE_COLOURS: [&str; 8] = [
    "#4e9af1", "#e5a50a", "#2ec27e", "#f66151", "#c061cb", "#1c9ea8", "#e66100", "#8f8ff0",
];

/// One pod as the logs view needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodLogInfo {
    pub name: String,
    /// Init containers first, then the containers (kubectl's order).
    pub containers: Vec<String>,
}

impl PodLogInfo {
    /// Reads a pod object; `None` without a name.
    pub fn from_pod(pod: JsonRef<'_>) -> Option<PodLogInfo> {
        let name = pod.pointer("/metadata/name")?.as_str()?.to_owned();
        let mut containers = Vec::new();
        for list in ["/spec/initContainers", "/spec/containers"] {
            if let Some(array) = pod.pointer(list).and_then(|a| a.as_array()) {
                containers.extend(
                    array
                        .iter()
                        .filter_map(|c| c.get("name")?.as_str().map(str::to_owned)),
                );
            }
        }
        Some(PodLogInfo { name, containers })
    }
}

/// Where a source stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceState {
    Following,
    /// Its stream broke; it reconnects at `retry_at`.
    Reconnecting {
        reason: String,
        retry_at: Millis,
    },
    /// All was read (not following), or it stopped with `error`.
    Ended {
        error: Option<LogError>,
    },
    /// Its pod went away while the view followed it.
    Left,
}

/// One (pod, container) the view shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceInfo {
    pub pod: String,
    pub container: String,
    pub colour: &'static str,
    pub state: SourceState,
}

impl SourceInfo {
    /// `pod/container`: the line prefix and `data-source`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.pod, self.container)
    }
}

/// A break, shown after the last line its source had given out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakMark {
    pub source: u32,
    pub reason: String,
    /// Timestamp of the last line before it (`""` if none yet).
    pub after: String,
    after_nanos: Option<i128>,
}

/// One row of the view: a line or a break.
#[derive(Debug, Clone, PartialEq)]
pub enum LogRow<'a> {
    Line(&'a LogLine),
    Break(&'a BreakMark),
}

/// The view's followers and the lines they gave out.
pub struct LogSession {
    namespace: String,
    /// One container only (a pod view with `container=`).
    only_container: Option<String>,
    options: LogOptions,
    sources: Vec<SourceInfo>,
    followers: Vec<LogFollower>,
    ring: LogRing,
    breaks: VecDeque<BreakMark>,
    actions: VecDeque<(u32, Action)>,
    /// Breaks seen (each reconnect, even those shown as one mark).
    breaks_seen: u64,
    /// Bumped whenever what the view shows changed.
    version: u64,
    /// The pods were given at least once (the store behind them synced).
    pods_known: bool,
}

impl LogSession {
    pub fn new(
        namespace: &str,
        only_container: Option<String>,
        options: LogOptions,
        bounds: RingBounds,
    ) -> LogSession {
        LogSession {
            namespace: namespace.to_owned(),
            only_container,
            options,
            sources: Vec::new(),
            followers: Vec::new(),
            ring: LogRing::new(bounds),
            breaks: VecDeque::new(),
            actions: VecDeque::new(),
            breaks_seen: 0,
            version: 0,
            pods_known: false,
        }
    }

    /// The pods the view shows now: a follower starts for each new (pod,
    /// container); those whose pod is gone stop and are marked as left.
    pub fn set_pods(&mut self, pods: &[PodLogInfo], now: Millis) {
        if !self.pods_known {
            self.pods_known = true;
            self.version += 1;
        }
        for pod in pods {
            let containers: Vec<String> = match &self.only_container {
                Some(only) => vec![only.clone()],
                None => pod.containers.clone(),
            };
            for container in &containers {
                let known = self
                    .sources
                    .iter()
                    .any(|s| s.pod == pod.name && s.container == *container);
                if !known {
                    self.add_source(&pod.name, container, now);
                }
            }
        }
        for index in 0..self.sources.len() {
            let gone = !pods.iter().any(|p| p.name == self.sources[index].pod);
            if gone
                && !matches!(
                    self.sources[index].state,
                    SourceState::Left | SourceState::Ended { .. }
                )
            {
                self.followers[index].stop();
                self.sources[index].state = SourceState::Left;
                self.drain(index);
                self.version += 1;
            }
        }
    }

    fn add_source(&mut self, pod: &str, container: &str, now: Millis) {
        let index = self.sources.len() as u32;
        let source = LogSource {
            namespace: self.namespace.clone(),
            pod: pod.to_owned(),
            container: container.to_owned(),
        };
        let mut options = self.options.clone();
        options.seed ^= u64::from(index).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut follower = LogFollower::new(index, source, options);
        follower.start(now);
        self.sources.push(SourceInfo {
            pod: pod.to_owned(),
            container: container.to_owned(),
            colour: SOURCE_COLOURS[index as usize % SOURCE_COLOURS.len()],
            state: SourceState::Following,
        });
        self.followers.push(follower);
        self.drain(index as usize);
        self.version += 1;
    }

    /// The next request to send or cancel, with the source it is for.
    pub fn poll_action(&mut self) -> Option<(u32, Action)> {
        self.actions.pop_front()
    }

    /// Feeds what happened to source `source`'s request.
    pub fn handle(&mut self, source: u32, input: Input<'_>, now: Millis) {
        let Some(follower) = self.followers.get_mut(source as usize) else {
            return;
        };
        follower.handle(input, now);
        self.drain(source as usize);
    }

    /// The earliest time a follower waits for.
    pub fn poll_timeout(&self) -> Option<Millis> {
        self.followers.iter().filter_map(|f| f.poll_timeout()).min()
    }

    /// Time passed: followers whose wait is over reconnect.
    pub fn tick(&mut self, now: Millis) {
        for index in 0..self.followers.len() {
            if self.followers[index]
                .poll_timeout()
                .is_some_and(|t| t <= now)
            {
                self.followers[index].handle(Input::Tick, now);
                self.drain(index);
            }
        }
    }

    /// Stops every follower (their requests are cancelled).
    pub fn stop(&mut self) {
        for index in 0..self.followers.len() {
            self.followers[index].stop();
            self.drain(index);
        }
    }

    fn drain(&mut self, index: usize) {
        let follower = &mut self.followers[index];
        while let Some(action) = follower.poll_action() {
            self.actions.push_back((index as u32, action));
        }
        while let Some(event) = self.followers[index].poll_event() {
            self.version += 1;
            match event {
                LogEvent::Line(line) => {
                    self.sources[index].state = SourceState::Following;
                    self.ring.insert(line);
                }
                LogEvent::Break {
                    source,
                    reason,
                    after,
                    retry_at,
                } => {
                    self.sources[index].state = SourceState::Reconnecting {
                        reason: reason.clone(),
                        retry_at,
                    };
                    self.breaks_seen += 1;
                    let after_nanos = deltascope_facts::time::parse_rfc3339_nanos(&after);
                    // A stream that keeps ending with nothing new (a finished
                    // container, asked again) is one break, not one per retry.
                    let repeated = self
                        .breaks
                        .iter()
                        .rev()
                        .find(|b| b.source == source)
                        .is_some_and(|b| b.after == after);
                    if repeated {
                        continue;
                    }
                    if self.breaks.len() == MAX_BREAKS {
                        self.breaks.pop_front();
                    }
                    self.breaks.push_back(BreakMark {
                        source,
                        reason,
                        after,
                        after_nanos,
                    });
                }
                LogEvent::Ended { error, .. } => {
                    if self.sources[index].state != SourceState::Left {
                        self.sources[index].state = SourceState::Ended { error };
                    }
                }
            }
        }
    }

    /// Lines servers sent again after reconnects, dropped as already held.
    pub fn repeated(&self) -> u64 {
        self.followers.iter().map(LogFollower::repeated).sum()
    }

    /// How many times a stream broke (and reconnected, or will).
    pub fn breaks_seen(&self) -> u64 {
        self.breaks_seen
    }

    pub fn sources(&self) -> &[SourceInfo] {
        &self.sources
    }

    /// The pods are known and none was ever there to read: a pod that is
    /// not in the cluster, or a workload that selects none.
    pub fn has_no_pods(&self) -> bool {
        self.pods_known && self.sources.is_empty()
    }

    pub fn ring(&self) -> &LogRing {
        &self.ring
    }

    pub fn set_bounds(&mut self, bounds: RingBounds) {
        self.ring.set_bounds(bounds);
        self.version += 1;
    }

    /// Changes whenever the rows may have changed.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Some source still reads (or will reconnect).
    pub fn is_live(&self) -> bool {
        self.sources.iter().any(|s| {
            matches!(
                s.state,
                SourceState::Following | SourceState::Reconnecting { .. }
            )
        })
    }

    /// Where each kept break sits among the lines: (index of the first line
    /// after it, break), in order. A break older than every held line is
    /// dropped from view once lines were evicted before it.
    fn break_positions(&self) -> Vec<(usize, &BreakMark)> {
        let mut out: Vec<(usize, &BreakMark)> = self
            .breaks
            .iter()
            .map(|b| (self.position_after(b), b))
            .filter(|(at, _)| *at > 0 || self.ring.evicted().0 == 0)
            .collect();
        compact_sort::sort_by_key(&mut out, |(at, _)| *at);
        out
    }

    /// Index of the first line that comes after `mark` (its source's last
    /// line is before it).
    fn position_after(&self, mark: &BreakMark) -> usize {
        let Some(after) = mark.after_nanos else {
            return if mark.after.is_empty() {
                0
            } else {
                self.ring.len()
            };
        };
        let (mut lo, mut hi) = (0, self.ring.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.ring.get(mid).and_then(|l| l.nanos) {
                Some(n) if n <= after => lo = mid + 1,
                Some(_) => hi = mid,
                None => hi = mid,
            }
        }
        lo
    }

    /// Rows (lines and breaks) held.
    pub fn row_count(&self) -> usize {
        self.ring.len() + self.break_positions().len()
    }

    /// Rows `first..first + count`.
    pub fn rows(&self, first: usize, count: usize) -> Vec<LogRow<'_>> {
        let breaks = self.break_positions();
        let mut out = Vec::with_capacity(count.min(self.ring.len() + breaks.len()));
        // Row r is line (r - breaks before it); find where `first` lands.
        let mut b = 0;
        let mut line = first;
        while b < breaks.len() && breaks[b].0 + b < first {
            b += 1;
        }
        line -= b.min(line);
        let mut row = first;
        while out.len() < count {
            if b < breaks.len() && breaks[b].0 + b == row {
                out.push(LogRow::Break(breaks[b].1));
                b += 1;
            } else if let Some(l) = self.ring.get(line) {
                out.push(LogRow::Line(l));
                line += 1;
            } else {
                break;
            }
            row += 1;
        }
        out
    }

    /// Row indexes of the lines containing `query` (case-insensitive).
    pub fn search_rows(&self, query: &str) -> Vec<usize> {
        let breaks = self.break_positions();
        let mut b = 0;
        self.ring
            .search(query)
            .into_iter()
            .map(|line| {
                while b < breaks.len() && breaks[b].0 <= line {
                    b += 1;
                }
                line + b
            })
            .collect()
    }

    /// What is held, as text (for download): `pod/container timestamp text`.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for line in self.ring.iter() {
            if let Some(source) = self.sources.get(line.source as usize) {
                out.push_str(&source.label());
                out.push(' ');
            }
            if !line.timestamp.is_empty() {
                out.push_str(&line.timestamp);
                out.push(' ');
            }
            out.push_str(&line.text);
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
#[path = "log_session_tests.rs"]
mod tests;
