//! `GET /v1/workflow-events`: a tenant's run and approval events as they happen, and nothing of
//! another tenant's.

use crate::http_common;
use crate::live_common;

use std::time::Duration;

use futures::StreamExt;
use http_common::{ACME, ACME_RUN, GLOBEX, Server};
use serde_json::{Value, json};

/// Reads SSE events (name, data) from `resp` until `until` is seen; at most 30 s.
async fn read_until(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Unpin),
    buf: &mut String,
    until: &str,
) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        while let Some(end) = buf.find("\n\n") {
            let block: String = buf.drain(..end + 2).collect();
            let mut name = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                }
            }
            if name.is_empty() {
                continue; // a keep-alive comment
            }
            let done = name == until;
            out.push((name, serde_json::from_str(&data).unwrap_or(Value::Null)));
            if done {
                return out;
            }
        }
        let chunk = tokio::time::timeout_at(deadline, stream.next())
            .await
            .unwrap_or_else(|_| panic!("no `{until}` within 30 s: {out:?}"))
            .expect("the stream ended")
            .unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
    }
}

/// Starts a run in globex/shop; its start answer.
async fn start_globex_run(s: &Server) -> Value {
    s.post_json(
        "/brain/globex/project/shop/workflows/needs-param/start",
        Some(GLOBEX),
        &json!({"params": {"pr_url": "x"}}),
    )
    .await
}

