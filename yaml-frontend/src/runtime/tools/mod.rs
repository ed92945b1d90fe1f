//! `tool_task`, the tool registry and the built-in tools (reference §3.3, §8.1, §10).
//!
//! A [`Tool`] has a name, a description, a JSON Schema of its parameters and an async
//! `invoke` returning a JSON value or a [`ToolError`]. Every [`YamlRuntime`] starts with the
//! built-in tools; hosts add their own with [`YamlRuntime::with_tool`]:
//!
//! | tool | params | result |
//! | --- | --- | --- |
//! | `http_request` | `method`, `url`, `headers`, `body`, `timeoutSeconds`, `maxResponseBytes` | `{status, headers, body}` |
//! | `doc_read` | `path` (relative to the project directory) | `{path, content, size}` |
//! | `doc_list` | `path` (default `_vance`), `recursive` | `{path, entries: [{path, kind, size}], truncated}` |
//! | `inbox_read` | `status`: `PENDING` (default) or `ALL` | `{items, count}` of the caller's scope |
//! | `workflow_start` | `name`, `params` | `{workflowRunId, workflowName}` (§8.1) |
//!
//! `inbox_read` and `workflow_start` need the engine: call [`YamlRuntime::attach`] once the
//! engine is built. `web_search` is in the default pool of §10 but has no built-in
//! implementation; a host registers one with [`YamlRuntime::with_tool`].
//!
//! A `tool_task` first passes the permission cascade (see [`permission`] and the settings
//! format documented there), then runs a `#[task]` of that name registered with the engine
//! (the interpreter does that) or a tool of this registry (see [`execute`]). Outcomes:
//! `success` (output = the tool's result), `permission_error` ([`ToolError::PermissionDenied`]
//! or the cascade said no), `technical_error` (anything else: unknown tool, invalid
//! parameters, [`ToolError::Failed`]).

mod docs;
mod engine_tools;
mod http;
mod permission;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock, RwLock};

use futures::future::BoxFuture;
use magrathea_core::{Engine, RunId, TaskContext, TaskError};
use serde_json::{Value, json};

use super::documents::Scope;
use super::{DocumentSource, RuntimeInner, YamlRuntime};

pub(crate) use permission::{decide, permission};

/// A tool callable from a `tool_task` (and, through the registry, by agents).
///
/// Implementations must be cheap to share: the registry holds them as `Arc<dyn Tool>` and
/// calls `invoke` concurrently from many runs.
///
/// ```
/// use futures::future::BoxFuture;
/// use magrathea_yaml::runtime::{Tool, ToolContext, ToolError};
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
    note = "implement `magrathea_yaml::runtime::Tool` (name, description, parameters, invoke)"
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
    /// The engine, once [`YamlRuntime::attach`] was called.
    pub engine: Option<Engine>,
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
        }
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
}

/// The tool registry of a runtime: the built-ins plus host tools, and the engine handle the
/// engine-backed tools use.
pub(crate) struct Tools {
    registry: RwLock<BTreeMap<String, Arc<dyn Tool>>>,
    /// Set by [`YamlRuntime::attach`]. The engine holds the runtime's task executors and
    /// the runtime holds the engine: both live as long as the process uses them.
    pub(crate) engine: OnceLock<Engine>,
}

impl fmt::Debug for Tools {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tools")
            .field("tools", &self.names())
            .field("engine", &self.engine.get().is_some())
            .finish()
    }
}

impl Tools {
    pub(crate) fn new(docs: &DocumentSource) -> Self {
        let tools = Self {
            registry: RwLock::new(BTreeMap::new()),
            engine: OnceLock::new(),
        };
        tools.register(Arc::new(http::HttpRequest::new()));
        tools.register(Arc::new(docs::DocRead::new(docs.clone())));
        tools.register(Arc::new(docs::DocList::new(docs.clone())));
        tools.register(Arc::new(engine_tools::InboxRead));
        tools.register(Arc::new(engine_tools::WorkflowStart::new(docs.clone())));
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
}

/// Builder and tool methods of the runtime (kept next to the registry).
impl YamlRuntime {
    /// Adds a host tool, replacing a registered tool (built-in or not) of the same name.
    /// Workflows still need it in their `allowedTools:` (§10).
    pub fn with_tool(self, tool: impl Tool + 'static) -> Self {
        self.register_tool(Arc::new(tool));
        self
    }

