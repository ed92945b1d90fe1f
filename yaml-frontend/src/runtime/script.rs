//! `script_task`: JavaScript in an embedded engine (reference §3.2).

use magrathea_core::{TaskContext, TaskError};
use serde_json::Value;

use super::RuntimeInner;

/// The script engine of a runtime.
#[derive(Debug, Default)]
pub(crate) struct Scripts;

impl Scripts {
    pub(crate) fn new(_docs: &super::DocumentSource) -> Self {
        Self
    }
}

/// Runs one `script_task` attempt. `input` is the resolved state spec plus `scope`, `params`,
/// `vars`, `startedBy`, `workflowName` and `allowedTools`.
pub(crate) async fn execute(
    _rt: &RuntimeInner,
    _input: Value,
    _ctx: TaskContext,
) -> Result<Value, TaskError> {
    Err(super::executors::technical(
        "[MAG-YR002] script_task is not available in this build".into(),
    ))
}
