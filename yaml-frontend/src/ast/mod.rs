//! The typed model of a workflow document, with the source position of everything a later
//! stage may want to point at.

mod fanout;

pub use fanout::{Branch, BranchBody, FanOut, Tolerance};

use std::time::Duration;

use indexmap::IndexMap;
use serde_json::Value;

use crate::condition::Condition;
use crate::diagnostic::Span;
use crate::error_kind::ErrorKind;

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Its position.
    pub span: Span,
}

/// A whole workflow document (reference §2).
#[derive(Debug, Clone)]
pub struct WorkflowDoc {
    /// Audit marker.
    pub description: Option<String>,
    /// Free version string (numbers are kept as their text).
    pub version: Option<String>,
    /// The initial state; guaranteed to name a key of `states` after validation.
    pub start: Spanned<String>,
    /// Caller parameter schemas in document order.
    pub parameters: IndexMap<String, ParamSchema>,
    /// Global guardrails.
    pub bounds: Option<Bounds>,
    /// Workflow-level tool whitelist.
    pub allowed_tools: Option<Vec<String>>,
    /// Audit labels.
    pub tags: Vec<String>,
    /// `defaults:`: timeouts for states that declare none (Friday's `defaultNodeTimeoutMs`).
    pub defaults: Defaults,
    /// `onFailure:`: what an outcome nothing routes does (Friday's `failurePolicy`).
    pub on_failure: FailurePolicy,
    /// States in document order; never empty after validation.
    pub states: IndexMap<String, StateSpec>,
    /// The document's other top-level fields as written (as JSON, in document order), `start`
    /// and `states` left out: what a view of the states (the editor graph) carries beside
    /// them, so that the workflow it is imported as behaves the same.
    pub top_level: serde_json::Map<String, serde_json::Value>,
}

/// `onFailure:` of a workflow: applied only when a state's `on:`/`catch:` do not route its
/// outcome, so documents without it behave as they always did.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum FailurePolicy {
    /// The run fails (the reference's behaviour).
    #[default]
    FailFast,
    /// Follow the state's `on: success` target, the error stored in `lastError`.
    ContinueOnError,
    /// Go to this state, the error stored in `lastError`.
    Fallback(Spanned<String>),
    /// Run the `compensate:` states of the completed states in reverse order, then fail.
    Compensate,
    /// Ask a person (a DECISION inbox item: `retry`, `fallback` when a state is given, or
    /// `abort`) what to do.
    PauseForApproval {
        /// The state `fallback` goes to.
        fallback: Option<Spanned<String>>,
        /// `timeoutSeconds`: how long the decision may wait (then the run aborts).
        timeout_seconds: Option<f64>,
        /// `approvers`: who may answer the decision (anyone with access when absent).
        approvers: Option<Approvers>,
    },
}

/// `defaults:` of a workflow: what a state without its own `timeoutSeconds` gets. Absent, a
/// state has no timeout but its executor's (the document means what it always meant).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Defaults {
    /// `taskTimeoutSeconds`: `shell_task`, `script_task`, `tool_task`, `agent_task` and
    /// `workflow_task` states.
    pub task_timeout_seconds: Option<f64>,
    /// `gateTimeoutSeconds`: `gate_task` states (the gate then ends `timeout`).
    pub gate_timeout_seconds: Option<f64>,
}

impl Defaults {
    /// These defaults, each filled from `fallback` where unset (a document's `defaults:` over
    /// the settings' that a run also takes).
    #[must_use]
    pub fn or(self, fallback: Defaults) -> Defaults {
        Defaults {
            task_timeout_seconds: self.task_timeout_seconds.or(fallback.task_timeout_seconds),
            gate_timeout_seconds: self.gate_timeout_seconds.or(fallback.gate_timeout_seconds),
        }
    }
}

/// The JSON type a parameter must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParamType {
    /// A string.
    String,
    /// Any number.
    Number,
    /// An integral number.
    Integer,
    /// `true`/`false`.
    Boolean,
    /// A map.
    Object,
    /// A list.
    Array,
    /// Any JSON value: the parameter declares no `type` (the reference's parameters are a
    /// permissive pass-through).
    Any,
}

