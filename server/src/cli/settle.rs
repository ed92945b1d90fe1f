//! When a run a command drives has settled: nothing but people or far-off timers can move
//! it, and no task attempt this process runs for it (or for its parents) is still running.
//! A command that stopped sooner would kill, with its process, a task it had started.

use std::collections::HashSet;

use magrathea_core::{Engine, Entry, Record, RunError, RunId, RunStatus, RunView};

use super::pending::{SUB_RUN_DEPTH, waiting_through_sub_runs};
use super::store_wait::{Unread, store_failing};

/// The parents of `run`, nearest first (at most [`SUB_RUN_DEPTH`] of them), each with its
/// next seq now: the task attempts a parent journals from there on are this process's.
pub(super) fn parents_of(engine: &Engine, run: RunId) -> Vec<(RunId, u64)> {
    let mut parents = Vec::new();
    let mut child = run;
    while parents.len() < SUB_RUN_DEPTH {
        let Some(parent) = engine.summary(child).ok().and_then(|s| s.parent) else {
            break;
        };
        parents.push((parent, next_seq(engine, parent)));
        child = parent;
    }
    parents
}

/// Waits until each of `parents` settles in turn, nearest first. A sub-run's end (or its wait
/// on a gate) is news its parent acts on in this process's engine: a command that answered,
/// cancelled or resumed a sub-run, and stopped as soon as the sub-run settled, would leave the
/// parent in memory half-way (a task it had just started killed with the process), for
/// `magrathea resume` to carry on. A parent that cannot be read is not waited on.
pub(super) async fn parents_settled(engine: &Engine, parents: &[(RunId, u64)], since_ms: u64) {
    for &(parent, since) in parents {
        if settled_with_tasks_ended(engine, parent, since, since_ms)
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Waits until the run settles. A run paused while a task of it runs is settled once that
/// task has ended: a paused run starts nothing new, but its running task finishes and is
/// journaled, in this process, which must not stop (and so kill it) before. Only attempts
/// journaled from `since` on count: an attempt whose process died before is not running (a
/// paused run does not run it again until it is resumed).
pub(super) async fn settled_with_tasks_ended(
    engine: &Engine,
    run: RunId,
    since: u64,
    since_ms: u64,
) -> Result<RunView, RunError> {
    let due = std::time::Instant::now();
    let mut unread = Unread::default();
    loop {
        let view = tokio::select! {
            view = engine.wait_settled(run) => match unread.patience(view).await {
                Some(view) => view?,
                None => continue,
            },
            () = waiting_through_sub_runs(engine, run) => return engine.run(run),
            e = store_failing(engine) => return Err(RunError::Store(e)),
        };
        if view.status == RunStatus::Waiting && due.elapsed() < DUE_PATIENCE {
            // A run resumed after a gate's timeout or its deadline fell due reads WAITING
            // until the engine has acted on the due timer, a moment later: not settled yet.
            let Some(journal) = unread.patience(engine.journal(run)).await else {
                continue;
            };
            let journal = journal?;
            if has_due_timer(&journal, super::pending::now_ms()) || moved_on(&journal) {
                let _ = tokio::time::timeout(
                    std::time::Duration::from_millis(50),
                    engine.wait_until(run, |s| s != RunStatus::Waiting),
                )
                .await;
                continue;
            }
        }
        if view.status != RunStatus::Paused {
            return Ok(view);
        }
        // A paused run's sub-runs go on (they are paused separately): the attempts they run
        // in this process finish too, before it may stop.
        let Some(journal) = unread.patience(engine.journal(run)).await else {
            continue;
        };
        let journal = journal?;
        if !has_running_task(&journal, |e| e.seq >= since)
            && !sub_runs_running(engine, &journal, since_ms, SUB_RUN_DEPTH)
        {
            return Ok(view);
        }
        // The task's result is journaled without a status change: look again in a moment,
        // or at once if the run is resumed or cancelled meanwhile.
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            engine.wait_until(run, |s| s != RunStatus::Paused),
        )
        .await;
    }
}

/// The seq the run's next record gets (0 for a run with no journal).
pub(super) fn next_seq(engine: &Engine, run: RunId) -> u64 {
    engine
        .journal(run)
        .ok()
        .and_then(|j| j.last().map(|e| e.seq + 1))
        .unwrap_or(0)
}

/// How long a `WAITING` run with a due timer is given to act on it before it counts as
/// settled anyway. The engine acts within milliseconds when idle; a loaded machine (many
/// runs, a busy disk) took more than 2 s, and the command then reported a run waiting on a
/// gate that had already timed out. The wait ends as soon as the run moves.
const DUE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether the journal shows a run that a `WAITING` view calls waiting already past it: ended,
/// or with none of its gates open. The engine publishes a run's status once what it journaled
/// with it is durable, so a view read a moment before (a gate's timeout fired on resume, the
/// run ended in the same commit) can lag the journal read after it.
fn moved_on(journal: &[Entry]) -> bool {
    let mut open = HashSet::new();
    for e in journal {
        match &e.record {
            Record::GateOpened { step, .. } => {
                open.insert(*step);
            }
            // A gate's timeout is a timer on the gate's own step.
            Record::GateAnswered { step, .. }
            | Record::TimerFired { step }
            | Record::GateWithdrawn { step, .. } => {
                open.remove(step);
            }
            Record::Status { status, .. } if status.is_terminal() => return true,
            _ => {}
        }
    }
    open.is_empty()
}

/// Whether the journal holds a timer due by `now_ms` that has not fired (a gate's timeout
/// until the gate is answered, the run's deadline).
fn has_due_timer(journal: &[Entry], now_ms: u64) -> bool {
    super::pending::Pending::of(journal)
        .timers
        .values()
        .any(|&at| at <= now_ms)
}

/// Whether a sub-run the journal shows started and not finished (or one of theirs, down to
/// `depth` levels) has a task attempt journaled from `since_ms` on that has not ended.
fn sub_runs_running(engine: &Engine, journal: &[Entry], since_ms: u64, depth: usize) -> bool {
    if depth == 0 {
        return false;
    }
    let open = super::pending::Pending::of(journal).children;
    // A sub-run that ended or is blocked runs nothing (a blocked one's attempt may read as
    // started for good).
    let going = |child: RunId| {
        engine
            .status(child)
            .is_ok_and(|s| !s.is_terminal() && s != RunStatus::Blocked)
    };
    open.values().filter(|&&child| going(child)).any(|&child| {
        engine.journal(child).is_ok_and(|j| {
            has_running_task(&j, |e| e.at_ms >= since_ms)
                || sub_runs_running(engine, &j, since_ms, depth - 1)
        })
    })
}

/// Whether a task attempt journaled by an entry `mine` admits has started (or started again)
/// and not ended. A YAML run's timer, gate and sub-run steps are not attempts that run.
fn has_running_task(journal: &[Entry], mine: impl Fn(&Entry) -> bool) -> bool {
    let mut running = HashSet::new();
    let mut yaml = false;
    for e in journal {
        match &e.record {
            Record::Start(start) => yaml = start.frontend.as_str() == "yaml",
            Record::TaskStarted { task, .. } if yaml && magrathea_yaml::is_held_task(task) => {}
            Record::TaskStarted { step, .. } | Record::TaskRestarted { step, .. } if mine(e) => {
                running.insert(*step);
            }
            Record::TaskResult { step, .. } => {
                running.remove(step);
            }
            _ => {}
        }
    }
    !running.is_empty()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(seq: u64, record: serde_json::Value) -> Entry {
        let mut v = record;
        v["seq"] = json!(seq);
        v["createdAt"] = json!(0);
        serde_json::from_value(v).expect("an entry")
    }

    fn started(seq: u64, step: u32) -> Entry {
        entry(
            seq,
            json!({"type": "TaskStartedRecord", "step": step, "attempt": 1, "task": "t",
                   "name": "t", "inputHash": 0, "input": null}),
        )
    }

    /// Only the attempts this process journaled are its to wait for: one whose process died
    /// before (its start without a result, from before `since`) is not running.
    #[test]
    fn a_running_task_is_one_journaled_since_and_not_ended() {
        let result = |seq, step| {
            entry(
                seq,
                json!({"type": "TaskResultRecord", "step": step, "attempt": 1,
                       "outcome": "success", "output": null, "final": true}),
            )
        };
        let restarted = entry(
            3,
            json!({"type": "TaskRestartedRecord", "step": 1, "attempt": 1, "execution": 2,
                   "worker": "w"}),
        );
        let since = |since: u64| move |e: &Entry| e.seq >= since;
        let died = vec![started(1, 1)];
        assert!(has_running_task(&died, since(0)));
        assert!(
            !has_running_task(&died, since(2)),
            "an attempt of a process that died"
        );
        let again = vec![started(1, 1), restarted.clone()];
        assert!(
            has_running_task(&again, since(2)),
            "run again by this process"
        );
        let ended = vec![started(1, 1), restarted, result(4, 1)];
        assert!(!has_running_task(&ended, since(0)));
    }

    /// A `WAITING` view lags a journal that shows the run past its gates or ended: its
    /// gate's timeout fired (a timer on the gate's step), it was answered, or the run ended.
    #[test]
    fn a_run_whose_journal_shows_no_open_gate_or_its_end_has_moved_on() {
        let opened = |seq, step: u32| {
            entry(
                seq,
                json!({"type": "GateOpenedRecord", "step": step,
                       "gate": {"kind": "APPROVAL", "title": "Ship it?"}}),
            )
        };
        let fired = |seq, step: u32| entry(seq, json!({"type": "TimerFiredRecord", "step": step}));
        let waits = vec![opened(1, 2)];
        assert!(!moved_on(&waits), "its gate is open");
        assert!(moved_on(&[opened(1, 2), fired(2, 2)]), "the gate timed out");
        assert!(
            !moved_on(&[opened(1, 2), opened(2, 4), fired(3, 2)]),
            "another gate is still open"
        );
        assert!(
            !moved_on(&[opened(1, 2), fired(2, 3)]),
            "a timer of another step leaves the gate open"
        );
        let answered = entry(
            2,
            json!({"type": "GateAnsweredRecord", "step": 2,
                   "answer": {"outcome": "DECIDED", "value": {"approved": true}}}),
        );
        assert!(moved_on(&[opened(1, 2), answered]), "the gate was answered");
        let done = entry(3, json!({"type": "StatusRecord", "status": "DONE"}));
        assert!(moved_on(&[opened(1, 2), done]), "the run ended");
    }
}
