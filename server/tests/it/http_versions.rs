//! Versions over real HTTP: drafts started only explicitly, publish with history by content
//! hash, the versions listing, archive refusing new starts while running runs finish, and the
//! version (`definitionHash`, `draft`) each run records.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const DRAFT: &str = r#"
description: the draft
start: done
states:
  done: { type: terminal, result: from-draft }
"#;

fn sha(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn vance(s: &Server, file: &str) -> std::path::PathBuf {
    s.root.join("acme/shop/_vance").join(file)
}

async fn start(s: &Server, name: &str, body: Value, query: &str) -> reqwest::Response {
    s.post(
        &format!("/brain/acme/project/shop/workflows/{name}/start{query}"),
        Some(ACME),
    )
    .json(&body)
    .send()
    .await
    .unwrap()
}

async fn started_run(r: reqwest::Response) -> String {
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let body: Value = r.json().await.unwrap();
    body["workflowRunId"].as_str().unwrap().to_string()
}

async fn post(s: &Server, path: &str, token: &str) -> reqwest::Response {
    s.post(
        &format!("/brain/acme/project/shop/workflows/{path}"),
        Some(token),
    )
    .send()
    .await
    .unwrap()
}

#[tokio::test]
async fn a_draft_is_started_only_explicitly_and_its_run_says_it_ran_a_draft() {
    let s = Server::start().await;
    write(&vance(&s, "workflow-drafts/fresh.yaml"), DRAFT);
    // A plain start does not find a workflow that exists only as a draft.
    let r = start(&s, "fresh", json!({}), "").await;
    assert_eq!(code(r).await, (404, "MAG-HTTP-WORKFLOW-NOT-FOUND".into()));

    for (body, query) in [(json!({"draft": true}), ""), (json!({}), "?draft=true")] {
        let run = started_run(start(&s, "fresh", body, query).await).await;
        let v = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
        assert_eq!(v["result"], "from-draft", "{v}");
        assert_eq!(v["draft"], true, "{v}");
        assert_eq!(v["definitionHash"], sha(DRAFT), "{v}");
    }

    // Beside a live document, a plain start runs the live one and says it is no draft.
    write(&vance(&s, "workflow-drafts/hello.yaml"), DRAFT);
    let run = s.start_run("shop", "hello", json!({})).await;
    let v = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(v["result"], "greeted", "{v}");
    assert_eq!(v["draft"], false, "{v}");
    assert_eq!(v["definitionHash"], sha(HELLO), "{v}");

    // A draft start of a workflow without a draft is refused, and names the draft's place.
    let r = start(&s, "approve", json!({"draft": true}), "").await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "MAG-VR002", "{body}");
    let msg = body["error"]["message"].as_str().unwrap();
    assert!(msg.contains("_vance/workflow-drafts/approve.yaml"), "{msg}");
    assert!(!msg.contains(s.root.to_str().unwrap()), "{msg}");
}

#[tokio::test]
async fn the_run_list_shows_each_runs_definition_hash() {
    let s = Server::start().await;
    let run = s.start_run("shop", "hello", json!({})).await;
    s.wait_status("shop", &run, &["DONE"]).await;
    let runs: Vec<Value> = s
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    let mine = runs.iter().find(|r| r["workflowRunId"] == run).unwrap();
    assert_eq!(mine["definitionHash"], sha(HELLO), "{mine}");
    assert_eq!(mine["draft"], false, "{mine}");
}

