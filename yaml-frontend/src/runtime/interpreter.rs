//! The plan's interpreter: a deterministic workflow on the replay core.
//!
//! Each state is entered with a `StateEnteredRecord`; its templates are resolved right before
//! its task runs; the task's result, the `storeAs` variable and the transition follow the order
//! of the reference's `handleCompletion` (§4.3): result, variable, terminal special case, retry
//! check (retry preempts routing), bounds check, then the resolver (§4.1:
//! `nextStateOverride`, `on:`, `catch:`, else fail with `no transition for outcome '<x>'`).
//!
//! The journal grows with the work: a state journals its entry, what its step needs (its
//! resolved input) and its result — never the run's parameters or variables again.

use std::sync::Arc;

use magrathea_core::{
    ChildRequest, RetryPolicy, RunStatus, StartRecord, TaskCall, TaskError, TaskOptions,
    TaskRegistration, WorkflowContext, WorkflowError,
};
use serde_json::{Value, json};

use super::RuntimeInner;
use super::default_bounds::{self, SpawnLimit};
use super::dispatch::{self, Completion, RunInfo};
use super::documents::Scope;
use super::{failure, steps};
use crate::ast::TerminalOutcome;
use crate::plan::{OnFailure, Plan, PlanState, Step};
use crate::template::{Template, TemplateValue};
use crate::validate_params;

/// What the interpreter keeps of a run: its parameters, its variables and its budget.
pub(super) struct Run<'a> {
    pub(super) ctx: &'a WorkflowContext,
    pub(super) start: &'a StartRecord,
    pub(super) params: &'a Value,
    /// `storeAs` variables, always an object.
    pub(super) vars: Value,
}

impl Run<'_> {
    /// A template rendered as text against the run's parameters and variables.
    pub(super) fn text(&self, t: &Template) -> String {
        t.render(self.params, &self.vars)
    }

    /// A gate's `approvers:` with the placeholders in its names resolved (reference §2.4:
    /// any string of a state's spec); names that resolve to nothing are left out, so a
    /// missing value narrows who may answer rather than widening it.
    pub(super) fn approvers(&self, a: &crate::ast::Approvers) -> Value {
        let names = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .map(|n| self.text(&Template::parse(n)))
                .filter(|n| !n.is_empty())
                .collect()
        };
        json!({ "users": names(&a.users), "roles": names(&a.roles) })
    }

    /// A templated value resolved against the run's parameters and variables.
    pub(super) fn value(&self, t: &TemplateValue) -> Value {
        t.resolve(self.params, &self.vars)
    }

    pub(super) fn store(&mut self, key: &str, value: Value) {
        self.ctx.set_var(key, value.clone());
        if let Value::Object(m) = &mut self.vars {
            m.insert(key.to_string(), value);
        }
    }
}

