//! `parallel_task` and `foreach_task`: sub-runs side by side, results in order, failure
//! tolerance, cancellation of the rest, replay after a restart, and load-time diagnostics.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::Project;
use magrathea_core::{
    Engine, GateAnswer, InboxFilter, MemoryStore, Record, RunId, RunStatus, RunView, Store,
};
use magrathea_yaml::{LoadOptions, load_workflow};
use serde_json::{Value, json};

/// A child that returns its parameters.
const ECHO: &str = r#"
start: done
parameters:
  file: { type: string }
  n: { type: integer }
states:
  done:
    type: terminal
    result: { file: "${params.file}", n: "${params.n}" }
"#;

/// A child that fails for `n: 1` and returns `n` otherwise.
const MAYBE: &str = r##"
start: check
parameters:
  n: { type: integer, required: true }
states:
  check:
    type: condition_task
    transitions:
      - if: "#params['n'] == 1"
        to: bad
      - else: good
  good: { type: terminal, result: "${params.n}" }
  bad: { type: terminal, outcome: failure, result: "item ${params.n} is bad" }
"##;

/// The child run ids of `run`, in start order, and the most ever in flight at once — both
/// read from the parent's journal.
fn children(records: &[Record]) -> (Vec<RunId>, usize) {
    let (mut ids, mut now, mut most) = (Vec::new(), 0usize, 0usize);
    for r in records {
        match r {
            Record::ChildStarted { child_run_id, .. } => {
                ids.push(*child_run_id);
                now += 1;
                most = most.max(now);
            }
            Record::ChildFinished { .. } => now -= 1,
            _ => {}
        }
    }
    (ids, most)
}

/// A `foreach_task` over `params.files` running `process` for each, storing the results in
/// order; `extra` is more of the state's fields (indented as they are).
fn each_doc(extra: &str) -> String {
    format!(
        r#"
start: each
parameters:
  files: {{ type: array, required: true }}
states:
  each:
    type: foreach_task
    items: "${{params.files}}"
    workflow: process
    params: {{ file: "${{item}}", n: "${{index}}" }}
{extra}    storeAs: processed
    on: {{ success: end }}
  end: {{ type: terminal, result: "${{state.processed}}" }}
"#
    )
}

fn var(view: &RunView, key: &str) -> Value {
    view.vars.get(key).cloned().unwrap_or(Value::Null)
}

#[tokio::test]
async fn a_foreach_runs_its_items_two_at_a_time_and_keeps_their_order() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow("each", &each_doc("    maxParallelism: 2\n"));
    let files = json!(["a", "b", "c", "d", "e"]);
    let view = p.run("each", json!({ "files": files })).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    let expected: Vec<Value> = ["a", "b", "c", "d", "e"]
        .iter()
        .enumerate()
        .map(|(i, f)| json!({ "file": f, "n": i }))
        .collect();
    assert_eq!(view.result, Some(Value::Array(expected)));
    let (ids, most) = children(&p.records(&view));
    assert_eq!(ids.len(), 5, "one sub-run per item");
    assert_eq!(most, 2, "never more than maxParallelism sub-runs in flight");
}

/// Without `maxParallelism`, a fan-out keeps 64 sub-runs in flight, not all of its items.
#[tokio::test]
async fn a_foreach_without_max_parallelism_keeps_64_in_flight() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow("each", &each_doc(""));
    let files: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
    let view = p.run("each", json!({ "files": files })).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(
        view.result.as_ref().unwrap()[99],
        json!({"file": "f99", "n": 99})
    );
    let (ids, most) = children(&p.records(&view));
    assert_eq!(ids.len(), 100, "one sub-run per item");
    assert_eq!(most, 64, "the default window");
}

