//! `parallel_task` and `foreach_task`: sub-runs side by side, each run itself sequential.
//!
//! The fan-out keeps a window of at most `maxParallelism` child steps in flight and waits for
//! the next one to end with [`WorkflowContext::next_completed`], which picks by journal order
//! and leaves the others running; so a replay makes the same choices and starts no child
//! twice (a child step is matched by its step number). Nothing new is journaled: each
//! sub-run is a child step (`ChildStartedRecord` … `ChildFinishedRecord`), a dropped child is
//! cancelled by the core (`ChildCancelRequestedRecord`), and the timeout is a durable timer.

use std::sync::Arc;

use magrathea_core::{ChildOutcome, ChildRequest, RunStatus, StepFuture, WorkflowContext};
use serde_json::{Map, Value, json};

use super::RuntimeInner;
use super::dispatch::Completion;
use super::documents::Scope;
use super::interpreter::{Budget, Run};
use super::sub_workflow::frozen_child;
use crate::plan::{BodyPlan, FanKind, FanOutPlan, INDEX_VAR, ITEM_VAR, PlanState};

/// The most items a `foreach_task` runs (`[MAG-PR002]` beyond).
pub(super) const MAX_FOREACH_ITEMS: usize = 10_000;

/// The most bytes of input one fan-out hands its sub-runs in all (`[MAG-PR005]` beyond): an
/// inline branch gets a copy of its parent's parameters and variables, so a large input
/// multiplied by thousands of items would grow the store and the memory by gigabytes from one
/// request, every sub-run within its own bounds.
pub(super) const MAX_FANOUT_INPUT_BYTES: usize = 64 << 20;

/// The patch marker of runs whose fan-outs are held to [`MAX_FANOUT_INPUT_BYTES`]. Runs
/// journaled before started their sub-runs whatever they handed them: replay must start them.
const INPUT_BOUND_PATCH: &str = "fan-out-input-bound";

/// The sub-runs a fan-out without `maxParallelism` keeps in flight at once: a `foreach_task`
/// over thousands of items holds a window of them in memory, not all.
pub(super) const DEFAULT_MAX_PARALLELISM: usize = 64;

/// The patch marker of runs whose fan-outs without `maxParallelism` get
/// [`DEFAULT_MAX_PARALLELISM`]. Runs journaled before (no marker) start all their sub-runs at
/// once, as they did: replay must ask for the children in the order they were started.
const WINDOW_PATCH: &str = "fan-out-default-window";

/// The patch marker of runs whose inline branches take the parent document's `defaults:`
/// (when they declare none). Runs journaled before started their branches without them: replay
/// must ask for the same child definitions.
const BRANCH_DEFAULTS_PATCH: &str = "fan-out-branch-defaults";

/// What the window waits on: a sub-run's end, or the state's timeout.
enum Event {
    Child(usize, ChildOutcome),
    Timeout,
    TimerCancelled,
}

/// One sub-run to start: its slot's label and how to build its request.
struct Slot<'p> {
    label: String,
    body: &'p BodyPlan,
    /// `item` and `index` of a foreach item.
    item: Option<(Value, usize)>,
}

