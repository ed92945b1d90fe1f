//! Projections of the journal: the run view and the inbox.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::id::RunId;
use crate::record::{Entry, GateAnswer, GateKind, Record, RunStatus, Step};
use crate::store::RunSummary;
use crate::vocabulary::RunScope;

/// A run as the API and the `magrathea` command show it: a projection of its journal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    /// The run id.
    pub workflow_run_id: RunId,
    /// The workflow.
    pub workflow_name: String,
    /// The workflow's version.
    pub workflow_version: String,
    /// Status.
    pub status: RunStatus,
    /// The last state entered (YAML runs).
    pub current_state: Option<String>,
    /// The caller's parameters.
    pub params: Value,
    /// Variables written so far (`storeAs`).
    pub vars: Map<String, Value>,
    /// The result, once written.
    pub result: Option<Value>,
    /// Why the run failed, was cancelled or is blocked.
    pub reason: Option<String>,
    /// Who started it.
    pub started_by: String,
    /// The parent run, for child runs.
    pub parent_run_id: Option<RunId>,
    /// `tenant/project` scope, or empty.
    pub scope: RunScope,
    /// Start time, ms since the epoch.
    pub created_at: u64,
    /// Time of the last record, ms since the epoch.
    pub updated_at: u64,
    /// End time, for terminal runs.
    pub finished_at: Option<u64>,
    /// When the run was last paused (its last `PauseRequestedRecord`), ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<u64>,
    /// When the run was last resumed (its last `ResumeRequestedRecord`), ms since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resumed_at: Option<u64>,
    /// Every execution of a task attempt after the first, in journal order: the attempt was
    /// running when the process driving the run stopped (a crash, a kill, a lost lease), and
    /// recovery ran it again, so its side effects may have happened more than once.
    #[serde(default)]
    pub re_executions: Vec<ReExecution>,
    /// For a FAILED run, the last task failure it journaled: the cause behind a `reason` such
    /// as `no transition for outcome 'permission_error'`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<TaskFailure>,
}

/// A task attempt that failed, as its `TaskResultRecord` tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskFailure {
    /// The task's step.
    pub step: Step,
    /// The step's label: the YAML state, or the task name for code.
    pub name: String,
    /// The attempt that failed.
    pub attempt: u32,
    /// The error kind (`technical_error`, `permission_error`, …).
    pub outcome: String,
    /// The error's message.
    pub error: String,
}

/// One journaled re-execution of a task attempt (a `TaskRestartedRecord`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReExecution {
    /// The task's step.
    pub step: Step,
    /// The step's label: the YAML state, or the task name for code.
    pub name: String,
    /// The attempt that ran again.
    pub attempt: u32,
    /// Which execution of the attempt: 2 for the first re-execution.
    pub execution: u32,
    /// The process that ran it again (`host:pid`).
    pub worker: String,
    /// When it was journaled, ms since the epoch.
    pub at: u64,
}

impl RunView {
    /// Builds the view from a run's journal and its indexed summary.
    pub fn project(entries: &[Entry], summary: &RunSummary) -> Self {
        let mut view = RunView {
            workflow_run_id: summary.run_id,
            workflow_name: summary.workflow_name.clone(),
            workflow_version: String::new(),
            status: summary.status,
            current_state: None,
            params: Value::Null,
            vars: Map::new(),
            result: None,
            reason: None,
            started_by: String::new(),
            parent_run_id: summary.parent,
            scope: summary.scope.clone(),
            created_at: summary.created_ms,
            updated_at: summary.updated_ms,
            finished_at: None,
            paused_at: None,
            resumed_at: None,
            re_executions: Vec::new(),
            last_error: None,
        };
        let mut last_failure: Option<(usize, Step, u32, String, String)> = None;
        // The highest execution listed of each (step, attempt): a restart that repeats it
        // follows an execution that waited in its lane and never began.
        let mut listed: Vec<(Step, u32, u32)> = Vec::new();
        for (i, e) in entries.iter().enumerate() {
            view.updated_at = view.updated_at.max(e.at_ms);
            match &e.record {
                Record::Start(s) => {
                    view.workflow_version = s.workflow_version.clone();
                    view.params = s.params.clone();
                    view.started_by = s.started_by.clone();
                    view.created_at = e.at_ms;
                    // A retried run begins with the variables its entry froze.
                    if let Some(Value::Object(vars)) = s.entry.as_ref().map(|e| &e.vars) {
                        view.vars.clone_from(vars);
                    }
                }
                Record::StateEntered { state, .. } => view.current_state = Some(state.clone()),
                Record::Var { key, value, .. } => {
                    view.vars.insert(key.clone(), value.clone());
                }
                Record::Result { result, .. } => view.result = Some(result.clone()),
                Record::PauseRequested { .. } => view.paused_at = Some(e.at_ms),
                Record::ResumeRequested { .. } => view.resumed_at = Some(e.at_ms),
                // An attempt that waited in its lane and never began runs again under its
                // own execution number (1, or the number of a re-execution that never began):
                // nothing ran twice, so it is no re-execution.
                Record::TaskRestarted {
                    step,
                    attempt,
                    execution,
                    worker,
                } if *execution > 1 && newer(&mut listed, *step, *attempt, *execution) => {
                    view.re_executions.push(ReExecution {
                        step: *step,
                        // Rare: looked up when met rather than tracked for every task.
                        name: task_name(&entries[..i], *step),
                        attempt: *attempt,
                        execution: *execution,
                        worker: worker.clone(),
                        at: e.at_ms,
                    });
                }
                // The same execution restarted again: the earlier one waited in its lane and
                // never began; the process and time that count are this one's.
                Record::TaskRestarted {
                    step,
                    attempt,
                    execution,
                    worker,
                } => {
                    if let Some(listed) = view.re_executions.iter_mut().find(|r| {
                        r.step == *step && r.attempt == *attempt && r.execution == *execution
                    }) {
                        listed.worker.clone_from(worker);
                        listed.at = e.at_ms;
                    }
                }
                Record::TaskResult {
                    step,
                    attempt,
                    outcome,
                    error: Some(error),
                    ..
                } => {
                    last_failure = Some((i, *step, *attempt, outcome.to_string(), error.clone()));
                }
                Record::Status { status, reason } => {
                    if status.is_terminal() {
                        view.finished_at = Some(e.at_ms);
                    }
                    view.reason = reason.clone();
                }
                _ => {}
            }
        }
        if matches!(
            view.status,
            RunStatus::Running | RunStatus::Waiting | RunStatus::Done | RunStatus::Paused
        ) {
            view.reason = None;
        }
        if view.status == RunStatus::Failed
            && let Some((i, step, attempt, outcome, error)) = last_failure
        {
            view.last_error = Some(TaskFailure {
                step,
                name: task_name(&entries[..i], step),
                attempt,
                outcome,
                error,
            });
        }
        view
    }
}

