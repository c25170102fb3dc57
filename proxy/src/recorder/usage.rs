//! The usage sampler: resource usage (`kubectl top`'s numbers) kept over
//! time. One task per recorder epoch, started while discovery lists
//! `metrics.k8s.io`, asks the metrics API through the recorder's upstream
//! (the drivers' path, no session) for every pod's and every node's usage —
//! `/apis/metrics.k8s.io/v1beta1/pods` and `…/nodes`, each a whole list —
//! once per metrics window, and hands a window to the writer's queue as
//! [`Write::Usage`] when at least `--record-usage` has passed since the
//! last window it stored of that resource. A pod's sample carries its
//! controller and top workload from the recorder's own informers
//! ([`super::owners`]), so an owner's pods can be summed later: a window of
//! pods waits (up to a minute from the epoch's start) until those
//! informers have listed, so the first windows are summed too.
//!
//! When to ask: after an answer whose newest `timestamp` is T and `window`
//! W, at about T + W + 1 s (the next window is measured by then) — or, when
//! that window would not be stored yet, at the first window that would be
//! — never sooner than 2 s after the last ask. A metrics API that answers
//! 404 or 503 is not there: asked again every minute, nothing stored, said
//! once in the log (and once more should it come back and go again).
//!
//! Memory: one answer's body (a list of 100k pods is about 30 MB of JSON)
//! and what it measured, handed to the writer a few hundred samples at a
//! time (each counted against the queue's bytes like a delta).

use std::sync::Arc;
use std::time::Duration;

use deltascope_history::{UsageRecord, UsageResource, UsageSample, Write};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::clock::Clock;
use super::identity_gate::IdentityGate;
use super::owners::SharedOwners;
use super::upstream::{get_document_up_to, GetError, Upstream};
use super::usage_list::{parse_metrics_list, MetricsWindow, NotAList};
use super::writer::{Msg, Queue};

/// The metrics API's group, as `/apis` lists it.
pub const METRICS_GROUP: &str = "metrics.k8s.io";
/// Asked again this long after it answered 404 or 503.
const ABSENT_RETRY: Duration = Duration::from_secs(60);
/// Asked again this long after any other failure.
const FAILED_RETRY: Duration = Duration::from_secs(15);
/// Two asks of one resource are at least this far apart.
const MIN_ASK_GAP: Duration = Duration::from_millis(2_000);
/// The largest metrics list read (100k pods with a few containers each
/// are about 30 MB).
const MAX_METRICS_LIST: usize = 512 * 1024 * 1024;
/// Samples in one write handed to the writer.
pub const USAGE_CHUNK: usize = 500;
/// How long a window of pods waits, at most, for the recorder's pods,
/// ReplicaSets and Jobs to be listed (their owners known) before it is
/// stored with the owners known so far: a resource the recorder cannot
/// list (a 403) must not hold the usage back for good.
const OWNERS_WAIT: Duration = Duration::from_secs(60);
/// How often the owners are looked at while a window waits.
const OWNERS_POLL: Duration = Duration::from_millis(100);

/// What a sampler needs.
pub struct Sampler {
    pub upstream: Upstream,
    /// No ask is sent while the cluster's identity is in doubt; a failed
    /// one puts it in doubt.
    pub identity: Arc<IdentityGate>,
    pub queue: Queue,
    pub clock: Clock,
    /// `--record-usage`: a window is stored at most this often.
    pub every: Duration,
    pub owners: SharedOwners,
    pub stop: CancellationToken,
    pub abort: CancellationToken,
    /// When the sampler was made (its epoch began).
    pub started: Instant,
}

/// The sampler ends (stopped, aborted, or the writer is gone).
struct Ended;

/// Why an ask brought no window.
#[derive(Debug, thiserror::Error)]
enum SampleError {
    #[error("no metrics API is served ({0})")]
    Absent(GetError),
    #[error(transparent)]
    Get(GetError),
    #[error("GET {path}: {source}")]
    NotAList { path: String, source: NotAList },
}

/// One resource's schedule.
struct Track {
    resource: UsageResource,
    next: Instant,
    /// The newest window seen, and the last one stored (ms).
    seen_ms: Option<i64>,
    stored_ms: Option<i64>,
    /// A failure said in the log and not over yet.
    failing: bool,
}

impl Sampler {
    pub async fn run(self) {
        let now = Instant::now();
        let mut tracks = [UsageResource::Pods, UsageResource::Nodes].map(|resource| Track {
            resource,
            next: now,
            seen_ms: None,
            stored_ms: None,
            failing: false,
        });
        loop {
            let Some(track) = tracks.iter_mut().min_by_key(|t| t.next) else {
                return;
            };
            tokio::select! {
                _ = self.abort.cancelled() => return,
                _ = self.stop.cancelled() => return,
                _ = tokio::time::sleep_until(track.next) => {}
            }
            if self.sample(track).await.is_err() {
                return;
            }
        }
    }

