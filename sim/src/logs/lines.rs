//! The log lines of one container run, as a pure function of the run and the
//! rate schedule: nothing is stored, so memory does not grow with time or
//! rate, and any time range reads the same lines on every request (a test can
//! compare `kubectl logs` through two paths, a reconnecting follower finds
//! exactly the lines it had).
//!
//! Time is cut into slots of the rate's period (per container); each slot
//! holds one line at a seeded offset inside it, so lines are in timestamp
//! order and no two share a timestamp. A run that crashed ends with an error
//! and its stack trace, stamped one nanosecond apart in its last millisecond.
//! What a kubelet would have rotated away is not served: at most
//! [`KEPT_LINES`] lines per container, the newest.

use super::super::store::splitmix;

/// Lines kept per container run (the kubelet rotates at 10 MiB; ~100 bytes a line).
pub const KEPT_LINES: usize = 10_000;

/// Nanoseconds in a second.
pub(super) const NANOS: i128 = 1_000_000_000;

/// One run of one container: from its start to its end (`None`: running).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// Seeded from the sim's seed, the pod, the container and its container id.
    pub identity: u64,
    /// Unix nanoseconds.
    pub start: i128,
    pub end: Option<i128>,
    pub voice: Voice,
    /// Ended with a non-zero exit code: the last lines are a stack trace.
    pub crashed: bool,
}

/// What a container writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Voice {
    /// An HTTP server's access log (`tier: web`).
    Access,
    /// Structured JSON logs of a backend.
    Json,
    /// The `log-shipper` sidecar (fluent-bit).
    Shipper,
}

/// One line: its time and its text (no newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub at: i128,
    pub text: String,
}

/// From `from` (Unix ns) on, each container writes a line every `period` ns
/// (`None`: silent). The first epoch also covers all time before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epoch {
    pub from: i128,
    pub period: Option<i128>,
}

/// Epochs kept; older rate changes are forgotten (the oldest kept epoch then
/// reaches back in time), so the schedule stays bounded.
pub const KEPT_EPOCHS: usize = 64;

impl Run {
    /// Lines with `lo <= at < hi`, in time order.
    pub fn between(&self, epochs: &[Epoch], lo: i128, hi: i128) -> Vec<Line> {
        let crash_at = self.crash_at();
        let lo = lo.max(self.start);
        let hi = match self.end {
            Some(end) => hi.min(end),
            None => hi,
        };
        let mut out = Vec::new();
        if lo >= hi {
            return out;
        }
        let slot_hi = crash_at.map_or(hi, |c| hi.min(c));
        for (i, epoch) in epochs.iter().enumerate() {
            let Some(period) = epoch.period.filter(|p| *p > 0) else {
                continue;
            };
            let e_lo = if i == 0 { lo } else { lo.max(epoch.from) };
            let e_hi = epochs.get(i + 1).map_or(slot_hi, |n| slot_hi.min(n.from));
            if e_lo >= e_hi {
                continue;
            }
            let first = (e_lo - epoch.from).div_euclid(period);
            let last = (e_hi - 1 - epoch.from).div_euclid(period);
            for k in first..=last {
                let h = self.hash(epoch.from, k);
                let at = epoch.from + k * period + (h as i128).rem_euclid(period);
                if at >= e_lo && at < e_hi {
                    out.push(Line {
                        at,
                        text: self.text(at, h),
                    });
                }
            }
        }
        if let Some(c) = crash_at {
            for (i, text) in self.stack_trace(c).into_iter().enumerate() {
                let at = c + i as i128;
                if at >= lo && at < hi {
                    out.push(Line { at, text });
                }
            }
        }
        out
    }

    /// The newest `n` lines before `hi` (and within [`KEPT_LINES`]), in order.
    pub fn last(&self, epochs: &[Epoch], hi: i128, n: usize) -> Vec<Line> {
        let n = n.min(KEPT_LINES);
        if n == 0 {
            return Vec::new();
        }
        let period = epochs
            .iter()
            .rev()
            .find_map(|e| e.period)
            .unwrap_or(NANOS)
            .max(1);
        let mut span = period.saturating_mul(n as i128 + 2);
        loop {
            let lo = hi.saturating_sub(span);
            let mut lines = self.between(epochs, lo, hi);
            if lines.len() >= n || lo <= self.start || span > 1_000 * 86_400 * NANOS {
                let cut = lines.len().saturating_sub(n);
                lines.drain(..cut);
                return lines;
            }
            span = span.saturating_mul(4);
        }
    }

