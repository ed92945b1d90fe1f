//! The `workflow_start` tool (§8.1): starts a YAML workflow of the caller's scope. It belongs
//! to the YAML front end (it loads and validates the document); [`super::YamlRuntime`] adds it
//! to the executors' tool registry. A start from a run continues that run's trigger chain
//! ([`chain`]) and keeps its requester.

use futures::future::BoxFuture;
use magrathea_core::{RunId, StartRequest};
use magrathea_exec::{DocumentSource, Tool, ToolContext, ToolError, check_name};
use serde_json::{Value, json};

use super::chain;
use crate::{LoadOptions, load_workflow, validate_params};

/// `workflow_start`: starts a workflow of the caller's tenant and project (§8.1).
pub(crate) struct WorkflowStart {
    docs: DocumentSource,
}

impl WorkflowStart {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self { docs }
    }

    async fn run(&self, params: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let engine = ctx.require_engine("workflow_start")?;
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        check_name(&name).map_err(|e| ToolError::InvalidParams(e.to_string()))?;
        let scope = ctx.scope();
        let (path, text) = self
            .docs
            .workflow_to_start(&scope, &name, false)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let loaded = load_workflow(&self.docs.label(&path), &text, &LoadOptions::default())
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
        // A start from a run continues the run's trigger chain, and is for whom the run is:
        // a workflow that starts itself stops at the chain's bounds, and a gate of the new run
        // that refuses its requester's approval refuses the calling run's requester.
        let key = format!(
            "{}{}",
            chain::WORKFLOW_START_KEY,
            ctx.idempotency_key
                .clone()
                .unwrap_or_else(|| RunId::new().to_string())
        );
        if let Some(caller) = ctx.workflow_run_id
            && let Some(start) = chain::start_of(engine, caller)
        {
            let from = chain::of_run(engine, caller, &start);
            let catalog = engine.catalog().ok_or_else(|| {
                ToolError::Failed(
                    "[MAG-TR004] this engine's store keeps no trigger chains, so a run cannot \
                     start another"
                        .into(),
                )
            })?;
            chain::extend(&catalog, &from, &key).map_err(ToolError::Failed)?;
            req.requested_by = start.requested_by;
        }
        req = req.idempotency_key(key);
        req.bounds = super::default_bounds::for_document(
            &loaded.plan.bounds,
            super::default_bounds::tenant_defaults(&self.docs, &scope),
        );
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
