//! Retrying a failed or cancelled YAML run from a state: the new run begins there with the
//! variables the original had when it entered it, on the frozen or the current definition.

use crate::http_common;

use http_common::{ACME, GLOBEX, Server, write};
use serde_json::{Value, json};

/// `prepare` stores a variable (and appends to `prepared.log`); `check` fails until the file
/// `fixed` exists; `done` returns the variable.
fn flow(version: &str) -> String {
    format!(
        r#"
start: prepare
states:
  prepare:
    type: shell_task
    run: "echo x >> prepared.log; echo prepared"
    dirName: workspace
    storeAs: prep
    on: {{ success: check }}
  check:
    type: shell_task
    run: "test -e fixed"
    dirName: workspace
    on: {{ success: done }}
  done: {{ type: terminal, result: {{ version: {version}, prep: "${{state.prep}}" }} }}
"#
    )
}

/// The same workflow without the `check` state.
const WITHOUT_CHECK: &str = r#"
start: prepare
states:
  prepare:
    type: shell_task
    run: "echo prepared"
    dirName: workspace
    storeAs: prep
    on: { success: done }
  done: { type: terminal, result: gone }
"#;

async fn retry(s: &Server, run: &str, body: Value, token: &str) -> (u16, Value) {
    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/retry"),
            Some(token),
        )
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn states_entered(journal: &[Value]) -> Vec<&str> {
    journal
        .iter()
        .filter(|e| e["type"] == "StateEnteredRecord")
        .map(|e| e["state"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn a_failed_run_is_retried_from_its_failed_state_with_the_variables_it_had_there() {
    let s = Server::start().await;
    let project = s.root.join("acme/shop");
    let doc = project.join("_vance/workflows/flow.yaml");
    write(&doc, &flow("1"));
    let first = s.start_run("shop", "flow", json!({})).await;
    let failed = s.wait_status("shop", &first, &["FAILED"]).await;
    let prep = failed["vars"]["prep"].clone();
    assert!(!prep.is_null(), "{failed}");

    // Not a state it entered, and no definition chosen: refused.
    let (status, body) = retry(
        &s,
        &first,
        json!({"fromState": "nowhere", "definition": "frozen"}),
        ACME,
    )
    .await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("MAG-HTTP-RETRY-FROM")),
        "{body}"
    );
    let (status, _) = retry(&s, &first, json!({}), ACME).await;
    assert_eq!(status, 400);
    // Another tenant does not find it.
    let (status, _) = retry(&s, &first, json!({"definition": "frozen"}), GLOBEX).await;
    assert_eq!(status, 404);

    std::fs::write(project.join("fixed"), "").unwrap();
    write(&doc, &flow("2"));
    let (status, body) = retry(&s, &first, json!({"definition": "frozen"}), ACME).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["fromState"], "check");
    assert_eq!(body["retryOf"], first.as_str());
    let frozen = body["workflowRunId"].as_str().unwrap().to_owned();
    let view = s.wait_status("shop", &frozen, &["DONE"]).await;
    assert_eq!(
        view["result"]["version"], 1,
        "the original's definition: {view}"
    );
    assert_eq!(view["vars"]["prep"], prep);
    assert_eq!(view["params"], json!({}));
    // It began at `check`: `prepare` did not run again.
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{frozen}/journal"),
            Some(ACME),
        )
        .await;
    assert_eq!(states_entered(&journal), ["check", "done"]);
    let log = std::fs::read_to_string(project.join("prepared.log")).unwrap();
    assert_eq!(log.lines().count(), 1);
    let origin: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{frozen}/origin"),
            Some(ACME),
        )
        .await;
    assert_eq!(
        origin,
        json!({"kind": "retry", "retryOf": first, "fromState": "check", "definition": "frozen"})
    );

    // On the current document, from an explicit state.
    let (status, body) = retry(
        &s,
        &first,
        json!({"fromState": "check", "definition": "current"}),
        ACME,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let current = body["workflowRunId"].as_str().unwrap().to_owned();
    let view = s.wait_status("shop", &current, &["DONE"]).await;
    assert_eq!(view["result"]["version"], 2);
    assert_eq!(view["result"]["prep"], prep);

    // A DONE run is not retried.
    let (status, body) = retry(&s, &current, json!({"definition": "frozen"}), ACME).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("MAG-HTTP-RETRY-STATE"))
    );
    // The current document no longer has the state.
    write(&doc, WITHOUT_CHECK);
    let (status, body) = retry(&s, &first, json!({"definition": "current"}), ACME).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (400, json!("MAG-HTTP-RETRY-FROM")),
        "{body}"
    );
}

