//! The shape of `_vance/workflows/<name>.yaml` for the JSON Schema (reference §2). The loader
//! (`build/`) reads documents with positions and reports every problem; these types say the
//! same to editors. `tests` below hold both to the same field lists.

use indexmap::IndexMap;
use schemars::JsonSchema;
use serde_json::Value;

pub use super::fanout::{
    Branch, ForeachTask, InlineBranch, ParallelTask, ToleratedFailures, WorkflowBranch,
};
use super::words::{ErrorKindKey, ErrorKindList, Words};

/// A workflow document: a state machine of typed tasks, started by triggers.
#[derive(Debug, JsonSchema)]
#[schemars(
    title = "Magrathea workflow",
    description = "A workflow document, `_vance/workflows/<name>.yaml` (the Vancetope workflow format). The file name without `.yaml` is the workflow's name."
)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowDocument {
    /// Audit marker, shown in listings.
    pub description: Option<String>,
    /// Free version string; it lands in the run's StartRecord.
    pub version: Option<Version>,
    /// Name of the initial state; must be a key of `states`.
    pub start: String,
    /// Caller parameters by name. Parameters outside the schema are passed through.
    pub parameters: Option<IndexMap<String, Parameter>>,
    /// Guardrails per run.
    pub bounds: Option<Bounds>,
    /// Timeouts for states that declare none (Friday's `defaultNodeTimeoutMs`).
    pub defaults: Option<Defaults>,
    /// What an outcome no `on:`/`catch:` routes does (Friday's `failurePolicy`): `fail_fast`
    /// (default), `continue_on_error`, `compensate`, or `{policy: fallback, fallback: <state>}`.
    pub on_failure: Option<OnFailure>,
    /// Tool whitelist of this workflow, intersected with the project's and tenant's.
    pub allowed_tools: Option<Vec<String>>,
    /// Audit labels.
    pub tags: Option<Vec<String>>,
    /// The states by name, at least one.
    #[schemars(extend("minProperties" = 1))]
    pub states: IndexMap<String, State>,
}

/// A version: text, or a number kept as its text.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum Version {
    /// `"1.2"`.
    Text(String),
    /// `2`.
    Number(f64),
}

/// The schema of one caller parameter.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Parameter {
    /// The JSON type the value must have (any value when absent).
    #[serde(rename = "type")]
    pub ty: Option<ParamTypeName>,
    /// Whether the caller must pass it (default false).
    pub required: Option<bool>,
    /// The value used when the caller omits it.
    pub default: Option<Value>,
    /// What the parameter is for.
    pub description: Option<String>,
    /// The allowed values.
    #[serde(rename = "enum")]
    pub allowed: Option<Vec<Value>>,
}

/// A parameter's JSON type.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ParamTypeName {
    /// A string.
    String,
    /// Any number.
    Number,
    /// An integral number.
    Integer,
    /// `true` or `false`.
    Boolean,
    /// A mapping.
    Object,
    /// A list.
    Array,
}

/// Guardrails per run (reference §9): past one, the run fails; bounds do not route.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("not" = { "required": ["maxWallclockSeconds", "runTimeoutMs"] }))]
pub struct Bounds {
    /// Cost limit in US dollars of the run's agent tasks.
    #[schemars(range(min = 0))]
    pub max_total_cost_usd: Option<f64>,
    /// Hard wall-clock limit of the run, in seconds (at most 100 years).
    #[schemars(range(min = 0, max = 3_155_760_000_u64))]
    pub max_wallclock_seconds: Option<f64>,
    /// Friday's spelling of `maxWallclockSeconds`, in milliseconds (one or the other).
    #[schemars(range(min = 0, max = 3_155_760_000_000_u64))]
    pub run_timeout_ms: Option<f64>,
    /// Cap on started tasks, retries included.
    #[schemars(range(min = 0))]
    pub max_task_spawns: Option<u64>,
}