    /// Every line the kubelet still holds before `hi`, in order.
    pub fn kept(&self, epochs: &[Epoch], hi: i128) -> Vec<Line> {
        self.last(epochs, hi, KEPT_LINES)
    }

    fn crash_at(&self) -> Option<i128> {
        match self.end {
            Some(end) if self.crashed => Some((end - 1_000_000).max(self.start)),
            _ => None,
        }
    }

    fn hash(&self, epoch_from: i128, k: i128) -> u64 {
        splitmix(self.identity ^ splitmix(epoch_from as u64 ^ splitmix(k as u64)))
    }

    fn text(&self, at: i128, h: u64) -> String {
        let pick = |list: &[&'static str], salt: u32| {
            list[(h.rotate_left(salt) % list.len() as u64) as usize]
        };
        let when = stamp(at, 3);
        match self.voice {
            Voice::Access => {
                let status = match h % 50 {
                    0 => 500,
                    1..=2 => 404,
                    3 => 302,
                    _ => 200,
                };
                format!(
                    "10.64.{}.{} - - [{when}] \"{} {} HTTP/1.1\" {status} {} \"-\" \"{}\" {}.{:03}",
                    (h >> 8) % 250,
                    (h >> 16) % 250 + 2,
                    pick(&["GET", "GET", "GET", "POST", "PUT"], 7),
                    path(h),
                    (h >> 24) % 40_000 + 120,
                    pick(AGENTS, 13),
                    (h >> 40) % 2,
                    (h >> 44) % 1000,
                )
            }
            Voice::Json => {
                let level = match h % 40 {
                    0 => "error",
                    1..=3 => "warn",
                    4..=9 => "debug",
                    _ => "info",
                };
                format!(
                    "{{\"ts\":\"{when}\",\"level\":\"{level}\",\"msg\":\"{}\",\"trace_id\":\"{:016x}\",\"latency_ms\":{},\"route\":\"{}\"}}",
                    pick(MESSAGES, 11),
                    splitmix(h),
                    (h >> 20) % 900 + 1,
                    path(h),
                )
            }
            Voice::Shipper => format!(
                "[{when}] [ info] [output:forward:forward.0] flushed {} records ({} bytes) to collector.monitoring:24224",
                (h >> 8) % 200 + 1,
                (h >> 16) % 60_000 + 200,
            ),
        }
    }

    fn stack_trace(&self, at: i128) -> Vec<String> {
        let when = stamp(at, 3);
        if self.identity % 2 == 0 {
            vec![
                format!("{{\"ts\":\"{when}\",\"level\":\"fatal\",\"msg\":\"unrecoverable error, exiting\",\"error\":\"connection refused: db.data:5432\"}}"),
                "panic: runtime error: invalid memory address or nil pointer dereference".to_string(),
                "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x6f2c1a]".to_string(),
                String::new(),
                "goroutine 1 [running]:".to_string(),
                "main.(*Store).Get(0x0, {0xc000126000, 0x24})".to_string(),
                "\t/src/internal/store/store.go:88 +0x3a".to_string(),
                "main.(*Server).handleOrder(0xc0001a4000, {0x8d3e40, 0xc0002c6000}, 0xc0002d2000)".to_string(),
                "\t/src/cmd/server/orders.go:141 +0x1b4".to_string(),
                "main.main()".to_string(),
                "\t/src/cmd/server/main.go:57 +0x2e5".to_string(),
            ]
        } else {
            vec![
                format!("{when} ERROR [main] o.d.Application - application failed to start"),
                "java.lang.IllegalStateException: required configuration 'PAYMENTS_URL' is missing"
                    .to_string(),
                "\tat dev.deltascope.config.Settings.require(Settings.java:61)".to_string(),
                "\tat dev.deltascope.Application.configure(Application.java:112)".to_string(),
                "\tat dev.deltascope.Application.main(Application.java:34)".to_string(),
                "Caused by: java.util.NoSuchElementException: PAYMENTS_URL".to_string(),
                "\tat java.base/java.util.Optional.orElseThrow(Optional.java:377)".to_string(),
                "\t... 3 more".to_string(),
            ]
        }
    }
}

const AGENTS: &[&str] = &[
    "Mozilla/5.0 (X11; Linux x86_64; rv:132.0) Gecko/20100101 Firefox/132.0",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15 Safari/605.1.15",
    "kube-probe/1.32",
    "curl/8.10.1",
];

