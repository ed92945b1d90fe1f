//! Conformance with the Vancetope reference, section by section, through the library: each
//! test names the section it checks. The CLI-level suite lives with the `magrathea` command.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{GateAnswer, MemoryStore, Record, RunStatus, RunView, Store};
use magrathea_yaml::YamlStartError;
use serde_json::{Value, json};

use crate::common;
use common::Project;

async fn project(docs: &[(&str, &str)]) -> Project {
    project_on(Arc::new(MemoryStore::new()), docs).await
}

async fn project_on(store: Arc<dyn Store>, docs: &[(&str, &str)]) -> Project {
    let p = Project::on(store, |r| r).await;
    for (name, body) in docs {
        p.workflow(name, body);
    }
    p
}

fn write_doc(project: &Path, name: &str, body: &str) {
    std::fs::write(
        project
            .join("_vance/workflows")
            .join(format!("{name}.yaml")),
        body,
    )
    .unwrap();
}

impl Project {
    /// Answers the one pending inbox item with `answer`, then waits for `view`'s run to end.
    async fn answer_pending(&self, view: &RunView, answer: GateAnswer) -> RunView {
        let item = self
            .engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .remove(0);
        self.engine.answer_gate(&item.id, answer).await.unwrap();
        self.engine.wait(view.workflow_run_id).await.unwrap()
    }

    fn count(&self, view: &RunView, type_name: &str) -> usize {
        self.records(view)
            .iter()
            .filter(|r| r.type_name() == type_name)
            .count()
    }
}

#[tokio::test]
async fn s3_2_shell_success_and_business_error_route_by_outcome() {
    let p = project(&[(
        "build",
        r#"
start: check
states:
  check:
    type: shell_task
    run: 'echo out; echo err >&2; exit "$MAGRATHEA_PARAM_CODE"'
    dirName: workspace
    storeAs: check_output
    on:
      success: done
    catch:
      business_error: failed
  done:
    type: terminal
    result:
      stdout: "${state.check_output.stdout}"
  failed:
    type: terminal
    outcome: failure
    result:
      code: "${state.check_output.exitCode}"
"#,
    )])
    .await;
    let ok = p.run("build", json!({"code": 0})).await;
    assert_eq!(ok.status, RunStatus::Done, "{ok:?}");
    assert_eq!(ok.result, Some(json!({"stdout": "out\n"})));
    let out = &ok.vars["check_output"];
    assert_eq!(out["status"], "COMPLETED");
    assert_eq!(out["exitCode"], 0);
    assert_eq!(out["stderr"], "err\n");
    assert!(out["durationMs"].is_u64());

    let bad = p.run("build", json!({"code": 3})).await;
    assert_eq!(bad.status, RunStatus::Failed);
    // A whole `${…}` keeps the value's JSON type: the exit code stays a number.
    assert_eq!(bad.result, Some(json!({"code": 3})));
    let outcomes: Vec<String> = p
        .records(&bad)
        .into_iter()
        .filter_map(|r| match r {
            Record::TaskResult { outcome, .. } => Some(outcome.into_string()),
            _ => None,
        })
        .collect();
    assert_eq!(outcomes, vec!["business_error"]);
}

#[tokio::test]
async fn s3_2_shell_runs_in_the_workspace_and_without_dir_name_is_a_technical_error() {
    let p = project(&[
        (
            "pwd",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: pwd\n    dirName: workspace\n    storeAs: o\n    on:\n      success: done\n  done:\n    type: terminal\n",
        ),
        (
            "nodir",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: pwd\n    catch:\n      technical_error: done\n  done:\n    type: terminal\n    result: routed\n",
        ),
    ])
    .await;
    let v = p.run("pwd", json!({})).await;
    let pwd = v.vars["o"]["stdout"].as_str().unwrap().trim().to_string();
    assert_eq!(
        Path::new(&pwd).canonicalize().unwrap(),
        p.project.canonicalize().unwrap()
    );
    let v = p.run("nodir", json!({})).await;
    assert_eq!(v.status, RunStatus::Done);
    assert_eq!(v.result, Some(json!("routed")));
}

/// §2.2 sets no form for a `storeAs` key, and §3.6 reads variables as `#state['<key>']`: a key
/// such as `check-output` is stored, read by a condition and by a `${state.…}` template.
#[tokio::test]
async fn s2_2_a_store_as_key_may_hold_a_dash() {
    let p = project(&[(
        "dash",
        "start: check\nstates:\n  check:\n    type: shell_task\n    run: printf ok\n    dirName: workspace\n    storeAs: check-output\n    on: { success: route }\n  route:\n    type: condition_task\n    transitions:\n      - if: \"#state['check-output']['stdout'] == 'ok'\"\n        to: done\n      - else: other\n  done: { type: terminal, result: \"${state.check-output.stdout}\" }\n  other: { type: terminal, outcome: failure }\n",
    )])
    .await;
    let v = p.run("dash", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!("ok")));
    assert_eq!(v.vars["check-output"]["exitCode"], 0);
}

