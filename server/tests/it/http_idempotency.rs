//! `Idempotency-Key` on `POST …/start`: the same key starts one run (201, then 200 with that
//! run), per tenant, project and workflow; a malformed key is 400.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

async fn start(s: &Server, tenant: &str, token: &str, workflow: &str, key: &str) -> (u16, String) {
    let r = s
        .post(
            &format!("/brain/{tenant}/project/shop/workflows/{workflow}/start"),
            Some(token),
        )
        .header("Idempotency-Key", key)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    (
        status,
        body["workflowRunId"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

async fn runs(s: &Server, tenant: &str, token: &str) -> usize {
    let list: Vec<Value> = s
        .get_json(
            &format!("/brain/{tenant}/project/shop/workflows/runs?workflow=approve"),
            Some(token),
        )
        .await;
    list.len()
}

#[tokio::test]
async fn the_same_key_starts_one_run_and_returns_it_again() {
    let s = Server::start().await;
    let (first, run) = start(&s, "acme", ACME, "approve", "order-42").await;
    assert_eq!(first, 201);
    let (again, same) = start(&s, "acme", ACME, "approve", "order-42").await;
    assert_eq!(again, 200);
    assert_eq!(same, run);
    assert_eq!(runs(&s, "acme", ACME).await, 1);

    let (status, other) = start(&s, "acme", ACME, "approve", "order-43").await;
    assert_eq!(status, 201);
    assert_ne!(other, run);
    // Another workflow with the same key is another start.
    let (status, hello) = start(&s, "acme", ACME, "hello", "order-42").await;
    assert_eq!(status, 201);
    assert_ne!(hello, run);
    // A name no workflow may have finds no other workflow's run through the key's text
    // (`approve` + `x:order-42` and `approve:x` + `order-42` would read alike).
    let (status, _) = start(&s, "acme", ACME, "approve", "x:order-42").await;
    assert_eq!(status, 201);
    let (status, found) = start(&s, "acme", ACME, "approve:x", "order-42").await;
    assert_eq!(status, 400, "{found}");
    assert_eq!(found, "");
}

/// Starts with one key at the same moment: one caller is told it created the run (201), every
/// other gets it back (200), as a later start would.
#[tokio::test]
async fn of_starts_racing_with_one_key_only_one_is_told_it_created_the_run() {
    let s = Server::start().await;
    let answers = futures::future::join_all(
        (0..16).map(|_| start(&s, "acme", ACME, "approve", "racing-key")),
    )
    .await;
    let created = answers.iter().filter(|(status, _)| *status == 201).count();
    assert_eq!(created, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(status, _)| *status == 201 || *status == 200)
    );
    assert!(
        answers.iter().all(|(_, run)| *run == answers[0].1),
        "{answers:?}"
    );
    assert_eq!(runs(&s, "acme", ACME).await, 1);
}

#[tokio::test]
async fn tenants_with_the_same_key_get_their_own_runs() {
    let s = Server::start().await;
    let (a_status, a) = start(&s, "acme", ACME, "approve", "shared-key").await;
    let (g_status, g) = start(&s, "globex", GLOBEX, "approve", "shared-key").await;
    assert_eq!((a_status, g_status), (201, 201));
    assert_ne!(a, g);
    assert_eq!(runs(&s, "acme", ACME).await, 1);
    assert_eq!(runs(&s, "globex", GLOBEX).await, 1);
    let r = s
        .get(
            &format!("/brain/globex/project/shop/workflows/runs/{a}"),
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404, "acme's run stays invisible to globex");
}

#[tokio::test]
async fn a_malformed_key_is_refused() {
    let s = Server::start().await;
    for key in ["", "has space", &"k".repeat(256), "tab\tinside"] {
        let r = s
            .post(
                "/brain/acme/project/shop/workflows/approve/start",
                Some(ACME),
            )
            .header("Idempotency-Key", key)
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(
            code(r).await,
            (400, "MAG-HTTP-INVALID-IDEMPOTENCY-KEY".into()),
            "{key:?}"
        );
    }
    let r = s
        .post(
            "/brain/acme/project/shop/workflows/approve/start",
            Some(ACME),
        )
        .header("Idempotency-Key", "k".repeat(255))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(runs(&s, "acme", ACME).await, 1);
}