const MESSAGES: &[&str] = &[
    "request served",
    "cache miss, loading from database",
    "order placed",
    "retrying upstream call",
    "connection pool resized",
    "payment authorised",
    "slow query",
];

fn path(h: u64) -> String {
    match (h >> 32) % 6 {
        0 => "/healthz".to_string(),
        1 => format!("/api/products/{}", (h >> 36) % 500),
        2 => "/api/cart".to_string(),
        3 => format!("/api/orders/{}", (h >> 12) % 100_000),
        4 => "/static/app.js".to_string(),
        _ => "/".to_string(),
    }
}

/// `2026-11-25T10:00:00.123456789Z` (RFC 3339 with `digits` of the
/// fraction, as the kubelet stamps lines with 9).
pub fn stamp(at: i128, digits: u32) -> String {
    let secs = at.div_euclid(NANOS) as i64;
    let frac = at.rem_euclid(NANOS) / 10_i128.pow(9 - digits);
    let whole = deltascope_facts::time::format_rfc3339(secs).unwrap_or_default();
    let stem = whole.strip_suffix('Z').unwrap_or(&whole);
    format!("{stem}.{frac:0width$}Z", width = digits as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(end: Option<i128>, crashed: bool) -> Run {
        Run {
            identity: 7,
            start: 1_000 * NANOS,
            end,
            voice: Voice::Json,
            crashed,
        }
    }

    const ONE_PER_SEC: &[Epoch] = &[Epoch {
        from: 0,
        period: Some(NANOS),
    }];

    #[test]
    fn one_line_per_slot_in_order_and_reproducible() {
        let r = run(None, false);
        let lines = r.between(ONE_PER_SEC, 1_000 * NANOS, 1_100 * NANOS);
        assert_eq!(lines.len(), 100);
        assert!(lines.windows(2).all(|w| w[0].at < w[1].at));
        // Any split of the range reads the same lines.
        let mut split = r.between(ONE_PER_SEC, 0, 1_037 * NANOS + 5);
        split.extend(r.between(ONE_PER_SEC, 1_037 * NANOS + 5, 1_100 * NANOS));
        assert_eq!(split, lines);
        assert_eq!(r.last(ONE_PER_SEC, 1_100 * NANOS, 10), lines[90..].to_vec());
    }

    #[test]
    fn rate_changes_keep_the_past_and_bound_the_history() {
        let r = run(None, false);
        let before = r.between(ONE_PER_SEC, 1_000 * NANOS, 1_050 * NANOS);
        let faster = [
            ONE_PER_SEC[0],
            Epoch {
                from: 1_050 * NANOS,
                period: Some(NANOS / 100),
            },
        ];
        assert_eq!(r.between(&faster, 1_000 * NANOS, 1_050 * NANOS), before);
        assert_eq!(r.between(&faster, 1_050 * NANOS, 1_051 * NANOS).len(), 100);
        assert_eq!(r.kept(&faster, 1_300 * NANOS).len(), KEPT_LINES);
        let silent = [Epoch {
            from: 0,
            period: None,
        }];
        assert!(r.between(&silent, 0, 2_000 * NANOS).is_empty());
    }

    #[test]
    fn a_crashed_run_ends_with_its_stack_trace() {
        let r = run(Some(1_030 * NANOS), true);
        let lines = r.between(ONE_PER_SEC, 0, 5_000 * NANOS);
        assert!(lines.windows(2).all(|w| w[0].at < w[1].at));
        assert!(lines.iter().all(|l| l.at < 1_030 * NANOS));
        let tail: Vec<&str> = lines[lines.len() - 3..]
            .iter()
            .map(|l| l.text.as_str())
            .collect();
        assert!(
            tail.iter()
                .any(|t| t.contains("main.go") || t.contains("more")),
            "{tail:?}"
        );
    }

    #[test]
    fn stamps_as_the_kubelet_writes_them() {
        assert_eq!(
            stamp(1_795_394_727 * NANOS + 123_456_789, 9),
            "2026-11-23T00:45:27.123456789Z"
        );
        assert_eq!(
            stamp(1_795_394_727 * NANOS + 5, 9),
            "2026-11-23T00:45:27.000000005Z"
        );
        assert_eq!(
            stamp(1_795_394_727 * NANOS + 123_456_789, 3),
            "2026-11-23T00:45:27.123Z"
        );
    }
}
