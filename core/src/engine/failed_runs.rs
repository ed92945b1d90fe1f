//! Runs whose commit failed (a full disk, an I/O error) come back once the store works again.
//!
//! A failed commit leaves nothing of itself in the store, and the driver that made it leaves
//! memory (fail-stop: its in-memory state is not trusted beyond the journal). The run is
//! handed here with the bytes of records its failed commit held. One task per engine probes
//! the store with an empty commit, with a backoff from [`FIRST_WAIT`] to [`LONGEST_WAIT`] (the
//! store reopens itself first, see [`JournalWriter::probe`](crate::JournalWriter::probe)), and
//! once a commit succeeds it recovers each run handed to it from its journal as soon as the
//! store has room for what that run's failed commit held ([`Store::has_room`]): a disk that
//! takes an empty commit may still refuse a task's result, and taking the run up then would
//! only run the task again (and count the execution against `max_claim_attempts`). A recovery
//! that fails again hands its run back. So a run in flight when the disk filled goes on by
//! itself once there is room, without a restart and however long that takes; the engine going
//! away ends the task.
//!
//! [`Store::has_room`]: crate::Store::has_room

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use super::EngineInner;
use crate::id::RunId;
use crate::writer::JournalHealth;

/// The first wait before the store is probed again.
const FIRST_WAIT: Duration = Duration::from_millis(200);
/// The longest wait between two probes.
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// The runs waiting for the store to work again.
#[derive(Debug, Default)]
pub(crate) struct FailedRuns {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Each run, with the bytes of records its failed commit held.
    runs: HashMap<RunId, u64>,
    /// Whether the task that probes and recovers runs.
    retrying: bool,
}

impl FailedRuns {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EngineInner {
    /// Recovers `run` from its journal once the store accepts commits again and has room for
    /// `room` bytes of records (what its failed commit held; see the module documentation).
    /// Call it from inside the engine's runtime.
    pub(crate) fn recover_when_healthy(self: &Arc<Self>, run: RunId, room: u64) {
        let start = {
            let mut state = self.failed_runs.state();
            let wanted = state.runs.entry(run).or_default();
            *wanted = (*wanted).max(room);
            !std::mem::replace(&mut state.retrying, true)
        };
        if start {
            tokio::spawn(retry(Arc::downgrade(self)));
        }
    }
}

async fn retry(engine: Weak<EngineInner>) {
    let mut wait = FIRST_WAIT;
    loop {
        tokio::time::sleep(wait).await;
        let Some(inner) = engine.upgrade() else {
            return;
        };
        if inner.writer.health() == JournalHealth::CommitFailed {
            let probing = inner.clone();
            // A commit blocks on the disk: keep it off the runtime's threads.
            let probed = tokio::task::spawn_blocking(move || probing.writer.probe()).await;
            if !matches!(probed, Ok(Ok(()))) {
                wait = (wait * 2).min(LONGEST_WAIT);
                continue;
            }
        }
        let waiting: Vec<(RunId, u64)> = std::mem::take(&mut inner.failed_runs.state().runs)
            .into_iter()
            .collect();
        // A check of room writes to the disk: off the runtime's threads too. The smallest
        // rooms first; once one is refused, larger ones are not asked for.
        let (checking, mut asked) = (inner.clone(), waiting.clone());
        asked.sort_unstable_by_key(|&(_, room)| room);
        let (ready, short) = tokio::task::spawn_blocking(move || {
            let (mut fits, mut full) = (0, false);
            asked.into_iter().partition::<Vec<_>, _>(|&(_, room)| {
                if room <= fits {
                    return true;
                }
                full = full || checking.store.has_room(room).is_err();
                if !full {
                    fits = room;
                }
                !full
            })
        })
        .await
        // A check that panicked (it should not) leaves every run waiting.
        .unwrap_or_else(|_| (Vec::new(), waiting));
        if !ready.is_empty() {
            tracing::info!(
                runs = ready.len(),
                waiting = short.len(),
                "the store commits again: recovering its runs"
            );
        }
        let mut state = inner.failed_runs.state();
        for (run, room) in short {
            let wanted = state.runs.entry(run).or_default();
            *wanted = (*wanted).max(room);
        }
        drop(state);
        for (run, _) in ready {
            inner.recover(run);
        }
        let mut state = inner.failed_runs.state();
        if state.runs.is_empty() {
            state.retrying = false;
            return;
        }
        // Runs handed back meanwhile (their recovery failed again) wait longer each time.
        drop(state);
        wait = (wait * 2).min(LONGEST_WAIT);
    }
}