/// One state: its task type and that type's fields, transitions, retry.
#[derive(Debug, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum State {
    /// Spawns an engine by recipe; ends `success`, `agent_error`, `technical_error`, `timeout`.
    AgentTask(AgentTask),
    /// Runs a shell command in a workspace; ends `success`, `business_error` (exit ≠ 0),
    /// `technical_error`, `timeout` (with `timeoutSeconds`).
    ShellTask(ShellTask),
    /// Runs a sandboxed JavaScript file; ends `success`, `technical_error`, `timeout`.
    ScriptTask(ScriptTask),
    /// Calls a tool; ends `success`, `permission_error`, `technical_error`.
    ToolTask(ToolTask),
    /// Waits for a person's inbox answer.
    GateTask(GateTask),
    /// Waits for a duration; ends `fired`.
    TimerTask(TimerTask),
    /// Branches on conditions; the first rule that holds wins.
    ConditionTask(ConditionTask),
    /// Runs a sub-workflow; ends `success`, `failure`, `timeout` (with `timeoutSeconds`).
    WorkflowTask(WorkflowTask),
    /// Runs named branches as sub-runs side by side; ends `success` (failures within
    /// `toleratedFailures`), `failure`, `timeout` (with `timeoutSeconds`).
    ParallelTask(ParallelTask),
    /// Runs one sub-run per item of a list; ends `success`, `failure`, `timeout`.
    ForeachTask(ForeachTask),
    /// Ends the run.
    Terminal(Terminal),
}

/// The fields every non-terminal state has.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Common {
    /// Audit string.
    pub description: Option<String>,
    /// The task's time limit in seconds. It has no effect on a `timer_task` (its wait is
    /// `duration`) or a `condition_task` (decided at once); `validate` warns there (MAG-Y039).
    /// At most 100 years.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3_155_760_000_u64))]
    pub timeout_seconds: Option<f64>,
    /// The variable that receives the task's output (`${state.<name>}`).
    #[schemars(regex(pattern = r#"^[^.\s{}$\[\]'"\\]{1,256}$"#))]
    pub store_as: Option<String>,
    /// Outcome → next state, matched exactly; checked before `catch:`.
    pub on: Option<IndexMap<String, String>>,
    /// Error kind → next state (case-insensitive, dashes read as underscores).
    pub catch: Option<ErrorKindKey>,
    /// Retries the task on some error kinds before routing.
    pub retry: Option<Retry>,
    /// The state that undoes this one's work when the run compensates (`onFailure:
    /// compensate`).
    pub compensate: Option<String>,
}

/// A state-level retry (reference §4.3): it preempts routing.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    /// Attempts including the first.
    #[schemars(range(min = 1))]
    pub max_attempts: u32,
    /// The error kinds that are retried.
    pub on: Option<ErrorKindList>,
    /// Seconds to wait before each retry (default 0, at most 100 years).
    #[schemars(range(min = 0, max = 3_155_760_000_u64))]
    pub backoff_seconds: Option<f64>,
}

/// `agent_task`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The recipe (`_vance/recipes/<name>.yaml`) that configures the engine.
    #[schemars(regex(pattern = r"\S"))]
    pub recipe: String,
    /// Engine parameters (`prompt`, `schema`, …).
    pub params: Option<Value>,
}

/// `shell_task`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShellTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The command line (`sh -c`). Parameters are in `$MAGRATHEA_PARAM_<KEY>`, variables in
    /// `$MAGRATHEA_VAR_<KEY>`; `${params.…}` / `${state.…}` here gives the value's text as
    /// data (see `splice`).
    #[schemars(regex(pattern = r"\S"))]
    pub run: String,
    /// The workspace directory it runs in (settings `workspaces:`; `workspace` is the project).
    pub dir_name: Option<String>,
    /// `variables` (default): each `${…}` in `run:` becomes a reference to an environment
    /// variable holding its value, so that it arrives as data; `quoted`: each value is spliced
    /// single-quoted for the shell, as one word of data; `none`: `${…}` in `run:` is an error.
    pub splice: Option<Words<SpliceWords>>,
}

/// `script_task`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// Where the script lives: `document` (default) or `workspace`.
    pub source: Option<Words<ScriptSourceWords>>,
    /// The script's path.
    #[schemars(regex(pattern = r"\S"))]
    pub path: String,
    /// The workspace directory (for `source: workspace`).
    pub dir_name: Option<String>,
}

/// `tool_task`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The tool (or registered `#[task]`) to call.
    #[schemars(regex(pattern = r"\S"))]
    pub tool: String,
    /// The tool's parameters.
    pub params: Option<Value>,
}

/// `gate_task`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The inbox item a person answers.
    pub inbox: Inbox,
    /// APPROVAL only: `onReject` of the inbox, written beside it (once, here or there).
    #[serde(rename = "onReject")]
    pub on_reject: Option<Words<OnRejectWords>>,
}

