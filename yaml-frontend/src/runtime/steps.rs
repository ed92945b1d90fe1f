//! The steps the workflow itself performs: `condition_task` (evaluated in the workflow — it
//! is a pure function of journaled data), `timer_task` and `gate_task` (durable waits).

use magrathea_core::{
    AnswerOutcome, GateKind, GateOutcome, GateSpec, RetryPolicy, TaskCall, TaskError, TaskOptions,
    TaskRegistration,
};
use serde_json::{Map, Value, json};

use super::dispatch::Completion;
use super::interpreter::Run;
use super::{GATE_TASK, TIMER_TASK};
use crate::ErrorKind;
use crate::TemplateValue;
use crate::ast::{Criticality, InboxKind};
use crate::condition::Condition;
use crate::parse_duration;
use crate::plan::{GatePlan, Plan, PlanState, StateId, TimerDuration};

/// `condition_task`: the first rule that holds routes (`nextStateOverride`), else `else:`.
///
/// As in the reference's lifecycle (§5, §16), the evaluation is a task step of its own: a
/// `TaskStartedRecord` (task `condition_task`, the state's rules as input) and a
/// `TaskResultRecord` whose output is the choice (`{matched, next}`), or `technical_error`
/// with `{error}` when a rule cannot be evaluated. The rules are evaluated in the workflow (a
/// pure function of journaled data); the step carries the choice, and a replay takes the
/// journaled one. Runs journaled before, which recorded the choice as a `condition` side
/// effect, replay on that path.
pub(super) async fn condition(
    run: &Run<'_>,
    plan: &Plan,
    state: &PlanState,
    attempt: u32,
    rules: &[(Condition, StateId)],
    otherwise: Option<StateId>,
) -> Completion {
    let decide = || decide(run, plan, rules, otherwise);
    if run.ctx.journaled_side_effect(CONDITION_SIDE_EFFECT) {
        let decided = run.ctx.side_effect(CONDITION_SIDE_EFFECT, decide);
        return routed(Ok(decided));
    }
    let mut input = json!({
        "rules": rules
            .iter()
            .map(|(cond, to)| json!({ "if": cond.source(), "to": plan.states[*to].name }))
            .collect::<Vec<_>>(),
    });
    if let (Some(to), Some(m)) = (otherwise, input.as_object_mut()) {
        m.insert("else".into(), Value::String(plan.states[to].name.clone()));
    }
    let decided = decide();
    let once = TaskOptions {
        retry: RetryPolicy::none(),
        timeout: None,
    };
    let body = TaskRegistration::new(CONDITION_TASK, once.clone(), move |_: Value, _| {
        let decided = decided.clone();
        async move {
            match decided.get("error").and_then(Value::as_str) {
                Some(error) => Err(TaskError::terminal(error)
                    .with_kind(ErrorKind::TechnicalError.as_str())
                    .with_output(json!({ "error": error }))),
                None => Ok(decided),
            }
        }
    });
    let result = run
        .ctx
        .task_with(TaskCall {
            task: CONDITION_TASK.into(),
            name: Some(state.name.clone()),
            input,
            options: Some(once),
            registration: Some(body),
            first_attempt: Some(attempt),
        })
        .await;
    match result {
        // A cancel that reached the step is the run's cancel, not a failed evaluation: the
        // run ends CANCELLED, as with any other task the cancel finds in flight.
        Err(e) if e.kind == ErrorKind::Cancelled.as_str() => Completion::from_task(Err(e)),
        other => routed(other.map_err(|e| e.output)),
    }
}

/// The journaled task of a `condition_task`'s evaluation.
const CONDITION_TASK: &str = "condition_task";
/// The side effect runs journaled before recorded the choice as.
const CONDITION_SIDE_EFFECT: &str = "condition";

