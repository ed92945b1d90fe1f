//! What the run does with a failure nothing routes, beyond failing: the document's
//! `onFailure:` after the run's deadline passed, the DECISION of `pause_for_approval`, and
//! the compensation saga.
//!
//! - **Deadline** (`bounds.maxWallclockSeconds` / `runTimeoutMs`, or the tenant's default): a
//!   durable timer set when the run starts ([`WorkflowContext::deadline`]). When it fires it
//!   preempts whatever the run waits on (a gate is closed, a task's process is killed, a
//!   sub-run is cancelled); the run then fails with `bounds exhausted: maxWallclockSeconds <N>
//!   exceeded`, or goes to `onFailure`'s fallback state, or runs its compensations. What runs
//!   after the deadline runs without one (and without retries: the run is cancelled).
//! - **`pause_for_approval`**: an inbox item of kind DECISION with the options `retry`,
//!   `fallback` (when a fallback state is given) and `abort`; its timeout aborts.

use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{GateKind, GateOutcome, GateSpec, WorkflowContext, WorkflowError};
use serde_json::{Value, json};

use super::RuntimeInner;
use super::dispatch::Completion;
use super::interpreter::{Budget, Run, attempt};
use crate::plan::{OnFailure, Plan, PlanState, StateId};

/// The patch marker of runs whose deadline is a durable timer. Runs journaled before (their
/// journal has no marker) keep checking `maxWallclockSeconds` between states.
const DEADLINE_PATCH: &str = "durable-run-deadline";

/// Sets the run's durable deadline of `max` seconds; whether it did (`false` for a run
/// journaled before deadlines were durable, which checks between states instead).
pub(super) fn set_deadline(ctx: &WorkflowContext, max: f64, reason: &str) -> bool {
    if !ctx.patched(DEADLINE_PATCH) {
        return false;
    }
    ctx.deadline(crate::saturating_secs(max), reason);
    true
}

/// The error a state's failure leaves in `lastError`.
pub(super) fn last_error(state: &PlanState, done: &Completion) -> Value {
    json!({ "state": state.name, "outcome": done.outcome, "output": done.output })
}

/// Where the run goes once its deadline fired while `state` ran: `onFailure`'s fallback
/// state (`lastError` says `deadline`), or the compensations and failure, or the failure.
pub(super) async fn after_deadline(
    run: &mut Run<'_>,
    rt: &Arc<RuntimeInner>,
    plan: &Plan,
    state: &PlanState,
    completed: &[StateId],
    budget: &mut Budget,
    reason: String,
) -> Result<StateId, WorkflowError> {
    match plan.on_failure {
        OnFailure::Fallback(to) => {
            run.store(
                "lastError",
                json!({ "state": state.name, "outcome": "deadline", "output": { "error": reason } }),
            );
            Ok(to)
        }
        OnFailure::Compensate => Err(compensate(run, rt, plan, completed, budget, reason).await),
        _ => Err(WorkflowError::failed(reason)),
    }
}

/// What the person answering a `pause_for_approval` decision chose.
pub(super) enum Decision {
    /// Run the failed state again.
    Retry,
    /// Go to the fallback state.
    Fallback(StateId),
    /// Fail the run; the text says how it was decided.
    Abort(String),
}

