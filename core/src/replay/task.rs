//! A task step: attempts, their results and the backoff between them.
//!
//! ```text
//! (requested) ──TaskStarted{n}──▶ Running{n} ──TaskResult{final}──▶ Completed
//!                                    │ ▲
//!                                    │ └─TaskRestarted{n, e}── (the attempt runs again: execution e)
//!                                    │
//!                                    └─TaskResult{!final}──▶ BackingOff{n, None}
//!      BackingOff{n, None} ──TimerSet(retry, at)──▶ BackingOff{n, Some(at)}
//!      BackingOff{n, Some} ──TimerFired──▶ BackingOff{n, None} ──TaskStarted{n+1}──▶ Running{n+1}
//! ```
//! Cancellation completes the step from any phase. A completed step keeps nothing of its call.

use serde_json::Value;

use crate::codec::{input_hash, str_hash};
use crate::record::{Entry, Record, Step};
use crate::task::{TaskError, TaskOptions, TaskRegistration};

/// What a task step runs: everything an attempt needs, kept until the step completes.
#[derive(Debug, Clone)]
pub(crate) struct TaskCallSpec {
    /// The registered task (or task type) that runs.
    pub(crate) task: String,
    pub(crate) input: Value,
    /// Resolved options: the call's, else the registration's.
    pub(crate) options: TaskOptions,
    /// The body the call carried, for tasks not registered by name.
    pub(crate) registration: Option<TaskRegistration>,
    /// The input hash journaled with every attempt.
    pub(crate) hash: u64,
    /// The number of the step's first attempt ([`TaskCall::first_attempt`]).
    ///
    /// [`TaskCall::first_attempt`]: crate::TaskCall::first_attempt
    pub(crate) first_attempt: u32,
    /// A step the workflow's own code carries out ([`WorkflowContext::held_task`]): no
    /// attempt of it runs, it is never re-executed, and the code journals its result.
    ///
    /// [`WorkflowContext::held_task`]: crate::WorkflowContext::held_task
    pub(crate) held: bool,
}

impl TaskCallSpec {
    /// How many attempts of this step `attempt` makes, counting from its first: what its
    /// retry policy counts.
    pub(crate) fn tries(&self, attempt: u32) -> u32 {
        attempt.saturating_sub(self.first_attempt).saturating_add(1)
    }
}

/// A task step's phase.
#[derive(Debug)]
pub(crate) enum TaskStep {
    /// Asked for; no attempt journaled yet (only seen during replay, between the code's request
    /// and the application of its `TaskStartedRecord`).
    Requested(Box<TaskCallSpec>),
    /// Attempt `attempt` is journaled as started and has no result; it has been executed
    /// `executions` times as far as the journal knows (1, plus one per `TaskRestartedRecord`
    /// that counts one more). `queued` while its latest execution waits for a place to run
    /// (a `TaskQueuedRecord` without its `TaskAdmittedRecord`): that execution has not begun.
    Running {
        call: Box<TaskCallSpec>,
        attempt: u32,
        executions: u32,
        queued: bool,
        /// Executions that a clean stop of their process interrupted (`TaskInterruptedRecord`):
        /// they do not count against `maxClaimAttempts`.
        interrupted: u32,
    },
    /// Attempt `attempt` failed and another follows: at `retry_at` while the backoff timer is
    /// set and has not fired.
    BackingOff {
        call: Box<TaskCallSpec>,
        attempt: u32,
        retry_at: Option<u64>,
    },
    /// A final result (or cancellation) completed the step.
    Completed,
}

impl TaskStep {
    pub(crate) fn is_resolved(&self) -> bool {
        matches!(self, TaskStep::Completed)
    }

    /// Whether the workflow's own code carries the step out (see [`TaskCallSpec::held`]).
    pub(crate) fn is_held(&self) -> bool {
        self.call().is_some_and(|c| c.held)
    }

    pub(crate) fn call(&self) -> Option<&TaskCallSpec> {
        match self {
            TaskStep::Requested(call)
            | TaskStep::Running { call, .. }
            | TaskStep::BackingOff { call, .. } => Some(call),
            TaskStep::Completed => None,
        }
    }

    /// The attempt that is journaled as started and has no result.
    pub(crate) fn running(&self) -> Option<u32> {
        match self {
            TaskStep::Running { attempt, .. } => Some(*attempt),
            _ => None,
        }
    }

    /// When the next attempt is due, while the backoff timer is set.
    pub(crate) fn retry_at(&self) -> Option<u64> {
        match self {
            TaskStep::BackingOff { retry_at, .. } => *retry_at,
            _ => None,
        }
    }