/// Runs a fan-out state: its completion (`success`, `failure`, `timeout`, `cancelled`) and,
/// for `success`, the results in order.
pub(super) async fn fan_out(
    run: &Run<'_>,
    rt: &Arc<RuntimeInner>,
    state: &PlanState,
    plan: &FanOutPlan,
    budget: &mut Budget,
) -> Result<Completion, magrathea_core::WorkflowError> {
    let ctx = run.ctx;
    let slots: Vec<Slot<'_>> = match &plan.kind {
        FanKind::Parallel(branches) => branches
            .iter()
            .map(|(name, body)| Slot {
                label: name.clone(),
                body,
                item: None,
            })
            .collect(),
        FanKind::Foreach { items, body } => {
            let resolved = items.resolve(run.params, &run.vars);
            let Value::Array(items) = resolved else {
                return Ok(Completion::of(
                    "failure",
                    json!({ "error": format!(
                        "[MAG-PR001] items of state '{}' resolved to {}: expected a JSON array",
                        state.name, kind_of(&resolved)
                    )}),
                ));
            };
            if items.len() > MAX_FOREACH_ITEMS {
                return Ok(Completion::of(
                    "failure",
                    json!({ "error": format!(
                        "[MAG-PR002] items of state '{}' holds {} items: at most {MAX_FOREACH_ITEMS} \
                         are run by one foreach_task (split the list)",
                        state.name, items.len()
                    )}),
                ));
            }
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| Slot {
                    label: i.to_string(),
                    body,
                    item: Some((item, i)),
                })
                .collect()
        }
    };
    let total = slots.len();
    let handed = handed_bytes(run, &slots);
    if handed > MAX_FANOUT_INPUT_BYTES && ctx.patched(INPUT_BOUND_PATCH) {
        return Ok(Completion::of(
            "failure",
            json!({ "error": format!(
                "[MAG-PR005] state '{}' would hand its {total} sub-runs {handed} bytes of input in \
                 all (an inline branch gets a copy of the run's parameters and variables, a \
                 workflow branch its resolved params:): at \
                 most {MAX_FANOUT_INPUT_BYTES} bytes; pass large data by reference (a document, \
                 a URL) or over fewer items",
                state.name
            )}),
        ));
    }
    let window = match plan.max_parallelism {
        Some(m) => usize::try_from(m).unwrap_or(usize::MAX),
        None if ctx.patched(WINDOW_PATCH) => DEFAULT_MAX_PARALLELISM.min(total),
        None => total,
    }
    .max(1);
    let takes_defaults = slots.iter().any(|s| {
        matches!(
            s.body,
            BodyPlan::Inline {
                with_defaults: Some(_),
                ..
            }
        )
    });
    let branch_defaults = takes_defaults && ctx.patched(BRANCH_DEFAULTS_PATCH);
    let mut results: Vec<Value> = vec![Value::Null; total];
    let mut failed: Vec<Value> = Vec::new();
    let mut pending: Vec<StepFuture<Event>> = Vec::new();
    if let Some(t) = state.timeout {
        pending.push(ctx.sleep(t).map(|r| match r {
            Ok(()) => Event::Timeout,
            Err(_) => Event::TimerCancelled,
        }));
    }
    let (mut next, mut in_flight) = (0usize, 0usize);
    loop {
        while next < total && in_flight < window && ctx.cancellation().is_none() {
            let slot = &slots[next];
            if let Some(limit) = &budget.limit
                && budget.spawns >= limit.max
            {
                return Err(magrathea_core::WorkflowError::failed(
                    limit.exhausted(&state.name),
                ));
            }
            budget.spawns += 1;
            match request(run, rt, state, slot, branch_defaults) {
                Ok(req) => {
                    let i = next;
                    pending.push(ctx.child(req).map(move |o| Event::Child(i, o)));
                    in_flight += 1;
                }
                Err(error) => {
                    // Not started (no document, bad parameters): a failed slot all the same.
                    let slot_value = json!({ "error": error, "status": RunStatus::Failed });
                    failed.push(json!({ "slot": slot.label, "error": error }));
                    results[next] = slot_value;
                }
            }
            next += 1;
            if plan.tolerated.exceeded(failed.len(), total) {
                return Ok(failure(state, &slots, failed, results, plan, total));
            }
        }
        if in_flight == 0 {
            // Nothing more starts once the run is being cancelled.
            if ctx.cancellation().is_some() {
                return Ok(Completion::of("cancelled", Value::Null));
            }
            break;
        }
        let (_, event) = ctx.next_completed(&mut pending).await;
        match event {
            Event::Child(i, o) => {
                in_flight -= 1;
                if o.status == RunStatus::Done {
                    results[i] = o.result;
                    continue;
                }
                let reason = o.reason.clone().unwrap_or_else(|| "no reason".into());
                results[i] = json!({
                    "error": reason,
                    "status": o.status,
                    "workflowRunId": o.run_id,
                });
                // A branch that ended at a failure terminal with a `result:` keeps it, as a
                // failed workflow_task's output does.
                if !o.result.is_null()
                    && let Value::Object(m) = &mut results[i]
                {
                    m.insert("result".into(), o.result.clone());
                }
                failed.push(json!({
                    "slot": slots[i].label,
                    "error": reason,
                    "status": o.status,
                    "workflowRunId": o.run_id,
                }));
                if ctx.cancellation().is_some() {
                    return Ok(Completion::of("cancelled", Value::Null));
                }
                if plan.tolerated.exceeded(failed.len(), total) {
                    // Dropping the window cancels the sub-runs still in flight.
                    drop(pending);
                    return Ok(failure(state, &slots, failed, results, plan, total));
                }
            }
            Event::Timeout => {
                drop(pending);
                // What the sub-runs that ended gave is kept (a slot not ended is null).
                return Ok(Completion::of(
                    "timeout",
                    json!({
                        "error": format!(
                            "[MAG-PR003] state '{}' timed out with {} of {total} sub-runs \
                             ended; the others were cancelled",
                            state.name,
                            next - in_flight
                        ),
                        "results": collect(plan, &slots, results),
                    }),
                ));
            }
            Event::TimerCancelled => return Ok(Completion::of("cancelled", Value::Null)),
        }
    }
    Ok(Completion::of("success", collect(plan, &slots, results)))
}

