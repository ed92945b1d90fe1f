//! `DELETE …/documents/{*path}`: a removed workflow cannot be started, a removed trigger
//! document stops its trigger at once, removing takes the scopes writing takes, and nothing
//! outside the project (nor the history of published versions) is removed.

use crate::http_common;

use std::os::unix::fs::symlink;

use http_common::{ACME, ACME_READ, ACME_WRITE, GLOBEX, HELLO, Server};
use serde_json::{Value, json};

const DOCS: &str = "/brain/acme/project/shop/documents";

/// DELETEs a document; the status and the body's text.
async fn delete(s: &Server, path: &str, token: &str) -> (u16, String) {
    let r = s
        .client
        .delete(s.url(&format!("{DOCS}/{path}")))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn put(s: &Server, path: &str, token: &str, text: &str) -> u16 {
    s.client
        .put(s.url(&format!("{DOCS}/{path}")))
        .bearer_auth(token)
        .body(text.to_owned())
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn a_removed_workflow_is_gone_and_cannot_be_started() {
    let s = Server::start().await;
    assert_eq!(
        put(&s, "workflows/other.yaml", ACME_WRITE, HELLO).await,
        201
    );
    // Reading is not enough to remove, and another tenant's token reaches nothing here.
    for token in [ACME_READ, GLOBEX] {
        let (status, body) = delete(&s, "workflows/other.yaml", token).await;
        assert!(status == 403 || status == 404, "{status}: {body}");
    }
    assert!(
        s.root
            .join("acme/shop/_vance/workflows/other.yaml")
            .exists()
    );

    let (status, body) = delete(&s, "workflows/other.yaml", ACME_WRITE).await;
    assert_eq!(status, 204, "{body}");
    assert!(body.is_empty());
    assert!(
        !s.root
            .join("acme/shop/_vance/workflows/other.yaml")
            .exists()
    );
    let r = s
        .get(&format!("{DOCS}/workflows/other.yaml"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let r = s
        .post("/brain/acme/project/shop/workflows/other/start", Some(ACME))
        .json(&json!({"params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // Removing it again: there is nothing to remove.
    let (status, body) = delete(&s, "_vance/workflows/other.yaml", ACME).await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test]
async fn removing_a_schedule_needs_the_run_scope_and_unregisters_it_at_once() {
    let s = Server::start().await;
    let schedule = "cron: \"0 0 6 * * *\"\nworkflow: hello\n";
    assert_eq!(put(&s, "scheduler/nightly.yaml", ACME, schedule).await, 201);
    let listed: Value = s
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    assert_eq!(listed["triggers"].as_array().unwrap().len(), 1, "{listed}");

    let (status, body) = delete(&s, "scheduler/nightly.yaml", ACME_WRITE).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("workflow.run"), "{body}");
    let (status, body) = delete(&s, "settings.yaml", ACME_WRITE).await;
    assert_eq!(status, 403, "{body}");

    let (status, body) = delete(&s, "scheduler/nightly.yaml", ACME).await;
    assert_eq!(status, 204, "{body}");
    let listed: Value = s
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    assert_eq!(listed["triggers"], json!([]), "{listed}");
}

#[tokio::test]
async fn the_history_directories_and_what_lies_outside_the_project_are_not_removed() {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    std::fs::create_dir_all(vance.join("workflow-history")).unwrap();
    std::fs::write(vance.join("workflow-history/hello.abc.yaml"), HELLO).unwrap();
    let (status, body) = delete(&s, "workflow-history/hello.abc.yaml", ACME).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("MAG-VR005"), "{body}");
    assert!(vance.join("workflow-history/hello.abc.yaml").exists());

    let (status, body) = delete(&s, "workflows", ACME).await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("MAG-HTTP-NOT-A-DOCUMENT"), "{body}");
    assert!(vance.join("workflows/hello.yaml").exists());

    // A link leading out of the project is refused, and what it leads to stays.
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("precious.yaml");
    std::fs::write(&target, "keep me").unwrap();
    symlink(&target, vance.join("workflows/out.yaml")).unwrap();
    let (status, body) = delete(&s, "workflows/out.yaml", ACME).await;
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("MAG-HTTP-OUTSIDE-PROJECT"), "{body}");
    assert!(target.exists());
    // A link inside the project is removed itself, not the document it leads to.
    symlink("hello.yaml", vance.join("workflows/alias.yaml")).unwrap();
    let (status, body) = delete(&s, "workflows/alias.yaml", ACME).await;
    assert_eq!(status, 204, "{body}");
    assert!(std::fs::symlink_metadata(vance.join("workflows/alias.yaml")).is_err());
    assert!(vance.join("workflows/hello.yaml").exists());
    // Paths that climb out are refused before anything is looked up.
    let (status, _) = delete(&s, "workflows/..%2F..%2Fx", ACME).await;
    assert_eq!(status, 400);
}

/// What one token can leave on disk is bounded: a document path has at most eight names, and
/// the directories a document's write created go with it once they are empty (the project's
/// quota counts files), up to the directory of its kind.
#[tokio::test]
async fn removing_a_document_removes_the_directories_it_left_empty() {
    let s = Server::start().await;
    let scripts = s.root.join("acme/shop/_vance/scripts");
    assert_eq!(put(&s, "scripts/a/b/c/one.js", ACME, "1").await, 201);
    assert_eq!(put(&s, "scripts/a/kept.js", ACME, "2").await, 201);
    let (status, body) = delete(&s, "scripts/a/b/c/one.js", ACME).await;
    assert_eq!(status, 204, "{body}");
    assert!(!scripts.join("a/b").exists(), "b and c were left empty");
    assert!(scripts.join("a/kept.js").is_file());
    let (status, body) = delete(&s, "scripts/a/kept.js", ACME).await;
    assert_eq!(status, 204, "{body}");
    assert!(!scripts.join("a").exists());
    assert!(scripts.is_dir(), "the directory of its kind stays");

    let deep = "scripts/1/2/3/4/5/6/7/x.js";
    assert_eq!(put(&s, deep, ACME, "3").await, 400);
    assert!(!scripts.join("1").exists());
    assert_eq!(put(&s, "scripts/1/2/3/4/5/6/x.js", ACME, "3").await, 201);
}
