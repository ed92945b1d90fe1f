//! `/healthz` after journal I/O errors: a server whose disk fails to write reports itself
//! unhealthy, and healthy again once the disk recovers, with new runs starting, all without a
//! restart. The disk is redb's real file behind a backend that fails writes on demand.

use crate::http_common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use http_common::*;
use magrathea_core::store::{DiskFaults, FaultyBackend};
use magrathea_core::{Durability, Engine};
use magrathea_server::Server as AppServer;
use serde_json::{Value, json};

async fn healthz(client: &reqwest::Client, base: &str) -> (u16, Value) {
    let r = client.get(format!("{base}/healthz")).send().await.unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn start(client: &reqwest::Client, base: &str) -> reqwest::Response {
    client
        .post(format!(
            "{base}/brain/acme/project/shop/workflows/approve/start"
        ))
        .bearer_auth(ACME)
        .json(&json!({ "params": {} }))
        .send()
        .await
        .unwrap()
}

/// A server over the tree at `root` journaling into `store`, and its base URL.
async fn serve(
    root: &std::path::Path,
    store: magrathea_core::RedbStore,
) -> (String, magrathea_server::ServerHandle) {
    let engine = Engine::builder().store(Arc::new(store));
    let (addr, handle) = AppServer::new(engine, root)
        .addr("127.0.0.1:0".parse().unwrap())
        .serve()
        .await
        .unwrap();
    (format!("http://{addr}"), handle)
}

/// A start of `approve` with an `Idempotency-Key`: it reads the store for the key first.
async fn keyed_start(client: &reqwest::Client, base: &str, key: &str) -> reqwest::Response {
    client
        .post(format!(
            "{base}/brain/acme/project/shop/workflows/approve/start"
        ))
        .bearer_auth(ACME)
        .header("Idempotency-Key", key)
        .json(&json!({ "params": {} }))
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn healthz_turns_unhealthy_after_a_failed_commit_and_healthy_once_the_disk_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let faults = DiskFaults::new();
    let store =
        FaultyBackend::open_store(root.join("journal.redb"), Durability::Immediate, &faults)
            .unwrap();
    let (base, handle) = serve(&root, store).await;
    let client = reqwest::Client::new();
    assert_eq!(
        healthz(&client, &base).await,
        (200, json!({"status": "ok"}))
    );

    // The disk refuses every write: the start cannot be journaled.
    faults.fail_next_writes(u32::MAX);
    let failed = start(&client, &base).await;
    // The store's failure, not a bug: 503 with a time to retry after.
    assert_eq!(failed.status(), 503);
    assert_eq!(failed.headers()["retry-after"], "5");
    let body = failed.text().await.unwrap();
    assert!(body.contains("MAG-HTTP-STORE-UNAVAILABLE"), "{body}");
    assert!(
        !body.contains(root.to_str().unwrap()),
        "no server path: {body}"
    );
    let (status, body) = healthz(&client, &base).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], "unhealthy");
    assert!(
        body["reason"].as_str().unwrap().contains("journal"),
        "{body}"
    );

    // The disk recovers: health checks notice it on their own, without another request.
    faults.clear();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = healthz(&client, &base).await;
        if status == 200 {
            assert_eq!(body, json!({"status": "ok"}));
            break;
        }
        assert!(Instant::now() < deadline, "never healthy again: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let started = start(&client, &base).await;
    assert_eq!(started.status(), 201, "{}", started.text().await.unwrap());
    handle.shutdown().await.unwrap();
}

/// A disk that fills up once the journal log's preallocated space is taken: commits to the
/// log go on, but folding them into redb's file fails, and with it every read of the store.
/// The server says so — 503 with a time to retry after, health unhealthy — rather than a 500
/// that suggests a bug while health says ok; and it heals on its own once the disk does.
#[tokio::test]
async fn a_store_that_cannot_fold_answers_503_and_is_unhealthy_until_the_disk_recovers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let (faults, log_faults) = (DiskFaults::new(), DiskFaults::new());
    let store = FaultyBackend::open_store_split(
        root.join("journal.redb"),
        Durability::Immediate,
        &faults,
        &log_faults,
    )
    .unwrap();
    let (base, handle) = serve(&root, store).await;
    let client = reqwest::Client::new();
    faults.fail_next_writes(u32::MAX);
    assert_eq!(start(&client, &base).await.status(), 201);

    // The fold of that start (once the journal is idle) fails: health says so.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = healthz(&client, &base).await;
        if status == 503 {
            assert_eq!(body["status"], "unhealthy");
            assert!(
                body["reason"].as_str().unwrap().contains("journal store"),
                "{body}"
            );
            break;
        }
        assert!(Instant::now() < deadline, "never unhealthy: {body}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A start that reads the store (its idempotency key) is refused as the store's failure.
    let keyed = keyed_start(&client, &base, "order-1").await;
    assert_eq!(keyed.status(), 503);
    assert_eq!(keyed.headers()["retry-after"], "5");
    let body = keyed.text().await.unwrap();
    assert!(body.contains("MAG-HTTP-STORE-UNAVAILABLE"), "{body}");

    faults.clear();
    let deadline = Instant::now() + Duration::from_secs(30);
    while healthz(&client, &base).await.0 != 200 {
        assert!(Instant::now() < deadline, "never healthy again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let keyed = keyed_start(&client, &base, "order-1").await;
    assert_eq!(keyed.status(), 201, "{}", keyed.text().await.unwrap());
    assert_eq!(log_faults.injected(), 0, "the log never failed");
    handle.shutdown().await.unwrap();
}
