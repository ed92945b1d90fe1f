//! `workflow_task` (reference §3.7): a sub-run of a YAML workflow of the run's scope, started
//! from its document as the parent first read it (journaled), awaited to its terminal.
//!
//! The state is a held task step (task `workflow_task`, reference §5: every task writes a
//! `TaskStartedRecord` and a `TaskResultRecord`): the step's start, the sub-run's own records
//! (the document read, the child's start and end, a timeout's timer), then the step's result
//! with the state's outcome (`success`, `failure`, `timeout`, `cancelled`) and output. Runs
//! journaled before the state was a task step replay on the path they took.

use std::sync::Arc;

use magrathea_core::{ChildRequest, RunStatus, StartRecord, WorkflowContext};
use serde_json::{Value, json};

use super::default_bounds;
use super::dispatch::{Completion, FailedStep};
use super::documents::Scope;
use super::interpreter::Run;
use super::{RuntimeInner, WORKFLOW_TASK};
use crate::plan::PlanState;
use crate::validate_params;

/// Runs a `workflow_task` state once, as a held task step with input `{workflow, params}`.
pub(super) async fn step(
    run: &Run<'_>,
    rt: &Arc<RuntimeInner>,
    state: &PlanState,
    attempt: u32,
    name: &str,
    params: Value,
) -> Completion {
    let params = if params.is_null() { json!({}) } else { params };
    let input = json!({ "workflow": name, "params": &params });
    let held = run
        .ctx
        .held_task(WORKFLOW_TASK, &state.name, input, attempt);
    let (done, error) =
        sub_workflow(run.ctx, rt, run.start, state, name, params, held.is_some()).await;
    if let Some(held) = held {
        held.finish(&done.outcome, done.output.clone(), error);
    }
    done
}

