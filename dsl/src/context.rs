//! The typed workflow context.

use std::time::Duration;

use magrathea_core::{
    ChildOutcome, ChildRequest, GateOutcome, GateSpec, RunId, RunStatus, Select, StepFuture,
    TaskCall, TaskError, TaskOptions, WorkflowContext,
};
use serde_json::Value;

use crate::error::{ChildError, StepError};
use crate::gate::{Approval, Decision, Feedback, FromOutcome, Gate};
use crate::registration;
use crate::traits::{Journaled, Task, Workflow};

/// What a workflow's code uses to reach the world. Every call is a journaled step; see each
/// method for what replay does with it.
///
/// Workflow code must be deterministic: no clocks, randomness, threads or I/O of its own —
/// use [`Context::now`], [`Context::random`], [`Context::uuid`] and tasks instead.
#[derive(Debug, Clone)]
pub struct Context {
    inner: WorkflowContext,
}

/// How the mark journaled for a value that cannot be serialised begins (`{"$error": …}`); the
/// callee's registration recognises it. Part of journaled inputs: never change its text.
pub(crate) const UNSERIALISABLE: &str = "[MAG-SE001] value cannot be serialised: ";

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v)
        .unwrap_or_else(|e| serde_json::json!({ "$error": format!("{UNSERIALISABLE}{e}") }))
}

fn decode<T: Journaled>(v: Value, what: &str) -> Result<T, StepError> {
    serde_json::from_value(v).map_err(|e| {
        TaskError::terminal(format!("[MAG-SE002] {what} has an unexpected shape: {e}")).into()
    })
}

impl Context {
    #[doc(hidden)]
    pub fn from_raw(inner: WorkflowContext) -> Self {
        Self { inner }
    }

    /// The untyped context, for front ends that interpret definitions of their own (YAML).
    /// Workflow code has no use for it: every step it may take is a method of `Context`.
    #[doc(hidden)]
    pub fn raw(&self) -> &WorkflowContext {
        &self.inner
    }

    /// This run's id.
    pub fn run_id(&self) -> RunId {
        self.inner.run_id()
    }

    /// The reason, once cancellation was requested (see [`WorkflowContext::cancellation`]).
    pub fn cancellation(&self) -> Option<String> {
        self.inner.cancellation()
    }

    /// Sets the run's deadline, `after` from now (see [`WorkflowContext::deadline`]): when the
    /// durable timer fires, the run is cancelled with `reason`.
    pub fn deadline(&self, after: Duration, reason: &str) {
        self.inner.deadline(after, reason);
    }

    /// Whether the run's deadline fired (see [`WorkflowContext::deadline_exceeded`]).
    pub fn deadline_exceeded(&self) -> bool {
        self.inner.deadline_exceeded()
    }

    /// Runs a task with its retry policy and timeout (those of its `#[task]` attribute).
    ///
    /// The call carries the task's body, so the task runs whether or not it was registered
    /// with [`EngineBuilder::task`](crate::EngineBuilder::task); registering it only exposes it
    /// by name to YAML workflows and tools (and a registration under the same name takes
    /// precedence).
    ///
    /// Fails with a [`StepError`] once the task has failed for good: its retries are used up,
    /// it returned a terminal error, or the run was cancelled while it ran.
    ///
    /// Replay: returns the journaled result without running the task. A task that was running
    /// when the process died runs again with the same idempotency key.
    pub fn task<T: Task>(
        &self,
        task: T,
        input: T::Input,
    ) -> StepFuture<Result<T::Output, StepError>> {
        self.call(task, input, None)
    }

    /// Runs a task with these options instead of its registered ones.
    pub fn task_with<T: Task>(
        &self,
        task: T,
        input: T::Input,
        options: TaskOptions,
    ) -> StepFuture<Result<T::Output, StepError>> {
        self.call(task, input, Some(options))
    }

    fn call<T: Task>(
        &self,
        _task: T,
        input: T::Input,
        options: Option<TaskOptions>,
    ) -> StepFuture<Result<T::Output, StepError>> {
        let call = TaskCall {
            task: T::NAME.into(),
            name: None,
            input: to_value(&input),
            options,
            registration: Some(registration::task::<T>()),
            first_attempt: None,
        };
        let step = self.inner.task_with(call);
        let at = step.step();
        step.map(move |r| {
            r.map_err(|e| StepError::of_task(e, T::NAME, at))
                .and_then(|v| decode(v, "the task's output"))
        })
    }

