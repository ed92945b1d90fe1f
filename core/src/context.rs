//! The workflow context: the only door from workflow code to the world.
//!
//! Every method creates a *step* with the next step number, in program order, at the moment it
//! is called (not when its future is first polled). Live, the step's start is journaled and then
//! acted on; on replay it is matched against the journal by step number, kind, name and input
//! hash, and its journaled completion is fed back instead of acting again.

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::task::Waker;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

use crate::codec::{input_hash, str_hash};
use crate::id::RunId;
use crate::record::{Entry, GateAnswer, GateSpec, Record, RunStatus, Step, StepKind};
use crate::replay::{Replayed, TaskAsked, due_after};
use crate::select::{NextCompleted, Select};
use crate::step_future::StepFuture;
use crate::task::{TaskError, TaskOptions, TaskRegistration};
use crate::vocabulary::{Frontend, RunScope, TimerPurpose};

pub(crate) use crate::link::{Link, lock};

/// How a step ended, as fed to the code.
#[derive(Debug, Clone)]
pub(crate) enum Resolution {
    Task(Result<Value, TaskError>),
    Timer,
    Gate(GateOutcome),
    Signal(Value),
    Child(ChildOutcome),
    Cancelled(String),
}

/// How a gate ended.
#[derive(Debug, Clone, PartialEq)]
pub enum GateOutcome {
    /// A person answered first.
    Answered(GateAnswer),
    /// The gate's timeout fired first.
    TimedOut,
    /// The run was cancelled while the gate was open.
    Cancelled(String),
}

/// How a child run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildOutcome {
    /// The child's run id.
    pub run_id: RunId,
    /// `DONE`, `FAILED` or `CANCELLED`.
    pub status: RunStatus,
    /// The child's result (`null` when it wrote none).
    pub result: Value,
    /// The child's failure reason.
    pub reason: Option<String>,
}

/// A map keyed by step number. Steps are small sequential integers hashed many times per
/// step in long replays; FxHash costs a fraction of the default SipHash and needs no
/// protection against chosen keys (the engine numbers the steps).
pub(crate) type StepMap<V> = rustc_hash::FxHashMap<Step, V>;
/// A set of step numbers (see [`StepMap`]).
pub(crate) type StepSet = rustc_hash::FxHashSet<Step>;

/// A step the code asked for; the driver journals and acts on it (or matches it on replay).
#[derive(Debug, Clone)]
pub(crate) struct Command {
    pub(crate) step: Step,
    pub(crate) kind: StepKind,
    pub(crate) name: String,
    pub(crate) hash: u64,
    pub(crate) detail: CommandDetail,
}

#[derive(Debug, Clone)]
pub(crate) enum CommandDetail {
    /// A task call, boxed as the run state keeps it: a command is moved several times on
    /// its way from the code to the run state, and the call is most of its size.
    Task {
        call: Box<crate::replay::TaskCallSpec>,
        /// Whether the call gave its own options; if not, `resolve_options` fills in the
        /// registration's before the step is matched or journaled.
        own_options: bool,
    },
    Timer {
        fire_at_ms: u64,
        /// The wall clock when the code asked (0 when replayed from the journal): a sleep
        /// held while the run is paused counts from the resume by the time since then.
        asked_at_ms: u64,
    },
    Gate {
        spec: GateSpec,
    },
    Signal,
    Child {
        request: Box<ChildRequest>,
        child_run_id: RunId,
    },
    /// A record that completes with its creation (side effect, state entered, var).
    Record {
        record: Record,
    },
    /// The result of the held task step `Command::step` ([`WorkflowContext::held_task`]):
    /// no new step. Journaled as its `TaskResultRecord` unless the step has one already.
    Finish {
        outcome: String,
        output: Value,
        error: Option<String>,
    },
}

