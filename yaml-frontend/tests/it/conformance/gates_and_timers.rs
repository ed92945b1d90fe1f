//! Steps that wait: gates (§3.4), timers (§3.5), both as task steps (§5), the reference's
//! example through its gate, and a cancel of a waiting or working step (§4.2).

use super::*;

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

/// §3.4: "assignedTo fallback: Spec value → startedBy → \"@system\"": a spec value that
/// resolves blank falls to the starter, and a run started by no one (a blank name) to
/// `@system`.
#[tokio::test]
async fn s3_4_a_blank_assignee_and_a_blank_starter_fall_through_to_system() {
    let named = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship?", assignedTo: "${params.who}" }
    on: { approved: done }
  done: { type: terminal }
"#;
    let unnamed = named.replace(", assignedTo: \"${params.who}\"", "");
    let p = project(&[("named", named), ("unnamed", &unnamed)]).await;
    let assignee = |name: &'static str, who: &'static str, started_by: &'static str| {
        let p = &p;
        async move {
            let run = p
                .runtime
                .start(&p.engine, &p.scope, name, json!({ "who": who }), started_by)
                .await
                .unwrap();
            let v = p.engine.wait_settled(run).await.unwrap();
            assert_eq!(v.status, RunStatus::Waiting);
            p.engine
                .inbox(magrathea_core::InboxFilter::Pending)
                .unwrap()
                .into_iter()
                .find(|i| i.workflow_run_id == v.workflow_run_id)
                .unwrap()
                .assigned_to
        }
    };
    assert_eq!(assignee("named", "ops", "tester").await, "ops");
    assert_eq!(assignee("named", " ", "tester").await, "tester");
    assert_eq!(assignee("unnamed", "", " ").await, "@system");
}

