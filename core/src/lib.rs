//! Magrathea's durable-execution core.
//!
//! Workflows run as deterministic code against an append-only journal stored in redb. The
//! engine journals each step before acting on it, commits records from all runs in groups
//! (one fsync for many appends), and after a crash replays each run's code against its
//! journal to carry on exactly where it stopped.
//!
//! The parts, from the bottom up:
//! - [`record`] and [`codec`]: the journal's vocabulary and its byte encoding;
//! - [`store`]: the [`Store`] trait, with redb and in-memory implementations;
//! - [`writer`]: the group-commit journal writer;
//! - [`context`]: what workflow code sees ([`WorkflowContext`]);
//! - [`Engine`]: runs, replay, timers, gates, signals, children, cancellation;
//! - [`view`]: projections of the journal (run views, the inbox);
//! - [`codes`]: every error code, with its meaning and remedy.

pub mod codec;
pub mod codes;
pub mod context;
mod engine;
pub mod error;
pub mod id;
mod panic;
pub mod record;
pub mod replay;
pub mod store;
pub mod task;
#[cfg(any(test, feature = "test-util"))]
pub mod testing;
pub mod view;
pub mod writer;

pub use context::{
    ChildOutcome, ChildRequest, GateOutcome, Select, StepFuture, TaskCall, WorkflowContext,
};
pub use engine::{
    AnswerAck, CancelAck, Engine, EngineBuilder, InboxFilter, InterpreterFn, JournalUpdate,
    ReplayError, RunUpdate, StartRequest, WorkflowError, WorkflowFn, WorkflowRegistration,
};
pub use error::{DeliverError, OpenError, RunError, StartError, StoreError};
pub use id::RunId;
pub use record::{
    AnswerOutcome, Entry, GateAnswer, GateKind, GateSpec, ParentRef, Record, RunStatus,
    StartRecord, Step, StepKind,
};
pub use store::{Durability, MemoryStore, RedbStore, RunFilter, RunSummary, Store, StoreReader};
pub use task::{AppData, RetryPolicy, TaskContext, TaskError, TaskOptions, TaskRegistration};
pub use view::{InboxItem, InboxStatus, RunView};
