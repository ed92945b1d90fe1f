//! `tool_task`, the tool registry and the built-in tools (reference §3.3, §8.1, §10).
//!
//! A [`Tool`] has a name, a description, a JSON Schema of its parameters and an async
//! `invoke` returning a JSON value or a [`ToolError`]. Every [`Executors`] starts with the
//! built-in tools; hosts add their own with [`Executors::with_tool`]:
//!
//! | tool | params | result |
//! | --- | --- | --- |
//! | `http_request` | `method`, `url`, `headers`, `body`, `timeoutSeconds`, `maxResponseBytes` | `{status, headers, body}` |
//! | `doc_read` | `path` (relative to the project directory) | `{path, content, size}` |
//! | `doc_list` | `path` (default `_vance`), `recursive` | `{path, entries: [{path, kind, size}], truncated}` |
//! | `inbox_read` | `status`: `PENDING` (default) or `ALL`; `limit` (default 100, at most 1000); `cursor` | `{items, count, next}` of the caller's scope, oldest first, at most 1 MiB a page |
//!
//! | `web_search` | `query`, `limit` (default 10; above 50 returns 50, below 1 is refused) | `{query, results: [{title, url, snippet}]}` from the tenant's search service (`webSearch.url`; see `web_search.rs`) |
//!
//! `inbox_read` needs the engine: call [`Executors::attach`] once the engine is built. The YAML
//! front end adds `workflow_start` (`name`, `params` → `{workflowRunId, workflowName}`, §8.1).
//!
//! A `tool_task` ([`ToolInput`]) passes the permission cascade (see [`permission`] and the
//! settings format documented there) and runs a tool of this registry, within its
//! `timeoutSeconds` if it has one. (A YAML `tool_task` naming a `#[task]` registered with the
//! engine runs that task instead; the interpreter does that.) Outcomes: `success` (output =
//! the tool's result), `permission_error` ([`ToolError::PermissionDenied`] or the cascade said
//! no), `timeout` (`[MAG-TL005]`), `technical_error` (anything else: unknown tool, invalid
//! parameters, [`ToolError::Failed`]).

mod docs;
mod engine_tools;
pub(crate) mod http;
pub mod permission;
mod web_search;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use futures::future::BoxFuture;
use magrathea_core::{Engine, RunId, TaskContext, TaskError, TaskOutputLimit};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Executors;
use crate::call::{ExecCall, IntoExecCall, call_of, decode};
use crate::documents::{DocumentSource, Scope};
use crate::lanes::Lanes;
use crate::{positive_secs, saturating_secs, text_field};

pub(crate) use permission::decide;

/// The task name tool steps are journaled under.
pub const TASK: &str = "tool_task";

/// A tool call: the journaled input of a `tool_task`. The workflow's `allowedTools:` come
/// with the call's [`RunContext`](crate::RunContext).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInput {
    /// The tool's name.
    pub tool: String,
    /// Its parameters (`{}` when null).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub params: Value,
    /// The call ends with outcome `timeout` after this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
}

impl ToolInput {
    /// Calls `tool` with `params`.
    pub fn new(tool: impl Into<String>, params: Value) -> Self {
        Self {
            tool: tool.into(),
            params,
            timeout_seconds: None,
        }
    }

    /// Ends with outcome `timeout` after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_seconds = Some(timeout.as_secs_f64());
        self
    }

    /// The input of a YAML state from its resolved spec (`tool`, `params`, `timeoutSeconds`).
    pub fn from_spec(spec: &Value) -> Self {
        Self {
            tool: text_field(spec, "tool"),
            params: spec.get("params").cloned().unwrap_or(Value::Null),
            timeout_seconds: positive_secs(spec.get("timeoutSeconds")),
        }
    }
}

impl IntoExecCall for ToolInput {
    type Output = Value;
    fn into_exec_call(self) -> ExecCall<Value> {
        call_of(TASK, &self)
    }
}

