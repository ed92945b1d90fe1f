//! The egress policy of `http_request`: every spelling of a loopback, private or reserved
//! address is refused with `permission_error`, also behind a name and behind a redirect; a
//! host pattern in the tenant's settings lets a request through.

#![cfg(feature = "tools")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use magrathea_exec::{DocumentSource, Executors, Scope, ToolError};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server on 127.0.0.1: `/redirect` answers 302 to `location`, `/target` counts its hits,
/// anything else answers 200 `ok`.
async fn server(location: impl Fn(u16) -> String + Send + 'static) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let target_hits = hits.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let mut buf = vec![0u8; 4096];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let reply = if path == "/redirect" {
                format!(
                    "HTTP/1.1 302 Found\r\nlocation: {}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
                    location(port)
                )
            } else {
                if path == "/target" {
                    target_hits.fetch_add(1, Ordering::SeqCst);
                }
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".to_string()
            };
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (port, hits)
}

fn tree(root: &Path, tenant_settings: &str) -> Executors {
    let dir = root.join("acme/_tenant/_vance");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(root.join("acme/shop/_vance")).unwrap();
    std::fs::write(dir.join("settings.yaml"), tenant_settings).unwrap();
    Executors::new(DocumentSource::new(root))
}

async fn get(exec: &Executors, url: &str) -> Result<Value, ToolError> {
    let ctx = exec.tool_context(&Scope::new("acme", "shop"), "tester");
    exec.invoke_tool(
        "http_request",
        json!({ "url": url, "timeoutSeconds": 10 }),
        &ctx,
    )
    .await
}

fn refusal(result: Result<Value, ToolError>, what: &str) -> String {
    match result {
        Err(e @ ToolError::PermissionDenied(_)) => {
            assert_eq!(e.outcome(), "permission_error");
            let msg = e.to_string();
            assert!(msg.contains("[MAG-EG001]"), "{what}: {msg}");
            assert!(
                msg.contains("egress.allowHosts") || msg.contains("egress.allowPrivate"),
                "{what}: the message names the setting: {msg}"
            );
            msg
        }
        other => panic!("{what} should be refused by the egress policy, got {other:?}"),
    }
}

#[tokio::test]
async fn every_spelling_of_a_private_or_loopback_address_is_refused() {
    let (port, _) = server(|_| String::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(dir.path(), "");
    let spellings = [
        format!("http://127.0.0.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://0x7f000001:{port}/"),
        format!("http://017700000001:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://127.0.0.1.:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://[::ffff:7f00:1]:{port}/"),
        format!("http://[::127.0.0.1]:{port}/"),
        format!("http://[64:ff9b::127.0.0.1]:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://LOCALHOST:{port}/"),
        "http://0.0.0.0/".to_string(),
        "http://10.0.0.1/".to_string(),
        "http://172.16.5.4/".to_string(),
        "http://192.168.0.1/".to_string(),
        "http://100.64.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data/".to_string(),
        "http://[fd00::1]/".to_string(),
        "http://[fe80::1]/".to_string(),
        "http://224.0.0.1/".to_string(),
        "http://255.255.255.255/".to_string(),
        "http://192.0.2.10/".to_string(),
        "http://198.18.0.1/".to_string(),
    ];
    for url in &spellings {
        refusal(get(&exec, url).await, url);
    }
}

#[tokio::test]
async fn an_allowed_host_pattern_lets_the_request_through_on_its_port_only() {
    let (port, hits) = server(|_| String::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(
        dir.path(),
        &format!("egress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n"),
    );
    let ok = get(&exec, &format!("http://127.0.0.1:{port}/target"))
        .await
        .unwrap();
    assert_eq!(ok["status"], 200);
    assert_eq!(ok["body"], "ok");
    assert_eq!(hits.load(Ordering::SeqCst), 1);
    let msg = refusal(
        get(&exec, "http://127.0.0.1:1/target").await,
        "another port",
    );
    assert!(msg.contains("port"), "{msg}");
    // The pattern names 127.0.0.1, not every name that resolves to it.
    refusal(
        get(&exec, &format!("http://localhost:{port}/target")).await,
        "localhost",
    );
    assert_eq!(hits.load(Ordering::SeqCst), 1);

    let dir = tempfile::tempdir().unwrap();
    let open = tree(dir.path(), "egress:\n  allowPrivate: true\n");
    let ok = get(&open, &format!("http://localhost:{port}/target"))
        .await
        .unwrap();
    assert_eq!(ok["status"], 200);
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_is_not_followed() {
    let (port, hits) = server(|port| format!("http://localhost:{port}/target")).await;
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(
        dir.path(),
        &format!("egress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n"),
    );
    let msg = refusal(
        get(&exec, &format!("http://127.0.0.1:{port}/redirect")).await,
        "redirect to localhost",
    );
    assert!(msg.contains("localhost"), "{msg}");
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "the redirect target was reached"
    );

    // A redirect to a literal address the pattern does not allow is refused as well.
    let (port, hits) = server(|_| "http://[::ffff:127.0.0.1]:9/target".to_string()).await;
    let dir = tempfile::tempdir().unwrap();
    let exec = tree(
        dir.path(),
        &format!("egress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n"),
    );
    refusal(
        get(&exec, &format!("http://127.0.0.1:{port}/redirect")).await,
        "redirect to a mapped address",
    );
    assert_eq!(hits.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_served_tree_refuses_http_request_until_the_tenant_allows_it() {
    let (port, _) = server(|_| String::new()).await;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let allow = format!("egress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n");
    tree(root, &allow);
    let served = Executors::new(DocumentSource::new(root).served());
    let url = format!("http://127.0.0.1:{port}/target");
    match get(&served, &url).await {
        Err(ToolError::PermissionDenied(m)) => assert!(
            m.contains("[MAG-PL001] http_request is not allowed for project acme/shop")
                && m.contains("`execution.httpRequest: true`")
                && m.contains("in acme/_tenant/_vance/settings.yaml"),
            "{m}"
        ),
        other => panic!("expected a refusal, got {other:?}"),
    }
    std::fs::write(
        root.join("acme/_tenant/_vance/settings.yaml"),
        format!("{allow}execution:\n  httpRequest: true\n"),
    )
    .unwrap();
    assert_eq!(get(&served, &url).await.unwrap()["status"], 200);
}
