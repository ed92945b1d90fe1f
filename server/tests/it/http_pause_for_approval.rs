//! `onFailure: pause_for_approval` over real HTTP: a failure nothing routes opens a DECISION
//! inbox item; answering `retry` runs the state again, `fallback` goes to the fallback state,
//! `abort` fails the run with the original reason; its timeout aborts; and a decision pending
//! when the server is SIGKILLed can still be answered after the restart.

use crate::http_common;
use crate::serve_child;

use http_common::{ACME, Server, write};
use serde_json::{Value, json};

/// `flaky` fails until the file `fixed` exists in the workspace.
const DOC: &str = r#"
onFailure: { policy: pause_for_approval, fallback: cleanup }
start: flaky
states:
  flaky:
    type: shell_task
    run: "echo attempt >> attempts.log; test -e fixed"
    dirName: workspace
    on: { success: done }
  cleanup: { type: terminal, result: "cleaned after ${state.lastError.outcome}" }
  done: { type: terminal, result: fixed }
"#;

async fn start(s: &Server, doc: &str) -> String {
    write(&s.root.join("acme/shop/_vance/workflows/flaky.yaml"), doc);
    let id = s.start_run("shop", "flaky", json!({})).await;
    s.wait_status("shop", &id, &["WAITING"]).await;
    id
}

async fn decision(s: &Server, run: &str) -> Value {
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    items
        .into_iter()
        .find(|i| i["workflowRunId"] == run)
        .expect("the decision is pending")
}

async fn choose(s: &Server, item: &Value, option: &str) {
    let id = item["id"].as_str().unwrap();
    let r = s
        .post(
            &format!("/brain/acme/project/shop/inbox/{id}/answer"),
            Some(ACME),
        )
        .json(&json!({"kind": "choose", "option": option}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
}

#[tokio::test]
async fn the_decision_names_the_state_and_its_error_and_offers_its_options() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    let item = decision(&s, &run).await;
    assert_eq!(item["kind"], "DECISION", "{item}");
    let id = item["id"].as_str().unwrap();
    let full: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    let title = full["title"].as_str().unwrap();
    assert!(
        title.contains("'flaky'") && title.contains("business_error"),
        "{full}"
    );
    assert!(
        full["body"].as_str().unwrap().contains("exitCode"),
        "{full}"
    );
    assert_eq!(
        full["options"],
        json!(["retry", "fallback", "abort"]),
        "{full}"
    );
}

#[tokio::test]
async fn retry_runs_the_failed_state_again() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    std::fs::write(s.root.join("acme/shop/fixed"), "").unwrap();
    choose(&s, &decision(&s, &run).await, "retry").await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "fixed");
    let log = std::fs::read_to_string(s.root.join("acme/shop/attempts.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
}

#[tokio::test]
async fn fallback_goes_to_the_fallback_state_with_the_error_stored() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    choose(&s, &decision(&s, &run).await, "fallback").await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "cleaned after business_error");
    assert_eq!(view["vars"]["lastError"]["state"], "flaky");
}

#[tokio::test]
async fn abort_fails_the_run_with_the_original_reason() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    choose(&s, &decision(&s, &run).await, "abort").await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["reason"],
        "no transition for outcome 'business_error' (onFailure: pause_for_approval: aborted by alice)"
    );
}

#[tokio::test]
async fn without_a_fallback_state_fallback_is_not_offered_and_a_timeout_aborts() {
    let s = Server::start().await;
    let doc = DOC.replace(
        "{ policy: pause_for_approval, fallback: cleanup }",
        "{ policy: pause_for_approval, timeoutSeconds: 1 }",
    );
    write(&s.root.join("acme/shop/_vance/workflows/flaky.yaml"), &doc);
    let run = s.start_run("shop", "flaky", json!({})).await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["reason"],
        "no transition for outcome 'business_error' (onFailure: pause_for_approval: the decision timed out)"
    );
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox?status=all", Some(ACME))
        .await;
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == run.as_str())
        .unwrap();
    let id = item["id"].as_str().unwrap();
    let full: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    assert_eq!(full["options"], json!(["retry", "abort"]), "{full}");
}