#[tokio::test]
async fn a_parallel_task_runs_an_inline_branch_and_a_workflow_branch() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow(
        "fan",
        r#"
start: first
parameters:
  who: { type: string, required: true }
states:
  first:
    type: condition_task
    transitions:
      - else: fan
  fan:
    type: parallel_task
    branches:
      build: { workflow: process, params: { file: "${params.who}", n: 7 } }
      greet:
        start: hello
        states:
          hello: { type: terminal, result: { who: "${params.who}", item: "${state.item}" } }
    storeAs: results
    on: { success: end }
  end: { type: terminal, result: "${state.results}" }
"#,
    );
    let view = p.run("fan", json!({ "who": "ada" })).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(
        view.result,
        Some(json!({
            "build": { "file": "ada", "n": 7 },
            "greet": { "who": "ada", "item": "" },
        }))
    );
}

#[tokio::test]
async fn an_inline_branch_sees_the_parents_variables_at_the_fork() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow(
        "fork",
        r#"
start: make
states:
  make:
    type: workflow_task
    workflow: process
    params: { file: "f", n: 1 }
    storeAs: made
    on: { success: fan }
  fan:
    type: parallel_task
    branches:
      look:
        start: seen
        states:
          seen: { type: terminal, result: "${state.made.file}" }
    storeAs: results
    on: { success: end }
  end: { type: terminal, result: "${state.results}" }
"#,
    );
    let view = p.run("fork", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(json!({ "look": "f" })));
}

/// A literal `items:` list may hold placeholders, in its items and inside them; each is
/// resolved with its JSON type when the state starts.
#[tokio::test]
async fn a_literal_item_list_resolves_the_placeholders_in_its_items() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "each",
        r#"
parameters:
  a: { type: string }
  n: { type: integer }
start: each
states:
  each:
    type: foreach_task
    items: ["${params.a}", "b", { k: "${params.a}", n: "${params.n}" }, "${params.n}"]
    params: { it: "${item}" }
    start: s
    states:
      s: { type: terminal, result: "${params.it}" }
    storeAs: out
    on: { success: end }
  end: { type: terminal, result: "${state.out}" }
"#,
    );
    let view = p.run("each", json!({"a": "A", "n": 7})).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(
        view.result,
        Some(json!(["A", "b", { "k": "A", "n": 7 }, 7]))
    );
}

/// An inline branch's states are states of the same file: the file's `defaults:` hold for
/// them (here a gate's default timeout), unless the branch declares its own.
#[tokio::test]
async fn an_inline_branch_takes_the_documents_default_timeouts() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "fan",
        r#"
defaults: { gateTimeoutSeconds: 0.2 }
start: fan
states:
  fan:
    type: parallel_task
    branches:
      ask:
        start: g
        states:
          g:
            type: gate_task
            inbox: { kind: APPROVAL, title: "ok?" }
            on: { approved: yes }
            catch: { timeout: late }
          yes: { type: terminal, result: approved }
          late: { type: terminal, result: timed out }
    storeAs: out
    on: { success: end }
  end: { type: terminal, result: "${state.out}" }
"#,
    );
    let view = p.run("fan", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(json!({"ask": "timed out"})));
}

fn failing_fan(tolerated: &str) -> String {
    format!(
        r#"
start: fan
states:
  fan:
    type: parallel_task
    branches:
      bad:
        start: fail
        states:
          fail: {{ type: terminal, outcome: failure, result: "broken" }}
      slow:
        start: wait
        states:
          wait: {{ type: timer_task, duration: "1h", on: {{ fired: ok }} }}
          ok: {{ type: terminal, result: "slept" }}
      quick:
        start: ok
        states:
          ok: {{ type: terminal, result: "quick" }}
    {tolerated}
    storeAs: results
    on: {{ success: end, failure: handle }}
  end: {{ type: terminal, result: "${{state.results}}" }}
  handle: {{ type: terminal, outcome: failure, result: "${{state.results}}" }}
"#
    )
}

