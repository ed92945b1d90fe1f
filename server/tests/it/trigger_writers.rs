//! Who wrote a trigger document through the API is the requester of the runs it starts: a
//! gate's `selfApproval: false` refuses them, whoever the run is started as (a webhook, or a
//! schedule's `runAs`), so one token cannot start a guarded workflow through a trigger and
//! approve it itself. A document changed on disk since has no known writer.

use crate::http_common;

use http_common::{ACME, ACME_RUN, Server, trigger, write};
use serde_json::Value;

/// Approved by alice or runner, never by whoever started or requested the run.
const GUARDED: &str = "start: review\nstates:\n  review:\n    type: gate_task\n    inbox:\n      kind: APPROVAL\n      title: Deploy?\n      approvers: { users: [alice, runner] }\n      selfApproval: false\n    on:\n      approved: done\n  done: { type: terminal, result: deployed }\n";

const PATH_TOKEN: &str = "5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a3b";
const HOOK: &str = "workflow: guarded\nwebhook:\n  tokenSetting: webhooks.deploy.path\n";

async fn put(s: &Server, path: &str, body: &str) {
    let (status, text) = s.put_document(path, ACME, body).await;
    assert!((200..300).contains(&status), "{path}: {text}");
}

async fn deliver(s: &Server) -> String {
    let r = s
        .client
        .post(s.url(&format!("/v1/workflow-webhooks/{PATH_TOKEN}")))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let v: Value = r.json().await.unwrap();
    v["workflowRunId"].as_str().unwrap().to_owned()
}

async fn approve(s: &Server, run: &str, token: &str) -> (u16, String) {
    let r = s
        .post(
            &format!("/v1/workflow-approvals/{run}-2/approve"),
            Some(token),
        )
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test]
async fn the_writer_of_a_trigger_document_requests_its_runs_and_may_not_approve_them() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/guarded.yaml"),
        GUARDED,
    );
    put(
        &s,
        "settings.yaml",
        &format!("webhooks:\n  deploy:\n    path: {PATH_TOKEN}\n"),
    )
    .await;
    // alice writes a webhook for the guarded workflow and calls it.
    put(&s, "events/deploy.yaml", HOOK).await;
    assert_eq!(trigger(&s, "deploy").await["writtenBy"], "alice");
    let run = deliver(&s).await;
    let view = s.wait_status("shop", &run, &["WAITING"]).await;
    assert_eq!(view["startedBy"], "webhook:deploy", "{view}");
    assert_eq!(view["requestedBy"], "alice", "{view}");
    let (status, body) = approve(&s, &run, ACME).await;
    assert_eq!(
        status, 403,
        "alice approving what her webhook started: {body}"
    );
    assert!(body.contains("selfApproval"), "{body}");
    let (status, body) = approve(&s, &run, ACME_RUN).await;
    assert_eq!(status, 200, "{body}");
    let view = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(view["result"], "deployed");

    // A schedule alice writes to run as carol: carol is its runs' starter, alice their
    // requester.
    put(
        &s,
        "scheduler/nightly.yaml",
        "cron: \"* * * * * *\"\nworkflow: guarded\nrunAs: carol\noverlap: skip\n",
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let ticked = loop {
        let d: Value = s
            .get_json(
                "/brain/acme/project/shop/triggers/deliveries?trigger=nightly&status=accepted",
                Some(ACME),
            )
            .await;
        if let Some(run) = d["deliveries"][0]["workflowRunId"].as_str() {
            break run.to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "no tick: {d}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    // No further ticks.
    put(
        &s,
        "scheduler/nightly.yaml",
        "cron: \"0 0 1 1 *\"\nworkflow: guarded\n",
    )
    .await;
    let view = s.wait_status("shop", &ticked, &["WAITING"]).await;
    assert_eq!(view["startedBy"], "carol", "{view}");
    assert_eq!(view["requestedBy"], "alice", "{view}");
    let (status, body) = approve(&s, &ticked, ACME).await;
    assert_eq!(status, 403, "{body}");

    // Changed on disk, the webhook's document has no known writer any more.
    write(
        &s.root.join("acme/shop/_vance/events/deploy.yaml"),
        &format!("{HOOK}# edited on disk\n"),
    );
    let r = s
        .post("/brain/acme/project/shop/triggers/resync", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(trigger(&s, "deploy").await.get("writtenBy").is_none());
    let run = deliver(&s).await;
    let view = s.wait_status("shop", &run, &["WAITING"]).await;
    assert!(view.get("requestedBy").is_none_or(Value::is_null), "{view}");
}
