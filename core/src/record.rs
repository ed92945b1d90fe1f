//! The journal's record vocabulary.
//!
//! A run is an append-only sequence of [`Record`]s keyed by `(run_id, seq)`. The names follow
//! the Vancetope reference (`StartRecord`, `StateEnteredRecord`, `TaskStartedRecord`, …) plus
//! what replay needs (timers, gates, children, signals, side effects). Every record that a
//! workflow's code causes carries the `step` it belongs to: steps are numbered in program order
//! when the code creates them, which is how replay matches code to journal.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::RunId;
use crate::vocabulary::{Frontend, Outcome, RunScope, TimerPurpose};

/// A step number within a run, assigned in program order.
pub type Step = u32;

/// One journal entry: a record and the wall-clock time it was appended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Position in the run's journal, from 0.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when the record was appended.
    #[serde(rename = "createdAt")]
    pub at_ms: u64,
    /// The record.
    #[serde(flatten)]
    pub record: Record,
}

/// The status of a run, as the API and the `magrathea` command show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunStatus {
    /// Running or ready to run.
    Running,
    /// Waiting on a gate (an inbox item) to be answered.
    Waiting,
    /// Finished successfully.
    Done,
    /// Finished with a failure.
    Failed,
    /// Stopped by a cancellation.
    Cancelled,
    /// Stopped because its code no longer matches its journal (non-determinism).
    Blocked,
    /// Paused by an operator: it starts nothing new (no task attempt, child, timer or gate)
    /// until it is resumed; what already runs finishes and is journaled.
    Paused,
}

impl RunStatus {
    /// Whether the run will not change any more on its own.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunStatus::Done | RunStatus::Failed | RunStatus::Cancelled
        )
    }

    /// The upper-case name (`DONE`, `WAITING`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "RUNNING",
            RunStatus::Waiting => "WAITING",
            RunStatus::Done => "DONE",
            RunStatus::Failed => "FAILED",
            RunStatus::Cancelled => "CANCELLED",
            RunStatus::Blocked => "BLOCKED",
            RunStatus::Paused => "PAUSED",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            RunStatus::Running => 0,
            RunStatus::Waiting => 1,
            RunStatus::Done => 2,
            RunStatus::Failed => 3,
            RunStatus::Cancelled => 4,
            RunStatus::Blocked => 5,
            RunStatus::Paused => 6,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<Self> {
        Some(match c {
            0 => RunStatus::Running,
            1 => RunStatus::Waiting,
            2 => RunStatus::Done,
            3 => RunStatus::Failed,
            4 => RunStatus::Cancelled,
            5 => RunStatus::Blocked,
            6 => RunStatus::Paused,
            _ => return None,
        })
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for RunStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "RUNNING" => RunStatus::Running,
            "WAITING" => RunStatus::Waiting,
            "DONE" => RunStatus::Done,
            "FAILED" => RunStatus::Failed,
            "CANCELLED" => RunStatus::Cancelled,
            "BLOCKED" => RunStatus::Blocked,
            "PAUSED" => RunStatus::Paused,
            other => return Err(format!("unknown run status `{other}`")),
        })
    }
}

/// Where a child run came from: the parent run and the parent's step (or YAML state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParentRef {
    /// The parent run (`parentMagratheaProcessId` in the reference).
    #[serde(rename = "parentMagratheaProcessId")]
    pub run_id: RunId,
    /// The parent's step that started this run.
    pub step: Step,
    /// The parent's state name, for YAML parents (`parentState`).
    #[serde(rename = "parentState", skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The first record of every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartRecord {
    /// The workflow's name.
    pub workflow_name: String,
    /// The workflow's version (free text; empty when none).
    pub workflow_version: String,
    /// Which front end runs the definition: `code` for `#[workflow]`s, `yaml` for documents.
    pub frontend: Frontend,
    /// The caller's parameters (the workflow input).
    pub params: Value,
    /// The frozen definition (the YAML body), when the front end has one.
    #[serde(rename = "definitionYaml", skip_serializing_if = "Option::is_none")]
    pub definition: Option<String>,
    /// The parent run, for child runs.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub parent: Option<ParentRef>,
    /// Who started the run.
    pub started_by: String,
    /// The idempotency key the run was started with, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Scope of the run (`tenant/project`, or empty).
    #[serde(skip_serializing_if = "RunScope::is_empty", default)]
    pub scope: RunScope,
    /// Who the caller said the run is for, when that differs from the authenticated
    /// `started_by` (e.g. a `startedBy` in an API request's body). Not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// Bounds the run's scope set when it started, for the bounds its definition declares
    /// none of (e.g. `{"maxTaskSpawns": 10000, "setting": "bounds.maxTaskSpawns"}` from the
    /// tenant's settings). Frozen here so that replay applies the bounds the run started
    /// with, never the settings of the day; the front end gives the object its meaning.
    /// Absent for runs started without such defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounds: Option<Value>,
    /// Where the run begins when it does not begin at its definition's start: a retry of
    /// another run from one of its states, with the variables that run had when it entered
    /// it. Frozen here so that replay begins where the live run began. Absent for runs that
    /// begin at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<EntryPoint>,
}

