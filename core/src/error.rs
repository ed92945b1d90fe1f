//! Errors, one enum per operation. Every message starts with a stable `[MAG-…]` code.

use crate::codec::DecodeError;
use crate::id::RunId;

/// A failure of the underlying store.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The storage layer failed (I/O, a full disk, a failed commit). Nothing in the failed
    /// commit was applied; the engine re-reads the journal and retries the run's work.
    #[error("[MAG-ST001] store failure: {0}")]
    Io(String),
    /// A stored record could not be decoded; the journal is corrupt or from a newer version.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The store is already open in another process; stop that process or use another path.
    #[error("[MAG-ST002] the store at {0} is in use by another process")]
    Locked(String),
    /// The engine has shut down.
    #[error("[MAG-ST003] the journal writer has stopped")]
    Closed,
}

/// Why an engine could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Two registrations share a name; rename one.
    #[error("[MAG-EN001] `{0}` is registered twice")]
    DuplicateRegistration(String),
}

/// Why a run could not be started.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StartError {
    /// No workflow of that name is registered with the engine; register it on the builder.
    #[error("[MAG-EN002] unknown workflow `{0}`: register it with EngineBuilder::workflow")]
    UnknownWorkflow(String),
    /// No interpreter handles that front end; register one with EngineBuilder::interpreter.
    #[error("[MAG-EN003] no interpreter for front end `{0}`")]
    UnknownFrontend(String),
    /// The input could not be serialised.
    #[error("[MAG-EN004] invalid input: {0}")]
    InvalidInput(String),
    /// The store failed; the run was not started.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a read of a run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// No run with this id exists (in this scope).
    #[error("[MAG-RN001] run {0} not found")]
    NotFound(RunId),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Why a gate answer, signal or cancellation was not accepted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeliverError {
    /// No run with this id exists.
    #[error("[MAG-RN001] run {0} not found")]
    RunNotFound(RunId),
    /// The id does not name an inbox item (`<run_id>-<step>`).
    #[error("[MAG-GT001] inbox item `{0}` not found")]
    ItemNotFound(String),
    /// The answer does not fit the gate (e.g. an option that is not offered); fix the answer.
    #[error("[MAG-GT002] invalid answer: {0}")]
    InvalidAnswer(String),
    /// The run is blocked on a non-determinism error; fix the code and reopen the engine.
    #[error("[MAG-GT003] run {0} is blocked: {1}")]
    Blocked(RunId, String),
    /// The store failed; the delivery was not recorded.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// This process has no front end for the run (e.g. a server without the code workflows
    /// of a run in a shared store); deliver it through a process that runs that workflow.
    #[error("[MAG-EN005] run {0} cannot be driven by this process: it has no front end for it")]
    Unsupported(RunId),
}