/// The choice of a `condition_task`: `{matched, next}` (`next` null when no rule holds and
/// there is no `else:`), or `{error}` when a rule cannot be evaluated.
fn decide(
    run: &Run<'_>,
    plan: &Plan,
    rules: &[(Condition, StateId)],
    otherwise: Option<StateId>,
) -> Value {
    for (cond, to) in rules {
        match cond.evaluate(&run.vars, run.params) {
            Ok(true) => {
                return json!({ "matched": cond.source(), "next": plan.states[*to].name });
            }
            Ok(false) => {}
            Err(e) => {
                return json!({
                    "error": format!("[MAG-YC002] condition `{}`: {e}", cond.source())
                });
            }
        }
    }
    match otherwise {
        Some(to) => json!({ "matched": "else", "next": plan.states[to].name }),
        None => json!({ "next": null }),
    }
}

/// The completion of a `condition_task` from its choice (`Ok`), or the output of its failed
/// evaluation (`Err`, `{error}`).
fn routed(decided: Result<Value, Value>) -> Completion {
    let decided = match decided {
        Ok(decided) if decided.get("error").is_none() => decided,
        Ok(failed) | Err(failed) => return Completion::of("technical_error", failed),
    };
    let mut done = Completion::of("success", decided.clone());
    done.next = decided
        .get("next")
        .and_then(Value::as_str)
        .map(str::to_string);
    done
}

/// `timer_task`: a durable sleep. A templated duration that does not parse ends the state
/// with `technical_error`, and the journal records why (a `timer_duration` side effect).
pub(super) async fn timer(
    run: &Run<'_>,
    state: &PlanState,
    attempt: u32,
    duration: &TimerDuration,
) -> Completion {
    let input = match duration {
        TimerDuration::Fixed(d) => {
            json!({ "durationMs": u64::try_from(d.as_millis()).unwrap_or(u64::MAX) })
        }
        TimerDuration::Templated(t) => json!({ "duration": run.text(t) }),
    };
    held(run, state, attempt, TIMER_TASK, input, sleep(run, duration)).await
}

/// Runs `work`, a step the workflow carries out itself (a timer, a gate), as a task step of
/// task `task` labelled with the state, as the reference journals every task (§5): a
/// `TaskStartedRecord` with `input` before the work's own records, a `TaskResultRecord` with
/// the state's outcome and output after them. A run journaled before the work was a task step
/// goes on without one.
async fn held(
    run: &Run<'_>,
    state: &PlanState,
    attempt: u32,
    task: &str,
    input: Value,
    work: impl std::future::Future<Output = Completion>,
) -> Completion {
    let held = run.ctx.held_task(task, &state.name, input, attempt);
    let done = work.await;
    if let Some(held) = held {
        // A state that failed (a timer's duration that does not parse) says why; an answer's
        // own fields are output, whatever their names.
        let error = (done.outcome == ErrorKind::TechnicalError.as_str())
            .then(|| done.output.get("error").and_then(Value::as_str))
            .flatten()
            .map(str::to_string);
        held.finish(&done.outcome, done.output.clone(), error);
    }
    done
}

/// The durable sleep of a `timer_task`.
async fn sleep(run: &Run<'_>, duration: &TimerDuration) -> Completion {
    let d = match duration {
        TimerDuration::Fixed(d) => *d,
        TimerDuration::Templated(t) => {
            let text = run.text(t);
            match parse_duration(&text) {
                Ok(d) => d,
                Err(e) => {
                    let error = format!("[MAG-Y017] timer duration '{text}': {e}");
                    let recorded = run
                        .ctx
                        .side_effect("timer_duration", || json!({ "error": error }));
                    return Completion::of("technical_error", recorded);
                }
            }
        }
    };
    match run.ctx.sleep(d).await {
        Ok(()) => Completion::of("fired", Value::Null),
        Err(e) => Completion::of(&e.kind, Value::Null),
    }
}