#[tokio::test]
async fn s3_2_a_shell_timeout_kills_the_process_group_and_routes_timeout() {
    let p = project(&[(
        "slow",
        r#"
start: a
states:
  a:
    type: shell_task
    run: "sleep 30 & echo $! > child.pid; wait"
    dirName: workspace
    timeoutSeconds: 0.5
    catch:
      timeout: done
  done:
    type: terminal
    result: timed out
"#,
    )])
    .await;
    let v = p.run("slow", json!({})).await;
    assert_eq!(v.result, Some(json!("timed out")), "{v:?}");
    let pid: i32 = std::fs::read_to_string(p.project.join("child.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // The background `sleep` was in the killed group: it is gone (or a zombie being reaped).
    let mut gone = false;
    for _ in 0..50 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty() || stat.contains(") Z ") {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        gone,
        "the sleep started by the command survived its timeout"
    );
}

#[tokio::test]
async fn s4_3_max_attempts_counts_the_first_attempt_and_retry_preempts_catch() {
    let p = project(&[(
        "flaky",
        r#"
start: a
states:
  a:
    type: shell_task
    run: "echo x >> attempts.txt; exit 1"
    dirName: workspace
    retry:
      maxAttempts: 3
      on: [business_error]
      backoffSeconds: 0
    catch:
      business_error: gave_up
  gave_up:
    type: terminal
    outcome: failure
"#,
    )])
    .await;
    let v = p.run("flaky", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed);
    let attempts = std::fs::read_to_string(p.project.join("attempts.txt")).unwrap();
    assert_eq!(
        attempts.lines().count(),
        3,
        "maxAttempts: 3 = original + 2 retries"
    );
    assert_eq!(p.count(&v, "TaskStartedRecord"), 3);
    // retryCount+1: the journal numbers the attempts of the state as the engine's own
    // retries do, each attempt's result under its number.
    let numbers = |type_name: &str| -> Vec<u32> {
        p.records(&v)
            .iter()
            .filter_map(|r| match r {
                Record::TaskStarted { attempt, .. } if type_name == "started" => Some(*attempt),
                Record::TaskResult { attempt, .. } if type_name == "result" => Some(*attempt),
                _ => None,
            })
            .collect()
    };
    assert_eq!(numbers("started"), [1, 2, 3]);
    assert_eq!(numbers("result"), [1, 2, 3]);
    assert_eq!(v.current_state.as_deref(), Some("gave_up"));
}

#[tokio::test]
async fn s4_3_numbered_retries_replay_and_so_do_journals_that_numbered_each_attempt_one() {
    let p = project(&[(
        "flaky",
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: exit 1\n    dirName: workspace\n    retry: { maxAttempts: 3, on: [business_error] }\n    catch: { business_error: gave_up }\n  gave_up: { type: terminal, outcome: failure }\n",
    )])
    .await;
    let v = p.run("flaky", json!({})).await;
    let today = p.engine.journal(v.workflow_run_id).unwrap();
    p.engine
        .check_replay(today.clone())
        .expect("today's journal replays");
    // Cut inside the second attempt, as a crash leaves it: the run resumes there.
    let second = today
        .iter()
        .position(|e| matches!(e.record, Record::TaskStarted { attempt: 2, .. }))
        .expect("a second attempt");
    p.engine
        .check_replay(today[..=second].to_vec())
        .expect("a journal cut inside the second attempt replays");
    // Journals of runs from before the attempts of a state were numbered: each attempt 1.
    let earlier: Vec<_> = today
        .into_iter()
        .map(|mut e| {
            if let Record::TaskStarted { attempt, .. } | Record::TaskResult { attempt, .. } =
                &mut e.record
            {
                *attempt = 1;
            }
            e
        })
        .collect();
    p.engine
        .check_replay(earlier)
        .expect("a journal numbering every attempt 1 replays");
}

#[tokio::test]
async fn s5_a_timer_and_a_gate_are_task_steps_and_runs_journaled_without_them_replay() {
    let p = project(&[(
        "both",
        "start: nap\nstates:\n  nap:\n    type: timer_task\n    duration: 10ms\n    on: { fired: ask }\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: ok? }\n    on: { approved: done }\n  done: { type: terminal, result: shipped }\n",
    )])
    .await;
    let v = p.run("both", json!({})).await;
    let v = p.answer_pending(&v, GateAnswer::approve()).await;
    assert_eq!(v.result, Some(json!("shipped")));
    let today = p.engine.journal(v.workflow_run_id).unwrap();
    // §5: every task writes a TaskStartedRecord and a TaskResultRecord.
    let tasks: Vec<(String, String, String)> = today
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskStarted { task, name, .. } => {
                Some(("started".into(), task.clone(), name.clone()))
            }
            Record::TaskResult { outcome, .. } => {
                Some(("result".into(), outcome.to_string(), String::new()))
            }
            _ => None,
        })
        .collect();
    let t = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        tasks,
        [
            t("started", "timer_task", "nap"),
            t("result", "fired", ""),
            t("started", "gate_task", "ask"),
            t("result", "approved", ""),
        ]
    );
    p.engine
        .check_replay(today.clone())
        .expect("today's journal replays");

    // Cut between the answer and the gate's result (a crash there): the replay reaches the
    // same point and the result follows.
    let answered = today
        .iter()
        .position(|e| matches!(e.record, Record::GateAnswered { .. }))
        .unwrap();
    p.engine
        .check_replay(today[..=answered].to_vec())
        .expect("a journal cut before the gate's result replays");

    // A run journaled before timers and gates were task steps: no task records, and the
    // steps after each numbered one less.
    let mut earlier: Vec<magrathea_core::Entry> = Vec::new();
    let mut held = Vec::new();
    for mut e in today {
        match &e.record {
            Record::TaskStarted { step, .. } => {
                held.push(*step);
                continue;
            }
            Record::TaskResult { .. } => continue,
            _ => {}
        }
        let mut value = serde_json::to_value(&e).unwrap();
        if let Some(step) = value["step"].as_u64() {
            let before = held.iter().filter(|h| u64::from(**h) < step).count() as u64;
            value["step"] = json!(step - before);
        }
        value["seq"] = json!(earlier.len());
        e = serde_json::from_value(value).unwrap();
        earlier.push(e);
    }
    p.engine
        .check_replay(earlier)
        .expect("a journal without the task steps replays on its own path");
}

