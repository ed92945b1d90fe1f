//! The tools that reach the engine: `inbox_read` (the YAML front end adds `workflow_start`,
//! §8.1). They need [`Executors::attach`](crate::Executors::attach) and are pinned to the
//! caller's scope.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};

/// `inbox_read`: the inbox items of the caller's scope, a page at a time.
pub(crate) struct InboxRead;

/// Items of a page when the call names no `limit`.
const DEFAULT_LIMIT: u64 = 100;
/// The largest `limit`.
const MAX_LIMIT: u64 = 1000;
/// Most bytes of JSON in a page: well inside a task's output limit.
const MAX_PAGE_BYTES: usize = 1 << 20;

impl InboxRead {
    fn run(params: &Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let engine = ctx.require_engine("inbox_read")?;
        let status = params
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("PENDING");
        let pending_only = !status.eq_ignore_ascii_case("ALL");
        let limit = match params.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => v
                .as_u64()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ToolError::InvalidParams(format!(
                        "`limit` must be an integer from 1 to {MAX_LIMIT}, not {v}"
                    ))
                })?,
        };
        let scope = ctx.scope().key();
        let request = magrathea_core::InboxPageRequest {
            filter: if pending_only {
                magrathea_core::InboxFilter::Pending
            } else {
                magrathea_core::InboxFilter::All
            },
            runs: magrathea_core::RunFilter {
                scope: Some(scope.clone()),
                ..magrathea_core::RunFilter::default()
            },
            after: params
                .get("cursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_owned),
            limit: usize::try_from(limit).unwrap_or(1),
            max_bytes: MAX_PAGE_BYTES,
        };
        // Only the journals of the caller's scope are read.
        let page = engine
            .inbox_page(&request, |summary| summary.scope == scope, |_| true)
            .map_err(|e| match e {
                magrathea_core::InboxPageError::UnknownCursor(c) => ToolError::InvalidParams(
                    format!("unknown cursor `{c}`: pass the `next` of the previous page"),
                ),
                e => ToolError::Failed(format!("cannot read the inbox: {e}")),
            })?;
        let out = page
            .items
            .iter()
            .map(|item| {
                serde_json::to_value(item).map_err(|e| {
                    ToolError::Failed(format!("cannot encode inbox item {}: {e}", item.id))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(json!({ "count": out.len(), "items": out, "next": page.next }))
    }
}

impl Tool for InboxRead {
    fn name(&self) -> &str {
        "inbox_read"
    }

    fn description(&self) -> &str {
        "Lists the inbox items (gates awaiting or having had an answer) of the runs of the \
         caller's tenant and project that are still active, oldest first: PENDING (default) or \
         ALL; at most `limit` (default 100, at most 1000) and 1 MiB a page. `next`, when not \
         null, is the `cursor` of the next page."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "status": { "type": "string", "enum": ["PENDING", "ALL"], "default": "PENDING" },
                "limit": { "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT },
                "cursor": { "type": "string" }
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
