//! The tools that reach the engine: `inbox_read` and `workflow_start` (§8.1). Both need
//! [`YamlRuntime::attach`](crate::YamlRuntime::attach) and are pinned to the caller's scope.

use std::collections::HashMap;

use futures::future::BoxFuture;
use magrathea_core::{Engine, StartRequest};
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::runtime::{DocumentSource, check_name};
use crate::{LoadOptions, load_workflow, validate_params};

fn engine<'a>(ctx: &'a ToolContext, tool: &str) -> Result<&'a Engine, ToolError> {
    ctx.engine.as_ref().ok_or_else(|| {
        ToolError::Failed(format!(
            "{tool} needs an engine: call YamlRuntime::attach(&engine) once the engine is built"
        ))
    })
}

/// `inbox_read`: the inbox items of the caller's scope.
pub(crate) struct InboxRead;

impl InboxRead {
    fn run(params: &Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let engine = engine(ctx, "inbox_read")?;
        let status = params
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("PENDING");
        let pending_only = !status.eq_ignore_ascii_case("ALL");
        let scope = ctx.scope().key();
        let items = engine
            .inbox(if pending_only {
                magrathea_core::InboxFilter::Pending
            } else {
                magrathea_core::InboxFilter::All
            })
            .map_err(|e| ToolError::Failed(format!("cannot read the inbox: {e}")))?;
        let mut scopes: HashMap<magrathea_core::RunId, bool> = HashMap::new();
        let mut out = Vec::new();
        for item in items {
            let mine = *scopes.entry(item.workflow_run_id).or_insert_with(|| {
                engine
                    .summary(item.workflow_run_id)
                    .is_ok_and(|s| s.scope == scope)
            });
            if mine {
                out.push(serde_json::to_value(&item).map_err(|e| {
                    ToolError::Failed(format!("cannot encode inbox item {}: {e}", item.id))
                })?);
            }
        }
        Ok(json!({ "count": out.len(), "items": out }))
    }
}

impl Tool for InboxRead {
    fn name(&self) -> &str {
        "inbox_read"
    }

    fn description(&self) -> &str {
        "Lists the inbox items (gates awaiting or having had an answer) of the runs of the \
         caller's tenant and project that are still active: PENDING (default) or ALL."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "status": { "type": "string", "enum": ["PENDING", "ALL"], "default": "PENDING" }
            },
            "additionalProperties": false
        })
    }

    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { Self::run(&params, ctx) })
    }
}

/// `workflow_start`: starts a workflow of the caller's tenant and project (§8.1).
pub(crate) struct WorkflowStart {
    docs: DocumentSource,
}

impl WorkflowStart {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self { docs }
    }

    async fn run(&self, params: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let engine = engine(ctx, "workflow_start")?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        check_name(&name).map_err(|e| ToolError::InvalidParams(e.to_string()))?;
        let scope = ctx.scope();
        let (path, text) = self
            .docs
            .workflow(&scope, &name)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let loaded = load_workflow(&path.display().to_string(), &text, &LoadOptions::default())
            .map_err(|d| {
                let msgs: Vec<String> = d.iter().map(|d| d.to_string()).collect();
                ToolError::Failed(format!("invalid workflow document:\n{}", msgs.join("\n")))
            })?;
        let given = params
            .get("params")
            .cloned()
            .filter(|v| !v.is_null())
            .unwrap_or_else(|| json!({}));
        let input = validate_params(&loaded.doc.parameters, &given)
            .map_err(|e| ToolError::Failed(format!("[MAG-YP001] invalid parameters: {e}")))?;
        let mut req = StartRequest::code(&name, input);
        req.frontend = "yaml".into();
        req.version = Some(loaded.doc.version.clone().unwrap_or_default());
        req.definition = Some(text);
        req.started_by = ctx.user.clone();
        req.scope = scope.key().into();
        if let Some(key) = &ctx.idempotency_key {
            req = req.idempotency_key(format!("workflow_start:{key}"));
        }
        let run = engine
            .start(req)
            .await
            .map_err(|e| ToolError::Failed(format!("cannot start `{name}`: {e}")))?;
        Ok(json!({ "workflowRunId": run.to_string(), "workflowName": name }))
    }
}

impl Tool for WorkflowStart {
    fn name(&self) -> &str {
        "workflow_start"
    }

    fn description(&self) -> &str {
        "Starts a workflow of the caller's tenant and project by name with parameters; \
         returns its workflowRunId at once (it does not wait for the run)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": { "type": "string" },
                "params": { "type": "object" }
            },
            "additionalProperties": false
        })
    }

    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.run(params, ctx))
    }
}