    /// The last journaled attempt (0 before the first).
    pub(crate) fn attempt(&self) -> u32 {
        match self {
            TaskStep::Running { attempt, .. } | TaskStep::BackingOff { attempt, .. } => *attempt,
            TaskStep::Requested(_) | TaskStep::Completed => 0,
        }
    }

    fn take_call(&mut self) -> Option<Box<TaskCallSpec>> {
        match std::mem::replace(self, TaskStep::Completed) {
            TaskStep::Requested(call)
            | TaskStep::Running { call, .. }
            | TaskStep::BackingOff { call, .. } => Some(call),
            TaskStep::Completed => None,
        }
    }

    /// `TaskStartedRecord` of `attempt`.
    pub(crate) fn started(&mut self, attempt: u32) {
        if let Some(call) = self.take_call() {
            *self = TaskStep::Running {
                call,
                attempt,
                executions: 1,
                queued: false,
                interrupted: 0,
            };
        }
    }

    /// `TaskRestartedRecord` of `attempt`, its `execution`th execution. A record of another
    /// attempt than the running one changes nothing.
    pub(crate) fn restarted(&mut self, of: u32, execution: u32) {
        if let TaskStep::Running {
            attempt,
            executions,
            queued,
            ..
        } = self
            && *attempt == of
        {
            *executions = (*executions).max(execution);
            *queued = false;
        }
    }

    /// `TaskInterruptedRecord` of attempt `of`: a clean stop interrupted its execution. A
    /// record of another attempt than the running one changes nothing.
    pub(crate) fn interrupted(&mut self, of: u32) {
        if let TaskStep::Running {
            attempt,
            interrupted,
            ..
        } = self
            && *attempt == of
        {
            *interrupted = interrupted.saturating_add(1);
        }
    }

    /// How many executions of the running attempt a clean stop interrupted.
    pub(crate) fn interruptions(&self) -> u32 {
        match self {
            TaskStep::Running { interrupted, .. } => *interrupted,
            _ => 0,
        }
    }

    /// The execution of the running attempt that is under way: its number, unless it waits
    /// for a place to run (it has not begun).
    pub(crate) fn current_execution(&self) -> Option<u32> {
        match self {
            TaskStep::Running {
                executions,
                queued: false,
                ..
            } => Some(*executions),
            _ => None,
        }
    }

    /// `TaskQueuedRecord` (`queued`) or `TaskAdmittedRecord` (not) of attempt `of`. A record of
    /// another attempt than the running one changes nothing.
    pub(crate) fn queued(&mut self, of: u32, waits: bool) {
        if let TaskStep::Running {
            attempt, queued, ..
        } = self
            && *attempt == of
        {
            *queued = waits;
        }
    }

    /// Whether the running attempt's latest execution waits for a place to run: it was queued
    /// and never admitted, so it has not begun.
    pub(crate) fn is_queued(&self) -> bool {
        matches!(self, TaskStep::Running { queued: true, .. })
    }

    /// The number of the running attempt's next execution, when its process stopped before
    /// its result: one more than its executions, or the same when the latest never began (it
    /// was queued and not admitted).
    pub(crate) fn next_execution(&self) -> Option<u32> {
        match self {
            TaskStep::Running {
                executions, queued, ..
            } => Some(if *queued {
                *executions
            } else {
                executions.saturating_add(1)
            }),
            _ => None,
        }
    }

    /// `TaskResultRecord`; returns whether it completes the step.
    pub(crate) fn result(&mut self, is_final: bool) -> bool {
        if self.is_resolved() {
            return false;
        }
        if is_final {
            *self = TaskStep::Completed;
            return true;
        }
        let attempt = self.attempt();
        if let Some(call) = self.take_call() {
            *self = TaskStep::BackingOff {
                call,
                attempt,
                retry_at: None,
            };
        }
        false
    }

    /// The retry timer was set (`TimerSetRecord`, purpose `retry`).
    pub(crate) fn retry_set(&mut self, at: u64) {
        if let TaskStep::BackingOff { retry_at, .. } = self {
            *retry_at = Some(at);
        }
    }

    /// The retry timer fired: the next attempt may start.
    pub(crate) fn retry_fired(&mut self) {
        if let TaskStep::BackingOff { retry_at, .. } = self {
            *retry_at = None;
        }
    }

    /// Completes the step without a result (cancellation).
    pub(crate) fn complete(&mut self) -> bool {
        !std::mem::replace(self, TaskStep::Completed).is_resolved()
    }
}

