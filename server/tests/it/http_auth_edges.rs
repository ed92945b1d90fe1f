//! The edges of API authentication: the `Authorization` scheme and its case, empty tokens,
//! a token file the server refuses to start with (an entry with both or neither of
//! `token`/`tokenSha256`, a file that cannot be read) — as a library and as `magrathea serve`
//! — and the file edited while the server runs.

use crate::http_common;

use std::path::Path;
use std::process::Command;

use http_common::*;
use magrathea_server::http::auth::AuthFileError;
use magrathea_server::{ServeConfig, ServeError};

const BIN: &str = env!("CARGO_BIN_EXE_magrathea");

async fn status_with(s: &Server, authorization: &str) -> u16 {
    s.client
        .get(s.url("/brain/acme/project/shop/workflows/runs"))
        .header("Authorization", authorization)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn only_a_bearer_token_is_accepted_whatever_the_scheme_case() {
    let s = Server::start().await;
    for refused in [
        format!("Basic {ACME}"),
        "Basic YWxpY2U6c2VjcmV0".to_string(),
        format!("Token {ACME}"),
        format!("Bearer{ACME}"),
        "Bearer ".to_string(),
        "Bearer    ".to_string(),
        "Bearer".to_string(),
        ACME.to_string(),
    ] {
        assert_eq!(status_with(&s, &refused).await, 401, "{refused:?}");
    }
    for accepted in [
        format!("Bearer {ACME}"),
        format!("bearer {ACME}"),
        format!("BEARER {ACME}"),
        format!("BeArEr {ACME}"),
    ] {
        assert_eq!(status_with(&s, &accepted).await, 200, "{accepted:?}");
    }
}

/// A tree whose token file is `tokens` (written as is).
fn tree_with_tokens(root: &Path, tokens: &str) {
    write(&root.join("acme/shop/_vance/workflows/hello.yaml"), HELLO);
    write(&root.join("_auth/tokens.yaml"), tokens);
}

async fn serve_error(root: &Path) -> ServeError {
    match magrathea_server::serve(
        ServeConfig::new(root)
            .addr("127.0.0.1:0".parse().unwrap())
            .store(root.join("store")),
    )
    .await
    {
        Ok(_) => panic!("the server started with a bad token file"),
        Err(e) => e,
    }
}

/// Runs `magrathea serve` on `root`: it must exit non-zero, saying `expected` on stderr.
fn binary_refuses(root: &Path, expected: &str) {
    let out = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--root"])
        .arg(root)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "magrathea serve started: {stderr}");
    assert!(stderr.contains(expected), "{stderr}");
}

#[tokio::test]
async fn a_token_entry_with_both_or_neither_secret_stops_the_server() {
    for (entry, what) in [
        (
            "  - token: plain\n    tokenSha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8\n",
            "both",
        ),
        ("", "neither"),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        tree_with_tokens(
            &root,
            &format!(
                "tokens:\n{entry}    tenant: acme\n    subject: ci\n    scopes: [workflow.run]\n"
            )
            .replace("tokens:\n    tenant", "tokens:\n  - tenant"),
        );
        let e = serve_error(&root).await;
        assert!(
            matches!(&e, ServeError::Auth(AuthFileError::Invalid { message, .. })
                if message.contains("tokens[0] needs exactly one of tokenSha256 and token")),
            "{what}: {e}"
        );
        binary_refuses(&root, "[MAG-AUTH002]");
        binary_refuses(&root, "needs exactly one of tokenSha256 and token");
    }
}

/// Entries that could not work as written stop the server with what is wrong: a token given
/// twice (the second entry would act as the first), an empty token (never presentable), a
/// tenant that is no tenant's name (`../globex` would name another tenant's directory).
#[tokio::test]
async fn token_entries_that_cannot_work_as_written_stop_the_server() {
    let hashed = magrathea_server::http::auth::token_sha256("shared");
    for (entries, expected) in [
        (
            format!(
                "  - token: shared\n    tenant: acme\n    subject: a\n    scopes: [workflow.read]\n\
                 \x20 - tokenSha256: {hashed}\n    tenant: globex\n    subject: g\n    scopes: [workflow.run]\n"
            ),
            "tokens[1] is the same token as tokens[0]",
        ),
        (
            "  - token: \"\"\n    tenant: acme\n    subject: a\n    scopes: [workflow.read]\n"
                .to_owned(),
            "tokens[0].token is empty",
        ),
        (
            "  - token: t\n    tenant: ../globex\n    subject: a\n    scopes: [workflow.read]\n"
                .to_owned(),
            "tokens[0].tenant `../globex` is not a tenant's name",
        ),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        tree_with_tokens(&root, &format!("tokens:\n{entries}"));
        let e = serve_error(&root).await;
        assert!(
            matches!(&e, ServeError::Auth(AuthFileError::Invalid { message, .. })
                if message.contains(expected)),
            "{expected}: {e}"
        );
        binary_refuses(&root, expected);
    }
}

