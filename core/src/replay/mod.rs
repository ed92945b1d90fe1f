//! The pure state of one run: what its journal says, step by step.
//!
//! No tokio, no store, no clock: the [`RunState`] applies records ([`RunState::apply`]), answers
//! the steps the code asks for — matching them against the journal on replay
//! ([`RunState::request_replayed`]) or deciding their records and effects live
//! ([`RunState::request_live`]) — and decides what a completion from the world becomes (a record,
//! an ignored duplicate, a retry). Each step kind is a small machine in its own module whose
//! phases are an enum, so that impossible combinations (a task with a gate, a timer both
//! pending and fired) cannot be written down. The driver around it only loops poll → flush → act.

mod child;
mod first_records;
mod gate;
mod let_go;
mod nondeterminism;
mod records;
mod recovery;
mod signal;
mod step_table;
mod task;
mod timer;
mod world;

use std::collections::BTreeSet;

use serde_json::Value;

pub(crate) use first_records::FirstRecords;
pub use gate::MAX_ANSWER_COMMENT_BYTES;
pub(crate) use gate::gate_identity;
pub use nondeterminism::{Divergence, NonDeterminism, StepIdentity};
pub(crate) use records::{
    Replayed, identity, patch_marker, step_of, unfinished_attempts, unfinished_children,
};
pub(crate) use task::{TaskAsked, TaskCallSpec, completed_in_one, task_completion};
pub(crate) use timer::{TimerPurpose, due_after};

use crate::context::{
    ChildOutcome, ChildRequest, Command, CommandDetail, GateOutcome, Resolution, StepMap,
};
use crate::id::RunId;
use crate::record::{Record, RunStatus, Step, StepKind};
use crate::task::{TaskError, TaskOptions};
use child::ChildStep;
use gate::{GatePhase, GateStep};
use signal::{Buffered, SignalBuffer, SignalStep};
use task::TaskStep;
use timer::TimerStep;

/// Something the driver does once the records that led to it are durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Effect {
    /// Run the step's current attempt.
    Execute(Step),
    /// Register a timer.
    Timer(Step, u64, TimerPurpose),
    /// Start the step's child run.
    StartChild(Step),
    /// Find out how the step's child run is doing (after a restart).
    CheckChild(Step),
    /// Tell the step's child run to cancel (its `ChildCancelRequestedRecord` is journaled):
    /// unless it has ended or never started.
    CancelChild(Step),
}

/// Records to append (in order) and effects to perform after their commit.
#[derive(Debug, Default)]
pub(crate) struct Actions {
    pub(crate) records: Vec<Record>,
    pub(crate) effects: Vec<Effect>,
}

impl Actions {
    fn record(record: Record) -> Self {
        Self {
            records: vec![record],
            effects: Vec::new(),
        }
    }
}

/// A completion to feed to the code: step, the seq of the record that completed it, how.
#[derive(Debug)]
pub(crate) struct Resolved {
    pub(crate) step: Step,
    pub(crate) seq: u64,
    pub(crate) resolution: Resolution,
}

/// One step's machine.
#[derive(Debug)]
enum Machine {
    Task(TaskStep),
    Timer(TimerStep),
    Gate(GateStep),
    Signal(SignalStep),
    Child(ChildStep),
    /// A step that is one record and complete with it (side effect, state entered, variable).
    Recorded(StepKind),
}

impl Machine {
    fn kind(&self) -> StepKind {
        match self {
            Machine::Task(_) => StepKind::Task,
            Machine::Timer(_) => StepKind::Timer,
            Machine::Gate(_) => StepKind::Gate,
            Machine::Signal(_) => StepKind::Signal,
            Machine::Child(_) => StepKind::Child,
            Machine::Recorded(kind) => *kind,
        }
    }

    fn is_resolved(&self) -> bool {
        match self {
            Machine::Task(t) => t.is_resolved(),
            Machine::Timer(t) => t.is_resolved(),
            Machine::Gate(g) => g.is_resolved(),
            Machine::Signal(s) => s.is_resolved(),
            Machine::Child(c) => c.is_resolved(),
            Machine::Recorded(_) => true,
        }
    }

