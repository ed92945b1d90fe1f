//! Live updates: the SSE stream of a run from its StartRecord to its terminal StatusRecord,
//! and a WebSocket client that starts a run and follows it.

use crate::http_common;
use crate::live_common;

use std::time::Duration;

use http_common::*;
use live_common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn sse_streams_a_run_from_start_to_done_without_duplicates() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let response = s.events(&run).await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let body = tokio::spawn(async move { response.text().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let item: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let id = item[0]["id"].as_str().unwrap();
    s.answer(id, &json!({"kind": "approve"})).await;
    // The stream ends by itself after the terminal status record.
    let body = tokio::time::timeout(Duration::from_secs(20), body)
        .await
        .unwrap()
        .unwrap();
    let got = sse_records(&body);
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    assert_eq!(got, journal, "every record once, in order");
    assert_eq!(got[0]["type"], "StartRecord");
    let last = got.last().unwrap();
    assert_eq!(
        (last["type"].as_str(), last["status"].as_str()),
        (Some("StatusRecord"), Some("DONE")),
        "{last}"
    );
    assert!(body.contains("event: record"));

    // A finished run streams its journal and ends at once.
    let again = s.events(&run).await.text().await.unwrap();
    assert_eq!(sse_records(&again), journal);
}

/// A reconnecting `EventSource` sends the seq of the last record it got as `Last-Event-ID`:
/// the stream goes on after it, and once the client holds every record of a run that ended it
/// is told 204, which stops an `EventSource` from reconnecting.
#[tokio::test]
async fn sse_resumes_after_last_event_id_and_ends_with_204() {
    let s = Server::start().await;
    let run = s.start_run("shop", "hello", json!({"who": "sse"})).await;
    s.wait_status("shop", &run, &["DONE"]).await;
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    assert!(journal.len() > 2, "{journal:?}");
    let url = format!("/brain/acme/project/shop/workflows/runs/{run}/events");
    let resumed = |last: String| {
        let s = &s;
        let url = url.clone();
        async move {
            s.get(&url, Some(ACME))
                .header("Last-Event-ID", last)
                .send()
                .await
                .unwrap()
        }
    };

    let rest = resumed("1".into()).await;
    assert_eq!(rest.status(), 200);
    let body = tokio::time::timeout(Duration::from_secs(20), rest.text())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sse_records(&body), journal[2..].to_vec());

    let last = journal.last().unwrap()["seq"].as_u64().unwrap();
    let done = resumed(last.to_string()).await;
    assert_eq!(done.status(), 204);
    assert_eq!(done.text().await.unwrap(), "");

    let bad = resumed("seven".into()).await;
    assert_eq!(bad.status(), 400);
    assert!(bad.text().await.unwrap().contains("MAG-RD001"));

    // A seq past the run's journal was never sent (another run's, or a count of the client's
    // own): refused, not answered with nothing (a live run's stream would then never show its
    // end).
    let beyond = resumed((last + 1).to_string()).await;
    assert_eq!(beyond.status(), 400);
    let text = beyond.text().await.unwrap();
    // The run has ended: it never will hold that record, and is not said to "yet".
    assert!(
        text.contains("MAG-RD001")
            && text.contains(&format!("no record {}, and it has ended", last + 1)),
        "{text}"
    );
    let waiting = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &waiting, &["WAITING"]).await;
    let live = s
        .get(
            &format!("/brain/acme/project/shop/workflows/runs/{waiting}/events"),
            Some(ACME),
        )
        .header("Last-Event-ID", "50")
        .send()
        .await
        .unwrap();
    assert_eq!(live.status(), 400);
    let message = live.text().await.unwrap();
    assert!(
        message.contains("MAG-RD001") && message.contains("no record 50 yet"),
        "{message}"
    );
}

