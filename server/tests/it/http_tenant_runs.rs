//! One tenant's token cannot fill the server with runs: `ServeConfig::max_runs_per_tenant`
//! (`magrathea serve --max-runs-per-tenant`) bounds the runs one tenant has in progress, all
//! its projects together. A start beyond it is answered 429 `MAG-EN008` and starts nothing;
//! another tenant starts as before, and a run that ends frees its place.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

/// A run that stays busy (a running shell step) until cancelled.
const HOLD: &str = r#"
start: hold
states:
  hold:
    type: shell_task
    run: sleep 120
    dirName: workspace
    on: { success: done }
  done: { type: terminal }
"#;

/// POSTs `{}` to `path` with `token`: the status and the JSON answer.
async fn post(s: &Server, path: &str, token: &str) -> (u16, Value) {
    let r = s
        .post(path, Some(token))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

async fn start(s: &Server, tenant: &str, project: &str, token: &str) -> (u16, Value) {
    let path = format!("/brain/{tenant}/project/{project}/workflows/hold/start");
    post(s, &path, token).await
}

async fn runs_of(s: &Server, project: &str) -> usize {
    let runs: Value = s
        .get_json(
            &format!("/brain/acme/project/{project}/workflows/runs?workflow=hold"),
            Some(ACME),
        )
        .await;
    runs.as_array().unwrap().len()
}

#[tokio::test]
async fn a_tenant_starts_at_most_its_bound_of_runs_and_an_ended_run_frees_a_place() {
    let s = Server::start_with(|c| c.max_runs_per_tenant(2)).await;
    for (t, p) in [("acme", "shop"), ("acme", "lab"), ("globex", "shop")] {
        write(
            &s.root.join(t).join(p).join("_vance/workflows/hold.yaml"),
            HOLD,
        );
    }
    let (status, first) = start(&s, "acme", "shop", ACME).await;
    assert_eq!(status, 201, "{first}");
    let (status, second) = start(&s, "acme", "lab", ACME).await;
    assert_eq!(status, 201, "{second}");

    // Both projects of acme count against the tenant's bound.
    let (status, refused) = start(&s, "acme", "shop", ACME).await;
    assert_eq!(status, 429, "{refused}");
    assert_eq!(refused["error"]["code"], "MAG-EN008", "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("tenant `acme` has 2 runs in progress") && message.contains("(2)"),
        "{message}"
    );
    assert_eq!(
        runs_of(&s, "shop").await,
        1,
        "the refused start started nothing"
    );

    // Another tenant is not held back by acme's runs.
    let (status, other) = start(&s, "globex", "shop", GLOBEX).await;
    assert_eq!(status, 201, "{other}");

    // A run that ends gives its place back.
    let first = first["workflowRunId"].as_str().unwrap();
    let cancel = format!("/brain/acme/project/shop/workflows/runs/{first}/cancel");
    let (status, cancelled) = post(&s, &cancel, ACME).await;
    assert_eq!(status, 200, "{cancelled}");
    s.wait_status("shop", first, &["CANCELLED"]).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let (status, again) = start(&s, "acme", "shop", ACME).await;
        if status == 201 {
            break;
        }
        // The ended run's driver leaves memory just after its status is written.
        assert_eq!(again["error"]["code"], "MAG-EN008", "{again}");
        assert!(
            std::time::Instant::now() < deadline,
            "an ended run never freed its place: {again}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(runs_of(&s, "shop").await, 2);
}

/// The journal bytes one tenant's runs hold in memory are bounded too
/// (`ServeConfig::max_resident_bytes_per_tenant`, `--max-resident-bytes-per-tenant`): a run
/// whose shell step runs keeps its parameters resident, and a start with large parameters
/// that would pass the bound is answered 429 `MAG-EN008` and starts nothing, while another
/// tenant starts as before.
#[tokio::test]
async fn a_tenants_runs_in_memory_hold_at_most_its_bytes() {
    let s = Server::start_with(|c| c.max_resident_bytes_per_tenant(100_000)).await;
    for (t, p) in [("acme", "shop"), ("globex", "shop")] {
        write(
            &s.root.join(t).join(p).join("_vance/workflows/hold.yaml"),
            HOLD,
        );
    }
    let laden = |tenant: &str, token: &str| {
        s.post(
            &format!("/brain/{tenant}/project/shop/workflows/hold/start"),
            Some(token),
        )
        .json(&json!({ "params": { "pad": "x".repeat(40_000) } }))
        .send()
    };
    let first = laden("acme", ACME).await.unwrap();
    assert_eq!(first.status(), 201);
    let second = laden("acme", ACME).await.unwrap();
    assert_eq!(second.status(), 201);
    let refused = laden("acme", ACME).await.unwrap();
    assert_eq!(refused.status(), 429);
    let refused: Value = refused.json().await.unwrap();
    assert_eq!(refused["error"]["code"], "MAG-EN008", "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-resident-bytes-per-tenant"),
        "{refused}"
    );
    assert_eq!(
        runs_of(&s, "shop").await,
        2,
        "the refused start started nothing"
    );
    let other = laden("globex", GLOBEX).await.unwrap();
    assert_eq!(other.status(), 201);
}