    /// Ends a pending step by cancellation; returns whether it was pending.
    fn cancel(&mut self) -> bool {
        match self {
            Machine::Task(t) => t.complete(),
            Machine::Timer(t) => t.fire(),
            Machine::Gate(g) => g.close(GatePhase::Cancelled),
            Machine::Signal(s) => !std::mem::replace(s, SignalStep::Received).is_resolved(),
            Machine::Child(c) => c.finish(),
            Machine::Recorded(_) => false,
        }
    }

    /// The machine of a step of a run that had ended when it was loaded: complete, knowing only
    /// what late deliveries need (a gate's question, a child's id).
    fn ended(kind: StepKind, first: &Record) -> Self {
        match (kind, first) {
            (StepKind::Gate, Record::GateOpened { gate, .. }) => Machine::Gate(GateStep {
                spec: gate.clone(),
                phase: GatePhase::Closed,
            }),
            (StepKind::Child, Record::ChildStarted { child_run_id, .. }) => {
                Machine::Child(ChildStep::Finished {
                    child: *child_run_id,
                })
            }
            (StepKind::Task, _) => Machine::Task(TaskStep::Completed),
            (StepKind::Timer, _) => Machine::Timer(TimerStep::Fired),
            (StepKind::Signal, _) => Machine::Signal(SignalStep::Received),
            (kind, _) => Machine::Recorded(kind),
        }
    }
}

/// A step: its journaled name and its machine.
#[derive(Debug)]
struct StepEntry {
    name: String,
    machine: Machine,
}

fn task_error_from_record(outcome: &str, output: &Value, error: &Option<String>) -> TaskError {
    TaskError {
        kind: outcome.to_string(),
        message: error.clone().unwrap_or_else(|| outcome.to_string()),
        output: output.clone(),
        retryable: false,
    }
}

/// Everything the journal says about one run, step by step.
#[derive(Debug)]
pub(crate) struct RunState {
    run_id: RunId,
    steps: step_table::StepTable<StepEntry>,
    signals: SignalBuffer,
    /// Steps that wait for a completion from the world, in step order.
    pending: BTreeSet<Step>,
    /// Gates not yet completed: the run is WAITING while there are any.
    open_gates: usize,
    cancel_requested: bool,
    /// The children this run asked to cancel (its `ChildCancelRequestedRecord`s), by step,
    /// until their step learns how they ended.
    child_cancels: StepMap<ChildCancel>,
    /// The last `StatusRecord`.
    last_status: Option<(RunStatus, Option<String>)>,
    /// Paused by an operator (a `PauseRequestedRecord` not yet followed by a
    /// `ResumeRequestedRecord` or a `CancelRequestedRecord`).
    paused: bool,
    /// `IgnoredRecord`s journaled after the run ended (late answers and signals).
    late_records: u32,
}

/// A child run this run asked to cancel, and the reason it gave.
#[derive(Debug)]
struct ChildCancel {
    child: RunId,
    reason: String,
}

