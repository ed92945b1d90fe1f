//! Publishing a draft that carries trigger documents (as a Friday graph's trigger nodes
//! import): they go live with it, credited to whoever published, and only a token that may
//! run workflows may publish them; an invalid one, or one starting another workflow, refuses
//! the publish and changes nothing.

use crate::http_common;

use http_common::{ACME, ACME_WRITE, Server};
use serde_json::Value;

/// Approved by alice or runner, never by whoever requested the run.
const GUARDED: &str = "start: review\nstates:\n  review:\n    type: gate_task\n    inbox:\n      kind: APPROVAL\n      title: Deploy?\n      approvers: { users: [alice, runner] }\n      selfApproval: false\n    on:\n      approved: done\n  done: { type: terminal, result: deployed }\n";

const PATH_TOKEN: &str = "0a2b4c6d8e0f1a3b5e7f9a1b3c5d7e9f";
const CARRIED: &str = "workflow-drafts/deploy.triggers/events/deploy-hook.yaml";
const HOOK: &str = "workflow: deploy\nparams: { triggerNodeId: hook }\nwebhook:\n  tokenSetting: webhooks.deploy-hook.path\n";

async fn put(s: &Server, path: &str, token: &str, body: &str) {
    let (status, text) = s.put_document(path, token, body).await;
    assert!((200..300).contains(&status), "{path}: {text}");
}

async fn publish(s: &Server, token: &str) -> (u16, Value) {
    let r = s
        .post(
            "/brain/acme/project/shop/workflows/deploy/publish",
            Some(token),
        )
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

fn vance(s: &Server, file: &str) -> std::path::PathBuf {
    s.root.join("acme/shop/_vance").join(file)
}

#[tokio::test]
async fn publishing_makes_the_drafts_triggers_live_credited_to_the_publisher() {
    let s = Server::start().await;
    // A token that may write documents but not run workflows drafts the workflow and its
    // webhook: drafts start nothing.
    put(&s, "workflow-drafts/deploy.yaml", ACME_WRITE, GUARDED).await;
    put(&s, CARRIED, ACME_WRITE, HOOK).await;
    put(
        &s,
        "settings.yaml",
        ACME,
        &format!("webhooks:\n  deploy-hook:\n    path: {PATH_TOKEN}\n"),
    )
    .await;
    let webhook = || async {
        s.client
            .post(s.url(&format!("/v1/workflow-webhooks/{PATH_TOKEN}")))
            .body("{}")
            .send()
            .await
            .unwrap()
    };
    assert_eq!(
        webhook().await.status(),
        404,
        "a draft's webhook answers nothing"
    );

    // Publishing it would declare a trigger: that takes the right to run workflows.
    let (status, body) = publish(&s, ACME_WRITE).await;
    assert_eq!(status, 403, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("_vance/events/deploy-hook.yaml") && message.contains("workflow.run"),
        "{message}"
    );
    assert!(vance(&s, "workflow-drafts/deploy.yaml").exists());
    assert!(vance(&s, CARRIED).exists());
    assert!(!vance(&s, "workflows/deploy.yaml").exists());
    assert!(!vance(&s, "events/deploy-hook.yaml").exists());

    let (status, body) = publish(&s, ACME).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["triggers"],
        serde_json::json!(["_vance/events/deploy-hook.yaml"])
    );
    assert_eq!(body["warnings"], serde_json::json!([]), "{body}");
    assert!(!vance(&s, CARRIED).exists());
    assert_eq!(
        std::fs::read_to_string(vance(&s, "events/deploy-hook.yaml")).unwrap(),
        HOOK
    );
    let listed: Value = s
        .get_json("/v1/workflows/shop:deploy/triggers", Some(ACME))
        .await;
    let hooks: Vec<&Value> = listed["triggers"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter(|t| t["name"] == "deploy-hook")
        .collect();
    assert_eq!(hooks.len(), 1, "{listed}");
    assert_eq!(hooks[0]["triggerType"], "webhook", "{listed}");
    assert_eq!(hooks[0]["active"], true, "{listed}");
    assert_eq!(hooks[0]["writtenBy"], "alice", "the publisher: {listed}");
    assert_eq!(hooks[0]["triggerNodeId"], "hook", "{listed}");

    // The webhook starts the published workflow, requested by its publisher, who therefore
    // may not approve it.
    let r = webhook().await;
    assert_eq!(r.status(), 202);
    let started: Value = r.json().await.unwrap();
    let run = started["workflowRunId"].as_str().unwrap();
    let view = s.wait_status("shop", run, &["WAITING"]).await;
    assert_eq!(view["requestedBy"], "alice", "{view}");
    assert_eq!(view["params"]["triggerNodeId"], "hook", "{view}");
}

#[tokio::test]
async fn a_drafts_invalid_or_foreign_trigger_refuses_the_publish_and_changes_nothing() {
    let s = Server::start().await;
    put(&s, "workflow-drafts/deploy.yaml", ACME, GUARDED).await;
    let carried = "workflow-drafts/deploy.triggers/scheduler/nightly.yaml";
    for (text, says) in [
        (
            "cron: \"0 0 6 * * *\"\nworkflow: hello\n",
            "starts the workflow 'hello'",
        ),
        ("cron: \"every day\"\nworkflow: deploy\n", "cron"),
    ] {
        put(&s, carried, ACME, text).await;
        let (status, body) = publish(&s, ACME).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "MAG-VR003", "{body}");
        let diags = body["error"]["diagnostics"].to_string();
        assert!(
            diags.contains(
                "acme/shop/_vance/workflow-drafts/deploy.triggers/scheduler/nightly.yaml"
            ) && diags.contains(says),
            "{body}"
        );
        assert!(!diags.contains(s.root.to_str().unwrap()), "{body}");
        assert!(vance(&s, "workflow-drafts/deploy.yaml").exists());
        assert!(!vance(&s, "workflows/deploy.yaml").exists());
        assert!(!vance(&s, "scheduler/nightly.yaml").exists());
    }

    // A hook (JavaScript) beside them is not published with a draft: it is refused, not
    // dropped with the directory.
    s.client
        .delete(s.url(&format!("/brain/acme/project/shop/documents/{carried}")))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    let hook = "workflow-drafts/deploy.triggers/hooks/h.yaml";
    put(&s, hook, ACME, "on: workflow.run.failed\nscript: h.js\n").await;
    let (status, body) = publish(&s, ACME).await;
    assert_eq!(status, 422, "{body}");
    let diags = body["error"]["diagnostics"].to_string();
    assert!(
        diags.contains("acme/shop/_vance/workflow-drafts/deploy.triggers/hooks")
            && diags.contains("scheduler/ and events/ only"),
        "{body}"
    );
    assert!(vance(&s, hook).exists());
    assert!(!vance(&s, "workflows/deploy.yaml").exists());
    std::fs::remove_dir_all(vance(&s, "workflow-drafts/deploy.triggers/hooks")).unwrap();

    // A webhook whose path token is not in the settings yet is published, inactive, and the
    // reply says what is missing.
    put(&s, CARRIED, ACME, HOOK).await;
    let (status, body) = publish(&s, ACME).await;
    assert_eq!(status, 200, "{body}");
    let warnings = body["warnings"].to_string();
    assert!(
        warnings.contains("_vance/events/deploy-hook.yaml")
            && warnings.contains("MAG-TR002")
            && warnings.contains("webhooks.deploy-hook.path"),
        "{body}"
    );
}
