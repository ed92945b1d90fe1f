//! Dispatch of the task types that run outside the workflow (`shell_task`, `script_task`,
//! `tool_task`, `agent_task`): what a state hands its executor, and how the executor's result
//! becomes the state's [`Completion`].

use std::sync::Arc;

use magrathea_core::{RetryPolicy, StartRecord, TaskCall, TaskError, TaskOptions, WorkflowContext};
use serde_json::{Map, Value, json};

use super::RuntimeInner;
use super::documents::Scope;
use crate::ast::TaskType;

/// What a state's task produced.
pub(crate) struct Completion {
    pub(crate) outcome: String,
    pub(crate) output: Value,
    pub(crate) next: Option<String>,
    /// What the task cost (agent tasks), for `bounds.maxTotalCostUsd`.
    pub(crate) cost_usd: f64,
}

impl Completion {
    pub(crate) fn of(outcome: &str, output: Value) -> Self {
        Self {
            outcome: outcome.into(),
            output,
            next: None,
            cost_usd: 0.0,
        }
    }
    pub(crate) fn from_task(result: Result<Value, TaskError>) -> Self {
        match result {
            Ok(v) => Self::of("success", v),
            Err(e) => {
                let output = if e.output.is_null() {
                    json!({ "error": e.message })
                } else {
                    e.output
                };
                Self::of(&e.kind, output)
            }
        }
    }
}

/// A string field of a resolved spec, empty when absent (the loader made sure it is there).
pub(crate) fn text_field(spec: &Value, key: &str) -> String {
    spec.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub(crate) fn no_retry() -> Option<TaskOptions> {
    Some(TaskOptions {
        retry: RetryPolicy::none(),
        timeout: None,
    })
}

/// What every state's task may need to know about its run.
pub(crate) struct RunInfo<'a> {
    pub(crate) start: &'a StartRecord,
    pub(crate) allowed_tools: Option<&'a [String]>,
    pub(crate) params: &'a Value,
    pub(crate) vars: &'a Map<String, Value>,
}

impl RunInfo<'_> {
    /// The `$run` object added to the input of tasks that reach outside: executors read the
    /// scope, the run's parameters and variables, and the workflow's allowed tools from it.
    fn describe(&self) -> Value {
        json!({
            "scope": self.start.scope,
            "workflowName": self.start.workflow_name,
            "startedBy": self.start.started_by,
            "params": self.params,
            "vars": Value::Object(self.vars.clone()),
            "allowedTools": self.allowed_tools,
        })
    }

    fn with_run(&self, spec: &Value) -> Value {
        let mut input = spec.clone();
        if let Value::Object(m) = &mut input {
            m.insert("$run".into(), self.describe());
        }
        input
    }
}

/// Runs the executor of `task_type` (one of the four external types) for state `state` with
/// its resolved `spec`.
pub(crate) async fn external(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    run: &RunInfo<'_>,
    state: &str,
    task_type: TaskType,
    spec: &Value,
) -> Completion {
    let call = |task: &str, input: Value| {
        ctx.task_with(TaskCall {
            task: task.into(),
            name: Some(state.to_string()),
            input,
            options: no_retry(),
            registration: None,
        })
    };
    match task_type {
        TaskType::ToolTask => tool(ctx, rt, run, state, spec).await,
        TaskType::AgentTask => {
            let mut done = Completion::from_task(call("agent_task", run.with_run(spec)).await);
            // The agent executor reports `{data, usage, costUsd}`; `data` is the task output.
            if let Some(obj) = done.output.as_object()
                && obj.contains_key("data")
            {
                done.cost_usd = obj.get("costUsd").and_then(Value::as_f64).unwrap_or(0.0);
                done.output = obj.get("data").cloned().unwrap_or(Value::Null);
            }
            done
        }
        other => Completion::from_task(call(other.as_str(), run.with_run(spec)).await),
    }
}

/// `tool_task`: the permission cascade (§10), journaled as a side effect because it reads the
/// tenant's and project's settings; then a registered `#[task]` of that name, or a tool of the
/// runtime's registry.
async fn tool(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    run: &RunInfo<'_>,
    state: &str,
    spec: &Value,
) -> Completion {
    let name = text_field(spec, "tool");
    let scope = Scope::of_run(run.start.scope.as_str());
    let allowed = run.allowed_tools;
    let decision = ctx.side_effect("tool_permission", || {
        super::tools::permission(rt, &scope, allowed, &name)
    });
    if decision.get("allowed").and_then(Value::as_bool) != Some(true) {
        let reason = decision
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("denied");
        return Completion::of(
            "permission_error",
            json!({ "error": format!("[MAG-TL002] tool `{name}` is not allowed: {reason}") }),
        );
    }
    let call = |task: &str, input: Value| {
        ctx.task_with(TaskCall {
            task: task.into(),
            name: Some(state.to_string()),
            input,
            options: no_retry(),
            registration: None,
        })
    };
    if ctx.is_task_registered(&name) {
        let input = spec.get("params").cloned().unwrap_or(Value::Null);
        let input = if input.is_null() { json!({}) } else { input };
        return Completion::from_task(call(&name, input).await);
    }
    Completion::from_task(call("tool_task", run.with_run(spec)).await)
}