#[tokio::test]
async fn publish_makes_the_draft_live_and_keeps_the_old_text_under_its_hash() {
    let s = Server::start().await;
    write(&vance(&s, "workflow-drafts/hello.yaml"), DRAFT);
    let r = post(&s, "hello/publish", ACME_WRITE).await;
    assert_eq!(r.status(), 200);
    let p: Value = r.json().await.unwrap();
    assert_eq!(
        p,
        json!({"name": "hello", "version": sha(DRAFT), "previous": sha(HELLO)})
    );
    assert_eq!(
        std::fs::read_to_string(vance(&s, "workflows/hello.yaml")).unwrap(),
        DRAFT
    );
    assert!(!vance(&s, "workflow-drafts/hello.yaml").exists());
    let kept = vance(&s, &format!("workflow-history/hello/{}.yaml", sha(HELLO)));
    assert_eq!(std::fs::read_to_string(kept).unwrap(), HELLO);

    // New runs start from the published text.
    let run = s.start_run("shop", "hello", json!({})).await;
    let v = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(v["result"], "from-draft", "{v}");
    assert_eq!(v["definitionHash"], sha(DRAFT), "{v}");

    // The listing: the live version first, then the history.
    let listed: Value = s
        .get_json(
            "/brain/acme/project/shop/workflows/hello/versions",
            Some(ACME_READ),
        )
        .await;
    let versions = listed["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 2, "{listed}");
    assert_eq!(versions[0]["state"], "live");
    assert_eq!(versions[0]["hash"], sha(DRAFT));
    assert_eq!(versions[0]["size"], DRAFT.len());
    assert_eq!(versions[1]["state"], "history");
    assert_eq!(versions[1]["hash"], sha(HELLO));
    assert!(versions[1]["at"].as_str().is_some(), "{listed}");
    assert_eq!(listed["archived"], false);
    assert_eq!(listed["draft"], false);

    // Publishing again without a draft is refused.
    let r = post(&s, "hello/publish", ACME_WRITE).await;
    assert_eq!(code(r).await, (404, "MAG-VR002".into()));
}

#[tokio::test]
async fn publishing_an_invalid_draft_is_refused_with_diagnostics_and_changes_nothing() {
    let s = Server::start().await;
    write(&vance(&s, "workflow-drafts/hello.yaml"), BROKEN);
    let r = post(&s, "hello/publish", ACME).await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-VR003", "{body}");
    let diags = body["error"]["diagnostics"].as_array().unwrap();
    assert!(
        diags.iter().any(|d| d
            .as_str()
            .unwrap()
            .starts_with("acme/shop/_vance/workflow-drafts/hello.yaml:")),
        "{body}"
    );
    assert_eq!(
        std::fs::read_to_string(vance(&s, "workflows/hello.yaml")).unwrap(),
        HELLO
    );
    assert_eq!(
        std::fs::read_to_string(vance(&s, "workflow-drafts/hello.yaml")).unwrap(),
        BROKEN
    );
    assert!(!vance(&s, "workflow-history").exists());
}

#[tokio::test]
async fn publish_and_archive_need_workflow_write_and_another_tenant_gets_404() {
    let s = Server::start().await;
    write(&vance(&s, "workflow-drafts/hello.yaml"), DRAFT);
    for path in ["hello/publish", "hello/archive", "hello/unarchive"] {
        for token in [ACME_READ, ACME_RUN] {
            let r = post(&s, path, token).await;
            assert_eq!(r.status(), 403, "{path} with {token}");
        }
    }
    let r = s
        .get(
            "/brain/acme/project/shop/workflows/hello/versions",
            Some(ACME_RUN),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // Another tenant's token on acme's routes: as if nothing were there.
    for path in ["hello/publish", "hello/archive", "hello/unarchive"] {
        let r = post(&s, path, GLOBEX).await;
        assert_eq!(r.status(), 404, "{path}");
    }
    let r = s
        .get(
            "/brain/acme/project/shop/workflows/hello/versions",
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = s
        .post(
            "/brain/acme/project/shop/workflows/hello/start?draft=true",
            Some(GLOBEX),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Nothing changed.
    assert_eq!(
        std::fs::read_to_string(vance(&s, "workflows/hello.yaml")).unwrap(),
        HELLO
    );
    assert!(!vance(&s, "workflow-state/hello.yaml").exists());
    // globex's own project of the same name is its own: unknown workflows there are 404.
    let r = s
        .get(
            "/brain/globex/project/shop/workflows/nope/versions",
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-WORKFLOW-NOT-FOUND".into()));
}

#[tokio::test]
async fn an_archived_workflow_refuses_new_starts_while_a_running_run_finishes() {
    let s = Server::start().await;
    let running = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &running, &["WAITING"]).await;
    // A run cancelled before the archive, to retry after it.
    let stopped = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &stopped, &["WAITING"]).await;
    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{stopped}/cancel"),
            Some(ACME),
        )
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    s.wait_status("shop", &stopped, &["CANCELLED"]).await;

    let r = post(&s, "approve/archive", ACME_WRITE).await;
    assert_eq!(r.status(), 200);
    let a: Value = r.json().await.unwrap();
    assert_eq!(a, json!({"name": "approve", "archived": true}));

    let r = start(&s, "approve", json!({}), "").await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "MAG-VR001");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("archived"),
        "{body}"
    );
    let listed: Value = s
        .get_json(
            "/brain/acme/project/shop/workflows/approve/versions",
            Some(ACME),
        )
        .await;
    assert_eq!(listed["archived"], true, "{listed}");

    // The run started before the archive finishes.
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == running)
        .expect("the running run's gate is pending");
    let r = s
        .post(
            &format!(
                "/brain/acme/project/shop/inbox/{}/answer",
                item["id"].as_str().unwrap()
            ),
            Some(ACME),
        )
        .json(&json!({"kind": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v = s.wait_status("shop", &running, &["DONE", "FAILED"]).await;
    assert_eq!(v["result"], "approved", "{v}");

    // Started again on its frozen definition, a run is a new start too: refused.
    for (run, action, body) in [
        (&running, "rerun", json!({"definition": "frozen"})),
        (&running, "rerun", json!({})),
        (&stopped, "retry", json!({"definition": "frozen"})),
        (&stopped, "retry", json!({"definition": "current"})),
    ] {
        let r = s
            .post(
                &format!("/brain/acme/project/shop/workflows/runs/{run}/{action}"),
                Some(ACME),
            )
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = r.status();
        let answer: Value = r.json().await.unwrap();
        assert_eq!(status, 409, "{action} {body}: {answer}");
        assert_eq!(answer["error"]["code"], "MAG-VR001", "{answer}");
    }

    // Another project of the tenant is not archived by this one's marker.
    let other = s.start_run("lab", "approve", json!({})).await;
    s.wait_status("lab", &other, &["WAITING"]).await;

    // Unarchived, it starts again.
    let r = post(&s, "approve/unarchive", ACME_WRITE).await;
    assert_eq!(r.status(), 200);
    let again = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &again, &["WAITING"]).await;
}

#[tokio::test]
async fn a_workflow_task_starting_an_archived_workflow_fails_with_a_clear_error() {
    let s = Server::start().await;
    write(
        &vance(&s, "workflows/parent.yaml"),
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: hello\n    on: { success: done }\n  done: { type: terminal, result: called }\n",
    );
    let r = post(&s, "hello/archive", ACME).await;
    assert_eq!(r.status(), 200);
    let run = s.start_run("shop", "parent", json!({})).await;
    let v = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(v["status"], "FAILED", "{v}");
    // The child's start failed with the archive's error, and the journal keeps it.
    let journal: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    assert!(journal.to_string().contains("[MAG-VR001]"), "{journal}");
}

#[tokio::test]
async fn archiving_an_unknown_workflow_is_404() {
    let s = Server::start().await;
    let r = post(&s, "nope/archive", ACME).await;
    assert_eq!(code(r).await, (404, "MAG-HTTP-WORKFLOW-NOT-FOUND".into()));
    assert!(!vance(&s, "workflow-state/nope.yaml").exists());
}

#[tokio::test]
async fn the_documents_api_cannot_overwrite_the_history_but_stores_drafts() {
    let s = Server::start().await;
    write(&vance(&s, "workflow-drafts/hello.yaml"), DRAFT);
    let r = post(&s, "hello/publish", ACME).await;
    assert_eq!(r.status(), 200);
    let entry = format!("workflow-history/hello/{}.yaml", sha(HELLO));
    let r = s
        .client
        .put(s.url(&format!("/brain/acme/project/shop/documents/{entry}")))
        .bearer_auth(ACME)
        .body("tampered")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (409, "MAG-VR005".into()));
    assert_eq!(std::fs::read_to_string(vance(&s, &entry)).unwrap(), HELLO);

    // A draft is written through the documents API, then published.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflow-drafts/hello.yaml"))
        .bearer_auth(ACME_WRITE)
        .body(HELLO)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let p: Value = s
        .post(
            "/brain/acme/project/shop/workflows/hello/publish",
            Some(ACME_WRITE),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // The first text is live again; the text it replaces is kept in the history in its turn.
    assert_eq!(p["version"], sha(HELLO), "{p}");
    assert_eq!(p["previous"], sha(DRAFT), "{p}");
}

#[tokio::test]
async fn a_schedule_of_an_archived_workflow_records_a_refused_delivery() {
    let s = Server::start().await;
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/scheduler/nightly.yaml"))
        .bearer_auth(ACME)
        .body("cron: \"0 3 * * *\"\nworkflow: hello\n")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let r = post(&s, "hello/archive", ACME).await;
    assert_eq!(r.status(), 200);
    // Listed as not active while its workflow is archived, with no next fire time.
    let listed: Value = s
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    let nightly = &listed["triggers"][0];
    assert_eq!(nightly["name"], "nightly", "{listed}");
    assert_eq!(nightly["active"], false, "{listed}");
    assert_eq!(nightly["workflowArchived"], true, "{listed}");
    assert_eq!(nightly["nextFireAt"], Value::Null, "{listed}");
    // Fired by hand, it answers as a start of an archived workflow does.
    let r = s
        .post(
            "/brain/acme/project/shop/schedules/nightly/trigger",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "MAG-VR001", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("[MAG-VR001]"), "{body}");
    let deliveries: Value = s
        .get_json("/brain/acme/project/shop/triggers/deliveries", Some(ACME))
        .await;
    assert!(
        deliveries.to_string().contains("[MAG-VR001]"),
        "{deliveries}"
    );
    // Unarchived, it is active again.
    let r = post(&s, "hello/unarchive", ACME).await;
    assert_eq!(r.status(), 200);
    let listed: Value = s
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    assert_eq!(listed["triggers"][0]["active"], true, "{listed}");
    assert_eq!(listed["triggers"][0]["workflowArchived"], false, "{listed}");
}