/// A tool callable from a `tool_task` (and, through the registry, by agents).
///
/// Implementations must be cheap to share: the registry holds them as `Arc<dyn Tool>` and
/// calls `invoke` concurrently from many runs.
///
/// ```
/// use futures::future::BoxFuture;
/// use magrathea_exec::{Tool, ToolContext, ToolError};
/// use serde_json::{Value, json};
///
/// struct Echo;
///
/// impl Tool for Echo {
///     fn name(&self) -> &str {
///         "echo"
///     }
///     fn description(&self) -> &str {
///         "Returns its parameters."
///     }
///     fn parameters(&self) -> Value {
///         json!({ "type": "object" })
///     }
///     fn invoke<'a>(
///         &'a self,
///         params: Value,
///         _ctx: &'a ToolContext,
///     ) -> BoxFuture<'a, Result<Value, ToolError>> {
///         Box::pin(async move { Ok(json!({ "echo": params })) })
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    note = "implement `magrathea_exec::Tool` (name, description, parameters, invoke)"
)]
pub trait Tool: Send + Sync {
    /// The name workflows call it by (`tool: <name>`), also the name in `allowedTools:`.
    fn name(&self) -> &str;
    /// What it does, for people and agents choosing a tool.
    fn description(&self) -> &str;
    /// The JSON Schema of its parameters. Before `invoke` the registry converts text to the
    /// declared scalar types (templated values arrive as text) and checks `type`,
    /// `required`, `properties.*.type`, `enum` and `additionalProperties: false`.
    fn parameters(&self) -> Value;
    /// Runs the tool on `params` (an object; `{}` when the state gives none).
    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>>;
}

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The caller may not do this (outcome `permission_error`), e.g. a path outside the
    /// project.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The parameters do not match the tool's schema (outcome `technical_error`).
    #[error("invalid parameters: {0}")]
    InvalidParams(String),
    /// The tool ran and failed: transport errors, timeouts, missing documents (outcome
    /// `technical_error`).
    #[error("{0}")]
    Failed(String),
    /// The service the tool called answered that it failed (an HTTP 5xx): outcome
    /// `technical_error` (reference §4.2: "Tool/API/Shell infra broken (IOException, 5xx,
    /// …)"), with the service's answer kept in the error's output.
    #[error("{message}")]
    ServiceFailed {
        /// What happened.
        message: String,
        /// The answer, as the tool's result would have held it.
        response: Value,
    },
}

impl ToolError {
    /// The `tool_task` outcome this error routes as.
    pub fn outcome(&self) -> &'static str {
        match self {
            ToolError::PermissionDenied(_) => "permission_error",
            _ => "technical_error",
        }
    }
}

/// Who calls a tool and from where: the tool invocation context of §3.3
/// (tenantId/projectId/userId = startedBy; there is no session or process).
#[derive(Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// The tenant of the calling run.
    pub tenant: String,
    /// The project of the calling run.
    pub project: String,
    /// The user the run acts for: its `startedBy`.
    pub user: String,
    /// The calling run, when called from a `tool_task`.
    pub workflow_run_id: Option<RunId>,
    /// The calling run's workflow.
    pub workflow_name: Option<String>,
    /// The calling `tool_task` state.
    pub state: Option<String>,
    /// Stable across re-executions of the same `tool_task` (not across its retries'
    /// differing inputs): tools with external effects use it to deduplicate.
    pub idempotency_key: Option<String>,
    /// The engine, once [`Executors::attach`] was called.
    pub engine: Option<Engine>,
    /// The most bytes of output the calling task may return: the engine's [`TaskOutputLimit`]
    /// when called from a task. A tool that reads data from outside (an HTTP body) stops
    /// reading past it, so an oversized answer never sits whole in memory.
    pub output_limit: Option<usize>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("tenant", &self.tenant)
            .field("project", &self.project)
            .field("user", &self.user)
            .field("workflow_run_id", &self.workflow_run_id)
            .field("workflow_name", &self.workflow_name)
            .field("state", &self.state)
            .field("engine", &self.engine.is_some())
            .field("output_limit", &self.output_limit)
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context for `user` in `scope`, outside any run and without an engine.
    pub fn new(scope: &Scope, user: impl Into<String>) -> Self {
        Self {
            tenant: scope.tenant.clone(),
            project: scope.project.clone(),
            user: user.into(),
            workflow_run_id: None,
            workflow_name: None,
            state: None,
            idempotency_key: None,
            engine: None,
            output_limit: None,
        }
    }

    /// With a limit on the bytes of output the caller accepts (see
    /// [`ToolContext::output_limit`]).
    pub fn with_output_limit(mut self, bytes: usize) -> Self {
        self.output_limit = Some(bytes);
        self
    }

    /// With an engine (for `inbox_read`, `workflow_start` and host tools that need one).
    pub fn with_engine(mut self, engine: Engine) -> Self {
        self.engine = Some(engine);
        self
    }

    /// With an idempotency key.
    pub fn with_idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// The caller's scope.
    pub fn scope(&self) -> Scope {
        Scope::new(&self.tenant, &self.project)
    }

    /// The engine, or the error of a `tool` that needs one and has none.
    pub fn require_engine(&self, tool: &str) -> Result<&Engine, ToolError> {
        self.engine.as_ref().ok_or_else(|| {
            ToolError::Failed(format!(
                "{tool} needs an engine: attach the executors to the engine once it is built \
                 (Executors::attach or YamlRuntime::attach)"
            ))
        })
    }
}

