//! Who started a run: the token's subject, never the body's claim, which is recorded apart
//! as `requestedBy`; `anonymous` on an insecure server.

mod http_common;

use http_common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn started_by_is_the_token_subject_and_a_claim_is_requested_by() {
    let s = Server::start().await;
    let start = |body: Value| {
        s.post(
            "/brain/acme/project/shop/workflows/approve/start",
            Some(ACME_RUN),
        )
        .json(&body)
        .send()
    };
    let r = start(json!({"startedBy": "the-ceo"})).await.unwrap();
    assert_eq!(r.status(), 201);
    let run: Value = r.json().await.unwrap();
    let run = run["workflowRunId"].as_str().unwrap();
    let v = s.wait_status("shop", run, &["WAITING"]).await;
    assert_eq!(v["startedBy"], "runner");
    assert_eq!(v["requestedBy"], "the-ceo");

    let r = start(json!({})).await.unwrap();
    let run: Value = r.json().await.unwrap();
    let run = run["workflowRunId"].as_str().unwrap();
    let v = s.wait_status("shop", run, &["WAITING"]).await;
    assert_eq!(v["startedBy"], "runner");
    assert!(
        v.get("requestedBy").is_none(),
        "absent when not claimed: {v}"
    );
}

#[tokio::test]
async fn an_insecure_server_starts_runs_as_anonymous() {
    let s = Server::start_with(|c| c.insecure_no_auth(true)).await;
    let r = s
        .post("/brain/acme/project/shop/workflows/approve/start", None)
        .json(&json!({"startedBy": "alice"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let run: Value = r.json().await.unwrap();
    let run = run["workflowRunId"].as_str().unwrap();
    let v: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}"),
            None,
        )
        .await;
    assert_eq!(v["startedBy"], "anonymous");
    assert_eq!(v["requestedBy"], "alice");
}