async fn open(
    s: &Server,
    token: &str,
) -> impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Unpin {
    let r = s
        .get("/v1/workflow-events", Some(token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    Box::pin(r.bytes_stream())
}

#[tokio::test]
async fn a_tenants_stream_carries_its_approval_and_run_events_and_no_other_tenants() {
    let s = Server::start().await;
    let mut acme = open(&s, ACME).await;
    let mut globex = open(&s, GLOBEX).await;
    let (mut abuf, mut gbuf) = (String::new(), String::new());
    // Give the subscriptions a moment to be in place before anything happens.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let run = s.start_run("shop", "approve", json!({})).await;
    let seen = read_until(&mut acme, &mut abuf, "workflow.approval.requested").await;
    assert_eq!(seen[0].0, "workflow.run.started");
    assert_eq!(seen[0].1["runId"], run.as_str());
    let requested = &seen.last().unwrap().1;
    assert_eq!(requested["itemId"], format!("{run}-2"));
    assert_eq!(requested["title"], "Ship it?");
    let r = s
        .post(
            &format!("/v1/workflow-approvals/{run}-2/approve"),
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let seen = read_until(&mut acme, &mut abuf, "workflow.run.completed").await;
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["workflow.approval.approved", "workflow.run.completed"]
    );
    assert_eq!(seen[0].1["answeredBy"], "alice");
    // globex's stream saw none of it: its first event is its own run's.
    let theirs = start_globex_run(&s).await;
    let seen = read_until(&mut globex, &mut gbuf, "workflow.run.completed").await;
    for (_, body) in &seen {
        assert_eq!(body["tenant"], "globex", "{seen:?}");
    }
    assert_eq!(seen[0].1["runId"], theirs["workflowRunId"]);
}

#[tokio::test]
async fn a_websocket_session_follows_its_projects_events() {
    let s = Server::start().await;
    let mut ws = live_common::ws_connect(s.addr, ACME).await;
    live_common::send(&mut ws, json!({"type": "subscribe-events"})).await;
    let ack = live_common::recv(&mut ws).await;
    assert_eq!(ack["type"], "subscribe-events", "{ack}");
    // Once per session (twice would send each event twice), and with no data: a field would
    // be ignored unseen.
    live_common::send(&mut ws, json!({"type": "subscribe-events"})).await;
    assert_eq!(
        live_common::next_error(&mut ws).await,
        "MAG-HTTP-WS-SUBSCRIBED"
    );
    let mut other = live_common::ws_connect(s.addr, ACME).await;
    live_common::send(
        &mut other,
        json!({"type": "subscribe-events", "data": {"tenant": "globex"}}),
    )
    .await;
    assert_eq!(
        live_common::next_error(&mut other).await,
        "MAG-HTTP-INVALID-JSON"
    );
    // A run of another project first, then one of this one (the session is acme/shop's).
    let lab = s.start_run("lab", "approve", json!({})).await;
    let shop = s.start_run("shop", "approve", json!({})).await;
    let mut seen = Vec::new();
    loop {
        let m = live_common::recv(&mut ws).await;
        assert_eq!(m["type"], "workflow-event", "{m}");
        assert_ne!(m["data"]["runId"], lab.as_str(), "another project's event");
        seen.push(m["data"]["event"].as_str().unwrap().to_owned());
        if m["data"]["event"] == "workflow.approval.requested" {
            assert_eq!(m["data"]["runId"], shop.as_str());
            break;
        }
    }
    assert_eq!(
        seen,
        ["workflow.run.started", "workflow.approval.requested"]
    );
}

#[tokio::test]
async fn a_failure_pause_is_an_approval_of_the_stream_too() {
    let s = Server::start().await;
    http_common::write(
        &s.root.join("acme/shop/_vance/workflows/flaky.yaml"),
        "onFailure: { policy: pause_for_approval }\nstart: flaky\nstates:\n  flaky:\n    type: shell_task\n    run: \"exit 1\"\n    dirName: workspace\n    on: { success: done }\n  done: { type: terminal }\n",
    );
    let mut acme = open(&s, ACME).await;
    let mut buf = String::new();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let run = s.start_run("shop", "flaky", json!({})).await;
    let seen = read_until(&mut acme, &mut buf, "workflow.approval.requested").await;
    let (_, requested) = seen.last().unwrap();
    assert_eq!(requested["runId"], run.as_str(), "{seen:?}");
    let item = requested["itemId"].as_str().unwrap().to_owned();
    // Friday's reject of the decision aborts the run: a rejected approval, then the failure.
    let r: Value = s
        .post_json(
            &format!("/v1/workflow-approvals/{item}/reject"),
            Some(ACME),
            &json!({}),
        )
        .await;
    assert_eq!(r["applied"], true, "{r}");
    let seen = read_until(&mut acme, &mut buf, "workflow.run.failed").await;
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["workflow.approval.rejected", "workflow.run.failed"]);
    assert_eq!(seen[0].1["itemId"], item.as_str());
}

#[tokio::test]
async fn a_pause_and_a_resume_are_events_of_the_tenants_stream() {
    let s = Server::start().await;
    let mut acme = open(&s, ACME).await;
    let mut buf = String::new();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let run = s.start_run("shop", "approve", json!({})).await;
    read_until(&mut acme, &mut buf, "workflow.approval.requested").await;
    // Friday's words: paused, and still paused once resumed, as it waits at its approval
    // (Friday's approval node pauses its run).
    for (op, word) in [("pause", "paused"), ("resume", "paused")] {
        let r = s
            .post(&format!("/v1/workflow-runs/{run}/{op}"), Some(ACME))
            .json(&json!({"reason": "audit"}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["status"], word, "{body}");
    }
    let seen = read_until(&mut acme, &mut buf, "workflow.run.resumed").await;
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["workflow.run.paused", "workflow.run.resumed"]);
    assert_eq!(seen[0].1["runId"], run.as_str());
    assert_eq!(seen[0].1["status"], "PAUSED");
    assert_eq!(seen[0].1["by"], "alice");
    assert_eq!(seen[0].1["reason"], "audit");
}

/// A closed tenant stream gives its follower place back at once, also when nothing is
/// happening that it would have been sent: on a quiet tenant, or behind a filter.
#[tokio::test]
async fn a_closed_tenant_stream_gives_its_place_back_on_a_quiet_tenant() {
    let s = Server::start_with(|c| c.max_followers_per_subject(2)).await;
    for path in ["/v1/workflow-events", "/v1/workflow-events?project=nothing"] {
        for _ in 0..5 {
            let r = s.get(path, Some(ACME)).send().await.unwrap();
            assert_eq!(r.status(), 200, "{path}: a place is free");
            drop(r);
            // The place comes back within a moment of the close, with no event in between.
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            loop {
                let held = s
                    .get("/v1/workflow-events", Some(ACME))
                    .send()
                    .await
                    .unwrap();
                let other = s
                    .get("/v1/workflow-events", Some(ACME))
                    .send()
                    .await
                    .unwrap();
                let both = (held.status().as_u16(), other.status().as_u16()) == (200, 200);
                drop((held, other));
                if both {
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{path}: a closed stream kept its place"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The tenant's stream answers what it does not take as the project's socket does: a message
/// that is not JSON, text or binary, is `MAG-HTTP-INVALID-JSON`, a JSON one of another type
/// `MAG-HTTP-WS-TYPE`, and the session goes on.
#[tokio::test]
async fn the_tenants_stream_answers_messages_it_does_not_take() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    let s = Server::start().await;
    let mut ws = tokio_tungstenite::connect_async(format!(
        "ws://{}/v1/workflow-events?token={ACME}",
        s.addr
    ))
    .await
    .unwrap()
    .0;
    let sent = [
        (Message::Text("nope".into()), "MAG-HTTP-INVALID-JSON"),
        (
            Message::Binary(br#"{"type":"ping"}"#.to_vec().into()),
            "MAG-HTTP-INVALID-JSON",
        ),
        (
            Message::Text(json!({"type": "subscribe"}).to_string().into()),
            "MAG-HTTP-WS-TYPE",
        ),
    ];
    for (message, code) in sent {
        ws.send(message).await.unwrap();
        let reply = live_common::recv(&mut ws).await;
        assert_eq!(reply["type"], "error", "{reply}");
        assert_eq!(reply["data"]["code"], code, "{reply}");
    }
    ws.send(Message::Text(json!({"type": "ping"}).to_string().into()))
        .await
        .unwrap();
    assert_eq!(live_common::recv(&mut ws).await["type"], "pong");
}

/// The tenant's stream as a WebSocket: the same route, upgraded, with the token in the query
/// or the header; every project of the tenant, none of another tenant's; `ping` answered.
#[tokio::test]
async fn the_tenants_stream_is_a_websocket_too() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::{Message, client::IntoClientRequest};
    let s = Server::start().await;
    // Without a token, or with a token of too little scope, no session.
    for url in [
        format!("ws://{}/v1/workflow-events", s.addr),
        format!("ws://{}/v1/workflow-events?token=no-such-token", s.addr),
        format!("ws://{}/v1/workflow-events?token={ACME_RUN}", s.addr),
    ] {
        let refused = tokio_tungstenite::connect_async(url.as_str()).await;
        assert!(refused.is_err(), "{url}");
    }
    // A request that asks to upgrade but is no WebSocket handshake says so; a token in the
    // query is no credential for the SSE stream.
    let r = s
        .get("/v1/workflow-events", Some(ACME))
        .header("Upgrade", "websocket")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_client_error(), "{}", r.status());
    assert!(r.text().await.unwrap().contains("MAG-HTTP-WS"));
    let r = s
        .get(&format!("/v1/workflow-events?token={ACME}"), None)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let mut acme = tokio_tungstenite::connect_async(format!(
        "ws://{}/v1/workflow-events?token={ACME}",
        s.addr
    ))
    .await
    .unwrap()
    .0;
    let mut request = format!("ws://{}/v1/workflow-events", s.addr)
        .into_client_request()
        .unwrap();
    request
        .headers_mut()
        .insert("Authorization", format!("Bearer {GLOBEX}").parse().unwrap());
    let mut globex = tokio_tungstenite::connect_async(request).await.unwrap().0;
    // A pong says the session is in place (it subscribes before it reads).
    for ws in [&mut acme, &mut globex] {
        ws.send(Message::Text(json!({"type": "ping"}).to_string().into()))
            .await
            .unwrap();
        assert_eq!(live_common::recv(ws).await["type"], "pong");
    }
    let lab = s.start_run("lab", "approve", json!({})).await;
    let shop = s.start_run("shop", "hello", json!({})).await;
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let m = live_common::recv(&mut acme).await;
        assert_eq!(m["type"], "workflow-event", "{m}");
        assert_eq!(m["data"]["tenant"], "acme", "{m}");
        seen.push((
            m["data"]["runId"].as_str().unwrap().to_owned(),
            m["data"]["event"].as_str().unwrap().to_owned(),
        ));
    }
    for (run, event) in [
        (&lab, "workflow.run.started"),
        (&lab, "workflow.approval.requested"),
        (&shop, "workflow.run.started"),
        (&shop, "workflow.run.completed"),
    ] {
        assert!(
            seen.contains(&(run.clone(), event.to_owned())),
            "{event} of {run} in {seen:?}"
        );
    }
    // globex's session saw none of it: its first event is its own run's.
    let theirs = start_globex_run(&s).await;
    let first = live_common::recv(&mut globex).await;
    assert_eq!(first["data"]["runId"], theirs["workflowRunId"], "{first}");
}