/// What the code asks a task step to be: the task, its label and its input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskAsked<'a> {
    pub(crate) task: &'a str,
    pub(crate) name: &'a str,
    pub(crate) input: &'a Value,
}

/// Replay's shortcut for the commonest step: when the journal's records at `at` are the
/// step's first attempt (`TaskStartedRecord` of the task, label and input the code asks for;
/// its number is not compared, see [`TaskCall::first_attempt`]) followed directly by the final
/// `TaskResultRecord` of the same attempt, that result record (its seq and,
/// through [`task_completion`], the step's completion). A step whose two records are the next ones the driver would apply is
/// complete before anything else happens to the run: its completion is what applying both
/// records would deliver, in the same journal order (no record lies between them). The input is
/// compared through its hash (with the task's name, as the step journaled it), as the driver's
/// path compares it: replay's read leaves journaled inputs out
/// ([`decode_for_replay`](crate::codec::decode_for_replay)), and hashing the code's input costs
/// less than parsing the journaled one. Any other shape (a retry, a restart, another record in
/// between, a difference) is `None` and takes the driver's path, which reports a difference as
/// non-determinism.
///
/// [`TaskCall::first_attempt`]: crate::TaskCall::first_attempt
pub(crate) fn completed_in_one<'j>(
    journal: &'j [Entry],
    at: usize,
    step: Step,
    asked: TaskAsked<'_>,
) -> Option<&'j Entry> {
    let [started, result] = journal.get(at..at.checked_add(2)?)? else {
        return None;
    };
    match (&started.record, &result.record) {
        (
            Record::TaskStarted {
                step: started_step,
                attempt: first,
                task,
                name,
                input_hash: journaled,
                ..
            },
            Record::TaskResult {
                step: result_step,
                attempt: ended,
                is_final: true,
                ..
            },
        ) if *started_step == step
            && *result_step == step
            && first == ended
            && name == asked.name
            && task == asked.task
            && *journaled == input_hash(asked.input) ^ str_hash(asked.task) =>
        {
            Some(result)
        }
        _ => None,
    }
}

