//! Completions from the world — task results, timers, answers, signals, children, cancellation
//! — and the records they become.

use serde_json::Value;

use super::{
    Actions, Effect, GatePhase, Machine, RunState, SignalStep, TimerPurpose, due_after, gate,
};
use crate::context::{ChildOutcome, StepSet};
use crate::engine::{AnswerAck, CancelAck};
use crate::error::DeliverError;
use crate::record::{GateAnswer, Record, Step};
use crate::task::TaskError;

impl RunState {
    /// An attempt's result. `dropped`: nobody awaits the step any more (a select's loser), so
    /// it is not retried.
    pub(crate) fn task_done(
        &self,
        step: Step,
        attempt: u32,
        result: Result<Value, TaskError>,
        dropped: bool,
        now_ms: u64,
    ) -> Actions {
        let current = !self.is_terminal()
            && matches!(self.steps.get(&step).map(|e| &e.machine),
                Some(Machine::Task(t)) if t.running() == Some(attempt));
        if !current {
            return Actions::record(Record::Ignored {
                step,
                what: "task result".into(),
                answer: None,
            });
        }
        match result {
            Ok(output) => Actions::record(Record::TaskResult {
                step,
                attempt,
                outcome: "success".into(),
                output,
                error: None,
                is_final: true,
            }),
            Err(e) => {
                // The policy counts this step's attempts from its first.
                let (policy, tries) = match self.steps.get(&step).map(|e| &e.machine) {
                    Some(Machine::Task(t)) => t.call().map_or((None, attempt), |c| {
                        (Some(c.options.retry.clone()), c.tries(attempt))
                    }),
                    _ => (None, attempt),
                };
                let retry = !dropped && policy.as_ref().is_some_and(|p| p.should_retry(tries, &e));
                let mut out = Actions::record(Record::TaskResult {
                    step,
                    attempt,
                    outcome: e.kind.into(),
                    output: e.output,
                    error: Some(e.message),
                    is_final: !retry,
                });
                if let (true, Some(p)) = (retry, policy) {
                    let delay =
                        u64::try_from(p.backoff_after(tries).as_millis()).unwrap_or(u64::MAX);
                    let at = due_after(now_ms, delay);
                    out.records.push(Record::TimerSet {
                        step,
                        fire_at_ms: at,
                        purpose: TimerPurpose::Retry,
                    });
                    out.effects
                        .push(Effect::Timer(step, at, TimerPurpose::Retry));
                }
                out
            }
        }
    }

    /// The sleeps and gate timeouts of pending steps that are due at `now_ms`, oldest first.
    /// An event from the world (an answer, a signal, a child's end) arriving after one of them
    /// came due is handled after it, as it would have been had a process been running when it
    /// came due: a gate's timeout that passed before its answer wins over that answer.
    pub(crate) fn due_timers(&self, now_ms: u64) -> Vec<(Step, TimerPurpose)> {
        let mut due: Vec<(u64, Step, TimerPurpose)> = self
            .pending
            .iter()
            .filter_map(|&step| match &self.steps.get(&step)?.machine {
                Machine::Timer(t) => Some((t.due()?, step, TimerPurpose::Sleep)),
                Machine::Gate(g) => Some((g.timeout_at()?, step, TimerPurpose::GateTimeout)),
                _ => None,
            })
            .filter(|(at, ..)| *at <= now_ms)
            .collect();
        due.sort_unstable_by_key(|(at, step, _)| (*at, *step));
        due.into_iter()
            .map(|(_, step, purpose)| (step, purpose))
            .collect()
    }

    /// Whether `step` is a pending timer due at `now_ms`.
    pub(crate) fn timer_is_due(&self, step: Step, now_ms: u64) -> bool {
        self.pending.contains(&step)
            && matches!(
                self.steps.get(&step).map(|e| &e.machine),
                Some(Machine::Timer(t)) if t.due().is_some_and(|at| at <= now_ms)
            )
    }

    /// A timer of `step` is due.
    pub(crate) fn timer_due(&self, step: Step, purpose: TimerPurpose) -> Actions {
        if self.is_terminal() {
            return Actions::default();
        }
        let Some(entry) = self.steps.get(&step) else {
            return Actions::default();
        };
        match (&entry.machine, purpose) {
            (Machine::Timer(t), TimerPurpose::Sleep) if !t.is_resolved() => {
                Actions::record(Record::TimerFired { step })
            }
            (Machine::Gate(g), TimerPurpose::GateTimeout) => match g.phase {
                GatePhase::Open { .. } => Actions::record(Record::TimerFired { step }),
                // Nobody awaits a withdrawn gate: its timeout is nobody's business.
                GatePhase::TimedOut | GatePhase::Withdrawn => Actions::default(),
                _ => Actions::record(Record::Ignored {
                    step,
                    what: "gate timeout".into(),
                    answer: None,
                }),
            },
            (Machine::Task(t), TimerPurpose::Retry) => {
                let (Some(call), Some(_)) = (t.call(), t.retry_at()) else {
                    return Actions::default();
                };
                Actions {
                    records: vec![
                        Record::TimerFired { step },
                        Record::TaskStarted {
                            step,
                            attempt: t.attempt() + 1,
                            task: call.task.clone(),
                            name: entry.name.clone(),
                            input_hash: call.hash,
                            input: call.input.clone(),
                        },
                    ],
                    effects: vec![Effect::Execute(step)],
                }
            }
            _ => Actions::default(),
        }
    }

