//! The typed engine and its builder.

use std::ops::Deref;
use std::path::PathBuf;
use std::time::Duration;

use magrathea_core as core;
use magrathea_core::{
    Durability, InterpreterFn, OpenError, RunError, RunId, RunStatus, RunView, StartError,
    StartRequest, Store, TaskError, TaskRegistration, WorkflowError, WorkflowRegistration,
};
use serde_json::Value;

use crate::context::Context;
use crate::traits::{Task, Workflow};

/// Builds an [`Engine`]: where the journal lives and which workflows and tasks it runs.
///
/// Defaults: a redb file at `./.magrathea/journal.redb`, [`Durability::Immediate`], every
/// non-terminal run recovered on build.
#[derive(Debug, Default)]
pub struct EngineBuilder {
    inner: core::EngineBuilder,
}

impl EngineBuilder {
    /// The redb journal file.
    pub fn path(self, path: impl Into<PathBuf>) -> Self {
        Self {
            inner: self.inner.path(path),
        }
    }
    /// Uses a store of your own.
    pub fn store(self, store: std::sync::Arc<dyn Store>) -> Self {
        Self {
            inner: self.inner.store(store),
        }
    }
    /// An in-memory store: nothing survives the process. For tests.
    pub fn in_memory(self) -> Self {
        Self {
            inner: self.inner.in_memory(),
        }
    }
    /// Commit durability.
    pub fn durability(self, durability: Durability) -> Self {
        Self {
            inner: self.inner.durability(durability),
        }
    }
    /// Whether building recovers every non-terminal run (default `true`).
    pub fn recover(self, recover: bool) -> Self {
        Self {
            inner: self.inner.recover(recover),
        }
    }
    /// Evicts suspended runs whose next wake-up is further away than this (default 2 s).
    pub fn evict_after(self, d: Duration) -> Self {
        Self {
            inner: self.inner.evict_after(d),
        }
    }

    /// Registers a `#[workflow]`.
    pub fn workflow<W: Workflow>(self, _workflow: W) -> Self {
        let reg = WorkflowRegistration::new(W::NAME, W::VERSION, |ctx, input: Value| async move {
            let input: W::Input = serde_json::from_value(input).map_err(|e| {
                WorkflowError::failed(format!(
                    "[MAG-SE003] invalid input for workflow `{}`: {e}",
                    W::NAME
                ))
            })?;
            let output = W::run(Context::from_raw(ctx), input).await?;
            serde_json::to_value(output).map_err(|e| {
                WorkflowError::failed(format!("[MAG-SE001] output cannot be serialised: {e}"))
            })
        });
        Self {
            inner: self.inner.workflow(reg),
        }
    }

    /// Registers a `#[task]`. YAML workflows can call it as a tool by its name.
    pub fn task<T: Task>(self, _task: T) -> Self {
        let reg = TaskRegistration::new(T::NAME, T::options(), |input: Value, ctx| async move {
            let input: T::Input = serde_json::from_value(input).map_err(|e| {
                TaskError::terminal(format!(
                    "[MAG-TK002] invalid input for task `{}`: {e}",
                    T::NAME
                ))
            })?;
            let output = T::run(input, ctx).await?;
            serde_json::to_value(output).map_err(|e| {
                TaskError::terminal(format!("[MAG-SE001] output cannot be serialised: {e}"))
            })
        });
        Self {
            inner: self.inner.task(reg),
        }
    }

    /// Registers an untyped task.
    pub fn task_registration(self, registration: TaskRegistration) -> Self {
        Self {
            inner: self.inner.task(registration),
        }
    }

    /// Registers an untyped workflow.
    pub fn workflow_registration(self, registration: WorkflowRegistration) -> Self {
        Self {
            inner: self.inner.workflow(registration),
        }
    }

    /// Applies `f` to the untyped builder, e.g. to install a front end:
    /// `.with_core(|b| yaml_runtime.install(b))`.
    pub fn with_core(self, f: impl FnOnce(core::EngineBuilder) -> core::EngineBuilder) -> Self {
        Self {
            inner: f(self.inner),
        }
    }

    /// Registers a front end's interpreter.
    pub fn interpreter(self, frontend: impl Into<String>, f: InterpreterFn) -> Self {
        Self {
            inner: self.inner.interpreter(frontend, f),
        }
    }

    /// Opens the journal and starts the engine. Must run inside a tokio runtime.
    pub async fn build(self) -> Result<Engine, OpenError> {
        Ok(Engine {
            inner: self.inner.build().await?,
        })
    }
}

/// Why a run produced no output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultError {
    /// The run ended without success.
    #[error("[MAG-RN002] run {run_id} ended {status}: {reason}")]
    Unsuccessful {
        /// The run.
        run_id: RunId,
        /// How it ended.
        status: RunStatus,
        /// Why.
        reason: String,
    },
    /// The output did not decode as the workflow's output type.
    #[error("[MAG-SE002] the output of run {0} has an unexpected shape: {1}")]
    Decode(RunId, String),
    /// The run could not be read.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Options of a start.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Starting twice with the same key returns the first run.
    pub idempotency_key: Option<String>,
    /// Who starts the run.
    pub started_by: Option<String>,
}

/// The engine, typed: start `#[workflow]`s and read their outputs. Dereferences to the core
/// engine for everything untyped (answering gates, signals, cancel, journals, listing).
#[derive(Debug, Clone)]
pub struct Engine {
    inner: core::Engine,
}

impl Deref for Engine {
    type Target = core::Engine;
    fn deref(&self) -> &core::Engine {
        &self.inner
    }
}

impl Engine {
    /// A builder.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// The untyped engine.
    pub fn core(&self) -> &core::Engine {
        &self.inner
    }

    /// Starts a run of `W`; returns once its start is durable.
    pub async fn start<W: Workflow>(
        &self,
        workflow: W,
        input: W::Input,
    ) -> Result<RunId, StartError> {
        self.start_with(workflow, input, StartOptions::default())
            .await
    }

    /// Starts a run of `W` with options (e.g. an idempotency key).
    pub async fn start_with<W: Workflow>(
        &self,
        _workflow: W,
        input: W::Input,
        options: StartOptions,
    ) -> Result<RunId, StartError> {
        let input =
            serde_json::to_value(input).map_err(|e| StartError::InvalidInput(e.to_string()))?;
        let mut req = StartRequest::code(W::NAME, input);
        req.idempotency_key = options.idempotency_key;
        req.started_by = options.started_by.unwrap_or_default();
        self.inner.start(req).await
    }

    /// Waits for a run of `W` to end and returns its output.
    pub async fn result<W: Workflow>(
        &self,
        _workflow: W,
        run: RunId,
    ) -> Result<W::Output, ResultError> {
        let view: RunView = self.inner.wait(run).await?;
        if view.status != RunStatus::Done {
            return Err(ResultError::Unsuccessful {
                run_id: run,
                status: view.status,
                reason: view.reason.unwrap_or_default(),
            });
        }
        serde_json::from_value(view.result.unwrap_or(Value::Null))
            .map_err(|e| ResultError::Decode(run, e.to_string()))
    }
}
