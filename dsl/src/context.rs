//! The typed workflow context.

use std::marker::PhantomData;
use std::time::Duration;

use magrathea_core::{
    ChildOutcome, ChildRequest, GateKind, GateOutcome, GateSpec, RunId, RunStatus, Select,
    StepFuture, TaskCall, TaskError, TaskOptions, WorkflowContext,
};
use serde_json::Value;

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

/// Why a child workflow did not produce its output.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("[MAG-CH001] child run {run_id} ended {status}: {reason}")]
pub struct ChildError {
    /// The child's run.
    pub run_id: RunId,
    /// How it ended.
    pub status: RunStatus,
    /// Why.
    pub reason: String,
}

fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or_else(
        |e| serde_json::json!({ "$error": format!("[MAG-SE001] value cannot be serialised: {e}") }),
    )
}

fn decode<T: Journaled>(v: Value, what: &str) -> Result<T, TaskError> {
    serde_json::from_value(v).map_err(|e| {
        TaskError::terminal(format!("[MAG-SE002] {what} has an unexpected shape: {e}"))
    })
}

impl Context {
    #[doc(hidden)]
    pub fn from_raw(inner: WorkflowContext) -> Self {
        Self { inner }
    }

    /// The untyped context (used by front ends such as YAML).
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

    /// Runs a task with its registered retry policy and timeout.
    ///
    /// Replay: returns the journaled result without running the task. A task that was running
    /// when the process died runs again with the same idempotency key.
    pub fn task<T: Task>(
        &self,
        task: T,
        input: T::Input,
    ) -> StepFuture<Result<T::Output, TaskError>> {
        self.call(task, input, None)
    }

    /// Runs a task with these options instead of its registered ones.
    pub fn task_with<T: Task>(
        &self,
        task: T,
        input: T::Input,
        options: TaskOptions,
    ) -> StepFuture<Result<T::Output, TaskError>> {
        self.call(task, input, Some(options))
    }

    fn call<T: Task>(
        &self,
        _task: T,
        input: T::Input,
        options: Option<TaskOptions>,
    ) -> StepFuture<Result<T::Output, TaskError>> {
        let call = TaskCall {
            task: T::NAME.into(),
            name: None,
            input: to_value(&input),
            options,
            registration: None,
        };
        self.inner
            .task_with(call)
            .map(|r| r.and_then(|v| decode(v, "the task's output")))
    }

    /// A durable sleep: a journaled timer that survives restarts; the run holds no memory
    /// while it waits. Replay returns at once once the timer has fired.
    pub fn sleep(&self, duration: Duration) -> StepFuture<Result<(), TaskError>> {
        self.inner.sleep(duration)
    }

    /// Sleeps until a wall-clock time in ms since the Unix epoch.
    pub fn sleep_until(&self, at_ms: u64) -> StepFuture<Result<(), TaskError>> {
        self.inner.sleep_until(at_ms)
    }

    /// Opens an inbox item (APPROVAL, DECISION or FEEDBACK) and waits for its answer or its
    /// timeout, whichever is journaled first. Replay returns the journaled outcome.
    pub fn gate(&self, spec: GateSpec) -> StepFuture<GateOutcome> {
        self.inner.gate(spec)
    }

    /// An APPROVAL gate with a title and no timeout.
    pub fn approval(&self, title: &str) -> StepFuture<GateOutcome> {
        self.gate(gate_spec(GateKind::Approval, title))
    }

    /// Waits for the next signal `name`, decoded as `T`. Replay returns the journaled payload.
    pub fn signal<T: Journaled>(&self, name: &str) -> StepFuture<Result<T, TaskError>> {
        self.inner
            .signal(name)
            .map(|r| r.and_then(|v| decode(v, "the signal's payload")))
    }

    /// Starts a child run of workflow `W` and waits for its output. The child's StartRecord
    /// names this run as its parent. Replay reuses the journaled child.
    pub fn child<W: Workflow>(
        &self,
        _workflow: W,
        input: W::Input,
    ) -> StepFuture<Result<W::Output, ChildError>> {
        let mut req = ChildRequest::code(W::NAME, to_value(&input));
        req.version = W::VERSION.into();
        let _ = PhantomData::<W>;
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
    /// index and output; the others are dropped and their late completions journaled as
    /// ignored. To join instead, use `futures::join!` or [`futures::future::join_all`].
    pub fn select<T>(&self, futures: Vec<StepFuture<T>>) -> Select<T> {
        self.inner.select(futures)
    }
}

/// A gate of `kind` with a title; set the other fields on the returned value.
pub fn gate_spec(kind: GateKind, title: &str) -> GateSpec {
    GateSpec {
        kind,
        title: title.into(),
        body: String::new(),
        options: Vec::new(),
        assigned_to: String::new(),
        criticality: "NORMAL".into(),
        tags: Vec::new(),
        timeout_ms: None,
        meta: Value::Null,
    }
}
