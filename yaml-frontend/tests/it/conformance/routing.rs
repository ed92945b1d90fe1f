//! How a run's data and outcomes route it: parameters (§2.1), `storeAs` keys (§2.2),
//! placeholders in conditions (§2.4), transitions and conditions (§3.6, §4.1), retries
//! (§4.3), frozen snapshots (§7) and terminals (§3.8).

use super::*;

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

/// §1 names `failure` beside `success` as what a task ends with, and the reference's example
/// routes an `agent_task` by `on: failure`: it takes every failure of the task that no route of
/// its own kind takes, by `on:` or `catch:`, and `retry.on: [failure]` retries them.
#[tokio::test]
async fn s1_failure_routes_every_failure_its_own_kind_does_not() {
    let p = project(&[
        (
            "generic",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: exit 3\n    dirName: workspace\n    on: { success: ok, failure: failed }\n  ok: { type: terminal }\n  failed: { type: terminal, outcome: failure, result: failed }\n",
        ),
        (
            "specific",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: exit 3\n    dirName: workspace\n    on: { success: ok, failure: failed }\n    catch: { business_error: business }\n  ok: { type: terminal }\n  failed: { type: terminal, outcome: failure, result: failed }\n  business: { type: terminal, outcome: failure, result: business }\n",
        ),
        (
            "caught",
            "start: a\nstates:\n  a:\n    type: shell_task\n    run: exit 3\n    dirName: workspace\n    retry: { maxAttempts: 2, on: [failure], backoffSeconds: 0 }\n    on: { success: ok }\n    catch: { failure: failed }\n  ok: { type: terminal }\n  failed: { type: terminal, outcome: failure, result: failed }\n",
        ),
        (
            "rejected",
            "start: g\nstates:\n  g:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: ok? }\n    on: { approved: ok, failure: failed }\n  ok: { type: terminal }\n  failed: { type: terminal, outcome: failure, result: failed }\n",
        ),
    ])
    .await;
    let v = p.run("generic", json!({})).await;
    assert_eq!(v.current_state.as_deref(), Some("failed"), "{v:?}");
    assert_eq!(v.result, Some(json!("failed")));
    // A route of the outcome's own kind wins.
    let v = p.run("specific", json!({})).await;
    assert_eq!(v.result, Some(json!("business")), "{v:?}");
    // `catch: failure` likewise, after `retry.on: [failure]` ran the state again.
    let v = p.run("caught", json!({})).await;
    assert_eq!(v.result, Some(json!("failed")), "{v:?}");
    assert_eq!(p.count(&v, "TaskStartedRecord"), 2);
    // A rejection is a decision, not a failure of the task.
    let v = p.run("rejected", json!({})).await;
    assert_eq!(v.status, RunStatus::Waiting, "{v:?}");
    let v = p.answer_pending(&v, GateAnswer::reject()).await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    assert!(
        v.reason
            .as_deref()
            .is_some_and(|r| r.contains("no transition for outcome 'rejected'")),
        "{v:?}"
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

/// §4.2 `cancelled`: a cancel that finds a condition_task's evaluation in flight ends the
/// run CANCELLED with the cancel's reason, as for any task in flight; it is no failed
/// evaluation (`technical_error`) for the routing. Two conditions loop until cancelled.
#[tokio::test(flavor = "multi_thread")]
async fn s4_2_a_cancel_during_a_condition_loop_ends_the_run_cancelled() {
    let doc = r##"
start: a
bounds: { maxTaskSpawns: 100000000 }
states:
  a: { type: condition_task, transitions: [ { else: b } ] }
  b: { type: condition_task, transitions: [ { else: a } ] }
"##;
    let p = project(&[("spin", doc)]).await;
    for _ in 0..5 {
        let run = p
            .runtime
            .start(&p.engine, &p.scope, "spin", json!({}), "tester")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        p.engine.cancel(run, "enough").await.unwrap();
        let view = p.engine.wait_settled(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Cancelled, "{view:?}");
        assert!(
            view.reason.as_deref().is_some_and(|r| r.contains("enough")),
            "{view:?}"
        );
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
