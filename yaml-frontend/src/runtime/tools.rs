//! `tool_task` and the tool registry (reference §3.3, §10).

use magrathea_core::{TaskContext, TaskError};
use serde_json::{Value, json};

use super::RuntimeInner;
use super::documents::Scope;

/// The tool registry of a runtime.
#[derive(Debug, Default)]
pub(crate) struct Tools;

impl Tools {
    pub(crate) fn new(_docs: &super::DocumentSource) -> Self {
        Self
    }
}

/// The permission decision for calling `tool` from a workflow of `scope` whose document
/// declares `allowed` (`allowedTools:`), as `{"allowed": bool, "reason": "..."}`.
///
/// The cascade of §10: allowed = tenant ∩ project ∩ workflow (the default pool when the
/// workflow declares none); denied = tenant ∪ project, which always wins.
pub(crate) fn permission(
    _rt: &RuntimeInner,
    _scope: &Scope,
    allowed: Option<&[String]>,
    tool: &str,
) -> Value {
    let pool = ["web_search", "doc_read", "doc_list", "inbox_read"];
    let ok = match allowed {
        Some(list) => list.iter().any(|t| t == tool),
        None => pool.contains(&tool),
    };
    json!({ "allowed": ok, "reason": if ok { "allowed" } else { "not in the workflow's allowed tools" } })
}

/// Runs a built-in (or host-registered) tool for one `tool_task` attempt. `input` is the
/// resolved state spec (`tool`, `params`) plus `scope`, `startedBy`, `workflowName`.
pub(crate) async fn execute(
    _rt: &RuntimeInner,
    input: Value,
    _ctx: TaskContext,
) -> Result<Value, TaskError> {
    let tool = input
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Err(super::executors::technical(format!(
        "[MAG-TL001] unknown tool `{tool}`"
    )))
}
