//! The identity gate: what the recorder reads from the upstream goes under
//! the identity of the cluster that answered it, never another's.
//!
//! Another cluster can come to answer behind the same upstream (a
//! `kubectl proxy` restarted on another context, a sim started again on the
//! same port). Its first answers must not be recorded under the old
//! identity: a relist of the new cluster would be stored as the old one's
//! objects Replaced and Deleted, and a watch resumed from the old
//! resourceVersion could stream the new cluster's events into the old
//! record. Reading the identity every couple of seconds alone leaves such a
//! window open, as the drivers reconnect on their own schedule.
//!
//! So a request is sent only while the identity is *confirmed*. Anything
//! that could mean another cluster answers — a request that failed, an
//! answer that is not a success, a watch the server ended — puts it in
//! *doubt*: every new request of the epoch waits while the supervisor reads
//! the identity again at once (and again soon while it cannot be read).
//! The same cluster confirms it and the requests go; another ends the epoch
//! before any of them is sent. A read confirms only if nothing put the gate
//! in doubt again while it was under way (it may have reached the cluster
//! of before), and it goes on a connection of its own, never a pooled one
//! (`Forwarder::identity_get`): a connection kept from before can still
//! reach the old cluster while every new request reaches the new one. An epoch starts in doubt: its first requests
//! wait for one read (after a database outage the cluster may have changed
//! too). Only a switch between the identity's read and a request's
//! connection, with nothing failing around it, could still slip through.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::sync::{watch, Notify};

/// One epoch's gate (see the module doc).
#[derive(Debug)]
pub struct IdentityGate {
    confirmed: watch::Sender<bool>,
    doubted: Notify,
    /// How many times doubt was raised: a read confirms only if none was
    /// since it began.
    doubts: AtomicU64,
}

impl IdentityGate {
    /// A gate in doubt, its supervisor due to read the identity.
    pub fn new() -> Arc<IdentityGate> {
        let gate = IdentityGate {
            confirmed: watch::Sender::new(false),
            doubted: Notify::new(),
            doubts: AtomicU64::new(0),
        };
        gate.doubted.notify_one();
        Arc::new(gate)
    }

    /// Something the upstream did could mean another cluster answers: new
    /// requests wait, and the supervisor reads the identity.
    /// Doubts raised while a read is under way ask for another read after
    /// it (one, however many).
    pub fn doubt(&self) {
        self.doubts.fetch_add(1, Ordering::SeqCst);
        self.confirmed.send_replace(false);
        self.doubted.notify_one();
    }

    /// Where the doubts stand: what a read that begins now passes to
    /// [`IdentityGate::confirm`].
    pub fn doubts(&self) -> u64 {
        self.doubts.load(Ordering::SeqCst)
    }

    /// The identity read, begun when the doubts stood at `read_since`, is
    /// the epoch's: requests go — unless doubt was raised since (that read
    /// may have reached what answered before; the next one decides).
    pub fn confirm(&self, read_since: u64) -> bool {
        self.confirmed.send_if_modified(|confirmed| {
            let still = self.doubts.load(Ordering::SeqCst) == read_since;
            let changed = still && !*confirmed;
            *confirmed |= still;
            changed
        });
        self.is_confirmed()
    }

    pub fn is_confirmed(&self) -> bool {
        *self.confirmed.borrow()
    }

    /// Returns once the identity is confirmed (at once if it is).
    pub async fn confirmed(&self) {
        let mut confirmed = self.confirmed.subscribe();
        // The sender lives as long as `self`: the wait cannot fail.
        let _ = confirmed.wait_for(|confirmed| *confirmed).await;
    }

    /// Returns when doubt is raised (the supervisor's side).
    pub async fn doubted(&self) {
        self.doubted.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_new_gate_is_in_doubt_and_holds_requests_until_confirmed() {
        let gate = IdentityGate::new();
        assert!(!gate.is_confirmed());
        // the supervisor is told at once
        tokio::time::timeout(Duration::from_millis(100), gate.doubted())
            .await
            .expect("a new gate asks for a read");
        let waiting = tokio::time::timeout(Duration::from_millis(50), gate.confirmed()).await;
        assert!(
            waiting.is_err(),
            "a request went before the identity was read"
        );
        assert!(gate.confirm(gate.doubts()));
        tokio::time::timeout(Duration::from_millis(100), gate.confirmed())
            .await
            .expect("confirmed");
    }

    #[tokio::test]
    async fn doubt_holds_requests_again_and_tells_the_supervisor_once() {
        let gate = IdentityGate::new();
        gate.doubted().await;
        assert!(gate.confirm(gate.doubts()));
        gate.doubt();
        gate.doubt();
        assert!(!gate.is_confirmed());
        tokio::time::timeout(Duration::from_millis(100), gate.doubted())
            .await
            .expect("the supervisor is told");
        // two doubts before a read ask for one read, not two
        let again = tokio::time::timeout(Duration::from_millis(50), gate.doubted()).await;
        assert!(again.is_err());
        let held = tokio::time::timeout(Duration::from_millis(50), gate.confirmed()).await;
        assert!(held.is_err());
    }

    #[tokio::test]
    async fn a_read_begun_before_a_doubt_does_not_confirm() {
        let gate = IdentityGate::new();
        gate.doubted().await;
        let since = gate.doubts();
        // doubt raised while the read was under way (its answer may be the
        // old cluster's, on a connection from before)
        gate.doubt();
        assert!(!gate.confirm(since), "a stale read confirmed the gate");
        tokio::time::timeout(Duration::from_millis(100), gate.doubted())
            .await
            .expect("another read is asked for");
        assert!(gate.confirm(gate.doubts()));
    }
}
