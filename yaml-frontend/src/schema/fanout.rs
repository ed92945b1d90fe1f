//! The shape of the fan-out states, `parallel_task` and `foreach_task`, for the JSON Schema
//! (the loader's side is `build/fanout.rs`).

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde_json::Value;

use super::workflow::{Bounds, Common, Defaults, OnFailure, State};

/// `parallel_task`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParallelTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The branches by name, in order; `storeAs` gets an object of their results by name.
    #[schemars(extend("minProperties" = 1))]
    pub branches: IndexMap<String, Branch>,
    /// Sub-runs in flight at once, 1 to 1000 (default: 64).
    #[schemars(range(min = 1, max = 1000))]
    pub max_parallelism: Option<u32>,
    /// Failed sub-runs allowed before the state fails and cancels the rest (default 0).
    pub tolerated_failures: Option<ToleratedFailures>,
}

/// A branch: a sub-run of a workflow document, or inline states.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum Branch {
    /// `workflow:` + `params:`.
    Workflow(WorkflowBranch),
    /// `start:` + `states:`.
    Inline(Box<InlineBranch>),
}

/// A branch that runs a workflow document.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowBranch {
    /// The workflow (project, then tenant).
    pub workflow: String,
    /// Its parameters.
    pub params: Option<Value>,
}

/// A branch of inline states. It sees the parent's parameters as its `${params.*}` and the
/// parent's variables at the fork as its `${state.*}`; its result is its terminal's `result:`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InlineBranch {
    /// Audit string.
    pub description: Option<String>,
    /// The branch's first state.
    pub start: String,
    /// The branch's states.
    #[schemars(extend("minProperties" = 1))]
    pub states: IndexMap<String, State>,
    /// Guardrails of each sub-run.
    pub bounds: Option<Bounds>,
    /// Timeouts for states that declare none.
    pub defaults: Option<Defaults>,
    /// What an outcome nothing routes does.
    pub on_failure: Option<OnFailure>,
    /// Tool whitelist.
    pub allowed_tools: Option<Vec<String>>,
}

/// `toleratedFailures`: a count or a percentage.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum ToleratedFailures {
    /// Failed sub-runs allowed.
    Count(#[schemars(range(min = 0))] u64),
    /// `"25%"`: a share of all the sub-runs.
    Percent(#[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?%$"))] String),
}

/// `foreach_task`: `workflow:` or inline `start:` + `states:`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForeachTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// A template that resolves to a list (`"${state.files}"`), or a list.
    pub items: Value,
    /// The workflow each item runs (or use `start:` + `states:`).
    pub workflow: Option<String>,
    /// The sub-run's parameters; `${item}`, `${item.<path>}` and `${index}` are read here.
    pub params: Option<Value>,
    /// The first of the inline states.
    pub start: Option<String>,
    /// Inline states run for each item (they see `${state.item}` and `${state.index}`).
    pub states: Option<IndexMap<String, State>>,
    /// Sub-runs in flight at once, 1 to 1000 (default: 64).
    #[schemars(range(min = 1, max = 1000))]
    pub max_parallelism: Option<u32>,
    /// Failed sub-runs allowed before the state fails and cancels the rest (default 0).
    pub tolerated_failures: Option<ToleratedFailures>,
}