/// The tool registry of the executors: the built-ins plus host tools.
pub(crate) struct Tools {
    registry: RwLock<BTreeMap<String, Arc<dyn Tool>>>,
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tools")
            .field("tools", &self.names())
            .finish()
    }
}

impl Tools {
    pub(crate) fn new(docs: &DocumentSource) -> Self {
        let tools = Self {
            registry: RwLock::new(BTreeMap::new()),
        };
        tools.register(Arc::new(http::HttpRequest::new(docs.clone())));
        tools.register(Arc::new(web_search::WebSearch::new(docs.clone())));
        tools.register(Arc::new(docs::DocRead::new(docs.clone())));
        tools.register(Arc::new(docs::DocList::new(docs.clone())));
        tools.register(Arc::new(engine_tools::InboxRead));
        tools
    }

    /// Adds `tool`, replacing one of the same name.
    pub(crate) fn register(&self, tool: Arc<dyn Tool>) {
        let name = tool.name().to_string();
        self.registry
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, tool);
    }

    pub(crate) fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    pub(crate) fn names(&self) -> Vec<String> {
        self.registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    /// Checks `params` against the tool's schema and invokes it.
    async fn invoke(
        &self,
        tool: &Arc<dyn Tool>,
        params: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let mut params = if params.is_null() { json!({}) } else { params };
        let schema = tool.parameters();
        coerce(&schema, &mut params);
        check_params(&schema, &params).map_err(ToolError::InvalidParams)?;
        tool.invoke(params, ctx).await
    }

    fn unknown(&self, name: &str) -> String {
        let names = self.names();
        let hint = crate::suggest::hint(name, names.iter().map(String::as_str));
        format!(
            "[MAG-TL001] unknown tool `{name}`{hint}: neither a registered task nor a tool; \
             registered tools are {}",
            crate::suggest::list(names.iter().map(String::as_str))
        )
    }
}

/// The tool registry and the permission cascade.
impl Executors {
    /// Adds a host tool, replacing a registered tool (built-in or not) of the same name.
    /// Workflows still need it in their `allowedTools:` (§10).
    pub fn with_tool(self, tool: impl Tool + 'static) -> Self {
        self.register_tool(Arc::new(tool));
        self
    }

    /// Adds a host tool to executors that are already shared.
    pub fn register_tool(&self, tool: Arc<dyn Tool>) {
        self.inner.tools.register(tool);
    }

    /// The names of the registered tools, sorted.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.tools.names()
    }

    /// The registered tool `name`.
    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.inner.tools.get(name)
    }

    /// A context for `user` in `scope` carrying the attached engine, for calling tools
    /// outside a run with [`Executors::invoke_tool`].
    pub fn tool_context(&self, scope: &Scope, user: &str) -> ToolContext {
        let ctx = ToolContext::new(scope, user);
        match self.engine() {
            Some(e) => ctx.with_engine(e),
            None => ctx,
        }
    }

    /// Calls the registered tool `name` directly: schema check and invoke, without the
    /// permission cascade (use [`Executors::tool_permission`] for that).
    pub async fn invoke_tool(
        &self,
        name: &str,
        params: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let tools = &self.inner.tools;
        let Some(tool) = tools.get(name) else {
            return Err(ToolError::Failed(tools.unknown(name)));
        };
        tools.invoke(&tool, params, ctx).await
    }

    /// The permission cascade of §10 for calling `tool` from a workflow of `scope` that
    /// declares `workflow_allowed` (`allowedTools:`, `None` when absent): `Ok(())` or the
    /// reason it is refused.
    pub fn tool_permission(
        &self,
        scope: &Scope,
        workflow_allowed: Option<&[String]>,
        tool: &str,
    ) -> Result<(), String> {
        permission::decide(&self.inner.docs, scope, workflow_allowed, tool)
    }
}

