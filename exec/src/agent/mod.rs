//! `agent_task`: LLM engines by recipe (reference §1, §3.1, §9).
//!
//! # Recipes
//!
//! A state names a recipe (`recipe: reviewer`); inline definitions are rejected by the loader
//! (`recipe:` must be a string). The recipe is resolved at each attempt by the cascade —
//! `<project>/_vance/recipes/<name>.yaml`, then `<tenant>/_tenant/_vance/recipes/<name>.yaml` —
//! so, unlike the workflow, it is not frozen into the run. An unknown recipe is a
//! `technical_error` naming both paths searched.
//!
//! ```yaml
//! engine: jeltz              # jeltz | chat | the name of a host engine
//! provider: openai           # optional; the built-in engines speak OpenAI chat completions
//! baseUrl: http://127.0.0.1:8080/v1   # optional; default https://api.openai.com/v1
//! model: gpt-4o-mini         # required by the built-in engines
//! apiKeyEnv: OPENAI_API_KEY  # optional; the key is read from this variable at call time
//! temperature: 0             # optional
//! maxTokens: 2000            # optional (max_tokens)
//! timeoutSeconds: 60         # optional; the state's timeoutSeconds wins; default 600
//! prices: { inputPerMTokUsd: 0.15, outputPerMTokUsd: 0.6 }   # optional → costUsd
//! system: "You are …"        # optional system message
//! jsonMode: true             # optional (jeltz); send response_format json_object
//! tools: [doc_read, http_request]   # optional; registered tools offered to the model
//! maxToolRounds: 8           # optional; rounds of tool calls before technical_error
//! ```
//!
//! A state's `params.model` and `params.temperature`, where it sets them, win over the
//! recipe's `model:` and `temperature:` for the built-in engines, so one recipe (endpoint, key,
//! prices) can serve states that pick their own model.
//!
//! The built-in engines reject fields they do not know; host engines get them in
//! [`Recipe::extra`]. The API key is never written anywhere: it is read through the runtime's
//! key source (the process environment unless [`Executors::with_agent_env`] replaces it),
//! handed to the engine as an [`ApiKey`] (whose `Debug` is redacted) and sent only as the
//! `Authorization: Bearer` header. If `apiKeyEnv` names an unset variable the attempt is a
//! `technical_error`; without `apiKeyEnv` no `Authorization` header is sent (local servers).
//!
//! In a served tree a recipe is a document any token with `workflow.write` may write, so two
//! rules of the tenant's settings apply: `apiKeyEnv` may name only a variable listed under
//! `agents.keyEnv`, for a `baseUrl` on a host listed with it (`[MAG-AG011]` otherwise), and
//! the engine connects only where the tenant's `egress:` allows, as the `http_request` tool
//! does (a private, loopback or reserved address needs `egress.allowHosts`;
//! [`AgentRequest::egress`]).
//!
//! # Engines and outcomes
//!
//! An [`AgentEngine`] runs one attempt: it gets the recipe, the state's `params` as
//! `engineParams` and the run's identity, and answers with an [`AgentReply`] (close reason,
//! messages, token usage). The runtime maps the reply to the task's outcome by the engine's
//! [`ReplyFormat`]:
//!
//! * [`ReplyFormat::Wrapper`] (Jeltz): the last assistant message must be a JSON object
//!   `{"success": bool, "data": …}` (a single Markdown code fence around it is tolerated).
//!   `success: true` with `data` matching `params.schema` → `success`, output `data`.
//!   `success: false`, a schema violation, no JSON or no wrapper → `agent_error`, output the
//!   last invalid reply (the parsed JSON, or the raw text when it is not JSON).
//! * [`ReplyFormat::LastMessage`] (other engines): the close reason decides. `Done`/`AutoClose`
//!   → `success` with the last assistant message (a string) as output; `Stale` →
//!   `technical_error`; `Stopped`/`Archived`/`UserDelete`/`Abandoned` → `cancelled`. With the
//!   wrapper format the same close reasons apply before the wrapper parse.
//!
//! `params.schema` is either a complete JSON Schema or, as in the reference's `pr-review`, a
//! *properties map* (`risk: {type: string}`), read as an object schema with those properties,
//! all required. An invalid schema, a missing `params.prompt` or a bad recipe is a
//! `technical_error` before any call is made.
//!
//! Engine errors: a transport failure (connection refused, HTTP status ≥ 400, a response that
//! is not a chat completion) → `technical_error`; the attempt's time limit (the state's
//! `timeoutSeconds`, else the recipe's, else 600 s) → `timeout`; [`AgentError::Cancelled`] →
//! `cancelled`.
//!
//! # Tools
//!
//! A recipe's `tools:` names tools of the runtime's registry (built-in or host tools; unknown
//! names are skipped). The engine gets them as a [`ToolBox`] in [`AgentRequest::tools`]: the
//! built-in engines send them as the OpenAI `tools` array and run the usual loop — while the
//! reply asks for `tool_calls`, each call is executed and answered with a `tool` message
//! (`content`: the JSON result, or `{"error": "…"}`), then the model is asked again; more than
//! `maxToolRounds` (default 8) rounds of calls is a `technical_error`. Every call passes the
//! same permission cascade as a `tool_task` (§10: tenant ∩ project ∩ the workflow's
//! `allowedTools`, or the default pool; `denied:` always wins) before it runs: a refused call
//! does not run and the model is told `{"error": "permission denied: …"}`, as it is for an
//! unknown tool or invalid arguments. Usage and cost add up over all rounds. The calls are
//! recorded in the task output as `toolCalls: [{name, allowed, ok, error?}]`.
//!
//! # Output contract with the interpreter
//!
//! `{"data": <task output>, "usage": {"promptTokens", "completionTokens", "totalTokens"} |
//! null, "costUsd": <number> | null, "toolCalls": [...]}` (`toolCalls` only when the recipe
//! offers tools), on success and, as the error's output, on failures after some reply
//! reported usage (`agent_error`, too many tool rounds, and an error or timeout in a later
//! round of tool calls: the rounds before it were paid for), where `data` is `{"error":
//! <message>}`; the interpreter stores `data` with `storeAs` and adds `costUsd` to the run's
//! cost for `bounds.maxTotalCostUsd`. The whole object (usage included) is journaled in the
//! `TaskResultRecord`. Failures before any usage (technical errors, timeouts of the first
//! request) carry `{"error": <message>}` like every other executor (plus `toolCalls` if calls
//! were made). `costUsd` is the engine's own figure
//! if it reports one, else the usage priced by the recipe's `prices`, else `null` (unpriced
//! recipes do not count against the bound).

