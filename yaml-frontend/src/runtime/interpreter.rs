//! The StateGraph interpreter: a deterministic workflow on the replay core.
//!
//! Each state is entered with a `StateEnteredRecord`; its spec is resolved (`${…}`) right
//! before its task runs; the task's result, the `storeAs` variable and the transition follow
//! the order of the reference's `handleCompletion` (§4.3): result, variable, terminal special
//! case, retry check (retry preempts routing), bounds check, then the resolver (§4.1:
//! `nextStateOverride`, `on:`, `catch:`, else fail with `no transition for outcome '<x>'`).

use std::sync::Arc;

use magrathea_core::{
    AnswerOutcome, ChildRequest, GateKind, GateOutcome, GateSpec, RunStatus, StartRecord, TaskCall,
    WorkflowContext, WorkflowError,
};
use serde_json::{Map, Value, json};

use super::RuntimeInner;
use super::dispatch::{self, Completion, RunInfo, no_retry, text_field, timeout_of};
use super::documents::Scope;
use crate::ast::{StateSpec, TaskSpec, TaskType, TerminalOutcome, WorkflowDoc};
use crate::error_kind::ErrorKind;
use crate::{LoadOptions, load_workflow, parse_duration, resolve_value, validate_params};

pub(crate) async fn interpret(
    ctx: WorkflowContext,
    doc: WorkflowDoc,
    start: StartRecord,
    rt: Arc<RuntimeInner>,
) -> Result<Value, WorkflowError> {
    let params = start.params.clone();
    let mut vars = Map::new();
    let bounds = doc.bounds.unwrap_or_default();
    let started_ms = bounds.max_wallclock_seconds.map(|_| ctx.now());
    let mut spawns: u64 = 0;
    let mut cost_usd = 0.0f64;
    let mut current = doc.start.value.clone();
    loop {
        let Some(state) = doc.states.get(&current) else {
            return Err(WorkflowError::failed(format!("unknown state '{current}'")));
        };
        ctx.enter_state(&current);
        let mut retries = 0u32;
        let done = loop {
            if state.task_type == TaskType::Terminal {
                let spec = resolve_value(&state.raw, &params, &Value::Object(vars.clone()));
                return terminal(&ctx, state, &spec);
            }
            if let Some(max) = bounds.max_task_spawns
                && spawns >= max
            {
                return Err(WorkflowError::failed(format!(
                    "bounds exhausted: maxTaskSpawns {max} reached before state '{current}'"
                )));
            }
            spawns += 1;
            let spec = resolve_value(&state.raw, &params, &Value::Object(vars.clone()));
            let run = RunInfo {
                start: &start,
                allowed_tools: doc.allowed_tools.as_deref(),
                params: &params,
                vars: &vars,
            };
            let done = execute(&ctx, &rt, &run, state, &spec).await;
            cost_usd += done.cost_usd;
            if let Some(key) = &state.store_as
                && !done.output.is_null()
            {
                vars.insert(key.clone(), done.output.clone());
                ctx.set_var(key, done.output.clone());
            }
            if let Some(retry) = &state.retry {
                let retried_kind =
                    ErrorKind::parse(&done.outcome).is_some_and(|k| retry.on.contains(&k));
                if retried_kind && retries + 1 < retry.max_attempts && ctx.cancellation().is_none()
                {
                    retries += 1;
                    if retry.backoff_seconds > 0.0 {
                        let backoff = crate::saturating_secs(retry.backoff_seconds);
                        if ctx.sleep(backoff).await.is_err() {
                            break Completion::of("cancelled", Value::Null);
                        }
                    }
                    continue;
                }
            }
            break done;
        };
        if let Some(max) = bounds.max_total_cost_usd.filter(|max| cost_usd > *max) {
            return Err(WorkflowError::failed(format!(
                "bounds exhausted: maxTotalCostUsd {max} exceeded (spent {cost_usd:.4} USD)"
            )));
        }
        if let (Some(max), Some(t0)) = (bounds.max_wallclock_seconds, started_ms) {
            let elapsed = ctx.now().saturating_sub(t0) as f64 / 1000.0;
            if elapsed > max {
                return Err(WorkflowError::failed(format!(
                    "bounds exhausted: maxWallclockSeconds {max} exceeded ({elapsed:.1} s)"
                )));
            }
        }
        match resolve(state, &done) {
            Some(next) => current = next,
            None => {
                if done.outcome == "cancelled"
                    && let Some(reason) = ctx.cancellation()
                {
                    return Err(WorkflowError::cancelled(reason));
                }
                return Err(WorkflowError::failed(format!(
                    "no transition for outcome '{}'",
                    done.outcome
                )));
            }
        }
    }
}