#[tokio::test]
async fn the_first_failure_cancels_the_other_branches() {
    let p = Project::new(|rt| rt).await;
    p.workflow("fan", &failing_fan(""));
    let view = p.run("fan", json!({})).await;
    assert_eq!(view.status, RunStatus::Failed, "{:?}", view.reason);
    let out = var(&view, "results");
    let error = out["error"].as_str().unwrap_or_default();
    assert!(error.contains("[MAG-PR004]"), "{out}");
    assert!(
        error.contains("bad ("),
        "the output names the failed branch: {out}"
    );
    assert_eq!(out["failed"][0]["slot"], "bad");
    // The sleeping branch was cancelled with its parent's fan-out, and journaled so.
    let (ids, _) = children(&p.records(&view));
    let mut statuses = Vec::new();
    for id in ids {
        let child = p.engine.wait(id).await.unwrap();
        statuses.push((child.workflow_name.clone(), child.status));
    }
    assert!(
        statuses
            .iter()
            .any(|(name, s)| name.ends_with("#fan.slow") && *s == RunStatus::Cancelled),
        "{statuses:?}"
    );
    assert!(
        p.records(&view)
            .iter()
            .any(|r| matches!(r, Record::ChildCancelRequested { .. })),
        "the cancellation is journaled in the parent"
    );
}

#[tokio::test]
async fn a_tolerated_failure_is_reported_in_its_slot_and_the_run_goes_on() {
    let p = Project::new(|rt| rt).await;
    p.workflow("maybe", MAYBE);
    p.workflow(
        "each",
        r#"
start: each
states:
  each:
    type: foreach_task
    items: [0, 1, 2]
    workflow: maybe
    params: { n: "${item}" }
    toleratedFailures: 1
    storeAs: out
    on: { success: end }
  end: { type: terminal, result: "${state.out}" }
"#,
    );
    let view = p.run("each", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    let out = view.result.unwrap();
    assert_eq!(out[0], json!(0));
    assert_eq!(out[2], json!(2));
    assert_eq!(out[1]["status"], "FAILED");
    assert!(out[1]["workflowRunId"].is_string(), "{out}");
    assert!(out[1]["error"].is_string(), "{out}");
    // The failure terminal's result is kept, as a failed workflow_task's is.
    assert_eq!(out[1]["result"], "item 1 is bad", "{out}");
}

fn percent_doc(tolerated: &str) -> String {
    format!(
        r#"
start: each
states:
  each:
    type: foreach_task
    items: [0, 1, 2, 3]
    workflow: maybe
    params: {{ n: "${{item}}" }}
    toleratedFailures: "{tolerated}"
    storeAs: out
    on: {{ success: end, failure: end }}
  end: {{ type: terminal, result: "${{state.out}}" }}
"#
    )
}

#[tokio::test]
async fn a_percentage_tolerance_counts_the_share_of_failed_items() {
    let p = Project::new(|rt| rt).await;
    p.workflow("maybe", MAYBE);
    // One of four failed: 25% is within "25%", beyond "20%".
    p.workflow("within", &percent_doc("25%"));
    p.workflow("beyond", &percent_doc("20%"));
    let within = p.run("within", json!({})).await.result.unwrap();
    assert!(within.is_array(), "success: the results in order: {within}");
    assert_eq!(within[1]["status"], "FAILED");
    let beyond = p.run("beyond", json!({})).await.result.unwrap();
    assert!(
        beyond["error"]
            .as_str()
            .unwrap_or_default()
            .contains("[MAG-PR004]"),
        "{beyond}"
    );
}

#[tokio::test]
async fn items_that_are_not_a_list_fail_the_state_with_a_clear_error() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow(
        "each",
        r#"
start: each
states:
  each:
    type: foreach_task
    items: "${params.files}"
    workflow: process
    storeAs: out
    on: { success: end, failure: end }
  end: { type: terminal, result: "${state.out}" }
"#,
    );
    let view = p.run("each", json!({ "files": "a,b" })).await;
    let error = view.result.clone().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        error,
        "[MAG-PR001] items of state 'each' resolved to a string: expected a JSON array"
    );
}

