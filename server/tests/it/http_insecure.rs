//! A server without authentication (`--insecure-no-auth`) stays on its own machine: it binds
//! only loopback addresses, and answers only requests that name it as `127.0.0.1`,
//! `localhost` or `[::1]` in `Host` and `Origin`, so a DNS-rebinding page or a cross-site form
//! in a local browser cannot reach it. With tokens, none of this applies: a browser never
//! attaches a `Bearer` token to a foreign page's request by itself.

use crate::http_common;
use crate::raw_http;

use std::process::Command;

use http_common::*;
use magrathea_server::{ServeConfig, ServeError, serve};
use raw_http::*;

const NOT_LOOPBACK: [&str; 3] = ["0.0.0.0:0", "192.168.1.20:0", "[::]:0"];

#[tokio::test]
async fn serving_without_authentication_refuses_addresses_other_than_loopback() {
    let tmp = tempfile::tempdir().unwrap();
    for addr in NOT_LOOPBACK {
        let config = ServeConfig::new(tmp.path())
            .addr(addr.parse().unwrap())
            .insecure_no_auth(true);
        let err = serve(config).await.map(|_| ()).unwrap_err();
        assert!(
            matches!(err, ServeError::InsecureNotLoopback { .. }),
            "{addr}: {err}"
        );
        assert!(err.to_string().contains("[MAG-SV010]"), "{err}");
    }
}

#[test]
fn magrathea_serve_without_authentication_exits_non_zero_on_other_addresses() {
    let tmp = tempfile::tempdir().unwrap();
    for addr in ["0.0.0.0:0", "10.1.2.3:7878"] {
        let out = Command::new(env!("CARGO_BIN_EXE_magrathea"))
            .args(["serve", "--insecure-no-auth", "--addr", addr, "--root"])
            .arg(tmp.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{addr}: {stderr}");
        assert!(stderr.contains("[MAG-SV010]"), "{stderr}");
        assert!(out.stdout.is_empty(), "it never listened");
    }
}

/// A `--root` that is a file is said to be one, not reported as an unreadable token file (which
/// `--insecure-no-auth` does not even read).
#[test]
fn magrathea_serve_refuses_a_root_that_is_a_file_saying_so() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, "not a tree").unwrap();
    // Written with a trailing slash, the path cannot even be resolved: said as well.
    let slashed = format!("{}/", file.display());
    for (insecure, root) in [(true, file.to_str().unwrap()), (false, &slashed)] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_magrathea"));
        cmd.args(["serve", "--addr", "127.0.0.1:0", "--root", root]);
        if insecure {
            cmd.arg("--insecure-no-auth");
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(
            stderr.contains("is not a directory") || stderr.contains("Not a directory"),
            "{stderr}"
        );
        assert!(!stderr.contains("does not exist"), "{stderr}");
        assert!(!stderr.contains("MAG-AUTH001"), "{stderr}");
        assert!(out.stdout.is_empty(), "it never listened");
    }
}

fn request(method: &str, path: &str, host: &str, origin: Option<&str>) -> String {
    let origin = origin
        .map(|o| format!("Origin: {o}\r\n"))
        .unwrap_or_default();
    format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
         Content-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    )
}

const START: &str = "/brain/acme/project/shop/workflows/approve/start";
const RUNS: &str = "/brain/acme/project/shop/workflows/runs";

#[tokio::test]
async fn without_authentication_a_foreign_host_or_origin_is_refused() {
    let s = Server::start_with(|c| c.insecure_no_auth(true)).await;
    let port = s.addr.port();
    for host in [
        "evil.example",
        "evil.example:80",
        &format!("rebind.evil.example:{port}"),
    ] {
        let answer = exchange(s.addr, &request("POST", START, host, None)).await;
        assert_eq!(status(&answer), 421, "{host}: {answer}");
        assert!(answer.contains("MAG-HTTP-HOST"), "{answer}");
    }
    for origin in [
        "http://evil.example",
        "null",
        &format!("https://localhost:{port}"),
    ] {
        let host = format!("127.0.0.1:{port}");
        let answer = exchange(s.addr, &request("POST", START, &host, Some(origin))).await;
        assert_eq!(status(&answer), 403, "{origin}: {answer}");
        assert!(answer.contains("MAG-HTTP-ORIGIN"), "{answer}");
    }
    // Nothing was started by the refused requests.
    let host = format!("localhost:{port}");
    let runs = exchange(s.addr, &request("GET", RUNS, &host, None)).await;
    assert_eq!(status(&runs), 200, "{runs}");
    assert!(
        !runs.contains("approve"),
        "a refused request started a run: {runs}"
    );

    // The server's own names pass, with or without a matching Origin.
    for name in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ] {
        let origin = format!("http://{name}");
        for origin in [None, Some(origin.as_str())] {
            let answer = exchange(s.addr, &request("POST", START, &name, origin)).await;
            assert_eq!(status(&answer), 201, "{name} {origin:?}: {answer}");
        }
    }
}

#[tokio::test]
async fn with_tokens_host_and_origin_are_not_checked() {
    let s = Server::start().await;
    let answer = exchange(
        s.addr,
        &format!(
            "GET {RUNS} HTTP/1.1\r\nHost: proxy.example.com\r\nOrigin: http://ui.example.com\r\n\
             Authorization: Bearer {ACME}\r\nConnection: close\r\n\r\n"
        ),
    )
    .await;
    assert_eq!(status(&answer), 200, "{answer}");
    // Without the token the answer is 401, not a Host or Origin refusal.
    let answer = exchange(
        s.addr,
        &format!("GET {RUNS} HTTP/1.1\r\nHost: proxy.example.com\r\nConnection: close\r\n\r\n"),
    )
    .await;
    assert_eq!(status(&answer), 401, "{answer}");
}