mod jeltz;
mod openai;
mod protocol;
mod recipe;
mod toolbox;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use magrathea_core::{Engine, TaskContext, TaskError, TaskOutputLimit};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use openai::OpenAiEngine;

/// Whether `schema`, an `agent_task`'s `params.schema`, is one an engine that asks for a
/// structured reply (the Jeltz wrapper) can check the reply against: a JSON Schema, or the
/// reference's properties map (`risk: {type: string}`). `Err` says why not, as a run would
/// (`[MAG-AG004]`).
pub fn check_reply_schema(schema: &serde_json::Value) -> Result<(), String> {
    jeltz::normalise_schema(schema)
        .and_then(|s| jeltz::compile(&s))
        .map(|_| ())
}
pub use protocol::{
    AgentEngine, AgentError, AgentReply, AgentRequest, AgentRunInfo, ApiKey, ChatMessage,
    CloseReason, ReplyFormat, Usage, UsageMeter,
};
pub use recipe::{Prices, Recipe};
pub use toolbox::{ToolBox, ToolCallRecord};

use crate::Executors;
use crate::call::{ExecCall, IntoExecCall, call_of, decode};
use crate::documents::{DocumentError, DocumentSource};
use crate::tools::{ToolContext, Tools};
use crate::{positive_secs, saturating_secs, technical, text_field};

/// The task name agent steps are journaled under.
pub const TASK: &str = "agent_task";

/// An agent recipe to run: the journaled input of an `agent_task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentInput {
    /// The recipe's name (`_vance/recipes/<name>.yaml` by the cascade).
    pub recipe: String,
    /// The engine's parameters (`prompt`, `schema`, …).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// The attempt's time limit; else the recipe's, else 600 s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
}

impl AgentInput {
    /// Runs `recipe` with `params`.
    pub fn new(recipe: impl Into<String>, params: Value) -> Self {
        Self {
            recipe: recipe.into(),
            params,
            timeout_seconds: None,
        }
    }

    /// Within `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_seconds = Some(timeout.as_secs_f64());
        self
    }

    /// The input of a YAML state from its resolved spec (`recipe`, `params`,
    /// `timeoutSeconds`).
    pub fn from_spec(spec: &Value) -> Self {
        Self {
            recipe: text_field(spec, "recipe"),
            params: spec.get("params").cloned().unwrap_or(Value::Null),
            timeout_seconds: positive_secs(spec.get("timeoutSeconds")),
        }
    }
}

