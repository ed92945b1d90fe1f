//! The tools an agent may call during one attempt (reference §10: "Tool calls in tool_task and
//! indirectly from agent_task sub-Engines are checked against this pool").

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::documents::{DocumentSource, Scope};
use crate::tools::{self, Tool, ToolContext, ToolError, Tools};

/// One tool call an agent made, journaled in the task output's `toolCalls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallRecord {
    /// The tool the model asked for.
    pub name: String,
    /// Whether the permission cascade (§10) allowed the call.
    pub allowed: bool,
    /// Whether the tool ran and returned a result.
    pub ok: bool,
    /// Why it did not (the text the model was sent as `{"error": …}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The tools a recipe offers (`tools:`), bound to the calling run: every call passes the same
/// permission cascade as a `tool_task` (tenant ∩ project ∩ the workflow's `allowedTools`, or
/// the default pool; `denied:` always wins) before it runs, and is recorded.
///
/// The runtime builds one per attempt and hands it to the engine in [`super::AgentRequest`];
/// engines offer [`ToolBox::specs`] to the model and execute its calls with
/// [`ToolBox::call`]. Clones share the record of calls.
#[derive(Clone)]
pub struct ToolBox {
    inner: Arc<Inner>,
}

struct Inner {
    docs: DocumentSource,
    scope: Scope,
    /// The workflow's `allowedTools:`; `None` means the default pool.
    workflow_allowed: Option<Vec<String>>,
    /// The recipe's tools that exist in the registry, in the recipe's order.
    offered: Vec<Arc<dyn Tool>>,
    ctx: ToolContext,
    calls: Mutex<Vec<ToolCallRecord>>,
}

impl fmt::Debug for ToolBox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolBox")
            .field("scope", &self.inner.scope)
            .field("offered", &self.names())
            .field("workflow_allowed", &self.inner.workflow_allowed)
            .field("calls", &self.calls().len())
            .finish_non_exhaustive()
    }
}

impl ToolBox {
    /// The tools named by `wanted` that are registered with the executors (unknown names are
    /// skipped; a call to them is answered as unknown).
    pub(super) fn new(
        docs: &DocumentSource,
        registry: &Tools,
        scope: Scope,
        workflow_allowed: Option<Vec<String>>,
        wanted: &[String],
        ctx: ToolContext,
    ) -> Self {
        let mut offered: Vec<Arc<dyn Tool>> = Vec::new();
        for name in wanted {
            if let Some(tool) = registry.get(name)
                && !offered.iter().any(|t| t.name() == name)
            {
                offered.push(tool);
            }
        }
        Self {
            inner: Arc::new(Inner {
                docs: docs.clone(),
                scope,
                workflow_allowed,
                offered,
                ctx,
                calls: Mutex::new(Vec::new()),
            }),
        }
    }

    /// Whether the recipe offers no tools.
    pub fn is_empty(&self) -> bool {
        self.inner.offered.is_empty()
    }

    /// The names of the offered tools.
    pub fn names(&self) -> Vec<String> {
        self.inner
            .offered
            .iter()
            .map(|t| t.name().to_string())
            .collect()
    }

    /// The offered tools that the permission cascade allows now, as an OpenAI `tools` array:
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`. A tool the
    /// cascade refuses is not offered to the model (a call would only be refused and cost a
    /// round); a call to it anyway is refused and recorded by [`ToolBox::call`].
    pub fn specs(&self) -> Vec<Value> {
        let inner = &self.inner;
        inner
            .offered
            .iter()
            .filter(|t| {
                tools::decide(
                    &inner.docs,
                    &inner.scope,
                    inner.workflow_allowed.as_deref(),
                    t.name(),
                )
                .is_ok()
            })
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name(),
                        "description": t.description(),
                        "parameters": t.parameters(),
                    }
                })
            })
            .collect()
    }

    /// Calls the offered tool `name` with `arguments` (an object; text is parsed as JSON):
    /// the permission cascade first — a refused call does not run and fails with
    /// [`ToolError::PermissionDenied`] — then the schema check and the tool. Every call is
    /// recorded (see [`ToolBox::calls`]); a call to a tool the recipe does not offer is
    /// refused too, and recorded as not allowed, whatever the cascade says of it.
    pub async fn call(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        let inner = &self.inner;
        let decision = tools::decide(
            &inner.docs,
            &inner.scope,
            inner.workflow_allowed.as_deref(),
            name,
        );
        let offered = inner.offered.iter().any(|t| t.name() == name);
        let allowed = decision.is_ok() && offered;
        let result = match decision {
            Err(reason) => Err(ToolError::PermissionDenied(format!(
                "[MAG-TL002] tool `{name}` is not allowed: {reason}"
            ))),
            Ok(()) => self.run(name, arguments).await,
        };
        self.record(ToolCallRecord {
            name: name.to_string(),
            allowed,
            ok: result.is_ok(),
            error: result.as_ref().err().map(ToString::to_string),
        });
        result
    }

    /// An allowed call: the registry's schema check and invoke (the path of `tool_task`).
    async fn run(&self, name: &str, arguments: Value) -> Result<Value, ToolError> {
        let inner = &self.inner;
        let Some(tool) = inner.offered.iter().find(|t| t.name() == name) else {
            return Err(ToolError::Failed(format!(
                "[MAG-TL001] unknown tool `{name}`: this agent's recipe offers [{}]",
                self.names().join(", ")
            )));
        };
        let mut params = match arguments {
            Value::Null => json!({}),
            Value::String(s) if s.trim().is_empty() => json!({}),
            Value::String(s) => serde_json::from_str(&s).map_err(|e| {
                ToolError::InvalidParams(format!("the arguments are not JSON: {e}"))
            })?,
            other => other,
        };
        let schema = tool.parameters();
        tools::coerce(&schema, &mut params);
        tools::check_params(&schema, &params).map_err(ToolError::InvalidParams)?;
        let mut ctx = inner.ctx.clone();
        let n = self.calls().len();
        ctx.idempotency_key = ctx.idempotency_key.map(|k| format!("{k}-tool-{n}"));
        tool.invoke(params, &ctx).await
    }

    /// The calls made so far, in order.
    pub fn calls(&self) -> Vec<ToolCallRecord> {
        self.inner
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, call: ToolCallRecord) {
        self.inner
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(call);
    }
}
