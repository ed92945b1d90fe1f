//! Rerunning a run: the same parameters, on the current document or on the frozen one.

use crate::http_common;

use http_common::{ACME, GLOBEX, Server, write};
use serde_json::{Value, json};

const V1: &str = "parameters:\n  n: { type: integer, required: true }\nstart: done\nstates:\n  done: { type: terminal, result: { version: 1, n: \"${params.n}\" } }\n";
const V2: &str = "parameters:\n  n: { type: integer, required: true }\nstart: done\nstates:\n  done: { type: terminal, result: { version: 2, n: \"${params.n}\" } }\n";

async fn rerun(s: &Server, run: &str, body: Value, token: &str) -> (u16, Value) {
    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/rerun"),
            Some(token),
        )
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_rerun_takes_the_same_parameters_on_the_current_or_the_frozen_definition() {
    let s = Server::start().await;
    let doc = s.root.join("acme/shop/_vance/workflows/versioned.yaml");
    write(&doc, V1);
    let first = s.start_run("shop", "versioned", json!({"n": 7})).await;
    s.wait_status("shop", &first, &["DONE"]).await;
    write(&doc, V2);

    let (status, current) = rerun(&s, &first, json!({}), ACME).await;
    assert_eq!(status, 202, "{current}");
    assert_eq!(current["rerunOf"], first.as_str());
    assert_eq!(current["definition"], "current");
    let id = current["workflowRunId"].as_str().unwrap();
    let view = s.wait_status("shop", id, &["DONE"]).await;
    assert_eq!(view["params"], json!({"n": 7}));
    assert_eq!(view["result"]["version"], 2);
    assert_eq!(view["startedBy"], "alice");

    let (status, frozen) = rerun(&s, &first, json!({"definition": "frozen"}), ACME).await;
    assert_eq!(status, 202, "{frozen}");
    let id = frozen["workflowRunId"].as_str().unwrap();
    let view = s.wait_status("shop", id, &["DONE"]).await;
    assert_eq!(view["result"]["version"], 1, "the original's definition");

    let origin: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{id}/origin"),
            Some(ACME),
        )
        .await;
    assert_eq!(origin, json!({"rerunOf": first, "definition": "frozen"}));

    let (status, _) = rerun(&s, &first, json!({"definition": "latest"}), ACME).await;
    assert_eq!(status, 400);
    // Another tenant cannot rerun it.
    let (status, _) = rerun(&s, &first, json!({}), GLOBEX).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_sub_run_is_not_rerun_on_its_own() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/parent.yaml"),
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: hello\n    on: { success: done }\n  done: { type: terminal, result: called }\n",
    );
    let parent = s.start_run("shop", "parent", json!({})).await;
    s.wait_status("shop", &parent, &["DONE"]).await;
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{parent}/journal"),
            Some(ACME),
        )
        .await;
    let child = journal
        .iter()
        .find(|e| e["type"] == "ChildStartedRecord")
        .and_then(|e| e["childRunId"].as_str())
        .unwrap_or_else(|| panic!("no child in {journal:?}"))
        .to_owned();

    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{child}/rerun"),
            Some(ACME),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let (status, code) = http_common::code(r).await;
    assert_eq!((status, code.as_str()), (400, "MAG-HTTP-RERUN-CHILD"));
    // The parent itself can be rerun.
    let (status, body) = rerun(&s, &parent, json!({}), ACME).await;
    assert_eq!(status, 202, "{body}");
}

/// A rerun sent again with its `Idempotency-Key` (a client retrying after a timeout) gets the
/// same new run, on either definition; another key, another run.
#[tokio::test]
async fn a_rerun_with_the_same_idempotency_key_reruns_once() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/versioned.yaml"),
        V1,
    );
    let first = s.start_run("shop", "versioned", json!({"n": 7})).await;
    s.wait_status("shop", &first, &["DONE"]).await;
    let send = |key: &'static str, body: Value| {
        s.post(
            &format!("/brain/acme/project/shop/workflows/runs/{first}/rerun"),
            Some(ACME),
        )
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
    };
    for (key, body) in [
        ("again-1", json!({})),
        ("again-2", json!({"definition": "frozen"})),
    ] {
        let answers = futures::future::join_all((0..5).map(|_| send(key, body.clone()))).await;
        http_common::one_run_for_the_key(answers).await;
        let again = send(key, body).await.unwrap();
        assert_eq!(again.status(), 200);
    }
    // Sent again with the other definition, the answer is the run the key started, on the
    // definition it started on.
    let again = send("again-1", json!({"definition": "frozen"}))
        .await
        .unwrap();
    assert_eq!(again.status(), 200);
    let v: Value = again.json().await.unwrap();
    assert_eq!(v["definition"], "current", "{v}");
    let again = send("again-2", json!({})).await.unwrap();
    let v: Value = again.json().await.unwrap();
    assert_eq!(v["definition"], "frozen", "{v}");
    let list: Vec<Value> = s
        .get_json(
            "/brain/acme/project/shop/workflows/runs?workflow=versioned",
            Some(ACME),
        )
        .await;
    assert_eq!(list.len(), 3, "the first run and one rerun per key");
}
