//! Who may fire an event: an event without `auth:` needs an API token with `workflow.run`;
//! without credentials (or with another tenant's token) every event, known or not, answers
//! the same 401; the event token
//! falls back to the tenant's settings; and the project settings that hold event tokens are
//! not writable with `workflow.write` alone.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

const ECHO: &str = "start: done\nstates:\n  done: { type: terminal, result: received }\n";

fn setup(s: &Server) {
    let vance = s.root.join("acme/shop/_vance");
    write(&vance.join("workflows/echo.yaml"), ECHO);
    write(&vance.join("events/open.yaml"), "workflow: echo\n");
    write(
        &vance.join("events/hooked.yaml"),
        "workflow: echo\nauth:\n  tokenSetting: events.hook.token\n",
    );
    write(&vance.join("events/broken.yaml"), "workflow: [\n");
}

async fn fire(s: &Server, event: &str, token: Option<&str>) -> (u16, Value) {
    let r = s
        .post(&format!("/brain/acme/event/shop/{event}"), token)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn an_event_without_auth_runs_only_for_an_api_token_with_workflow_run() {
    let s = Server::start().await;
    setup(&s);
    assert_eq!(fire(&s, "open", None).await.0, 401);
    assert_eq!(fire(&s, "open", Some("not-a-token")).await.0, 401);
    assert_eq!(fire(&s, "open", Some(ACME_READ)).await.0, 403);
    assert_eq!(
        fire(&s, "open", Some(GLOBEX)).await.0,
        401,
        "another tenant's token is no credential here"
    );
    let (status, started) = fire(&s, "open", Some(ACME_RUN)).await;
    assert_eq!(status, 202, "{started}");
    let run = started["workflowRunId"].as_str().unwrap();
    let v = s.wait_status("shop", run, &["DONE"]).await;
    assert_eq!(v["startedBy"], "event:open");
    assert_eq!(
        v["requestedBy"], "runner",
        "the token's subject is recorded"
    );
}

#[tokio::test]
async fn without_credentials_known_and_unknown_events_answer_the_same_401() {
    let s = Server::start().await;
    setup(&s);
    write(
        &s.root.join("acme/shop/_vance/settings.yaml"),
        "events:\n  hook:\n    token: hook-secret\n",
    );
    // Nor with another tenant's API token: it cannot tell which events, projects or
    // tenants exist here.
    for token in [None, Some("wrong-secret"), Some(GLOBEX)] {
        let unknown = fire(&s, "no-such-event", token).await;
        assert_eq!(unknown.0, 401);
        for event in ["open", "hooked", "broken", "_tenant"] {
            assert_eq!(
                fire(&s, event, token).await,
                unknown,
                "{event} with {token:?}"
            );
        }
        for path in [
            "/brain/acme/event/_tenant/open",
            "/brain/acme/event/no-such-project/open",
            "/brain/initech/event/shop/open",
        ] {
            let r = s.post(path, token).send().await.unwrap();
            assert_eq!(r.status(), 401, "{path} with {token:?}");
        }
    }
    // The tenant's own token without `workflow.run` gets one 403 for every event, with a
    // token of its own or not, existing or not.
    let unknown = fire(&s, "no-such-event", Some(ACME_READ)).await;
    assert_eq!(unknown.0, 403);
    for event in ["open", "hooked", "broken"] {
        assert_eq!(
            fire(&s, event, Some(ACME_READ)).await,
            unknown,
            "{event} with the read token"
        );
    }
    // Once the caller may run workflows, the answers tell the events apart.
    assert_eq!(fire(&s, "no-such-event", Some(ACME)).await.0, 404);
    assert_eq!(fire(&s, "broken", Some(ACME)).await.0, 422);
    assert_eq!(fire(&s, "hooked", Some("hook-secret")).await.0, 202);
}

#[tokio::test]
async fn an_event_token_falls_back_to_the_tenant_settings_and_the_project_value_wins() {
    let s = Server::start().await;
    setup(&s);
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        &format!("{TENANT_SETTINGS}events:\n  hook:\n    token: tenant-secret\n"),
    );
    assert_eq!(fire(&s, "hooked", Some("tenant-secret")).await.0, 202);
    assert_eq!(fire(&s, "hooked", Some("project-secret")).await.0, 401);

    write(
        &s.root.join("acme/shop/_vance/settings.yaml"),
        "events:\n  hook:\n    token: project-secret\n",
    );
    assert_eq!(fire(&s, "hooked", Some("project-secret")).await.0, 202);
    assert_eq!(fire(&s, "hooked", Some("tenant-secret")).await.0, 401);
}

#[tokio::test]
async fn writing_project_settings_needs_workflow_run_as_well_as_workflow_write() {
    let s = Server::start().await;
    let url = "/brain/acme/project/shop/documents/settings.yaml";
    let body = "events:\n  hook:\n    token: chosen-by-writer\n";
    let r = s
        .client
        .put(s.url(url))
        .bearer_auth(ACME_WRITE)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let err: Value = r.json().await.unwrap();
    let msg = err["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("workflow.write") && msg.contains("workflow.run"),
        "{msg}"
    );
    assert!(!s.root.join("acme/shop/_vance/settings.yaml").exists());

    // Other documents stay writable with workflow.write.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/echo.yaml"))
        .bearer_auth(ACME_WRITE)
        .body(ECHO)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());

    let r = s
        .client
        .put(s.url(url))
        .bearer_auth(ACME)
        .body(body)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());

    // The tenant's settings are not reachable through the documents API at all.
    let r = s
        .client
        .put(s.url("/brain/acme/project/_tenant/documents/settings.yaml"))
        .bearer_auth(ACME)
        .body("execution:\n  shellTask: true\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// A token setting that holds an empty (or blank) value is no token: it refuses every request,
/// one without credentials above all, and does not fall back to the tenant's token either.
#[tokio::test]
async fn an_empty_event_token_setting_refuses_every_request() {
    let s = Server::start().await;
    setup(&s);
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        "events:\n  hook:\n    token: tenant-secret\n",
    );
    for blank in ["\"\"", "\"   \""] {
        write(
            &s.root.join("acme/shop/_vance/settings.yaml"),
            &format!("events:\n  hook:\n    token: {blank}\n"),
        );
        assert_eq!(fire(&s, "hooked", None).await.0, 401, "{blank}, no token");
        let r = s
            .post("/brain/acme/event/shop/hooked", None)
            .header("Authorization", "Bearer ")
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{blank}, an empty bearer");
        assert_eq!(
            fire(&s, "hooked", Some("tenant-secret")).await.0,
            401,
            "{blank}: the project's blank value is not the tenant's token"
        );
    }
    let runs: Vec<Value> = s
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    assert!(runs.is_empty(), "no run was started: {runs:?}");
}