impl ParamType {
    /// All types with their schema names.
    pub const ALL: [(&'static str, ParamType); 6] = [
        ("string", Self::String),
        ("number", Self::Number),
        ("integer", Self::Integer),
        ("boolean", Self::Boolean),
        ("object", Self::Object),
        ("array", Self::Array),
    ];

    /// The schema name (`string`, `integer`, ...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("any", |(n, _)| n)
    }

    /// True when `v` has this type. An integral float such as `3.0` counts as an integer
    /// while it is exact (at most 2^53 either side of zero): `1e23`, or an integer too large
    /// for 64 bits read as one, is not an integer any more.
    #[must_use]
    pub fn matches(self, v: &Value) -> bool {
        const EXACT: f64 = 9_007_199_254_740_992.0;
        match self {
            Self::String => v.is_string(),
            Self::Number => v.is_number(),
            Self::Integer => {
                v.is_i64()
                    || v.is_u64()
                    || v.as_f64()
                        .is_some_and(|f| f.fract() == 0.0 && f.abs() <= EXACT)
            }
            Self::Boolean => v.is_boolean(),
            Self::Object => v.is_object(),
            Self::Array => v.is_array(),
            Self::Any => true,
        }
    }
}

/// The schema of one caller parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSchema {
    /// Parameter name.
    pub name: String,
    /// Required JSON type ([`ParamType::Any`] when the parameter declares none).
    pub ty: ParamType,
    /// Whether the caller must pass it (default false).
    pub required: bool,
    /// Value used when the caller omits it.
    pub default: Option<Value>,
    /// Human description.
    pub description: Option<String>,
    /// Allowed values, if restricted.
    pub enum_values: Option<Vec<Value>>,
    /// Where the parameter is declared.
    pub span: Span,
}

/// Global guardrails per run (reference §9).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bounds {
    /// Reserved; not enforced in v1.
    pub max_total_cost_usd: Option<f64>,
    /// Hard wall-clock limit in seconds.
    pub max_wallclock_seconds: Option<f64>,
    /// The same limit as the document wrote it in Friday's spelling, `runTimeoutMs` (in
    /// milliseconds; [`max_wallclock_seconds`](Self::max_wallclock_seconds) holds it in
    /// seconds), so that a run that exceeds it is told in the author's words.
    pub run_timeout_ms: Option<f64>,
    /// Cap on started tasks, retries included.
    pub max_task_spawns: Option<u64>,
}

/// The nine task types (reference §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskType {
    /// Spawns an engine by recipe.
    AgentTask,
    /// Runs a shell command.
    ShellTask,
    /// Runs a JavaScript script.
    ScriptTask,
    /// Calls a tool.
    ToolTask,
    /// Waits for a human inbox answer.
    GateTask,
    /// Waits for a duration.
    TimerTask,
    /// Branches on conditions.
    ConditionTask,
    /// Runs a sub-workflow.
    WorkflowTask,
    /// Runs named branches as sub-runs, side by side.
    ParallelTask,
    /// Runs one sub-run per item of a list.
    ForeachTask,
    /// Ends the run.
    Terminal,
}

impl TaskType {
    /// All types with their YAML names.
    pub const ALL: [(&'static str, TaskType); 11] = [
        ("agent_task", Self::AgentTask),
        ("shell_task", Self::ShellTask),
        ("script_task", Self::ScriptTask),
        ("tool_task", Self::ToolTask),
        ("gate_task", Self::GateTask),
        ("timer_task", Self::TimerTask),
        ("condition_task", Self::ConditionTask),
        ("workflow_task", Self::WorkflowTask),
        ("parallel_task", Self::ParallelTask),
        ("foreach_task", Self::ForeachTask),
        ("terminal", Self::Terminal),
    ];

    /// Parses a YAML type name (exact match).
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, t)| *t)
    }

    /// The YAML name.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(_, t)| *t == self)
            .map_or("?", |(n, _)| n)
    }
}

