//! Errors of workflow code, and how `?` turns them into the end of a run. (Errors of other
//! crates, such as `anyhow::Error`, take another path: see the `body_error` module.)
//!
//! A workflow body returns `Result<T, E>` where `E: Into<WorkflowError>`. Three error types
//! meet there, and `?` has to work on all of them:
//!
//! * [`StepError`]: a step of the [`Context`](crate::Context) failed for good (a task out of
//!   attempts, a cancelled timer or signal);
//! * [`ChildError`]: a child workflow ended without its output;
//! * any other `std::error::Error` the body runs into (`serde_json::Error`,
//!   `std::num::ParseIntError`, …).
//!
//! [`WorkflowError`] (the core's) converts from the first two, but it cannot convert from
//! *every* `std::error::Error`: that blanket impl would have to live in the core, and there it
//! would forbid `impl std::error::Error for WorkflowError` (a type cannot both be an error and
//! convert from every error, as `From<T> for T` already covers it). [`Error`] is that blanket
//! conversion, in the way `anyhow::Error` is: it converts from every
//! `std::error::Error + Send + Sync + 'static`, keeps what a `WorkflowError`, `StepError` or
//! `ChildError` says about cancellation, and for that reason does not implement
//! `std::error::Error` itself.
//!
//! Step failures are a [`StepError`] rather than the core's [`TaskError`] for the same reason:
//! `TaskError` converts from every error (so `?` works in task bodies) and therefore is not
//! one, so no type can convert from both `TaskError` and every error. A `StepError` is an
//! error, and [`Error`] takes it like any other.

use std::any::Any;
use std::fmt;

use magrathea_core::{RunId, RunStatus, Step, TaskError, WorkflowError};
use serde_json::Value;

/// Why a step of workflow code failed: a task that failed for good (its retries used up, or a
/// terminal error), a result that did not decode, or the run's cancellation reaching a pending
/// task, timer or signal.
///
/// `?` turns it into a [`WorkflowError`] (the run ends `FAILED`, or `CANCELLED` when
/// [`StepError::is_cancelled`]) or into an [`Error`].
#[derive(Debug, Clone, PartialEq)]
pub struct StepError {
    inner: TaskError,
    /// The task that failed and its step, when the step was a task's.
    task: Option<(String, Step)>,
}

impl StepError {
    /// The error kind journaled as the step's outcome (`technical_error`, `timeout`,
    /// `cancelled`, or a task's own kind).
    pub fn kind(&self) -> &str {
        &self.inner.kind
    }

    /// The message of the last attempt.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// Data the task attached to its failure (`null` if none).
    pub fn output(&self) -> &Value {
        &self.inner.output
    }

    /// Whether the step ended because the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }

    /// The task error as the engine journaled it.
    pub fn task_error(&self) -> &TaskError {
        &self.inner
    }

    /// The task error as the engine journaled it.
    pub fn into_task_error(self) -> TaskError {
        self.inner
    }

    /// The name of the task whose step failed and the step's number; `None` for a step that
    /// was not a task's (a timer, a signal, an executor's call).
    pub fn task(&self) -> Option<(&str, Step)> {
        self.task
            .as_ref()
            .map(|(name, step)| (name.as_str(), *step))
    }

    /// The error of the task `name`'s step `step`.
    pub(crate) fn of_task(inner: TaskError, name: &str, step: Step) -> Self {
        Self {
            inner,
            task: Some((name.to_owned(), step)),
        }
    }
}

impl From<TaskError> for StepError {
    fn from(inner: TaskError) -> Self {
        Self { inner, task: None }
    }
}

impl fmt::Display for StepError {
    /// `task `charge` (step 3) failed: technical_error: card declined` for a task's step; the
    /// task error alone otherwise, and for a cancelled step (whose message is the reason).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.task {
            Some((name, step)) if !self.inner.is_cancelled() => {
                write!(f, "task `{name}` (step {step}) failed: {}", self.inner)
            }
            _ => fmt::Display::fmt(&self.inner, f),
        }
    }
}

impl std::error::Error for StepError {}

