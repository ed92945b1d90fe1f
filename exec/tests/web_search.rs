//! `web_search` against a real HTTP server speaking SearxNG's JSON API: the tenant's
//! `webSearch.url` is asked `?q=<query>&format=json`, its results come back as
//! `{title, url, snippet}`, at most `limit`; without the setting, behind a refused host or
//! with a failing service the call fails with a message that says why.

#![cfg(feature = "tools")]

use std::path::Path;
use std::sync::{Arc, Mutex};

use magrathea_exec::{DocumentSource, Executors, Scope, ToolError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A search service on 127.0.0.1 answering `status` with `body` (JSON); the request lines
/// it received.
async fn service(status: &'static str, body: Value) -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 8192];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            log.lock()
                .unwrap()
                .push(head.lines().next().unwrap_or_default().to_owned());
            let text = body.to_string();
            let reply = format!(
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{text}",
                text.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (port, seen)
}

fn tree(root: &Path, tenant_settings: &str) -> Executors {
    let dir = root.join("acme/_tenant/_vance");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join("acme/shop/_vance")).unwrap();
    std::fs::write(dir.join("settings.yaml"), tenant_settings).unwrap();
    Executors::new(DocumentSource::new(root))
}

async fn search(exec: &Executors, params: Value) -> Result<Value, ToolError> {
    let ctx = exec.tool_context(&Scope::new("acme", "shop"), "tester");
    exec.invoke_tool("web_search", params, &ctx).await
}

fn settings(port: u16) -> String {
    format!(
        "webSearch:\n  url: http://127.0.0.1:{port}/search\negress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n"
    )
}

#[tokio::test]
async fn the_tenants_service_is_asked_and_its_results_come_back() {
    let results: Vec<Value> = (0..12)
        .map(|i| {
            json!({
                "title": format!("Result {i}"),
                "url": format!("https://example.org/{i}"),
                "content": format!("about {i}"),
                "engine": "x"
            })
        })
        .collect();
    let (port, seen) = service("200 OK", json!({ "query": "q", "results": results })).await;
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(dir.path(), &settings(port));

    let found = search(&exec, json!({ "query": "durable workflows & rust" }))
        .await
        .unwrap();
    assert_eq!(found["query"], "durable workflows & rust");
    let list = found["results"].as_array().unwrap();
    assert_eq!(list.len(), 10, "ten by default: {found}");
    assert_eq!(
        list[0],
        json!({"title": "Result 0", "url": "https://example.org/0", "snippet": "about 0"})
    );
    let request = seen.lock().unwrap()[0].clone();
    assert_eq!(
        request,
        "GET /search?q=durable+workflows+%26+rust&format=json HTTP/1.1"
    );

    let three = search(&exec, json!({ "query": "x", "limit": 3 }))
        .await
        .unwrap();
    assert_eq!(three["results"].as_array().unwrap().len(), 3);
    // A limit past the service's twelve returns them all; none below 1 is taken.
    let all = search(&exec, json!({ "query": "x", "limit": 60 }))
        .await
        .unwrap();
    assert_eq!(all["results"].as_array().unwrap().len(), 12);
    for bad in [json!(0), json!(-1), json!(2.5)] {
        let err = search(&exec, json!({ "query": "x", "limit": bad }))
            .await
            .unwrap_err();
        assert_eq!(err.outcome(), "technical_error", "{bad}: {err}");
        assert!(err.to_string().contains("limit"), "{bad}: {err}");
    }
}

#[tokio::test]
async fn without_a_service_or_past_the_egress_policy_it_says_what_to_set() {
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(dir.path(), "");
    let err = search(&exec, json!({ "query": "x" })).await.unwrap_err();
    assert_eq!(err.outcome(), "technical_error");
    let msg = err.to_string();
    assert!(
        msg.contains("[MAG-TL006]") && msg.contains("webSearch.url"),
        "{msg}"
    );

    // A setting that is no URL is named as such.
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(dir.path(), "webSearch:\n  url: search engine\n");
    let err = search(&exec, json!({ "query": "x" })).await.unwrap_err();
    assert_eq!(err.outcome(), "technical_error");
    assert!(
        err.to_string()
            .contains("[MAG-TL006] webSearch.url `search engine`"),
        "{err}"
    );

    // A loopback service the egress policy does not list is refused before any request.
    let (port, seen) = service("200 OK", json!({ "results": [] })).await;
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(
        dir.path(),
        &format!("webSearch:\n  url: http://127.0.0.1:{port}/search\n"),
    );
    let err = search(&exec, json!({ "query": "x" })).await.unwrap_err();
    assert_eq!(err.outcome(), "permission_error", "{err}");
    assert!(err.to_string().contains("[MAG-EG001]"), "{err}");
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_failing_service_or_a_foreign_answer_is_a_technical_error() {
    for (status, body, says) in [
        ("503 Service Unavailable", json!({}), "answered 503"),
        ("200 OK", json!({ "hits": [] }), "no `results` list"),
    ] {
        let (port, _) = service(status, body).await;
        let dir = tempfile::tempdir().unwrap();
        let exec = tree(dir.path(), &settings(port));
        let err = search(&exec, json!({ "query": "x" })).await.unwrap_err();
        assert_eq!(err.outcome(), "technical_error", "{err}");
        assert!(err.to_string().contains(says), "{err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let (port, _) = service("200 OK", json!({ "results": [] })).await;
    let exec = tree(dir.path(), &settings(port));
    let err = search(&exec, json!({ "query": "  " })).await.unwrap_err();
    assert_eq!(err.outcome(), "technical_error");
    assert!(err.to_string().contains("`query`"), "{err}");
}