#[tokio::test]
async fn a_cancelled_run_is_retried_from_an_earlier_state_with_that_states_variables() {
    let s = Server::start().await;
    let project = s.root.join("acme/shop");
    write(
        &project.join("_vance/workflows/steps.yaml"),
        r#"
start: a
states:
  a:
    type: shell_task
    run: "echo one"
    dirName: workspace
    storeAs: first
    on: { success: b }
  b:
    type: shell_task
    run: "echo two"
    dirName: workspace
    storeAs: second
    on: { success: wait }
  wait:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Go on?" }
    on:
      approved: done
  done: { type: terminal, result: { first: "${state.first}", second: "${state.second}" } }
"#,
    );
    let run = s.start_run("shop", "steps", json!({})).await;
    let waiting = s.wait_status("shop", &run, &["WAITING"]).await;
    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/cancel"),
            Some(ACME),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    s.wait_status("shop", &run, &["CANCELLED"]).await;

    // From `b`: the variables `a` stored, not those of `b`.
    let (status, body) = retry(
        &s,
        &run,
        json!({"fromState": "b", "definition": "frozen"}),
        ACME,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    let again = body["workflowRunId"].as_str().unwrap().to_owned();
    let view = s.wait_status("shop", &again, &["WAITING"]).await;
    assert_eq!(view["vars"]["first"], waiting["vars"]["first"]);
    // `b` ran again and stored its own output.
    assert_eq!(view["vars"]["second"]["stdout"], "two\n");
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{again}/journal"),
            Some(ACME),
        )
        .await;
    assert_eq!(states_entered(&journal), ["b", "wait"]);
    let start = &journal[0];
    assert_eq!(start["entry"]["state"], "b");
    assert_eq!(
        start["entry"]["vars"],
        json!({"first": waiting["vars"]["first"]})
    );
}

#[tokio::test]
async fn reruns_and_retries_count_as_started_runs_of_their_own_kind() {
    let s = Server::start().await;
    let project = s.root.join("acme/shop");
    write(&project.join("_vance/workflows/flow.yaml"), &flow("1"));
    let first = s.start_run("shop", "flow", json!({})).await;
    s.wait_status("shop", &first, &["FAILED"]).await;
    let (status, body) = retry(&s, &first, json!({"definition": "frozen"}), ACME).await;
    assert_eq!(status, 202, "{body}");
    for definition in ["current", "frozen"] {
        let r = s
            .post(
                &format!("/brain/acme/project/shop/workflows/runs/{first}/rerun"),
                Some(ACME),
            )
            .json(&json!({ "definition": definition }))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 202);
    }
    let text = s
        .get("/metrics", None)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for needle in [
        "magrathea_runs_started_total{trigger=\"rest\"} 1",
        "magrathea_runs_started_total{trigger=\"retry\"} 1",
        "magrathea_runs_started_total{trigger=\"rerun\"} 2",
    ] {
        assert!(text.contains(needle), "missing {needle} in:\n{text}");
    }
}

/// A run that failed at a `terminal` with `outcome: failure` is retried, by default, from the
/// last state it entered before that terminal: retried at the terminal, it would fail again
/// at once.
#[tokio::test]
async fn a_run_failed_at_a_failure_terminal_is_retried_from_the_state_before_it() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/gatekeeper.yaml"),
        r##"
