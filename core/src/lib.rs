//! Magrathea's durable-execution core.
//!
//! Workflows run as deterministic code against an append-only journal stored in redb. The
//! engine journals each step before acting on it, commits records from all runs in groups
//! (one fsync for many appends), and after a crash replays each run's code against its
//! journal to carry on exactly where it stopped.
//!
//! The crate root holds the API: the [`Engine`] and its builder, what workflow code sees
//! ([`WorkflowContext`]), the journal's vocabulary ([`Record`], [`Entry`], [`RunStatus`]), tasks
//! ([`TaskRegistration`], [`TaskError`]), views ([`RunView`], [`InboxItem`]), the typed
//! non-determinism report ([`NonDeterminism`]) and the errors of each operation. Four modules
//! are public for those who build on the journal itself:
//! - [`codec`]: the byte encoding of records (documented in `core/docs/journal-format.md`);
//! - [`store`]: the [`Store`] trait with its contracts, and its redb and in-memory
//!   implementations, for writing a store of your own;
//! - [`writer`]: the group-commit journal writer;
//! - [`codes`]: every error code, with its meaning and remedy.
//!
//! Inside, a run's pure replay state (one small state machine per step kind) is driven by one
//! driver task per run in memory; see `ARCHITECTURE.md`.

pub mod codec;
pub mod codes;
mod context;
mod engine;
mod error;
pub mod export;
mod held;
mod id;
mod json_len;
mod link;
mod log_throttle;
mod panic;
mod patches;
mod record;
mod replay;
mod select;
mod step_future;
pub mod store;
mod task;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
mod view;
mod vocabulary;
pub mod writer;

pub use context::{ChildOutcome, ChildRequest, GateOutcome, TaskCall, WorkflowContext};
pub use engine::{
    AnswerAck, CancelAck, ControlAck, DEFAULT_HEAP_TRIM_THRESHOLD, DEFAULT_MAX_CHILD_DEPTH,
    DEFAULT_MAX_CLAIM_ATTEMPTS, DEFAULT_MAX_JOURNAL_BYTES_PER_RUN, DEFAULT_MAX_RUNS_PER_TREE,
    DEFAULT_MAX_TASK_OUTPUT_BYTES, Engine, EngineBuilder, InboxFilter, InboxPage, InboxPageError,
    InboxPageRequest, InterpreterFn, JournalBytesLimit, JournalUpdate, ReplayError, RunUpdate,
    StartRequest, WeakEngine, WorkflowError, WorkflowFn, WorkflowRegistration,
};
pub use error::{DeliverError, IoSource, OpenError, RunError, StartError, StoreError};
pub use held::HeldTask;
pub use id::RunId;
pub use json_len::json_len;
pub use log_throttle::LogThrottle;
pub use record::{
    AnswerOutcome, Entry, EntryPoint, GateAnswer, GateKind, GateSpec, ParentRef, Record, RunStatus,
    StartRecord, Step, StepKind,
};
pub use replay::{Divergence, MAX_ANSWER_COMMENT_BYTES, NonDeterminism, StepIdentity};
pub use select::{NextCompleted, Select};
pub use step_future::StepFuture;
pub use store::catalog::SharedCatalog;
pub use store::{
    Catalog, Durability, MemoryStore, RedbStore, RunFilter, RunSummary, Store, StoreReader,
};
pub use task::{
    AppData, RetryPolicy, TaskContext, TaskError, TaskFn, TaskOptions, TaskOutputLimit,
    TaskRegistration,
};
pub use view::{InboxItem, InboxStatus, ReExecution, RunView, TaskFailure};
pub use vocabulary::{Frontend, Outcome, RunScope, TimerPurpose};
pub use writer::JournalHealth;