/// The results in order: an array (foreach) or an object by branch name (parallel).
fn collect(plan: &FanOutPlan, slots: &[Slot<'_>], results: Vec<Value>) -> Value {
    match plan.kind {
        FanKind::Foreach { .. } => Value::Array(results),
        FanKind::Parallel(_) => Value::Object(
            slots
                .iter()
                .map(|s| s.label.clone())
                .zip(results)
                .collect::<Map<_, _>>(),
        ),
    }
}

fn failure(
    state: &PlanState,
    slots: &[Slot<'_>],
    failed: Vec<Value>,
    results: Vec<Value>,
    plan: &FanOutPlan,
    total: usize,
) -> Completion {
    let which: Vec<String> = failed
        .iter()
        .map(|f| {
            format!(
                "{} ({})",
                f["slot"].as_str().unwrap_or_default(),
                f["error"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let error = format!(
        "[MAG-PR004] {} of {total} sub-runs of state '{}' failed, more than toleratedFailures \
         allows; those still running were cancelled: {}",
        failed.len(),
        state.name,
        which.join("; ")
    );
    Completion::of(
        "failure",
        json!({ "error": error, "failed": failed, "results": collect(plan, slots, results) }),
    )
}

/// The bytes of input the slots' sub-runs get: an inline branch a copy of the run's
/// parameters and variables (and its item), a workflow its resolved `params:`.
fn handed_bytes(run: &Run<'_>, slots: &[Slot<'_>]) -> usize {
    let shared = magrathea_core::json_len(run.params) + magrathea_core::json_len(&run.vars);
    slots
        .iter()
        .map(|slot| {
            let item = slot
                .item
                .as_ref()
                .map_or(0, |(item, _)| magrathea_core::json_len(item));
            match slot.body {
                BodyPlan::Inline { definition, .. } => shared + definition.len() + item,
                BodyPlan::Workflow { params, .. } => {
                    let mut vars = run.vars.clone();
                    if let (Some((item, index)), Value::Object(m)) = (&slot.item, &mut vars) {
                        m.insert(ITEM_VAR.into(), item.clone());
                        m.insert(INDEX_VAR.into(), json!(index));
                    }
                    magrathea_core::json_len(&params.resolve(run.params, &vars))
                }
            }
        })
        .fold(0usize, usize::saturating_add)
}

/// The child request of one slot; `branch_defaults`: an inline branch takes the parent
/// document's `defaults:` (see [`BRANCH_DEFAULTS_PATCH`]).
fn request(
    run: &Run<'_>,
    rt: &Arc<RuntimeInner>,
    state: &PlanState,
    slot: &Slot<'_>,
    branch_defaults: bool,
) -> Result<ChildRequest, String> {
    let ctx: &WorkflowContext = run.ctx;
    let mut vars = run.vars.clone();
    if let (Some((item, index)), Value::Object(m)) = (&slot.item, &mut vars) {
        m.insert(ITEM_VAR.into(), item.clone());
        m.insert(INDEX_VAR.into(), json!(index));
    }
    let scope = Scope::of_run(run.start.scope.as_str());
    let mut req = match slot.body {
        BodyPlan::Workflow { workflow, params } => {
            let name = workflow.render(run.params, &vars);
            let params = params.resolve(run.params, &vars);
            let given = if params.is_null() { json!({}) } else { params };
            frozen_child(ctx, rt, &scope, &name, given)?
        }
        BodyPlan::Inline {
            definition,
            with_defaults,
            params,
        } => {
            let definition = match with_defaults {
                Some(d) if branch_defaults => d,
                _ => definition,
            };
            // The branch sees the parent's parameters (with a foreach's `params:` over them)
            // as its own, and the parent's variables at the fork (with `item` and `index` of
            // a foreach) as its `${state.*}`.
            let mut merged = run.params.as_object().cloned().unwrap_or_default();
            if let Value::Object(extra) = params.resolve(run.params, &vars) {
                merged.extend(extra);
            }
            // The tenant's default bounds frozen for the parent hold for the branch too,
            // unless the branch declares its own.
            let declares = serde_json::from_str::<Value>(definition)
                .ok()
                .and_then(|d| d.pointer("/bounds/maxTaskSpawns").cloned())
                .is_some();
            let mut fork = run.vars.clone();
            if let (Some((item, index)), Value::Object(m)) = (&slot.item, &mut fork) {
                m.insert("item".into(), item.clone());
                m.insert("index".into(), json!(index));
            }
            ChildRequest {
                workflow: inline_name(&run.start.workflow_name, &state.name, &slot.label),
                frontend: "yaml".into(),
                definition: Some(definition.clone()),
                version: run.start.workflow_version.clone(),
                input: json!({ "params": merged, "state": fork }),
                parent_state: None,
                scope: Some(scope.key().into()),
                max_depth: rt.docs.settings(&scope).sub_runs.max_depth,
                bounds: if declares {
                    None
                } else {
                    run.start.bounds.clone()
                },
            }
        }
    };
    req.parent_state = Some(state.name.clone());
    Ok(req)
}

/// The workflow name of an inline branch's sub-runs: `<parent>#<state>.<branch>`. A `#` is
/// in no document's name, so the interpreter knows such a run by its name.
fn inline_name(parent: &str, state: &str, label: &str) -> String {
    format!("{parent}{INLINE_MARK}{state}.{label}")
}

/// What marks an inline branch's workflow name.
pub(super) const INLINE_MARK: char = '#';

/// The parameters and initial variables of a run: an inline branch's run gets both from its
/// input (`{"params": …, "state": …}`), every other run only its parameters.
pub(super) fn inputs_of(start: &magrathea_core::StartRecord) -> (Value, Value) {
    let inline = start.parent.is_some() && start.workflow_name.contains(INLINE_MARK);
    match (&start.params, inline) {
        (Value::Object(m), true) if m.contains_key("params") => (
            m.get("params").cloned().unwrap_or_else(|| json!({})),
            m.get("state")
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({})),
        ),
        (p, _) => (p.clone(), json!({})),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null (nothing)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