/// Waits until `engine` has `n` pending inbox items and returns their ids by title.
async fn pending(engine: &Engine, n: usize) -> Vec<(String, String)> {
    for _ in 0..500 {
        let items = engine.inbox(InboxFilter::Pending).unwrap();
        if items.len() == n {
            return items.into_iter().map(|i| (i.title, i.id)).collect();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("never {n} pending items");
}

const GATED: &str = r#"
start: ask
parameters:
  n: { type: integer, required: true }
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "item ${params.n}" }
    on: { approved: done }
  done: { type: terminal, result: "${params.n}" }
"#;

const GATED_EACH: &str = r#"
start: each
states:
  each:
    type: foreach_task
    items: [0, 1, 2]
    workflow: gated
    params: { n: "${item}" }
    maxParallelism: 2
    storeAs: out
    on: { success: end }
  end: { type: terminal, result: "${state.out}" }
"#;

async fn answer(engine: &Engine, items: &[(String, String)], title: &str) {
    let id = &items.iter().find(|(t, _)| t == title).unwrap().1;
    engine.answer_gate(id, GateAnswer::approve()).await.unwrap();
}

#[tokio::test]
async fn a_restart_mid_fan_out_finishes_with_the_same_results_and_no_second_start() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let first = Project::on(store.clone(), |rt| rt).await;
    first.workflow("gated", GATED);
    first.workflow("each", GATED_EACH);
    let run = first
        .runtime
        .start(&first.engine, &first.scope, "each", json!({}), "tester")
        .await
        .unwrap();
    let items = pending(&first.engine, 2).await;
    answer(&first.engine, &items, "item 1").await;
    // Item 2 starts in the freed slot.
    let items = pending(&first.engine, 2).await;
    assert!(items.iter().any(|(t, _)| t == "item 2"), "{items:?}");
    drop(first);

    let second = Project::on(store, |rt| rt).await;
    second.workflow("gated", GATED);
    second.workflow("each", GATED_EACH);
    let items = pending(&second.engine, 2).await;
    answer(&second.engine, &items, "item 2").await;
    let items = pending(&second.engine, 1).await;
    answer(&second.engine, &items, "item 0").await;
    let view = second.engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(json!([0, 1, 2])));
    let (ids, most) = children(&second.records(&view));
    assert_eq!(ids.len(), 3, "each item started once");
    assert_eq!(most, 2);
}

fn load_errors(text: &str) -> Vec<String> {
    match load_workflow("wf.yaml", text, &LoadOptions::default()) {
        Ok(l) => panic!("loaded: {:?}", l.warnings),
        Err(d) => d.errors().map(ToString::to_string).collect(),
    }
}

#[track_caller]
fn refused(text: &str, expected: &str) {
    let errors = load_errors(text);
    assert!(
        errors.iter().any(|e| e == expected),
        "expected {expected:?} in {errors:#?}"
    );
}

const TAIL: &str = "    on: { success: end }\n  end: { type: terminal }\n";