#[tokio::test]
async fn a_pending_decision_survives_sigkill_and_its_answer_still_works() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    http_common::tree(&root);
    write(&root.join("acme/shop/_vance/workflows/flaky.yaml"), DOC);
    let client = reqwest::Client::new();
    let mut server = serve_child::ServeChild::start(&root);
    let run = server.start_run(&client, "flaky", ACME).await;
    server.wait_status(&client, &run, ACME, &["WAITING"]).await;
    server.kill(); // SIGKILL while the decision is pending
    std::fs::write(root.join("acme/shop/fixed"), "").unwrap();
    let mut server = serve_child::ServeChild::start(&root);
    let items: Vec<Value> = client
        .get(format!("{}/brain/acme/project/shop/inbox", server.base))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == run.as_str())
        .expect("the decision is still pending");
    let id = item["id"].as_str().unwrap();
    let r = client
        .post(format!(
            "{}/brain/acme/project/shop/inbox/{id}/answer",
            server.base
        ))
        .bearer_auth(ACME)
        .json(&json!({"kind": "choose", "option": "retry"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let view = server
        .wait_status(&client, &run, ACME, &["DONE", "FAILED"])
        .await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "fixed");
    server.stop();
}

#[tokio::test]
async fn only_the_named_approvers_may_answer_the_decision() {
    let s = Server::start().await;
    let doc = DOC.replace(
        "fallback: cleanup }",
        "fallback: cleanup, approvers: { users: [runner] } }",
    );
    let run = start(&s, &doc).await;
    let item = decision(&s, &run).await;
    let id = item["id"].as_str().unwrap();
    let path = format!("/brain/acme/project/shop/inbox/{id}/answer");
    let refused = s
        .post(&path, Some(ACME))
        .json(&json!({"kind": "choose", "option": "abort"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        http_common::code(refused).await,
        (403, "MAG-HTTP-NOT-APPROVER".into())
    );
    let r = s
        .post(&path, Some(http_common::ACME_RUN))
        .json(&json!({"kind": "choose", "option": "fallback"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["result"], "cleaned after business_error", "{view}");
}

#[tokio::test]
async fn friday_lists_the_decision_as_an_approval_and_approving_it_retries() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    let id = decision(&s, &run).await["id"].as_str().unwrap().to_owned();
    let listed: Vec<Value> = s.get_json("/v1/workflow-approvals", Some(ACME)).await;
    let listed = listed
        .iter()
        .find(|a| a["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(listed["status"], "pending", "{listed}");
    std::fs::write(s.root.join("acme/shop/fixed"), "").unwrap();
    let r: Value = s
        .post_json(
            &format!("/v1/workflow-approvals/{id}/approve"),
            Some(ACME),
            &json!({"comment": "fixed the file"}),
        )
        .await;
    assert_eq!(r["applied"], true, "{r}");
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["result"], "fixed", "{view}");
    let got: Value = s
        .get_json(&format!("/v1/workflow-approvals/{id}"), Some(ACME))
        .await;
    assert_eq!(got["status"], "approved", "{got}");
    assert_eq!(got["answer"]["value"], json!({"chosen": "retry"}), "{got}");
    assert_eq!(got["answer"]["comment"], "fixed the file", "{got}");
}

#[tokio::test]
async fn friday_rejecting_the_decision_aborts_the_run() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    let id = decision(&s, &run).await["id"].as_str().unwrap().to_owned();
    let r: Value = s
        .post_json(
            &format!("/v1/workflow-approvals/{id}/reject"),
            Some(ACME),
            &json!({}),
        )
        .await;
    assert_eq!(r["applied"], true, "{r}");
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(
        view["reason"],
        "no transition for outcome 'business_error' (onFailure: pause_for_approval: aborted by alice)"
    );
    let got: Value = s
        .get_json(&format!("/v1/workflow-approvals/{id}"), Some(ACME))
        .await;
    assert_eq!(got["status"], "rejected", "{got}");
}

#[tokio::test]
async fn friday_resume_of_a_run_paused_for_approval_retries_the_failed_state() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    std::fs::write(s.root.join("acme/shop/fixed"), "").unwrap();
    let r: Value = s
        .post_json(
            &format!("/v1/workflow-runs/{run}/resume"),
            Some(ACME),
            &json!({}),
        )
        .await;
    assert_eq!(r["resume"], "resumed", "{r}");
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["result"], "fixed", "{view}");
    let log = std::fs::read_to_string(s.root.join("acme/shop/attempts.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");
    // Once it ran on, there is nothing to resume.
    let again = s
        .post(&format!("/v1/workflow-runs/{run}/resume"), Some(ACME))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        http_common::code(again).await,
        (409, "MAG-HTTP-PAUSE-STATE".into())
    );
}

#[tokio::test]
async fn resuming_a_decision_keeps_its_approvers() {
    let s = Server::start().await;
    let doc = DOC.replace(
        "fallback: cleanup }",
        "fallback: cleanup, approvers: { users: [runner] } }",
    );
    let run = start(&s, &doc).await;
    let refused = s
        .post(&format!("/v1/workflow-runs/{run}/resume"), Some(ACME))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        http_common::code(refused).await,
        (403, "MAG-HTTP-NOT-APPROVER".into())
    );
    assert_eq!(
        s.wait_status("shop", &run, &["WAITING"]).await["status"],
        "WAITING"
    );
}

#[tokio::test]
async fn a_cancel_while_the_decision_waits_ends_the_run_cancelled() {
    let s = Server::start().await;
    let run = start(&s, DOC).await;
    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/cancel"),
            Some(ACME),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let view = s
        .wait_status("shop", &run, &["DONE", "FAILED", "CANCELLED"])
        .await;
    assert_eq!(view["status"], "CANCELLED", "{view}");
}