    /// An answer to the gate at `step`: its record (applied, or ignored when the gate had
    /// already completed) and what the caller is told.
    pub(crate) fn answer(
        &self,
        step: Step,
        answer: GateAnswer,
    ) -> Result<(Record, AnswerAck), DeliverError> {
        let Some(Machine::Gate(g)) = self.steps.get(&step).map(|e| &e.machine) else {
            let id = crate::view::inbox_item_id(self.run_id, step);
            return Err(DeliverError::ItemNotFound(id));
        };
        gate::check_answer(&g.spec, &answer)?;
        if g.is_resolved() || self.is_terminal() {
            // An answer to a gate that ended unanswered (its timeout fired first, the run
            // ended) still lands on its inbox item; a second answer (one that lost a race with
            // the first) does not replace the first there, but is kept all the same: who
            // answered, and what, is the journal's to say.
            let ignored = Record::Ignored {
                step,
                what: "gate answer".into(),
                answer: Some(answer),
            };
            return Ok((ignored, AnswerAck::Ignored));
        }
        Ok((Record::GateAnswered { step, answer }, AnswerAck::Applied))
    }

    /// A signal: it completes the oldest pending wait of its name that the code still awaits
    /// (not in `dropped`), or is buffered. Once the run has ended it is ignored: an
    /// `IgnoredRecord` at the run's last wait for that name (else its last step).
    pub(crate) fn signal(&self, name: String, payload: Value, dropped: &StepSet) -> Record {
        if self.is_terminal() {
            let waited = |s: &Step| {
                self.steps
                    .get(s)
                    .is_some_and(|e| matches!(e.machine, Machine::Signal(_)) && e.name == name)
            };
            let step = self
                .steps
                .keys()
                .filter(waited)
                .max()
                .or_else(|| self.steps.keys().max())
                .unwrap_or(0);
            return Record::Ignored {
                step,
                what: format!("signal `{name}`"),
                answer: None,
            };
        }
        let waiting = self.pending.iter().copied().find(|k| {
            !dropped.contains(k)
                && self.steps.get(k).is_some_and(|e| {
                    matches!(e.machine, Machine::Signal(SignalStep::Waiting)) && e.name == name
                })
        });
        Record::SignalReceived {
            name,
            payload,
            step: waiting,
        }
    }

    /// The child of `step` ended.
    pub(crate) fn child_done(&self, step: Step, outcome: ChildOutcome) -> Option<Record> {
        let running = matches!(self.steps.get(&step).map(|e| &e.machine),
            Some(Machine::Child(c)) if !c.is_resolved());
        (running && !self.is_terminal()).then_some(Record::ChildFinished {
            step,
            status: outcome.status,
            result: outcome.result,
            reason: outcome.reason,
        })
    }

    /// A cancellation request: its records, if it takes effect, and what the caller is told.
    /// The run's `CancelRequestedRecord` is followed by a final `TaskResultRecord` with outcome
    /// `cancelled` for each task attempt in flight (its execution is stopped), and a
    /// `ChildCancelRequestedRecord` for each child still running, whose reason `child_reason`
    /// makes from the run's.
    pub(crate) fn cancel(
        &self,
        reason: String,
        child_reason: impl Fn(&str) -> String,
    ) -> (Actions, CancelAck) {
        if self.is_terminal() {
            (Actions::default(), CancelAck::AlreadyFinished)
        } else if self.cancel_requested {
            (Actions::default(), CancelAck::AlreadyRequested)
        } else {
            let for_children = child_reason(&reason);
            let children = self.cancel_children(|_| for_children.clone());
            let ended = self.cancelled_attempts(&reason);
            let mut out = Actions::record(Record::CancelRequested { reason });
            out.records.extend(ended);
            out.records.extend(children.records);
            out.effects.extend(children.effects);
            (out, CancelAck::Requested)
        }
    }

    /// The final results of the task attempts in flight, in step order, when the run is
    /// cancelled for `reason`: every started attempt's journal shows how it ended. Applied
    /// after the `CancelRequestedRecord`, which already ended their steps, they change
    /// nothing; a journal without them (written before) replays the same.
    fn cancelled_attempts(&self, reason: &str) -> Vec<Record> {
        self.pending
            .iter()
            .filter_map(|&step| match self.steps.get(&step).map(|e| &e.machine) {
                Some(Machine::Task(t)) => t.running().map(|attempt| Record::TaskResult {
                    step,
                    attempt,
                    outcome: TaskError::CANCELLED.into(),
                    output: Value::Null,
                    error: Some(reason.to_string()),
                    is_final: true,
                }),
                _ => None,
            })
            .collect()
    }
}