#[test]
fn fan_out_documents_are_checked_at_load_time_with_positions() {
    refused(
        &format!("start: p\nstates:\n  p:\n    type: parallel_task\n{TAIL}"),
        "wf.yaml:4:5: [MAG-Y006] state 'p' has no 'branches': expected a mapping of branch name \
         to '{workflow: <name>}' or '{start: …, states: …}'",
    );
    // Text is never a list: only a placeholder alone can be one.
    for written in ["files", "${state.files} and more", "${state.files"] {
        refused(
            &format!(
                "start: p\nstates:\n  p:\n    type: foreach_task\n    items: \"{written}\"\n    \
                 workflow: w\n{TAIL}"
            ),
            &format!(
                "wf.yaml:5:12: [MAG-Y007] 'items' of state 'p' is the text '{written}', which is \
                 never a list: expected one placeholder alone, such as \"${{state.files}}\", or \
                 a list"
            ),
        );
    }
    refused(
        &format!("start: p\nstates:\n  p:\n    type: foreach_task\n    workflow: w\n{TAIL}"),
        "wf.yaml:4:5: [MAG-Y006] state 'p' has no 'items': expected a template that resolves \
         to a list, e.g. items: \"${state.files}\"",
    );
    refused(
        &format!(
            "start: p\nstates:\n  p:\n    type: parallel_task\n    branches:\n      \
             a: {{ workflow: w, start: x, states: {{ x: {{ type: terminal }} }} }}\n{TAIL}"
        ),
        "wf.yaml:6:43: [MAG-Y029] branch 'a' of state 'p' has both 'workflow' and inline \
         'start'/'states': expected one of them",
    );
    refused(
        &format!(
            "start: p\nstates:\n  p:\n    type: foreach_task\n    items: [1]\n    \
             workflow: w\n    maxParallelism: 0\n{TAIL}"
        ),
        "wf.yaml:7:21: [MAG-Y030] maxParallelism of state 'p' is an integer (0): expected an \
         integer from 1 to 1000 (each sub-run in flight holds its parameters in memory)",
    );
    refused(
        &format!(
            "start: p\nstates:\n  p:\n    type: foreach_task\n    items: [1]\n    \
             workflow: w\n    maxParallelism: 1001\n{TAIL}"
        ),
        "wf.yaml:7:21: [MAG-Y030] maxParallelism of state 'p' is an integer (1001): expected \
         an integer from 1 to 1000 (each sub-run in flight holds its parameters in memory)",
    );
    refused(
        &format!(
            "start: p\nstates:\n  p:\n    type: foreach_task\n    items: [1]\n    \
             workflow: w\n    toleratedFailures: \"many\"\n{TAIL}"
        ),
        "wf.yaml:7:24: [MAG-Y031] toleratedFailures of state 'p' is a string 'many': expected a \
         count (an integer >= 0) or a percentage such as \"25%\" (0 to 100)",
    );
    refused(
        &format!(
            "start: p\nstates:\n  p:\n    type: parallel_task\n    branches:\n      \
             a: {{ workflow: w, parms: {{}} }}\n{TAIL}"
        ),
        "wf.yaml:6:25: [MAG-Y005] unknown field 'parms' in branch 'a' of state 'p': expected \
         one of [workflow, params] (did you mean 'params'?)",
    );
}

#[test]
fn an_inline_branch_is_checked_as_a_document_at_its_place_in_the_file() {
    let text = "start: p\nstates:\n  p:\n    type: parallel_task\n    branches:\n      a:\n        \
                start: x\n        states:\n          x: { type: shell_task, run: \"true\", on: \
                { success: nowhere } }\n    on: { success: end }\n  end: { type: terminal }\n";
    let errors = load_errors(text);
    assert!(
        errors.iter().any(|e| e.starts_with("wf.yaml:9:")
            && e.contains("[MAG-Y010]")
            && e.contains("'nowhere'")),
        "{errors:#?}"
    );
}

#[tokio::test]
async fn a_fan_out_timeout_cancels_every_sub_run_and_routes_timeout() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "slow",
        r#"
start: fan
states:
  fan:
    type: parallel_task
    timeoutSeconds: 0.2
    branches:
      a:
        start: wait
        states:
          wait: { type: timer_task, duration: "1h", on: { fired: ok } }
          ok: { type: terminal }
      b:
        start: wait
        states:
          wait: { type: timer_task, duration: "1h", on: { fired: ok } }
          ok: { type: terminal }
      quick:
        start: ok
        states:
          ok: { type: terminal, result: early }
    storeAs: out
    on: { success: end, timeout: late }
  end: { type: terminal }
  late: { type: terminal, result: "${state.out}" }
"#,
    );
    let view = p.run("slow", json!({})).await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    let error = view.result.clone().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(error.starts_with("[MAG-PR003]"), "{error}");
    // What the branch that ended gave is kept; the cancelled ones have none.
    assert_eq!(
        view.result.clone().unwrap()["results"],
        json!({"a": null, "b": null, "quick": "early"})
    );
    let (ids, _) = children(&p.records(&view));
    assert_eq!(ids.len(), 3);
    let mut cancelled = 0;
    for id in ids {
        if p.engine.wait(id).await.unwrap().status == RunStatus::Cancelled {
            cancelled += 1;
        }
    }
    assert_eq!(cancelled, 2);
}