/// The sub-run of `name` with the resolved (typed) `params` (an object), and the error message of its
/// task step's result when it failed. `held`: the state is a held task step (runs journaled
/// since), whose result says it failed; runs journaled before keep their own path.
async fn sub_workflow(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    start: &StartRecord,
    state: &PlanState,
    name: &str,
    params: Value,
    held: bool,
) -> (Completion, Option<String>) {
    let scope = Scope::of_run(start.scope.as_str());
    // The sub-workflow's document is read once and journaled, so replay starts (or finds)
    // the same child on the same definition.
    let mut request = match frozen_child(ctx, rt, &scope, name, params) {
        Ok(r) => r,
        Err(why) if held => return not_started_held(ctx, state, name, &why),
        Err(why) => return (not_started(ctx, state, name, &why).await, None),
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
    let done = match state.timeout {
        None => child.await,
        Some(t) => {
            let timer = ctx.sleep(t).map(|r| match r {
                Ok(()) => Completion::of("timeout", Value::Null),
                Err(e) => Completion::of(&e.kind, Value::Null),
            });
            ctx.select(vec![child, timer]).await.1
        }
    };
    let error = (done.outcome == "failure").then(|| sub_run_error(state, name, &done.output));
    let done = if held {
        keep_failed_result(done)
    } else {
        failed_with_result(ctx, done)
    };
    (done, error)
}

/// Why a sub-run's failure failed the state: its run, how it ended and why.
fn sub_run_error(state: &PlanState, name: &str, output: &Value) -> String {
    let field = |k: &str| output.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut error = format!(
        "workflow_task '{}': the sub-run {} of `{name}` ended {}",
        state.name,
        field("workflowRunId"),
        field("status")
    );
    if !field("reason").is_empty() {
        error.push_str(": ");
        error.push_str(field("reason"));
    }
    error
}

/// The patch marker of runs in which a failed sub-run's result is what the parent keeps.
/// Runs journaled before kept the failure's description, and replay must store what they
/// stored.
const FAILED_RESULT_PATCH: &str = "workflow-task-failed-sub-run-result";

/// A sub-run that failed at a terminal with a `result:` hands that result to the parent, as
/// one that succeeded does (reference §3.7: "the Terminal State of the Sub-Run writes
/// ResultRecord(result). The Parent captures this via storeAs:"), so a path such as
/// `${state.built.summary}` reads the same on both branches. A failure without a result keeps
/// its description, `{workflowRunId, status, reason, result: null}`.
/// Runs journaled before the marker (and before held steps) kept the description.
fn failed_with_result(ctx: &WorkflowContext, done: Completion) -> Completion {
    if failed_result(&done).is_some() && ctx.patched(FAILED_RESULT_PATCH) {
        return keep_failed_result(done);
    }
    done
}

/// The result of a sub-run that failed with one, in place of the failure's description.
fn keep_failed_result(mut done: Completion) -> Completion {
    if let Some(result) = failed_result(&done) {
        done.output = result;
    }
    done
}

/// The result a failed sub-run left, if it left one.
fn failed_result(done: &Completion) -> Option<Value> {
    if done.outcome != "failure" || done.output.get("workflowRunId").is_none() {
        return None;
    }
    done.output.get("result").filter(|r| !r.is_null()).cloned()
}

/// The patch marker of runs whose `workflow_task` that cannot start its sub-run journals a
/// failed task result. Runs journaled before stored the bare error and routed `failure`
/// without one: replay must not ask them for a task they never ran.
const NOT_STARTED_PATCH: &str = "workflow-task-not-started-result";

/// The side effect that journals why a `workflow_task` could not start its sub-run.
const NOT_STARTED_MESSAGE: &str = "workflow_task_not_started";

/// A `workflow_task` whose sub-run cannot be started, in a run whose state is a held task step
/// (see [`step`]): the step's result is `failure` with output `{error, workflow}` and the error
/// (`[MAG-YR002]`). The message is journaled (a side effect), so the output a replay stores
/// is the one the run stored, whatever the words of today's loader.
fn not_started_held(
    ctx: &WorkflowContext,
    state: &PlanState,
    name: &str,
    why: &str,
) -> (Completion, Option<String>) {
    let message = not_started_message(ctx, state, name, why);
    let error = message.as_str().map(str::to_string);
    let output = json!({ "error": message, "workflow": name });
    (Completion::of("failure", output), error)
}

/// The journaled message of a `workflow_task` that cannot start its sub-run.
fn not_started_message(ctx: &WorkflowContext, state: &PlanState, name: &str, why: &str) -> Value {
    ctx.side_effect(NOT_STARTED_MESSAGE, || {
        Value::String(format!(
            "[MAG-YR002] workflow_task '{}' cannot start workflow `{name}`: {}",
            state.name,
            why.replace('\n', "; ")
        ))
    })
}

/// A `workflow_task` whose sub-run cannot be started, in a run journaled before held steps (its document is missing or does not
/// load, or it refuses the parameters) ends as any task that cannot start does, e.g. a
/// `shell_task` without a workspace: a `TaskStartedRecord` and a final `TaskResultRecord` with
/// outcome `failure` and an error naming the state, the workflow and why (`[MAG-YR002]`), so
/// the journal and every view of it show the failure where the state ran; its output
/// `{error, workflow}` goes to `storeAs`, and `on:`/`catch:`/`retry:` take `failure` as for a
/// failed sub-run. The error is journaled (a side effect) before the task, so replay asks for
/// the same task whatever the words of today's loader.
async fn not_started(
    ctx: &WorkflowContext,
    state: &PlanState,
    name: &str,
    why: &str,
) -> Completion {
    if !ctx.patched(NOT_STARTED_PATCH) {
        return Completion::of("failure", json!({ "error": why }));
    }
    // The message is journaled before the task that carries it: `why` is worked out again on
    // every replay (a loader's or a validator's words), and the task's input hash must not
    // change when those words do.
    let message = not_started_message(ctx, state, name, why);
    let step = FailedStep {
        task: WORKFLOW_TASK,
        state: &state.name,
        input: json!({ "error": message, "workflow": name }),
        kind: crate::ErrorKind::Failure,
        first_attempt: None,
    };
    step.run(ctx).await
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
    // The tenant's default bounds are journaled with the document: the child freezes the
    // defaults of the day its parent first asked for it, also when the parent is replayed.
    let found = ctx.side_effect("workflow_document", || {
        match rt.docs.workflow_to_start(scope, name, false) {
            Ok((path, text)) => {
                let mut found = json!({ "path": rt.docs.label(&path), "definition": text });
                if let Some(defaults) = default_bounds::tenant_defaults(&rt.docs, scope) {
                    found["defaultBounds"] = defaults;
                }
                found
            }
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
    let loaded = crate::load_workflow_shared(&path, &definition).map_err(|diags| {
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
        bounds: default_bounds::for_document(
            &loaded.plan.bounds,
            found.get("defaultBounds").cloned(),
        ),
    })
}
