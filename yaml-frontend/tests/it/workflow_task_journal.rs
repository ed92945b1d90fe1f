//! A `workflow_task` in the journal (reference §3.7 and §5: every task writes a
//! `TaskStartedRecord` and a `TaskResultRecord`): the state is a task step of task
//! `workflow_task` around its sub-run's records, and journals written before it was one
//! (`tests/journals/workflow_task/`, written by that code) replay on the path they took.

use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{Entry, GateAnswer, InboxFilter, MemoryStore, Record, RunStatus};
use serde_json::{Value, json};

use crate::common::Project;

async fn project(docs: &[(&str, &str)]) -> Project {
    let p = Project::on(Arc::new(MemoryStore::new()), |r| r).await;
    for (name, body) in docs {
        p.workflow(name, body);
    }
    p
}

/// A journal of `tests/journals/workflow_task/`, written before the state was a task step.
fn earlier(name: &str) -> Vec<Entry> {
    let path = format!(
        "{}/tests/journals/workflow_task/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{path}: {e}"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}")))
        .collect()
}

/// The journal's task records: `(started|result, task or outcome, state or error)`.
fn task_records(journal: &[Entry]) -> Vec<(String, String, String)> {
    journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskStarted { task, name, .. } => {
                Some(("started".into(), task.clone(), name.clone()))
            }
            Record::TaskResult { outcome, error, .. } => Some((
                "result".into(),
                outcome.to_string(),
                error.clone().unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

/// `journal` as JSON records, edited by `edit` (which drops a record by returning `None`),
/// renumbered, and read back.
fn edited(journal: &[Entry], mut edit: impl FnMut(Value) -> Option<Value>) -> Vec<Entry> {
    let mut out = Vec::new();
    for entry in journal {
        let Some(mut e) = edit(serde_json::to_value(entry).unwrap()) else {
            continue;
        };
        e["seq"] = json!(out.len());
        out.push(serde_json::from_value(e).unwrap());
    }
    out
}

/// Every prefix of `journal` (a run caught at any record) replays.
fn every_prefix_replays(p: &Project, journal: &[Entry]) {
    for n in 1..=journal.len() {
        if let Err(e) = p.engine.check_replay(journal[..n].to_vec()) {
            panic!("the first {n} records do not replay: {e}");
        }
    }
}

const FAILING_CHILD: &str = "start: bad\nstates:\n  bad: { type: terminal, outcome: failure, result: { summary: broken } }\n";

#[tokio::test]
async fn a_sub_run_is_a_task_step_whose_result_is_the_states_outcome() {
    let p = project(&[
        (
            "parent",
            "parameters:\n  which: { type: string }\nstart: build\nstates:\n  build:\n    type: workflow_task\n    workflow: \"${params.which}\"\n    params: { n: 7 }\n    storeAs: built\n    on: { success: done }\n    catch: { failure: escalate }\n  done: { type: terminal, result: \"${state.built}\" }\n  escalate: { type: terminal, result: \"${state.built.summary}\" }\n",
        ),
        (
            "good",
            "parameters:\n  n: { type: integer }\nstart: d\nstates:\n  d: { type: terminal, result: \"got ${params.n}\" }\n",
        ),
        ("bad", FAILING_CHILD),
    ])
    .await;
    let s = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());

    let v = p.run("parent", json!({ "which": "good" })).await;
    assert_eq!(v.result, Some(json!("got 7")), "{v:?}");
    let journal = p.engine.journal(v.workflow_run_id).unwrap();
    assert_eq!(
        task_records(&journal),
        [
            s("started", "workflow_task", "build"),
            s("result", "success", "")
        ]
    );
    // The step's input names the workflow and its parameters; its output is the sub-run's
    // result; the sub-run's own records lie between the two.
    let types: Vec<&str> = journal.iter().map(|e| e.record.type_name()).collect();
    let at = |t: &str| types.iter().position(|x| *x == t).unwrap();
    assert!(at("TaskStartedRecord") < at("ChildStartedRecord"));
    assert!(at("ChildFinishedRecord") < at("TaskResultRecord"));
    assert!(at("TaskResultRecord") < at("VarRecord"), "{types:?}");
    let (input, output) = journal
        .iter()
        .fold((None, None), |(i, o), e| match &e.record {
            Record::TaskStarted { input, .. } => (Some(input.clone()), o),
            Record::TaskResult { output, .. } => (i, Some(output.clone())),
            _ => (i, o),
        });
    assert_eq!(
        input,
        Some(json!({ "workflow": "good", "params": { "n": 7 } }))
    );
    assert_eq!(output, Some(json!("got 7")));
    p.engine.check_replay(journal).expect("the journal replays");

    // A failed sub-run: the step's result is `failure`, with an error naming the sub-run
    // and its reason; the result the sub-run left is the output.
    let v = p.run("parent", json!({ "which": "bad" })).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    let journal = p.engine.journal(v.workflow_run_id).unwrap();
    let records = task_records(&journal);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[1].1, "failure");
    assert!(
        records[1]
            .2
            .starts_with("workflow_task 'build': the sub-run ")
            && records[1].2.ends_with(
                "of `bad` ended FAILED: terminal state 'bad' reached with outcome failure"
            ),
        "{}",
        records[1].2
    );
    every_prefix_replays(&p, &journal);

    // A sub-run that cannot start: one task step (not a second task inside it), `failure`.
    let v = p.run("parent", json!({ "which": "ghost" })).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let journal = p.engine.journal(v.workflow_run_id).unwrap();
    let records = task_records(&journal);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0], s("started", "workflow_task", "build"));
    assert_eq!(records[1].1, "failure");
    assert!(
        records[1]
            .2
            .starts_with("[MAG-YR002] workflow_task 'build' cannot start workflow `ghost`"),
        "{}",
        records[1].2
    );
    every_prefix_replays(&p, &journal);
}

