//! A typed handle on one run of a `#[workflow]`.

use std::fmt;
use std::marker::PhantomData;

use magrathea_core::{CancelAck, DeliverError, RunError, RunId, RunStatus, RunView};
use serde_json::Value;

use crate::engine::Engine;
use crate::traits::Workflow;

/// A run of workflow `W`: read its status, wait for its typed output, signal or cancel it.
///
/// [`Engine::start`] returns one; [`Engine::handle`] makes one for a run id kept from earlier
/// (e.g. in a database, or after a restart). Cheap to clone; it holds the engine, so it can be
/// moved into a spawned task.
///
/// ```
/// use magrathea::prelude::*;
///
/// #[workflow]
/// async fn double(_ctx: Context, n: u64) -> Result<u64, WorkflowError> {
///     Ok(n * 2)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::builder().in_memory().workflow(double).build().await?;
/// let run = engine.start(double, 21).await?;
/// assert_eq!(run.result().await?, 42);
/// assert_eq!(run.status()?, RunStatus::Done);
///
/// // Later, from the id alone:
/// let again = engine.handle(double, run.id())?;
/// assert_eq!(again.result().await?, 42);
/// # Ok(()) }
/// ```
pub struct RunHandle<W> {
    engine: Engine,
    id: RunId,
    workflow: PhantomData<fn() -> W>,
}

impl<W> Clone for RunHandle<W> {
    fn clone(&self) -> Self {
        Self {
            engine: self.engine.clone(),
            id: self.id,
            workflow: PhantomData,
        }
    }
}

impl<W: Workflow> fmt::Debug for RunHandle<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunHandle")
            .field("workflow", &W::NAME)
            .field("id", &self.id)
            .finish()
    }
}

impl<W> fmt::Display for RunHandle<W> {
    /// The run's id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.id, f)
    }
}

impl<W: Workflow> RunHandle<W> {
    pub(crate) fn new(engine: Engine, id: RunId) -> Self {
        Self {
            engine,
            id,
            workflow: PhantomData,
        }
    }

    /// The run's id.
    pub fn id(&self) -> RunId {
        self.id
    }

    /// The run's current status.
    pub fn status(&self) -> Result<RunStatus, RunError> {
        self.engine.status(self.id)
    }

    /// The run as a projection of its journal: status, result, reason, variables.
    pub fn run(&self) -> Result<RunView, RunError> {
        self.engine.run(self.id)
    }

    /// Waits until the run has ended (`DONE`, `FAILED` or `CANCELLED`) or is `BLOCKED`, and
    /// returns its view (see [`Engine::wait`]).
    pub async fn wait(&self) -> Result<RunView, RunError> {
        self.engine.wait(self.id).await
    }

    /// Waits until the run has ended, waits on a gate (`WAITING`) or is `BLOCKED` (see
    /// [`Engine::wait_settled`]: a gate of a child run leaves this run `RUNNING`).
    pub async fn wait_settled(&self) -> Result<RunView, RunError> {
        self.engine.wait_settled(self.id).await
    }

    /// Waits for the run to end and returns its output. A run that ended `FAILED` or
    /// `CANCELLED`, or is `BLOCKED` (see [`Engine::wait`](crate::Engine::wait)), is a
    /// [`ResultError::Unsuccessful`] with its reason.
    pub async fn result(&self) -> Result<W::Output, ResultError> {
        let view = self.engine.wait(self.id).await?;
        if view.status != RunStatus::Done {
            return Err(ResultError::Unsuccessful {
                run_id: self.id,
                status: view.status,
                reason: view.reason.unwrap_or_default(),
            });
        }
        serde_json::from_value(view.result.unwrap_or(Value::Null))
            .map_err(|e| ResultError::Decode(self.id, e.to_string()))
    }

