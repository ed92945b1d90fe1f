//! Internal events and hooks: an event subscription with a filter starts a run when a run of
//! its project fails, approval events reach subscriptions, and a hook script starts a run in
//! its own project and cannot reach another tenant.

use crate::http_common;

use std::time::{Duration, Instant};

use http_common::{ACME, GLOBEX, Server, write};
use serde_json::{Value, json};

const QUICK: &str = "start: done\nstates:\n  done: { type: terminal, result: ok }\n";
const FAILS: &str =
    "start: done\nstates:\n  done: { type: terminal, outcome: failure, result: { why: broken } }\n";

const ON_FAILURE: &str = r##"
workflow: quick
subscribe:
  event: workflow.run.failed
  filter: "#event['workflowName'] == 'deploy'"
params: { channel: ops }
"##;

const ON_APPROVAL: &str = r#"
workflow: quick
subscribe:
  event: workflow.approval.requested
"#;

const HOOK: &str = r##"
description: Start a follow-up for every failed deploy
on: workflow.run.failed
filter: "#event.workflowName == 'deploy'"
script: _vance/hooks/follow-up.js
"##;

const HOOK_JS: &str = r#"
let refused = null;
try {
  workflows.start("globex/shop/quick", {});
} catch (e) {
  refused = String(e);
}
const runId = workflows.start("quick", { failed: event.runId, refused: refused });
log.info("started follow-up", { runId });
"#;

async fn server(tenant_settings: &str) -> Server {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    write(&vance.join("workflows/quick.yaml"), QUICK);
    write(&vance.join("workflows/deploy.yaml"), FAILS);
    write(&vance.join("workflows/other.yaml"), FAILS);
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        tenant_settings,
    );
    s
}

async fn put(s: &Server, path: &str, body: &str) {
    let (status, text) = s.put_document(path, ACME, body).await;
    assert!((200..300).contains(&status), "{path}: {text}");
}

/// Runs of acme/shop started by `by`, waiting up to 30 s for at least `n`.
async fn runs_by(s: &Server, by: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let runs: Value = s
            .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
            .await;
        let found: Vec<Value> = runs
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["startedBy"] == by)
            .cloned()
            .collect();
        if found.len() >= n {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "no {n} runs started by {by}: {runs}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn deliveries(s: &Server, trigger: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let v: Value = s
            .get_json(
                &format!("/brain/acme/project/shop/triggers/deliveries?trigger={trigger}"),
                Some(ACME),
            )
            .await;
        let d = v["deliveries"].as_array().unwrap().clone();
        if d.len() >= n {
            return d;
        }
        assert!(
            Instant::now() < deadline,
            "no {n} deliveries of {trigger}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_failed_run_passing_the_filter_starts_the_subscribed_workflow() {
    let s = server(http_common::TENANT_SETTINGS).await;
    put(&s, "events/on-failure.yaml", ON_FAILURE).await;
    // A failure the filter leaves out, then one it lets through.
    let other = s.start_run("shop", "other", json!({})).await;
    s.wait_status("shop", &other, &["FAILED"]).await;
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    let started = runs_by(&s, "event:on-failure", 1).await;
    let params = &started[0]["params"];
    assert_eq!(params["channel"], "ops");
    assert_eq!(params["event"]["event"], "workflow.run.failed");
    assert_eq!(params["event"]["runId"], deploy.as_str());
    assert_eq!(params["event"]["workflowName"], "deploy");
    assert_eq!(params["event"]["tenant"], "acme");
    assert_eq!(params["event"]["status"], "FAILED");
    let d = deliveries(&s, "on-failure", 1).await;
    assert_eq!(d[0]["status"], "accepted");
    assert_eq!(d[0]["event"], "workflow.run.failed");
    // The other failure started nothing.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(runs_by(&s, "event:on-failure", 1).await.len(), 1);
}

/// A paused event document fires nothing from the moment the `PATCH` answers: its
/// subscription starts no run for an event that follows at once (the hub keeps a recent list
/// of subscriptions; it reads the matched one again), and its REST route answers 409, as for
/// `enabled: false`. Resuming it lets both through again.
#[tokio::test]
async fn a_paused_event_document_fires_nothing_from_the_moment_the_patch_answers() {
    let s = server(http_common::TENANT_SETTINGS).await;
    put(&s, "events/on-failure.yaml", ON_FAILURE).await;
    let patch = |enabled: bool| {
        s.client
            .patch(s.url("/brain/acme/project/shop/triggers/on-failure"))
            .bearer_auth(ACME)
            .json(&json!({ "enabled": enabled }))
            .send()
    };
    let route = "/brain/acme/event/shop/on-failure";

    // The hub reads its list of subscriptions with the first failure.
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    runs_by(&s, "event:on-failure", 1).await;

    let paused: Value = patch(false).await.unwrap().json().await.unwrap();
    assert_eq!(paused["active"], false, "{paused}");
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    let (status, body) = http_common::code(s.post(route, Some(ACME)).send().await.unwrap()).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body, "MAG-HTTP-TRIGGER-DISABLED");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(runs_by(&s, "event:on-failure", 1).await.len(), 1);
    assert_eq!(deliveries(&s, "on-failure", 1).await.len(), 1);

    patch(true).await.unwrap();
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    let (status, body) = http_common::code(s.post(route, Some(ACME)).send().await.unwrap()).await;
    assert_eq!(status, 202, "{body}");
    assert_eq!(runs_by(&s, "event:on-failure", 3).await.len(), 3);
}