fn gate_spec(run: &Run<'_>, state: &PlanState, gate: &GatePlan) -> GateSpec {
    let text = |t: &Option<crate::Template>| t.as_ref().map(|t| run.text(t));
    let kind = match gate.kind {
        InboxKind::Decision => GateKind::Decision,
        InboxKind::Feedback => GateKind::Feedback,
        InboxKind::Approval => GateKind::Approval,
    };
    let criticality = match gate.criticality {
        Criticality::Low => "LOW",
        Criticality::Critical => "CRITICAL",
        Criticality::Normal => "NORMAL",
    };
    // §3.4: the spec's value, else the starter, else `@system`; a blank name is no one.
    let assigned_to = text(&gate.assigned_to)
        .filter(|s| !s.trim().is_empty())
        .or_else(|| Some(run.start.started_by.clone()).filter(|s| !s.trim().is_empty()))
        .unwrap_or_else(|| "@system".into());
    GateSpec {
        kind,
        title: text(&gate.title).unwrap_or_else(|| state.name.clone()),
        body: text(&gate.body).unwrap_or_default(),
        options: gate
            .options
            .iter()
            .flat_map(|o| options(run, o))
            .filter(|o| !o.is_empty())
            .collect(),
        assigned_to,
        criticality: criticality.into(),
        tags: gate.tags.iter().map(|t| run.text(t)).collect(),
        timeout_ms: state.timeout.map(|d| d.as_millis() as u64),
        meta: gate_meta(run, state, gate),
    }
}

/// The options one `options:` entry gives: its text, or the items of the list one `${…}`
/// resolves to (`options: "${params.choices}"`), each as text.
fn options(run: &Run<'_>, option: &TemplateValue) -> Vec<String> {
    let text = |v: Value| match v {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    };
    match run.value(option) {
        Value::Array(items) => items.into_iter().map(text).collect(),
        other => vec![text(other)],
    }
}

/// The gate's `meta`: what the inbox shows, and the approval rules the server enforces when
/// a document declares them (absent otherwise, so existing items keep their exact meta).
fn gate_meta(run: &Run<'_>, state: &PlanState, gate: &GatePlan) -> Value {
    let mut meta = json!({
        "kind": "workflow.gate",
        "workflowName": run.start.workflow_name,
        "workflowState": state.name,
    });
    let declared = gate.approvers.is_some() || gate.quorum > 1 || !gate.self_approval;
    if declared && let Some(m) = meta.as_object_mut() {
        if let Some(a) = &gate.approvers {
            m.insert("approvers".into(), run.approvers(a));
        }
        m.insert("quorum".into(), json!(gate.quorum));
        m.insert("selfApproval".into(), json!(gate.self_approval));
        let mut starters = vec![run.start.started_by.clone()];
        starters.extend(run.start.requested_by.clone());
        m.insert("startedBy".into(), json!(starters));
    }
    meta
}

/// `gate_task`: an inbox item; the answer's outcome routes (reference §3.4).
pub(super) async fn gate(
    run: &Run<'_>,
    state: &PlanState,
    attempt: u32,
    plan: &GatePlan,
) -> Completion {
    let gate = gate_spec(run, state, plan);
    let input = json!({
        "kind": gate.kind,
        "title": gate.title,
        "assignedTo": gate.assigned_to,
    });
    if gate.kind == GateKind::Decision && gate.options.is_empty() {
        // Options from a placeholder that resolved to no option: nobody could decide.
        let error = format!(
            "[MAG-YR003] DECISION gate '{}' has no option to choose from: its options resolved \
             to an empty list",
            state.name
        );
        let done = async move { Completion::of("technical_error", json!({ "error": error })) };
        return held(run, state, attempt, GATE_TASK, input, done).await;
    }
    held(run, state, attempt, GATE_TASK, input, answer(run, gate)).await
}

/// The answer to a `gate_task`'s inbox item, as the state's completion.
async fn answer(run: &Run<'_>, gate: GateSpec) -> Completion {
    let kind = gate.kind;
    match run.ctx.gate(gate).await {
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