#[tokio::test]
async fn a_websocket_client_starts_a_run_and_follows_it() {
    let s = Server::start().await;
    let mut ws = ws_connect(s.addr, ACME).await;
    send(
        &mut ws,
        json!({"type": "workflow-start", "data": {"name": "hello", "params": {"who": "ws"}}}),
    )
    .await;
    let reply = recv(&mut ws).await;
    assert_eq!(reply["type"], "workflow-start", "{reply}");
    assert_eq!(reply["data"]["workflowName"], "hello");
    let run = reply["data"]["workflowRunId"].as_str().unwrap().to_string();

    subscribe(&mut ws, &run).await;
    let seqs = events_to_end(&mut ws).await;
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>());
    let v = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(v["startedBy"], "alice");
    assert_eq!(v["params"]["who"], "ws");

    // Errors are answered in-band; a run of another project is not found.
    subscribe(&mut ws, &"0".repeat(32)).await;
    let e = recv(&mut ws).await;
    assert_eq!(
        (e["type"].as_str(), e["data"]["code"].as_str()),
        (Some("error"), Some("MAG-HTTP-404"))
    );
    send(
        &mut ws,
        json!({"type": "workflow-start", "data": {"name": "missing"}}),
    )
    .await;
    let e = recv(&mut ws).await;
    assert_eq!(e["data"]["code"], "MAG-HTTP-WORKFLOW-NOT-FOUND");
    ws.close(None).await.unwrap();

    // A read-only token connects but cannot start; no token cannot connect.
    let mut ro = ws_connect(s.addr, ACME_READ).await;
    send(
        &mut ro,
        json!({"type": "workflow-start", "data": {"name": "hello"}}),
    )
    .await;
    assert_eq!(recv(&mut ro).await["data"]["code"], "MAG-HTTP-403");
    let url = format!("ws://{}/brain/acme/project/shop/ws", s.addr);
    assert!(tokio_tungstenite::connect_async(url).await.is_err());

    // A run-only token starts over the socket as over HTTP, but does not follow runs.
    let mut starter = ws_connect(s.addr, ACME_RUN).await;
    send(
        &mut starter,
        json!({"type": "workflow-start", "data": {"name": "hello"}}),
    )
    .await;
    let reply = recv(&mut starter).await;
    assert_eq!(reply["type"], "workflow-start", "{reply}");
    let started = reply["data"]["workflowRunId"].as_str().unwrap().to_string();
    subscribe(&mut starter, &started).await;
    assert_eq!(recv(&mut starter).await["data"]["code"], "MAG-HTTP-403");
    send(
        &mut starter,
        json!({"type": "subscribe-events", "data": {}}),
    )
    .await;
    assert_eq!(recv(&mut starter).await["data"]["code"], "MAG-HTTP-403");
}

/// `workflow-start` takes what the HTTP start takes: `draft` runs the project's draft, an
/// `idempotencyKey` finds the run the same key started before, and an unknown field is refused
/// rather than ignored.
#[tokio::test]
async fn a_websocket_start_runs_a_draft_and_keeps_an_idempotency_key() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflow-drafts/hello.yaml"),
        "start: done\nstates:\n  done: { type: terminal, result: from-the-draft }\n",
    );
    let mut ws = ws_connect(s.addr, ACME).await;
    let started = |data: Value| json!({"type": "workflow-start", "data": data});
    send(&mut ws, started(json!({"name": "hello", "draft": true}))).await;
    let reply = recv(&mut ws).await;
    let run = reply["data"]["workflowRunId"].as_str().unwrap().to_owned();
    let v = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(v["result"], "from-the-draft", "{v}");
    assert_eq!(v["draft"], true, "{v}");

    let keyed = json!({"name": "hello", "params": {"who": "k"}, "idempotencyKey": "ws-key-1"});
    send(&mut ws, started(keyed.clone())).await;
    let first = recv(&mut ws).await["data"]["workflowRunId"].clone();
    send(&mut ws, started(keyed)).await;
    let second = recv(&mut ws).await["data"]["workflowRunId"].clone();
    assert!(first.is_string(), "{first}");
    assert_eq!(first, second);
    // The HTTP start with the same key finds the same run.
    let r = s
        .post("/brain/acme/project/shop/workflows/hello/start", Some(ACME))
        .header("Idempotency-Key", "ws-key-1")
        .json(&json!({"params": {"who": "k"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["workflowRunId"], first);

    send(&mut ws, started(json!({"name": "hello", "drfat": true}))).await;
    let e = recv(&mut ws).await;
    assert_eq!(e["type"], "error", "{e}");
    assert!(
        e["data"]["message"].as_str().unwrap().contains("drfat"),
        "{e}"
    );
}

/// A WebSocket message is a request: one over the request body's limit (1 MiB) closes the
/// connection and starts nothing, as an HTTP body over it answers 413.
#[tokio::test]
async fn a_websocket_message_over_the_body_limit_starts_nothing() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let s = Server::start().await;
    let mut ws = ws_connect(s.addr, ACME).await;
    let big = "x".repeat(2 * 1024 * 1024);
    let start = json!({"type": "workflow-start",
                       "data": {"name": "hello", "params": {"who": big}}});
    // The server may close before the whole message is written.
    let _ = ws.send(Message::Text(start.to_string().into())).await;
    let ended = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match ws.next().await {
                // The close frame (1009) may be lost to the reset of a connection closed
                // with the rest of the message unread; when it arrives, it says why.
                Some(Ok(Message::Close(frame))) => {
                    if let Some(frame) = frame {
                        assert_eq!(u16::from(frame.code), 1009, "{frame:?}");
                    }
                    break;
                }
                None | Some(Err(_)) => break,
                Some(Ok(Message::Text(t))) => {
                    assert!(!t.contains("workflowRunId"), "a run was started: {t}")
                }
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the connection stayed open");
    let runs: Value = s
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    assert_eq!(runs, json!([]), "nothing started");
}

/// A text message that is not UTF-8 ends the session with the close code that says so (1007),
/// after the requests before it were answered.
#[tokio::test]
async fn a_websocket_text_message_that_is_not_utf8_closes_with_1007() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};

    let s = Server::start().await;
    let mut ws = ws_connect(s.addr, ACME).await;
    send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(recv(&mut ws).await, json!({"type": "pong"}));
    let invalid = Frame::message(vec![b'{', 0xff, 0xfe, b'}'], OpCode::Data(Data::Text), true);
    ws.send(Message::Frame(invalid)).await.unwrap();
    let frame = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(frame))) => return frame,
                Some(Ok(_)) => {}
                other => panic!("the connection ended without a close frame: {other:?}"),
            }
        }
    })
    .await
    .expect("a close frame in time")
    .expect("a close code");
    assert_eq!(u16::from(frame.code), 1007, "{frame:?}");
    assert!(frame.reason.contains("UTF-8"), "{frame:?}");
}