impl RunState {
    pub(crate) fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            steps: step_table::StepTable::default(),
            signals: SignalBuffer::default(),
            pending: BTreeSet::new(),
            open_gates: 0,
            cancel_requested: false,
            child_cancels: StepMap::default(),
            last_status: None,
            paused: false,
            late_records: 0,
        }
    }

    /// How many late answers and signals were journaled after the run ended.
    pub(crate) fn late_records(&self) -> u32 {
        self.late_records
    }

    /// Room for `n` steps (a replay knows roughly how many it will see).
    pub(crate) fn reserve(&mut self, n: usize) {
        self.steps.reserve(n);
    }

    /// The last journaled status and its reason.
    pub(crate) fn last_status(&self) -> Option<&(RunStatus, Option<String>)> {
        self.last_status.as_ref()
    }

    /// Whether cancellation of the run is journaled.
    pub(crate) fn cancel_requested(&self) -> bool {
        self.cancel_requested
    }

    /// Whether a terminal status is journaled.
    pub(crate) fn is_terminal(&self) -> bool {
        self.last_status
            .as_ref()
            .is_some_and(|(s, _)| s.is_terminal())
    }

    /// Whether the run is paused: it dispatches nothing new until it is resumed.
    pub(crate) fn is_paused(&self) -> bool {
        self.paused
    }

    /// Lifts the pause without a record: a cancellation does (its `CancelRequestedRecord`
    /// ends the pause when it is applied; this lets the driver let go of what it held first).
    pub(crate) fn lift_pause(&mut self) {
        self.paused = false;
    }

    /// `PAUSED` while paused, else `WAITING` while a gate is open, else `RUNNING` (for runs
    /// that are neither ended nor blocked).
    pub(crate) fn live_status(&self) -> RunStatus {
        if self.paused {
            RunStatus::Paused
        } else if self.open_gates > 0 {
            RunStatus::Waiting
        } else {
            RunStatus::Running
        }
    }

    fn non_determinism(&self, step: Step, divergence: Divergence) -> NonDeterminism {
        NonDeterminism {
            run_id: self.run_id,
            step,
            divergence,
        }
    }

    // ---- steps the code asks for -----------------------------------------------------------

    /// Creates the step's machine; a step that is one record hands that record back.
    fn insert(&mut self, c: Command) -> Option<Record> {
        let mut own_record = None;
        let machine = match c.detail {
            // Not a step of its own (see `finish_held`).
            CommandDetail::Finish { .. } => return None,
            CommandDetail::Task { call, .. } => Machine::Task(TaskStep::Requested(call)),
            CommandDetail::Timer { fire_at_ms, .. } => {
                Machine::Timer(TimerStep::Pending { at: fire_at_ms })
            }
            CommandDetail::Gate { spec } => {
                self.open_gates += 1;
                Machine::Gate(GateStep::open(Box::new(spec)))
            }
            CommandDetail::Signal => Machine::Signal(SignalStep::Waiting),
            CommandDetail::Child {
                request,
                child_run_id,
            } => Machine::Child(ChildStep::Running {
                child: child_run_id,
                request,
            }),
            CommandDetail::Record { record } => {
                own_record = Some(record);
                Machine::Recorded(c.kind)
            }
        };
        if !machine.is_resolved() {
            self.pending.insert(c.step);
        }
        self.steps.insert(
            c.step,
            StepEntry {
                name: c.name,
                machine,
            },
        );
        own_record
    }

    /// Replay: the code completed task step `step` straight from its two journaled records
    /// (see [`completed_in_one`]); the step is known, and complete. Its name is not kept: a
    /// task step's name is read only for its next attempt (a retry) or its running one, and a
    /// completed step has neither.
    pub(crate) fn insert_replayed_task(&mut self, step: Step) {
        self.steps.insert(
            step,
            StepEntry {
                name: String::new(),
                machine: Machine::Task(TaskStep::Completed),
            },
        );
    }

    /// Replay: the code asks for step `c.step`, whose first journaled record is `journaled`.
    /// The step must have the same kind, name and input hash.
    pub(crate) fn request_replayed(
        &mut self,
        c: Command,
        journaled: &Record,
    ) -> Result<(), NonDeterminism> {
        let matches = identity(journaled).is_some_and(|(kind, name, hash)| {
            kind == c.kind && name == c.name && hash.is_none_or(|h| h == c.hash)
        });
        if !matches {
            let different_input = matches!(identity(journaled),
                Some((k, n, Some(h))) if k == c.kind && n == c.name && h != c.hash);
            // A task's two inputs are shown, and what is compared of two gates, so that the
            // change can be found without reading the journal.
            let inputs = match (journaled, &c.detail) {
                (Record::TaskStarted { input, .. }, CommandDetail::Task { call, .. })
                    if different_input =>
                {
                    Some(Box::new((input.clone(), call.input.clone())))
                }
                (Record::GateOpened { gate, .. }, CommandDetail::Gate { spec })
                    if different_input =>
                {
                    Some(Box::new((gate_identity(gate), gate_identity(spec))))
                }
                // The journaled input of a child is its run's parameters, which the driver
                // reads from the child's journal (`null` until then).
                (Record::ChildStarted { .. }, CommandDetail::Child { request, .. })
                    if different_input =>
                {
                    Some(Box::new((Value::Null, request.input.clone())))
                }
                _ => None,
            };
            return Err(self.non_determinism(
                c.step,
                Divergence::Mismatch {
                    journal: StepIdentity::of_record(journaled),
                    code: StepIdentity::new(c.kind, c.name),
                    different_input,
                    inputs,
                },
            ));
        }
        self.insert(c);
        Ok(())
    }

    /// A patch marker the code asks about is at a step where the journal holds another one.
    pub(crate) fn patch_mismatch(&self, step: Step, journal: &str, code: &str) -> NonDeterminism {
        self.non_determinism(
            step,
            Divergence::Patch {
                journal: journal.to_string(),
                code: code.to_string(),
            },
        )
    }

    /// Live: the records that journal a new step and what to do once they are durable.
    pub(crate) fn request_live(&mut self, c: Command, now_ms: u64) -> Actions {
        let step = c.step;
        let mut out = Actions::default();
        match &c.detail {
            CommandDetail::Task { call, .. } => {
                out.records.push(Record::TaskStarted {
                    step,
                    attempt: call.first_attempt,
                    task: call.task.clone(),
                    name: c.name.clone(),
                    input_hash: c.hash,
                    input: call.input.clone(),
                });
                if !call.held {
                    out.effects.push(Effect::Execute(step));
                }
            }
            CommandDetail::Finish { .. } => return self.finish_held(c),
            CommandDetail::Timer { fire_at_ms, .. } => {
                out.records.push(Record::TimerSet {
                    step,
                    fire_at_ms: *fire_at_ms,
                    purpose: TimerPurpose::parse(&c.name).unwrap_or(TimerPurpose::Sleep),
                });
                out.effects
                    .push(Effect::Timer(step, *fire_at_ms, TimerPurpose::Sleep));
            }
            CommandDetail::Gate { spec } => {
                out.records.push(Record::GateOpened {
                    step,
                    gate: Box::new(spec.clone()),
                });
                if let Some(t) = spec.timeout_ms {
                    let at = due_after(now_ms, t);
                    out.records.push(Record::TimerSet {
                        step,
                        fire_at_ms: at,
                        purpose: TimerPurpose::GateTimeout,
                    });
                    out.effects
                        .push(Effect::Timer(step, at, TimerPurpose::GateTimeout));
                }
            }
            CommandDetail::Signal => {
                out.records.push(Record::SignalAwaited {
                    step,
                    name: c.name.clone(),
                });
                if let Some(signal_seq) = self.signals.first_named(&c.name) {
                    out.records
                        .push(Record::SignalDelivered { step, signal_seq });
                }
            }
            CommandDetail::Child {
                request,
                child_run_id,
            } => {
                out.records.push(Record::ChildStarted {
                    step,
                    child_run_id: *child_run_id,
                    workflow: request.workflow.clone(),
                    input_hash: c.hash,
                });
                out.effects.push(Effect::StartChild(step));
            }
            CommandDetail::Record { .. } => {}
        }
        out.records.extend(self.insert(c));
        out
    }

    /// The result of a held task step ([`CommandDetail::Finish`]): its `TaskResultRecord`
    /// while the step runs; nothing when it has its result already (the journal held it, or
    /// the run's cancel ended it).
    fn finish_held(&self, c: Command) -> Actions {
        let CommandDetail::Finish {
            outcome,
            output,
            error,
        } = c.detail
        else {
            return Actions::default();
        };
        match self.steps.get(&c.step).map(|e| &e.machine) {
            Some(Machine::Task(t)) if t.is_held() => match t.running() {
                Some(attempt) => Actions::record(Record::TaskResult {
                    step: c.step,
                    attempt,
                    outcome: outcome.into(),
                    output,
                    error,
                    is_final: true,
                }),
                None => Actions::default(),
            },
            _ => Actions::default(),
        }
    }

    // ---- records ---------------------------------------------------------------------------

    fn resolve(&mut self, step: Step, seq: u64, resolution: Resolution, out: &mut Vec<Resolved>) {
        self.pending.remove(&step);
        out.push(Resolved {
            step,
            seq,
            resolution,
        });
    }

    fn close_gate(&mut self, step: Step, to: GatePhase) -> bool {
        let closed = match self.steps.get_mut(&step).map(|s| &mut s.machine) {
            Some(Machine::Gate(g)) => g.close(to),
            _ => false,
        };
        if closed {
            self.open_gates = self.open_gates.saturating_sub(1);
        }
        closed
    }

    /// Applies a record: the one place where records take effect, for live appends and replay
    /// alike. Completions it causes are pushed to `out`, in order.
    pub(crate) fn apply(
        &mut self,
        seq: u64,
        record: &Record,
        out: &mut Vec<Resolved>,
    ) -> Result<(), NonDeterminism> {
        if let Some(step) = step_of(record)
            && !self.steps.contains_key(&step)
            && !matches!(record, Record::Ignored { .. })
        {
            return Err(self.non_determinism(
                step,
                Divergence::Missing {
                    journal: StepIdentity::of_record(record),
                },
            ));
        }
        fn machine<'a>(s: &'a mut RunState, step: &Step) -> Option<&'a mut Machine> {
            s.steps.get_mut(step).map(|e| &mut e.machine)
        }
        match record {
            Record::TaskStarted { step, attempt, .. } => {
                if let Some(Machine::Task(t)) = machine(self, step) {
                    t.started(*attempt);
                }
            }
            Record::TaskRestarted {
                step,
                attempt,
                execution,
                ..
            } => {
                if let Some(Machine::Task(t)) = machine(self, step) {
                    t.restarted(*attempt, *execution);
                }
            }
            Record::TaskInterrupted { step, attempt, .. } => {
                if let Some(Machine::Task(t)) = machine(self, step) {
                    t.interrupted(*attempt);
                }
            }
            Record::TaskQueued { step, attempt } => {
                if let Some(Machine::Task(t)) = machine(self, step) {
                    t.queued(*attempt, true);
                }
            }
            Record::TaskAdmitted { step, attempt } => {
                if let Some(Machine::Task(t)) = machine(self, step) {
                    t.queued(*attempt, false);
                }
            }
            Record::TaskResult {
                step,
                outcome,
                output,
                error,
                is_final,
                ..
            } => {
                if let Some(Machine::Task(t)) = machine(self, step) {
                    let held = t.is_held();
                    if t.result(*is_final) {
                        if held {
                            // Its code does not wait for the result: it journaled it.
                            self.pending.remove(step);
                        } else {
                            let result = if outcome == "success" {
                                Ok(output.clone())
                            } else {
                                Err(task_error_from_record(outcome.as_str(), output, error))
                            };
                            self.resolve(*step, seq, Resolution::Task(result), out);
                        }
                    }
                }
            }
            Record::TimerSet {
                step,
                fire_at_ms,
                purpose,
            } => match machine(self, step) {
                Some(Machine::Task(t)) if *purpose == TimerPurpose::Retry => {
                    t.retry_set(*fire_at_ms);
                }
                Some(Machine::Timer(t)) => t.set(*fire_at_ms),
                Some(Machine::Gate(g)) => g.timeout_set(*fire_at_ms),
                _ => {}
            },
            Record::TimerFired { step } => match machine(self, step) {
                Some(Machine::Timer(t)) => {
                    let fired = t.fire();
                    if fired {
                        self.resolve(*step, seq, Resolution::Timer, out);
                    }
                }
                Some(Machine::Gate(_)) => {
                    let timed_out = self.close_gate(*step, GatePhase::TimedOut);
                    if timed_out {
                        self.resolve(*step, seq, Resolution::Gate(GateOutcome::TimedOut), out);
                    }
                }
                Some(Machine::Task(t)) => t.retry_fired(),
                _ => {}
            },
            Record::GateAnswered { step, answer } => {
                let answered = self.close_gate(*step, GatePhase::Answered);
                if answered {
                    let outcome = GateOutcome::Answered(answer.clone());
                    self.resolve(*step, seq, Resolution::Gate(outcome), out);
                }
            }
            Record::SignalReceived {
                name,
                payload,
                step,
            } => match step {
                Some(s) => self.signal_arrived(*s, seq, payload.clone(), out),
                None => self.signals.push(Buffered {
                    seq,
                    name: name.clone(),
                    payload: payload.clone(),
                }),
            },
            Record::SignalDelivered { step, signal_seq } => {
                if let Some(signal) = self.signals.take(*signal_seq) {
                    self.signal_arrived(*step, seq, signal.payload, out);
                }
            }
            Record::ChildFinished {
                step,
                status,
                result,
                reason,
            } => {
                // The child ended: there is nothing left to tell it.
                self.child_cancels.remove(step);
                if let Some(Machine::Child(c)) = machine(self, step) {
                    let run_id = c.child();
                    if c.finish() {
                        let outcome = ChildOutcome {
                            run_id,
                            status: *status,
                            result: result.clone(),
                            reason: reason.clone(),
                        };
                        self.resolve(*step, seq, Resolution::Child(outcome), out);
                    }
                }
            }
            Record::PauseRequested { .. } => {
                self.paused = !self.is_terminal() && !self.cancel_requested;
            }
            Record::ResumeRequested { .. } => self.paused = false,
            Record::CancelRequested { reason } => {
                self.cancel_requested = true;
                self.paused = false;
                let pending: Vec<Step> = self.pending.iter().copied().collect();
                for step in pending {
                    let Some(entry) = self.steps.get_mut(&step) else {
                        continue;
                    };
                    let was_gate = entry.machine.kind() == StepKind::Gate;
                    let held = matches!(&entry.machine, Machine::Task(t) if t.is_held());
                    if entry.machine.cancel() {
                        if was_gate {
                            self.open_gates = self.open_gates.saturating_sub(1);
                        }
                        if held {
                            // Nobody waits for it; the cancel ends it.
                            self.pending.remove(&step);
                        } else {
                            self.resolve(step, seq, Resolution::Cancelled(reason.clone()), out);
                        }
                    }
                }
            }
            Record::ChildCancelRequested {
                step,
                child_run_id,
                reason,
            } => {
                self.note_child_cancel(*step, *child_run_id, reason.clone());
            }
            // Nobody awaits the gate: it completes without a resolution (the code dropped
            // its future, so it would be delivered to nobody).
            Record::GateWithdrawn { step, .. } if self.close_gate(*step, GatePhase::Withdrawn) => {
                self.pending.remove(step);
            }
            Record::Status { status, reason } => {
                self.last_status = Some((*status, reason.clone()));
            }
            Record::Ignored { .. } if self.is_terminal() => {
                self.late_records = self.late_records.saturating_add(1);
            }
            _ => {}
        }
        Ok(())
    }

    fn signal_arrived(&mut self, step: Step, seq: u64, payload: Value, out: &mut Vec<Resolved>) {
        if let Some(StepEntry {
            machine: Machine::Signal(s),
            ..
        }) = self.steps.get_mut(&step)
            && !s.is_resolved()
        {
            *s = SignalStep::Received;
            self.resolve(step, seq, Resolution::Signal(payload), out);
        }
    }

    // ---- what the driver asks ----------------------------------------------------------------

    /// The task attempt of `step` to run: its label, call and attempt number.
    pub(crate) fn attempt(&self, step: Step) -> Option<(&str, &TaskCallSpec, u32)> {
        let entry = self.steps.get(&step)?;
        match &entry.machine {
            Machine::Task(t) => Some((entry.name.as_str(), t.call()?, t.running()?)),
            _ => None,
        }
    }

    /// The child of `step` while it runs: its run id and what it runs.
    pub(crate) fn child(&self, step: Step) -> Option<(RunId, &ChildRequest)> {
        match &self.steps.get(&step)?.machine {
            Machine::Child(c) => Some((c.child(), c.request()?)),
            _ => None,
        }
    }
}

/// Options for a task call: the call's own, else those of the task registered under its name.
pub(crate) fn resolve_options(
    detail: &mut CommandDetail,
    registered: impl FnOnce(&str) -> Option<TaskOptions>,
) {
    if let CommandDetail::Task { call, own_options } = detail
        && !*own_options
    {
        let resolved = registered(&call.task)
            .or_else(|| call.registration.as_ref().map(|r| r.options.clone()));
        call.options = resolved.unwrap_or_default();
        *own_options = true;
    }
}

#[cfg(test)]
mod tests;