/// Opens the DECISION inbox item of `pause_for_approval` for the unrouted `done` of `state`
/// and waits for its answer (a timeout aborts).
pub(super) async fn decide(
    run: &Run<'_>,
    state: &PlanState,
    done: &Completion,
    fallback: Option<StateId>,
    timeout: Option<Duration>,
    plan: &Plan,
) -> Decision {
    let mut options = vec!["retry".to_string()];
    if fallback.is_some() {
        options.push("fallback".into());
    }
    options.push("abort".into());
    let output = serde_json::to_string_pretty(&done.output).unwrap_or_default();
    let fallback_line = fallback.map_or(String::new(), |f| {
        format!("\n- fallback: go to state '{}'", plan.states[f].name)
    });
    let spec = GateSpec {
        kind: GateKind::Decision,
        title: format!(
            "State '{}' of '{}' failed: {}",
            state.name, run.start.workflow_name, done.outcome
        ),
        body: format!(
            "State '{}' ended with outcome '{}', which nothing routes, and the workflow says \
             `onFailure: pause_for_approval`.\n\nChoose:\n- retry: run the state again{}\n- \
             abort: end the run FAILED\n\nError output:\n{}",
            state.name, done.outcome, fallback_line, output
        ),
        options,
        assigned_to: Some(run.start.started_by.clone())
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "@system".into()),
        criticality: "CRITICAL".into(),
        tags: vec!["onFailure".into()],
        timeout_ms: timeout.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        meta: decision_meta(run, state, done, plan),
    };
    match run.ctx.gate(spec).await {
        GateOutcome::TimedOut => Decision::Abort("the decision timed out".into()),
        GateOutcome::Cancelled(why) => {
            Decision::Abort(format!("the decision was cancelled: {why}"))
        }
        GateOutcome::Answered(answer) => {
            let chosen = answer
                .value
                .get("chosen")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let by = if answer.answered_by.is_empty() {
                String::new()
            } else {
                format!(" by {}", answer.answered_by)
            };
            match (chosen, fallback) {
                ("retry", _) => Decision::Retry,
                ("fallback", Some(f)) => Decision::Fallback(f),
                ("abort", _) => Decision::Abort(format!("aborted{by}")),
                (other, _) => Decision::Abort(format!(
                    "answered '{other}'{by}, which is not retry, fallback or abort"
                )),
            }
        }
    }
}

/// The decision's `meta`: what the inbox shows and, with `approvers`, the rules the server
/// enforces on answers (as for an approval gate's `approvers`).
fn decision_meta(run: &Run<'_>, state: &PlanState, done: &Completion, plan: &Plan) -> Value {
    let mut meta = json!({
        "kind": "workflow.gate",
        "workflowName": run.start.workflow_name,
        "workflowState": state.name,
        "onFailure": "pause_for_approval",
        "outcome": done.outcome,
    });
    if let (Some(a), Some(m)) = (&plan.on_failure_approvers, meta.as_object_mut()) {
        m.insert("approvers".into(), run.approvers(a));
        m.insert("quorum".into(), json!(1));
        m.insert("selfApproval".into(), json!(true));
        m.insert("startedBy".into(), json!([run.start.started_by]));
    }
    meta
}

/// The saga: runs the `compensate:` state of each completed state, most recent first, each
/// with its own retry and timeout and each journaled like any state; then the run fails with
/// the original reason and every compensation's outcome in its result. A compensation that
/// still fails after its retries is reported, and the next one runs all the same.
pub(super) async fn compensate(
    run: &mut Run<'_>,
    rt: &Arc<RuntimeInner>,
    plan: &Plan,
    completed: &[StateId],
    budget: &mut Budget,
    reason: String,
) -> WorkflowError {
    let mut outcomes = Vec::new();
    for &done_id in completed.iter().rev() {
        let Some(comp_id) = plan.states[done_id].compensate else {
            continue;
        };
        let comp = &plan.states[comp_id];
        run.ctx.enter_state(&comp.name);
        // Compensations run without a deadline: one that the deadline stopped while it ran
        // runs again, to its end (at least once, as after a crash).
        let before = run.ctx.deadline_exceeded();
        let mut done = attempt(run, rt, plan, comp, budget).await;
        // Decided from the journal: a cancelled result comes after the deadline's firing.
        let stopped = match &done {
            Ok(c) => c.outcome == "cancelled",
            Err(e) => e.cancelled,
        };
        if stopped && !before && run.ctx.deadline_exceeded() {
            run.ctx.enter_state(&comp.name);
            done = attempt(run, rt, plan, comp, budget).await;
        }
        let entry = match done {
            Ok(c) => json!({
                "state": plan.states[done_id].name,
                "compensation": comp.name,
                "outcome": c.outcome,
                "output": c.output,
            }),
            Err(e) => json!({
                "state": plan.states[done_id].name,
                "compensation": comp.name,
                "outcome": "technical_error",
                "output": e.message,
            }),
        };
        outcomes.push(entry);
    }
    let all_ok = outcomes.iter().all(|o| o["outcome"] == "success");
    WorkflowError::failed(format!(
        "{reason}; compensated {} state(s){}",
        outcomes.len(),
        if all_ok {
            ""
        } else {
            ", some compensations failed"
        }
    ))
    .with_result(json!({ "error": reason, "compensations": outcomes }))
}