/// A run whose timer is a week away leaves memory while it waits, its timer's task step
/// open: what the step waits on is the timer, not an attempt.
#[tokio::test]
async fn s3_5_a_run_waiting_in_a_timers_task_step_leaves_memory() {
    let p = project(&[(
        "week",
        "start: nap\nstates:\n  nap:\n    type: timer_task\n    duration: 7d\n    on: { fired: done }\n  done: { type: terminal }\n",
    )])
    .await;
    let run = p
        .runtime
        .start(&p.engine, &p.scope, "week", json!({}), "tester")
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while p.engine.runs_in_memory() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the sleeping run stayed in memory"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let types: Vec<&str> = p
        .engine
        .journal(run)
        .unwrap()
        .iter()
        .map(|e| e.record.type_name())
        .collect();
    assert_eq!(
        types,
        [
            "StartRecord",
            "StateEnteredRecord",
            "TaskStartedRecord",
            "TimerSetRecord"
        ]
    );
}

#[tokio::test]
async fn s4_1_no_transition_for_an_outcome_fails_the_run_with_the_reference_reason() {
    let p = project(&[(
        "stuck",
        "start: a\nstates:\n  a:\n    type: shell_task\n    run: exit 2\n    dirName: workspace\n    on:\n      success: done\n  done:\n    type: terminal\n",
    )])
    .await;
    let v = p.run("stuck", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed);
    assert_eq!(
        v.reason.as_deref(),
        Some("no transition for outcome 'business_error'")
    );
}

#[tokio::test]
async fn s3_6_conditions_route_first_match_then_else() {
    let doc = r##"
start: route
states:
  route:
    type: condition_task
    transitions:
      - if: "#params['risk'] == 'low'"
        to: merge
      - if: "#params['risk'] in {'high', 'critical'}"
        to: review
      - else: triage
  merge: { type: terminal, result: merge }
  review: { type: terminal, result: review }
  triage: { type: terminal, result: triage }
"##;
    let p = project(&[("route", doc)]).await;
    for (risk, expected) in [
        ("low", "merge"),
        ("critical", "review"),
        ("medium", "triage"),
    ] {
        let v = p.run("route", json!({"risk": risk})).await;
        assert_eq!(v.result, Some(json!(expected)), "risk {risk}");
    }
}

/// §2.4: "Any string value in a State spec may contain placeholders", a condition's `if:`
/// included: `${params.X}` and `${state.X}` there read the run's data like `#params` and
/// `#state` (in a string literal as text, alone as the value).
#[tokio::test]
async fn s2_4_placeholders_in_a_condition_read_params_and_state() {
    let doc = r##"
start: route
parameters:
  level: { type: string }
  limit: { type: integer }
states:
  route:
    type: condition_task
    transitions:
      - if: "'${params.level}' == 'low' && ${params.limit} > 5"
        to: low
      - else: other
  low: { type: terminal, result: low }
  other: { type: terminal, result: other }
"##;
    let p = project(&[("route", doc)]).await;
    for (level, limit, expected) in [("low", 9, "low"), ("low", 2, "other"), ("high", 9, "other")] {
        let v = p
            .run("route", json!({"level": level, "limit": limit}))
            .await;
        assert_eq!(v.result, Some(json!(expected)), "{level} {limit}");
    }
}

#[tokio::test]
async fn s3_4_gate_outcomes_map_per_kind_and_answer() {
    let doc = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox:
      kind: DECISION
      title: "Merge ${params.pr}?"
      options: [retry, abort]
    storeAs: decision
    on:
      retry: again
      abort: stop
      insufficient_info: info
  again: { type: terminal, result: retry }
  stop: { type: terminal, result: abort }
  info: { type: terminal, result: info }
"#;
    let p = project(&[("ask", doc)]).await;
    let v = p.run("ask", json!({"pr": "#7"})).await;
    assert_eq!(v.status, RunStatus::Waiting);
    let item = p
        .engine
        .inbox(magrathea_core::InboxFilter::Pending)
        .unwrap()
        .remove(0);
    assert_eq!(item.title, "Merge #7?");
    assert_eq!(
        item.assigned_to, "tester",
        "assignedTo falls back to startedBy"
    );
    assert_eq!(item.workflow_state.as_deref(), Some("ask"));
    assert_eq!(item.meta["kind"], "workflow.gate");
    // §3.4: the item's payload carries the discriminator and the run, workflow and state.
    assert_eq!(
        item.payload,
        json!({
            "kind": "workflow.gate",
            "workflowRunId": v.workflow_run_id.to_string(),
            "workflowName": item.workflow_name,
            "workflowState": "ask",
        })
    );
    p.engine
        .answer_gate(&item.id, GateAnswer::choose("abort"))
        .await
        .unwrap();
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.result, Some(json!("abort")));
    assert_eq!(v.vars["decision"]["chosen"], "abort");

    let v = p.run("ask", json!({"pr": "#8"})).await;
    assert_eq!(
        p.answer_pending(&v, GateAnswer::insufficient_info())
            .await
            .result,
        Some(json!("info"))
    );
}