#[tokio::test]
async fn an_unreadable_token_file_stops_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    write(&root.join("acme/shop/_vance/workflows/hello.yaml"), HELLO);
    // A directory where the file should be: unreadable as a file for every user, root too.
    std::fs::create_dir_all(root.join("_auth/tokens.yaml")).unwrap();
    let e = serve_error(&root).await;
    assert!(
        matches!(&e, ServeError::Auth(AuthFileError::Read { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("[MAG-AUTH001]"), "{e}");
    binary_refuses(&root, "[MAG-AUTH001]");
}

/// Every route that takes a JSON body answers a caller it does not authorize 401 or 403,
/// whatever the body: a malformed body is 400 only to a caller with the route's scope. A
/// route that takes no body refuses one the same way (nothing or `{}` is all it takes).
#[tokio::test]
async fn a_bad_body_is_answered_only_to_a_caller_the_route_authorizes() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", serde_json::json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let p = "/brain/acme/project/shop";
    let routes = [
        ("POST", format!("{p}/workflows/hello/start")),
        ("POST", format!("{p}/workflows/runs/{run}/cancel")),
        ("POST", format!("{p}/workflows/runs/{run}/pause")),
        ("POST", format!("{p}/workflows/runs/{run}/resume")),
        ("POST", format!("{p}/workflows/runs/{run}/rerun")),
        ("POST", format!("{p}/workflows/runs/{run}/retry")),
        ("POST", format!("{p}/inbox/{run}-2/answer")),
        ("POST", format!("/v1/workflow-approvals/{run}-2/approve")),
        ("POST", format!("/v1/workflow-approvals/{run}-2/reject")),
        ("POST", format!("/v1/workflow-runs/{run}/pause")),
        ("POST", format!("/v1/workflow-runs/{run}/resume")),
        ("PATCH", format!("{p}/triggers/nightly")),
        ("PATCH", "/v1/workflow-triggers/trg_0".to_string()),
        // Routes that take no body refuse one they would not read.
        ("POST", format!("{p}/triggers/resync")),
        ("POST", "/v1/workflows/hello/triggers/resync".to_string()),
        ("POST", format!("{p}/schedules/nightly/trigger")),
        ("POST", format!("{p}/workflows/hello/publish")),
        ("POST", format!("{p}/workflows/hello/archive")),
        ("POST", format!("{p}/workflows/hello/unarchive")),
    ];
    for (method, path) in &routes {
        let send = async |token: Option<&str>, body: &str| {
            let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
            let mut req = s.client.request(method, s.url(path)).body(body.to_owned());
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            (status, r.text().await.unwrap())
        };
        for body in ["not json", "{\"noSuchField\": 1}"] {
            let (status, text) = send(None, body).await;
            assert_eq!(status, 401, "{method} {path} without a token: {text}");
            let (status, text) = send(Some("no-such-token"), body).await;
            assert_eq!(status, 401, "{method} {path} with an unknown token: {text}");
            let (status, text) = send(Some(ACME_READ), body).await;
            assert_eq!(status, 403, "{method} {path} without the scope: {text}");
        }
        let (status, text) = send(Some(ACME), "not json").await;
        assert_eq!(status, 400, "{method} {path}: {text}");
        assert!(text.contains("MAG-HTTP-INVALID-JSON"), "{text}");
    }
    let r = s
        .client
        .post(s.url(&format!("{p}/triggers/resync")))
        .bearer_auth(ACME)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "an empty object is no field");
}