/// Where a run begins other than at its definition's start (see [`StartRecord::entry`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EntryPoint {
    /// The state (a YAML state name) the run enters first.
    pub state: String,
    /// The run's variables when it enters it (a JSON object).
    #[serde(default)]
    pub vars: Value,
}

/// The three kinds of inbox item a gate opens (the Vancetope `gate_task` kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum GateKind {
    /// Approve or reject.
    Approval,
    /// Choose one of `options`.
    Decision,
    /// Free text.
    Feedback,
}

impl GateKind {
    /// The upper-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            GateKind::Approval => "APPROVAL",
            GateKind::Decision => "DECISION",
            GateKind::Feedback => "FEEDBACK",
        }
    }
}

/// What a gate asks of a person: the inbox item's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateSpec {
    /// The kind of question.
    pub kind: GateKind,
    /// Short title.
    pub title: String,
    /// Longer text.
    #[serde(default)]
    pub body: String,
    /// The choices, for [`GateKind::Decision`].
    #[serde(default)]
    pub options: Vec<String>,
    /// A user name, `@group` or tag.
    #[serde(default)]
    pub assigned_to: String,
    /// `LOW`, `NORMAL` or `CRITICAL`.
    #[serde(default)]
    pub criticality: String,
    /// Labels.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Timeout in milliseconds; the timeout races the answer and the first journaled wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Extra data for the UI (the YAML front end puts `workflowState` here).
    #[serde(default)]
    pub meta: Value,
}

/// How a person answered a gate (the reference's answer outcomes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AnswerOutcome {
    /// A decision was made; see the answer's `value`.
    Decided,
    /// The person needs more information.
    InsufficientInfo,
    /// The person cannot decide.
    Undecidable,
}

/// An answer to a gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateAnswer {
    /// The answer outcome.
    pub outcome: AnswerOutcome,
    /// `{approved: bool}` for approvals, `{chosen: "<option>"}` for decisions, `{text}` for
    /// feedback.
    #[serde(default)]
    pub value: Value,
    /// Optional comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Who answered.
    #[serde(default)]
    pub answered_by: String,
}

impl GateAnswer {
    /// Approve an [`GateKind::Approval`] gate.
    pub fn approve() -> Self {
        Self::decided(serde_json::json!({ "approved": true }))
    }
    /// Reject an [`GateKind::Approval`] gate.
    pub fn reject() -> Self {
        Self::decided(serde_json::json!({ "approved": false }))
    }
    /// Choose an option of a [`GateKind::Decision`] gate.
    pub fn choose(option: impl Into<String>) -> Self {
        Self::decided(serde_json::json!({ "chosen": option.into() }))
    }
    /// Answer a [`GateKind::Feedback`] gate.
    pub fn text(text: impl Into<String>) -> Self {
        Self::decided(serde_json::json!({ "text": text.into() }))
    }
    /// "I need more information."
    pub fn insufficient_info() -> Self {
        Self {
            outcome: AnswerOutcome::InsufficientInfo,
            ..Self::decided(Value::Null)
        }
    }
    /// "This cannot be decided."
    pub fn undecidable() -> Self {
        Self {
            outcome: AnswerOutcome::Undecidable,
            ..Self::decided(Value::Null)
        }
    }
    fn decided(value: Value) -> Self {
        Self {
            outcome: AnswerOutcome::Decided,
            value,
            comment: None,
            answered_by: String::new(),
        }
    }
    /// Adds a comment.
    pub fn with_comment(mut self, comment: impl Into<String>) -> Self {
        self.comment = Some(comment.into());
        self
    }
    /// Names who answered.
    pub fn by(mut self, who: impl Into<String>) -> Self {
        self.answered_by = who.into();
        self
    }
}

