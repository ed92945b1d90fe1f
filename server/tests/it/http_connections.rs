//! Connection limits over real sockets: a slow request head, a slow request body and an idle
//! keep-alive connection are cut off, a connection beyond the cap waits until another closes, and a stream (SSE) is
//! not idle however long it runs.

use crate::http_common;
use crate::raw_http;

use std::time::Duration;

use http_common::*;
use raw_http::*;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

const LONG: Duration = Duration::from_secs(3600);

/// A client that never pools connections: the server closes idle ones within a second here.
fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_client_stalling_in_its_request_head_is_disconnected_after_the_header_timeout() {
    let s = Server::start_with(|c| {
        c.header_read_timeout(Duration::from_secs(1))
            .idle_timeout(LONG)
    })
    .await;
    let mut stalled = TcpStream::connect(s.addr).await.unwrap();
    stalled.write_all(b"GET /heal").await.unwrap();
    assert!(
        closed_by_server(&mut stalled).await,
        "a half-sent request line holds the connection"
    );

    // A client that connects and sends nothing is cut off the same way.
    let mut silent = TcpStream::connect(s.addr).await.unwrap();
    assert!(closed_by_server(&mut silent).await);

    // Whole requests are still served.
    let answer = exchange(
        s.addr,
        "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
}

/// A client that declares a body and stalls in it — with no token, on a route that needs one —
/// is answered 408 and disconnected after the body read timeout, not held until it gives up;
/// a body that arrives in time is served.
#[tokio::test]
async fn a_client_stalling_in_its_request_body_is_answered_408_and_disconnected() {
    let s = Server::start_with(|c| {
        c.header_read_timeout(LONG)
            .idle_timeout(LONG)
            .body_read_timeout(Duration::from_secs(1))
    })
    .await;
    for (path, auth) in [
        (
            "/brain/acme/project/shop/workflows/hello/start",
            String::new(),
        ),
        (
            "/brain/acme/project/shop/workflows/hello/start",
            format!("Authorization: Bearer {ACME}\r\n"),
        ),
        ("/v1/workflow-webhooks/no-such-token", String::new()),
    ] {
        let mut stalled = TcpStream::connect(s.addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n\
             Content-Length: 100\r\n\r\n{{"
        );
        stalled.write_all(head.as_bytes()).await.unwrap();
        let answer = read_answer(&mut stalled).await;
        if path.starts_with("/v1/workflow-webhooks") {
            // No webhook has the token: the answer does not wait for the body.
            assert_eq!(status(&answer), 404, "{path}: {answer}");
        } else {
            assert_eq!(status(&answer), 408, "{path}: {answer}");
            assert!(answer.contains("MAG-HTTP-408"), "{answer}");
        }
        assert!(
            closed_by_server(&mut stalled).await,
            "{path}: the connection is not reused after a body that did not arrive"
        );
    }

    // A whole body is served as before.
    let body = r#"{"params":{}}"#;
    let answer = exchange(
        s.addr,
        &format!(
            "POST /brain/acme/project/shop/workflows/hello/start HTTP/1.1\r\nHost: x\r\n\
             Authorization: Bearer {ACME}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert_eq!(status(&answer), 201, "{answer}");
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let s = Server::start_with(|c| {
        c.header_read_timeout(LONG)
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    let mut conn = TcpStream::connect(s.addr).await.unwrap();
    for _ in 0..2 {
        conn.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        let answer = read_answer(&mut conn).await;
        assert_eq!(status(&answer), 200, "keep-alive serves several requests");
    }
    // The header timeout is an hour: only the idle timeout can close it.
    assert!(
        closed_by_server(&mut conn).await,
        "an idle connection is held"
    );
}

#[tokio::test]
async fn beyond_the_connection_cap_a_connection_waits_until_another_closes() {
    let s = Server::start_with(|c| {
        c.header_read_timeout(LONG)
            .idle_timeout(LONG)
            .max_connections(2)
    })
    .await;
    let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
    // Two connections, each served once (so both are accepted), then held open.
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(request).await.unwrap();
        assert_eq!(status(&read_answer(&mut c).await), 200);
        held.push(c);
    }
    // The third connects (the operating system's backlog takes it) but is not served.
    let mut third = TcpStream::connect(s.addr).await.unwrap();
    third.write_all(request).await.unwrap();
    let waiting = tokio::spawn(async move {
        let answer = read_answer(&mut third).await;
        (answer, third)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "a third connection was served while two were held"
    );
    // One closes: the third is served.
    drop(held.pop());
    let (answer, _third) = tokio::time::timeout(PATIENCE, waiting)
        .await
        .expect("the waiting connection is served once a place is free")
        .unwrap();
    assert_eq!(status(&answer), 200, "{answer}");
}

#[tokio::test]
async fn an_sse_stream_is_not_cut_by_the_idle_timeout() {
    let mut s = Server::start_with(|c| {
        c.header_read_timeout(Duration::from_secs(1))
            .idle_timeout(Duration::from_secs(1))
    })
    .await;
    s.client = fresh_client();
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let response = s.events(&run).await;
    assert_eq!(response.status(), 200);
    let body = tokio::spawn(async move { response.text().await });
    // Well past both timeouts, with the stream waiting for the run.
    tokio::time::sleep(Duration::from_millis(3000)).await;
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let id = items[0]["id"].as_str().unwrap();
    let answered = s.answer(id, &json!({"kind": "approve"})).await;
    assert!(answered.status().is_success());
    let body = tokio::time::timeout(PATIENCE, body)
        .await
        .expect("the stream ends after the run")
        .unwrap()
        .expect("the stream was not cut");
    assert!(
        body.contains("\"DONE\""),
        "the stream carried the run to its end: {body}"
    );
}

/// A WebSocket is no HTTP connection the idle timeout closes, so its own bounds keep one
/// tenant from holding every connection of the server: a session that follows nothing and
/// says nothing for the idle timeout is closed (1001, going away), one that says something
/// (a `ping`) or follows a run is kept, and a token subject holds at most as many sessions
/// as it may follow runs (429 `MAG-RD005` before the upgrade).
#[tokio::test]
async fn idle_websocket_sessions_close_and_one_subject_holds_a_bounded_number() {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;

    let s = Server::start_with(|c| {
        c.idle_timeout(Duration::from_secs(1))
            .max_followers_per_subject(2)
    })
    .await;
    let url = crate::live_common::ws_url(s.addr, ACME);
    let (mut idle, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    let (mut talking, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    // A third session of the same subject is refused before the upgrade.
    let refused = tokio_tungstenite::connect_async(&url).await.unwrap_err();
    match refused {
        tokio_tungstenite::tungstenite::Error::Http(r) => assert_eq!(r.status().as_u16(), 429),
        e => panic!("{e}"),
    }
    // Another subject of the tenant still connects.
    let (_other, _) =
        tokio_tungstenite::connect_async(crate::live_common::ws_url(s.addr, ACME_READ))
            .await
            .unwrap();

    // Two seconds of pings keep one session; the silent one is closed as idle.
    for _ in 0..8 {
        talking
            .send(Message::Text(json!({"type": "ping"}).to_string().into()))
            .await
            .unwrap();
        let pong = tokio::time::timeout(Duration::from_secs(20), talking.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(pong.to_text().unwrap().contains("pong"), "{pong}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let closed = tokio::time::timeout(Duration::from_secs(20), idle.next())
        .await
        .expect("the idle session ends");
    assert_closed_as_idle(closed);
    // Its place is given back: the subject connects again.
    let mut again = None;
    for _ in 0..100 {
        if let Ok((ws, _)) = tokio_tungstenite::connect_async(&url).await {
            again = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "the closed session's place is free");
}

/// A session whose subscriptions have all ended (their runs did) follows nothing: it is closed
/// as idle once it says nothing for the idle timeout after that, as one that never followed.
#[tokio::test]
async fn a_websocket_session_whose_runs_ended_is_closed_when_idle() {
    use futures::StreamExt;

    let s = Server::start_with(|c| c.idle_timeout(Duration::from_secs(1))).await;
    let run = s.start_run("shop", "hello", json!({"who": "ws"})).await;
    s.wait_status("shop", &run, &["DONE"]).await;
    let mut ws = crate::live_common::ws_connect(s.addr, ACME).await;
    crate::live_common::subscribe(&mut ws, &run).await;
    crate::live_common::events_to_end(&mut ws).await;
    let closed = tokio::time::timeout(Duration::from_secs(20), ws.next())
        .await
        .expect("the session that follows nothing any more ends");
    assert_closed_as_idle(closed);
}

/// The next frame of a WebSocket session closed for idleness: 1001 (going away), saying so.
fn assert_closed_as_idle(
    next: Option<
        Result<tokio_tungstenite::tungstenite::Message, tokio_tungstenite::tungstenite::Error>,
    >,
) {
    match next {
        Some(Ok(tokio_tungstenite::tungstenite::Message::Close(Some(frame)))) => {
            assert_eq!(u16::from(frame.code), 1001, "{frame:?}");
            assert!(frame.reason.contains("idle"), "{frame:?}");
        }
        other => panic!("{other:?}"),
    }
}

/// A client that asks for a large answer and never reads it holds the answer (and its
/// connection) no longer than the send timeout: with one connection allowed, the next client
/// is served once the stalled one is closed.
#[tokio::test]
async fn a_client_that_stops_reading_is_disconnected_after_the_send_timeout() {
    let s = Server::start_with(|c| {
        c.header_read_timeout(LONG)
            .idle_timeout(LONG)
            .send_timeout(Duration::from_secs(1))
            .max_connections(1)
    })
    .await;
    let view = big_run_view(&s).await;

    // About 16 MB of answer, more than the sockets between the two ends hold.
    let stalled = reads_nothing_of(s.addr, &view).await;
    // The only place is the stalled connection's: the next waits until the server closes it.
    let mut next = TcpStream::connect(s.addr).await.unwrap();
    next.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let answer = read_answer(&mut next).await;
    assert_eq!(status(&answer), 200, "{answer}");
    drop(stalled);
}

/// The head (without its last blank line) of a request for the view of a run that has ended
/// with eight copies of a 1 MB text in its result: about 16 MB of answer, more than the
/// sockets between the two ends hold.
async fn big_run_view(s: &Server) -> String {
    write(
        &s.root.join("acme/shop/_vance/workflows/big.yaml"),
        "parameters: { big: { type: string } }\nstart: done\nstates:\n  done:\n    type: terminal\n    \
         storeAs: copy\n    result: { a: \"${params.big}\", b: \"${params.big}\", c: \"${params.big}\", \
         d: \"${params.big}\", e: \"${params.big}\", f: \"${params.big}\", g: \"${params.big}\", \
         h: \"${params.big}\" }\n",
    );
    // One connection at a time, each closed after its answer (the only place is never held
    // by a keep-alive connection).
    let addr = s.addr;
    let once = |request: String| async move {
        let mut conn = TcpStream::connect(addr).await.unwrap();
        conn.write_all(request.as_bytes()).await.unwrap();
        read_answer(&mut conn).await
    };
    let body = json!({ "params": { "big": "x".repeat(1000 * 1000) } }).to_string();
    let started = once(format!(
        "POST /brain/acme/project/shop/workflows/big/start HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {ACME}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ))
    .await;
    assert_eq!(status(&started), 201, "{started}");
    let run = started
        .split("\"workflowRunId\":\"")
        .nth(1)
        .and_then(|r| r.get(..32))
        .unwrap()
        .to_owned();
    let view = format!(
        "GET /brain/acme/project/shop/workflows/runs/{run} HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {ACME}\r\n"
    );
    loop {
        let answer = once(format!("{view}Connection: close\r\n\r\n")).await;
        if answer.contains("\"status\":\"DONE\"") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    view
}

/// A client that asks for a large answer and does not read it holds a stop for no longer
/// than the short send timeout of a stopping server, not for the whole grace (the server's
/// own send timeout is longer than the grace here).
#[tokio::test]
async fn a_client_that_stops_reading_does_not_hold_the_stop() {
    let mut s = Server::start_with(|c| c.send_timeout(LONG)).await;
    let view = big_run_view(&s).await;
    let mut stalled = reads_nothing_of(s.addr, &view).await;
    // The server is writing the answer into the full sockets once a first byte arrives.
    let mut first = [0u8; 1];
    tokio::io::AsyncReadExt::read_exact(&mut stalled, &mut first)
        .await
        .unwrap();

    let stopping = std::time::Instant::now();
    s.handle.take().unwrap().shutdown().await.unwrap();
    let took = stopping.elapsed();
    assert!(
        took < magrathea_server::http::SHUTDOWN_GRACE,
        "the stop waited {took:?} for a client that does not read"
    );
    drop(stalled);
}

/// A connection with a small receive buffer that sends the request `head` (without its last
/// blank line) and then reads nothing of the answer.
async fn reads_nothing_of(addr: std::net::SocketAddr, head: &str) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stalled = socket.connect(addr).await.unwrap();
    stalled
        .write_all(format!("{head}\r\n").as_bytes())
        .await
        .unwrap();
    stalled
}