#[tokio::test]
async fn a_foreach_over_too_many_items_is_refused() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow(
        "each",
        r#"
start: each
states:
  each:
    type: foreach_task
    items: "${params.files}"
    workflow: process
    storeAs: out
    on: { success: end, failure: end }
  end: { type: terminal, result: "${state.out}" }
"#,
    );
    let files: Vec<Value> = (0..10_001).map(|i| json!(i)).collect();
    let view = p.run("each", json!({ "files": files })).await;
    let error = view.result.clone().unwrap()["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(error.starts_with("[MAG-PR002]"), "{error}");
    assert!(children(&p.records(&view)).0.is_empty(), "nothing started");
}

#[tokio::test]
async fn each_sub_run_counts_as_one_task_spawn() {
    let p = Project::new(|rt| rt).await;
    p.workflow("process", ECHO);
    p.workflow(
        "each",
        r#"
start: each
bounds: { maxTaskSpawns: 2 }
states:
  each:
    type: foreach_task
    items: [1, 2, 3]
    workflow: process
    maxParallelism: 1
    on: { success: end }
  end: { type: terminal }
"#,
    );
    let view = p.run("each", json!({})).await;
    assert_eq!(view.status, RunStatus::Failed);
    let reason = view.reason.clone().unwrap_or_default();
    assert!(
        reason.contains("maxTaskSpawns 2 reached before state 'each'"),
        "{reason}"
    );
    assert_eq!(children(&p.records(&view)).0.len(), 2);
}

#[test]
fn a_fan_out_naming_an_unknown_workflow_is_warned_about() {
    let text = "start: p\nstates:\n  p:\n    type: parallel_task\n    branches:\n      \
                a: { workflow: known }\n      b: { workflow: nope }\n    on: { success: e }\n  \
                e:\n    type: foreach_task\n    items: [1]\n    workflow: gone\n    \
                on: { success: end }\n  end: { type: terminal }\n";
    let loaded = load_workflow("wf.yaml", text, &LoadOptions::default()).unwrap();
    let warnings: Vec<String> = loaded
        .check_sub_workflows(|n| n == "known")
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(
        warnings[0]
            .starts_with("wf.yaml:7:22: [MAG-YA005] parallel_task 'p' starts workflow 'nope'"),
        "{warnings:#?}"
    );
    assert!(
        warnings[1]
            .starts_with("wf.yaml:12:15: [MAG-YA005] foreach_task 'e' starts workflow 'gone'"),
        "{warnings:#?}"
    );
}

#[tokio::test]
async fn cancelling_the_parent_cancels_every_branch() {
    let p = Project::new(|rt| rt).await;
    p.workflow(
        "sleepy",
        r#"
start: fan
states:
  fan:
    type: foreach_task
    items: [1, 2, 3]
    maxParallelism: 2
    start: wait
    states:
      wait: { type: timer_task, duration: "1h", on: { fired: ok } }
      ok: { type: terminal }
    on: { success: end }
  end: { type: terminal }
"#,
    );
    let run = p
        .runtime
        .start(&p.engine, &p.scope, "sleepy", json!({}), "tester")
        .await
        .unwrap();
    // Wait until both children of the window have started.
    for _ in 0..500 {
        let records: Vec<Record> = p
            .engine
            .journal(run)
            .unwrap()
            .into_iter()
            .map(|e| e.record)
            .collect();
        if children(&records).0.len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    p.engine.cancel(run, "operator").await.unwrap();
    let view = p.engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    let (ids, most) = children(&p.records(&view));
    assert_eq!((ids.len(), most), (2, 2), "the third item never started");
    for id in ids {
        let child = p.engine.wait(id).await.unwrap();
        assert_eq!(child.status, RunStatus::Cancelled);
        assert!(
            child.workflow_name.starts_with("sleepy#fan."),
            "{}",
            child.workflow_name
        );
    }
}
