//! Running YAML workflows on the replay core.
//!
//! [`YamlRuntime::install`] registers the `yaml` interpreter with an engine (conditions are
//! evaluated by the interpreter itself); [`YamlRuntime::start`] resolves a document by the
//! cascade, validates it and its parameters, and starts a run whose `StartRecord` carries the
//! frozen YAML body.
//!
//! The executors of `shell_task`, `script_task`, `tool_task` and `agent_task` live in
//! `magrathea-exec` ([`Executors`]); the interpreter calls them through its `dispatch` module, each call
//! carrying its executor's body, so they are not registered by name. Their types are
//! re-exported here.

pub mod chain;
mod default_bounds;
mod dispatch;
mod failure;
mod fanout;
mod interpreter;
mod steps;
mod sub_workflow;
mod workflow_start;

/// The project tree, under the path the interpreter imports it from.
mod documents {
    pub(crate) use magrathea_exec::Scope;
}

use std::sync::Arc;

use magrathea_core::{Engine, EngineBuilder, RunId, StartError, StartRequest};
use serde_json::Value;

pub use magrathea_exec::agent::{
    AgentEngine, AgentError, AgentReply, AgentRequest, AgentRunInfo, ApiKey, ChatMessage,
    CloseReason, OpenAiEngine, Prices, Recipe, ReplyFormat, ToolBox, ToolCallRecord, Usage,
};
pub(crate) use magrathea_exec::shell::env_name;
pub use magrathea_exec::{
    DRAFTS_DIR, DocumentError, DocumentSource, Executors, HISTORY_DIR, LaneSettings,
    ProjectSettings, STATE_DIR, Scope, Tool, ToolContext, ToolError, check_name,
};

use crate::{Diagnostics, LoadOptions, ParamErrors, load_workflow, validate_params};

/// The journaled task of a `timer_task`.
pub(crate) const TIMER_TASK: &str = "timer_task";
/// The journaled task of a `gate_task`.
pub(crate) const GATE_TASK: &str = "gate_task";
/// The journaled task of a `workflow_task`.
pub(crate) const WORKFLOW_TASK: &str = "workflow_task";

/// Whether a task step of a YAML run (one whose `StartRecord` names the `yaml` front end) with
/// task `task` is one the run carries out itself: a `timer_task`, `gate_task` or
/// `workflow_task` state, open while its timer, inbox item or sub-run is. No attempt of it
/// runs, so a reader of the journal that asks whether a task is running skips it and looks at
/// what it waits on.
pub fn is_held_task(task: &str) -> bool {
    matches!(task, TIMER_TASK | GATE_TASK | WORKFLOW_TASK)
}

/// Why a YAML run was not started. Nothing was journaled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum YamlStartError {
    /// The document was not found or its name is invalid.
    #[error(transparent)]
    Document(#[from] DocumentError),
    /// The document is invalid; every diagnostic is included.
    #[error("invalid workflow document:\n{}", render(.0))]
    Invalid(Diagnostics),
    /// The parameters do not match `parameters:`.
    #[error("[MAG-YP001] invalid parameters: {0}")]
    Params(ParamErrors),
    /// The engine refused the start.
    #[error(transparent)]
    Engine(#[from] StartError),
}

fn render(d: &Diagnostics) -> String {
    d.iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a draft run's version ends with: the document's `version:` (possibly empty) and
/// `+draft`, semantic versioning's build metadata, so the run's `StartRecord` says that it
/// ran a draft without a field of its own.
pub const DRAFT_VERSION_SUFFIX: &str = "+draft";

/// Whether a run's journaled version marks a draft run (see [`DRAFT_VERSION_SUFFIX`]).
pub fn is_draft_version(version: &str) -> bool {
    version.ends_with(DRAFT_VERSION_SUFFIX)
}

/// What the interpreter shares with the executors it calls: the documents and the
/// executors (which own the lanes).
pub(crate) struct RuntimeInner {
    pub(crate) docs: DocumentSource,
    pub(crate) exec: Executors,
}

impl std::fmt::Debug for RuntimeInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeInner")
            .field("exec", &self.exec)
            .finish_non_exhaustive()
    }
}

/// The YAML front end's runtime: documents, the interpreter and the executors it calls.
#[derive(Debug, Clone)]
pub struct YamlRuntime {
    inner: Arc<RuntimeInner>,
}

