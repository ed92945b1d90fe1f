//! Following a run's journal live: what the SSE and WebSocket routes stream.
//!
//! A follower reads the journal from the store by seq range, [`CHUNK`] records and at most
//! [`CHUNK_BYTES`] at a time, and reads the next chunk only once the previous one went into its
//! client's channel: a client that does not read stops its follower at a full channel, so it
//! costs at most one chunk and one channel of records ([`CHANNEL`]), however long the run's
//! journal and however large its records (a chunk holds one record whatever its size). How many followers one token
//! subject may hold at once is bounded by [`Followers`].

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Arc, Mutex, PoisonError};

use magrathea_core::{Engine, Entry, Record, RunId};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;

/// How often a follower re-reads the journal when nothing was broadcast.
const RESYNC: std::time::Duration = std::time::Duration::from_secs(2);
/// The same on a store other workers share, where the run's driver may be elsewhere.
const SHARED_RESYNC: std::time::Duration = std::time::Duration::from_millis(250);

/// Records a follower reads from the store at once.
pub const CHUNK: usize = 256;

/// Bytes of encoded records a follower reads from the store at once.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Records a follower's channel holds before the follower waits for its client. Few: the
/// records may be a task's output of several MiB each.
pub const CHANNEL: usize = 8;

/// Concurrent followers (SSE streams, WebSocket subscriptions and waiting reads of a run
/// together) one token subject of one tenant may hold, unless [`ServeConfig`](crate::ServeConfig) says otherwise.
pub const DEFAULT_MAX_FOLLOWERS_PER_SUBJECT: usize = 128;

/// Active subscriptions one WebSocket connection may hold, unless
/// [`ServeConfig`](crate::ServeConfig) says otherwise.
pub const DEFAULT_MAX_SUBSCRIPTIONS_PER_CONNECTION: usize = 32;

/// The followers each token subject holds, against a cap; the WebSocket sessions it holds,
/// against the same cap, and how long one may idle; and the cap on one WebSocket
/// connection's subscriptions.
#[derive(Debug)]
pub struct Followers {
    max_per_subject: usize,
    max_per_connection: usize,
    held: Mutex<HashMap<(String, String), usize>>,
    sessions: Mutex<HashMap<(String, String), usize>>,
    session_idle: std::time::Duration,
}

/// One follower's (or WebSocket session's) place under the cap, given back when dropped.
#[derive(Debug)]
pub(crate) struct FollowerSlot {
    followers: Arc<Followers>,
    key: (String, String),
    session: bool,
}

impl Followers {
    /// A registry allowing `max_per_subject` followers and as many WebSocket sessions per
    /// subject, and `max_per_connection` subscriptions per WebSocket connection; a session
    /// with no subscription may idle for the server's default idle timeout.
    pub fn new(max_per_subject: usize, max_per_connection: usize) -> Self {
        Self {
            max_per_subject,
            max_per_connection,
            held: Mutex::new(HashMap::new()),
            sessions: Mutex::new(HashMap::new()),
            session_idle: super::connections::DEFAULT_IDLE_TIMEOUT,
        }
    }

    /// How long a WebSocket session that follows nothing may go without a message from its
    /// client before the server closes it (the connections' idle timeout).
    #[must_use]
    pub fn session_idle(mut self, idle: std::time::Duration) -> Self {
        self.session_idle = idle;
        self
    }

    /// A place for one more follower of `subject` in `tenant`, or `None` at the cap.
    pub(crate) fn acquire(self: &Arc<Self>, tenant: &str, subject: &str) -> Option<FollowerSlot> {
        self.take(tenant, subject, false)
    }

    /// A place for one more WebSocket session of `subject` in `tenant`, or `None` at the cap:
    /// without it, one tenant's sessions (which no idle timeout of HTTP closes) could take
    /// every connection the server serves.
    pub(crate) fn acquire_session(
        self: &Arc<Self>,
        tenant: &str,
        subject: &str,
    ) -> Option<FollowerSlot> {
        self.take(tenant, subject, true)
    }

    fn take(self: &Arc<Self>, tenant: &str, subject: &str, session: bool) -> Option<FollowerSlot> {
        let key = (tenant.to_owned(), subject.to_owned());
        let map = if session { &self.sessions } else { &self.held };
        let mut held = map.lock().unwrap_or_else(PoisonError::into_inner);
        let count = held.entry(key.clone()).or_default();
        if *count >= self.max_per_subject {
            return None;
        }
        *count += 1;
        Some(FollowerSlot {
            followers: self.clone(),
            key,
            session,
        })
    }

    /// How long a WebSocket session that follows nothing may idle.
    pub(crate) fn idle(&self) -> std::time::Duration {
        self.session_idle
    }

    /// The cap per subject.
    pub fn max_per_subject(&self) -> usize {
        self.max_per_subject
    }

    /// The cap per WebSocket connection.
    pub fn max_per_connection(&self) -> usize {
        self.max_per_connection
    }
}

impl Drop for FollowerSlot {
    fn drop(&mut self) {
        let map = if self.session {
            &self.followers.sessions
        } else {
            &self.followers.held
        };
        let mut held = map.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = held.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                held.remove(&self.key);
            }
        }
    }
}

