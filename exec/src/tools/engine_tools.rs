//! The tools that reach the engine: `inbox_read` (the YAML front end adds `workflow_start`,
//! §8.1). They need [`Executors::attach`](crate::Executors::attach) and are pinned to the
//! caller's scope.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};

/// `inbox_read`: the inbox items of the caller's scope.
pub(crate) struct InboxRead;

impl InboxRead {
    fn run(params: &Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let engine = ctx.require_engine("inbox_read")?;
        let status = params
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("PENDING");
        let pending_only = !status.eq_ignore_ascii_case("ALL");
        let scope = ctx.scope().key();
        // Only the journals of the caller's scope are read.
        let items = engine
            .inbox_of(
                if pending_only {
                    magrathea_core::InboxFilter::Pending
                } else {
                    magrathea_core::InboxFilter::All
                },
                &magrathea_core::RunFilter {
                    scope: Some(scope.clone()),
                    ..magrathea_core::RunFilter::default()
                },
                |summary| summary.scope == scope,
            )
            .map_err(|e| ToolError::Failed(format!("cannot read the inbox: {e}")))?;
        let out = items
            .iter()
            .map(|item| {
                serde_json::to_value(item).map_err(|e| {
                    ToolError::Failed(format!("cannot encode inbox item {}: {e}", item.id))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
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
