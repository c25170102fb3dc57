//! Where the recorder's writes go: the [`RecordStore`] trait, which the
//! history database implements (and the tests, in memory). The recorder
//! needs only two things of it: append writes in order, all or nothing, and
//! say how a resource was last recorded, to resume from there.

use std::future::Future;

use deltascope_history::{ClusterId, RecordedState, Write};

/// The history database as the recorder sees it.
///
/// Both calls may fail with [`StoreUnavailable`]: the recorder then stops
/// its informers, says so in its status, retries with backoff and, once the
/// database answers again, restarts every resource from what
/// [`RecordStore::recorded_state`] says was recorded.
pub trait RecordStore: Send + Sync + 'static {
    /// Appends `writes` for `cluster` in the order given, all or nothing:
    /// `Ok` means every one is stored, `Err` that none is.
    fn write(
        &self,
        cluster: &ClusterId,
        writes: Vec<Write>,
    ) -> impl Future<Output = Result<(), StoreUnavailable>> + Send;

    /// The resource (named as in `data-resource`: `pods`,
    /// `deployments.apps`) as last recorded for `cluster`, every write so
    /// far applied; `None` when nothing was ever recorded for it.
    fn recorded_state(
        &self,
        cluster: &ClusterId,
        resource: &str,
    ) -> impl Future<Output = Result<Option<RecordedState>, StoreUnavailable>> + Send;
}

/// The database could not be written or read; the reason, worded for the
/// command line and the page's status bar.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreUnavailable(pub String);
