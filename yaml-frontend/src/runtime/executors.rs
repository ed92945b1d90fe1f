//! The executor of `condition_task`, registered as an engine task. (The executors of the task
//! types that reach outside live in `magrathea-exec`; see [`super::dispatch`].)

use std::sync::Arc;

use magrathea_core::{RetryPolicy, TaskError, TaskOptions, TaskRegistration};
use serde_json::{Value, json};

use super::RuntimeInner;
use crate::Condition;

fn options() -> TaskOptions {
    TaskOptions {
        retry: RetryPolicy::none(),
        timeout: None,
    }
}

/// The `tenant/project` scope the interpreter put in a task's `$run`.
fn scope_of(input: &Value) -> String {
    input
        .pointer("/$run/scope")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A `technical_error` that retrying cannot fix, carrying its message as output.
fn technical(msg: String) -> TaskError {
    TaskError::terminal(msg.clone())
        .with_kind("technical_error")
        .with_output(json!({ "error": msg }))
}

pub(crate) fn registrations(rt: Arc<RuntimeInner>) -> Vec<TaskRegistration> {
    vec![TaskRegistration::new(
        "condition_task",
        options(),
        move |input, _| {
            let rt = rt.clone();
            async move {
                let scope = scope_of(&input);
                let _lane = rt.exec.enter_lane(&scope).await;
                condition(&input)
            }
        },
    )]
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