    /// Adds a host tool to a runtime that is already shared.
    pub fn register_tool(&self, tool: Arc<dyn Tool>) {
        self.inner.tools.register(tool);
    }

    /// Gives the engine-backed tools (`inbox_read`, `workflow_start`) the engine. Call it
    /// once the engine built from [`YamlRuntime::install`] exists; later calls are ignored.
    pub fn attach(&self, engine: &Engine) {
        let _ = self.inner.tools.engine.set(engine.clone());
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
    /// outside a run with [`YamlRuntime::invoke_tool`].
    pub fn tool_context(&self, scope: &Scope, user: &str) -> ToolContext {
        let ctx = ToolContext::new(scope, user);
        match self.inner.tools.engine.get() {
            Some(e) => ctx.with_engine(e.clone()),
            None => ctx,
        }
    }

    /// Calls the registered tool `name` directly: schema check and invoke, without the
    /// permission cascade (use [`YamlRuntime::tool_permission`] for that).
    pub async fn invoke_tool(
        &self,
        name: &str,
        params: Value,
        ctx: &ToolContext,
    ) -> Result<Value, ToolError> {
        let Some(tool) = self.inner.tools.get(name) else {
            return Err(ToolError::Failed(unknown_tool(&self.inner, name)));
        };
        self.inner.tools.invoke(&tool, params, ctx).await
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

fn unknown_tool(rt: &RuntimeInner, name: &str) -> String {
    let names = rt.tools.names();
    let hint = crate::suggest::hint(name, names.iter().map(String::as_str));
    format!(
        "[MAG-TL001] unknown tool `{name}`{hint}: neither a registered task nor a tool; \
         registered tools are {}",
        crate::suggest::list(names.iter().map(String::as_str))
    )
}

/// A task error with `kind`, carrying its message as output.
fn task_error(kind: &str, msg: String) -> TaskError {
    TaskError::terminal(msg.clone())
        .with_kind(kind)
        .with_output(json!({ "error": msg }))
}

/// Runs a built-in (or host-registered) tool for one `tool_task` attempt. `input` is the
/// resolved state spec (`tool`, `params`) plus `$run` (`scope`, `workflowName`,
/// `startedBy`, `allowedTools`, …).
pub(crate) async fn execute(
    rt: &RuntimeInner,
    input: Value,
    ctx: TaskContext,
) -> Result<Value, TaskError> {
    let name = input
        .get("tool")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let run = input.get("$run").cloned().unwrap_or(Value::Null);
    let text = |k: &str| run.get(k).and_then(Value::as_str).unwrap_or_default();
    let scope = Scope::of_run(text("scope"));
    let allowed: Option<Vec<String>> = run.get("allowedTools").and_then(|v| {
        v.as_array().map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
    });
    // The interpreter checked (and journaled) the cascade already; settings may have
    // changed since, and a denial must never run a tool.
    if let Err(reason) = permission::decide(&rt.docs, &scope, allowed.as_deref(), &name) {
        return Err(task_error(
            "permission_error",
            format!("[MAG-TL002] tool `{name}` is not allowed: {reason}"),
        ));
    }
    let Some(tool) = rt.tools.get(&name) else {
        return Err(task_error("technical_error", unknown_tool(rt, &name)));
    };
    let tool_ctx = ToolContext {
        tenant: scope.tenant.clone(),
        project: scope.project.clone(),
        user: text("startedBy").to_string(),
        workflow_run_id: Some(ctx.run_id),
        workflow_name: Some(text("workflowName").to_string()).filter(|s| !s.is_empty()),
        state: Some(ctx.name.clone()),
        // Without the attempt: a re-executed tool_task (reclaim) deduplicates.
        idempotency_key: Some(format!("{}-{}-tool", ctx.run_id, ctx.step)),
        engine: rt.tools.engine.get().cloned(),
    };
    let params = input.get("params").cloned().unwrap_or(Value::Null);
    rt.tools
        .invoke(&tool, params, &tool_ctx)
        .await
        .map_err(|e| {
            let msg = match &e {
                ToolError::PermissionDenied(m) => {
                    format!("[MAG-TL002] tool `{name}` denied: {m}")
                }
                ToolError::InvalidParams(m) => {
                    format!("[MAG-TL003] invalid params for tool `{name}`: {m}")
                }
                ToolError::Failed(m) => format!("[MAG-TL004] tool `{name}` failed: {m}"),
            };
            task_error(e.outcome(), msg)
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