/// What a child run is.
#[derive(Debug, Clone, PartialEq)]
pub struct ChildRequest {
    /// The child's workflow name.
    pub workflow: String,
    /// The front end (`code`, `yaml`).
    pub frontend: Frontend,
    /// The frozen definition, for front ends that have one.
    pub definition: Option<String>,
    /// The workflow's version.
    pub version: String,
    /// The child's input.
    pub input: Value,
    /// The parent's state name (YAML), journaled as the child's `parentState`.
    pub parent_state: Option<String>,
    /// The child's `tenant/project` scope; `None` runs it in the parent's scope.
    pub scope: Option<RunScope>,
    /// The deepest sub-run nesting allowed for this child (a root run is at depth 0, its
    /// children at 1, …): a child that would run deeper is not started and its step fails with
    /// `[MAG-CH002]`. `None` takes the engine's limit
    /// ([`EngineBuilder::max_child_depth`](crate::EngineBuilder::max_child_depth), 32 by
    /// default); the YAML front end sets it from `subRuns.maxDepth` in the project's settings.
    pub max_depth: Option<u32>,
    /// Bounds the child's scope sets where its definition declares none, frozen in the
    /// child's [`StartRecord::bounds`](crate::StartRecord::bounds). Whoever builds the request
    /// must build the same value on replay (the YAML front end journals it with the document).
    pub bounds: Option<Value>,
}

impl ChildRequest {
    /// A child running the registered code workflow `workflow`.
    pub fn code(workflow: impl Into<String>, input: Value) -> Self {
        Self {
            workflow: workflow.into(),
            frontend: "code".into(),
            definition: None,
            version: String::new(),
            input,
            parent_state: None,
            scope: None,
            max_depth: None,
            bounds: None,
        }
    }

    /// Sets the nesting depth limit for this child (see [`max_depth`](Self::max_depth)).
    pub fn with_max_depth(mut self, max_depth: u32) -> Self {
        self.max_depth = Some(max_depth);
        self
    }
}

/// A task step the code asks for.
#[derive(Debug, Clone)]
pub struct TaskCall {
    /// The registered task that runs.
    pub task: String,
    /// The journaled label (a YAML state name); defaults to the task name.
    pub name: Option<String>,
    /// The input.
    pub input: Value,
    /// Options; `None` takes the registration's.
    pub options: Option<TaskOptions>,
    /// The task's body, for tasks the engine was not given by name: a call that carries its
    /// body runs without `EngineBuilder::task` (registering by name only exposes a task to
    /// YAML and tools). A task registered under the same name takes precedence.
    pub registration: Option<TaskRegistration>,
    /// The number the step's first attempt is journaled with; `None` is 1. Code that retries
    /// by asking for a new step (the YAML front end's `retry:`, which routes on outcomes
    /// between attempts) numbers the attempts of one state on, so the journal reads
    /// attempt 1, 2, 3 as with the engine's own retries. Replay does not compare it.
    pub first_attempt: Option<u32>,
}

pub(crate) struct Shared {
    pub(crate) run_id: RunId,
    pub(crate) next_step: Step,
    pub(crate) commands: Vec<Command>,
    /// Completions delivered and not yet taken, with their journal seq (select order).
    pub(crate) resolved: StepMap<(u64, Resolution)>,
    pub(crate) wakers: StepMap<Waker>,
    /// Steps whose futures were dropped before completing.
    pub(crate) dropped: StepSet,
    /// Steps dropped since the driver last looked (it cancels the children of dropped child
    /// steps).
    pub(crate) newly_dropped: Vec<Step>,
    /// The journal being replayed (dropped once every journaled step was requested again).
    pub(crate) journal: Option<Arc<Vec<Entry>>>,
    /// The index in `journal` of each step's first record, for values replay must return
    /// unchanged.
    pub(crate) journaled: crate::replay::FirstRecords,
    pub(crate) replaying: bool,
    /// Task steps the code completed straight from the journal since the driver last looked
    /// (see [`Shared::task_from_journal`]): the driver records them as complete in the run
    /// state before it applies another record or a command.
    pub(crate) replayed_tasks: Vec<Step>,
    pub(crate) cancelled: Option<String>,
    /// The run's deadline timer (see [`WorkflowContext::deadline`]): its step and the reason
    /// the run is cancelled with when it fires.
    pub(crate) deadline: Option<(Step, String)>,
    /// Whether the deadline timer's `TimerFiredRecord` was applied.
    pub(crate) deadline_fired: bool,
    pub(crate) result_state: Option<String>,
    /// Names of the tasks registered with the engine.
    pub(crate) tasks: Arc<rustc_hash::FxHashSet<String>>,
    /// Patch markers the code asked about where the journal holds another marker: step, the
    /// journal's marker, the code's marker.
    pub(crate) patch_conflicts: Vec<(Step, String, String)>,
    /// The first step the code made outside the driver's run of it (see
    /// [`code_runs_here`](crate::engine::code_runs_here)); the driver blocks the run.
    pub(crate) made_elsewhere: Option<Step>,
}