/// The kind of a step, as journaled in its first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// A task execution.
    Task,
    /// A durable timer.
    Timer,
    /// A gate (inbox item).
    Gate,
    /// A wait for a named signal.
    Signal,
    /// A child run.
    Child,
    /// A recorded value (`now()`, `random()`, `uuid()`).
    SideEffect,
    /// A state entered (YAML interpreter).
    State,
    /// A stored variable.
    Var,
}

/// A journal record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum Record {
    /// The run started.
    #[serde(rename = "StartRecord")]
    Start(Box<StartRecord>),
    /// The YAML interpreter entered a state.
    #[serde(rename = "StateEnteredRecord")]
    StateEntered {
        /// Step number.
        step: Step,
        /// The state's name.
        state: String,
    },
    /// An attempt of a task is about to run. Durable before the task runs.
    #[serde(rename = "TaskStartedRecord", rename_all = "camelCase")]
    TaskStarted {
        /// Step number.
        step: Step,
        /// Attempt number, from 1.
        attempt: u32,
        /// The registered task (or task type) that runs.
        task: String,
        /// A label: the YAML state name, or the task name for code.
        name: String,
        /// Hash of the input, checked on replay.
        input_hash: u64,
        /// The input.
        input: Value,
    },
    /// An attempt whose start is journaled and whose result is not runs again: the process
    /// that ran it stopped (a crash, a kill, a lost lease) and recovery executes it once more.
    /// Durable before the attempt runs again, so the journal shows every execution of a side
    /// effect. Not a workflow command: replay counts it and asks nothing of the code.
    #[serde(rename = "TaskRestartedRecord", rename_all = "camelCase")]
    TaskRestarted {
        /// Step number.
        step: Step,
        /// The attempt that runs again (its `TaskStartedRecord` keeps the number).
        attempt: u32,
        /// Which execution of the attempt this is: 2 for the first re-execution (the
        /// `TaskStartedRecord` stands for the first), 3 for the next, and so on. An execution
        /// that never began (it was queued and not admitted when its process stopped) is not
        /// counted: the attempt runs again under the same number.
        execution: u32,
        /// The process that runs it again (`host:pid`, or a worker's name).
        worker: String,
    },
    /// The process running an execution of an attempt stopped cleanly (`Engine::stop`: a
    /// shutdown, Ctrl-C) before the attempt's result: the attempt runs again on
    /// the next open, and that execution does not count against `maxClaimAttempts`, which
    /// stops tasks whose process dies each time they run. Journaled before the process lets
    /// go of the run; a process that dies instead journals nothing. Not a workflow command.
    #[serde(rename = "TaskInterruptedRecord", rename_all = "camelCase")]
    TaskInterrupted {
        /// Step number.
        step: Step,
        /// The attempt that was running.
        attempt: u32,
        /// Which execution of it stopped (1 for the one its `TaskStartedRecord` began).
        execution: u32,
        /// The process that stopped (`host:pid`, or a worker's name).
        worker: String,
    },
    /// The running attempt waits for a place to run that other attempts hold (its project's
    /// lane is full): it has not begun. Not durable before the wait: a journal without it
    /// only counts the wait as an execution. Not a workflow command.
    #[serde(rename = "TaskQueuedRecord")]
    TaskQueued {
        /// Step number.
        step: Step,
        /// The attempt that waits.
        attempt: u32,
    },
    /// The attempt that waited (a `TaskQueuedRecord`) has its place and begins now. Durable
    /// before it begins, so that recovery tells an attempt that never began (its execution is
    /// not counted against `maxClaimAttempts`) from one that did. Not a workflow command.
    #[serde(rename = "TaskAdmittedRecord")]
    TaskAdmitted {
        /// Step number.
        step: Step,
        /// The attempt that begins.
        attempt: u32,
    },
    /// An attempt of a task finished.
    #[serde(rename = "TaskResultRecord", rename_all = "camelCase")]
    TaskResult {
        /// Step number.
        step: Step,
        /// Attempt number.
        attempt: u32,
        /// `success`, or the error kind (`technical_error`, `timeout`, …).
        outcome: Outcome,
        /// The output, or the error's data.
        output: Value,
        /// The error message, for failures.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Whether this result is final for the step (no retry follows).
        #[serde(rename = "final")]
        is_final: bool,
    },
    /// A variable was stored (`storeAs`).
    #[serde(rename = "VarRecord")]
    Var {
        /// Step number.
        step: Step,
        /// Variable name.
        key: String,
        /// Value.
        value: Value,
    },
    /// The run's status changed.
    #[serde(rename = "StatusRecord")]
    Status {
        /// The new status.
        status: RunStatus,
        /// Why (failures, blocks, cancellations).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The run's result.
    #[serde(rename = "ResultRecord")]
    Result {
        /// The terminal state that produced it (YAML), if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        state: Option<String>,
        /// The result value.
        result: Value,
    },
    /// A durable timer was set.
    #[serde(rename = "TimerSetRecord", rename_all = "camelCase")]
    TimerSet {
        /// Step number.
        step: Step,
        /// When it fires, ms since the epoch.
        fire_at_ms: u64,
        /// What it is for (`sleep`, `retry`, `gate-timeout`).
        purpose: TimerPurpose,
    },
    /// A timer fired.
    #[serde(rename = "TimerFiredRecord")]
    TimerFired {
        /// Step number.
        step: Step,
    },
    /// A gate opened an inbox item.
    #[serde(rename = "GateOpenedRecord")]
    GateOpened {
        /// Step number.
        step: Step,
        /// What it asks.
        gate: Box<GateSpec>,
    },
    /// A gate was answered.
    #[serde(rename = "GateAnsweredRecord")]
    GateAnswered {
        /// Step number.
        step: Step,
        /// The answer.
        answer: GateAnswer,
    },
    /// The code waits for a named signal.
    #[serde(rename = "SignalAwaitedRecord")]
    SignalAwaited {
        /// Step number.
        step: Step,
        /// Signal name.
        name: String,
    },
    /// A signal arrived; `step` is the wait it completed, if one was waiting.
    #[serde(rename = "SignalReceivedRecord")]
    SignalReceived {
        /// Signal name.
        name: String,
        /// Payload.
        payload: Value,
        /// The wait it completed.
        #[serde(skip_serializing_if = "Option::is_none")]
        step: Option<Step>,
    },
    /// A buffered signal (journaled at `signal_seq`) completed a later wait.
    #[serde(rename = "SignalDeliveredRecord", rename_all = "camelCase")]
    SignalDelivered {
        /// Step number of the wait.
        step: Step,
        /// The journal seq of the buffered `SignalReceivedRecord`.
        signal_seq: u64,
    },
    /// A child run was started.
    #[serde(rename = "ChildStartedRecord", rename_all = "camelCase")]
    ChildStarted {
        /// Step number.
        step: Step,
        /// The child's run id.
        child_run_id: RunId,
        /// The child's workflow.
        workflow: String,
        /// Hash of the child's input, checked on replay.
        input_hash: u64,
    },
    /// A child run finished.
    #[serde(rename = "ChildFinishedRecord")]
    ChildFinished {
        /// Step number.
        step: Step,
        /// The child's final status.
        status: RunStatus,
        /// The child's result (or `null`).
        result: Value,
        /// The child's failure reason.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A recorded value (`now()`, `random()`, `uuid()`), returned as is on replay.
    #[serde(rename = "SideEffectRecord")]
    SideEffect {
        /// Step number.
        step: Step,
        /// What produced it.
        name: String,
        /// The value.
        value: Value,
    },
    /// Cancellation was requested.
    #[serde(rename = "CancelRequestedRecord")]
    CancelRequested {
        /// Why.
        reason: String,
    },
    /// This run asked its child run (started at `step`) to cancel: because this run was
    /// cancelled, because it ended while the child still ran, or because nothing awaits the
    /// child any more (the loser of a select, e.g. a timeout). Durable before the child is
    /// told; the child journals a `CancelRequestedRecord` with the same reason.
    #[serde(rename = "ChildCancelRequestedRecord", rename_all = "camelCase")]
    ChildCancelRequested {
        /// The step that started the child.
        step: Step,
        /// The child's run id.
        child_run_id: RunId,
        /// The reason the child is given.
        reason: String,
    },
    /// Nothing awaits the gate at `step` any more: the code dropped its future before it
    /// completed (the loser of a select, e.g. a timer won). Its inbox item closes, the run
    /// stops counting it as open, and a later answer is not applied (it lands on the item, as
    /// after a timeout). Not a workflow command: replay is the same with or without it.
    #[serde(rename = "GateWithdrawnRecord")]
    GateWithdrawn {
        /// The gate's step.
        step: Step,
        /// Why (`the run stopped waiting for it: …`).
        reason: String,
    },
    /// An operator paused the run: from here on it dispatches nothing new (task attempts,
    /// children, timers, gates) until a `ResumeRequestedRecord`. Not a workflow command: the
    /// code sees nothing of it, so replay is the same with or without it.
    #[serde(rename = "PauseRequestedRecord")]
    PauseRequested {
        /// Who paused it.
        by: String,
        /// Why, if they said.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// An operator resumed a paused run: what it held is dispatched now.
    #[serde(rename = "ResumeRequestedRecord")]
    ResumeRequested {
        /// Who resumed it.
        by: String,
    },
    /// A completion arrived for a step that was already complete and was not applied.
    #[serde(rename = "IgnoredRecord")]
    Ignored {
        /// The step.
        step: Step,
        /// What arrived (`gate answer`, `timer fired`, `task result`, …).
        what: String,
        /// A gate answer that came after the gate ended: unanswered (its timeout fired first,
        /// or the run ended), it lands on the inbox item, and the run does not react
        /// (reference §3.4); after another answer (a race the other won), the item keeps the
        /// first. Journals written before a losing answer was kept have none here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        answer: Option<GateAnswer>,
    },
}

impl Record {
    /// Whether the record marks a milestone of its run's life rather than a step of its work:
    /// its start and status, a pause or a resume, a gate opened or answered, a timer fired.
    /// [`Engine::subscribe_milestones`](crate::Engine::subscribe_milestones) carries these
    /// only.
    pub fn is_milestone(&self) -> bool {
        matches!(
            self,
            Record::Start(_)
                | Record::Status { .. }
                | Record::GateOpened { .. }
                | Record::GateAnswered { .. }
                | Record::TimerFired { .. }
                | Record::PauseRequested { .. }
                | Record::ResumeRequested { .. }
        )
    }

    /// The record's type name (`StartRecord`, `TaskResultRecord`, …).
    pub fn type_name(&self) -> &'static str {
        match self {
            Record::Start(_) => "StartRecord",
            Record::StateEntered { .. } => "StateEnteredRecord",
            Record::TaskStarted { .. } => "TaskStartedRecord",
            Record::TaskRestarted { .. } => "TaskRestartedRecord",
            Record::TaskInterrupted { .. } => "TaskInterruptedRecord",
            Record::TaskQueued { .. } => "TaskQueuedRecord",
            Record::TaskAdmitted { .. } => "TaskAdmittedRecord",
            Record::TaskResult { .. } => "TaskResultRecord",
            Record::Var { .. } => "VarRecord",
            Record::Status { .. } => "StatusRecord",
            Record::Result { .. } => "ResultRecord",
            Record::TimerSet { .. } => "TimerSetRecord",
            Record::TimerFired { .. } => "TimerFiredRecord",
            Record::GateOpened { .. } => "GateOpenedRecord",
            Record::GateAnswered { .. } => "GateAnsweredRecord",
            Record::SignalAwaited { .. } => "SignalAwaitedRecord",
            Record::SignalReceived { .. } => "SignalReceivedRecord",
            Record::SignalDelivered { .. } => "SignalDeliveredRecord",
            Record::ChildStarted { .. } => "ChildStartedRecord",
            Record::ChildFinished { .. } => "ChildFinishedRecord",
            Record::SideEffect { .. } => "SideEffectRecord",
            Record::CancelRequested { .. } => "CancelRequestedRecord",
            Record::ChildCancelRequested { .. } => "ChildCancelRequestedRecord",
            Record::GateWithdrawn { .. } => "GateWithdrawnRecord",
            Record::Ignored { .. } => "IgnoredRecord",
            Record::PauseRequested { .. } => "PauseRequestedRecord",
            Record::ResumeRequested { .. } => "ResumeRequestedRecord",
        }
    }
}