/// The resolver of reference §4.1.
fn resolve(state: &StateSpec, done: &Completion) -> Option<String> {
    if let Some(next) = &done.next {
        return Some(next.clone());
    }
    if let Some(t) = state.on.iter().find(|t| t.outcome == done.outcome) {
        return Some(t.target.clone());
    }
    let kind = ErrorKind::parse(&done.outcome).or_else(|| {
        (done.outcome.eq_ignore_ascii_case("rejected")).then_some(ErrorKind::HumanRejected)
    })?;
    state
        .catch
        .iter()
        .find(|c| c.kind == kind)
        .map(|c| c.target.clone())
}

fn terminal(
    ctx: &WorkflowContext,
    state: &StateSpec,
    spec: &Value,
) -> Result<Value, WorkflowError> {
    ctx.set_result_state(&state.name);
    let result = spec.get("result").cloned().unwrap_or(Value::Null);
    let outcome = match &state.task {
        TaskSpec::Terminal { outcome, .. } => *outcome,
        _ => TerminalOutcome::Success,
    };
    match outcome {
        TerminalOutcome::Success => Ok(result),
        _ => {
            let err = WorkflowError::failed(format!(
                "terminal state '{}' reached with outcome failure",
                state.name
            ));
            Err(if result.is_null() {
                err
            } else {
                err.with_result(result)
            })
        }
    }
}

