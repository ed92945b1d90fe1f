//! Errors, one enum per operation. Every message starts with a stable `[MAG-…]` code.

use std::fmt;
use std::sync::Arc;

use crate::codec::DecodeError;
use crate::id::RunId;

/// The underlying cause of a [`StoreError::Io`]: the `std::io::Error`, or the storage engine's
/// own error when it is not an I/O error. Shared, because one failed group commit answers every
/// waiter of the group with a clone of the same error.
pub type IoSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// A failure of the underlying store.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StoreError {
    /// The storage layer failed (I/O, a full disk, a failed commit). Nothing in the failed
    /// commit was applied; the engine re-reads the journal and retries the run's work. The
    /// cause is the error's [`source`](std::error::Error::source), so it can be downcast (to a
    /// `std::io::Error`, for instance).
    Io(IoSource),
    /// A stored record could not be decoded; the journal is corrupt or from a newer version.
    Decode(DecodeError),
    /// The store is already open in another process; stop that process or use another path.
    Locked(String),
    /// The engine has shut down.
    Closed,
    /// The store is corrupt: an entry of the run index (a run's summary) could not be
    /// decoded (the journal itself may be intact), or the store file's pages are damaged
    /// (redb found them so on open). Restore the store from a backup.
    CorruptIndex(String),
    /// A store shared by several workers refused an append to a run whose lease this worker no
    /// longer holds (another worker reclaimed it): nothing of the append was written, and this
    /// worker stops driving the run.
    Fenced(RunId),
    /// A store shared by several workers refused a start whose idempotency key another
    /// worker's start took first: nothing of it was written; the key names that run.
    KeyTaken(RunId),
    /// A store shared by several workers: the worker that holds the run did not answer a
    /// delivery (a gate's answer, a signal, a cancel, a pause) in time; it may have stopped.
    /// `withdrawn`: it had not taken the delivery, which was withdrawn and will never apply;
    /// otherwise it took it and may still apply it.
    Unanswered {
        /// Whether the delivery was withdrawn before the holder took it.
        withdrawn: bool,
    },
}

impl StoreError {
    /// An [`StoreError::Io`] caused by `source`.
    pub fn io(source: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        Self::Io(Arc::from(source.into()))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(source) => write!(f, "[MAG-ST001] store failure: {source}"),
            Self::Decode(e) => e.fmt(f),
            Self::Locked(path) => write!(
                f,
                "[MAG-ST002] the store at {path} is in use: by another process (stop it, or \
                 reach its runs through it), or by an engine of this process that a handle \
                 keeps open (stop it with `Engine::stop`, or drop every handle of it: a \
                 stopped one, or one without handles, lets the new engine have the file, which \
                 waits up to 30 s for it)"
            ),
            Self::Closed => f.write_str(
                "[MAG-ST003] the engine has stopped: its journal writer takes nothing more, and \
                 once a new engine of the process has its store file, it reads nothing more",
            ),
            Self::CorruptIndex(why) => write!(f, "[MAG-ST004] corrupt store: {why}"),
            Self::Fenced(run) => write!(
                f,
                "[MAG-ST005] run {run} is driven by another worker now: this worker lost its \
                 lease, and its append was refused"
            ),
            Self::KeyTaken(run) => write!(
                f,
                "[MAG-ST006] the idempotency key was taken by run {run}, started by another \
                 worker at the same time"
            ),
            Self::Unanswered { withdrawn: true } => f.write_str(
                "[MAG-ST007] the worker that holds the run did not answer within 30 s and may \
                 have stopped: the request was withdrawn and changed nothing; another worker \
                 takes the run over once its lease expires (the workers' lease grace), try \
                 again then",
            ),
            Self::Unanswered { withdrawn: false } => f.write_str(
                "[MAG-ST007] the worker that holds the run took the request but did not answer \
                 within 30 s: it may still apply it; look at the run before trying again",
            ),
        }
    }
}

// By hand rather than derived: a derived `source` would return the `Arc` itself, which cannot be
// downcast to the error it holds.
impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(source) => Some(&**source),
            // Transparent: the decode error's own message is this error's message.
            Self::Decode(e) => e.source(),
            Self::Locked(_)
            | Self::Closed
            | Self::CorruptIndex(_)
            | Self::Fenced(_)
            | Self::KeyTaken(_)
            | Self::Unanswered { .. } => None,
        }
    }
}