#[tokio::test]
async fn s3_4_approval_rejected_is_caught_as_human_rejected_and_timeout_races_the_answer() {
    let doc = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "ok?" }
    timeoutSeconds: 600
    on:
      approved: yes
    catch:
      human_rejected: no
      timeout: late
  yes: { type: terminal, result: approved }
  no: { type: terminal, result: rejected }
  late: { type: terminal, result: timeout }
"#;
    let quick = doc.replace("timeoutSeconds: 600", "timeoutSeconds: 0.2");
    let p = project(&[("review", doc), ("quick", &quick)]).await;
    let v = p.run("review", json!({})).await;
    assert_eq!(
        p.answer_pending(&v, GateAnswer::reject()).await.result,
        Some(json!("rejected"))
    );

    let v = p.run("quick", json!({})).await;
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.result, Some(json!("timeout")));
    // The gate's item: its step follows the state's task step.
    let id = format!("{}-2", v.workflow_run_id);
    let ack = p
        .engine
        .answer_gate(&id, GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(ack, magrathea_core::AnswerAck::Ignored);
}

#[tokio::test]
async fn s3_5_timer_fires_and_s9_bounds_stop_the_run() {
    let doc = r#"
start: wait
bounds:
  maxTaskSpawns: 3
states:
  wait:
    type: timer_task
    duration: 50ms
    on:
      fired: loop
  loop:
    type: shell_task
    run: "true"
    dirName: workspace
    on:
      success: loop
"#;
    let p = project(&[("spin", doc)]).await;
    let v = p.run("spin", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed);
    assert!(
        v.reason
            .as_deref()
            .unwrap()
            .starts_with("bounds exhausted: maxTaskSpawns"),
        "{v:?}"
    );
    assert_eq!(p.count(&v, "TimerFiredRecord"), 1);
    assert_eq!(
        p.count(&v, "TaskStartedRecord"),
        3,
        "timer + 2 shell tasks = 3 spawns, each a TaskStartedRecord as the reference counts"
    );
}

#[tokio::test]
async fn s3_7_sub_run_success_and_failure_with_parent_identity() {
    let p = project(&[
        (
            "parent",
            r#"
start: build
states:
  build:
    type: workflow_task
    workflow: child
    params:
      n: "${params.n}"
    storeAs: built
    on:
      success: done
      failure: failed
  done: { type: terminal, result: { got: "${state.built.value}" } }
  failed: { type: terminal, outcome: failure }
"#,
        ),
        (
            "child",
            r##"
parameters:
  n: { type: string, required: true }
start: check
states:
  check:
    type: condition_task
    transitions:
      - if: "#params['n'] == '1'"
        to: ok
      - else: bad
  ok: { type: terminal, result: { value: "n=${params.n}" } }
  bad: { type: terminal, outcome: failure }
"##,
        ),
    ])
    .await;
    let v = p.run("parent", json!({"n": "1"})).await;
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.result, Some(json!({"got": "n=1"})));
    let child = p
        .engine
        .list_runs(&magrathea_core::RunFilter {
            workflow: Some("child".into()),
            ..Default::default()
        })
        .unwrap()
        .remove(0);
    assert_eq!(child.parent, Some(v.workflow_run_id));
    let start = p.engine.journal(child.run_id).unwrap().remove(0);
    match start.record {
        Record::Start(s) => assert_eq!(s.parent.unwrap().state.as_deref(), Some("build")),
        other => panic!("{other:?}"),
    }
    let v = p.run("parent", json!({"n": "2"})).await;
    assert_eq!(
        p.engine.wait(v.workflow_run_id).await.unwrap().status,
        RunStatus::Failed
    );
}

#[tokio::test]
async fn s3_7_catch_failure_routes_a_failed_sub_run_as_in_the_reference_example() {
    let p = project(&[
        (
            "parent",
            r#"
start: build_subprojects
states:
  build_subprojects:
    type: workflow_task
    workflow: build-and-test
    params:
      repo_url: "${params.repo_url}"
    storeAs: build_result
    timeoutSeconds: 3600
    on:
      success: deploy
    catch:
      failure: escalate
  deploy: { type: terminal, result: deployed }
  escalate:
    type: terminal
    result:
      escalated: "${state.build_result.status}"
"#,
        ),
        (
            "build-and-test",
            r#"
start: test
states:
  test:
    type: shell_task
    run: "exit 1"
    dirName: workspace
    catch:
      business_error: broken
  broken: { type: terminal, outcome: failure }
"#,
        ),
    ])
    .await;
    let v = p.run("parent", json!({"repo_url": "r"})).await;
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.current_state.as_deref(), Some("escalate"));
    assert_eq!(v.result, Some(json!({"escalated": "FAILED"})));
    assert_eq!(p.count(&v, "ChildFinishedRecord"), 1);
}