    /// Runs an executor of `magrathea-exec` as a journaled task: a shell command
    /// ([`ShellInput`](magrathea_exec::ShellInput)), a script, a tool through the permission
    /// cascade ([`ToolInput`](magrathea_exec::ToolInput)) or an agent recipe. Takes a typed
    /// input, or an [`ExecCall`](magrathea_exec::ExecCall) made from one to set the step's
    /// label, scope, run context or executors.
    ///
    /// The journal holds the input and the call's run context; the executors come from the
    /// call or from the engine ([`EngineBuilder::executors`](crate::EngineBuilder::executors)).
    /// Fails with a [`StepError`] whose [`kind`](StepError::kind) is the executor's outcome
    /// (`business_error` for a non-zero exit, `timeout`, `permission_error`, …) and whose
    /// [`output`](StepError::output) is what it reported (a shell command's output, say).
    ///
    /// Replay: returns the journaled result. A call that was running when the process died
    /// runs again.
    ///
    /// ```no_run
    /// # #[cfg(feature = "exec")]
    /// # mod demo {
    /// use magrathea::exec::{IntoExecCall, Scope, ShellInput, ShellOutput};
    /// use magrathea::prelude::*;
    ///
    /// #[workflow]
    /// async fn test_suite(ctx: Context, project: String) -> Result<String, WorkflowError> {
    ///     let scope = Scope::new("acme", &project);
    ///     let call = ShellInput::new("cargo test").into_exec_call().scope(&scope);
    ///     let out: ShellOutput = ctx.exec(call).await?;
    ///     Ok(out.stdout)
    /// }
    /// # }
    /// ```
    #[cfg(feature = "exec-base")]
    pub fn exec<C: magrathea_exec::IntoExecCall>(
        &self,
        call: C,
    ) -> StepFuture<Result<C::Output, StepError>> {
        let call = call.into_exec_call().into_task_call();
        self.inner.task_with(call).map(|r| {
            r.map_err(StepError::from)
                .and_then(|v| decode(v, "the executor's output"))
        })
    }

    /// A durable sleep: a journaled timer that survives restarts; the run holds no memory
    /// while it waits. Replay returns at once once the timer has fired. Fails only when the
    /// run is cancelled during the sleep.
    pub fn sleep(&self, duration: Duration) -> StepFuture<Result<(), StepError>> {
        self.inner
            .sleep(duration)
            .map(|r| r.map_err(StepError::from))
    }

    /// Sleeps until a wall-clock time in ms since the Unix epoch.
    pub fn sleep_until(&self, at_ms: u64) -> StepFuture<Result<(), StepError>> {
        self.inner
            .sleep_until(at_ms)
            .map(|r| r.map_err(StepError::from))
    }

    /// Asks for approval and waits for the answer, the gate's timeout or the run's
    /// cancellation, whichever is journaled first. Takes a title or a [`Gate::approval`].
    ///
    /// Replay returns the journaled outcome; the inbox item is not shown again.
    ///
    /// Give a gate its time limit with [`Gate::timeout`] (its outcome is then
    /// [`Approval::TimedOut`]), or race it against [`Context::sleep`] or anything else in
    /// [`Context::select`]: a gate whose future the code drops before an answer (the loser of
    /// a select) is withdrawn once the run's next records are durable — its inbox item reads
    /// `CLOSED`, the run no longer reads `WAITING` for it, and an answer given later is kept
    /// on the item and acknowledged as ignored, not applied.
    ///
    /// ```
    /// use magrathea::prelude::*;
    /// use std::time::Duration;
    ///
    /// #[workflow]
    /// async fn ship(ctx: Context, order: String) -> Result<String, WorkflowError> {
    ///     let gate = Gate::approval(&format!("Ship {order}?")).timeout(Duration::from_secs(3600));
    ///     match ctx.approval(gate).await {
    ///         Approval::Approved { by, .. } => Ok(format!("shipped, approved by {by}")),
    ///         Approval::Rejected { comment, .. } => Ok(format!("held: {}", comment.unwrap_or_default())),
    ///         Approval::Undecided { .. } | Approval::TimedOut => Ok("held".into()),
    ///         Approval::Cancelled(reason) => Err(WorkflowError::cancelled(reason)),
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let engine = Engine::builder().in_memory().workflow(ship).build().await?;
    /// let run = engine.start(ship, "A-1".into()).await?;
    /// run.wait_settled().await?; // waiting on the gate
    /// let item = engine.inbox(InboxFilter::Pending)?.remove(0);
    /// engine.answer_gate(&item.id, GateAnswer::approve().by("ann")).await?;
    /// assert_eq!(run.result().await?, "shipped, approved by ann");
    /// # Ok(()) }
    /// ```
    pub fn approval(&self, gate: impl Into<Gate<Approval>>) -> StepFuture<Approval> {
        self.ask(gate.into())
    }

    /// Asks a person to choose one of the gate's options; see [`Context::approval`] for the
    /// races and replay.
    pub fn decision(&self, gate: Gate<Decision>) -> StepFuture<Decision> {
        self.ask(gate)
    }

    /// Asks a person for text; see [`Context::approval`] for the races and replay. Takes a
    /// title or a [`Gate::feedback`].
    pub fn feedback(&self, gate: impl Into<Gate<Feedback>>) -> StepFuture<Feedback> {
        self.ask(gate.into())
    }