impl From<DecodeError> for StoreError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(Arc::new(e))
    }
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
    /// The idempotency key already started a run of another workflow (or, for a typed start,
    /// of another version of it); no run was started.
    #[error(
        "[MAG-EN006] idempotency key `{key}` already started run {run} of workflow \
         `{workflow}`{}: use another key for this workflow",
        version.as_deref().map(|v| match v {
            "" => " (its unversioned one)".to_string(),
            v => format!(" version `{v}`"),
        }).unwrap_or_default()
    )]
    KeyOfOtherRun {
        /// The key.
        key: String,
        /// The run it started.
        run: RunId,
        /// That run's workflow.
        workflow: String,
        /// That run's version, when the start named another version of the same workflow.
        version: Option<String>,
    },
    /// The run's tenant has as many runs in progress as one tenant may
    /// ([`EngineBuilder::max_active_runs_per_tenant`](crate::EngineBuilder::max_active_runs_per_tenant));
    /// no run was started.
    #[error(
        "[MAG-EN008] tenant `{tenant}` has {held} runs in progress, the most one tenant may \
         have ({limit}): start again once some have ended, or raise the bound \
         (EngineBuilder::max_active_runs_per_tenant, or `magrathea serve \
         --max-runs-per-tenant`)"
    )]
    TenantFull {
        /// The tenant.
        tenant: String,
        /// How many of its runs are in memory.
        held: u32,
        /// The most it may have.
        limit: u32,
    },
    /// The run's tenant's runs in memory hold as many journal bytes as one tenant's may
    /// ([`EngineBuilder::max_resident_bytes_per_tenant`](crate::EngineBuilder::max_resident_bytes_per_tenant));
    /// no run was started.
    #[error(
        "[MAG-EN008] tenant `{tenant}`'s runs in memory hold {held} bytes of journal, and this \
         start would bring {incoming} more, past the most one tenant's may hold ({limit}): start \
         again once some have ended or wait out of memory, or raise the bound \
         (EngineBuilder::max_resident_bytes_per_tenant, or `magrathea serve \
         --max-resident-bytes-per-tenant`)"
    )]
    TenantMemoryFull {
        /// The tenant.
        tenant: String,
        /// The journal bytes its runs in memory hold.
        held: u64,
        /// The bytes this start would bring (its parameters, mostly).
        incoming: u64,
        /// The most they may hold.
        limit: u64,
    },
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

/// Why a gate answer, signal, cancellation, pause or resume was not accepted.
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
    #[error(
        "[MAG-EN005] run {0} cannot be driven by this process: it has no front end for it; \
         deliver through a process that registers its workflow (or the YAML runtime)"
    )]
    Unsupported(RunId),
    /// The run cannot be paused in its state: it has ended, or its cancellation is under way.
    #[error("[MAG-PS001] run {0} is {1}: only a run that has not ended can be paused")]
    NotPausable(RunId, crate::record::RunStatus),
    /// The run is not paused, so there is nothing to resume.
    #[error("[MAG-PS002] run {0} is {1}, not PAUSED: only a paused run can be resumed")]
    NotPaused(RunId, crate::record::RunStatus),
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::*;

    #[test]
    fn an_io_error_keeps_its_cause_as_the_source() {
        let err = StoreError::from(std::io::Error::new(
            std::io::ErrorKind::StorageFull,
            "no space left",
        ));
        assert_eq!(err.to_string(), "[MAG-ST001] store failure: no space left");
        let source = err.source().expect("the I/O error is the source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("the source is the std::io::Error itself");
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
        // Every waiter of a failed group commit gets a clone; each sees the same cause.
        let clone = err.clone();
        assert!(std::ptr::addr_eq(
            clone.source().unwrap(),
            err.source().unwrap()
        ));
    }

    #[test]
    fn other_variants_keep_their_codes() {
        assert!(StoreError::Closed.source().is_none());
        let e = StoreError::from(DecodeError::UnknownTag(99));
        assert_eq!(e.to_string(), "[MAG-JF002] unknown record tag 99");
        assert!(
            StoreError::CorruptIndex("x".into())
                .to_string()
                .starts_with("[MAG-ST004]")
        );
    }

    #[test]
    fn a_key_of_another_version_names_that_version_or_the_unversioned_one() {
        let run = RunId::new();
        let of = |version: Option<&str>| {
            StartError::KeyOfOtherRun {
                key: "k1".into(),
                run,
                workflow: "order".into(),
                version: version.map(str::to_string),
            }
            .to_string()
        };
        assert_eq!(
            of(Some("2")),
            format!(
                "[MAG-EN006] idempotency key `k1` already started run {run} of workflow `order` \
                 version `2`: use another key for this workflow"
            )
        );
        let unversioned = of(Some(""));
        assert!(
            unversioned.contains("of workflow `order` (its unversioned one):"),
            "{unversioned}"
        );
        assert!(!of(None).contains("version"), "{}", of(None));
    }
}
