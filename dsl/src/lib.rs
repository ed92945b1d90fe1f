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
//! let engine = Engine::builder().path("journal.redb").workflow(hello).task(greet).build().await?;
//! let run = engine.start(hello, "world".to_string()).await?;
//! assert_eq!(engine.result(hello, run).await?, "hello, world");
//! # Ok(()) }
//! ```

mod context;
mod engine;
pub mod testing;
mod traits;

pub use context::{ChildError, Context, gate_spec};
pub use engine::{Engine, EngineBuilder, ResultError, StartOptions};
pub use magrathea_core::{
    AnswerAck, AnswerOutcome, AppData, CancelAck, ChildOutcome, ChildRequest, DeliverError,
    Durability, Entry, GateAnswer, GateKind, GateOutcome, GateSpec, InboxFilter, InboxItem,
    InboxStatus, OpenError, Record, RetryPolicy, RunError, RunFilter, RunId, RunStatus, RunSummary,
    RunView, StartError, StepFuture, TaskContext, TaskError, TaskOptions, WorkflowError,
};
pub use magrathea_macros::{task, workflow};
pub use traits::{Journaled, Task, Workflow};

/// The core crate, for front ends and advanced use.
pub use magrathea_core as core;

#[cfg(feature = "yaml")]
pub use magrathea_yaml as yaml;

#[cfg(feature = "server")]
pub use magrathea_server as server;

/// What a workflow author needs.
pub mod prelude {
    pub use crate::{
        Context, Engine, GateAnswer, GateKind, GateOutcome, RetryPolicy, RunId, RunStatus, Task,
        TaskContext, TaskError, TaskOptions, Workflow, WorkflowError, gate_spec, task, workflow,
    };
}

#[doc(hidden)]
pub mod __private {
    pub use futures::future::BoxFuture;
    pub use serde;
    pub use std::boxed::Box;
    pub use std::time::Duration;
}
