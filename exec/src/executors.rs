//! The executors' handle: the project tree, the lanes and each executor's own state, side by
//! side. Each executor takes only what it needs from it.

use std::fmt;
use std::sync::{Arc, OnceLock};

use magrathea_core::{Engine, EngineBuilder, TaskContext, TaskError, WeakEngine};
use serde_json::Value;

use crate::call::{ExecCall, IntoExecCall, RunData};
use crate::documents::{DocumentSource, Scope};
use crate::lanes::{LanePlace, Lanes};

/// The task executors of one document tree. Cheap to clone: clones share everything.
///
/// Calls reach them in two ways: bound ([`Executors::call`]: the call carries this handle) or
/// through the engine's data ([`Executors::install`]: a call made without a handle, as
/// `Context::exec` in a `#[workflow]`, finds them there).
#[derive(Clone)]
pub struct Executors {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) docs: DocumentSource,
    pub(crate) lanes: Lanes,
    /// Set by [`Executors::attach`]: weak, because the engine holds the executors (in its
    /// data, its interpreters' closures and the calls of its runs).
    pub(crate) engine: OnceLock<WeakEngine>,
    #[cfg(feature = "script")]
    pub(crate) scripts: crate::script::Scripts,
    #[cfg(feature = "tools")]
    pub(crate) tools: crate::tools::Tools,
    #[cfg(feature = "agent")]
    pub(crate) agents: crate::agent::Agents,
}

impl fmt::Debug for Executors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Executors");
        d.field("docs", &self.inner.docs);
        #[cfg(feature = "tools")]
        d.field("tools", &self.inner.tools);
        #[cfg(feature = "agent")]
        d.field("agents", &self.inner.agents);
        d.field("engine", &self.engine().is_some()).finish()
    }
}

