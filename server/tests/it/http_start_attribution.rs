//! Who started a run: the token's subject, never the body's claim, which is recorded apart
//! as `requestedBy`, over REST and WebSocket; on an insecure server, where no caller is anyone
//! in particular, the body's `startedBy` as the reference's start takes it, else `anonymous`.

use crate::http_common;

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use http_common::*;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

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
async fn an_insecure_server_starts_runs_as_the_body_says_else_as_anonymous() {
    let s = Server::start_with(|c| c.insecure_no_auth(true)).await;
    for (body, by) in [
        (json!({"startedBy": "alice"}), "alice"),
        (json!({}), "anonymous"),
        (json!({"startedBy": " "}), "anonymous"),
    ] {
        let r = s
            .post("/brain/acme/project/shop/workflows/approve/start", None)
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let run: Value = r.json().await.unwrap();
        let run = run["workflowRunId"].as_str().unwrap();
        let v = s.wait_status("shop", run, &["WAITING"]).await;
        assert_eq!(v["startedBy"], by, "{body}");
        assert!(v.get("requestedBy").is_none(), "{v}");
        // The gate's `assignedTo` falls back to who started the run (reference §3.4).
        let items: Value = s.get_json("/brain/acme/project/shop/inbox", None).await;
        let item = items
            .as_array()
            .and_then(|all| all.iter().find(|i| i["workflowRunId"] == run))
            .cloned()
            .unwrap_or_else(|| panic!("{items}"));
        assert_eq!(item["assignedTo"], by, "{item}");
    }
}

#[tokio::test]
async fn a_websocket_start_is_attributed_to_the_token_too() {
    let s = Server::start().await;
    let url = format!("ws://{}/brain/acme/project/shop/ws?token={ACME}", s.addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
    let start = json!({
        "type": "workflow-start",
        "data": {"name": "approve", "startedBy": "someone-else"}
    });
    ws.send(Message::Text(start.to_string().into()))
        .await
        .unwrap();
    let reply = loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a reply in time")
            .unwrap()
            .unwrap();
        if let Message::Text(t) = m {
            break serde_json::from_str::<Value>(&t).unwrap();
        }
    };
    assert_eq!(reply["type"], "workflow-start", "{reply}");
    let run = reply["data"]["workflowRunId"].as_str().unwrap();
    let v = s.wait_status("shop", run, &["WAITING"]).await;
    assert_eq!(v["startedBy"], "alice");
    assert_eq!(v["requestedBy"], "someone-else");
}