start: check
states:
  check:
    type: condition_task
    transitions:
      - if: "#params['ok'] == true"
        to: done
      - else: refused
  done: { type: terminal, result: ok }
  refused: { type: terminal, outcome: failure }
"##,
    );
    let first = s
        .start_run("shop", "gatekeeper", json!({"ok": false}))
        .await;
    let failed = s.wait_status("shop", &first, &["FAILED"]).await;
    assert_eq!(failed["currentState"], "refused", "{failed}");
    let (status, body) = retry(&s, &first, json!({"definition": "frozen"}), ACME).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["fromState"], "check", "{body}");
    // Asked for, the terminal itself is where it begins.
    let (status, body) = retry(
        &s,
        &first,
        json!({"definition": "frozen", "fromState": "refused"}),
        ACME,
    )
    .await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["fromState"], "refused", "{body}");
}

/// A saga's failure: the compensations ran after the failed state, and a retry without a state
/// runs the failed state again, not the last undo (which would undo twice).
#[tokio::test]
async fn a_compensated_run_is_retried_from_the_state_that_failed_not_from_an_undo() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/saga.yaml"),
        r#"
onFailure: compensate
start: reserve
states:
  reserve:
    type: shell_task
    dirName: workspace
    run: "echo reserved >> saga.log"
    compensate: release
    on: { success: charge }
  charge:
    type: shell_task
    dirName: workspace
    run: "echo charged >> saga.log; test -e fixed"
    on: { success: done }
  release:
    type: shell_task
    dirName: workspace
    run: "echo released >> saga.log"
  done: { type: terminal, result: ok }
"#,
    );
    let first = s.start_run("shop", "saga", json!({})).await;
    s.wait_status("shop", &first, &["FAILED"]).await;
    let log = s.root.join("acme/shop/saga.log");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "reserved\ncharged\nreleased\n"
    );

    std::fs::write(s.root.join("acme/shop/fixed"), "").unwrap();
    let (status, body) = retry(&s, &first, json!({"definition": "frozen"}), ACME).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(body["fromState"], "charge", "{body}");
    let again = body["workflowRunId"].as_str().unwrap().to_owned();
    let done = s.wait_status("shop", &again, &["DONE", "FAILED"]).await;
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "reserved\ncharged\nreleased\ncharged\n",
        "the undo did not run again"
    );
}

/// A retry sent again with its `Idempotency-Key` (a client retrying after a timeout) gets the
/// run the first one started, with where and on what it began; another key, another run.
#[tokio::test]
async fn a_retry_with_the_same_idempotency_key_retries_once() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/flow.yaml"),
        &flow("1"),
    );
    let first = s.start_run("shop", "flow", json!({})).await;
    s.wait_status("shop", &first, &["FAILED"]).await;
    let send = |key: &'static str, body: Value| {
        s.post(
            &format!("/brain/acme/project/shop/workflows/runs/{first}/retry"),
            Some(ACME),
        )
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
    };
    let body = json!({"definition": "frozen", "fromState": "prepare"});
    let answers = futures::future::join_all((0..5).map(|_| send("once", body.clone()))).await;
    let run = http_common::one_run_for_the_key(answers).await;

    // Again, with another body: the run the key started, as it was started.
    let again = send("once", json!({"definition": "current"}))
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let v: Value = again.json().await.unwrap();
    assert_eq!(v["workflowRunId"].as_str(), Some(run.as_str()));
    assert_eq!(v["retryOf"], first.as_str());
    assert_eq!(v["fromState"], "prepare", "{v}");
    assert_eq!(v["definition"], "frozen", "{v}");

    let (status, other) = retry(&s, &first, json!({"definition": "current"}), ACME).await;
    assert_eq!(status, 202, "{other}");
    assert_ne!(other["workflowRunId"].as_str(), Some(run.as_str()));
}