/// §3.7: "the Terminal State of the Sub-Run writes ResultRecord(result). The Parent captures
/// this via storeAs" — on the failure branch as on the success one. And the reference's
/// `timeoutSeconds` + `catch: failure` example routes a sub-run that outlives its timeout.
#[tokio::test]
async fn s3_7_a_failed_sub_runs_result_is_stored_and_its_timeout_is_caught_as_failure() {
    let p = project(&[
        (
            "parent",
            r#"
parameters:
  ok: { type: boolean, required: true }
start: build
states:
  build:
    type: workflow_task
    workflow: child
    params: { ok: "${params.ok}" }
    storeAs: built
    on: { success: deploy }
    catch: { failure: escalate }
  deploy: { type: terminal, result: { summary: "${state.built.summary}" } }
  escalate: { type: terminal, result: { escalated: "${state.built.summary}" } }
"#,
        ),
        (
            "child",
            r##"
parameters:
  ok: { type: boolean, required: true }
start: check
states:
  check:
    type: condition_task
    transitions:
      - if: "#params['ok']"
        to: good
      - else: bad
  good: { type: terminal, result: { summary: built } }
  bad: { type: terminal, outcome: failure, result: { summary: broken } }
"##,
        ),
        (
            "hurried",
            r#"
start: build
states:
  build:
    type: workflow_task
    workflow: slow
    timeoutSeconds: 0.3
    storeAs: built
    on: { success: deploy }
    catch: { failure: escalate }
  deploy: { type: terminal, result: deployed }
  escalate: { type: terminal, result: escalated }
"#,
        ),
        (
            "slow",
            "start: nap\nstates:\n  nap: { type: timer_task, duration: 1h, on: { fired: done } }\n  done: { type: terminal }\n",
        ),
    ])
    .await;
    let v = p.run("parent", json!({"ok": true})).await;
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.result, Some(json!({"summary": "built"})), "{v:?}");
    let v = p.run("parent", json!({"ok": false})).await;
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!({"escalated": "broken"})), "{v:?}");
    assert_eq!(v.vars["built"], json!({"summary": "broken"}));

    let v = p.run("hurried", json!({})).await;
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(
        v.result,
        Some(json!("escalated")),
        "the timeout went where failure goes"
    );
}

#[tokio::test]
async fn s4_3_retry_on_rejected_reads_it_as_human_rejected_like_catch() {
    let doc = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "ok?" }
    retry:
      maxAttempts: 2
      on: [Rejected]
    on:
      approved: yes
    catch:
      rejected: no
  yes: { type: terminal, result: approved }
  no: { type: terminal, result: rejected }
"#;
    let p = project(&[("review", doc)]).await;
    // Answers the run's next gate: the first pending item not answered before.
    let answered = std::sync::Mutex::new(Vec::<String>::new());
    let answer = |answer: GateAnswer| async {
        let mut polls = 0;
        let item = loop {
            polls += 1;
            assert!(polls < 3000, "no new gate opened");
            let fresh = p
                .engine
                .inbox(magrathea_core::InboxFilter::Pending)
                .unwrap()
                .into_iter()
                .find(|i| !answered.lock().unwrap().contains(&i.id));
            match fresh {
                Some(item) => break item,
                None => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        };
        answered.lock().unwrap().push(item.id.clone());
        p.engine.answer_gate(&item.id, answer).await.unwrap();
    };
    // Rejected, retried with a new gate, approved.
    let v = p.run("review", json!({})).await;
    answer(GateAnswer::reject()).await;
    answer(GateAnswer::approve()).await;
    let done = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(done.result, Some(json!("approved")));
    assert_eq!(p.count(&done, "GateOpenedRecord"), 2);
    // Rejected twice: the attempts are spent and `catch: rejected` routes.
    let v = p.run("review", json!({})).await;
    answer(GateAnswer::reject()).await;
    answer(GateAnswer::reject()).await;
    let done = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(done.result, Some(json!("rejected")));
}

#[tokio::test]
async fn s7_frozen_snapshot_edits_do_not_affect_a_waiting_run() {
    let v1 = "start: g\nstates:\n  g:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: t }\n    on:\n      approved: done\n  done: { type: terminal, result: old }\n";
    let p = project(&[("snap", v1)]).await;
    let v = p.run("snap", json!({})).await;
    write_doc(
        &p.project,
        "snap",
        &v1.replace("result: old", "result: new"),
    );
    assert_eq!(
        p.answer_pending(&v, GateAnswer::approve()).await.result,
        Some(json!("old"))
    );
    assert_eq!(p.run("snap", json!({})).await.status, RunStatus::Waiting);
}

#[tokio::test]
async fn s2_1_invalid_parameters_and_unknown_workflows_start_nothing() {
    let p = project(&[(
        "p",
        "parameters:\n  pr_url: { type: string, required: true }\nstart: d\nstates:\n  d: { type: terminal }\n",
    )])
    .await;
    let err = p
        .runtime
        .start(&p.engine, &p.scope, "p", json!({}), "t")
        .await
        .unwrap_err();
    assert!(matches!(err, YamlStartError::Params(_)), "{err}");
    let err = p
        .runtime
        .start(&p.engine, &p.scope, "nope", json!({}), "t")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("[MAG-DOC001]"), "{err}");
    assert!(p.engine.list_runs(&Default::default()).unwrap().is_empty());
}

/// §2.1: parameters are a permissive pass-through. One that declares no type takes any
/// value; `required` and `default` still hold.
#[tokio::test]
async fn s2_1_a_parameter_without_a_type_takes_any_value() {
    let p = project(&[(
        "free",
        "parameters:\n  anything: { required: true }\n  label: { default: 7 }\nstart: d\nstates:\n  d: { type: terminal, result: { anything: \"${params.anything}\", label: \"${params.label}\" } }\n",
    )])
    .await;
    for value in [json!(3), json!("text"), json!({"a": [1]})] {
        let v = p.run("free", json!({ "anything": value })).await;
        assert_eq!(v.status, RunStatus::Done);
        assert_eq!(v.params["anything"], value);
        assert_eq!(v.params["label"], 7);
    }
    let err = p
        .runtime
        .start(&p.engine, &p.scope, "free", json!({}), "t")
        .await
        .unwrap_err();
    assert!(matches!(err, YamlStartError::Params(_)), "{err}");
}