/// An `on:` entry: outcome → target state.
#[derive(Debug, Clone, PartialEq)]
pub struct OnTransition {
    /// Outcome string, matched exactly.
    pub outcome: String,
    /// Target state name.
    pub target: String,
    /// Position of the outcome key.
    pub span: Span,
    /// Position of the target value.
    pub target_span: Span,
}

/// A `catch:` entry: error kind → target state.
#[derive(Debug, Clone, PartialEq)]
pub struct CatchTransition {
    /// The normalized error kind.
    pub kind: ErrorKind,
    /// Target state name.
    pub target: String,
    /// Position of the kind key.
    pub span: Span,
    /// Position of the target value.
    pub target_span: Span,
}

/// A state-level retry block (reference §4.3).
#[derive(Debug, Clone, PartialEq)]
pub struct RetrySpec {
    /// Attempts including the first (≥ 1).
    pub max_attempts: u32,
    /// Outcomes (as error kinds) that trigger a retry.
    pub on: Vec<ErrorKind>,
    /// Where each of `on` is written.
    pub on_spans: Vec<Span>,
    /// Delay before each retry (≥ 0, default 0).
    pub backoff_seconds: f64,
    /// Position of the `retry:` block.
    pub span: Span,
}

/// One state of the graph.
#[derive(Debug, Clone)]
pub struct StateSpec {
    /// State name (its key under `states:`).
    pub name: String,
    /// Position of the name.
    pub span: Span,
    /// Task type.
    pub task_type: TaskType,
    /// Audit string.
    pub description: Option<String>,
    /// Task timeout in seconds (> 0).
    pub timeout_seconds: Option<f64>,
    /// Variable that receives the task output.
    pub store_as: Option<String>,
    /// `on:` transitions in document order.
    pub on: Vec<OnTransition>,
    /// `catch:` transitions in document order.
    pub catch: Vec<CatchTransition>,
    /// Retry block.
    pub retry: Option<RetrySpec>,
    /// `compensate:`: the state that undoes this one's work when the run compensates.
    pub compensate: Option<Spanned<String>>,
    /// Type-specific fields.
    pub task: TaskSpec,
    /// The state's spec as JSON, for `${...}` resolution right before the task runs.
    pub raw: Value,
}

/// Type-specific fields of a state.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TaskSpec {
    /// `agent_task`.
    Agent {
        /// Recipe name (required).
        recipe: String,
        /// Engine parameters (`null` when absent).
        params: Value,
    },
    /// `shell_task`.
    Shell {
        /// Command line (required).
        run: String,
        /// Workspace root dir.
        dir_name: Option<String>,
        /// How `${…}` in `run:` reaches the command (`splice:`).
        splice: Splice,
    },
    /// `script_task`.
    Script {
        /// Where the script lives (default `document`).
        source: ScriptSource,
        /// Script path (required).
        path: String,
        /// Workspace root dir.
        dir_name: Option<String>,
    },
    /// `tool_task`.
    Tool {
        /// Tool name (required).
        tool: String,
        /// Tool parameters (`null` when absent).
        params: Value,
    },
    /// `gate_task`.
    Gate(InboxSpec),
    /// `timer_task`.
    Timer {
        /// Duration text as written.
        duration: String,
        /// Parsed duration; `None` when the text contains `${...}` and is resolved at run time.
        parsed: Option<Duration>,
    },
    /// `condition_task`.
    Condition {
        /// `if`/`to` rules in order; the first match wins.
        rules: Vec<ConditionRule>,
        /// The `else:` target, if any.
        otherwise: Option<Spanned<String>>,
    },
    /// `workflow_task`.
    Workflow {
        /// Sub-workflow name (required).
        workflow: String,
        /// Parameters passed to the sub-run (`null` when absent).
        params: Value,
    },
    /// `parallel_task`.
    Parallel {
        /// `branches:` in declaration order.
        branches: Vec<Branch>,
        /// `maxParallelism` and `toleratedFailures`.
        fan: FanOut,
    },
    /// `foreach_task`.
    Foreach {
        /// `items:`: a template that must resolve to a JSON array (a string), or a literal
        /// list whose strings may hold placeholders.
        items: serde_json::Value,
        /// The sub-run of each item.
        body: BranchBody,
        /// `maxParallelism` and `toleratedFailures`.
        fan: FanOut,
    },
    /// `terminal`.
    Terminal {
        /// `success` (default) or `failure`.
        outcome: TerminalOutcome,
        /// Optional result value.
        result: Option<Value>,
    },
}