    /// Asks for `track`'s list, stores its window when due, and sets when
    /// to ask next.
    async fn sample(&self, track: &mut Track) -> Result<(), Ended> {
        let asked = Instant::now();
        let path = format!("/apis/{METRICS_GROUP}/v1beta1/{}", track.resource.as_str());
        let answer = tokio::select! {
            _ = self.abort.cancelled() => return Err(Ended),
            _ = self.stop.cancelled() => return Err(Ended),
            answer = async {
                self.identity.confirmed().await;
                get_document_up_to(&self.upstream, &path, MAX_METRICS_LIST).await
            } => answer,
        };
        if answer.is_err() {
            self.identity.doubt();
        }
        let window = answer
            .map_err(|error| match &error {
                GetError::Status {
                    status: 404 | 503, ..
                } => SampleError::Absent(error),
                _ => SampleError::Get(error),
            })
            .and_then(|body| {
                parse_metrics_list(&body).map_err(|source| SampleError::NotAList {
                    path: path.clone(),
                    source,
                })
            });
        let window = match window {
            Ok(window) => window,
            Err(error) => {
                let retry = match error {
                    SampleError::Absent(_) => ABSENT_RETRY,
                    _ => FAILED_RETRY,
                };
                if !std::mem::replace(&mut track.failing, true) {
                    tracing::info!(resource = track.resource.as_str(), %error, retry_secs = retry.as_secs(),
                        "recorder: resource usage is not recorded; asking again");
                }
                track.next = asked + retry;
                return Ok(());
            }
        };
        if std::mem::replace(&mut track.failing, false) {
            tracing::info!(
                resource = track.resource.as_str(),
                "recorder: the metrics API answers; recording resource usage"
            );
        }
        if window.unreadable > 0 {
            tracing::debug!(
                resource = track.resource.as_str(),
                unreadable = window.unreadable,
                "recorder: metrics left out (a quantity or time not read)"
            );
        }
        let (Some(at_ms), window_ms) = (window.at_ms, window.window_ms) else {
            // nothing measured (no Running pod): the window is not known
            track.next = asked + FAILED_RETRY;
            return Ok(());
        };
        let window_ms = window_ms.unwrap_or(0).max(0);
        let new = track.seen_ms.is_none_or(|seen| at_ms > seen);
        if new && self.due(track, at_ms, window_ms) {
            track.stored_ms = Some(at_ms);
            self.store(track.resource, at_ms, window_ms, window).await?;
        }
        if new {
            track.seen_ms = Some(at_ms);
        }
        track.next = asked + self.wait_after(track, (at_ms, window_ms), new);
        Ok(())
    }

    fn every_ms(&self) -> i64 {
        i64::try_from(self.every.as_millis()).unwrap_or(i64::MAX)
    }

    /// Whether the window at `at_ms` is stored: `--record-usage` since the
    /// last stored (a tenth of a window early still counts: metrics-server's
    /// timestamps drift a little from window to window).
    fn due(&self, track: &Track, at_ms: i64, window_ms: i64) -> bool {
        track
            .stored_ms
            .is_none_or(|stored| at_ms - stored >= self.every_ms() - window_ms / 10)
    }

    /// How long after this ask the next one goes out.
    fn wait_after(&self, track: &Track, (at_ms, window_ms): (i64, i64), new: bool) -> Duration {
        let window = window_ms.max(1_000);
        let wait_ms = if !new {
            // the same window again: the next is not measured yet
            window / 4
        } else {
            // the first window after this one that will be stored
            let due_at = track.stored_ms.unwrap_or(at_ms) + self.every_ms() - window / 10;
            let windows = ((due_at - at_ms) + window - 1).div_euclid(window).max(1);
            let next_window = at_ms.saturating_add(windows.saturating_mul(window));
            next_window + 1_000 - self.clock.wall_now()
        };
        let most = self.every.max(Duration::from_millis(window as u64)) + Duration::from_secs(1);
        Duration::from_millis(wait_ms.max(0) as u64).clamp(MIN_ASK_GAP, most.max(MIN_ASK_GAP))
    }

    /// Hands `window`'s samples to the writer, [`USAGE_CHUNK`] at a time;
    /// a window of pods once their owners are known (or [`OWNERS_WAIT`]
    /// after the sampler started).
    async fn store(
        &self,
        resource: UsageResource,
        at_ms: i64,
        window_ms: i64,
        window: MetricsWindow,
    ) -> Result<(), Ended> {
        if resource == UsageResource::Pods {
            while !self.owners.borrow().ready() && self.started.elapsed() < OWNERS_WAIT {
                tokio::select! {
                    _ = self.abort.cancelled() => return Err(Ended),
                    _ = self.stop.cancelled() => return Err(Ended),
                    _ = tokio::time::sleep(OWNERS_POLL) => {}
                }
            }
        }
        let mut objects = window.objects.into_iter().peekable();
        while objects.peek().is_some() {
            let samples: Vec<UsageSample> = {
                let owners = self.owners.borrow();
                objects
                    .by_ref()
                    .take(USAGE_CHUNK)
                    .map(|object| {
                        let (controller, workload) = match resource {
                            UsageResource::Pods => owners.of_pod(&object.namespace, &object.name),
                            UsageResource::Nodes => (Default::default(), Default::default()),
                        };
                        UsageSample {
                            namespace: object.namespace,
                            name: object.name,
                            cpu_nanocores: object.cpu_nanocores,
                            memory_bytes: object.memory_bytes,
                            containers: object.containers,
                            controller: controller.to_string(),
                            workload: workload.to_string(),
                        }
                    })
                    .collect()
            };
            let write = Write::Usage(UsageRecord {
                resource,
                at_ms,
                window_ms,
                samples,
            });
            tokio::select! {
                _ = self.abort.cancelled() => return Err(Ended),
                sent = self.queue.send(Msg::Write(write)) => sent.map_err(|_| Ended)?,
            }
        }
        Ok(())
    }
}