    /// Requests cancellation: the run's pending steps fail with a cancelled
    /// [`StepError`](crate::StepError), and a run that lets it propagate ends `CANCELLED`.
    ///
    /// A task attempt running at that moment is stopped at its next `.await` (its future is
    /// dropped, as `tokio::task::JoinHandle::abort` does) and journaled `cancelled`; its body
    /// gets no other word of it. Work that must be undone is undone by the workflow, which
    /// sees the cancelled step and may still run tasks before it ends.
    pub async fn cancel(&self, reason: &str) -> Result<CancelAck, DeliverError> {
        self.engine.cancel(self.id, reason).await
    }

    /// Sends signal `name` with `payload` (any serialisable value, borrowed ones included); the
    /// run reads it with [`Context::signal`](crate::Context::signal). A signal to a run that
    /// has ended is accepted and journaled as ignored.
    pub async fn signal<T: serde::Serialize>(
        &self,
        name: &str,
        payload: T,
    ) -> Result<(), SignalError> {
        let payload = serde_json::to_value(payload).map_err(SignalError::Encode)?;
        Ok(self.engine.signal(self.id, name, payload).await?)
    }
}

/// How an unsuccessful run stands: a `BLOCKED` run has not ended, it waits for code that
/// matches its journal.
fn how_it_stands(status: &RunStatus) -> String {
    match status {
        RunStatus::Blocked => {
            "is BLOCKED (not ended: it goes on when an engine with code that matches its \
             journal opens the store)"
                .into()
        }
        other => format!("ended {other}"),
    }
}

/// Why a run produced no output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// The run ended `FAILED` or `CANCELLED`, or is `BLOCKED`; `reason` says why.
    #[error("[MAG-RN002] run {run_id} {}: {reason}", how_it_stands(.status))]
    Unsuccessful {
        /// The run.
        run_id: RunId,
        /// How it ended.
        status: RunStatus,
        /// Why.
        reason: String,
    },
    /// The output did not decode as the workflow's output type: the run was started by
    /// another version of the workflow, or by a workflow of another type.
    #[error("[MAG-SE002] the output of run {0} has an unexpected shape: {1}")]
    Decode(RunId, String),
    /// The run could not be read.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Why a handle could not be made for a run id.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HandleError {
    /// The run is of another workflow than the handle's type: use a handle of that workflow.
    #[error("[MAG-RN003] run {run_id} is a run of `{actual}`, not of `{expected}`")]
    OtherWorkflow {
        /// The run.
        run_id: RunId,
        /// The handle's workflow.
        expected: &'static str,
        /// The run's workflow.
        actual: String,
    },
    /// The run is of another version of the workflow (its `VERSION`): its result and signals
    /// may have other types than the handle's. Use a handle of the version it was started with.
    #[error(
        "[MAG-RN003] run {run_id} is a run of version `{actual}` of `{workflow}`, not of \
         version `{expected}`"
    )]
    OtherVersion {
        /// The run.
        run_id: RunId,
        /// The workflow.
        workflow: &'static str,
        /// The handle's version.
        expected: &'static str,
        /// The run's version.
        actual: String,
    },
    /// The run does not exist, or could not be read.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Why a signal was not delivered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignalError {
    /// The payload could not be serialised to JSON (e.g. a map with non-string keys).
    #[error("[MAG-SE001] the signal's payload cannot be serialised: {0}")]
    Encode(#[source] serde_json::Error),
    /// The engine refused it: unknown run, blocked run, store failure.
    #[error(transparent)]
    Deliver(#[from] DeliverError),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blocked_run_is_not_said_to_have_ended() {
        let run_id = RunId::from_u128(7);
        let error = |status| ResultError::Unsuccessful {
            run_id,
            status,
            reason: "why".into(),
        };
        let blocked = error(RunStatus::Blocked).to_string();
        assert!(blocked.contains("is BLOCKED (not ended"), "{blocked}");
        assert!(!blocked.contains("ended BLOCKED"), "{blocked}");
        assert_eq!(
            error(RunStatus::Failed).to_string(),
            format!("[MAG-RN002] run {run_id} ended FAILED: why")
        );
    }
}
