//! Durable workflows in Rust.
//!
//! Write a workflow as an `async fn` marked [`workflow`], call [`task`]s, durable timers,
//! approval gates and child workflows through its [`Context`], and run it on an [`Engine`].
//! Every step is journaled in an embedded redb file; after a crash the engine replays the
//! code against the journal and carries on where it stopped.
//!
//! ```no_run
//! use magrathea::prelude::*;
//!
//! #[task(retry(max_attempts = 3, backoff_ms = 100))]
//! async fn greet(name: String) -> Result<String, TaskError> {
//!     Ok(format!("hello, {name}"))
//! }
//!
//! #[workflow]
//! async fn hello(ctx: Context, name: String) -> Result<String, WorkflowError> {
//!     let greeting = ctx.task(greet, name).await?;
//!     ctx.sleep(std::time::Duration::from_millis(10)).await?;
//!     Ok(greeting)
//! }
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let engine = Engine::builder().path("journal.redb").workflow(hello).build().await?;
//! let run = engine.start(hello, "world".to_string()).await?;
//! assert_eq!(run.result().await?, "hello, world");
//! # Ok(()) }
//! ```
//!
//! * Tasks reach the application's own resources (a database pool, an HTTP client) through
//!   [`EngineBuilder::data`] and [`TaskContext::data`].
//! * A task needs no registration to be called from code; [`EngineBuilder::task`] exposes it by
//!   name to YAML workflows and tools.
//! * [`Engine::start`] returns a typed [`RunHandle`]; [`Engine::handle`] makes one from a
//!   [`RunId`].
//! * Workflow bodies return `Result<T, WorkflowError>`, or `Result<T, magrathea::Error>` to
//!   use `?` on any error type; see [`Error`].
//! * Gates are built with [`Gate`] and answered as an [`Approval`], [`Decision`] or
//!   [`Feedback`].
//! * With the `exec` feature, `Context::exec` runs the executors of `magrathea-exec` (a shell
//!   command, a script, a tool through the permission cascade, an agent recipe) as journaled
//!   tasks; give the engine the executors with `EngineBuilder::executors`.

mod body_error;
mod context;
mod engine;
mod error;
mod gate;
mod handle;
mod registration;
pub mod testing;
mod traits;

pub use context::Context;
pub use engine::{Engine, EngineBuilder, Recovery, StartOptions};
pub use error::{ChildError, Error, StepError};
pub use gate::{Approval, Criticality, Decision, Feedback, Gate, NoDecision};
pub use handle::{HandleError, ResultError, RunHandle, SignalError};
pub use magrathea_core::{
    AnswerAck, AnswerOutcome, AppData, CancelAck, ChildOutcome, ChildRequest, ControlAck,
    DeliverError, Divergence, Durability, Entry, GateAnswer, GateKind, GateOutcome, GateSpec,
    InboxFilter, InboxItem, InboxPage, InboxPageError, InboxPageRequest, InboxStatus,
    NonDeterminism, OpenError, Record, ReplayError, RetryPolicy, RunError, RunFilter, RunId,
    RunStatus, RunSummary, RunView, StartError, StepFuture, TaskContext, TaskError, TaskOptions,
    WorkflowError,
};
pub use magrathea_macros::{task, workflow};
pub use traits::{Journaled, Task, Workflow};

/// The core crate, for front ends and advanced use.
pub use magrathea_core as core;

#[cfg(feature = "exec-base")]
pub use magrathea_exec as exec;

#[cfg(feature = "yaml")]
pub use magrathea_yaml as yaml;

#[cfg(feature = "server")]
pub use magrathea_server as server;

/// What a workflow author needs.
pub mod prelude {
    pub use crate::{
        Approval, ChildError, Context, Decision, Engine, Feedback, Gate, GateAnswer, GateKind,
        GateOutcome, InboxFilter, RetryPolicy, RunHandle, RunId, RunStatus, StepError, Task,
        TaskContext, TaskError, TaskOptions, Workflow, WorkflowError, task, workflow,
    };
}

/// The README's code, compiled as the crate's doc tests: what a reader copies builds. Its
/// second example uses `magrathea::exec`, so this needs the `exec` feature (which the
/// workspace's tests turn on).
#[cfg(all(doctest, feature = "exec"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeExamples;

#[doc(hidden)]
pub mod __private {
    pub use crate::body_error::{
        BodyError, TaskErrorViaBox, TaskErrorViaInto, WorkflowErrorViaBox, WorkflowErrorViaInto,
    };
    pub use futures::future::BoxFuture;
    pub use serde;
    pub use std::boxed::Box;
    pub use std::time::Duration;
}