async fn execute(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    run: &RunInfo<'_>,
    state: &StateSpec,
    spec: &Value,
) -> Completion {
    let (start, params, vars) = (run.start, run.params, run.vars);
    let call = |task: &str, input: Value| {
        ctx.task_with(TaskCall {
            task: task.into(),
            name: Some(state.name.clone()),
            input,
            options: no_retry(),
            registration: None,
        })
    };
    match state.task_type {
        TaskType::ShellTask | TaskType::ScriptTask | TaskType::ToolTask | TaskType::AgentTask => {
            dispatch::external(ctx, rt, run, &state.name, state.task_type, spec).await
        }
        TaskType::ConditionTask => {
            let input = json!({
                "transitions": spec.get("transitions").cloned().unwrap_or(Value::Null),
                "state": Value::Object(vars.clone()),
                "params": params,
                "$run": { "scope": start.scope },
            });
            let mut done = Completion::from_task(call("condition_task", input).await);
            if done.outcome == "success" {
                done.next = done
                    .output
                    .get("next")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
            done
        }
        TaskType::TimerTask => {
            let text = spec
                .get("duration")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match parse_duration(text) {
                Ok(d) => match ctx.sleep(d).await {
                    Ok(()) => Completion::of("fired", Value::Null),
                    Err(e) => Completion::of(&e.kind, Value::Null),
                },
                Err(e) => Completion::of("technical_error", json!({ "error": e.to_string() })),
            }
        }
        TaskType::GateTask => gate(ctx, start, state, spec).await,
        TaskType::WorkflowTask => sub_workflow(ctx, rt, start, state, spec).await,
        TaskType::Terminal => Completion::of("success", Value::Null),
    }
}

fn gate_spec(start: &StartRecord, state: &StateSpec, spec: &Value) -> GateSpec {
    let inbox = spec.get("inbox").cloned().unwrap_or(Value::Null);
    let text = |k: &str| inbox.get(k).and_then(Value::as_str).map(str::to_string);
    let list = |k: &str| -> Vec<String> {
        inbox
            .get(k)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let kind = match text("kind")
        .unwrap_or_default()
        .to_ascii_uppercase()
        .as_str()
    {
        "DECISION" => GateKind::Decision,
        "FEEDBACK" => GateKind::Feedback,
        _ => GateKind::Approval,
    };
    let assigned_to = text("assignedTo")
        .filter(|s| !s.is_empty())
        .or_else(|| Some(start.started_by.clone()).filter(|s| !s.is_empty()))
        .unwrap_or_else(|| "@system".into());
    GateSpec {
        kind,
        title: text("title").unwrap_or_else(|| state.name.clone()),
        body: text("body").unwrap_or_default(),
        options: list("options"),
        assigned_to,
        criticality: text("criticality")
            .unwrap_or_else(|| "NORMAL".into())
            .to_ascii_uppercase(),
        tags: list("tags"),
        timeout_ms: timeout_of(spec).map(|d| d.as_millis() as u64),
        meta: json!({
            "kind": "workflow.gate",
            "workflowName": start.workflow_name,
            "workflowState": state.name,
        }),
    }
}

async fn gate(
    ctx: &WorkflowContext,
    start: &StartRecord,
    state: &StateSpec,
    spec: &Value,
) -> Completion {
    let gate = gate_spec(start, state, spec);
    let kind = gate.kind;
    match ctx.gate(gate).await {
        GateOutcome::TimedOut => Completion::of("timeout", Value::Null),
        GateOutcome::Cancelled(_) => Completion::of("cancelled", Value::Null),
        GateOutcome::Answered(answer) => {
            let mut output = match &answer.value {
                Value::Object(m) => m.clone(),
                Value::Null => Map::new(),
                other => Map::from_iter([("value".to_string(), other.clone())]),
            };
            if let Some(c) = &answer.comment {
                output.insert("comment".into(), Value::String(c.clone()));
            }
            if !answer.answered_by.is_empty() {
                output.insert(
                    "answeredBy".into(),
                    Value::String(answer.answered_by.clone()),
                );
            }
            let outcome = match answer.outcome {
                AnswerOutcome::InsufficientInfo => "insufficient_info".to_string(),
                AnswerOutcome::Undecidable => "undecidable".to_string(),
                AnswerOutcome::Decided => match kind {
                    GateKind::Approval => {
                        let approved = answer.value.get("approved").and_then(Value::as_bool);
                        if approved == Some(true) {
                            "approved"
                        } else {
                            "rejected"
                        }
                        .to_string()
                    }
                    GateKind::Decision => answer
                        .value
                        .get("chosen")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    GateKind::Feedback => "success".to_string(),
                },
            };
            output.insert("outcome".into(), Value::String(outcome.clone()));
            Completion::of(&outcome, Value::Object(output))
        }
    }
}

async fn sub_workflow(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    start: &StartRecord,
    state: &StateSpec,
    spec: &Value,
) -> Completion {
    let name = text_field(spec, "workflow");
    let scope = Scope::of_run(start.scope.as_str());
    // The sub-workflow's document is read once and journaled, so replay starts (or finds)
    // the same child on the same definition.
    let given = spec
        .get("params")
        .cloned()
        .filter(|v| !v.is_null())
        .unwrap_or_else(|| json!({}));
    let mut request = match frozen_child(ctx, rt, &scope, &name, given) {
        Ok(r) => r,
        Err(error) => return Completion::of("failure", json!({ "error": error })),
    };
    request.parent_state = Some(state.name.clone());
    let parent = ctx.clone();
    let child = ctx.child(request).map(move |o| {
        let ok = o.status == RunStatus::Done;
        let output = if ok {
            o.result
        } else {
            json!({ "workflowRunId": o.run_id, "status": o.status, "reason": o.reason, "result": o.result })
        };
        let outcome = match o.status {
            RunStatus::Done => "success",
            _ if parent.cancellation().is_some() => "cancelled",
            _ => "failure",
        };
        Completion::of(outcome, output)
    });
    match timeout_of(spec) {
        None => child.await,
        Some(t) => {
            let timer = ctx.sleep(t).map(|r| match r {
                Ok(()) => Completion::of("timeout", Value::Null),
                Err(e) => Completion::of(&e.kind, Value::Null),
            });
            ctx.select(vec![child, timer]).await.1
        }
    }
}

/// A child request for the YAML workflow `name` of `scope`: the document is read by the
/// cascade once and journaled (a side effect), so replay starts — or finds — the same child on
/// the same frozen definition; its parameters are validated and defaulted.
pub(crate) fn frozen_child(
    ctx: &WorkflowContext,
    rt: &RuntimeInner,
    scope: &Scope,
    name: &str,
    params: Value,
) -> Result<ChildRequest, String> {
    let found = ctx.side_effect("workflow_document", || {
        match rt.docs.workflow(scope, name) {
            Ok((path, text)) => json!({ "path": path.display().to_string(), "definition": text }),
            Err(e) => json!({ "error": e.to_string() }),
        }
    });
    if let Some(err) = found.get("error").and_then(Value::as_str) {
        return Err(err.to_string());
    }
    let text = |k: &str| {
        found
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let (path, definition) = (text("path"), text("definition"));
    let loaded = load_workflow(&path, &definition, &LoadOptions::default()).map_err(|diags| {
        diags
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let input = validate_params(&loaded.doc.parameters, &params).map_err(|e| e.to_string())?;
    Ok(ChildRequest {
        workflow: name.to_string(),
        frontend: "yaml".into(),
        definition: Some(definition),
        version: loaded.doc.version.clone().unwrap_or_default(),
        input,
        parent_state: None,
        scope: Some(scope.key().into()),
        max_depth: rt.docs.settings(scope).sub_runs.max_depth,
    })
}

/// Why a workflow document cannot run: the frozen body no longer loads.
pub(crate) fn load_frozen(start: &StartRecord) -> Result<WorkflowDoc, String> {
    let text = start.definition.as_deref().unwrap_or_default();
    let label = format!("{}.yaml (frozen)", start.workflow_name);
    load_workflow(&label, text, &LoadOptions::default())
        .map(|l| l.doc)
        .map_err(|diags| {
            let msgs: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
            format!(
                "[MAG-YR001] the run's frozen definition does not load: {}",
                msgs.join("; ")
            )
        })
}
