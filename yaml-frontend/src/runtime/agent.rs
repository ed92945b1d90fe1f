//! `agent_task`: LLM engines by recipe (reference §3.1).
//!
//! Output contract with the interpreter: `{"data": <task output>, "usage": {...} | null,
//! "costUsd": <number> | null}` both on success and (as the error's output) on failure; the
//! interpreter stores `data` with `storeAs` and adds `costUsd` to the run's cost for
//! `bounds.maxTotalCostUsd`.

use magrathea_core::{TaskContext, TaskError};
use serde_json::Value;

use super::RuntimeInner;

/// The agent engines of a runtime.
#[derive(Debug, Default)]
pub(crate) struct Agents;

impl Agents {
    pub(crate) fn new(_docs: &super::DocumentSource) -> Self {
        Self
    }
}

/// Runs one `agent_task` attempt. `input` is the resolved state spec plus `scope`, `params`,
/// `startedBy`, `workflowName` and `allowedTools`.
pub(crate) async fn execute(
    _rt: &RuntimeInner,
    _input: Value,
    _ctx: TaskContext,
) -> Result<Value, TaskError> {
    Err(super::executors::technical(
        "[MAG-YR002] agent_task is not available in this build".into(),
    ))
}
