//! Default timeouts from the settings (Friday's `defaultNodeTimeoutMs`) over real HTTP: the
//! project's and the tenant's `defaults:` apply only where declared, in the order state >
//! document > project > tenant, and are frozen when the run starts.

use crate::http_common;

use http_common::{ACME, Server, TENANT_SETTINGS, write};
use serde_json::{Value, json};

/// Two gates in a row, each with a `catch: timeout` route.
const GATES: &str = r#"
start: first
states:
  first:
    type: gate_task
    inbox: { kind: APPROVAL, title: "First?" }
    on: { approved: second }
    catch: { timeout: late }
  second:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Second?" }
    on: { approved: done }
    catch: { timeout: late }
  done: { type: terminal, result: answered }
  late: { type: terminal, result: expired }
"#;

fn settings(s: &Server, tenant: &str, project: Option<&str>) {
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        &format!("{TENANT_SETTINGS}{tenant}"),
    );
    if let Some(p) = project {
        write(&s.root.join("acme/shop/_vance/settings.yaml"), p);
    }
}

async fn journal(s: &Server, run: &str) -> Vec<Value> {
    let j: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    j.as_array().cloned().unwrap_or_else(|| panic!("{j}"))
}

/// The `timeoutMs` of each gate the run opened, in order.
async fn gate_timeouts(s: &Server, run: &str) -> Vec<Value> {
    journal(s, run)
        .await
        .iter()
        .filter(|r| r["type"] == "GateOpenedRecord")
        .map(|r| r["gate"]["timeoutMs"].clone())
        .collect()
}

async fn start_waiting(s: &Server, doc: &str) -> String {
    write(&s.root.join("acme/shop/_vance/workflows/gates.yaml"), doc);
    let run = s.start_run("shop", "gates", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    run
}

async fn approve_pending(s: &Server, run: &str) {
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == run)
        .expect("an item is pending");
    let id = item["id"].as_str().unwrap();
    let r = s.answer(id, &json!({"kind": "approve"})).await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn without_defaults_anywhere_a_gate_has_no_timeout() {
    let s = Server::start().await;
    let run = start_waiting(&s, GATES).await;
    assert_eq!(gate_timeouts(&s, &run).await, [Value::Null]);
}

#[tokio::test]
async fn the_tenant_default_applies_and_the_project_default_wins_over_it() {
    let s = Server::start().await;
    settings(&s, "defaults:\n  gateTimeoutSeconds: 3600\n", None);
    let run = start_waiting(&s, GATES).await;
    assert_eq!(gate_timeouts(&s, &run).await, [json!(3_600_000)]);

    settings(
        &s,
        "defaults:\n  gateTimeoutSeconds: 3600\n",
        Some("defaults:\n  gateTimeoutSeconds: 1\n"),
    );
    write(&s.root.join("acme/shop/_vance/workflows/gates.yaml"), GATES);
    let run = s.start_run("shop", "gates", json!({})).await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["result"], "expired", "{view}");
    assert_eq!(gate_timeouts(&s, &run).await, [json!(1_000)]);
}

#[tokio::test]
async fn the_document_and_the_state_win_over_the_settings() {
    let s = Server::start().await;
    settings(
        &s,
        "defaults:\n  gateTimeoutSeconds: 5\n",
        Some("defaults:\n  gateTimeoutSeconds: 6\n"),
    );
    let doc = GATES
        .replace(
            "start: first",
            "defaults: { gateTimeoutSeconds: 7 }\nstart: first",
        )
        .replace(
            "  second:\n    type: gate_task\n",
            "  second:\n    type: gate_task\n    timeoutSeconds: 8\n",
        );
    let run = start_waiting(&s, &doc).await;
    approve_pending(&s, &run).await;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while gate_timeouts(&s, &run).await.len() < 2 {
        assert!(
            std::time::Instant::now() < until,
            "the second gate never opened"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(gate_timeouts(&s, &run).await, [json!(7_000), json!(8_000)]);
}

#[tokio::test]
async fn the_settings_defaults_are_frozen_when_the_run_starts() {
    let s = Server::start().await;
    settings(&s, "", Some("defaults:\n  gateTimeoutSeconds: 3600\n"));
    let run = start_waiting(&s, GATES).await;
    // A later change of the settings does not reach the running run's next gate.
    settings(&s, "", Some("defaults:\n  gateTimeoutSeconds: 1\n"));
    approve_pending(&s, &run).await;
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while gate_timeouts(&s, &run).await.len() < 2 {
        assert!(
            std::time::Instant::now() < until,
            "the second gate never opened"
        );
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
    }
    assert_eq!(
        gate_timeouts(&s, &run).await,
        [json!(3_600_000), json!(3_600_000)]
    );
    let start = journal(&s, &run).await[0].clone();
    assert_eq!(
        start["bounds"]["defaults"],
        json!({"gateTimeoutSeconds": 3600.0}),
        "{start}"
    );
}

#[tokio::test]
async fn a_task_default_from_the_settings_times_a_shell_step_out() {
    let s = Server::start().await;
    settings(&s, "defaults:\n  taskTimeoutSeconds: 1\n", None);
    let doc = r#"
start: slow
states:
  slow:
    type: shell_task
    run: "sleep 60"
    dirName: workspace
    on: { success: done }
    catch: { timeout: late }
  done: { type: terminal, result: finished }
  late: { type: terminal, result: timed-out }
"#;
    write(&s.root.join("acme/shop/_vance/workflows/slow.yaml"), doc);
    let run = s.start_run("shop", "slow", json!({})).await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(view["result"], "timed-out", "{view}");
}