impl IntoExecCall for AgentInput {
    type Output = AgentOutput;
    fn into_exec_call(self) -> ExecCall<AgentOutput> {
        call_of(TASK, &self)
    }
}

/// What an `agent_task` answers (see "Output contract" above).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AgentOutput {
    /// The task's output proper: the validated `data` of the Jeltz wrapper, or the last
    /// assistant message.
    pub data: Value,
    /// Token usage, if known.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// What the attempt cost, if known.
    #[serde(default)]
    pub cost_usd: Option<f64>,
    /// The tool calls the agent made, when the recipe offers tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallRecord>>,
}

/// The attempt's time limit when neither the state nor the recipe sets `timeoutSeconds`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(600);

/// Rounds of tool calls when the recipe sets no `maxToolRounds`.
pub(crate) const DEFAULT_MAX_TOOL_ROUNDS: u32 = 8;

type EnvFn = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The agent engines of the executors, and where API keys come from.
pub(crate) struct Agents {
    engines: RwLock<HashMap<String, Arc<dyn AgentEngine>>>,
    env: RwLock<EnvFn>,
}

impl fmt::Debug for Agents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<String> = self
            .engines
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect();
        names.sort();
        f.debug_struct("Agents").field("engines", &names).finish()
    }
}

impl Agents {
    pub(crate) fn new() -> Self {
        let mut engines: HashMap<String, Arc<dyn AgentEngine>> = HashMap::new();
        engines.insert("jeltz".into(), Arc::new(OpenAiEngine::jeltz()));
        engines.insert("chat".into(), Arc::new(OpenAiEngine::chat()));
        Self {
            engines: RwLock::new(engines),
            env: RwLock::new(Arc::new(|name: &str| std::env::var(name).ok())),
        }
    }

    fn engine(&self, name: &str) -> Result<Arc<dyn AgentEngine>, Vec<String>> {
        let engines = self.engines.read().unwrap_or_else(PoisonError::into_inner);
        engines.get(name).cloned().ok_or_else(|| {
            let mut names: Vec<String> = engines.keys().cloned().collect();
            names.sort();
            names
        })
    }

    fn key(&self, name: &str) -> Option<String> {
        let env = self
            .env
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        env(name)
    }
}

impl Executors {
    /// Registers `engine` under `name` (replacing a built-in one of that name); recipes with
    /// `engine: <name>` run on it.
    pub fn with_agent_engine(self, name: impl Into<String>, engine: impl AgentEngine) -> Self {
        self.register_agent_engine(name, Arc::new(engine));
        self
    }

    /// Registers `engine` under `name` with executors that are already shared; calls made
    /// from then on use it.
    pub fn register_agent_engine(&self, name: impl Into<String>, engine: Arc<dyn AgentEngine>) {
        self.inner
            .agents
            .engines
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.into(), engine);
    }

    /// Replaces where agent engines' API keys are read from (the process environment by
    /// default): `lookup(name)` is called with a recipe's `apiKeyEnv` at each attempt.
    pub fn with_agent_env(
        self,
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        *self
            .inner
            .agents
            .env
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(lookup);
        self
    }
}