impl YamlRuntime {
    /// A runtime reading documents from `docs`, with the executors of `magrathea-exec` and
    /// the `workflow_start` tool.
    pub fn new(docs: DocumentSource) -> Self {
        Self::with_executors(Executors::new(docs))
    }

    /// A runtime over `executors` (and their documents), adding the `workflow_start` tool.
    pub fn with_executors(exec: Executors) -> Self {
        let docs = exec.documents().clone();
        exec.register_tool(Arc::new(workflow_start::WorkflowStart::new(docs.clone())));
        Self {
            inner: Arc::new(RuntimeInner { docs, exec }),
        }
    }

    /// The document source.
    pub fn documents(&self) -> &DocumentSource {
        &self.inner.docs
    }

    /// The executors the interpreter calls (shared: tools and agent engines added here are
    /// theirs).
    pub fn executors(&self) -> &Executors {
        &self.inner.exec
    }

    /// Registers the `yaml` interpreter, and puts the
    /// executors in the engine's data (so that code workflows' calls find them). Call
    /// [`YamlRuntime::attach`] once the engine is built.
    pub fn install(&self, builder: EngineBuilder) -> EngineBuilder {
        let rt = self.inner.clone();
        let interpreter: magrathea_core::InterpreterFn = Arc::new(move |ctx, start| {
            let plan = interpreter::load_frozen(start)?;
            let fut = interpreter::interpret(ctx, plan, start.clone(), rt.clone());
            Ok(Box::pin(fut))
        });
        self.inner
            .exec
            .install(builder)
            .interpreter("yaml", interpreter)
    }

    /// Loads and validates the workflow `name` of `scope` by the cascade.
    pub fn load(
        &self,
        scope: &Scope,
        name: &str,
    ) -> Result<(std::path::PathBuf, String, crate::Loaded), YamlStartError> {
        let (path, text) = self.inner.docs.workflow(scope, name)?;
        let label = self.inner.docs.label(&path);
        let loaded = load_workflow(&label, &text, &LoadOptions::default())
            .map_err(YamlStartError::Invalid)?;
        Ok((path, text, loaded))
    }

    /// For a code workflow that starts a YAML workflow as its child:
    /// `ctx.child_request(runtime.child_request(ctx.raw(), &scope, "build", params)?)`. The
    /// document is read once and journaled, so the child runs the definition it was started
    /// with, also after a replay. Errors (unknown document, invalid document or parameters) are
    /// messages for the workflow to fail with.
    pub fn child_request(
        &self,
        ctx: &magrathea_core::WorkflowContext,
        scope: &Scope,
        name: &str,
        params: Value,
    ) -> Result<magrathea_core::ChildRequest, String> {
        sub_workflow::frozen_child(ctx, &self.inner, scope, name, params)
    }

    /// Starts a run of the workflow `name`: resolves it by the cascade, validates it and the
    /// parameters (filling defaults), and journals the frozen body in the StartRecord, with
    /// the tenant's default bounds for those the document declares none of.
    pub async fn start(
        &self,
        engine: &Engine,
        scope: &Scope,
        name: &str,
        params: Value,
        started_by: &str,
    ) -> Result<RunId, YamlStartError> {
        self.start_with(engine, scope, name, params, |req| {
            req.started_by(started_by)
        })
        .await
    }

    /// [`YamlRuntime::start`] with the request completed by `complete` (who starts it, an
    /// idempotency key, `requested_by`); the workflow, definition, parameters and scope are the
    /// document's.
    pub async fn start_with(
        &self,
        engine: &Engine,
        scope: &Scope,
        name: &str,
        params: Value,
        complete: impl FnOnce(StartRequest) -> StartRequest,
    ) -> Result<RunId, YamlStartError> {
        let req = self.start_request(scope, name, params, complete)?;
        Ok(engine.start(req).await?)
    }

    /// The request [`YamlRuntime::start_with`] hands the engine, without starting it: the
    /// document resolved by the cascade and validated, the parameters checked (defaults
    /// filled), the frozen body, scope and bounds set. A process that does not own the store
    /// builds the request this way and has the store's owner start it.
    /// An archived workflow is refused ([`DocumentError::Archived`]).
    pub fn start_request(
        &self,
        scope: &Scope,
        name: &str,
        params: Value,
        complete: impl FnOnce(StartRequest) -> StartRequest,
    ) -> Result<StartRequest, YamlStartError> {
        self.request_of(scope, name, false, params, complete)
    }