/// A subscription written through the API hears the next event, also while the hub holds a
/// recent list of subscriptions read before the write.
#[tokio::test]
async fn a_subscription_written_through_the_api_hears_the_next_event() {
    let s = server(http_common::TENANT_SETTINGS).await;
    put(&s, "events/on-failure.yaml", ON_FAILURE).await;
    // The hub reads its list of subscriptions with this failure.
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    runs_by(&s, "event:on-failure", 1).await;

    put(&s, "events/also-on-failure.yaml", ON_FAILURE).await;
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    let started = runs_by(&s, "event:also-on-failure", 1).await;
    assert_eq!(started[0]["params"]["event"]["runId"], deploy.as_str());
    assert_eq!(
        deliveries(&s, "also-on-failure", 1).await[0]["status"],
        "accepted"
    );
}

#[tokio::test]
async fn another_projects_and_another_tenants_runs_do_not_reach_a_subscription() {
    let s = server(http_common::TENANT_SETTINGS).await;
    put(&s, "events/on-failure.yaml", ON_FAILURE).await;
    for (tenant, project, token) in [("acme", "lab", ACME), ("globex", "shop", GLOBEX)] {
        write(
            &s.root
                .join(format!("{tenant}/{project}/_vance/workflows/deploy.yaml")),
            FAILS,
        );
        let r: Value = s
            .client
            .post(s.url(&format!(
                "/brain/{tenant}/project/{project}/workflows/deploy/start"
            )))
            .bearer_auth(token)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(r["workflowRunId"].is_string(), "{r}");
    }
    // A run of acme/shop afterwards shows the hub is delivering.
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    let started = runs_by(&s, "event:on-failure", 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started_now = runs_by(&s, "event:on-failure", 1).await;
    assert_eq!(
        started_now.len(),
        1,
        "only acme/shop's own failure: {started_now:?}"
    );
    assert_eq!(started[0]["params"]["event"]["runId"], deploy.as_str());
}

#[tokio::test]
async fn an_approval_request_reaches_its_subscription() {
    let s = server(http_common::TENANT_SETTINGS).await;
    put(&s, "events/on-approval.yaml", ON_APPROVAL).await;
    let run = s.start_run("shop", "approve", json!({})).await;
    let started = runs_by(&s, "event:on-approval", 1).await;
    let event = &started[0]["params"]["event"];
    assert_eq!(event["event"], "workflow.approval.requested");
    assert_eq!(event["runId"], run.as_str());
    assert_eq!(event["title"], "Ship it?");
    assert!(event["itemId"].as_str().unwrap().starts_with(&run));
}

/// A hook document the server cannot register is written with a warning placed as every
/// diagnostic is: `path:line:column: [code] why`.
#[tokio::test]
async fn a_hook_that_cannot_be_registered_is_written_with_a_located_warning() {
    let s = server(http_common::TENANT_SETTINGS).await;
    let (status, text) = s
        .put_document(
            "hooks/typo.yaml",
            ACME,
            "on: workflow.run.failed\nscript: _vance/hooks/x.js\nfliter: \"true\"\n",
        )
        .await;
    assert_eq!(status, 201, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert!(
        answer["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().is_some_and(|w| w
                .starts_with("_vance/hooks/typo.yaml:3:1: [MAG-TR005] ")
                && w.contains("fliter"))),
        "{answer}"
    );
}

#[tokio::test]
async fn a_hook_does_not_run_where_the_tenant_does_not_allow_scripts() {
    let s = server(http_common::TENANT_SETTINGS).await;
    put(&s, "hooks/follow-up.js", HOOK_JS).await;
    // The write says so: the hook would never run.
    let (status, text) = s.put_document("hooks/follow-up.yaml", ACME, HOOK).await;
    assert_eq!(status, 201, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    let warnings = answer["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w.as_str().is_some_and(|w| {
            w.contains("hooks/follow-up.yaml: a hook runs a script")
                && w.contains("scripts_not_allowed")
        })),
        "{answer}"
    );
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    let d = deliveries(&s, "follow-up", 1).await;
    assert_eq!(d[0]["status"], "rejected");
    assert_eq!(d[0]["reason"], "scripts_not_allowed");
    assert!(
        d[0]["message"].as_str().unwrap().contains("scriptTask"),
        "{}",
        d[0]
    );
}