/// Runs one `agent_task` attempt.
pub(crate) async fn execute(
    docs: &DocumentSource,
    agents: &Agents,
    tools: &Tools,
    engine: Option<Engine>,
    input: Value,
    ctx: TaskContext,
) -> Result<Value, TaskError> {
    let prepared = prepare(docs, agents, tools, engine, input, &ctx)?;
    let Prepared {
        engine,
        request,
        validator,
        timeout,
    } = prepared;
    let prices = request.recipe.prices;
    let key = request.api_key.clone();
    let toolbox = request.tools.clone();
    let spent = request.spent.clone();
    // The calls for the output: always when the recipe offers tools, else only if made.
    let tool_calls = || {
        let calls = toolbox.calls();
        (!toolbox.is_empty() || !calls.is_empty()).then(|| json!(calls))
    };
    // A failed attempt's output: `{error}`, or, once some reply reported usage, the envelope
    // with it, so that the rounds paid for count against the run's cost like a success's.
    let failed = |kind: &str, message: String, usage: Option<Usage>| {
        let mut error = plain(kind, message.clone());
        if let Some(usage) = usage {
            error.output = envelope(
                json!({ "error": message }),
                Some(usage),
                cost_of(None, Some(usage), prices),
                tool_calls(),
            );
        } else if let Some(calls) = tool_calls().filter(|c| c != &json!([])) {
            error.output["toolCalls"] = calls;
        }
        error
    };
    let reply = match tokio::time::timeout(timeout, engine.run(request)).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(e)) => {
            // An endpoint may echo the request's headers in its error body: the key never
            // reaches the journal.
            let mut message = e.to_string();
            if let Some(k) = key.as_ref().filter(|k| !k.0.is_empty()) {
                message = message.replace(k.expose(), "<redacted>");
            }
            // A host engine may report the rounds' usage in the error instead of the meter.
            let usage = match &e {
                AgentError::ToolRounds { usage, .. } => usage.or_else(|| spent.total()),
                _ => spent.total(),
            };
            return Err(failed(e.kind(), message, usage));
        }
        Err(_) => {
            let message = format!(
                "[MAG-AG006] the agent did not answer within {} s",
                timeout.as_secs_f64()
            );
            return Err(failed(TaskError::TIMEOUT, message, spent.total()));
        }
    };
    outcome(
        &reply,
        engine.reply_format(),
        validator.as_ref(),
        prices,
        tool_calls(),
    )
}

/// The cost of an attempt: the engine's own figure, else `usage` priced by `prices`. Tokens
/// of the total that the usage does not split into input and output are priced at the dearer
/// of the two rates: a bound on cost is never passed for less than was spent.
fn cost_of(reported: Option<f64>, usage: Option<Usage>, prices: Option<Prices>) -> Option<f64> {
    reported.or_else(|| {
        let (p, u) = (prices?, usage?);
        let split = u.prompt_tokens.saturating_add(u.completion_tokens);
        let unsplit = u.total_tokens.saturating_sub(split);
        let dearer = p.cost_usd(unsplit, 0).max(p.cost_usd(0, unsplit));
        Some(p.cost_usd(u.prompt_tokens, u.completion_tokens) + dearer)
    })
}

/// The output of an attempt that got replies (see the module docs).
fn envelope(
    data: Value,
    usage: Option<Usage>,
    cost: Option<f64>,
    tool_calls: Option<Value>,
) -> Value {
    let mut out = json!({ "data": data, "usage": usage, "costUsd": cost });
    if let Some(calls) = tool_calls {
        out["toolCalls"] = calls;
    }
    out
}

struct Prepared {
    engine: Arc<dyn AgentEngine>,
    request: AgentRequest,
    validator: Option<jsonschema::Validator>,
    timeout: Duration,
}

