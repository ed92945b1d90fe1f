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

use magrathea_core::{StartRecord, WorkflowContext, WorkflowError};
use serde_json::{Value, json};

use super::RuntimeInner;
use super::default_bounds::{self, SpawnLimit};
use super::dispatch::{self, Completion, RunInfo};
use super::{failure, steps};
use crate::ast::TerminalOutcome;
use crate::plan::{OnFailure, Plan, PlanState, Step};
use crate::template::{Template, TemplateValue};

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
        max_cost_usd: bounds.max_total_cost_usd,
    };
    let deadline = default_bounds::deadline(&bounds, &start);
    let started_ms = deadline.as_ref().map(|_| ctx.now());
    // The deadline is a durable timer that preempts whatever the run waits on; a run
    // journaled before that existed checks it between states.
    let durable_deadline = deadline
        .as_ref()
        .is_some_and(|(max, reason)| failure::set_deadline(&ctx, *max, reason));
    let mut deadline_handled = false;
    let mut current = entry;
    // States whose work a compensation would undo, in order of completion.
    let mut completed: Vec<crate::plan::StateId> = Vec::new();
    let mut first = true;
    loop {
        let state = &plan.states[current];
        // The Bounds Check comes after a completion and before the next enqueue (reference
        // §4.3, §9): a run whose spawns are used up fails before it enters the next state
        // that would spawn a task (the start state was entered with the run).
        if !std::mem::take(&mut first)
            && !matches!(state.step, Step::Terminal { .. } | Step::FanOut(_))
            && let Some(limit) = &budget.limit
            && budget.spawns >= limit.max
        {
            return Err(WorkflowError::failed(limit.exhausted(&state.name)));
        }
        ctx.enter_state(&state.name);
        if let Step::Terminal { outcome, result } = &state.step {
            let result = result.as_ref().map_or(Value::Null, |r| run.value(r));
            // A result is built from templates: one parameter may be written into it many
            // times. It is bounded like what a state stores, before anything is journaled.
            let bytes = magrathea_core::json_len(&result);
            if bytes > MAX_STATE_VALUE_BYTES {
                return Err(WorkflowError::failed(format!(
                    "[MAG-BD003] the result of terminal state '{}' is {bytes} bytes of JSON, \
                     more than the {MAX_STATE_VALUE_BYTES} a run's result may hold",
                    state.name
                )));
            }
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
        budget.check_cost()?;
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
                // A rejected approval nothing routes ends the run with Friday's reason code
                // (its `onReject: fail`, the default; `reject_branch` is an `on: rejected`
                // route), under every policy that ends the run with the original reason, and
                // says the reference's words for an outcome nothing routes after it.
                let unrouted = if state.is_approval_gate()
                    && crate::ErrorKind::parse(&done.outcome)
                        == Some(crate::ErrorKind::HumanRejected)
                {
                    format!(
                        "APPROVAL_REJECTED: the approval of state '{}' was rejected ({unrouted})",
                        state.name
                    )
                } else {
                    unrouted
                };
                // `onFailure:` (Friday's failurePolicy) decides what an unrouted outcome does.
                match plan.on_failure {
                    OnFailure::ContinueOnError | OnFailure::Fallback(_) => {
                        let to = match plan.on_failure {
                            // The fallback state's own failure fails the run: falling back to
                            // it again would loop.
                            OnFailure::Fallback(f) if f == current => None,
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
                            // An operator's cancel closed the decision: the run ends
                            // CANCELLED, as a cancel of any waiting run does.
                            failure::Decision::Abort(_)
                                if !ctx.deadline_exceeded() && ctx.cancellation().is_some() =>
                            {
                                let reason = ctx.cancellation().unwrap_or_default();
                                return Err(WorkflowError::cancelled(reason));
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
    /// `bounds.maxTotalCostUsd`.
    pub(super) max_cost_usd: Option<f64>,
}

impl Budget {
    /// The run's failure once what its tasks cost passed `bounds.maxTotalCostUsd`: checked
    /// after each task completion, before the next enqueue — a retry's included (reference
    /// §9).
    pub(super) fn check_cost(&self) -> Result<(), WorkflowError> {
        match self.max_cost_usd.filter(|max| self.cost_usd > *max) {
            Some(max) => Err(WorkflowError::failed(format!(
                "bounds exhausted: maxTotalCostUsd {max} exceeded (spent {:.4} USD)",
                self.cost_usd
            ))),
            None => Ok(()),
        }
    }
}

/// The patch marker of runs whose retries check the spawn bound before their backoff.
const SPENT_BEFORE_BACKOFF_PATCH: &str = "spawns-checked-before-backoff";

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
            bounded_output(
                &state.name,
                super::fanout::fan_out(run, rt, state, fan, budget).await?,
            )
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
            && !done.exhausted
            && attempts < retry.max_attempts
            && run.ctx.cancellation().is_none()
        {
            budget.check_cost()?;
            // The Bounds Check (§9) follows the completion: a retry its spawns cannot pay for
            // fails the run now, not after its backoff (a run journaled before this check
            // waits it out, as it did).
            if !matches!(state.step, Step::FanOut(_))
                && let Some(limit) = &budget.limit
                && budget.spawns >= limit.max
                && run.ctx.patched(SPENT_BEFORE_BACKOFF_PATCH)
            {
                return Err(WorkflowError::failed(limit.exhausted(&state.name)));
            }
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
            spec, shell_run, ..
        } => {
            let mut spec = run.value(spec);
            if let (Some(shell_run), Some(fields)) = (shell_run, spec.as_object_mut()) {
                let (command, env) = shell_run.render(run.params, &run.vars);
                fields.insert("run".into(), Value::String(command));
                if !env.is_empty() {
                    fields.insert("env".into(), serde_json::json!(env));
                }
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
            super::sub_workflow::step(run, rt, state, attempt, &name, params).await
        }
        // Run by `attempt`, which gives it the run's budget.
        Step::Terminal { .. } | Step::FanOut(_) => Completion::of("success", Value::Null),
    }
}

/// The most bytes of JSON a value the runtime itself builds may hold: a terminal's result
/// and a fan-out's output (its sub-runs' results together). A task's output has the engine's
/// limit (`EngineBuilder::max_task_output_bytes`, 4 MiB by default); these gather or repeat
/// values, so they get four times that, and no single record a run journals grows past it.
pub(crate) const MAX_STATE_VALUE_BYTES: usize = 16 * 1024 * 1024;

/// A fan-out's completion, or `technical_error` when its output (every sub-run's result
/// together) is larger than [`MAX_STATE_VALUE_BYTES`]: nothing of it is stored.
fn bounded_output(state: &str, done: Completion) -> Completion {
    let bytes = magrathea_core::json_len(&done.output);
    if bytes <= MAX_STATE_VALUE_BYTES {
        return done;
    }
    let error = format!(
        "[MAG-BD003] the output of state '{state}' (its sub-runs' results together) is {bytes} \
         bytes of JSON, more than the {MAX_STATE_VALUE_BYTES} a state's output may hold"
    );
    Completion::of("technical_error", json!({ "error": error }))
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