    fn ask<A: FromOutcome + 'static>(&self, gate: Gate<A>) -> StepFuture<A> {
        self.inner.gate(gate.into_spec()).map(A::from_outcome)
    }

    /// Opens an inbox item from an untyped spec and returns the untyped outcome; prefer
    /// [`Context::approval`], [`Context::decision`] and [`Context::feedback`].
    pub fn gate(&self, spec: GateSpec) -> StepFuture<GateOutcome> {
        self.inner.gate(spec)
    }

    /// Waits for the next signal `name`, decoded as `T`. Replay returns the journaled payload.
    /// Fails when the payload does not decode as `T` or the run is cancelled meanwhile.
    pub fn signal<T: Journaled>(&self, name: &str) -> StepFuture<Result<T, StepError>> {
        self.inner.signal(name).map(|r| {
            r.map_err(StepError::from)
                .and_then(|v| decode(v, "the signal's payload"))
        })
    }

    /// Starts a child run of workflow `W` and waits for its output. The child's StartRecord
    /// names this run as its parent. Replay reuses the journaled child.
    ///
    /// `W` must be registered with the engine
    /// ([`EngineBuilder::workflow`](crate::EngineBuilder::workflow)), as every workflow that
    /// runs must be, since a run finds its code by name when it recovers: a child of an
    /// unregistered workflow ends the step with `[MAG-CH001]` naming `[MAG-EN002]`.
    ///
    /// The child lives and dies with this run: it is cancelled (journaled in both runs, with
    /// a reason naming this run) when this run is cancelled, when this run ends while the child
    /// still runs, and when this future is dropped before the child ended — e.g. the loser of
    /// a [`select`](Self::select) against a timeout. A child nested deeper than
    /// [`EngineBuilder::max_child_depth`](crate::EngineBuilder::max_child_depth) (32 by
    /// default) is not started: the step fails with `[MAG-CH002]`.
    pub fn child<W: Workflow>(
        &self,
        _workflow: W,
        input: W::Input,
    ) -> StepFuture<Result<W::Output, ChildError>> {
        let mut req = ChildRequest::code(W::NAME, to_value(&input));
        req.version = W::VERSION.into();
        self.inner.child(req).map(|o: ChildOutcome| match o.status {
            RunStatus::Done => serde_json::from_value(o.result).map_err(|e| ChildError {
                run_id: o.run_id,
                status: RunStatus::Failed,
                reason: format!("[MAG-SE002] the child's output has an unexpected shape: {e}"),
            }),
            status => Err(ChildError {
                run_id: o.run_id,
                status,
                reason: o.reason.unwrap_or_default(),
            }),
        })
    }

    /// Starts a child from an explicit request (e.g. a YAML workflow) and waits for it.
    pub fn child_request(&self, request: ChildRequest) -> StepFuture<ChildOutcome> {
        self.inner.child(request)
    }

    /// Whether this run takes the code path added by patch `id`: `true` on new runs and on runs
    /// that reach the call for the first time after the change (a marker is journaled),
    /// `false` on runs whose journal was written by the old code there. Retire a patch with
    /// [`Context::deprecate_patch`] once no run of the old code is left. `docs/changing-code.md`
    /// walks through an example.
    ///
    /// Replay: a journal holding the marker of another patch at this step blocks the run
    /// (`[MAG-ND005]`).
    pub fn patched(&self, id: &str) -> bool {
        self.inner.patched(id)
    }

    /// The only path now is patch `id`'s: accepts the marker where a run recorded it, records
    /// none on new runs. Remove the call once no run with the marker is left.
    pub fn deprecate_patch(&self, id: &str) {
        self.inner.deprecate_patch(id);
    }

    /// The time in ms since the Unix epoch, journaled: replay returns the same value.
    pub fn now(&self) -> u64 {
        self.inner.now()
    }

    /// A random number, journaled: replay returns the same value.
    pub fn random(&self) -> u64 {
        self.inner.random()
    }

    /// A random UUID (32 hex digits), journaled: replay returns the same value.
    pub fn uuid(&self) -> String {
        self.inner.uuid()
    }

    /// Waits for the first of `futures` by journal order (live and replay agree). Returns its
    /// index and output; the others are dropped, and the code never sees their outcomes: a
    /// task already running still finishes and its result is journaled while the run lives (a
    /// run that ends first lets it go: it finishes, and the journal shows its start but no
    /// result), a dropped child run is
    /// cancelled, and a dropped gate is withdrawn: its inbox item closes (see
    /// [`Context::approval`]). To join instead, use `futures::join!` or
    /// [`futures::future::join_all`].
    pub fn select<T>(&self, futures: Vec<StepFuture<T>>) -> Select<T> {
        self.inner.select(futures)
    }
}
