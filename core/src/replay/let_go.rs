//! Letting go of steps: the children this run asks to cancel (because it was cancelled, ended,
//! or dropped a child step's future) and the gates it withdraws (their futures dropped).

use super::{Actions, ChildCancel, Effect, Machine, RunState};
use crate::id::RunId;
use crate::record::{Record, Step};

impl RunState {
    /// Remembers that the child of `step` was asked to cancel (for a journaled
    /// `ChildCancelRequestedRecord`).
    pub(crate) fn note_child_cancel(&mut self, step: Step, child: RunId, reason: String) {
        self.child_cancels
            .insert(step, ChildCancel { child, reason });
    }

    /// The child of `step` that this run asked to cancel, and the reason it gave.
    pub(crate) fn child_cancel(&self, step: Step) -> Option<(RunId, &str)> {
        self.child_cancels
            .get(&step)
            .map(|c| (c.child, c.reason.as_str()))
    }

    /// The records that cancel every child still running that was not asked to cancel yet,
    /// each with the reason `reason(step)`, and the effects that tell them once the records
    /// are durable.
    pub(crate) fn cancel_children(&self, reason: impl Fn(Step) -> String) -> Actions {
        let mut out = Actions::default();
        for &step in &self.pending {
            if let Some((child, _)) = self.child(step)
                && !self.child_cancels.contains_key(&step)
            {
                out.records.push(Record::ChildCancelRequested {
                    step,
                    child_run_id: child,
                    reason: reason(step),
                });
                out.effects.push(Effect::CancelChild(step));
            }
        }
        out
    }

    /// The records that cancel the child of `step` (whose future was dropped), if it still
    /// runs and was not asked to cancel yet.
    pub(crate) fn cancel_child(&self, step: Step, reason: impl FnOnce() -> String) -> Actions {
        match self.child(step) {
            Some((child, _)) if !self.child_cancels.contains_key(&step) => Actions {
                records: vec![Record::ChildCancelRequested {
                    step,
                    child_run_id: child,
                    reason: reason(),
                }],
                effects: vec![Effect::CancelChild(step)],
            },
            _ => Actions::default(),
        }
    }

    /// The record that withdraws the gate of `step` (whose future was dropped), if it is
    /// still open.
    pub(crate) fn withdraw_gate(&self, step: Step, reason: impl FnOnce() -> String) -> Actions {
        match self.steps.get(&step).map(|e| &e.machine) {
            Some(Machine::Gate(g)) if !g.is_resolved() => Actions::record(Record::GateWithdrawn {
                step,
                reason: reason(),
            }),
            _ => Actions::default(),
        }
    }
}