/// The status of `GET …/runs` with the bearer `token`, once it is `want` (the server looks
/// at its token file every couple of seconds), or the last one after `patience`.
async fn status_becomes(s: &Server, token: &str, want: u16, patience: u64) -> u16 {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(patience);
    loop {
        let status = status_with(s, &format!("Bearer {token}")).await;
        if status == want || std::time::Instant::now() > deadline {
            return status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// A token added to or removed from the file while the server runs takes effect without a
/// restart; an edit that leaves the file invalid keeps the tokens read before in force.
#[tokio::test]
async fn tokens_added_or_revoked_in_the_file_take_effect_while_serving() {
    let s = Server::start().await;
    let file = s.root.join("_auth/tokens.yaml");
    assert_eq!(status_with(&s, &format!("Bearer {ACME}")).await, 200);
    // Revoke every acme token but one new one.
    write(
        &file,
        &format!(
            "tokens:\n  - tokenSha256: {}\n    tenant: acme\n    subject: carol\n    scopes: [workflow.read]\n",
            magrathea_server::http::auth::token_sha256("fresh-token")
        ),
    );
    assert_eq!(status_becomes(&s, "fresh-token", 200, 30).await, 200);
    assert_eq!(status_with(&s, &format!("Bearer {ACME}")).await, 401);

    // Half-way through an edit: refused, and the tokens in force stay (looked at for three
    // of the server's looks at the file).
    write(&file, "tokens:\n  - tenant: acme\n");
    assert_eq!(status_becomes(&s, "fresh-token", 401, 6).await, 200);
    assert_eq!(status_with(&s, &format!("Bearer {ACME}")).await, 401);

    // The file fixed again.
    write(&file, &tokens_yaml());
    assert_eq!(status_becomes(&s, ACME, 200, 30).await, 200);
    assert_eq!(status_with(&s, "Bearer fresh-token").await, 401);
}

/// Streams opened with a token end once it is revoked: the tenant's event stream (SSE and
/// WebSocket), a run's record stream, a read waiting for a run (answered 401), and a
/// project's WebSocket session, which closes with 1008 and says why. Another token's stream
/// goes on.
#[tokio::test]
async fn streams_of_a_revoked_token_end_and_others_go_on() {
    use futures::StreamExt;
    use tokio_tungstenite::tungstenite::Message;

    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/approve.yaml"),
        APPROVE,
    );
    let run = s.start_run("shop", "approve", serde_json::json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let sse = |path: String, token: &'static str| {
        let s = &s;
        async move {
            let r = s.get(&path, Some(token)).send().await.unwrap();
            assert_eq!(r.status(), 200, "{path}");
            Box::pin(r.bytes_stream())
        }
    };
    let events = sse("/v1/workflow-events".into(), ACME).await;
    let records = sse(
        format!("/brain/acme/project/shop/workflows/runs/{run}/events"),
        ACME,
    )
    .await;
    let mut others = sse("/v1/workflow-events".into(), GLOBEX).await;
    let waiting = tokio::spawn(
        s.get(
            &format!("/brain/acme/project/shop/workflows/runs/{run}?wait=60s"),
            Some(ACME),
        )
        .send(),
    );
    let mut session = crate::live_common::ws_connect(s.addr, ACME).await;
    let (mut tenant_socket, _) = tokio_tungstenite::connect_async(format!(
        "ws://{}/v1/workflow-events?token={ACME}",
        s.addr
    ))
    .await
    .unwrap();

    // acme's tokens go; globex's stays.
    let globex_only: String = tokens_yaml()
        .split("\n  - ")
        .filter(|entry| entry.contains("tenant: globex"))
        .map(|entry| format!("\n  - {entry}"))
        .collect();
    write(
        &s.root.join("_auth/tokens.yaml"),
        &format!("tokens:{globex_only}\n"),
    );
    async fn ends(
        mut stream: impl futures::Stream<Item = reqwest::Result<axum::body::Bytes>> + Unpin,
    ) -> bool {
        tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(Ok(_)) = stream.next().await {}
        })
        .await
        .is_ok()
    }
    assert!(ends(events).await, "the tenant's event stream ended");
    // A read waiting for the run ends too, and answers as the token now deserves: 401.
    let waited = tokio::time::timeout(std::time::Duration::from_secs(30), waiting)
        .await
        .expect("the waiting read ends with its token")
        .unwrap()
        .unwrap();
    assert_eq!(waited.status(), 401);
    assert!(ends(records).await, "the run's record stream ended");
    for socket in [&mut session, &mut tenant_socket] {
        let closed = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            loop {
                match socket.next().await {
                    Some(Ok(Message::Close(frame))) => return frame,
                    Some(Ok(_)) => continue,
                    _ => return None,
                }
            }
        })
        .await
        .expect("the session closed");
        let frame = closed.expect("a close frame");
        assert_eq!(u16::from(frame.code), 1008, "{frame:?}");
        assert_eq!(frame.reason.as_str(), "the token was revoked");
    }
    // globex's stream is still open: a keep-alive or an event may come, but not its end.
    let still = tokio::time::timeout(std::time::Duration::from_secs(1), others.next()).await;
    assert!(!matches!(still, Ok(None)), "globex's stream ended");
}