pub(crate) async fn interpret(
    ctx: WorkflowContext,
    plan: Plan,
    start: StartRecord,
    rt: Arc<RuntimeInner>,
) -> Result<Value, WorkflowError> {
    let (params, fork_vars) = super::fanout::inputs_of(&start);
    // A retry begins at a state of the original run, with the variables it had there.
    let (entry, vars) = match &start.entry {
        None => (plan.start, fork_vars),
        Some(e) => {
            let Some(state) = plan.state_named(&e.state) else {
                return Err(WorkflowError::failed(format!(
                    "[MAG-PS003] the run is to begin at state `{}`, which its definition does \
                     not have",
                    e.state
                )));
            };
            let vars = match &e.vars {
                Value::Object(m) => Value::Object(m.clone()),
                _ => Value::Object(serde_json::Map::new()),
            };
            (state, vars)
        }
    };
    let mut run = Run {
        ctx: &ctx,
        start: &start,
        params: &params,
        vars,
    };
    let bounds = plan.bounds;
    let mut budget = Budget {
        limit: SpawnLimit::of(&bounds, &start),
        spawns: 0,
        cost_usd: 0.0,
    };
    let deadline = default_bounds::deadline(&bounds, &start);
    let started_ms = deadline.as_ref().map(|_| ctx.now());
    // The deadline is a durable timer that preempts whatever the run waits on; a run
    // journaled before that existed checks it between states.
    let durable_deadline = deadline
        .as_ref()
        .is_some_and(|(max, reason)| failure::set_deadline(&ctx, *max, reason));
    let mut deadline_handled = false;
    let mut cost_usd;
    let mut current = entry;
    // States whose work a compensation would undo, in order of completion.
    let mut completed: Vec<crate::plan::StateId> = Vec::new();
    loop {
        let state = &plan.states[current];
        ctx.enter_state(&state.name);
        if let Step::Terminal { outcome, result } = &state.step {
            let result = result.as_ref().map_or(Value::Null, |r| run.value(r));
            // handleCompletion writes the VarRecord of `storeAs:` before the terminal special
            // case (reference §4.3); a terminal's output is its result.
            if let Some(key) = &state.store_as
                && !result.is_null()
            {
                run.store(key, result.clone());
            }
            return terminal(&ctx, state, *outcome, result);
        }
        let done = attempt(&mut run, &rt, &plan, state, &mut budget).await?;
        cost_usd = budget.cost_usd;
        if let Some(max) = bounds.max_total_cost_usd.filter(|max| cost_usd > *max) {
            return Err(WorkflowError::failed(format!(
                "bounds exhausted: maxTotalCostUsd {max} exceeded (spent {cost_usd:.4} USD)"
            )));
        }
        if let Some((max, reason)) = &deadline {
            if durable_deadline {
                // The deadline preempts routing, once: what runs after it runs without one.
                if !deadline_handled && ctx.deadline_exceeded() {
                    deadline_handled = true;
                    let reason = reason.clone();
                    current = failure::after_deadline(
                        &mut run,
                        &rt,
                        &plan,
                        state,
                        &completed,
                        &mut budget,
                        reason,
                    )
                    .await?;
                    continue;
                }
            } else if let Some(t0) = started_ms {
                let elapsed = ctx.now().saturating_sub(t0) as f64 / 1000.0;
                if elapsed > *max {
                    return Err(WorkflowError::failed(format!(
                        "bounds exhausted: maxWallclockSeconds {max} exceeded ({elapsed:.1} s)"
                    )));
                }
            }
        }
        let next = match &done.next {
            Some(name) => plan.state_named(name),
            None => state.route(&done.outcome),
        };
        let failure = crate::ErrorKind::parse(&done.outcome).is_some();
        if !failure && state.compensate.is_some() {
            completed.push(current);
        }
        match next {
            Some(next) => current = next,
            None => {
                if done.outcome == "cancelled"
                    && let Some(reason) = ctx.cancellation()
                {
                    return Err(WorkflowError::cancelled(reason));
                }
                let unrouted = format!("no transition for outcome '{}'", done.outcome);
                // `onFailure:` (Friday's failurePolicy) decides what an unrouted outcome does.
                match plan.on_failure {
                    OnFailure::ContinueOnError | OnFailure::Fallback(_) => {
                        let to = match plan.on_failure {
                            OnFailure::Fallback(f) => Some(f),
                            _ => state.route("success"),
                        };
                        if let Some(to) = to {
                            run.store("lastError", failure::last_error(state, &done));
                            current = to;
                            continue;
                        }
                    }
                    OnFailure::Compensate => {
                        return Err(failure::compensate(
                            &mut run,
                            &rt,
                            &plan,
                            &completed,
                            &mut budget,
                            unrouted,
                        )
                        .await);
                    }
                    OnFailure::PauseForApproval { fallback, timeout }
                        if ctx.cancellation().is_none() =>
                    {
                        match failure::decide(&run, state, &done, fallback, timeout, &plan).await {
                            // The failed state runs again (a spawn like any other).
                            failure::Decision::Retry => continue,
                            failure::Decision::Fallback(to) => {
                                run.store("lastError", failure::last_error(state, &done));
                                current = to;
                                continue;
                            }
                            failure::Decision::Abort(_)
                                if ctx.deadline_exceeded() && !deadline_handled =>
                            {
                                let reason = deadline.map(|(_, r)| r).unwrap_or_default();
                                return Err(WorkflowError::failed(reason));
                            }
                            failure::Decision::Abort(how) => {
                                return Err(WorkflowError::failed(format!(
                                    "{unrouted} (onFailure: pause_for_approval: {how})"
                                )));
                            }
                        }
                    }
                    OnFailure::FailFast | OnFailure::PauseForApproval { .. } => {}
                }
                // A rejected approval nothing routes ends the run with Friday's reason code
                // (its `onReject: fail`; `reject_branch` is an `on: rejected` route).
                if state.is_approval_gate()
                    && crate::ErrorKind::parse(&done.outcome)
                        == Some(crate::ErrorKind::HumanRejected)
                {
                    return Err(WorkflowError::failed(format!(
                        "APPROVAL_REJECTED: the approval of state '{}' was rejected ({unrouted})",
                        state.name
                    )));
                }
                return Err(WorkflowError::failed(unrouted));
            }
        }
    }
}