    /// [`YamlRuntime::start_request`] for the project's draft of `name`
    /// (`_vance/workflow-drafts/<name>.yaml`): the run's version is the draft's `version:`
    /// followed by [`DRAFT_VERSION_SUFFIX`]. No draft: [`DocumentError::NoDraft`].
    pub fn draft_request(
        &self,
        scope: &Scope,
        name: &str,
        params: Value,
        complete: impl FnOnce(StartRequest) -> StartRequest,
    ) -> Result<StartRequest, YamlStartError> {
        self.request_of(scope, name, true, params, complete)
    }

    fn request_of(
        &self,
        scope: &Scope,
        name: &str,
        draft: bool,
        params: Value,
        complete: impl FnOnce(StartRequest) -> StartRequest,
    ) -> Result<StartRequest, YamlStartError> {
        let (path, text) = self.inner.docs.workflow_to_start(scope, name, draft)?;
        let loaded = crate::load_workflow_shared(&self.inner.docs.label(&path), &text)
            .map_err(YamlStartError::Invalid)?;
        let params =
            validate_params(&loaded.doc.parameters, &params).map_err(YamlStartError::Params)?;
        let mut req = complete(StartRequest::code(name, params));
        req.frontend = "yaml".into();
        let mut version = loaded.doc.version.clone().unwrap_or_default();
        if draft {
            version.push_str(DRAFT_VERSION_SUFFIX);
        }
        req.version = Some(version);
        req.definition = Some(text);
        req.scope = scope.key().into();
        req.bounds = default_bounds::for_document(
            &loaded.plan.bounds,
            default_bounds::tenant_defaults(&self.inner.docs, scope),
        );
        Ok(req)
    }
}

/// The executors' tools and agent engines, through the runtime (see [`Executors`]).
impl YamlRuntime {
    /// Adds a host tool, replacing a registered tool (built-in or not) of the same name.
    /// Workflows still need it in their `allowedTools:` (§10).
    pub fn with_tool(self, tool: impl Tool + 'static) -> Self {
        self.register_tool(Arc::new(tool));
        self
    }

    /// Adds a host tool to a runtime that is already shared.
    pub fn register_tool(&self, tool: Arc<dyn Tool>) {
        self.inner.exec.register_tool(tool);
    }

    /// Gives the executors (the engine-backed tools `inbox_read`, `workflow_start`) the
    /// engine. Call it once the engine built from [`YamlRuntime::install`] exists; later calls
    /// are ignored. The executors hold the engine weakly.
    pub fn attach(&self, engine: &Engine) {
        self.inner.exec.attach(engine);
    }

    /// The names of the registered tools, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.exec.tool_names()
    }

    /// The registered tool `name`.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner.exec.tool(name)
    }

    /// A context for `user` in `scope` carrying the attached engine, for calling tools
    /// outside a run with [`YamlRuntime::invoke_tool`].
    pub fn tool_context(&self, scope: &Scope, user: &str) -> ToolContext {
        self.inner.exec.tool_context(scope, user)
    }

    /// Calls the registered tool `name` directly: schema check and invoke, without the
    /// permission cascade (use [`YamlRuntime::tool_permission`] for that).
    pub async fn invoke_tool(
        &self,
        name: &str,
        params: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        self.inner.exec.invoke_tool(name, params, ctx).await
    }

    /// The permission cascade of §10 for calling `tool` from a workflow of `scope` that
    /// declares `workflow_allowed` (`allowedTools:`, `None` when absent): `Ok(())` or the
    /// reason it is refused.
    pub fn tool_permission(
        &self,
        scope: &Scope,
        workflow_allowed: Option<&[String]>,
        tool: &str,
    ) -> Result<(), String> {
        self.inner
            .exec
            .tool_permission(scope, workflow_allowed, tool)
    }

    /// Registers the agent engine `engine` under `name` (see
    /// [`Executors::with_agent_engine`]).
    pub fn with_agent_engine(self, name: impl Into<String>, engine: impl AgentEngine) -> Self {
        self.inner
            .exec
            .register_agent_engine(name, Arc::new(engine));
        self
    }

    /// Replaces where agent engines' API keys are read from (see
    /// [`Executors::with_agent_env`]).
    pub fn with_agent_env(
        self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        // Executors are a shared handle: the builder sets the lookup on the shared state.
        let _ = self.inner.exec.clone().with_agent_env(lookup);
        self
    }
}