impl Shared {
    pub(crate) fn new(run_id: RunId, tasks: Arc<rustc_hash::FxHashSet<String>>) -> Self {
        Self {
            run_id,
            tasks,
            next_step: 0,
            commands: Vec::new(),
            resolved: StepMap::default(),
            wakers: StepMap::default(),
            dropped: StepSet::default(),
            newly_dropped: Vec::new(),
            journal: None,
            journaled: crate::replay::FirstRecords::default(),
            replaying: false,
            replayed_tasks: Vec::new(),
            cancelled: None,
            deadline: None,
            deadline_fired: false,
            result_state: None,
            patch_conflicts: Vec::new(),
            made_elsewhere: None,
        }
    }

    /// Replay's shortcut for a task step: when the records at `at` (the next the driver would
    /// apply) are the step's first attempt and its final result
    /// ([`crate::replay::completed_in_one`]), the step can be created complete: its records
    /// are skipped by the driver, and its future holds the completion the driver would
    /// deliver after applying them (the result record returned here), without a command to
    /// the driver or a machine in the run state; it shows from the code's next poll, as a
    /// delivered one would. The caller then calls [`Shared::took_from_journal`], moves
    /// `Link::replay_next` past the two records and notes the step in `replayed_tasks`.
    /// `None` when the step takes the usual path (live, steps queued before it, any other
    /// journal).
    fn task_from_journal(&self, at: usize, asked: TaskAsked<'_>) -> Option<&Entry> {
        if !self.replaying || !self.commands.is_empty() {
            return None;
        }
        let journal = self.journal.as_deref()?;
        crate::replay::completed_in_one(journal, at, self.next_step, asked)
    }

    /// The step [`Shared::task_from_journal`] completed was made.
    fn took_from_journal(&mut self) -> Step {
        let step = self.next_step;
        self.next_step += 1;
        self.journaled.take(step);
        if self.journaled.is_empty() {
            // The last journaled step was requested: the journal can go.
            self.journal = None;
        }
        step
    }

    /// Leaves the driver a command about `step` (made by the caller, or made before for a
    /// [`CommandDetail::Finish`]).
    pub(crate) fn command(
        &mut self,
        link: &Arc<Link>,
        step: Step,
        kind: StepKind,
        name: String,
        hash: u64,
        detail: CommandDetail,
    ) {
        if !crate::engine::code_runs_here(link) {
            self.made_elsewhere.get_or_insert(step);
        }
        self.commands.push(Command {
            step,
            kind,
            name,
            hash,
            detail,
        });
        link.left_work();
    }

    /// What the journal recorded for `step`, while it is being replayed.
    pub(crate) fn replayed(&self, step: Step) -> Option<Replayed<'_>> {
        let i = self.journaled.get(step)?;
        self.journal
            .as_ref()?
            .get(i)
            .map(|e| Replayed::of(&e.record))
    }
}

/// The context a workflow runs in. Cheap to clone; all clones are the same run.
#[derive(Clone)]
pub struct WorkflowContext {
    pub(crate) shared: Arc<Link>,
}