/// What the run has spent: task spawns (against `maxTaskSpawns`; a fan-out's sub-runs count
/// one each) and cost.
pub(super) struct Budget {
    pub(super) limit: Option<SpawnLimit>,
    pub(super) spawns: u64,
    pub(super) cost_usd: f64,
}

/// Runs a state's step with its retry policy (reference §4.3: retry preempts routing): its
/// completion, its output stored in `storeAs`.
pub(super) async fn attempt(
    run: &mut Run<'_>,
    rt: &Arc<RuntimeInner>,
    plan: &Plan,
    state: &PlanState,
    budget: &mut Budget,
) -> Result<Completion, WorkflowError> {
    let mut attempts = 1u32;
    loop {
        let done = if let Step::FanOut(fan) = &state.step {
            super::fanout::fan_out(run, rt, state, fan, budget).await?
        } else {
            if let Some(limit) = &budget.limit
                && budget.spawns >= limit.max
            {
                return Err(WorkflowError::failed(limit.exhausted(&state.name)));
            }
            budget.spawns += 1;
            execute(run, rt, plan, state, attempts).await
        };
        budget.cost_usd += done.cost_usd;
        if let Some(key) = &state.store_as
            && !done.output.is_null()
        {
            run.store(key, done.output.clone());
        }
        if let Some(retry) = &state.retry
            && state.retries(&done.outcome)
            && attempts < retry.max_attempts
            && run.ctx.cancellation().is_none()
        {
            attempts += 1;
            if !retry.backoff.is_zero() && run.ctx.sleep(retry.backoff).await.is_err() {
                return Ok(Completion::of("cancelled", Value::Null));
            }
            continue;
        }
        return Ok(done);
    }
}

/// Runs the step of a non-terminal state once.
async fn execute(
    run: &Run<'_>,
    rt: &Arc<RuntimeInner>,
    plan: &Plan,
    state: &PlanState,
    attempt: u32,
) -> Completion {
    match &state.step {
        Step::External {
            spec, quoted_run, ..
        } => {
            let mut spec = run.value(spec);
            if let (Some(template), Some(fields)) = (quoted_run, spec.as_object_mut()) {
                let command = template.render_shell_quoted(run.params, &run.vars);
                fields.insert("run".into(), Value::String(command));
            }
            let vars = run.vars.as_object().cloned().unwrap_or_default();
            let info = RunInfo {
                start: run.start,
                allowed_tools: plan.allowed_tools.as_deref(),
                params: run.params,
                vars: &vars,
                attempt,
            };
            dispatch::external(run.ctx, rt, &info, &state.name, state.task_type, &spec).await
        }
        Step::Condition { rules, otherwise } => {
            steps::condition(run, plan, state, attempt, rules, *otherwise).await
        }
        Step::Timer(duration) => steps::timer(run, state, attempt, duration).await,
        Step::Gate(gate) => steps::gate(run, state, attempt, gate).await,
        Step::Workflow { workflow, params } => {
            let name = run.text(workflow);
            let params = run.value(params);
            sub_workflow(run.ctx, rt, run.start, state, &name, params).await
        }
        // Run by `attempt`, which gives it the run's budget.
        Step::Terminal { .. } | Step::FanOut(_) => Completion::of("success", Value::Null),
    }
}

