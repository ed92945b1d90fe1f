//! The lease side of a store several worker processes share (see [`Leases`]).

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

/// A message for a run's driver, through the mailbox of a store several workers share (see
/// [`Leases::post`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Mail {
    /// The mailbox's id of the message; its reply is posted under it.
    pub id: i64,
    /// The run it is for.
    pub run: RunId,
    /// What to deliver, as the engine encoded it.
    pub body: Value,
}

/// A slot of a lane this worker holds (see [`Leases::acquire_slot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneSlot {
    /// The lane, as the caller named it.
    pub lane: String,
    /// Which of the lane's slots, from 0 to its width.
    pub slot: u32,
    /// This acquisition's own mark: a release frees the slot only while it still carries it,
    /// so releasing a slot that expired and was taken again since frees nothing.
    pub token: String,
}

/// Who drives which run when several worker processes share one store (PostgreSQL).
///
/// Every run is driven by at most one worker at a time, under a **lease**: a row naming the
/// worker and a **fencing epoch** that grows with every claim. A worker heartbeats all its
/// leases at once; one that stops (killed, frozen, cut off) lets them expire, and after the grace
/// period another worker **reclaims** its runs and replays them. The store itself fences: an
/// append carrying records of a run whose lease this worker no longer holds is refused
/// ([`StoreError::Fenced`]) in the same transaction that would have written it, so a worker that
/// wakes up after losing its leases cannot add a record behind the new owner's back.
///
/// Deliveries to a run another worker holds (a gate's answer, a signal, a cancel, a child's end)
/// go through the store's **mailbox**: the owner takes its mail, delivers it to its driver, and
/// posts the reply, which the sender waits for.
///
/// A run's first claim makes its lease; each reclaim after an expiry counts, and once a run
/// was reclaimed more than [`Leases::max_claim_attempts`] times, the task it was running fails
/// terminally with a `technical_error` that `catch:` may route (the reference's §12): a task
/// whose worker dies every time it runs must not take the whole fleet down with it.
///
/// **Lane slots** make a concurrency limit hold across workers (the reference's §11 lanes): a
/// lane of width `n` has `n` slots in the store, a task takes one before it runs
/// ([`Leases::acquire_slot`]) and gives it back when it ends ([`Leases::release_slot`]). A
/// held slot is renewed by the worker's heartbeat like its leases, so the slots of a worker
/// that died come free after the grace period. The store knows nothing of what a lane stands
/// for: its callers name it.
///
/// A store exposes it through [`Store::leases`](super::Store::leases).
pub trait Leases: Send + Sync {
    /// This worker's identity, as leases and re-execution records name it.
    fn worker(&self) -> &str;

    /// Claims `run` for this worker (see [`Claim`]).
    fn claim(&self, run: RunId) -> Result<Claim, StoreError>;

    /// Claims, in one go, every active run this worker may claim now: those without a lease,
    /// those whose lease expired and those whose lease it holds already. Each is granted as
    /// [`claim`](Self::claim) would grant it (another worker racing for the same run gets it
    /// or not, never both), and comes back with its reclaim count. A starting engine recovers
    /// these; the runs other workers hold stay with them, and cost a start nothing.
    fn claim_claimable(&self) -> Result<Vec<(RunId, u32)>, StoreError>;

    /// Claims up to `limit` runs whose leases expired, for this worker, with each its reclaim
    /// count including this claim; and adopts active runs that have no lease (their worker
    /// released it when it left), which is no reclaim.
    fn reclaim_expired(&self, limit: usize) -> Result<Vec<(RunId, u32)>, StoreError>;

    /// Runs whose leases this worker lost since the last call (a heartbeat found them taken,
    /// or none renewed them in time, or a commit was fenced): their drivers must stop. It must
    /// not wait on the database: the engine asks while other calls may be waiting on it.
    fn take_lost(&self) -> Vec<RunId>;

    /// Gives up the leases of runs this worker no longer drives (they ended, or the worker is
    /// shutting down), so other workers need not wait out the grace period.
    fn release(&self, runs: &[RunId]) -> Result<(), StoreError>;

    /// Gives up every lease this worker holds (it is leaving): other workers adopt its runs
    /// at once instead of after the grace period.
    fn release_all(&self) -> Result<(), StoreError>;

    /// How many reclaims a run survives; after the next one, the task it was running fails
    /// with a `technical_error` instead of running again.
    fn max_claim_attempts(&self) -> u32;

    /// Posts `body` for the driver of `run`, wherever it runs; returns the message's id.
    fn post(&self, run: RunId, body: Value) -> Result<i64, StoreError>;

    /// Takes the unread mail of runs this worker holds, oldest first, at most `limit`.
    fn take_mail(&self, limit: usize) -> Result<Vec<Mail>, StoreError>;

    /// Posts the reply to message `id`.
    fn reply(&self, id: i64, reply: Value) -> Result<(), StoreError>;

    /// The reply to message `id`, once there is one (and forgets the message).
    fn take_reply(&self, id: i64) -> Result<Option<Value>, StoreError>;

    /// Withdraws message `id` if its holder has not taken it yet: `true` when it was
    /// withdrawn (it will never be delivered), `false` when the holder took it already.
    fn withdraw(&self, id: i64) -> Result<bool, StoreError>;

    /// Takes a free slot of `lane` for this worker, of slots `0..width`: `None` while all of
    /// them are held (by any worker; the caller waits and asks again). A slot is free when
    /// nobody holds it or its holder stopped renewing it for the grace period. A width of 0
    /// counts as 1. Callers that ask with different widths share the slots below the smaller.
    fn acquire_slot(&self, lane: &str, width: u32) -> Result<Option<LaneSlot>, StoreError>;

    /// Gives `slot` back (nothing happens if it expired and was taken again since).
    fn release_slot(&self, slot: &LaneSlot) -> Result<(), StoreError>;
}