/// The seq to follow `run` from for a client that holds its records up to `last` (an SSE
/// stream's `Last-Event-ID`, a subscription's `lastEventId`): the one after it, or 0. A seq the
/// run's journal does not hold was never sent (another run's, a client's own count): resuming
/// after it would send nothing, perhaps never the run's end, so it is 400 `MAG-RD001`.
/// `named` is how the client gave `last`, for the error.
pub(crate) fn resume_after(
    engine: &Engine,
    run: RunId,
    last: Option<u64>,
    named: &str,
) -> Result<u64, super::error::ApiError> {
    let Some(seq) = last else {
        return Ok(0);
    };
    if engine.journal_page(run, seq, 1, 1)?.is_empty() {
        // An ended run will never have it; a running one may, but has not sent it.
        let ended = engine.summary(run).is_ok_and(|s| s.status.is_terminal());
        let when = if ended { ", and it has ended" } else { " yet" };
        return Err(super::error::ApiError::bad_request(
            "MAG-RD001",
            format!(
                "{named} `{seq}` is not the seq of a record of run {run}: it has no record \
                 {seq}{when}; follow the run from its start instead"
            ),
        ));
    }
    Ok(seq.saturating_add(1))
}

/// The run's records from seq `from` on, in `seq` order, each exactly once: first those
/// already journaled, then new ones as they commit. The channel closes once every record
/// journaled so far is sent of a run that has ended (its terminal `StatusRecord` and what was
/// journaled after it by then: a late answer's `IgnoredRecord`), when the engine closes, or
/// (the task stops and gives `slot` back) when the receiver is dropped.
pub(crate) fn follow(
    engine: Engine,
    run: RunId,
    from: u64,
    slot: FollowerSlot,
) -> mpsc::Receiver<Entry> {
    let (tx, rx) = mpsc::channel(CHANNEL);
    tokio::spawn(async move {
        let _slot = slot;
        // Subscribing before reading the journal: a record committed after a read is
        // announced on a channel we already listen to, so it is read by the next catch-up.
        // The journal broadcast carries only records appended while someone listened, so a
        // batch appended before we subscribed and committed after our read is never
        // broadcast: status changes and a slow tick re-read the journal to catch up.
        let mut updates = engine.subscribe_journal();
        let mut statuses = engine.subscribe_status();
        // On a shared store another worker may drive the run, unannounced here: re-read often.
        let mut tick = tokio::time::interval(if engine.is_shared_store() {
            SHARED_RESYNC
        } else {
            RESYNC
        });
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut next = from;
        let mut ended = false;
        loop {
            if catch_up(&engine, run, &tx, &mut next, &mut ended)
                .await
                .is_break()
            {
                return;
            }
            // Wait for a sign that the run has new records; other runs' news is skipped
            // without a read. A lagging receiver missed news: catching up reads it anyway.
            loop {
                let ours = tokio::select! {
                    update = updates.recv() => match update {
                        Ok(u) => u.run_id == run && u.entries.last().is_none_or(|e| e.seq >= next),
                        Err(RecvError::Lagged(_)) => true,
                        Err(RecvError::Closed) => return,
                    },
                    status = statuses.recv() => match status {
                        Ok(u) => u.run_id == run,
                        Err(RecvError::Lagged(_)) => true,
                        Err(RecvError::Closed) => return,
                    },
                    _ = tick.tick() => true,
                    () = tx.closed() => return,
                };
                if ours {
                    break;
                }
            }
        }
    });
    rx
}

/// Sends every record from `next` on, reading one chunk at a time and each only after the last
/// one was taken by the channel; breaks when the receiver is gone, or when the run has ended
/// and every record it has is sent.
async fn catch_up(
    engine: &Engine,
    run: RunId,
    tx: &mpsc::Sender<Entry>,
    next: &mut u64,
    ended: &mut bool,
) -> ControlFlow<()> {
    loop {
        let chunk = match engine.journal_page(run, *next, CHUNK, CHUNK_BYTES) {
            Ok(chunk) => chunk,
            Err(e) => {
                // Retried at the next sign of news or tick; the client sees no gap.
                tracing::warn!(%run, error = %e, "follower: journal read failed");
                return ControlFlow::Continue(());
            }
        };
        // Only an empty chunk is the end: a short one may be short of bytes. A run that has
        // ended gets no more records worth waiting for (its terminal record and those after
        // it were sent, or came before `from`).
        if chunk.is_empty() {
            let ended = *ended || engine.status(run).is_ok_and(|s| s.is_terminal());
            return if ended {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            };
        }
        for entry in chunk {
            if entry.seq < *next {
                continue;
            }
            *next = entry.seq + 1;
            *ended |= is_end(&entry);
            // Records journaled after the terminal one (late answers, ignored) go too: the
            // next read, empty, ends the stream.
            if tx.send(entry).await.is_err() {
                return ControlFlow::Break(());
            }
        }
    }
}

/// Whether the entry is the run's terminal `StatusRecord`.
pub(crate) fn is_end(entry: &Entry) -> bool {
    matches!(&entry.record, Record::Status { status, .. } if status.is_terminal())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_holds_at_most_its_cap_and_gets_places_back() {
        let followers = Arc::new(Followers::new(2, 1));
        let a = followers.acquire("acme", "alice").unwrap();
        let _b = followers.acquire("acme", "alice").unwrap();
        assert!(followers.acquire("acme", "alice").is_none(), "at the cap");
        assert!(
            followers.acquire("acme", "bob").is_some(),
            "another subject"
        );
        assert!(
            followers.acquire("globex", "alice").is_some(),
            "another tenant"
        );
        drop(a);
        assert!(
            followers.acquire("acme", "alice").is_some(),
            "a place given back"
        );
    }
}
