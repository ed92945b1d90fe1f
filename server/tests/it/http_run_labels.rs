//! The run DTO of `GET …/workflows/runs` and `GET …/workflows/runs/{run_id}` carries the
//! workflow document's `description` and `tags` (reference §2.1) and its version as written;
//! a code workflow has no document: `description` is `null`, `tags` is `[]`.

use std::sync::Arc;

use magrathea_core::{Engine, MemoryStore, WorkflowRegistration};
use magrathea_server::{Access, Server};
use serde_json::{Value, json};

const LABELLED: &str = r#"
description: Ships a release.
version: 1.10
tags: [release, ops]
start: done
states:
  done: { type: terminal, result: shipped }
"#;

#[tokio::test]
async fn runs_show_the_documents_description_and_tags_and_code_runs_show_none() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let dir = root.join("acme/shop/_vance/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("labelled.yaml"), LABELLED).unwrap();
    let engine = Engine::builder()
        .store(Arc::new(MemoryStore::new()))
        .workflow(WorkflowRegistration::new("coded", "7", |_, _| async {
            Ok(json!("coded"))
        }));
    let (addr, handle) = Server::new(engine, &root)
        .addr("127.0.0.1:0".parse().unwrap())
        .access(Access::InsecureNoAuth)
        .serve()
        .await
        .unwrap();
    let base = format!("http://{addr}/brain/acme/project/shop/workflows");
    let client = reqwest::Client::new();

    let mut ids = Vec::new();
    for name in ["labelled", "coded"] {
        let started: Value = client
            .post(format!("{base}/{name}/start"))
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = started["workflowRunId"].as_str().unwrap().to_owned();
        let run_id = id.parse().unwrap();
        handle.engine().wait(run_id).await.unwrap();
        ids.push(id);
    }

    let yaml: Value = client
        .get(format!("{base}/runs/{}", ids[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(yaml["status"], "DONE", "{yaml}");
    assert_eq!(yaml["workflowVersion"], "1.10");
    assert_eq!(yaml["description"], "Ships a release.");
    assert_eq!(yaml["tags"], json!(["release", "ops"]));

    let code: Value = client
        .get(format!("{base}/runs/{}", ids[1]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(code["status"], "DONE", "{code}");
    assert_eq!(code["workflowVersion"], "7");
    assert_eq!(code.get("description"), Some(&Value::Null), "{code}");
    assert_eq!(code["tags"], json!([]));

    // The list shows the same objects, newest first.
    let list: Value = client
        .get(format!("{base}/runs"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list, json!([code, yaml]));

    handle.shutdown().await.unwrap();
}