/// A task error with `kind`, carrying its message as output.
fn task_error(kind: &str, msg: String) -> TaskError {
    TaskError::terminal(msg.clone())
        .with_kind(kind)
        .with_output(json!({ "error": msg }))
}

/// Runs a built-in (or host-registered) tool for one `tool_task` attempt.
pub(crate) async fn execute(
    docs: &DocumentSource,
    lanes: &Lanes,
    tools: &Tools,
    engine: Option<Engine>,
    input: Value,
    ctx: TaskContext,
) -> Result<Value, TaskError> {
    let (input, run): (ToolInput, _) = decode(TASK, input)?;
    let name = input.tool;
    let scope = run.scope();
    // The YAML interpreter checked (and journaled) the cascade already; settings may have
    // changed since, and a denial must never run a tool.
    if let Err(reason) = permission::decide(docs, &scope, run.allowed_tools.as_deref(), &name) {
        return Err(task_error(
            "permission_error",
            format!("[MAG-TL002] tool `{name}` is not allowed: {reason}"),
        ));
    }
    let Some(tool) = tools.get(&name) else {
        return Err(task_error("technical_error", tools.unknown(&name)));
    };
    let tool_ctx = ToolContext {
        tenant: scope.tenant.clone(),
        project: scope.project.clone(),
        user: run.started_by.clone(),
        workflow_run_id: Some(ctx.run_id),
        workflow_name: Some(run.workflow_name.clone()).filter(|s| !s.is_empty()),
        state: Some(ctx.name.clone()),
        // Without the attempt: a re-executed tool_task (reclaim) deduplicates.
        idempotency_key: Some(format!("{}-{}-tool", ctx.run_id, ctx.step)),
        engine,
        output_limit: ctx.data::<TaskOutputLimit>().map(|l| l.0),
    };
    let _lane = lanes
        .enter(&run.scope, crate::lanes::Lane::Tasks, &ctx)
        .await?;
    let call = tools.invoke(&tool, input.params, &tool_ctx);
    let result = match input.timeout_seconds {
        None => call.await,
        Some(secs) => match tokio::time::timeout(saturating_secs(secs), call).await {
            Ok(result) => result,
            Err(_) => {
                return Err(task_error(
                    TaskError::TIMEOUT,
                    format!(
                        "[MAG-TL005] tool `{name}` did not finish within its timeout of {secs} s"
                    ),
                ));
            }
        },
    };
    result.map_err(|e| {
        let msg = match &e {
            ToolError::PermissionDenied(m) => {
                format!("[MAG-TL002] tool `{name}` denied: {m}")
            }
            ToolError::InvalidParams(m) => {
                format!("[MAG-TL003] invalid params for tool `{name}`: {m}")
            }
            // A failure with a code of its own (`[MAG-TL006]` no search service) is named by
            // it.
            ToolError::Failed(m) | ToolError::ServiceFailed { message: m, .. }
                if m.starts_with("[MAG-") =>
            {
                format!("{m} (tool `{name}`)")
            }
            ToolError::Failed(m) | ToolError::ServiceFailed { message: m, .. } => {
                format!("[MAG-TL004] tool `{name}` failed: {m}")
            }
        };
        let mut error = task_error(e.outcome(), msg);
        // A service's failed answer stays readable for a `catch:` route: `{error, status, …}`.
        if let ToolError::ServiceFailed {
            response: Value::Object(answer),
            ..
        } = e
            && let Some(out) = error.output.as_object_mut()
        {
            out.extend(answer);
        }
        error
    })
}

/// Converts text to the type the schema declares, recursively through `properties`:
/// `${…}` placeholders resolve to text, so `timeoutSeconds: "${params.t}"` arrives as
/// `"2.5"`. Text that does not parse as the declared type is left for [`check_params`] to
/// report.
pub(crate) fn coerce(schema: &Value, value: &mut Value) {
    let declared = |t: &str| match schema.get("type") {
        Some(Value::String(s)) => s == t,
        Some(Value::Array(a)) => a.iter().any(|v| v == t),
        _ => false,
    };
    if let Value::String(text) = &*value
        && !declared("string")
    {
        let t = text.trim();
        let parsed: Option<Value> = if declared("integer") {
            t.parse::<i64>().ok().map(Value::from)
        } else if declared("number") {
            t.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
        } else if declared("boolean") {
            t.parse::<bool>().ok().map(Value::Bool)
        } else if declared("object") || declared("array") {
            serde_json::from_str::<Value>(t)
                .ok()
                .filter(|v| (v.is_object() && declared("object")) || v.is_array())
        } else {
            None
        };
        if let Some(v) = parsed {
            *value = v;
        }
    }
    if let (Value::Object(map), Some(props)) =
        (value, schema.get("properties").and_then(Value::as_object))
    {
        for (k, v) in map.iter_mut() {
            if let Some(sub) = props.get(k) {
                coerce(sub, v);
            }
        }
    }
}