/// The completion a final `TaskResultRecord` delivers: its output on success, else the error
/// (boxed: it is rare, and the completion is moved around by value).
#[inline]
pub(crate) fn task_completion(record: &Record) -> crate::step_future::TaskCompletion {
    match record {
        Record::TaskResult {
            outcome,
            output,
            error,
            ..
        } if outcome != "success" => Err(Box::new(super::task_error_from_record(
            outcome.as_str(),
            output,
            error,
        ))),
        Record::TaskResult { output, .. } => Ok(output.clone()),
        other => Err(Box::new(TaskError::terminal(format!(
            "unexpected record {other:?} as a task's result"
        )))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn requested() -> TaskStep {
        TaskStep::Requested(Box::new(TaskCallSpec {
            task: "charge".into(),
            input: Value::from(1),
            options: TaskOptions::default(),
            registration: None,
            hash: 7,
            first_attempt: 1,
            held: false,
        }))
    }

    #[test]
    fn a_first_attempt_that_succeeds() {
        let mut t = requested();
        assert_eq!(t.attempt(), 0);
        t.started(1);
        assert_eq!(t.running(), Some(1));
        assert!(t.result(true));
        assert!(t.is_resolved());
        assert!(
            t.call().is_none(),
            "a completed step keeps nothing of its call"
        );
        assert!(!t.result(true), "a second result completes nothing");
    }

    #[test]
    fn a_retry_waits_for_its_timer_then_starts_the_next_attempt() {
        let mut t = requested();
        t.started(1);
        assert!(!t.result(false));
        assert_eq!(t.running(), None);
        assert_eq!(t.retry_at(), None);
        t.retry_set(500);
        assert_eq!(t.retry_at(), Some(500));
        t.retry_fired();
        assert_eq!(t.retry_at(), None);
        assert_eq!(t.attempt(), 1);
        t.started(2);
        assert_eq!(t.running(), Some(2));
        assert_eq!(t.call().map(|c| c.hash), Some(7));
    }

    #[test]
    fn each_re_execution_of_the_running_attempt_is_counted() {
        let mut t = requested();
        assert_eq!(t.next_execution(), None);
        t.started(1);
        assert_eq!(t.next_execution(), Some(2));
        t.restarted(1, 2);
        assert_eq!(t.next_execution(), Some(3));
        t.restarted(7, 5);
        assert_eq!(
            t.next_execution(),
            Some(3),
            "another attempt's record counts nothing"
        );
        t.restarted(1, 3);
        assert_eq!((t.running(), t.next_execution()), (Some(1), Some(4)));
        assert!(t.result(true));
        assert_eq!(t.next_execution(), None);
    }

    #[test]
    fn an_execution_that_was_queued_and_never_admitted_is_not_counted() {
        let mut t = requested();
        t.started(1);
        assert!(!t.is_queued());
        t.queued(1, true);
        assert!(t.is_queued());
        assert_eq!(t.next_execution(), Some(1), "the first never began");
        t.restarted(1, 1);
        assert!(!t.is_queued());
        assert_eq!(t.next_execution(), Some(2), "a restart begins unqueued");
        t.queued(1, true);
        t.queued(1, false);
        assert!(!t.is_queued());
        assert_eq!(t.next_execution(), Some(2), "admitted: it began");
        t.queued(2, true);
        assert_eq!(t.next_execution(), Some(2), "another attempt's wait");
        t.queued(1, true);
        t.restarted(1, 2);
        t.queued(1, true);
        assert_eq!(t.next_execution(), Some(2));
        assert!(t.result(true));
        assert!(!t.is_queued());
        assert_eq!(t.next_execution(), None);
    }

    #[test]
    fn cancellation_completes_from_any_phase() {
        let mut t = requested();
        t.started(1);
        t.result(false);
        t.retry_set(9);
        assert!(t.complete());
        assert!(t.is_resolved());
        assert!(!t.complete());
        t.started(3);
        assert!(t.is_resolved(), "no attempt starts after completion");
    }

    mod completed_in_one {
        use serde_json::json;

        use serde_json::Value;

        use super::super::{TaskAsked, completed_in_one, task_completion};
        use crate::testing::JournalBuilder;

        fn asked<'a>(task: &'a str, input: &'a Value) -> TaskAsked<'a> {
            TaskAsked {
                task,
                name: task,
                input,
            }
        }

        #[test]
        fn a_first_attempt_followed_by_its_final_result_completes_the_step() {
            let journal = JournalBuilder::start("w", json!({}))
                .task("charge", json!(1))
                .task_ok(0, 1, json!("paid"))
                .build();
            let result =
                completed_in_one(&journal, 1, 0, asked("charge", &json!(1))).expect("completed");
            assert_eq!(result.seq, 2, "the seq of the result record");
            let completion = task_completion(&result.record);
            assert_eq!(completion.expect("a success"), json!("paid"));
        }

        #[test]
        fn a_final_failure_completes_the_step_with_its_error() {
            let journal = JournalBuilder::start("w", json!({}))
                .task("charge", json!(1))
                .task_failed(0, 1, "timeout", true)
                .build();
            let result =
                completed_in_one(&journal, 1, 0, asked("charge", &json!(1))).expect("completed");
            let err = task_completion(&result.record).expect_err("a failure");
            assert_eq!(err.kind, "timeout");
            assert_eq!(err.message, "attempt 1 failed");
        }

        #[test]
        fn any_other_shape_takes_the_usual_path() {
            let retried = JournalBuilder::start("w", json!({}))
                .task("charge", json!(1))
                .task_failed(0, 1, "technical_error", false)
                .build();
            assert!(
                completed_in_one(&retried, 1, 0, asked("charge", &json!(1))).is_none(),
                "a result followed by a retry"
            );
            let interleaved = JournalBuilder::start("w", json!({}))
                .task("charge", json!(1))
                .sleep(5_000)
                .task_ok(0, 1, json!("paid"))
                .build();
            assert!(
                completed_in_one(&interleaved, 1, 0, asked("charge", &json!(1))).is_none(),
                "another step's record between the two"
            );
            let done = JournalBuilder::start("w", json!({}))
                .task("charge", json!(1))
                .task_ok(0, 1, json!("paid"))
                .build();
            assert!(
                completed_in_one(&done, 1, 0, asked("charge", &json!(2))).is_none(),
                "another input: the driver reports the mismatch"
            );
            assert!(
                completed_in_one(&done, 1, 0, asked("refund", &json!(1))).is_none(),
                "another task"
            );
            let relabelled = TaskAsked {
                task: "charge",
                name: "pay",
                input: &json!(1),
            };
            assert!(
                completed_in_one(&done, 1, 0, relabelled).is_none(),
                "another label"
            );
            assert!(
                completed_in_one(&done, 1, 1, asked("charge", &json!(1))).is_none(),
                "another step number"
            );
            assert!(
                completed_in_one(&done, 2, 0, asked("charge", &json!(1))).is_none(),
                "not at the step's first record"
            );
            assert!(
                completed_in_one(&done, usize::MAX, 0, asked("charge", &json!(1))).is_none(),
                "past the journal's end"
            );
        }
    }
}
