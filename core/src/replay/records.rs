//! What replay reads from records: the step a record belongs to, a step's identity, and the
//! values the code gets back on replay.

use serde_json::Value;

use crate::codec::input_hash;
use crate::id::RunId;
use crate::record::{Entry, Record, Step, StepKind};

/// The step a record belongs to, if any.
pub(crate) fn step_of(r: &Record) -> Option<Step> {
    match r {
        Record::StateEntered { step, .. }
        | Record::TaskStarted { step, .. }
        | Record::TaskRestarted { step, .. }
        | Record::TaskInterrupted { step, .. }
        | Record::TaskQueued { step, .. }
        | Record::TaskAdmitted { step, .. }
        | Record::TaskResult { step, .. }
        | Record::Var { step, .. }
        | Record::TimerSet { step, .. }
        | Record::TimerFired { step }
        | Record::GateOpened { step, .. }
        | Record::GateAnswered { step, .. }
        | Record::SignalAwaited { step, .. }
        | Record::SignalDelivered { step, .. }
        | Record::ChildStarted { step, .. }
        | Record::ChildFinished { step, .. }
        | Record::ChildCancelRequested { step, .. }
        | Record::GateWithdrawn { step, .. }
        | Record::SideEffect { step, .. }
        | Record::Ignored { step, .. } => Some(*step),
        Record::SignalReceived { step, .. } => *step,
        _ => None,
    }
}

/// The kind, name and (where journaled) input hash of a step's first record.
pub(crate) fn identity(r: &Record) -> Option<(StepKind, &str, Option<u64>)> {
    Some(match r {
        Record::TaskStarted {
            name, input_hash, ..
        } => (StepKind::Task, name.as_str(), Some(*input_hash)),
        Record::TimerSet { purpose, .. } => (StepKind::Timer, purpose.as_str(), None),
        Record::GateOpened { gate, .. } => (
            StepKind::Gate,
            gate.title.as_str(),
            Some(input_hash(&super::gate::gate_identity(gate))),
        ),
        Record::SignalAwaited { name, .. } => (StepKind::Signal, name.as_str(), None),
        Record::ChildStarted {
            workflow,
            input_hash,
            ..
        } => (StepKind::Child, workflow.as_str(), Some(*input_hash)),
        Record::SideEffect { name, .. } => (StepKind::SideEffect, name.as_str(), None),
        Record::StateEntered { state, .. } => (StepKind::State, state.as_str(), None),
        Record::Var { key, value, .. } => (StepKind::Var, key.as_str(), Some(input_hash(value))),
        _ => return None,
    })
}

/// The side-effect name under which a patch marker is journaled.
pub(crate) fn patch_marker(id: &str) -> String {
    format!("patch:{id}")
}

/// What the journal recorded for a step, as the code needs it while replaying: values that
/// were decided when the step was first made (a timer's due time, a child's run id, a side
/// effect's value) and must be the same again.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Replayed<'a> {
    /// A timer due at this time.
    TimerAt(u64),
    /// A child run with this id.
    Child(RunId),
    /// A recorded value (side effect, `now()`, a patch marker).
    Value { name: &'a str, value: &'a Value },
    /// A task step.
    Task,
    /// Another kind of step.
    Other,
}

impl<'a> Replayed<'a> {
    pub(crate) fn of(record: &'a Record) -> Self {
        match record {
            Record::TimerSet { fire_at_ms, .. } => Replayed::TimerAt(*fire_at_ms),
            Record::ChildStarted { child_run_id, .. } => Replayed::Child(*child_run_id),
            Record::SideEffect { name, value, .. } => Replayed::Value { name, value },
            Record::TaskStarted { .. } => Replayed::Task,
            _ => Replayed::Other,
        }
    }
}

/// The children a journal started that it does not know to have ended or been asked to cancel:
/// step and child run id, in step order. (For a run whose code cannot be replayed.)
pub(crate) fn unfinished_children(entries: &[Entry]) -> Vec<(Step, RunId)> {
    let mut children = std::collections::BTreeMap::new();
    for e in entries {
        match &e.record {
            Record::ChildStarted {
                step, child_run_id, ..
            } => {
                children.insert(*step, *child_run_id);
            }
            Record::ChildFinished { step, .. } | Record::ChildCancelRequested { step, .. } => {
                children.remove(step);
            }
            _ => {}
        }
    }
    children.into_iter().collect()
}

/// The task attempts a journal shows started and not ended (no result for that attempt), in
/// step order: what a cancel of a run that cannot replay (a blocked run) ends by its records.
pub(crate) fn unfinished_attempts(entries: &[Entry]) -> Vec<(Step, u32)> {
    let mut attempts = std::collections::BTreeMap::new();
    for e in entries {
        match &e.record {
            Record::TaskStarted { step, attempt, .. } => {
                attempts.insert(*step, *attempt);
            }
            Record::TaskResult { step, attempt, .. } if attempts.get(step) == Some(attempt) => {
                attempts.remove(step);
            }
            _ => {}
        }
    }
    attempts.into_iter().collect()
}
