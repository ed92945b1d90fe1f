//! Waiting, before a command exits, for the sub-runs its runs asked to cancel.
//!
//! A run cancels a sub-run when it ends, when it stops waiting for it (a `workflow_task`
//! timeout) and when it is cancelled itself: it journals a `ChildCancelRequestedRecord`, and
//! then this process's engine delivers the cancellation, which the sub-run journals in turn
//! (and passes on to its own sub-runs). A command that exited as soon as its run settled could
//! leave the delivery undone: the sub-run stayed `RUNNING`, its running task killed with the
//! process, until `magrathea resume`.

use std::collections::HashSet;
use std::time::Duration;

use magrathea_core::{Engine, Record, RunId};

use super::output::errln;

/// How long a command waits for one sub-run's cancellation before it leaves it to `magrathea
/// resume` (a sub-run's cancellation normally takes a commit or two, plus stopping its task).
const CANCEL_PATIENCE: Duration = Duration::from_secs(10);

/// How deep sub-runs of sub-runs are followed.
const DEPTH: usize = 32;

/// Waits until every sub-run that one of `runs` asked to cancel has ended, then the sub-runs
/// those asked to cancel, down to [`DEPTH`]. Returns whether any such sub-run was found.
pub(crate) async fn ended(engine: &Engine, runs: &[RunId]) -> bool {
    let mut look_at: Vec<(RunId, usize)> = runs.iter().map(|&run| (run, 0)).collect();
    let mut seen: HashSet<RunId> = HashSet::new();
    while let Some((run, depth)) = look_at.pop() {
        for child in cancelled_by(engine, run) {
            if !seen.insert(child) {
                continue;
            }
            let waited = tokio::time::timeout(
                CANCEL_PATIENCE,
                engine.wait_until(child, |s| s.is_terminal()),
            )
            .await;
            match waited {
                Ok(Ok(_)) if depth < DEPTH => look_at.push((child, depth + 1)),
                Ok(_) => {}
                Err(_) => errln!(
                    "  sub-run {child} is not cancelled yet: `magrathea resume` carries its \
                     cancellation on"
                ),
            }
        }
    }
    !seen.is_empty()
}

/// The sub-runs `run` asked to cancel, in journal order; none when its journal cannot be read.
fn cancelled_by(engine: &Engine, run: RunId) -> Vec<RunId> {
    let Ok(journal) = engine.journal(run) else {
        return Vec::new();
    };
    journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::ChildCancelRequested { child_run_id, .. } => Some(*child_run_id),
            _ => None,
        })
        .collect()
}
