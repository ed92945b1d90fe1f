//! `GET …/workflows/runs/{run_id}/graph`: the graph of the definition a run started with
//! (frozen in its `StartRecord`), whatever the document has become since; another tenant's
//! token finds no such run, and a code workflow's run has no document to draw.

use std::sync::Arc;

use crate::http_common;

use http_common::*;
use magrathea_core::{Engine, MemoryStore, WorkflowRegistration};
use serde_json::{Value, json};

const ASK: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done, rejected: done }
  done: { type: terminal }
"#;

fn ids(graph: &Value, key: &str, field: &str) -> Vec<String> {
    graph[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n[field].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_runs_graph_is_its_frozen_definition_and_stays_in_its_tenant() {
    let s = Server::start().await;
    let file = s.root.join("acme/shop/_vance/workflows/ask.yaml");
    write(&file, ASK);
    let run = s.start_run("shop", "ask", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    // The document is renamed state by state after the run started.
    write(&file, &ASK.replace("review", "check"));
    let route = format!("/brain/acme/project/shop/workflows/runs/{run}/graph");

    let r = s.get(&route, Some(ACME_READ)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    let graph: Value = r.json().await.unwrap();
    assert_eq!(ids(&graph, "nodes", "id"), ["review", "done"]);
    assert_eq!(ids(&graph, "edges", "label"), ["approved", "rejected"]);
    // The document's own graph is the new one.
    let now: Value = s
        .get("/brain/acme/project/shop/workflows/ask/graph", Some(ACME))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(ids(&now, "nodes", "id"), ["check", "done"]);

    let mermaid = s
        .get(&format!("{route}?format=mermaid"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(mermaid.status(), 200);
    assert!(mermaid.text().await.unwrap().contains("review"));
    assert_eq!(
        code(
            s.get(&format!("{route}?format=svg"), Some(ACME))
                .send()
                .await
                .unwrap()
        )
        .await,
        (400, "MAG-GR001".into())
    );

    // Another tenant, another project, no token, an id that is none: no run is found.
    let other = format!("/brain/globex/project/shop/workflows/runs/{run}/graph");
    assert_eq!(
        s.get(&other, Some(GLOBEX)).send().await.unwrap().status(),
        404
    );
    assert_eq!(
        s.get(&route, Some(GLOBEX)).send().await.unwrap().status(),
        404
    );
    assert_eq!(s.get(&route, None).send().await.unwrap().status(), 401);
    let none = "/brain/acme/project/shop/workflows/runs/not-a-run/graph";
    assert_eq!(s.get(none, Some(ACME)).send().await.unwrap().status(), 404);
}

#[tokio::test]
async fn a_code_workflows_run_has_no_graph() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("acme/shop/_vance/workflows")).unwrap();
    let engine = Engine::builder()
        .store(Arc::new(MemoryStore::new()))
        .workflow(WorkflowRegistration::new("coded", "7", |_, _| async {
            Ok(json!("coded"))
        }));
    let (addr, handle) = magrathea_server::Server::new(engine, &root)
        .addr("127.0.0.1:0".parse().unwrap())
        .access(magrathea_server::Access::InsecureNoAuth)
        .serve()
        .await
        .unwrap();
    let base = format!("http://{addr}/brain/acme/project/shop/workflows");
    let client = reqwest::Client::new();
    let started: Value = client
        .post(format!("{base}/coded/start"))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = started["workflowRunId"].as_str().unwrap().to_owned();
    handle.engine().wait(id.parse().unwrap()).await.unwrap();
    let r = client
        .get(format!("{base}/runs/{id}/graph"))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-NO-GRAPH".into()));
}
