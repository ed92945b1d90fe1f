//! What callers ask of the engine and what it answers: starts, inbox filters, acknowledgements
//! of answers and cancellations, and the updates it publishes.

use std::sync::Arc;

use serde_json::Value;

use crate::id::RunId;
use crate::record::{Entry, ParentRef, RunStatus};
use crate::vocabulary::{Frontend, RunScope};

/// What to start.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The workflow's name.
    pub workflow: String,
    /// The front end: `code` (registered workflows) or an interpreter's name (`yaml`).
    pub frontend: Frontend,
    /// The version; `None` takes the registration's.
    pub version: Option<String>,
    /// The frozen definition, for interpreted front ends.
    pub definition: Option<String>,
    /// The input (parameters).
    pub input: Value,
    /// Starting twice with the same key returns the first run.
    pub idempotency_key: Option<String>,
    /// Who starts it.
    pub started_by: String,
    /// `tenant/project`, or empty.
    pub scope: RunScope,
    /// The parent, for child runs.
    pub parent: Option<ParentRef>,
    /// A chosen run id (children use the id journaled by their parent).
    pub run_id: Option<RunId>,
    /// Who the caller says the run is for, recorded beside `started_by` (not verified).
    pub requested_by: Option<String>,
    /// Bounds the run's scope sets where its definition declares none, frozen in its
    /// [`StartRecord::bounds`](crate::StartRecord::bounds).
    pub bounds: Option<Value>,
    /// Where the run begins, when not at the start:
    /// [`StartRecord::entry`](crate::StartRecord::entry).
    pub entry: Option<crate::record::EntryPoint>,
}

impl StartRequest {
    /// Starts the registered code workflow `workflow` with `input`.
    pub fn code(workflow: impl Into<String>, input: Value) -> Self {
        Self {
            workflow: workflow.into(),
            frontend: "code".into(),
            version: None,
            definition: None,
            input,
            idempotency_key: None,
            started_by: String::new(),
            scope: RunScope::default(),
            parent: None,
            run_id: None,
            requested_by: None,
            bounds: None,
            entry: None,
        }
    }

    /// A new top-level run exactly as `start` began: the same workflow, front end, version,
    /// frozen definition, parameters, scope and bounds (a rerun on the frozen definition). Who
    /// starts it, and any key, are the caller's to set.
    pub fn repeat_of(start: &crate::record::StartRecord) -> Self {
        Self {
            frontend: start.frontend.clone(),
            version: Some(start.workflow_version.clone()),
            definition: start.definition.clone(),
            scope: start.scope.clone(),
            bounds: start.bounds.clone(),
            entry: start.entry.clone(),
            ..Self::code(start.workflow_name.clone(), start.params.clone())
        }
    }

    /// Sets the idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sets who starts the run.
    pub fn started_by(mut self, who: impl Into<String>) -> Self {
        self.started_by = who.into();
        self
    }

    /// Records who the caller says the run is for (see [`StartRequest::requested_by`]).
    pub fn requested_by(mut self, who: impl Into<String>) -> Self {
        self.requested_by = Some(who.into());
        self
    }

    /// Freezes default bounds in the run's start record (see [`StartRequest::bounds`]).
    pub fn bounds(mut self, bounds: Value) -> Self {
        self.bounds = Some(bounds);
        self
    }

    /// Sets the scope.
    pub fn scope(mut self, scope: impl Into<RunScope>) -> Self {
        self.scope = scope.into();
        self
    }
}

/// Which inbox items [`Engine::inbox`](crate::Engine::inbox) lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InboxFilter {
    /// Items still awaiting an answer, of runs that take one (not of a `BLOCKED` run, until
    /// fixed code unblocks it).
    Pending,
    /// Every item of the runs that have not ended, answered or not.
    All,
    /// Every item of the runs that have not ended, and of the `n` most recently started of the
    /// runs that have (answered, expired or closed items of finished runs; runs that have not
    /// ended do not count towards `n`).
    Recent(usize),
}

/// Why a journal does not replay against the current code: the reason the run would block,
/// with its `[MAG-…]` code, and the typed report when the code asks for other steps than the
/// journal holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ReplayError {
    /// The reason, as a blocked run's status shows it (`[MAG-ND001] …`, `[MAG-WF001] …`).
    pub message: String,
    /// The code and the journal part at a step (`[MAG-ND001]`, `[MAG-ND002]`, `[MAG-ND005]`):
    /// the step, and both sides of it. `None` for other reasons (a panic, a workflow that is
    /// not registered, a journal that cannot be read).
    pub nondeterminism: Option<Box<crate::replay::NonDeterminism>>,
}

impl ReplayError {
    /// A reason without a non-determinism report.
    pub(crate) fn other(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            nondeterminism: None,
        }
    }

    /// The reason's stable code (`MAG-ND001`, `MAG-WF001`, …), when it carries one.
    pub fn code(&self) -> Option<&str> {
        let rest = self.message.strip_prefix('[')?;
        let end = rest.find(']')?;
        Some(&rest[..end])
    }
}

/// Whether a gate answer was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerAck {
    /// The answer was journaled and drives the run on.
    Applied,
    /// The gate had already completed (answered, timed out, cancelled or the run ended): the
    /// answer was journaled as ignored and changes nothing.
    Ignored,
}

/// Whether a cancellation took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAck {
    /// The cancellation was journaled and delivered to the run.
    Requested,
    /// Cancellation had been requested before.
    AlreadyRequested,
    /// The run had already ended.
    AlreadyFinished,
}

/// What a pause or a resume did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlAck {
    /// The run is paused now (its `PauseRequestedRecord` is durable).
    Paused,
    /// The run was paused already; nothing was journaled.
    AlreadyPaused,
    /// The run is resumed (its `ResumeRequestedRecord` is durable); what it held is dispatched.
    Resumed,
}

/// An operator's control of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Control {
    /// Pause it.
    Pause {
        /// Who asks.
        by: String,
        /// Why.
        reason: Option<String>,
    },
    /// Resume it.
    Unpause {
        /// Who asks.
        by: String,
    },
}

/// A committed status change of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunUpdate {
    /// The run.
    pub run_id: RunId,
    /// Its new status.
    pub status: RunStatus,
}

/// Records committed to a run's journal.
#[derive(Debug, Clone)]
pub struct JournalUpdate {
    /// The run.
    pub run_id: RunId,
    /// The records, in order.
    pub entries: Arc<Vec<Entry>>,
}