#[tokio::test]
async fn s3_8_terminal_without_result_writes_no_result_record() {
    let p = project(&[("t", "start: d\nstates:\n  d: { type: terminal }\n")]).await;
    let v = p.run("t", json!({})).await;
    assert_eq!(v.status, RunStatus::Done);
    assert_eq!(p.count(&v, "ResultRecord"), 0);
    assert_eq!(p.count(&v, "StateEnteredRecord"), 1);
}

/// §4.3: handleCompletion writes the VarRecord of `storeAs:` before the terminal special
/// case, so a terminal's `storeAs:` keeps its result as a variable, for failure too.
#[tokio::test]
async fn s4_3_a_terminal_stores_its_result_before_the_run_ends() {
    let p = project(&[
        (
            "t",
            "start: d
states:
  d: { type: terminal, result: { n: 1 }, storeAs: final }
",
        ),
        (
            "f",
            "start: d
states:
  d: { type: terminal, outcome: failure, result: bad, storeAs: why }
",
        ),
    ])
    .await;
    let v = p.run("t", json!({})).await;
    assert_eq!(v.status, RunStatus::Done);
    assert_eq!(v.vars["final"], json!({"n": 1}));
    assert_eq!(p.count(&v, "VarRecord"), 1);
    let v = p.run("f", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed);
    assert_eq!(v.vars["why"], json!("bad"));
}

#[tokio::test]
async fn the_example_pr_review_runs_without_an_llm_through_its_gate() {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/_vance/workflows/pr-review.yaml");
    let body = std::fs::read_to_string(example).unwrap();
    let p = project(&[("pr-review", &body)]).await;
    std::fs::create_dir_all(p.project.join("_vance")).unwrap();
    let v = p
        .run(
            "pr-review",
            json!({"pr_url": "https://example.invalid/pr/1"}),
        )
        .await;
    assert_eq!(v.status, RunStatus::Waiting, "{v:?}");
    assert_eq!(v.current_state.as_deref(), Some("human_review"));
    let item = p
        .engine
        .inbox(magrathea_core::InboxFilter::Pending)
        .unwrap()
        .remove(0);
    assert_eq!(item.assigned_to, "@maintainers");
    p.engine
        .answer_gate(&item.id, GateAnswer::approve())
        .await
        .unwrap();
    let v = p.engine.wait(v.workflow_run_id).await.unwrap();
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(
        v.result,
        Some(json!({"summary": "merged https://example.invalid/pr/1\n"}))
    );

    let auto = p
        .run("pr-review", json!({"pr_url": "u", "auto_merge": true}))
        .await;
    assert_eq!(auto.status, RunStatus::Done, "{auto:?}");
}

/// Reads `start <ns>` / `end <ns>` pairs written by concurrent shell steps and says whether
/// any two intervals overlapped.
fn intervals_overlap(log: &str) -> bool {
    let mut spans: Vec<(u128, u128)> = Vec::new();
    let mut open: Vec<u128> = Vec::new();
    for line in log.lines() {
        let (what, ns) = line.split_once(' ').unwrap();
        let ns: u128 = ns.trim().parse().unwrap();
        match what {
            "start" => open.push(ns),
            _ => spans.push((open.remove(0), ns)),
        }
    }
    spans.sort();
    spans.windows(2).any(|w| w[1].0 < w[0].1)
}

const LANE_DOC: &str = r#"
start: work
states:
  work:
    type: shell_task
    run: "echo start $(date +%s%N) >> LOG; sleep 0.3; echo end $(date +%s%N) >> LOG"
    dirName: shared
    on:
      success: done
  done: { type: terminal }
"#;

