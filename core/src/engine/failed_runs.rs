//! Runs whose commit failed (a full disk, an I/O error) come back once the store works again.
//!
//! A failed commit leaves nothing of itself in the store, and the driver that made it leaves
//! memory (fail-stop: its in-memory state is not trusted beyond the journal). The run is
//! handed here. One task per engine probes the store ([`Store::probe`](crate::Store::probe):
//! an empty commit, and room for one as large as the commit that failed, so that a run whose
//! result cannot fit yet is not taken up only to run its task again), with a backoff from
//! [`FIRST_WAIT`] to [`LONGEST_WAIT`] (the store reopens itself first, see
//! [`JournalWriter::probe`](crate::JournalWriter::probe)), and once a commit succeeds it
//! recovers every run handed to it from its journal. A recovery that fails again hands its run
//! back. So a run in flight when the disk filled goes on by itself once there is room, without
//! a restart and however long that takes; the engine going away ends the task.

use std::collections::HashSet;
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
    runs: HashSet<RunId>,
    /// Whether the task that probes and recovers runs.
    retrying: bool,
}

impl FailedRuns {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl EngineInner {
    /// Recovers `run` from its journal once the store accepts commits again (see the module
    /// documentation). Call it from inside the engine's runtime.
    pub(crate) fn recover_when_healthy(self: &Arc<Self>, run: RunId) {
        let start = {
            let mut state = self.failed_runs.state();
            state.runs.insert(run);
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
        let runs: Vec<RunId> = std::mem::take(&mut inner.failed_runs.state().runs)
            .into_iter()
            .collect();
        tracing::info!(
            runs = runs.len(),
            "the store commits again: recovering its runs"
        );
        for run in runs {
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