fn prepare(
    docs: &DocumentSource,
    agents: &Agents,
    tools: &Tools,
    engine: Option<Engine>,
    input: Value,
    ctx: &TaskContext,
) -> Result<Prepared, TaskError> {
    let (input, run): (AgentInput, _) = decode(TASK, input)?;
    let name = input.recipe.as_str();
    if name.is_empty() {
        return Err(technical(
            "[MAG-AG001] agent_task needs `recipe:` naming a recipe; inline recipe definitions \
             are not allowed"
                .into(),
        ));
    }
    let scope = run.scope();
    let (path, text) = docs
        .document(&scope, "recipes", name)
        .map_err(|e| technical(recipe_error(e)))?;
    let recipe = Recipe::parse(&docs.label(&path), &text).map_err(technical)?;
    let agent = agents.engine(&recipe.engine).map_err(|known| {
        technical(format!(
            "[MAG-AG003] recipe `{name}` ({}) names the unknown engine `{}` (known: {})",
            docs.label(&path),
            recipe.engine,
            known.join(", ")
        ))
    })?;
    let served = docs.is_served();
    let tenant = served.then(|| docs.tenant_settings(&scope));
    let api_key = match recipe.api_key_env.as_deref() {
        None => None,
        // A recipe is a document: in a served tree it may name only the server variables the
        // tenant's administrator lists, or any token that may write documents could send the
        // server's secrets to a URL of its choice.
        Some(var)
            if tenant
                .as_ref()
                .is_some_and(|t| !key_may_go(t, var, recipe.base_url.as_deref())) =>
        {
            return Err(technical(format!(
                "[MAG-AG011] recipe `{name}` names `apiKeyEnv: {var}` for {}, which this \
                 tenant's agents may not do: the tenant's administrator lists each server \
                 variable recipes may name, with the hosts its key may be sent to, under \
                 `agents.keyEnv` in _tenant/_vance/settings.yaml",
                recipe
                    .base_url
                    .as_deref()
                    .unwrap_or(openai::DEFAULT_BASE_URL)
            )));
        }
        Some(var) => match agents.key(var) {
            Some(k) if !k.is_empty() => Some(ApiKey(k)),
            _ => {
                return Err(technical(format!(
                    "[MAG-AG007] the environment variable `{var}` named by `apiKeyEnv` of recipe \
                     `{name}` is not set"
                )));
            }
        },
    };
    let engine_params = if input.params.is_null() {
        json!({})
    } else {
        input.params.clone()
    };
    let validator = match engine_params.get("schema") {
        Some(s) if agent.reply_format() == ReplyFormat::Wrapper && !s.is_null() => Some(
            jeltz::normalise_schema(s)
                .and_then(|s| jeltz::compile(&s))
                .map_err(|e| technical(format!("[MAG-AG004] agent_task params: {e}")))?,
        ),
        _ => None,
    };
    let timeout = input
        .timeout_seconds
        .map(saturating_secs)
        .or_else(|| recipe.timeout())
        .unwrap_or(DEFAULT_TIMEOUT);
    // `None` (the workflow declares no `allowedTools:`) means the default pool.
    let workflow_allowed = run.allowed_tools.clone();
    let output_limit = ctx.data::<TaskOutputLimit>().map(|l| l.0);
    let tool_ctx = ToolContext {
        tenant: scope.tenant.clone(),
        project: scope.project.clone(),
        user: run.started_by.clone(),
        workflow_run_id: Some(ctx.run_id),
        workflow_name: Some(run.workflow_name.clone()).filter(|s| !s.is_empty()),
        state: Some(ctx.name.clone()),
        // Per attempt; the tool box adds the call's index.
        idempotency_key: Some(ctx.idempotency_key()),
        engine,
        output_limit,
    };
    let toolbox = ToolBox::new(
        docs,
        tools,
        scope,
        workflow_allowed.clone(),
        &recipe.tools,
        tool_ctx,
    );
    let allowed_tools = workflow_allowed.unwrap_or_default();
    let request = AgentRequest {
        recipe_name: name.to_string(),
        recipe,
        engine_params,
        run: AgentRunInfo {
            run_id: ctx.run_id.to_string(),
            state: ctx.name.clone(),
            attempt: ctx.attempt,
            idempotency_key: ctx.idempotency_key(),
            scope: run.scope.clone(),
            workflow_name: run.workflow_name.clone(),
            started_by: run.started_by.clone(),
            allowed_tools,
        },
        api_key,
        timeout: Some(timeout),
        tools: toolbox,
        output_limit,
        egress: tenant.map(|t| t.egress),
        spent: UsageMeter::default(),
    };
    Ok(Prepared {
        engine: agent,
        request,
        validator,
        timeout,
    })
}