/// Two runs of one project at once; whether their shell steps overlapped.
async fn two_runs_overlap(p: &Project, log: &std::path::Path) -> bool {
    let _ = std::fs::remove_file(log);
    let a = p
        .runtime
        .start(&p.engine, &p.scope, "lane", json!({}), "t")
        .await
        .unwrap();
    let b = p
        .runtime
        .start(&p.engine, &p.scope, "lane", json!({}), "t")
        .await
        .unwrap();
    assert_eq!(p.engine.wait(a).await.unwrap().status, RunStatus::Done);
    assert_eq!(p.engine.wait(b).await.unwrap().status, RunStatus::Done);
    intervals_overlap(&std::fs::read_to_string(log).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_projects_synchronous_tasks_run_one_at_a_time_other_projects_do_not_wait() {
    let shared = tempfile::tempdir().unwrap();
    let log = shared.path().join("lane.log");
    let doc = LANE_DOC.replace("LOG", &log.display().to_string());
    let settings = format!("workspaces:\n  shared: {}\n", shared.path().display());

    // One project, two runs at once: the lane serialises them.
    let p = project(&[("lane", &doc)]).await;
    std::fs::write(p.project.join("_vance/settings.yaml"), &settings).unwrap();
    assert!(!two_runs_overlap(&p, &log).await, "same lane overlapped");

    // A project that raises its limit runs them side by side.
    let q = project(&[("lane", &doc)]).await;
    let raised = format!("{settings}lanes:\n  maxConcurrentTasks: 2\n");
    std::fs::write(q.project.join("_vance/settings.yaml"), raised).unwrap();
    assert!(
        two_runs_overlap(&q, &log).await,
        "raised limit still serialised"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_lane_width_takes_effect_without_a_restart() {
    let shared = tempfile::tempdir().unwrap();
    let log = shared.path().join("lane.log");
    let doc = LANE_DOC.replace("LOG", &log.display().to_string());
    let settings = format!("workspaces:\n  shared: {}\n", shared.path().display());
    let p = project(&[("lane", &doc)]).await;
    let path = p.project.join("_vance/settings.yaml");
    std::fs::write(&path, &settings).unwrap();
    assert!(
        !two_runs_overlap(&p, &log).await,
        "the default lane overlapped"
    );

    std::fs::write(
        &path,
        format!("{settings}lanes:\n  maxConcurrentTasks: 2\n"),
    )
    .unwrap();
    assert!(
        two_runs_overlap(&p, &log).await,
        "a raised width still serialised"
    );

    std::fs::write(&path, &settings).unwrap();
    assert!(
        !two_runs_overlap(&p, &log).await,
        "a lowered width still overlapped"
    );
}

#[tokio::test]
async fn shell_steps_see_params_and_vars_as_environment_and_long_output_keeps_its_tail() {
    let doc = r#"
parameters:
  pr-url: { type: string, required: true }
start: first
states:
  first:
    type: shell_task
    run: 'printf "%s|%s" "$MAGRATHEA_PARAM_PR_URL" "$MAGRATHEA_STATE"'
    dirName: workspace
    storeAs: first
    on:
      success: second
  second:
    type: shell_task
    run: 'echo "$MAGRATHEA_VAR_FIRST"; head -c 5000 /dev/zero | tr "\0" x; echo END'
    dirName: workspace
    storeAs: second
    on:
      success: done
  done: { type: terminal }
"#;
    let p = project(&[("env", doc)]).await;
    std::fs::write(
        p.project.join("_vance/settings.yaml"),
        "shell:\n  maxOutputBytes: 100\n",
    )
    .unwrap();
    let v = p
        .run("env", json!({"pr-url": "https://x/1; rm -rf /"}))
        .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["first"]["stdout"], "https://x/1; rm -rf /|first");
    let second = &v.vars["second"];
    assert_eq!(second["stdoutTruncated"], true);
    let out = second["stdout"].as_str().unwrap();
    assert!(out.starts_with("[… "), "{out}");
    assert!(out.ends_with("xxxxEND\n"), "{out}");
}

/// §2.4 in a shell command: a placeholder gives the value's text (as data, through a variable
/// of its own, by default); `splice: none` refuses it, naming the variable to use.
#[tokio::test(flavor = "multi_thread")]
async fn a_placeholder_in_a_shell_command_gives_the_value_as_data_unless_splice_none() {
    let doc = "start: a\nparameters:\n  branch: { type: string, required: true }\nstates:\n  a:\n    type: shell_task\n    run: \"printf '%s|' ${params.branch} ${params.missing}\"\n    dirName: workspace\n    storeAs: out\n    on:\n      success: done\n  done: { type: terminal, result: \"${state.out.stdout}\" }\n";
    let p = project(&[("w", doc)]).await;
    let v = p.run("w", json!({"branch": "main; echo pwned"})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!("main; echo pwned||")));

    let none = doc.replace("    dirName:", "    splice: none\n    dirName:");
    let errors: Vec<String> =
        match magrathea_yaml::load_workflow("w.yaml", &none, &Default::default()) {
            Ok(_) => panic!("a placeholder under `splice: none` must not load"),
            Err(d) => d.errors().map(|d| d.to_string()).collect(),
        };
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("w.yaml:7:10: [MAG-Y028]")
                && e.contains("\"$MAGRATHEA_PARAM_BRANCH\"")
                && e.contains("splice: none")),
        "{errors:?}"
    );
    // A placeholder where no splice is safe is refused whatever the state says.
    let arithmetic = doc.replace(
        "printf '%s|' ${params.branch} ${params.missing}",
        "echo $(( ${params.n} + 1 )) ${params.branch}",
    );
    let errors: Vec<String> =
        match magrathea_yaml::load_workflow("w.yaml", &arithmetic, &Default::default()) {
            Ok(_) => panic!("a splice inside $((…)) must not load"),
            Err(d) => d.errors().map(|d| d.to_string()).collect(),
        };
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("w.yaml:7:10: [MAG-Y028]")
            && errors[0].contains("'${params.n}' inside `$((…))`")
            && errors[0].contains("\"$MAGRATHEA_PARAM_N\""),
        "{errors:?}"
    );
}