fn terminal(
    ctx: &WorkflowContext,
    state: &PlanState,
    outcome: TerminalOutcome,
    result: Value,
) -> Result<Value, WorkflowError> {
    ctx.set_result_state(&state.name);
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

/// `workflow_task`: the sub-run of `name` with the resolved (typed) `params`.
async fn sub_workflow(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    start: &StartRecord,
    state: &PlanState,
    name: &str,
    params: Value,
) -> Completion {
    let scope = Scope::of_run(start.scope.as_str());
    // The sub-workflow's document is read once and journaled, so replay starts (or finds)
    // the same child on the same definition.
    let given = if params.is_null() { json!({}) } else { params };
    let mut request = match frozen_child(ctx, rt, &scope, name, given) {
        Ok(r) => r,
        Err(why) => return not_started(ctx, state, name, &why).await,
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
    failed_with_result(ctx, done)
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
fn failed_with_result(ctx: &WorkflowContext, mut done: Completion) -> Completion {
    if done.outcome != "failure" || done.output.get("workflowRunId").is_none() {
        return done;
    }
    let Some(result) = done.output.get("result").filter(|r| !r.is_null()).cloned() else {
        return done;
    };
    if ctx.patched(FAILED_RESULT_PATCH) {
        done.output = result;
    }
    done
}

/// The patch marker of runs whose `workflow_task` that cannot start its sub-run journals a
/// failed task result. Runs journaled before stored the bare error and routed `failure`
/// without one: replay must not ask them for a task they never ran.
const NOT_STARTED_PATCH: &str = "workflow-task-not-started-result";

/// The side effect that journals why a `workflow_task` could not start its sub-run.
const NOT_STARTED_MESSAGE: &str = "workflow_task_not_started";

/// The task name a `workflow_task` that cannot start its sub-run is journaled under.
const NOT_STARTED_TASK: &str = "workflow_task";

/// A `workflow_task` whose sub-run cannot be started (its document is missing or does not
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
    let message = ctx.side_effect(NOT_STARTED_MESSAGE, || {
        Value::String(format!(
            "[MAG-YR002] workflow_task '{}' cannot start workflow `{name}`: {}",
            state.name,
            why.replace('\n', "; ")
        ))
    });
    let once = TaskOptions {
        retry: RetryPolicy::none(),
        timeout: None,
    };
    let registration = TaskRegistration::new(NOT_STARTED_TASK, once.clone(), |input: Value, _| {
        let message = input["error"].as_str().unwrap_or_default().to_string();
        async move {
            Err(TaskError::terminal(message)
                .with_kind(crate::ErrorKind::Failure.as_str())
                .with_output(input))
        }
    });
    let result = ctx
        .task_with(TaskCall {
            task: NOT_STARTED_TASK.into(),
            name: Some(state.name.clone()),
            input: json!({ "error": message, "workflow": name }),
            options: Some(once),
            registration: Some(registration),
            first_attempt: None,
        })
        .await;
    Completion::from_task(result)
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

/// The plan of a run's frozen document, or why it cannot run: the frozen body no longer loads.
pub(crate) fn load_frozen(start: &StartRecord) -> Result<Plan, String> {
    let text = start.definition.as_deref().unwrap_or_default();
    let label = format!("{}.yaml (frozen)", start.workflow_name);
    crate::load_workflow_shared(&label, text)
        .map(|l| {
            // The settings' default timeouts frozen at the start fill what the document
            // leaves open.
            let defaults = default_bounds::timeout_defaults(l.doc.defaults, start);
            if defaults == l.doc.defaults {
                l.plan.clone()
            } else {
                let mut doc = l.doc.clone();
                doc.defaults = defaults;
                Plan::compile(&doc)
            }
        })
        .map_err(|diags| {
            let msgs: Vec<String> = diags.iter().map(|d| d.to_string()).collect();
            format!(
                "[MAG-YR001] the run's frozen definition does not load: {}",
                msgs.join("; ")
            )
        })
}