/// A binary message is answered with an error message (the session takes JSON text), and the
/// session goes on.
#[tokio::test]
async fn a_websocket_binary_message_is_answered_with_an_error() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;

    let s = Server::start().await;
    let mut ws = ws_connect(s.addr, ACME).await;
    ws.send(Message::Binary(br#"{"type":"ping"}"#.to_vec().into()))
        .await
        .unwrap();
    let reply = recv(&mut ws).await;
    assert_eq!(reply["type"], "error", "{reply}");
    assert_eq!(reply["data"]["code"], "MAG-HTTP-INVALID-JSON", "{reply}");
    assert!(
        reply["data"]["message"]
            .as_str()
            .unwrap()
            .contains("text message"),
        "{reply}"
    );
    send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(recv(&mut ws).await, json!({"type": "pong"}));
}

/// A server that stops closes its WebSocket sessions (a project's and the tenant's event
/// stream) with 1001, "going away", as after any restart: not with the 1008 of a revoked
/// token, which would tell a client to sign in again rather than reconnect.
#[tokio::test]
async fn a_stop_closes_websocket_sessions_as_going_away() {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let mut s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let mut session = ws_connect(s.addr, ACME).await;
    subscribe(&mut session, &run).await;
    assert_eq!(recv(&mut session).await["type"], "run-event");
    let (mut tenant, _) = tokio_tungstenite::connect_async(format!(
        "ws://{}/v1/workflow-events?token={ACME}",
        s.addr
    ))
    .await
    .unwrap();

    s.handle.take().unwrap().shutdown().await.unwrap();
    for socket in [&mut session, &mut tenant] {
        let frame = loop {
            match tokio::time::timeout(Duration::from_secs(20), socket.next())
                .await
                .expect("the session closes")
            {
                Some(Ok(Message::Close(frame))) => break frame.expect("a close frame"),
                Some(Ok(_)) => continue,
                other => panic!("the session ended without a close frame: {other:?}"),
            }
        };
        assert_eq!(u16::from(frame.code), 1001, "{frame:?}");
        assert_eq!(frame.reason.as_str(), "the server is stopping");
    }
}

/// A WebSocket client whose connection was lost subscribes again with the seq of the last
/// record it holds and gets only the records after it, as `Last-Event-ID` does for SSE; a seq
/// the run never had, an unknown field, and a second subscription to a run the session
/// follows (which would send every record twice) are errors.
#[tokio::test]
async fn a_websocket_subscription_resumes_after_last_event_id_and_is_not_doubled() {
    let s = Server::start().await;
    let run = s.start_run("shop", "hello", json!({"who": "ws"})).await;
    s.wait_status("shop", &run, &["DONE"]).await;
    let mut ws = ws_connect(s.addr, ACME).await;
    subscribe(&mut ws, &run).await;
    let all = events_to_end(&mut ws).await;
    assert!(all.len() > 2, "{all:?}");

    let mut again = ws_connect(s.addr, ACME).await;
    let subscribe_after = |last: Value| json!({"type": "subscribe", "data": {"workflowRunId": run, "lastEventId": last}});
    send(&mut again, subscribe_after(json!(all[1]))).await;
    assert_eq!(events_to_end(&mut again).await, all[2..].to_vec());
    // Holding every record of a run that ended: its end at once.
    send(&mut again, subscribe_after(json!(all.last().unwrap()))).await;
    assert_eq!(events_to_end(&mut again).await, Vec::<u64>::new());
    send(&mut again, subscribe_after(json!(all.last().unwrap() + 1))).await;
    assert_eq!(next_error(&mut again).await, "MAG-RD001");
    send(
        &mut again,
        json!({"type": "subscribe", "data": {"workflowRunId": run, "cursor": 3}}),
    )
    .await;
    assert_eq!(next_error(&mut again).await, "MAG-HTTP-INVALID-JSON");

    let waiting = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &waiting, &["WAITING"]).await;
    subscribe(&mut again, &waiting).await;
    subscribe(&mut again, &waiting).await;
    assert_eq!(next_error(&mut again).await, "MAG-HTTP-WS-SUBSCRIBED");
}