/// §3.7 and §4.1: a sub-run that cannot be started (its document is missing, does not
/// validate, or refuses the parameters) ends the `workflow_task` with a failed task result
/// naming the workflow and why; the parent routes `failure` like any task failure, and
/// without a route the run fails with the reference's reason.
#[tokio::test]
async fn s3_7_a_sub_run_that_cannot_start_is_a_failed_task_result_the_parent_routes() {
    let parent = |routes: &str| {
        format!(
            r#"
parameters:
  which: {{ type: string, required: true }}
start: build
states:
  build:
    type: workflow_task
    workflow: "${{params.which}}"
    storeAs: built
{routes}
  escalate:
    type: terminal
    result: {{ error: "${{state.built.error}}" }}
"#
        )
    };
    let p = project(&[
        ("routed", &parent("    catch:\n      failure: escalate")),
        ("unrouted", &parent("    on:\n      success: escalate")),
        ("broken", "start: nowhere\nstates:\n  d: { type: terminal }\n"),
        (
            "needs",
            "parameters:\n  n: { type: integer, required: true }\nstart: d\nstates:\n  d: { type: terminal }\n",
        ),
    ])
    .await;
    let cases = [
        ("ghost", "[MAG-DOC001]"),
        ("broken", "[MAG-Y008]"),
        ("needs", "'n'"),
    ];
    for (which, why) in cases {
        let v = p.run("routed", json!({ "which": which })).await;
        assert_eq!(v.status, RunStatus::Done, "{which}: {v:?}");
        let error = v.result.as_ref().unwrap()["error"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            error.contains(&format!("`{which}`"))
                && error.contains("cannot start")
                && error.contains(why),
            "{which}: {error}"
        );
        let results: Vec<(String, Option<String>)> = p
            .records(&v)
            .into_iter()
            .filter_map(|r| match r {
                Record::TaskResult { outcome, error, .. } => Some((outcome.into_string(), error)),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 1, "{which}: {results:?}");
        assert_eq!(results[0].0, "failure", "{which}");
        assert_eq!(results[0].1.as_deref(), Some(error.as_str()), "{which}");
        // The message is journaled before the task that carries it, so a replay on code
        // whose loader words it otherwise asks for the same task.
        let journaled: Vec<Value> = p
            .records(&v)
            .into_iter()
            .filter_map(|r| match r {
                Record::SideEffect { name, value, .. } if name == "workflow_task_not_started" => {
                    Some(value)
                }
                _ => None,
            })
            .collect();
        assert_eq!(journaled, vec![json!(error)], "{which}");

        let v = p.run("unrouted", json!({ "which": which })).await;
        assert_eq!(v.status, RunStatus::Failed, "{which}: {v:?}");
        assert_eq!(
            v.reason.as_deref(),
            Some("no transition for outcome 'failure'"),
            "{which}"
        );
    }
}

/// The failed task result of a sub-run that could not start is part of the run's journal like
/// any task's: a run that routes it to a gate is evicted while it waits, and once answered it
/// goes on by replaying that journal (the task is not run again, nothing is non-deterministic).
#[tokio::test]
async fn s3_7_a_sub_run_that_could_not_start_replays_when_the_run_wakes() {
    let p = project(&[(
        "parent",
        r#"
start: build
states:
  build:
    type: workflow_task
    workflow: ghost
    storeAs: built
    catch: { failure: ask }
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Go on without the build?" }
    on: { approved: done, rejected: done }
  done: { type: terminal, result: "${state.built.error}" }
"#,
    )])
    .await;
    let v = p.run("parent", json!({})).await;
    assert_eq!(v.status, RunStatus::Waiting, "{v:?}");
    let v = p.answer_pending(&v, GateAnswer::approve()).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let error = v
        .result
        .as_ref()
        .and_then(|r| r.as_str())
        .unwrap_or_default();
    assert!(
        error.starts_with("[MAG-YR002] workflow_task 'build' cannot start workflow `ghost`"),
        "{error}"
    );
    // The failed start's task step, then the gate's.
    assert_eq!(p.count(&v, "TaskStartedRecord"), 2);
    assert_eq!(p.count(&v, "TaskResultRecord"), 2);
}

/// §4.2 (`cancelled`: the workflow stopped by `cancel`): a cancel ends the state's task step
/// with a final `TaskResultRecord` of outcome `cancelled` and the cancel's reason, after the
/// `CancelRequestedRecord` and before the `CANCELLED` status, whether an attempt runs (its
/// process is stopped) or the run sleeps out of memory in a timer's step. The journal replays.
#[tokio::test]
async fn s4_2_a_cancel_ends_the_task_step_in_flight_with_a_cancelled_result() {
    let p = project(&[
        (
            "slow",
            "start: work\nstates:\n  work:\n    type: shell_task\n    run: \"sleep 30\"\n    dirName: workspace\n    on: { success: done }\n  done: { type: terminal }\n",
        ),
        (
            "nap",
            "start: n\nstates:\n  n:\n    type: timer_task\n    duration: 1h\n    on: { fired: done }\n  done: { type: terminal }\n",
        ),
    ])
    .await;
    for (name, task) in [("slow", "shell_task"), ("nap", "timer_task")] {
        let run = p
            .runtime
            .start(&p.engine, &p.scope, name, json!({}), "tester")
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let started = p
                .engine
                .journal(run)
                .unwrap()
                .iter()
                .any(|e| matches!(&e.record, Record::TaskStarted { task: t, .. } if t == task));
            let asleep = task != "timer_task" || p.engine.runs_in_memory() == 0;
            if started && asleep {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        p.engine.cancel(run, "no longer needed").await.unwrap();
        let v = p.engine.wait(run).await.unwrap();
        assert_eq!(v.status, RunStatus::Cancelled, "{name}");
        let journal = p.engine.journal(run).unwrap();
        let tail: Vec<String> = journal
            .iter()
            .skip_while(|e| !matches!(e.record, Record::CancelRequested { .. }))
            .map(|e| match &e.record {
                Record::TaskResult {
                    step,
                    outcome,
                    error,
                    is_final,
                    ..
                } => format!(
                    "result {step} {outcome} {} {is_final}",
                    error.as_deref().unwrap_or_default()
                ),
                other => other.type_name().to_string(),
            })
            .collect();
        assert_eq!(
            tail,
            [
                "CancelRequestedRecord",
                "result 1 cancelled no longer needed true",
                "StatusRecord"
            ],
            "{name}"
        );
        p.engine
            .check_replay(journal)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