/// A hook runs its script as the project holds it when the event comes: a script edited
/// through the API runs from the next event on, though the hook's own document is unchanged.
#[tokio::test]
async fn an_edited_hook_script_runs_from_the_next_event() {
    let s = server("execution:\n  shellTask: true\n  scriptTask: true\n").await;
    put(&s, "hooks/follow-up.js", HOOK_JS).await;
    put(&s, "hooks/follow-up.yaml", HOOK).await;
    s.start_run("shop", "deploy", json!({})).await;
    let first = runs_by(&s, "hook:follow-up", 1).await;
    assert!(first[0]["params"]["failed"].is_string(), "{first:?}");

    put(
        &s,
        "hooks/follow-up.js",
        "workflows.start(\"quick\", { edited: event.runId });\n",
    )
    .await;
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    let started = runs_by(&s, "hook:follow-up", 2).await;
    let edited: Vec<&Value> = started
        .iter()
        .filter(|r| r["params"]["edited"].is_string())
        .collect();
    assert_eq!(edited.len(), 1, "{started:?}");
    assert_eq!(edited[0]["params"]["edited"], deploy.as_str());
}

/// A hook whose script is gone when its event comes fails that delivery, on record, rather
/// than doing nothing without a trace.
#[tokio::test]
async fn a_hook_whose_script_cannot_be_read_fails_its_delivery_on_record() {
    let s = server("execution:\n  shellTask: true\n  scriptTask: true\n").await;
    put(&s, "hooks/follow-up.js", HOOK_JS).await;
    put(&s, "hooks/follow-up.yaml", HOOK).await;
    std::fs::remove_file(s.root.join("acme/shop/_vance/hooks/follow-up.js")).unwrap();
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    s.wait_status("shop", &deploy, &["FAILED"]).await;
    let d = deliveries(&s, "follow-up", 1).await;
    assert_eq!(
        (&d[0]["status"], &d[0]["reason"]),
        (&json!("failed"), &json!("hook_failed")),
        "{}",
        d[0]
    );
    assert!(
        d[0]["message"].as_str().unwrap().contains("cannot be read"),
        "{}",
        d[0]
    );
}

#[tokio::test]
async fn a_hook_starts_a_run_in_its_own_project_and_cannot_reach_another_tenant() {
    let s = server("execution:\n  shellTask: true\n  scriptTask: true\n").await;
    write(
        &s.root.join("globex/shop/_vance/workflows/quick.yaml"),
        QUICK,
    );
    put(&s, "hooks/follow-up.js", HOOK_JS).await;
    let (status, text) = s.put_document("hooks/follow-up.yaml", ACME, HOOK).await;
    assert_eq!(status, 201, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap()["warnings"],
        json!([])
    );
    let deploy = s.start_run("shop", "deploy", json!({})).await;
    let started = runs_by(&s, "hook:follow-up", 1).await;
    let params = &started[0]["params"];
    assert_eq!(params["failed"], deploy.as_str());
    let refused = params["refused"].as_str().unwrap();
    assert!(refused.contains("MAG-DOC002"), "{refused}");
    let d = deliveries(&s, "follow-up", 1).await;
    assert_eq!(d[0]["status"], "accepted");
    assert_eq!(d[0]["runId"], started[0]["workflowRunId"]);
    // globex has no run at all.
    let theirs: Value = s
        .get_json("/brain/globex/project/shop/workflows/runs", Some(GLOBEX))
        .await;
    assert_eq!(theirs, json!([]));
}