impl fmt::Debug for WorkflowContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkflowContext")
            .field("run_id", &self.run_id())
            .finish()
    }
}

/// What a task step's future returns for its completion.
pub(crate) fn task_resolution(r: Resolution) -> Result<Value, TaskError> {
    match r {
        Resolution::Task(r) => r,
        Resolution::Cancelled(reason) => Err(TaskError::cancelled(&reason)),
        other => Err(TaskError::terminal(format!(
            "unexpected completion {other:?}"
        ))),
    }
}

fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl WorkflowContext {
    pub(crate) fn new(shared: Arc<Link>) -> Self {
        Self { shared }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Shared> {
        lock(&self.shared)
    }

    pub(crate) fn push(
        &self,
        kind: StepKind,
        name: String,
        hash: u64,
        detail: CommandDetail,
    ) -> Step {
        let mut s = self.lock();
        let step = s.next_step;
        s.next_step += 1;
        s.command(&self.shared, step, kind, name, hash, detail);
        step
    }

    fn future<T>(
        &self,
        step: Step,
        map: impl FnOnce(Resolution) -> T + Send + 'static,
    ) -> StepFuture<T> {
        StepFuture::pending(self.shared.clone(), step, map)
    }

    /// Whether a task of this name is registered with the engine (registrations are fixed
    /// when the engine is built, so the answer is the same on replay).
    pub fn is_task_registered(&self, name: &str) -> bool {
        self.lock().tasks.contains(name)
    }

    /// This run's id.
    pub fn run_id(&self) -> RunId {
        self.lock().run_id
    }

    /// Whether the code is being replayed against the journal (for logging only: code must
    /// behave the same either way).
    pub fn is_replaying(&self) -> bool {
        self.lock().replaying
    }

    /// The reason, once cancellation of the run was requested. Steps pending at that moment
    /// end with a `cancelled` error; steps created afterwards run normally, so the code can
    /// clean up.
    pub fn cancellation(&self) -> Option<String> {
        self.lock().cancelled.clone()
    }

    /// Sets the run's deadline, `after` from now: a durable timer (its `TimerSetRecord` says
    /// `deadline`) that, when it fires, requests the run's cancellation with `reason` in the
    /// same commit as its `TimerFiredRecord` — every pending step ends `cancelled` (running
    /// tasks are stopped, children cancelled, gates closed), as with an operator's cancel.
    /// [`deadline_exceeded`](Self::deadline_exceeded) tells the two apart; steps created
    /// afterwards run normally, so the code can route or clean up.
    ///
    /// Whether the deadline fired is decided by the journal: replay applies the journaled
    /// firing and cancellation, never the clock. Call it at most once per run; a later call
    /// is ignored.
    pub fn deadline(&self, after: Duration, reason: &str) {
        if self.lock().deadline.is_some() {
            return;
        }
        let ms = u64::try_from(after.as_millis()).unwrap_or(u64::MAX);
        let step = self.lock().next_step;
        let (fire_at_ms, asked_at_ms) = match self.lock().replayed(step) {
            Some(Replayed::TimerAt(at)) => (at, 0),
            _ => {
                let now = wall_ms();
                (due_after(now, ms), now)
            }
        };
        let step = self.push(
            StepKind::Timer,
            TimerPurpose::Deadline.as_str().into(),
            input_hash(&Value::from(ms)),
            CommandDetail::Timer {
                fire_at_ms,
                asked_at_ms,
            },
        );
        self.lock().deadline = Some((step, reason.to_string()));
    }

    /// Whether the run's [`deadline`](Self::deadline) fired (then
    /// [`cancellation`](Self::cancellation) holds its reason, unless an operator's cancel came
    /// first).
    pub fn deadline_exceeded(&self) -> bool {
        self.lock().deadline_fired
    }

    /// Runs a registered task with its registered options.
    ///
    /// Live: the attempt's `TaskStartedRecord` is durable before the task runs; each attempt is
    /// journaled; retries wait on durable timers. Replay: the journaled final result is returned
    /// and the task does not run again. A task whose start was journaled without a result (a
    /// crash mid-task) runs again with the same idempotency key, after a `TaskRestartedRecord`
    /// for that execution is durable.
    pub fn task(&self, task: &str, input: Value) -> StepFuture<Result<Value, TaskError>> {
        let asked = TaskAsked {
            task,
            name: task,
            input: &input,
        };
        if let Some(done) = self.task_from_journal(asked) {
            return done;
        }
        self.task_call(TaskCall {
            task: task.into(),
            name: None,
            input,
            options: None,
            registration: None,
            first_attempt: None,
        })
    }

    /// Runs a task with explicit label and options.
    pub fn task_with(&self, call: TaskCall) -> StepFuture<Result<Value, TaskError>> {
        let asked = TaskAsked {
            task: &call.task,
            name: call.name.as_deref().unwrap_or(&call.task),
            input: &call.input,
        };
        if let Some(done) = self.task_from_journal(asked) {
            return done;
        }
        self.task_call(call)
    }

    /// On replay, the step the code asks for when the journal completes it at once
    /// ([`Shared::task_from_journal`]); only inside the driver's poll of the code
    /// ([`code_runs_here`](crate::engine::code_runs_here)).
    fn task_from_journal(&self, asked: TaskAsked) -> Option<StepFuture<Result<Value, TaskError>>> {
        if !crate::engine::code_runs_here(&self.shared) {
            return None;
        }
        let mut s = self.lock();
        let at = self.shared.replay_next.load(Ordering::Acquire);
        let result = s.task_from_journal(at, asked)?;
        // Built in place from the record: the completion is not moved around.
        let done = StepFuture::complete(s.next_step, result, |r| r.map_err(|e| *e));
        let step = s.took_from_journal();
        self.shared.replay_next.store(at + 2, Ordering::Release);
        // The step is complete: nothing of the call is kept.
        s.replayed_tasks.push(step);
        Some(done)
    }

    /// A task step the driver journals (live) or matches against the journal (replay).
    fn task_call(&self, call: TaskCall) -> StepFuture<Result<Value, TaskError>> {
        let hash = input_hash(&call.input) ^ str_hash(&call.task);
        let TaskCall {
            task,
            name,
            input,
            options,
            registration,
            first_attempt,
        } = call;
        let name = name.unwrap_or_else(|| task.clone());
        let detail = CommandDetail::Task {
            own_options: options.is_some(),
            call: Box::new(crate::replay::TaskCallSpec {
                task,
                input,
                options: options.unwrap_or_default(),
                registration,
                hash,
                first_attempt: first_attempt.unwrap_or(1).max(1),
                held: false,
            }),
        };
        let step = self.push(StepKind::Task, name, hash, detail);
        self.future(step, task_resolution)
    }

    /// A durable sleep. The timer is journaled; it survives restarts, and a suspended run holds
    /// no memory while it waits. Replay returns at once if the timer fired.
    ///
    /// A duration too long to represent in milliseconds since the epoch saturates: the timer
    /// is due at the end of time, never at once.
    pub fn sleep(&self, duration: Duration) -> StepFuture<Result<(), TaskError>> {
        let ms = u64::try_from(duration.as_millis()).unwrap_or(u64::MAX);
        self.timer("sleep", input_hash(&Value::from(ms)), move |now| {
            due_after(now, ms)
        })
    }

    /// Sleeps until a wall-clock time (ms since the Unix epoch).
    pub fn sleep_until(&self, at_ms: u64) -> StepFuture<Result<(), TaskError>> {
        self.timer("sleep_until", input_hash(&Value::from(at_ms)), move |_| {
            at_ms
        })
    }

    fn timer(
        &self,
        name: &str,
        hash: u64,
        at: impl FnOnce(u64) -> u64,
    ) -> StepFuture<Result<(), TaskError>> {
        let step = self.lock().next_step;
        let (fire_at_ms, asked_at_ms) = match self.lock().replayed(step) {
            Some(Replayed::TimerAt(at)) => (at, 0),
            _ => {
                let now = wall_ms();
                (at(now), now)
            }
        };
        let step = self.push(
            StepKind::Timer,
            name.into(),
            hash,
            CommandDetail::Timer {
                fire_at_ms,
                asked_at_ms,
            },
        );
        self.future(step, |r| match r {
            Resolution::Timer => Ok(()),
            Resolution::Cancelled(reason) => Err(TaskError::cancelled(&reason)),
            other => Err(TaskError::terminal(format!(
                "unexpected completion {other:?}"
            ))),
        })
    }

    /// Opens an inbox item and waits for its answer (or its timeout, whichever is journaled
    /// first). The item's id is `<run_id>-<step>`; answer it with `Engine::answer_gate`.
    pub fn gate(&self, spec: GateSpec) -> StepFuture<GateOutcome> {
        let hash = input_hash(&crate::replay::gate_identity(&spec));
        let name = spec.title.clone();
        let step = self.push(StepKind::Gate, name, hash, CommandDetail::Gate { spec });
        self.future(step, |r| match r {
            Resolution::Gate(g) => g,
            Resolution::Cancelled(reason) => GateOutcome::Cancelled(reason),
            other => GateOutcome::Cancelled(format!("unexpected completion {other:?}")),
        })
    }

    /// Waits for the next signal of this name sent with `Engine::signal`. Signals sent before
    /// the wait are buffered and delivered in arrival order.
    pub fn signal(&self, name: &str) -> StepFuture<Result<Value, TaskError>> {
        let hash = str_hash(name);
        let step = self.push(StepKind::Signal, name.into(), hash, CommandDetail::Signal);
        self.future(step, |r| match r {
            Resolution::Signal(v) => Ok(v),
            Resolution::Cancelled(reason) => Err(TaskError::cancelled(&reason)),
            other => Err(TaskError::terminal(format!(
                "unexpected completion {other:?}"
            ))),
        })
    }

    /// Starts a child run and waits for it to end. The child's `StartRecord` names this run
    /// and step as its parent.
    ///
    /// A child lives and dies with its parent (Temporal's default parent-close policy,
    /// "request cancel"): it is cancelled, with a reason naming this run, when this run is
    /// cancelled, when this run ends while the child still runs, and when this future is
    /// dropped before the child ended (the loser of a [`select`](Self::select), e.g. a
    /// timeout). Each such cancellation is journaled in both runs: here as a
    /// `ChildCancelRequestedRecord` on this step, durable before the child is told, and in the
    /// child as its `CancelRequestedRecord`. The child's own children follow it the same way.
    ///
    /// A child that would be nested deeper than the limit (see
    /// [`ChildRequest::max_depth`]) is not started: the step ends `FAILED` with a
    /// `[MAG-CH002]` reason that shows the chain of runs.
    pub fn child(&self, request: ChildRequest) -> StepFuture<ChildOutcome> {
        let step = self.lock().next_step;
        let child_run_id = match self.lock().replayed(step) {
            Some(Replayed::Child(id)) => id,
            _ => RunId::new(),
        };
        let hash = input_hash(&request.input);
        let name = request.workflow.clone();
        let detail = CommandDetail::Child {
            request: Box::new(request),
            child_run_id,
        };
        let step = self.push(StepKind::Child, name, hash, detail);
        self.future(step, move |r| match r {
            Resolution::Child(c) => c,
            Resolution::Cancelled(reason) => ChildOutcome {
                run_id: child_run_id,
                status: RunStatus::Cancelled,
                result: Value::Null,
                reason: Some(reason),
            },
            other => ChildOutcome {
                run_id: child_run_id,
                status: RunStatus::Failed,
                result: Value::Null,
                reason: Some(format!("unexpected completion {other:?}")),
            },
        })
    }

    /// Runs `make` once and journals its value (`SideEffectRecord`); replay returns the
    /// journaled value without calling `make`. For quick, synchronous reads of the world (a
    /// document, a setting) whose value the rest of the run must agree on. Anything slow or
    /// with effects belongs in a task.
    pub fn side_effect(&self, name: &str, make: impl FnOnce() -> Value) -> Value {
        let step = self.lock().next_step;
        let journaled = match self.lock().replayed(step) {
            Some(Replayed::Value { name: n, value }) if n == name => Some(value.clone()),
            _ => None,
        };
        let value = journaled.unwrap_or_else(make);
        let record = Record::SideEffect {
            step,
            name: name.into(),
            value: value.clone(),
        };
        let hash = str_hash(name);
        self.push(
            StepKind::SideEffect,
            name.into(),
            hash,
            CommandDetail::Record { record },
        );
        value
    }

    /// The current time in ms since the Unix epoch, journaled: replay returns the same value.
    pub fn now(&self) -> u64 {
        self.side_effect("now", || Value::from(wall_ms()))
            .as_u64()
            .unwrap_or(0)
    }

    /// A random number, journaled: replay returns the same value.
    pub fn random(&self) -> u64 {
        self.side_effect("random", || Value::from(rand::random::<u64>()))
            .as_u64()
            .unwrap_or(0)
    }

    /// A random UUID as 32 hex digits, journaled: replay returns the same value.
    pub fn uuid(&self) -> String {
        let v = self.side_effect("uuid", || {
            Value::String(uuid::Uuid::new_v4().simple().to_string())
        });
        v.as_str().unwrap_or_default().to_string()
    }

    /// Journals that the run entered a state (`StateEnteredRecord`; used by the YAML
    /// interpreter and shown as the run's current state).
    pub fn enter_state(&self, state: &str) {
        let step = self.lock().next_step;
        let record = Record::StateEntered {
            step,
            state: state.into(),
        };
        let hash = str_hash(state);
        self.push(
            StepKind::State,
            state.into(),
            hash,
            CommandDetail::Record { record },
        );
    }

    /// Journals a variable (`VarRecord`), shown in the run's `vars`.
    pub fn set_var(&self, key: &str, value: Value) {
        let step = self.lock().next_step;
        let hash = input_hash(&value);
        let record = Record::Var {
            step,
            key: key.into(),
            value,
        };
        self.push(
            StepKind::Var,
            key.into(),
            hash,
            CommandDetail::Record { record },
        );
    }

    /// Names the state whose result the run's final `ResultRecord` carries.
    pub fn set_result_state(&self, state: &str) {
        self.lock().result_state = Some(state.into());
    }

    /// Waits for the first of `futures` to complete, by journal order: live and on replay the
    /// same one wins. Returns its index and output; the others are dropped: their late
    /// completions are journaled (a losing task's result once, as final — a dropped task is not
    /// retried, and not run again after a restart) and delivered to nobody. A losing child
    /// step's run is cancelled (see [`child`](Self::child)); a losing gate is withdrawn (a
    /// `GateWithdrawnRecord`: its inbox item closes, a later answer is not applied).
    pub fn select<T>(&self, futures: Vec<StepFuture<T>>) -> Select<T> {
        Select { futures }
    }

    /// Waits for the first of `futures` to complete, by journal order (the rule of
    /// [`select`](Self::select), so replay picks the same one), and takes it out of the vector:
    /// returns its index (at the time of the call) and output. Unlike `select`, the others stay
    /// in `futures`, still pending and untouched (a child step keeps its run), so a caller can
    /// keep a sliding window of steps in flight: add steps, wait for the next completed, repeat.
    /// Dropping what is left in `futures` drops those steps as `select` does its losers.
    ///
    /// Pending forever when `futures` is empty.
    pub fn next_completed<'a, T>(
        &self,
        futures: &'a mut Vec<StepFuture<T>>,
    ) -> NextCompleted<'a, T> {
        NextCompleted { futures }
    }
}