/// The `inbox:` of a gate.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend(
    "if" = { "properties": { "kind": { "pattern": "^[dD][eE][cC][iI][sS][iI][oO][nN]$" } } },
    "then" = {
        "required": ["options"],
        "properties": { "options": { "minItems": 1 } }
    }
))]
pub struct Inbox {
    /// APPROVAL ends `approved`/`rejected`; DECISION ends with the chosen option; FEEDBACK
    /// ends `success`. Every kind can also end `insufficient_info` or `undecidable`.
    pub kind: Words<InboxKindWords>,
    /// Title (`${…}` allowed).
    pub title: Option<String>,
    /// Body (`${…}` allowed).
    pub body: Option<String>,
    /// A user, a tag or `@group`; defaults to who started the run.
    pub assigned_to: Option<String>,
    /// LOW, NORMAL (default) or CRITICAL.
    pub criticality: Option<Words<CriticalityWords>>,
    /// Tags of the item.
    pub tags: Option<Vec<String>>,
    /// The options of a DECISION (required there, non-empty), or one `${…}` that gives them.
    pub options: Option<Options>,
    /// APPROVAL only: who may answer (token subjects and roles); absent, anyone whose token
    /// may answer the inbox.
    pub approvers: Option<InboxApprovers>,
    /// APPROVAL only: approvals from distinct approvers needed (default 1); one rejection
    /// rejects.
    #[schemars(range(min = 1, max = 100))]
    pub quorum: Option<u32>,
    /// APPROVAL only: whether whoever started the run may answer (default true).
    pub self_approval: Option<bool>,
    /// APPROVAL only (Friday's approval node): `fail` (the default) or `reject_branch` (the
    /// rejection takes `on: rejected`); a rejection nothing routes fails the run with reason
    /// `APPROVAL_REJECTED`.
    pub on_reject: Option<Words<OnRejectWords>>,
}

/// `onFailure:` of a workflow.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum OnFailure {
    /// `fail_fast`, `continue_on_error`, `compensate` or `pause_for_approval`.
    Policy(Words<FailurePolicyWords>),
    /// `{policy: fallback, fallback: <state>}` (or another policy word).
    Block(OnFailureBlock),
}

/// The block form of `onFailure:`.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OnFailureBlock {
    /// The policy: `fail_fast`, `continue_on_error`, `fallback` (or Friday's `fallback_step`),
    /// `compensate` or `pause_for_approval`.
    pub policy: Words<FailureBlockPolicyWords>,
    /// The state `fallback` goes to (for `pause_for_approval`: the state the `fallback`
    /// answer goes to, which offers that answer only when given).
    pub fallback: Option<String>,
    /// `pause_for_approval` only: how long the decision waits before the run aborts.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3_155_760_000_u64))]
    pub timeout_seconds: Option<f64>,
    /// `pause_for_approval` only: who may answer the decision.
    pub approvers: Option<InboxApprovers>,
}

/// The policy words of `onFailure:`.
#[derive(Debug)]
pub struct FailurePolicyWords;

impl super::words::WordList for FailurePolicyWords {
    const NAME: &'static str = "FailurePolicy";
    const WORDS: &'static [&'static str] = &[
        "fail_fast",
        "continue_on_error",
        "compensate",
        "pause_for_approval",
    ];
}

/// The policy words of the block form of `onFailure:`: the words of the short form, and
/// `fallback` (or Friday's `fallback_step`), which names its state.
#[derive(Debug)]
pub struct FailureBlockPolicyWords;

impl super::words::WordList for FailureBlockPolicyWords {
    const NAME: &'static str = "FailureBlockPolicy";
    const WORDS: &'static [&'static str] = &[
        "fail_fast",
        "continue_on_error",
        "fallback",
        "fallback_step",
        "compensate",
        "pause_for_approval",
    ];
}

/// `defaults:` of a workflow.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Defaults {
    /// Seconds for `shell_task`, `script_task`, `tool_task`, `agent_task` and `workflow_task`
    /// states without `timeoutSeconds` (they then end `timeout`).
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3_155_760_000_u64))]
    pub task_timeout_seconds: Option<f64>,
    /// Seconds for `gate_task` states without `timeoutSeconds` (they then end `timeout`).
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3_155_760_000_u64))]
    pub gate_timeout_seconds: Option<f64>,
}

/// `approvers:` of an APPROVAL inbox.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InboxApprovers {
    /// Token subjects who may answer.
    pub users: Option<Vec<String>>,
    /// Roles (a token's `roles:` in the token file) whose holders may answer.
    pub roles: Option<Vec<String>>,
}