/// §2.4 ("any string value in a State spec may contain placeholders"): a DECISION's options
/// may come whole from one placeholder, a list resolved when the gate opens; the chosen one
/// routes like a written option.
#[tokio::test]
async fn s2_4_a_decisions_options_may_come_from_one_placeholder() {
    let doc = r#"
parameters:
  choices: { type: array }
start: ask
states:
  ask:
    type: gate_task
    inbox:
      kind: DECISION
      options: "${params.choices}"
    storeAs: decision
    on:
      canary: done
      full: done
  done: { type: terminal, result: "${state.decision.chosen}" }
"#;
    let p = project(&[("pick", doc)]).await;
    let v = p.run("pick", json!({"choices": ["canary", "full"]})).await;
    assert_eq!(v.status, RunStatus::Waiting, "{v:?}");
    let item = p
        .engine
        .inbox(magrathea_core::InboxFilter::Pending)
        .unwrap()
        .remove(0);
    assert_eq!(item.options, ["canary", "full"]);
    let v = p.answer_pending(&v, GateAnswer::choose("full")).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!("full")));

    // An empty list leaves nothing to decide: the step ends technical_error, no item opens.
    let v = p.run("pick", json!({"choices": []})).await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    let records = p.records(&v);
    let error = records
        .iter()
        .find_map(|r| match r {
            Record::TaskResult {
                outcome, output, ..
            } if outcome.as_str() == "technical_error" => Some(output["error"].to_string()),
            _ => None,
        })
        .unwrap_or_default();
    assert!(error.contains("[MAG-YR003]"), "{records:?}");
    assert!(
        p.engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .is_empty()
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

/// §9: "The Bounds Check runs after each Task completion and before the next enqueue" and
/// "Retries count": a retry the spawns cannot pay for fails the run at the completion, not
/// after waiting out its backoff.
#[tokio::test]
async fn s9_a_retry_past_max_task_spawns_fails_without_waiting_for_its_backoff() {
    let doc = r#"
start: a
bounds: { maxTaskSpawns: 1 }
states:
  a:
    type: shell_task
    run: "exit 1"
    dirName: workspace
    retry: { maxAttempts: 5, on: [business_error], backoffSeconds: 3600 }
    catch: { business_error: done }
  done: { type: terminal }
"#;
    let p = project(&[("spent", doc)]).await;
    let v = p.run("spent", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert_eq!(
        v.reason.as_deref(),
        Some("bounds exhausted: maxTaskSpawns 1 reached before state 'a'")
    );
    assert_eq!(p.count(&v, "TaskStartedRecord"), 1);
    assert_eq!(p.count(&v, "TimerSetRecord"), 0, "no backoff is waited out");
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

/// §2.2 (`storeAs`: "for non-null output"): a task ended by a cancel produced nothing, so
/// its `storeAs` variable is not written, whether a process or a gate was waited on; the
/// cleanup state that `catch: { cancelled }` routes to reads it as empty.
#[tokio::test]
async fn s2_2_a_cancelled_task_stores_no_variable() {
    let p = project(&[
        (
            "slow",
            "start: work\nstates:\n  work:\n    type: shell_task\n    run: \"sleep 30\"\n    dirName: workspace\n    storeAs: o\n    on: { success: done }\n    catch: { cancelled: cleanup }\n  done: { type: terminal }\n  cleanup: { type: terminal, result: \"[${state.o}]\" }\n",
        ),
        (
            "ask",
            "start: work\nstates:\n  work:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: ok? }\n    storeAs: o\n    on: { approved: done, rejected: done }\n    catch: { cancelled: cleanup }\n  done: { type: terminal }\n  cleanup: { type: terminal, result: \"[${state.o}]\" }\n",
        ),
    ])
    .await;
    for (name, task) in [("slow", "shell_task"), ("ask", "gate_task")] {
        let run = p
            .runtime
            .start(&p.engine, &p.scope, name, json!({}), "tester")
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !p
            .engine
            .journal(run)
            .unwrap()
            .iter()
            .any(|e| matches!(&e.record, Record::TaskStarted { task: t, .. } if t == task))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: never started"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        p.engine.cancel(run, "no longer needed").await.unwrap();
        let v = p.engine.wait(run).await.unwrap();
        assert_eq!(v.current_state.as_deref(), Some("cleanup"), "{name}: {v:?}");
        assert_eq!(v.result, Some(json!("[]")), "{name}");
        let vars: Vec<String> = p
            .engine
            .journal(run)
            .unwrap()
            .iter()
            .filter_map(|e| match &e.record {
                Record::Var { key, .. } => Some(key.clone()),
                _ => None,
            })
            .collect();
        assert!(vars.is_empty(), "{name}: {vars:?}");
    }
}

/// §4.3, §9: the Bounds Check comes after a completion and before the next enqueue: a run
/// whose task spawns are used up fails there, never entering the state it would have run.
#[tokio::test]
async fn s9_a_run_out_of_spawns_fails_before_entering_the_next_state() {
    let doc = r#"
start: a
bounds:
  maxTaskSpawns: 2
states:
  a: { type: shell_task, run: "true", dirName: workspace, on: { success: b } }
  b: { type: shell_task, run: "true", dirName: workspace, on: { success: c } }
  c: { type: shell_task, run: "true", dirName: workspace, on: { success: done } }
  done: { type: terminal }
"#;
    let p = project(&[("three", doc)]).await;
    let v = p.run("three", json!({})).await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert_eq!(
        v.reason.as_deref(),
        Some("bounds exhausted: maxTaskSpawns 2 reached before state 'c'")
    );
    assert_eq!(v.current_state.as_deref(), Some("b"), "{v:?}");
    let entered: Vec<String> = p
        .records(&v)
        .into_iter()
        .filter_map(|r| match r {
            Record::StateEntered { state, .. } => Some(state),
            _ => None,
        })
        .collect();
    assert_eq!(entered, ["a", "b"]);
    assert_eq!(p.count(&v, "TaskStartedRecord"), 2);
}

/// Two quick shell steps, `one` then `two`, then `done`.
const TWO_QUICK_STEPS: &str = r#"  one:
    type: shell_task
    run: "true"
    dirName: workspace
    on: { success: two }
  two:
    type: shell_task
    run: "true"
    dirName: workspace
    on: { success: done }
"#;

/// §9: the Bounds Check runs after each task's completion. A task that ends past the run's
/// `maxWallclockSeconds`, before the deadline's timer has woken, must not let the run go on
/// to its next state (the bound was only the timer: one run in ten ended DONE).
#[tokio::test]
async fn s9_a_task_that_ends_past_the_wallclock_bound_ends_the_run() {
    let doc = format!(
        "start: one\nbounds:\n  maxWallclockSeconds: 0\nstates:\n{TWO_QUICK_STEPS}  done: {{ type: terminal }}\n"
    );
    let p = project(&[("late", &doc)]).await;
    for _ in 0..12 {
        let v = p.run("late", json!({})).await;
        assert_eq!(v.status, RunStatus::Failed, "{v:?}");
        let reason = v.reason.as_deref().unwrap_or_default();
        assert!(
            reason.starts_with("bounds exhausted: maxWallclockSeconds 0"),
            "{reason}"
        );
        assert!(
            p.count(&v, "TaskStartedRecord") <= 1,
            "no task starts past the bound: {:?}",
            p.records(&v)
        );
    }
}

/// A run that goes on past its deadline (to `onFailure`'s fallback, here a gate) replays as
/// it ran, whether the deadline's timer woke first or the task's result found it past due.
#[tokio::test]
async fn a_run_past_its_deadline_at_a_completion_replays_as_it_ran() {
    let doc = format!(
        "start: one\nonFailure: {{ policy: fallback, fallback: ask }}\nbounds:\n  maxWallclockSeconds: 0\nstates:\n{TWO_QUICK_STEPS}  ask:\n    type: gate_task\n    inbox: {{ kind: APPROVAL, title: \"Late: go on?\" }}\n    on: {{ approved: done }}\n  done: {{ type: terminal }}\n"
    );
    let p = project(&[("late", &doc)]).await;
    for _ in 0..12 {
        let v = p.run("late", json!({})).await;
        assert_eq!(v.status, RunStatus::Waiting, "{v:?}");
        assert_eq!(v.current_state.as_deref(), Some("ask"), "{v:?}");
        let journal = p.engine.journal(v.workflow_run_id).unwrap();
        let shell_steps = journal
            .iter()
            .filter(
                |e| matches!(&e.record, Record::TaskStarted { task, .. } if task == "shell_task"),
            )
            .count();
        assert!(shell_steps <= 1, "{journal:?}");
        p.engine
            .check_replay_as(v.workflow_run_id, journal)
            .expect("the journal replays");
    }
}