/// What a `shell_task`'s `run:` does with `${params.…}` / `${state.…}` (`splice:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Splice {
    /// `none`: a placeholder in `run:` is an error (`MAG-Y028`); values reach the command as
    /// `$MAGRATHEA_PARAM_*` / `$MAGRATHEA_VAR_*` only.
    None,
    /// `quoted`: each placeholder's value is spliced POSIX-single-quoted, so it arrives as one
    /// word of data whatever it holds.
    Quoted,
    /// `variables` (default): each placeholder becomes a reference to an environment variable
    /// of its own that holds its value, written for where it stands in the command's quoting,
    /// so that the value arrives as data whatever it holds.
    #[default]
    Variables,
}

/// Where a `script_task` reads its script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScriptSource {
    /// The document layer.
    Document,
    /// A workspace directory.
    Workspace,
}

/// How a terminal state ends the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TerminalOutcome {
    /// The run is DONE.
    Success,
    /// The run is FAILED.
    Failure,
}

/// The three inbox item kinds of a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InboxKind {
    /// Approve/reject.
    Approval,
    /// Choose one of `options`.
    Decision,
    /// Free text.
    Feedback,
}

/// Inbox item criticality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Criticality {
    /// Low.
    Low,
    /// Normal (default).
    Normal,
    /// Critical.
    Critical,
}

/// The `inbox:` block of a `gate_task`.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxSpec {
    /// Item kind.
    pub kind: InboxKind,
    /// Title (may contain `${...}`).
    pub title: Option<String>,
    /// Body (may contain `${...}`).
    pub body: Option<String>,
    /// Assignee; falls back to the starter, then `@system`.
    pub assigned_to: Option<String>,
    /// Criticality (default `NORMAL`).
    pub criticality: Criticality,
    /// Tags.
    pub tags: Vec<String>,
    /// Options; non-empty for `DECISION`.
    pub options: Vec<String>,
    /// Who may answer: users and roles (absent: anyone who may answer the inbox).
    pub approvers: Option<Approvers>,
    /// Approvals needed before the gate is approved (default 1).
    pub quorum: u32,
    /// Whether whoever started the run may answer (default true).
    pub self_approval: bool,
    /// `onReject:` of an APPROVAL (Friday's approval node), as written; absent is `fail`.
    /// Either way a rejection nothing routes fails the run with reason `APPROVAL_REJECTED`.
    pub on_reject: Option<OnReject>,
}

/// `onReject:` of an APPROVAL inbox, as Friday's approval node names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnReject {
    /// `fail`: a rejection fails the run unless an `on: rejected` route takes it.
    Fail,
    /// `reject_branch`: the rejection takes the `on: rejected` route (and fails the run, as
    /// `fail` does, when there is none).
    RejectBranch,
}

/// `approvers:` of an inbox: who may answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Approvers {
    /// Token subjects.
    pub users: Vec<String>,
    /// Roles of tokens (`roles:` in the token file).
    pub roles: Vec<String>,
}

/// One `if`/`to` rule of a `condition_task`.
#[derive(Debug, Clone)]
pub struct ConditionRule {
    /// The parsed condition.
    pub condition: Condition,
    /// Target state.
    pub target: String,
    /// Position of the rule.
    pub span: Span,
    /// Position of the target.
    pub target_span: Span,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_integer_is_an_exact_integral_number() {
        for v in [
            json!(3),
            json!(-3),
            json!(3.0),
            json!(u64::MAX),
            json!(9_007_199_254_740_992.0),
        ] {
            assert!(ParamType::Integer.matches(&v), "{v}");
        }
        let huge: Value = serde_json::from_str("99999999999999999999999").unwrap();
        for v in [json!(3.5), json!(1e23), huge, json!("3"), json!(null)] {
            assert!(!ParamType::Integer.matches(&v), "{v}");
        }
    }
}
