//! What a code workflow is to the engine: its body, its registration, how it fails; and the
//! interpreters of other front ends.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::context::WorkflowContext;
use crate::record::StartRecord;
use crate::task::TaskError;

/// Why a workflow ended without a result.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowError {
    /// A message for people; journaled as the run's `reason`.
    pub message: String,
    /// Whether the run ends `CANCELLED` rather than `FAILED`.
    pub cancelled: bool,
    /// A result to journal even though the run failed (a YAML failure terminal's `result:`).
    pub result: Option<Value>,
}

impl WorkflowError {
    /// A failure with a message.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cancelled: false,
            result: None,
        }
    }
    /// Ends the run as cancelled.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cancelled: true,
            result: None,
        }
    }
    /// Journals a result with the failure.
    pub fn with_result(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }
}

impl fmt::Display for WorkflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WorkflowError {}

impl From<TaskError> for WorkflowError {
    /// A task failure fails the workflow; a cancelled step cancels it.
    fn from(e: TaskError) -> Self {
        Self {
            cancelled: e.is_cancelled(),
            message: e.to_string(),
            result: None,
        }
    }
}

/// The type-erased body of a code workflow.
pub type WorkflowFn = Arc<
    dyn Fn(WorkflowContext, Value) -> BoxFuture<'static, Result<Value, WorkflowError>>
        + Send
        + Sync,
>;

/// Runs definitions of a front end (e.g. YAML): given the context and the run's `StartRecord`
/// (with its frozen definition), returns the workflow future, or why it cannot run.
pub type InterpreterFn = Arc<
    dyn Fn(
            WorkflowContext,
            &StartRecord,
        ) -> Result<BoxFuture<'static, Result<Value, WorkflowError>>, String>
        + Send
        + Sync,
>;

/// A code workflow registered with the engine.
#[derive(Clone)]
pub struct WorkflowRegistration {
    /// Its name.
    pub name: String,
    /// Its version, journaled in each run's `StartRecord`.
    pub version: String,
    /// Its body.
    pub body: WorkflowFn,
}

impl fmt::Debug for WorkflowRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkflowRegistration")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl WorkflowRegistration {
    /// Registers a closure as a workflow.
    pub fn new<F, Fut>(name: impl Into<String>, version: impl Into<String>, f: F) -> Self
    where
        F: Fn(WorkflowContext, Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, WorkflowError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            version: version.into(),
            body: Arc::new(move |c, v| Box::pin(f(c, v))),
        }
    }
}
