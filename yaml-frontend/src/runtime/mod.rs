//! Running YAML workflows on the replay core.
//!
//! [`YamlRuntime::install`] registers the `yaml` interpreter and the task executors of the
//! synchronous task types with an engine; [`YamlRuntime::start`] resolves a document by the
//! cascade, validates it and its parameters, and starts a run whose `StartRecord` carries the
//! frozen YAML body.

mod agent;
mod dispatch;
mod documents;
mod executors;
mod interpreter;
mod lanes;
mod script;
mod settings;
mod shell;
mod steps;
mod tools;

use std::sync::Arc;

use magrathea_core::{Engine, EngineBuilder, RunId, StartError, StartRequest};
use serde_json::Value;

pub use agent::{
    AgentEngine, AgentError, AgentReply, AgentRequest, AgentRunInfo, ApiKey, ChatMessage,
    CloseReason, OpenAiEngine, Prices, Recipe, ReplyFormat, ToolBox, ToolCallRecord, Usage,
};
pub use documents::{DocumentError, DocumentSource, Scope, check_name};
pub use settings::{LaneSettings, ProjectSettings};
pub(crate) use shell::env_name;
pub use tools::{Tool, ToolContext, ToolError};

use crate::{Diagnostics, LoadOptions, ParamErrors, load_workflow, validate_params};

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

#[allow(
    dead_code,
    reason = "executors of the task types that reach outside use these"
)]
pub(crate) struct RuntimeInner {
    pub(crate) docs: DocumentSource,
    pub(crate) lanes: lanes::Lanes,
    pub(crate) tools: tools::Tools,
    pub(crate) scripts: script::Scripts,
    pub(crate) agents: agent::Agents,
}

impl std::fmt::Debug for RuntimeInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeInner")
            .field("docs", &self.docs)
            .finish_non_exhaustive()
    }
}

/// The YAML front end's runtime: documents, lanes and task executors.
#[derive(Debug, Clone)]
pub struct YamlRuntime {
    inner: Arc<RuntimeInner>,
}

impl YamlRuntime {
    /// A runtime reading documents from `docs`.
    pub fn new(docs: DocumentSource) -> Self {
        let lanes = lanes::Lanes::new(docs.clone());
        Self {
            inner: Arc::new(RuntimeInner {
                tools: tools::Tools::new(&docs),
                scripts: script::Scripts::new(&docs),
                agents: agent::Agents::new(&docs),
                docs,
                lanes,
            }),
        }
    }

    /// The document source.
    pub fn documents(&self) -> &DocumentSource {
        &self.inner.docs
    }

    /// Registers the `yaml` interpreter and the executors of `shell_task`, `condition_task`,
    /// `script_task`, `tool_task` and `agent_task`.
    pub fn install(&self, builder: EngineBuilder) -> EngineBuilder {
        let rt = self.inner.clone();
        let interpreter: magrathea_core::InterpreterFn = Arc::new(move |ctx, start| {
            let doc = interpreter::load_frozen(start)?;
            let fut = interpreter::interpret(ctx, doc, start.clone(), rt.clone());
            Ok(Box::pin(fut))
        });
        let mut builder = builder.interpreter("yaml", interpreter);
        for reg in executors::registrations(self.inner.clone()) {
            builder = builder.task(reg);
        }
        builder
    }

    /// Loads and validates the workflow `name` of `scope` by the cascade.
    pub fn load(
        &self,
        scope: &Scope,
        name: &str,
    ) -> Result<(std::path::PathBuf, String, crate::Loaded), YamlStartError> {
        let (path, text) = self.inner.docs.workflow(scope, name)?;
        let label = path.display().to_string();
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
        interpreter::frozen_child(ctx, &self.inner, scope, name, params)
    }

    /// Starts a run of the workflow `name`: resolves it by the cascade, validates it and the
    /// parameters (filling defaults), and journals the frozen body in the StartRecord.
    pub async fn start(
        &self,
        engine: &Engine,
        scope: &Scope,
        name: &str,
        params: Value,
        started_by: &str,
    ) -> Result<RunId, YamlStartError> {
        let (_, text, loaded) = self.load(scope, name)?;
        let params =
            validate_params(&loaded.doc.parameters, &params).map_err(YamlStartError::Params)?;
        let mut req = StartRequest::code(name, params);
        req.frontend = "yaml".into();
        req.version = Some(loaded.doc.version.clone().unwrap_or_default());
        req.definition = Some(text);
        req.started_by = started_by.into();
        req.scope = scope.key().into();
        Ok(engine.start(req).await?)
    }
}