/// Whether `execution` of `step`'s `attempt` is above the last one `listed` holds for it;
/// if so, it becomes that one.
fn newer(listed: &mut Vec<(Step, u32, u32)>, step: Step, attempt: u32, execution: u32) -> bool {
    match listed
        .iter_mut()
        .find(|(s, a, _)| *s == step && *a == attempt)
    {
        Some((_, _, last)) if *last >= execution => false,
        Some((_, _, last)) => {
            *last = execution;
            true
        }
        None => {
            listed.push((step, attempt, execution));
            true
        }
    }
}

/// The label of the task at `step`, from its last `TaskStartedRecord` in `entries`.
fn task_name(entries: &[Entry], step: Step) -> String {
    entries
        .iter()
        .rev()
        .find_map(|e| match &e.record {
            Record::TaskStarted { step: s, name, .. } if *s == step => Some(name.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// The state of an inbox item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InboxStatus {
    /// Waiting for an answer.
    Pending,
    /// Answered.
    Answered,
    /// The gate's timeout fired first.
    TimedOut,
    /// The run ended (or was cancelled) before an answer, or stopped waiting for it (the
    /// code dropped the gate's future, e.g. a timer won a select).
    Closed,
}

/// An inbox item opened by a gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    /// `<run_id>-<step>`.
    pub id: String,
    /// APPROVAL, DECISION or FEEDBACK.
    pub kind: GateKind,
    /// Title.
    pub title: String,
    /// Body.
    pub body: String,
    /// Choices (DECISION).
    pub options: Vec<String>,
    /// Assignee.
    pub assigned_to: String,
    /// Criticality.
    pub criticality: String,
    /// Tags.
    pub tags: Vec<String>,
    /// The run.
    pub workflow_run_id: RunId,
    /// The run's workflow.
    pub workflow_name: String,
    /// The YAML state of the gate, if any.
    pub workflow_state: Option<String>,
    /// Status.
    pub status: InboxStatus,
    /// The answer, once answered; on a `TIMED_OUT` or `CLOSED` item, the answer that came
    /// after it ended (the run did not react to it).
    pub answer: Option<GateAnswer>,
    /// Opened at, ms since the epoch.
    pub created_at: u64,
    /// When the gate's timeout fires, ms since the epoch (gates with a timeout only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// When the answer was journaled, ms since the epoch (items with an answer only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<u64>,
    /// Extra data of the gate (for YAML gates: `kind`, `workflowName`, `workflowState`, and
    /// the approval rules a document declares).
    pub meta: Value,
    /// What the reference's inbox item carries for the UI (§3.4): `kind: "workflow.gate"`
    /// as a discriminator, with `workflowRunId`, `workflowName` and `workflowState`.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub payload: Value,
}

/// The id of the inbox item of `step` in `run`.
pub(crate) fn inbox_item_id(run: RunId, step: Step) -> String {
    format!("{run}-{step}")
}

/// Splits an inbox item id into run and step.
pub(crate) fn parse_inbox_item_id(id: &str) -> Option<(RunId, Step)> {
    let (run, step) = id.rsplit_once('-')?;
    Some((run.parse().ok()?, step.parse().ok()?))
}

/// The inbox items a run's journal opened, in order.
pub(crate) fn inbox_items(entries: &[Entry], summary: &RunSummary) -> Vec<InboxItem> {
    let mut items: Vec<InboxItem> = Vec::new();
    let find = |items: &mut Vec<InboxItem>, step: Step| {
        let id = inbox_item_id(summary.run_id, step);
        items.iter_mut().position(|i| i.id == id)
    };
    for e in entries {
        match &e.record {
            Record::GateOpened { step, gate } => {
                let workflow_state = gate
                    .meta
                    .get("workflowState")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                items.push(InboxItem {
                    id: inbox_item_id(summary.run_id, *step),
                    kind: gate.kind,
                    title: gate.title.clone(),
                    body: gate.body.clone(),
                    options: gate.options.clone(),
                    assigned_to: gate.assigned_to.clone(),
                    criticality: gate.criticality.clone(),
                    tags: gate.tags.clone(),
                    workflow_run_id: summary.run_id,
                    workflow_name: summary.workflow_name.clone(),
                    payload: serde_json::json!({
                        "kind": "workflow.gate",
                        "workflowRunId": summary.run_id.to_string(),
                        "workflowName": summary.workflow_name,
                        "workflowState": workflow_state,
                    }),
                    workflow_state,
                    status: InboxStatus::Pending,
                    answer: None,
                    created_at: e.at_ms,
                    expires_at: gate.timeout_ms.map(|t| e.at_ms.saturating_add(t)),
                    answered_at: None,
                    meta: gate.meta.clone(),
                });
            }
            Record::GateAnswered { step, answer } => {
                if let Some(i) = find(&mut items, *step) {
                    items[i].status = InboxStatus::Answered;
                    items[i].answer = Some(answer.clone());
                    items[i].answered_at = Some(e.at_ms);
                }
            }
            // A late answer lands on an item that has none; the item keeps its status (the
            // run did not react to it).
            Record::Ignored {
                step,
                answer: Some(answer),
                ..
            } => {
                if let Some(i) = find(&mut items, *step)
                    && items[i].answer.is_none()
                {
                    items[i].answer = Some(answer.clone());
                    items[i].answered_at = Some(e.at_ms);
                }
            }
            Record::TimerFired { step } => {
                if let Some(i) = find(&mut items, *step)
                    && items[i].status == InboxStatus::Pending
                {
                    items[i].status = InboxStatus::TimedOut;
                }
            }
            Record::GateWithdrawn { step, .. } => {
                if let Some(i) = find(&mut items, *step)
                    && items[i].status == InboxStatus::Pending
                {
                    items[i].status = InboxStatus::Closed;
                }
            }
            Record::CancelRequested { .. } => {
                for i in items
                    .iter_mut()
                    .filter(|i| i.status == InboxStatus::Pending)
                {
                    i.status = InboxStatus::Closed;
                }
            }
            _ => {}
        }
    }
    if summary.status.is_terminal() {
        for i in items
            .iter_mut()
            .filter(|i| i.status == InboxStatus::Pending)
        {
            i.status = InboxStatus::Closed;
        }
    }
    items
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::RunId;

    fn entries(records: Vec<Record>) -> Vec<Entry> {
        records
            .into_iter()
            .enumerate()
            .map(|(i, record)| Entry {
                seq: i as u64,
                at_ms: 1_000 + i as u64,
                record,
            })
            .collect()
    }

    fn restarted(execution: u32) -> Record {
        Record::TaskRestarted {
            step: 1,
            attempt: 1,
            execution,
            worker: "host:1".into(),
        }
    }

    /// A process stopped three times around one attempt: once after it began (it may have
    /// run), then twice while its second execution waited in its lane and never began. Only
    /// the execution that may have run twice is a re-execution, with the process and time of
    /// the restart that began it.
    #[test]
    fn a_restart_of_an_execution_that_never_began_is_no_re_execution() {
        let queued = || Record::TaskQueued {
            step: 1,
            attempt: 1,
        };
        let journal = entries(vec![
            Record::TaskStarted {
                step: 1,
                attempt: 1,
                task: "ship".into(),
                name: "ship".into(),
                input_hash: 0,
                input: Value::Null,
            },
            restarted(2),
            queued(),
            restarted(2),
            queued(),
            restarted(2),
            queued(),
            Record::TaskAdmitted {
                step: 1,
                attempt: 1,
            },
            restarted(3),
        ]);
        let summary = RunSummary {
            run_id: RunId::from_u128(7),
            workflow_name: "w".into(),
            frontend: "code".into(),
            status: RunStatus::Running,
            created_ms: 1_000,
            updated_ms: 1_000,
            parent: None,
            scope: Default::default(),
        };
        let view = RunView::project(&journal, &summary);
        let listed: Vec<(u32, u64, &str)> = view
            .re_executions
            .iter()
            .map(|r| (r.execution, r.at, r.name.as_str()))
            .collect();
        // Execution 2 is shown as the restart that began (the third, at 1_005), not the first.
        assert_eq!(listed, [(2, 1_005, "ship"), (3, 1_008, "ship")]);
    }
}
