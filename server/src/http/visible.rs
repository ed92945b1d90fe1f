//! What a caller sees of a run in the reply of an action (cancel, an inbox answer, approve,
//! reject): the whole run with `workflow.read`, else only what identifies it and where it
//! stands. A token that may act on runs (`workflow.run`) does not thereby read their
//! parameters, variables, result or error.

use magrathea_core::{RunStatus, RunView};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auth::{ApiScope, Principal};

/// The run as a caller without `workflow.read` sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunBrief {
    /// The run.
    pub workflow_run_id: magrathea_core::RunId,
    /// Its workflow.
    pub workflow_name: String,
    /// Its status.
    pub status: RunStatus,
    /// The state it is in, for YAML runs.
    pub current_state: Option<String>,
}

impl RunBrief {
    /// The brief of `view`.
    pub fn of(view: &RunView) -> Self {
        Self {
            workflow_run_id: view.workflow_run_id,
            workflow_name: view.workflow_name.clone(),
            status: view.status,
            current_state: view.current_state.clone(),
        }
    }
}

/// `full` (the run's whole JSON) if `who` may read runs, else the [`RunBrief`] of `view`.
pub(crate) fn visible_run<T: Serialize>(full: &T, view: &RunView, who: &Principal) -> Value {
    let shown = if who.has(ApiScope::Read) {
        serde_json::to_value(full)
    } else {
        serde_json::to_value(RunBrief::of(view))
    };
    shown.unwrap_or(Value::Null)
}