/// An answer that comes after its run ended is journaled after the terminal `StatusRecord`
/// (`IgnoredRecord`): a follower that starts after it gets it too, before its stream ends (and
/// a WebSocket subscription's `run-end` comes after it, once), so a client that stops at the
/// end holds the whole journal.
#[tokio::test]
async fn records_journaled_after_the_end_are_followed_before_the_stream_ends() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let item: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let id = item[0]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        s.answer(&id, &json!({"kind": "approve"})).await.status(),
        200
    );
    s.wait_status("shop", &run, &["DONE"]).await;
    let late = s.answer(&id, &json!({"kind": "reject"})).await;
    assert!(late.status().is_success(), "{}", late.status());
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    let end = journal
        .iter()
        .position(|r| r["type"] == "StatusRecord" && r["status"] == "DONE")
        .unwrap();
    assert!(
        journal[end + 1..]
            .iter()
            .any(|r| r["type"] == "IgnoredRecord"),
        "the late answer is journaled after the end: {journal:?}"
    );

    let body = tokio::time::timeout(Duration::from_secs(20), async {
        s.events(&run).await.text().await.unwrap()
    })
    .await
    .unwrap();
    assert_eq!(
        sse_records(&body),
        journal,
        "the whole journal, then the end"
    );
    let last = journal.last().unwrap()["seq"].as_u64().unwrap();
    let resumed = s
        .get(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/events"),
            Some(ACME),
        )
        .header("Last-Event-ID", last.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 204, "the client holds every record");

    let mut ws = ws_connect(s.addr, ACME).await;
    subscribe(&mut ws, &run).await;
    let seqs: Vec<Value> = events_to_end(&mut ws)
        .await
        .into_iter()
        .map(Value::from)
        .collect();
    let expected: Vec<Value> = journal.iter().map(|r| r["seq"].clone()).collect();
    assert_eq!(seqs, expected);
    // One `run-end`: the session answers a ping next, with nothing else in between.
    send(&mut ws, json!({"type": "ping"})).await;
    assert_eq!(recv(&mut ws).await["type"], "pong");
}

/// One session following two runs at once: each record comes with its run's id, so the client
/// puts each in its run's journal, and each run ends once.
#[tokio::test]
async fn a_websocket_session_following_two_runs_tells_their_records_apart() {
    let s = Server::start().await;
    let first = s.start_run("shop", "hello", json!({"who": "one"})).await;
    let second = s.start_run("shop", "hello", json!({"who": "two"})).await;
    for run in [&first, &second] {
        s.wait_status("shop", run, &["DONE"]).await;
    }
    let mut ws = ws_connect(s.addr, ACME).await;
    subscribe(&mut ws, &first).await;
    subscribe(&mut ws, &second).await;
    let mut got: std::collections::HashMap<String, Vec<Value>> = Default::default();
    let mut ended = Vec::new();
    while ended.len() < 2 {
        let m = recv(&mut ws).await;
        match m["type"].as_str().unwrap() {
            "run-event" => got
                .entry(m["workflowRunId"].as_str().unwrap().to_owned())
                .or_default()
                .push(m["data"].clone()),
            "run-end" => ended.push(m["data"]["workflowRunId"].as_str().unwrap().to_owned()),
            other => panic!("unexpected {other}: {m}"),
        }
    }
    ended.sort();
    let mut both = vec![first.clone(), second.clone()];
    both.sort();
    assert_eq!(ended, both);
    for run in [&first, &second] {
        let journal: Vec<Value> = s
            .get_json(
                &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
                Some(ACME),
            )
            .await;
        assert_eq!(got[run.as_str()], journal, "the records of {run}, in order");
    }
}
