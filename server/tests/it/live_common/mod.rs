//! Following runs live: parsing an SSE body, and a WebSocket client that sends, subscribes and
//! reads with a deadline on every message.

// Each test binary uses a part of this module.
#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// A WebSocket connection to the server.
pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Parses the `data:` lines of an SSE body into JSON records.
pub fn sse_records(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// The URL of acme/shop's WebSocket with `token` in its query.
pub fn ws_url(addr: SocketAddr, token: &str) -> String {
    format!("ws://{addr}/brain/acme/project/shop/ws?token={token}")
}

/// Opens acme/shop's WebSocket with `token`.
pub async fn ws_connect(addr: SocketAddr, token: &str) -> Ws {
    tokio_tungstenite::connect_async(ws_url(addr, token))
        .await
        .unwrap()
        .0
}

/// Sends `v` as a text message.
pub async fn send(ws: &mut Ws, v: Value) {
    ws.send(Message::Text(v.to_string().into())).await.unwrap();
}

/// Subscribes to `run`'s events.
pub async fn subscribe(ws: &mut Ws, run: &str) {
    send(
        ws,
        json!({"type": "subscribe", "data": {"workflowRunId": run}}),
    )
    .await;
}

/// The next text message as JSON; panics after 20 s without one.
pub async fn recv(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a message in time")
            .unwrap()
            .unwrap();
        if let Message::Text(t) = m {
            return serde_json::from_str(&t).unwrap();
        }
    }
}

/// Reads messages until an `error`, skipping run events; returns its code.
pub async fn next_error(ws: &mut Ws) -> String {
    loop {
        let m = recv(ws).await;
        if m["type"] == "error" {
            return m["data"]["code"].as_str().unwrap().to_string();
        }
    }
}

/// The seqs of the `run-event`s up to the `run-end`; any other message fails the test.
pub async fn events_to_end(ws: &mut Ws) -> Vec<u64> {
    let mut seqs = Vec::new();
    loop {
        let m = recv(ws).await;
        match m["type"].as_str().unwrap() {
            "run-event" => seqs.push(m["data"]["seq"].as_u64().unwrap()),
            "run-end" => return seqs,
            other => panic!("unexpected {other}: {m}"),
        }
    }
}
