//! Task executors of the synchronous YAML task types, registered as engine tasks.

use std::sync::Arc;

use magrathea_core::{RetryPolicy, TaskContext, TaskError, TaskOptions, TaskRegistration};
use serde_json::{Value, json};

use super::RuntimeInner;
use super::documents::Scope;
use super::shell::run_shell;
use crate::Condition;

fn options() -> TaskOptions {
    TaskOptions {
        retry: RetryPolicy::none(),
        timeout: None,
    }
}

/// The `tenant/project` scope the interpreter put in a task's `$run`.
pub(crate) fn scope_of(input: &Value) -> String {
    input
        .pointer("/$run/scope")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A `technical_error` that retrying cannot fix, carrying its message as output.
pub(crate) fn technical(msg: String) -> TaskError {
    TaskError::terminal(msg.clone())
        .with_kind("technical_error")
        .with_output(json!({ "error": msg }))
}

pub(crate) fn registrations(rt: Arc<RuntimeInner>) -> Vec<TaskRegistration> {
    let shell_rt = rt.clone();
    let cond_rt = rt.clone();
    let mut regs = vec![
        TaskRegistration::new("shell_task", options(), move |input, ctx| {
            let rt = shell_rt.clone();
            async move { shell(&rt, input, ctx).await }
        }),
        TaskRegistration::new("condition_task", options(), move |input, _| {
            let rt = cond_rt.clone();
            async move {
                let scope = scope_of(&input);
                let _lane = rt.lanes.enter(&scope).await;
                condition(&input)
            }
        }),
    ];
    let script_rt = rt.clone();
    regs.push(TaskRegistration::new(
        "script_task",
        options(),
        move |input, ctx| {
            let rt = script_rt.clone();
            async move {
                let scope = scope_of(&input);
                let _lane = rt.lanes.enter(&scope).await;
                super::script::execute(&rt, input, ctx).await
            }
        },
    ));
    let tool_rt = rt.clone();
    regs.push(TaskRegistration::new(
        "tool_task",
        options(),
        move |input, ctx| {
            let rt = tool_rt.clone();
            async move {
                let scope = scope_of(&input);
                let _lane = rt.lanes.enter(&scope).await;
                super::tools::execute(&rt, input, ctx).await
            }
        },
    ));
    let agent_rt = rt;
    regs.push(TaskRegistration::new(
        "agent_task",
        options(),
        move |input, ctx| {
            let rt = agent_rt.clone();
            async move { super::agent::execute(&rt, input, ctx).await }
        },
    ));
    regs
}

async fn shell(rt: &RuntimeInner, input: Value, ctx: TaskContext) -> Result<Value, TaskError> {
    let run = input
        .get("run")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let scope_key = scope_of(&input);
    let Some(dir_name) = input.get("dirName").and_then(Value::as_str) else {
        return Err(technical(
            "[MAG-SH001] shell_task has no `dirName:`; name a workspace directory (e.g. \
             `dirName: workspace`)"
                .into(),
        ));
    };
    let scope = Scope::of_run(&scope_key);
    let Some(dir) = rt.docs.workspace_dir(&scope, dir_name) else {
        return Err(technical(format!(
            "[MAG-SH005] unknown workspace `{dir_name}`: declare it under `workspaces:` in \
             _vance/settings.yaml"
        )));
    };
    let timeout = input
        .get("timeoutSeconds")
        .and_then(Value::as_f64)
        .filter(|s| *s > 0.0)
        .map(crate::saturating_secs);
    let _lane = rt.lanes.enter(&scope_key).await;
    let limit = rt.docs.settings(&scope).shell.max_output_bytes;
    let env = super::shell::environment(&input, &ctx);
    run_shell(&run, dir, timeout, env, limit).await
}

fn condition(input: &Value) -> Result<Value, TaskError> {
    let state = input.get("state").cloned().unwrap_or_else(|| json!({}));
    let params = input.get("params").cloned().unwrap_or_else(|| json!({}));
    let rules = input
        .get("transitions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rule in rules {
        if let Some(target) = rule.get("else").and_then(Value::as_str) {
            return Ok(json!({ "next": target, "matched": "else" }));
        }
        let (Some(expr), Some(target)) = (
            rule.get("if").and_then(Value::as_str),
            rule.get("to").and_then(Value::as_str),
        ) else {
            continue;
        };
        let cond = Condition::parse(expr)
            .map_err(|e| technical(format!("[MAG-YC001] condition `{expr}`: {}", e.message)))?;
        match cond.evaluate(&state, &params) {
            Ok(true) => return Ok(json!({ "next": target, "matched": expr })),
            Ok(false) => continue,
            Err(e) => {
                return Err(technical(format!("[MAG-YC002] condition `{expr}`: {e}")));
            }
        }
    }
    Ok(json!({ "next": null }))
}
