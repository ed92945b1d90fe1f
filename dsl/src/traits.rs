//! The traits that `#[task]` and `#[workflow]` implement.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Context, TaskContext, TaskError, TaskOptions, WorkflowError};
use futures::future::BoxFuture;

/// A task: an async function with side effects whose result is journaled.
///
/// Implemented by `#[task]`; you rarely implement it by hand. The input and output are serde
/// types, so the journal can hold them and YAML workflows can call the task as a tool.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a task",
    label = "expected a function marked #[task]",
    note = "mark an `async fn` with `#[magrathea::task]` to make it a task"
)]
pub trait Task: Send + Sync + 'static {
    /// The input type.
    type Input: Serialize + DeserializeOwned + Send + 'static;
    /// The output type.
    type Output: Serialize + DeserializeOwned + Send + 'static;
    /// The name the task is registered and journaled under.
    const NAME: &'static str;
    /// Default retry policy and timeout.
    fn options() -> TaskOptions {
        TaskOptions::default()
    }
    /// Runs one attempt.
    fn run(
        input: Self::Input,
        ctx: TaskContext,
    ) -> BoxFuture<'static, Result<Self::Output, TaskError>>;
}

/// A workflow: deterministic async code that reaches the world only through its [`Context`].
///
/// Implemented by `#[workflow]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a workflow",
    label = "expected a function marked #[workflow]",
    note = "mark an `async fn(ctx: Context, input: T)` with `#[magrathea::workflow]`; a #[task] cannot be started as a workflow"
)]
pub trait Workflow: Send + Sync + 'static {
    /// The input type.
    type Input: Serialize + DeserializeOwned + Send + 'static;
    /// The output type.
    type Output: Serialize + DeserializeOwned + Send + 'static;
    /// The name runs of this workflow are journaled under.
    const NAME: &'static str;
    /// The version journaled in each run's `StartRecord`. A run started on one version is not
    /// replayed on another: it is reported blocked instead.
    const VERSION: &'static str = "";
    /// Runs the workflow.
    fn run(
        ctx: Context,
        input: Self::Input,
    ) -> BoxFuture<'static, Result<Self::Output, WorkflowError>>;
}

/// A type that can cross the journal: serde serialisable and deserialisable.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be journaled: it must implement serde's Serialize and Deserialize",
    label = "not a serde type",
    note = "add `#[derive(serde::Serialize, serde::Deserialize)]` to the type"
)]
pub trait Journaled: Serialize + DeserializeOwned + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Send + 'static> Journaled for T {}