/// Whether the tenant lets the key in `var` be sent to `base_url` (the built-in engines'
/// default endpoint when the recipe names none).
fn key_may_go(tenant: &crate::TenantSettings, var: &str, base_url: Option<&str>) -> bool {
    let Some(hosts) = tenant.agents.key_env.get(var) else {
        return false;
    };
    let Ok(url) = reqwest::Url::parse(base_url.unwrap_or(openai::DEFAULT_BASE_URL)) else {
        return false;
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    crate::egress::EgressPolicy {
        allow_hosts: hosts.clone(),
        allow_private: false,
    }
    .lists(host, port)
}

fn recipe_error(e: DocumentError) -> String {
    match e {
        DocumentError::UnknownWorkflow {
            name,
            project,
            tenant,
            hint,
        } => format!(
            "[MAG-AG001] unknown recipe '{name}': looked for {} and {}{hint}",
            project.display(),
            tenant.display()
        ),
        other => other.to_string(),
    }
}

/// A failure without a reply: `{"error": message}` like every other executor.
fn plain(kind: &str, message: String) -> TaskError {
    TaskError::terminal(message.clone())
        .with_kind(kind)
        .with_output(json!({ "error": message }))
}

/// The §3.1 outcome mapping of a reply.
fn outcome(
    reply: &AgentReply,
    format: ReplyFormat,
    validator: Option<&jsonschema::Validator>,
    prices: Option<Prices>,
    tool_calls: Option<Value>,
) -> Result<Value, TaskError> {
    let usage = reply.usage;
    let cost = cost_of(reply.cost_usd, usage, prices);
    let envelope = |data: Value| envelope(data, usage, cost, tool_calls.clone());
    let fail = |kind: &str, message: String, data: Value| {
        TaskError::terminal(message)
            .with_kind(kind)
            .with_output(envelope(data))
    };
    let last = reply.last_assistant();
    match reply.close_reason {
        CloseReason::Done | CloseReason::AutoClose => {}
        CloseReason::Stale => {
            return Err(fail(
                TaskError::TECHNICAL,
                "[MAG-AG008] the agent went stale".into(),
                last.map_or(Value::Null, Value::from),
            ));
        }
        reason => {
            return Err(fail(
                TaskError::CANCELLED,
                format!("[MAG-AG008] the agent was closed: {reason:?}"),
                last.map_or(Value::Null, Value::from),
            ));
        }
    }
    match format {
        ReplyFormat::LastMessage => Ok(envelope(last.map_or(Value::Null, Value::from))),
        ReplyFormat::Wrapper => {
            let Some(text) = last else {
                return Err(fail(
                    "agent_error",
                    "[MAG-AG009] the agent gave no answer".into(),
                    Value::Null,
                ));
            };
            match jeltz::parse_wrapper(text, validator) {
                jeltz::Wrapper::Success(data) => Ok(envelope(data)),
                jeltz::Wrapper::Invalid {
                    last_invalid,
                    reason,
                } => Err(fail(
                    "agent_error",
                    format!("[MAG-AG009] {reason}"),
                    last_invalid,
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_a_usage_does_not_split_are_priced_at_the_dearer_rate() {
        let prices = Some(Prices {
            input_per_m_tok_usd: 1.0,
            output_per_m_tok_usd: 4.0,
        });
        let usage = |p, c, t| {
            Some(Usage {
                prompt_tokens: p,
                completion_tokens: c,
                total_tokens: t,
            })
        };
        let cost = |u| cost_of(None, u, prices).unwrap();
        assert!((cost(usage(1_000_000, 1_000_000, 2_000_000)) - 5.0).abs() < 1e-9);
        // Only a total: every token as output.
        assert!((cost(usage(0, 0, 1_000_000)) - 4.0).abs() < 1e-9);
        // A total past the split: the rest as output.
        assert!((cost(usage(1_000_000, 0, 2_000_000)) - 5.0).abs() < 1e-9);
        assert_eq!(cost_of(Some(0.5), usage(0, 0, 9), prices), Some(0.5));
    }

    fn reply(reason: CloseReason, text: &str) -> AgentReply {
        AgentReply::new(reason, vec![ChatMessage::new("assistant", text)]).with_usage(Usage {
            prompt_tokens: 1_000,
            completion_tokens: 500,
            total_tokens: 1_500,
        })
    }

    #[test]
    fn close_reasons_map_to_outcomes() {
        let prices = Some(Prices {
            input_per_m_tok_usd: 1.0,
            output_per_m_tok_usd: 2.0,
        });
        let ok = outcome(
            &reply(CloseReason::AutoClose, "hi"),
            ReplyFormat::LastMessage,
            None,
            prices,
            None,
        )
        .unwrap();
        assert_eq!(ok["data"], "hi");
        assert_eq!(ok["usage"]["totalTokens"], 1_500);
        assert!((ok["costUsd"].as_f64().unwrap() - 0.002).abs() < 1e-12);
        let stale = outcome(
            &reply(CloseReason::Stale, "x"),
            ReplyFormat::LastMessage,
            None,
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(stale.kind, "technical_error");
        for r in [
            CloseReason::Stopped,
            CloseReason::Archived,
            CloseReason::UserDelete,
            CloseReason::Abandoned,
        ] {
            let e = outcome(&reply(r, "x"), ReplyFormat::Wrapper, None, None, None).unwrap_err();
            assert_eq!(e.kind, "cancelled", "{r:?}");
        }
        let bad = outcome(
            &reply(CloseReason::Done, "{\"success\": false}"),
            ReplyFormat::Wrapper,
            None,
            None,
            None,
        )
        .unwrap_err();
        assert_eq!(bad.kind, "agent_error");
        assert_eq!(bad.output["data"], json!({"success": false}));
        assert_eq!(bad.output["costUsd"], Value::Null);
    }

    #[test]
    fn the_api_key_does_not_debug_print() {
        assert!(!format!("{:?}", ApiKey::new("sk-secret")).contains("sk-secret"));
    }
}
