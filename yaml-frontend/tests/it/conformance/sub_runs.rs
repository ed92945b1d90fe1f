//! `workflow_task` (§3.7): sub-runs that succeed, fail, time out or cannot start, and how
//! the parent routes and replays them.

use super::*;

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