/// `timer_task`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimerTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// ISO-8601 (`P7D`, `PT5M30S`) or a shortcut (`7d`, `4h`, `30m`, `45s`, `250ms`), at most
    /// 100 years; or text with `${…}`, read when the timer starts.
    #[schemars(regex(
        pattern = r"^(?:[\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*(?:[Pp](?=[0-9])(?:[0-9]+(?:\.[0-9]+)?[Ww])?(?:[0-9]+(?:\.[0-9]+)?[Dd])?(?:[Tt](?=[0-9])(?:[0-9]+(?:\.[0-9]+)?[Hh])?(?:[0-9]+(?:\.[0-9]+)?[Mm])?(?:[0-9]+(?:\.[0-9]+)?[Ss])?)?|[Pp][Tt](?=[0-9])(?:[0-9]+(?:\.[0-9]+)?[Hh])?(?:[0-9]+(?:\.[0-9]+)?[Mm])?(?:[0-9]+(?:\.[0-9]+)?[Ss])?|[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h|d|w))[\t\n\u000b\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*|[\s\S]*\$\{[\s\S]*)$"
    ))]
    pub duration: String,
}

/// `condition_task`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConditionTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// Rules in order, at least one; an optional `else` comes last.
    #[schemars(length(min = 1))]
    pub transitions: Vec<Rule>,
}

/// A DECISION's options.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum Options {
    /// `[retry, abort]`.
    List(Vec<String>),
    /// `"${params.choices}"`: a list resolved when the gate opens.
    Placeholder(#[schemars(regex(pattern = r"^\$\{[^}]+\}$"))] String),
}

/// One rule of a condition.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum Rule {
    /// `{if: <condition>, to: <state>}`.
    If(IfRule),
    /// `{else: <state>}`.
    Else(ElseRule),
}

/// `{if: <condition>, to: <state>}`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IfRule {
    /// A condition over `#state['k']` and `#params['k']` (a sandboxed SpEL subset).
    #[serde(rename = "if")]
    pub condition: String,
    /// The next state when it holds.
    pub to: String,
}

/// `{else: <state>}`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElseRule {
    /// The next state when no rule holds.
    #[serde(rename = "else")]
    pub otherwise: String,
}

/// `workflow_task`.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowTask {
    /// Common fields.
    #[serde(flatten)]
    pub common: Common,
    /// The sub-workflow (project, then tenant).
    #[schemars(regex(pattern = r"\S"))]
    pub workflow: String,
    /// Its parameters.
    pub params: Option<Value>,
}

/// `terminal`: no transitions, no retry.
#[derive(Debug, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Terminal {
    /// Audit string.
    pub description: Option<String>,
    /// Not used by a terminal state.
    #[schemars(extend("exclusiveMinimum" = 0))]
    pub timeout_seconds: Option<f64>,
    /// The variable that receives the run's result (`${state.<name>}`).
    #[schemars(regex(pattern = r#"^[^.\s{}$\[\]'"\\]{1,256}$"#))]
    pub store_as: Option<String>,
    /// `success` (default): the run is DONE; `failure`: FAILED.
    pub outcome: Option<Words<TerminalOutcomeWords>>,
    /// The run's result (`${…}` allowed).
    pub result: Option<Value>,
}

/// `none`, `quoted` or `variables`.
#[derive(Debug)]
pub struct SpliceWords;
/// `document` or `workspace`.
#[derive(Debug)]
pub struct ScriptSourceWords;
/// `APPROVAL`, `DECISION` or `FEEDBACK`.
#[derive(Debug)]
pub struct InboxKindWords;
/// `LOW`, `NORMAL` or `CRITICAL`.
#[derive(Debug)]
pub struct CriticalityWords;
/// `success` or `failure`.
#[derive(Debug)]
pub struct TerminalOutcomeWords;
/// `fail` or `reject_branch`.
#[derive(Debug)]
pub struct OnRejectWords;

impl super::words::WordList for OnRejectWords {
    const NAME: &'static str = "OnReject";
    const WORDS: &'static [&'static str] = &["fail", "reject_branch"];
}
impl super::words::WordList for SpliceWords {
    const NAME: &'static str = "Splice";
    const WORDS: &'static [&'static str] = &["none", "quoted", "variables"];
}
impl super::words::WordList for ScriptSourceWords {
    const NAME: &'static str = "ScriptSource";
    const WORDS: &'static [&'static str] = &["document", "workspace"];
}
impl super::words::WordList for InboxKindWords {
    const NAME: &'static str = "InboxKind";
    const WORDS: &'static [&'static str] = &["APPROVAL", "DECISION", "FEEDBACK"];
}
impl super::words::WordList for CriticalityWords {
    const NAME: &'static str = "Criticality";
    const WORDS: &'static [&'static str] = &["LOW", "NORMAL", "CRITICAL"];
}
impl super::words::WordList for TerminalOutcomeWords {
    const NAME: &'static str = "TerminalOutcome";
    const WORDS: &'static [&'static str] = &["success", "failure"];
}