impl From<StepError> for WorkflowError {
    /// A failed step fails the workflow, its reason naming the task; a cancelled one cancels
    /// it.
    fn from(e: StepError) -> Self {
        let message = e.to_string();
        let mut error: WorkflowError = e.inner.into();
        error.message = message;
        error
    }
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

impl From<ChildError> for WorkflowError {
    /// A failed child fails the parent; a cancelled child cancels it.
    fn from(e: ChildError) -> Self {
        let message = e.to_string();
        if e.status == RunStatus::Cancelled {
            WorkflowError::cancelled(message)
        } else {
            WorkflowError::failed(message)
        }
    }
}

/// Any error a workflow body stops on: declare `Result<T, magrathea::Error>` and `?` takes
/// every `std::error::Error + Send + Sync + 'static` as well as [`StepError`] and
/// [`ChildError`].
///
/// The run ends `FAILED` with the error's message and its sources as the reason, or
/// `CANCELLED` when the error is a cancelled step or child (or a cancelling
/// [`WorkflowError`]).
///
/// # Why a type of its own
///
/// `?` needs one type that converts from every error a body meets. [`WorkflowError`] converts
/// from [`StepError`] and [`ChildError`], but a conversion from *every* `std::error::Error`
/// would have to live in the core, where it would forbid `WorkflowError` from being an error
/// itself (`From<T> for T` already covers that case). So this type holds the blanket
/// conversion, as `anyhow::Error` does, and for the same reason is not a `std::error::Error`.
/// Steps fail with a [`StepError`] rather than the core's [`TaskError`] for the same reason:
/// `TaskError` converts from every error (so `?` works in task bodies) and so cannot be one.
///
/// ```
/// use magrathea::prelude::*;
///
/// #[workflow]
/// async fn parse(_ctx: Context, text: String) -> Result<u32, magrathea::Error> {
///     let n: u32 = text.trim().parse()?; // std::num::ParseIntError
///     let doubled: serde_json::Value = serde_json::from_str(&format!("{}", n * 2))?;
///     Ok(doubled.as_u64().map_or(0, |d| d as u32))
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::builder().in_memory().workflow(parse).build().await?;
/// assert_eq!(engine.start(parse, " 21 ".into()).await?.result().await?, 42);
///
/// let failed = engine.start(parse, "many".into()).await?.result().await.unwrap_err();
/// assert!(failed.to_string().contains("invalid digit"), "{failed}");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Error {
    inner: WorkflowError,
}

impl Error {
    /// Fails the run with `message`.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            inner: WorkflowError::failed(message),
        }
    }

    /// Ends the run `CANCELLED` with `message`.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self {
            inner: WorkflowError::cancelled(message),
        }
    }

    /// What the run ends with.
    pub fn into_workflow_error(self) -> WorkflowError {
        self.inner
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.inner.message)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Error {
    fn from(error: E) -> Self {
        // The errors that say how a run ends keep saying it; the rest fail the run.
        let mut slot = Some(error);
        if let Some(e) = take::<WorkflowError, E>(&mut slot) {
            return Self { inner: e };
        }
        if let Some(e) = take::<StepError, E>(&mut slot) {
            return Self { inner: e.into() };
        }
        if let Some(e) = take::<ChildError, E>(&mut slot) {
            return Self { inner: e.into() };
        }
        match slot {
            Some(e) => Self::failed(with_sources(&e)),
            None => Self::failed(String::new()),
        }
    }
}

impl From<Error> for WorkflowError {
    fn from(e: Error) -> Self {
        e.inner
    }
}

/// Moves the value out of `slot` if it is a `T`.
pub(crate) fn take<T: 'static, E: 'static>(slot: &mut Option<E>) -> Option<T> {
    (slot as &mut dyn Any)
        .downcast_mut::<Option<T>>()
        .and_then(Option::take)
}

/// `error: source: source's source`, as a run's reason.
pub(crate) fn with_sources(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_plain_error_fails_the_run_with_its_sources() {
        let e: WorkflowError = Error::from(Outer(std::io::Error::other("disk"))).into();
        assert_eq!(e.message, "outer: disk");
        assert!(!e.cancelled);
    }

    #[test]
    fn a_cancelled_step_or_child_cancels_the_run() {
        let step = StepError::from(TaskError::terminal("stop").with_kind(TaskError::CANCELLED));
        assert!(WorkflowError::from(Error::from(step.clone())).cancelled);
        assert!(WorkflowError::from(step).cancelled);
        let child = ChildError {
            run_id: RunId::new(),
            status: RunStatus::Cancelled,
            reason: "no".into(),
        };
        assert!(WorkflowError::from(Error::from(child)).cancelled);
    }

    #[test]
    fn a_failed_tasks_step_names_the_task_and_a_cancelled_one_only_its_reason() {
        let failed = StepError::of_task(TaskError::terminal("card declined"), "charge", 3);
        assert_eq!(failed.task(), Some(("charge", 3)));
        assert_eq!(
            WorkflowError::from(failed.clone()).message,
            "task `charge` (step 3) failed: technical_error: card declined"
        );
        assert_eq!(WorkflowError::from(Error::from(failed)).message.as_str(), {
            "task `charge` (step 3) failed: technical_error: card declined"
        });
        let cancelled = StepError::of_task(
            TaskError::terminal("stop").with_kind(TaskError::CANCELLED),
            "charge",
            3,
        );
        let e = WorkflowError::from(cancelled);
        assert!(e.cancelled);
        assert_eq!(e.message, "cancelled: stop");
    }

    #[test]
    fn a_failed_step_keeps_its_message() {
        let step = StepError::from(TaskError::terminal("card declined"));
        let e = WorkflowError::from(Error::from(step));
        assert!(!e.cancelled);
        assert!(e.message.contains("card declined"), "{}", e.message);
    }
}