/// A place in a project's lane (see [`Executors::enter_lane`]); dropping it frees the place.
#[derive(Debug)]
pub struct LanePermit(#[allow(dead_code, reason = "held for its drop")] LanePlace);

impl Executors {
    /// The executors of the documents under `docs`, with the built-in tools and agent
    /// engines.
    pub fn new(docs: DocumentSource) -> Self {
        Self {
            inner: Arc::new(Inner {
                lanes: Lanes::new(docs.clone()),
                engine: OnceLock::new(),
                #[cfg(feature = "script")]
                scripts: crate::script::Scripts::new(),
                #[cfg(feature = "tools")]
                tools: crate::tools::Tools::new(&docs),
                #[cfg(feature = "agent")]
                agents: crate::agent::Agents::new(),
                docs,
            }),
        }
    }

    /// The document tree.
    pub fn documents(&self) -> &DocumentSource {
        &self.inner.docs
    }

    /// Puts the executors in the engine's data, so that calls not bound to a handle find
    /// them. Call [`Executors::attach`] once the engine is built.
    ///
    /// Also sets the engine's per-scope journal limit
    /// ([`EngineBuilder::journal_bytes_limit`]) from each run's tenant settings
    /// (`bounds.maxJournalBytes`; see [`crate::bounds`]), replacing a limit set on `builder`
    /// before; set one after `install` to replace it.
    pub fn install(&self, builder: EngineBuilder) -> EngineBuilder {
        let docs = self.inner.docs.clone();
        builder
            .data(self.clone())
            .journal_bytes_limit(move |scope| {
                crate::bounds::journal_bytes_limit(&docs, scope.as_str())
            })
    }

    /// Gives the executors the engine, for the tools that reach it (`inbox_read`, host tools
    /// reading [`ToolContext::engine`](crate::ToolContext)). The executors keep a weak handle:
    /// they never keep the engine (and its store) alive. Later calls are ignored.
    pub fn attach(&self, engine: &Engine) {
        let _ = self.inner.engine.set(engine.downgrade());
        self.inner.lanes.attach(engine.downgrade());
    }

    /// The attached engine, while it lives.
    pub fn engine(&self) -> Option<Engine> {
        self.inner.engine.get().and_then(WeakEngine::upgrade)
    }

    /// Waits for a place in the task lane of the scope `scope_key` (`tenant/project`) for the
    /// attempt `ctx`: a project's script and tool steps run at most `lanes.maxConcurrentTasks`
    /// at a time (1 by default), across all its runs — and, on a store several workers share,
    /// across all workers. Its shell steps have a lane of their own of the same width, so a
    /// slow shell step never holds up script and tool steps. A wait is journaled
    /// ([`TaskContext::wait_for_admission`]): a process that stops while the attempt waits
    /// does not count an execution of it.
    ///
    /// # Errors
    ///
    /// The attempt's admission could not be journaled (see
    /// [`TaskContext::wait_for_admission`]); return the error without running.
    pub async fn enter_lane(
        &self,
        scope_key: &str,
        ctx: &TaskContext,
    ) -> Result<LanePermit, TaskError> {
        let place = self
            .inner
            .lanes
            .enter(scope_key, crate::lanes::Lane::Tasks, ctx)
            .await?;
        Ok(LanePermit(place))
    }

    /// `call` bound to these executors (it runs on them whatever the engine's data holds).
    pub fn call<C: IntoExecCall>(&self, call: C) -> ExecCall<C::Output> {
        call.into_exec_call().on(self)
    }

    /// Runs one attempt of the executor `task` on its journaled `input` (typed input and
    /// `$run`), with the run's `data` if the call carried any. This is the body of every
    /// [`ExecCall`]; hosts that register an executor under a name of their own call it.
    pub async fn execute(
        &self,
        task: &str,
        input: Value,
        data: Option<&RunData>,
        ctx: TaskContext,
    ) -> Result<Value, TaskError> {
        let inner = &self.inner;
        // The tenant decides which task types run: checked here, where every shell and script
        // call passes (the `http_request` tool checks its own, as agents call it directly).
        let policed = match task {
            #[cfg(feature = "shell")]
            crate::shell::TASK => Some(crate::policy::TaskType::Shell),
            #[cfg(feature = "script")]
            crate::script::TASK => Some(crate::policy::TaskType::Script),
            _ => None,
        };
        if let Some(task_type) = policed {
            let scope = input
                .get("$run")
                .and_then(|r| r.get("scope"))
                .and_then(Value::as_str)
                .map_or_else(|| Scope::of_run(""), Scope::of_run);
            if let Err(msg) = crate::policy::check(&inner.docs, &scope, task_type) {
                // A refused shell step keeps the shape of every shell step's output (reference
                // §3: `{status, exitCode, stdout, stderr, durationMs}`), so that
                // `${state.x.status}` reads as for any other failure.
                let output = match task_type {
                    #[cfg(feature = "shell")]
                    crate::policy::TaskType::Shell => serde_json::json!({
                        "status": "FAILED",
                        "exitCode": null,
                        "stdout": "",
                        "stderr": msg,
                        "durationMs": 0,
                        "error": msg,
                    }),
                    _ => serde_json::json!({ "error": msg }),
                };
                return Err(TaskError::terminal(msg.clone())
                    .with_kind(crate::policy::PERMISSION_ERROR)
                    .with_output(output));
            }
        }
        match task {
            #[cfg(feature = "shell")]
            crate::shell::TASK => {
                crate::shell::execute(&inner.docs, &inner.lanes, input, data, ctx).await
            }
            #[cfg(feature = "script")]
            crate::script::TASK => {
                crate::script::execute(&inner.docs, &inner.lanes, &inner.scripts, input, data, ctx)
                    .await
            }
            #[cfg(feature = "tools")]
            crate::tools::TASK => {
                crate::tools::execute(
                    &inner.docs,
                    &inner.lanes,
                    &inner.tools,
                    self.engine(),
                    input,
                    ctx,
                )
                .await
            }
            #[cfg(feature = "agent")]
            crate::agent::TASK => {
                crate::agent::execute(
                    &inner.docs,
                    &inner.agents,
                    &inner.tools,
                    self.engine(),
                    input,
                    ctx,
                )
                .await
            }
            other => Err(crate::technical(format!(
                "[MAG-EX002] no executor `{other}` in this build: the executors of \
                 magrathea-exec are `shell_task`, `script_task`, `tool_task` and `agent_task`, \
                 each behind its cargo feature"
            ))),
        }
    }
}