/// Checks `value` against the subset of JSON Schema tools use: `type`, `required`,
/// `properties` (recursively), `enum` and `additionalProperties: false`.
pub(crate) fn check_params(schema: &Value, value: &Value) -> Result<(), String> {
    check_at(schema, value, "params")
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn check_at(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let Some(schema) = schema.as_object() else {
        return Ok(());
    };
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| type_matches(t, value)) {
        return Err(format!(
            "`{at}` must be {}, got {}",
            types.join(" or "),
            kind_of(value)
        ));
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        let shown: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!(
            "`{at}` must be one of {}, got {value}",
            shown.join(", ")
        ));
    }
    let Some(obj) = value.as_object() else {
        return Ok(());
    };
    let props = schema.get("properties").and_then(Value::as_object);
    if let Some(required) = schema.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if obj.get(key).is_none_or(Value::is_null) {
                return Err(format!("`{at}.{key}` is required"));
            }
        }
    }
    for (key, v) in obj {
        match props.and_then(|p| p.get(key)) {
            Some(sub) if !v.is_null() => check_at(sub, v, &format!("{at}.{key}"))?,
            Some(_) => {}
            None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                let known = props.map(|p| p.keys().map(String::as_str).collect::<Vec<_>>());
                let known = known.unwrap_or_default();
                let hint = crate::suggest::hint(key, known.iter().copied());
                return Err(format!(
                    "unknown parameter `{at}.{key}`{hint}; known: {}",
                    crate::suggest::list(known.iter().copied())
                ));
            }
            None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_are_checked_against_the_schema_subset() {
        let schema = json!({
            "type": "object",
            "required": ["url"],
            "properties": {
                "url": { "type": "string" },
                "method": { "type": "string", "enum": ["GET", "POST"] },
                "n": { "type": "integer" },
                "headers": { "type": "object", "additionalProperties": { "type": "string" } }
            },
            "additionalProperties": false
        });
        assert!(check_params(&schema, &json!({"url": "x", "n": 3})).is_ok());
        assert!(check_params(&schema, &json!({"url": "x", "method": null})).is_ok());
        let e = check_params(&schema, &json!({})).unwrap_err();
        assert!(e.contains("`params.url` is required"), "{e}");
        let e = check_params(&schema, &json!({"url": 3})).unwrap_err();
        assert!(e.contains("must be string, got number"), "{e}");
        let e = check_params(&schema, &json!({"url": "x", "method": "PUT"})).unwrap_err();
        assert!(e.contains("one of"), "{e}");
        let e = check_params(&schema, &json!({"url": "x", "metod": "GET"})).unwrap_err();
        assert!(e.contains("did you mean 'method'"), "{e}");
        let e = check_params(&schema, &json!({"url": "x", "n": 1.5})).unwrap_err();
        assert!(e.contains("integer"), "{e}");
        let e = check_params(&schema, &json!([1])).unwrap_err();
        assert!(e.contains("must be object"), "{e}");
    }

    #[test]
    fn templated_text_is_converted_to_the_declared_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "n": { "type": "integer" },
                "t": { "type": "number" },
                "b": { "type": "boolean" },
                "o": { "type": "object" },
                "s": { "type": "string" },
                "any": {}
            }
        });
        let mut v = json!({
            "n": "42", "t": " 2.5", "b": "true", "o": "{\"a\": 1}", "s": "7", "any": "8"
        });
        coerce(&schema, &mut v);
        assert_eq!(
            v,
            json!({"n": 42, "t": 2.5, "b": true, "o": {"a": 1}, "s": "7", "any": "8"})
        );
        let mut bad = json!({ "n": "four" });
        coerce(&schema, &mut bad);
        assert!(check_params(&schema, &bad).unwrap_err().contains("integer"));
    }
}
