//! Task steps the workflow's own code carries out.
//!
//! A front end whose task types are steps of the workflow itself (a YAML `timer_task` is a
//! durable sleep, a `gate_task` an inbox item) may still journal each as a task step, as its
//! reference does: a `TaskStartedRecord` when the state begins, the steps that do the work,
//! then a `TaskResultRecord` with the state's outcome. No attempt of such a step runs and none
//! is re-executed after a crash; the code that replays reaches the same point and journals the
//! result if the journal does not hold it yet.

use serde_json::Value;

use crate::codec::{input_hash, str_hash};
use crate::context::{CommandDetail, WorkflowContext};
use crate::record::{Step, StepKind};
use crate::replay::{Replayed, TaskCallSpec};
use crate::task::TaskOptions;

/// A task step the workflow's code carries out, open until [`HeldTask::finish`].
#[derive(Debug)]
#[must_use = "a held task step is journaled as running until it is finished"]
pub struct HeldTask {
    ctx: WorkflowContext,
    step: Step,
    name: String,
}

impl WorkflowContext {
    /// Journals a task step of task `task`, labelled `name`, with `input`, numbered as attempt
    /// `attempt` (1 for the first), that this code carries out itself with the steps it makes
    /// next; [`HeldTask::finish`] journals its result.
    ///
    /// `None` when replaying a journal that holds another kind of step here: a run journaled
    /// before its code wrapped this work in a task step, which goes on without one.
    pub fn held_task(
        &self,
        task: &str,
        name: &str,
        input: Value,
        attempt: u32,
    ) -> Option<HeldTask> {
        let other_step = {
            let s = self.lock();
            s.replayed(s.next_step)
                .is_some_and(|r| !matches!(r, Replayed::Task))
        };
        if other_step {
            return None;
        }
        let hash = input_hash(&input) ^ str_hash(task);
        let detail = CommandDetail::Task {
            own_options: true,
            call: Box::new(TaskCallSpec {
                task: task.into(),
                input,
                options: TaskOptions::default(),
                registration: None,
                hash,
                first_attempt: attempt.max(1),
                held: true,
            }),
        };
        let step = self.push(StepKind::Task, name.into(), hash, detail);
        Some(HeldTask {
            ctx: self.clone(),
            step,
            name: name.into(),
        })
    }

    /// Whether the journal holds a side effect named `name` at the step the code makes next
    /// (always `false` for a step made live). A front end that turned a side effect into
    /// another kind of step keeps the runs journaled before on their path with it, without a
    /// patch marker in every new run.
    pub fn journaled_side_effect(&self, name: &str) -> bool {
        let s = self.lock();
        matches!(s.replayed(s.next_step),
            Some(Replayed::Value { name: n, .. }) if n == name)
    }
}

impl HeldTask {
    /// The step.
    pub fn step(&self) -> Step {
        self.step
    }

    /// Journals the step's result: `outcome` (`success` or another word the front end routes
    /// on), `output`, and the error message of a failure. Nothing new when the journal holds
    /// the result already (replay), or the step ended otherwise (the run was cancelled).
    pub fn finish(self, outcome: &str, output: Value, error: Option<String>) {
        let detail = CommandDetail::Finish {
            outcome: outcome.into(),
            output,
            error,
        };
        let mut s = self.ctx.lock();
        s.command(
            &self.ctx.shared,
            self.step,
            StepKind::Task,
            self.name,
            0,
            detail,
        );
    }
}