/// A parent that waits on its sub-run has the step open, its result written once the sub-run
/// ends; a timeout ends the step with `timeout` and cancels the sub-run.
#[tokio::test]
async fn a_step_stays_open_while_its_sub_run_waits_and_a_timeout_ends_it() {
    let asks = "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: ship? }\n    on: { approved: done }\n  done: { type: terminal, result: shipped }\n";
    let p = project(&[
        (
            "parent",
            "start: build\nstates:\n  build:\n    type: workflow_task\n    workflow: asks\n    storeAs: built\n    on: { success: done }\n  done: { type: terminal, result: \"${state.built}\" }\n",
        ),
        (
            "impatient",
            "start: build\nstates:\n  build:\n    type: workflow_task\n    workflow: asks\n    timeoutSeconds: 1\n    catch: { timeout: late }\n  late: { type: terminal, result: late }\n",
        ),
        ("asks", asks),
    ])
    .await;
    let run = p
        .runtime
        .start(&p.engine, &p.scope, "parent", json!({}), "tester")
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while p.engine.inbox(InboxFilter::Pending).unwrap().is_empty() {
        assert!(std::time::Instant::now() < deadline, "no inbox item");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let open = p.engine.journal(run).unwrap();
    assert_eq!(
        task_records(&open),
        [(
            "started".to_string(),
            "workflow_task".to_string(),
            "build".to_string()
        )]
    );
    let item = p.engine.inbox(InboxFilter::Pending).unwrap().remove(0);
    p.engine
        .answer_gate(&item.id, GateAnswer::approve())
        .await
        .unwrap();
    let v = p.engine.wait(run).await.unwrap();
    assert_eq!(v.result, Some(json!("shipped")));
    let journal = p.engine.journal(run).unwrap();
    assert_eq!(task_records(&journal).len(), 2);
    // A crash while the sub-run waited leaves the open step; the replay reaches it again.
    p.engine.check_replay(open).expect("the open step replays");

    let v = p.run("impatient", json!({})).await;
    assert_eq!(v.result, Some(json!("late")), "{v:?}");
    let records = task_records(&p.engine.journal(v.workflow_run_id).unwrap());
    assert_eq!(records.last().unwrap().1, "timeout", "{records:?}");
}

/// Runs journaled before the state was a task step: the three kinds the earlier code wrote
/// (a sub-run that could not start, a failed sub-run's result kept, a parent waiting on its
/// sub-run) replay, at every record.
#[tokio::test]
async fn journals_written_before_the_task_step_replay_on_their_path() {
    let p = project(&[]).await;
    for name in [
        "not_started.jsonl",
        "failed_result.jsonl",
        "waiting_on_child.jsonl",
    ] {
        let journal = earlier(name);
        assert!(
            task_records(&journal)
                .iter()
                .all(|(_, task, _)| task != "workflow_task" || name == "not_started.jsonl"),
            "{name} is a journal of the earlier code"
        );
        every_prefix_replays(&p, &journal);
    }
}

/// Before that, a sub-run that could not start was no task at all (no patch marker, no
/// journaled message, no task records) and a failed sub-run's description was stored in
/// place of its result (no patch marker): such runs replay on that path too.
#[tokio::test]
async fn journals_written_before_the_patch_markers_replay_on_their_path() {
    let p = project(&[]).await;

    // A sub-run that could not start: four records fewer, the steps after them three lower,
    // and the variable the error alone.
    let before = earlier("not_started.jsonl");
    let task_step = before.iter().find_map(|e| match &e.record {
        Record::TaskStarted { step, task, .. } if task == "workflow_task" => Some(*step),
        _ => None,
    });
    let task_step = task_step.map(u64::from).expect("the not-started task");
    // What that code stored: the loader's words alone.
    let why = before.iter().find_map(|e| match &e.record {
        Record::SideEffect { name, value, .. } if name == "workflow_document" => {
            value.get("error").cloned()
        }
        _ => None,
    });
    let why = why.expect("the journaled lookup failed");
    let oldest = edited(&before, |mut e| {
        if e["type"] == "VarRecord" {
            e["value"] = json!({ "error": why });
        }
        let dropped = match e["type"].as_str() {
            Some("SideEffectRecord") => e["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("patch:") || n == "workflow_task_not_started"),
            Some("TaskStartedRecord" | "TaskResultRecord") => e["step"].as_u64() == Some(task_step),
            _ => false,
        };
        if let Some(step) = e["step"].as_u64()
            && step > task_step
        {
            e["step"] = json!(step - 3);
        }
        (!dropped).then_some(e)
    });
    assert_eq!(oldest.len(), before.len() - 4);
    every_prefix_replays(&p, &oldest);

    // A failed sub-run's description stored, without the marker.
    let before = earlier("failed_result.jsonl");
    let (mut child, mut end) = (None, None);
    for e in &before {
        match &e.record {
            Record::ChildStarted { child_run_id, .. } => child = Some(*child_run_id),
            Record::ChildFinished {
                status,
                result,
                reason,
                ..
            } => end = Some((*status, result.clone(), reason.clone())),
            _ => {}
        }
    }
    let (status, result, reason) = end.expect("the sub-run ended");
    let described = json!({
        "workflowRunId": child.expect("the sub-run started"),
        "status": status,
        "reason": reason,
        "result": result,
    });
    let mut marker = None;
    let oldest = edited(&before, |mut e| {
        if e["type"] == "SideEffectRecord"
            && e["name"].as_str().is_some_and(|n| n.starts_with("patch:"))
        {
            marker = e["step"].as_u64();
            return None;
        }
        if let (Some(step), Some(m)) = (e["step"].as_u64(), marker)
            && step > m
        {
            e["step"] = json!(step - 1);
        }
        if e["type"] == "VarRecord" {
            e["value"] = described.clone();
        }
        Some(e)
    });
    assert!(marker.is_some(), "the earlier journal holds the marker");
    every_prefix_replays(&p, &oldest);
}
