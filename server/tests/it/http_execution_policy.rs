//! Which task types a served project may run is the tenant's decision: without a setting a
//! served tree refuses `shell_task`, `script_task` and `http_request` with `permission_error`
//! and a message naming the setting; a project override wins; `catch: permission_error`
//! routes the refusal.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

const SCRIPT: &str = r#"
start: calc
states:
  calc:
    type: script_task
    path: _vance/scripts/calc.js
    on:
      success: done
  done: { type: terminal, result: computed }
"#;

const FETCH: &str = r#"
allowedTools: [http_request]
start: fetch
states:
  fetch:
    type: tool_task
    tool: http_request
    params: { url: "http://127.0.0.1:9/" }
    on:
      success: done
  done: { type: terminal, result: fetched }
"#;

const GUARDED: &str = r#"
start: build
states:
  build:
    type: shell_task
    run: "echo built"
    dirName: workspace
    on:
      success: done
    catch:
      permission_error: refused
      business_error: broken
      technical_error: broken
  done: { type: terminal, result: built }
  refused: { type: terminal, result: refused }
  broken: { type: terminal, result: broken }
"#;

fn tenant_settings(s: &Server, yaml: &str) {
    write(&s.root.join("acme/_tenant/_vance/settings.yaml"), yaml);
}

async fn failure(s: &Server, run: &str) -> String {
    let v = s.wait_status("shop", run, &["FAILED"]).await;
    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    let result = journal
        .iter()
        .find(|e| e["type"] == "TaskResultRecord")
        .unwrap_or_else(|| panic!("no task result in {journal:?}"));
    assert_eq!(result["outcome"], "permission_error", "{result}");
    // The run itself says why, beside its reason: the same error as the journal's.
    assert_eq!(v["lastError"]["outcome"], "permission_error", "{v}");
    assert_eq!(v["lastError"]["error"], result["error"], "{v}");
    format!("{} {result}", v["reason"])
}

#[tokio::test]
async fn a_served_project_runs_no_shell_step_until_its_tenant_allows_it() {
    let s = Server::start().await;
    tenant_settings(&s, "");
    let run = s.start_run("shop", "hello", json!({})).await;
    let msg = failure(&s, &run).await;
    assert!(
        msg.contains(
            "[MAG-PL001] shell_task is not allowed for project acme/shop: set \
             `execution.shellTask: true` (or `execution.projects.shop.shellTask: true`) in \
             acme/_tenant/_vance/settings.yaml"
        ),
        "{msg}"
    );
    assert!(
        !msg.contains(s.root.to_str().unwrap()),
        "no server path: {msg}"
    );
    // The refused step's output has a shell step's shape (reference §3).
    assert!(
        msg.contains("\"status\":\"FAILED\"") && msg.contains("\"exitCode\":null"),
        "{msg}"
    );

    // A project override allows one project and not the other.
    tenant_settings(
        &s,
        "execution:\n  projects:\n    shop:\n      shellTask: true\n",
    );
    let run = s.start_run("shop", "hello", json!({})).await;
    assert_eq!(
        s.wait_status("shop", &run, &["DONE"]).await["result"],
        "greeted"
    );
    let run = s.start_run("lab", "hello", json!({})).await;
    s.wait_status("lab", &run, &["FAILED"]).await;

    // And an override can deny what the tenant allows.
    tenant_settings(
        &s,
        "execution:\n  shellTask: true\n  projects:\n    shop:\n      shellTask: false\n",
    );
    let run = s.start_run("shop", "hello", json!({})).await;
    let msg = failure(&s, &run).await;
    assert!(
        msg.contains("set `execution.projects.shop.shellTask: true` in acme/_tenant"),
        "{msg}"
    );
}

#[tokio::test]
async fn script_task_and_http_request_are_refused_by_default_when_served() {
    let s = Server::start().await;
    let dir = s.root.join("acme/shop/_vance/workflows");
    write(&dir.join("calc.yaml"), SCRIPT);
    write(
        &s.root.join("acme/shop/_vance/scripts/calc.js"),
        "return 6 * 7;",
    );
    write(&dir.join("fetch.yaml"), FETCH);
    let run = s.start_run("shop", "calc", json!({})).await;
    let msg = failure(&s, &run).await;
    assert!(
        msg.contains("[MAG-PL001] script_task is not allowed") && msg.contains("scriptTask"),
        "{msg}"
    );
    let run = s.start_run("shop", "fetch", json!({})).await;
    let msg = failure(&s, &run).await;
    assert!(
        msg.contains("[MAG-PL001] http_request is not allowed") && msg.contains("httpRequest"),
        "{msg}"
    );

    tenant_settings(&s, "execution:\n  scriptTask: true\n");
    let run = s.start_run("shop", "calc", json!({})).await;
    assert_eq!(
        s.wait_status("shop", &run, &["DONE"]).await["result"],
        "computed"
    );
}

#[tokio::test]
async fn catch_permission_error_routes_a_refused_step() {
    let s = Server::start().await;
    tenant_settings(&s, "");
    write(
        &s.root.join("acme/shop/_vance/workflows/guarded.yaml"),
        GUARDED,
    );
    let run = s.start_run("shop", "guarded", json!({})).await;
    let v = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(v["result"], "refused");
}
