//! Who drives which run when several worker processes share one store (PostgreSQL).
//!
//! Every run is driven by at most one worker at a time, under a **lease**: a row naming the
//! worker and a **fencing epoch** that grows with every claim. A worker heartbeats all its
//! leases at once; one that stops (killed, frozen, cut off) lets them expire, and after the grace
//! period another worker **reclaims** its runs and replays them. The store itself fences: an
//! append carrying records of a run whose lease this worker no longer holds is refused
//! ([`StoreError::Fenced`]) in the same transaction that would have written it, so a worker that
//! wakes up after losing its leases cannot add a record behind the new owner's back.
//!
//! Deliveries to a run another worker holds (a gate's answer, a signal, a cancel, a child's end)
//! go through the store's **mailbox**: the owner takes its mail, delivers it to its driver, and
//! posts the reply, which the sender waits for.
//!
//! A run's first claim makes its lease; each reclaim after an expiry counts, and a run
//! reclaimed more than [`Leases::max_claim_attempts`] times fails with a `technical_error`
//! (the reference's §12): a run whose worker dies every time it drives it must not take the
//! whole fleet down with it.

use serde_json::Value;

use crate::error::StoreError;
use crate::id::RunId;

/// The outcome of [`Leases::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This worker holds the lease now (it held it already, or the run had none, or its lease
    /// had expired): it drives the run. `reclaims` counts the claims after an expiry so far.
    Granted {
        /// Claims of this run after its lease expired, this one included.
        reclaims: u32,
    },
    /// Another worker holds a live lease: deliver through the mailbox.
    Elsewhere,
}

/// A message for a run's driver, through the mailbox this module describes.
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    /// The mailbox's id of the message; its reply is posted under it.
    pub id: i64,
    /// The run it is for.
    pub run: RunId,
    /// What to deliver, as the engine encoded it.
    pub body: Value,
}

/// The lease side of a store several workers share ([`Store::leases`](super::Store::leases)).
pub trait Leases: Send + Sync {
    /// This worker's identity, as leases and re-execution records name it.
    fn worker(&self) -> &str;

    /// Claims `run` for this worker (see [`Claim`]).
    fn claim(&self, run: RunId) -> Result<Claim, StoreError>;

    /// Claims up to `limit` runs whose leases expired, for this worker, with each its reclaim
    /// count including this claim; and adopts active runs that have no lease (their worker
    /// released it when it left), which is no reclaim.
    fn reclaim_expired(&self, limit: usize) -> Result<Vec<(RunId, u32)>, StoreError>;

    /// Runs whose leases this worker lost since the last call (a heartbeat found them taken,
    /// or a commit was fenced): their drivers must stop.
    fn take_lost(&self) -> Vec<RunId>;

    /// Gives up the leases of runs this worker no longer drives (they ended, or the worker is
    /// shutting down), so other workers need not wait out the grace period.
    fn release(&self, runs: &[RunId]) -> Result<(), StoreError>;

    /// Gives up every lease this worker holds (it is leaving): other workers adopt its runs
    /// at once instead of after the grace period.
    fn release_all(&self) -> Result<(), StoreError>;

    /// How many reclaims a run survives; the next one fails it.
    fn max_claim_attempts(&self) -> u32;

    /// Posts `body` for the driver of `run`, wherever it runs; returns the message's id.
    fn post(&self, run: RunId, body: Value) -> Result<i64, StoreError>;

    /// Takes the unread mail of runs this worker holds, oldest first, at most `limit`.
    fn take_mail(&self, limit: usize) -> Result<Vec<Mail>, StoreError>;

    /// Posts the reply to message `id`.
    fn reply(&self, id: i64, reply: Value) -> Result<(), StoreError>;

    /// The reply to message `id`, once there is one (and forgets the message).
    fn take_reply(&self, id: i64) -> Result<Option<Value>, StoreError>;
}
