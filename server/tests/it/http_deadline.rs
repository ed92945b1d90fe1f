//! `bounds.maxWallclockSeconds` as a durable deadline over real HTTP: it preempts a gate (the
//! inbox item closes), a running shell step (its process is killed) and a sub-run (it is
//! cancelled); `onFailure` routes it to a fallback or runs the compensations; and a server
//! killed before the deadline fails the run once, promptly, after its restart.

use crate::http_common;
use crate::serve_child;

use std::time::{Duration, Instant};

use http_common::{ACME, Server, write};
use serde_json::{Value, json};

/// A gate nobody answers, under a one-second deadline.
const GATE: &str = r#"
bounds: { maxWallclockSeconds: 1 }
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done }
  done: { type: terminal, result: shipped }
"#;

async fn run(s: &Server, name: &str, doc: &str) -> (String, Value) {
    write(
        &s.root
            .join(format!("acme/shop/_vance/workflows/{name}.yaml")),
        doc,
    );
    let id = s.start_run("shop", name, json!({})).await;
    let view = s
        .wait_status("shop", &id, &["DONE", "FAILED", "CANCELLED"])
        .await;
    (id, view)
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

fn count(records: &[Value], ty: &str) -> usize {
    records.iter().filter(|r| r["type"] == ty).count()
}

#[tokio::test]
async fn a_deadline_fails_a_run_waiting_on_a_gate_and_closes_its_item() {
    let s = Server::start().await;
    let (id, view) = run(&s, "gated", GATE).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["reason"], "bounds exhausted: maxWallclockSeconds 1 exceeded",
        "{view}"
    );
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox?status=all", Some(ACME))
        .await;
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == id.as_str())
        .expect("the gate's item is listed");
    assert_eq!(item["status"], "CLOSED", "{item}");
    let records = journal(&s, &id).await;
    let deadline = records
        .iter()
        .find(|r| r["type"] == "TimerSetRecord" && r["purpose"] == "deadline");
    assert!(deadline.is_some(), "the deadline is journaled: {records:?}");
    assert_eq!(count(&records, "CancelRequestedRecord"), 1, "{records:?}");
}

/// Whether process `pid` is a live `sleep` (not a zombie, not another process).
fn sleeps(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !zombie && String::from_utf8_lossy(&cmdline).starts_with("sleep")
}

#[tokio::test]
async fn a_deadline_kills_a_running_shell_step() {
    let s = Server::start().await;
    let doc = r#"
bounds: { maxWallclockSeconds: 1 }
start: slow
states:
  slow:
    type: shell_task
    run: "echo $$ > sleeper.pid; exec sleep 120"
    dirName: workspace
    on: { success: done }
  done: { type: terminal }
"#;
    let (_, view) = run(&s, "slow", doc).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert!(
        view["reason"]
            .as_str()
            .unwrap()
            .starts_with("bounds exhausted: maxWallclockSeconds 1 exceeded"),
        "{view}"
    );
    let pid = std::fs::read_to_string(s.root.join("acme/shop/sleeper.pid")).unwrap();
    let pid = pid.trim();
    let until = Instant::now() + Duration::from_secs(10);
    while sleeps(pid) {
        assert!(
            Instant::now() < until,
            "the step's process {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_deadline_cancels_a_running_sub_run() {
    let s = Server::start().await;
    let doc = r#"
bounds: { maxWallclockSeconds: 1 }
start: child
states:
  child:
    type: workflow_task
    workflow: approve
    on: { success: done }
  done: { type: terminal }
"#;
    let (id, view) = run(&s, "parent", doc).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    let records = journal(&s, &id).await;
    let child = records
        .iter()
        .find(|r| r["type"] == "ChildStartedRecord")
        .and_then(|r| r["childRunId"].as_str())
        .unwrap_or_else(|| panic!("{records:?}"))
        .to_string();
    let child_view = s.wait_status("shop", &child, &["CANCELLED"]).await;
    assert_eq!(child_view["status"], "CANCELLED", "{child_view}");
    assert_eq!(
        count(&records, "ChildCancelRequestedRecord"),
        1,
        "{records:?}"
    );
}

/// Friday's spelling of the deadline, in milliseconds: a run that exceeds it is told so in the
/// author's words, the failure reason and the fallback's `lastError` alike.
#[tokio::test]
async fn a_run_timeout_in_milliseconds_is_named_as_written() {
    let s = Server::start().await;
    let (_, view) = run(
        &s,
        "friday",
        &GATE.replace("maxWallclockSeconds: 1", "runTimeoutMs: 1500"),
    )
    .await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["reason"], "bounds exhausted: runTimeoutMs 1500 exceeded",
        "{view}"
    );
    let doc = GATE.replace(
        "bounds: { maxWallclockSeconds: 1 }",
        "bounds: { runTimeoutMs: 1000 }\nonFailure: { policy: fallback, fallback: done }",
    );
    let (_, view) = run(&s, "friday_fallback", &doc).await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(
        view["vars"]["lastError"]["output"]["error"],
        "bounds exhausted: runTimeoutMs 1000 exceeded",
        "{view}"
    );
}

#[tokio::test]
async fn a_deadline_goes_to_the_fallback_state() {
    let s = Server::start().await;
    let doc = r#"
bounds: { maxWallclockSeconds: 1 }
onFailure: { policy: fallback, fallback: cleanup }
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done }
  cleanup:
    type: shell_task
    run: "echo cleaned"
    dirName: workspace
    on: { success: cleaned }
  cleaned: { type: terminal, result: "${state.lastError.outcome}" }
  done: { type: terminal, result: shipped }
"#;
    let (_, view) = run(&s, "fall", doc).await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "deadline", "{view}");
    assert_eq!(
        view["vars"]["lastError"]["output"]["error"],
        "bounds exhausted: maxWallclockSeconds 1 exceeded"
    );
}

#[tokio::test]
async fn a_deadline_runs_the_compensations() {
    let s = Server::start().await;
    let doc = r#"
bounds: { maxWallclockSeconds: 1 }
onFailure: compensate
start: reserve
states:
  reserve:
    type: shell_task
    run: "echo reserved"
    dirName: workspace
    compensate: release
    on: { success: review }
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done }
  release:
    type: shell_task
    run: "echo released > released.txt"
    dirName: workspace
  done: { type: terminal }
"#;
    let (_, view) = run(&s, "saga", doc).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["result"]["error"],
        "bounds exhausted: maxWallclockSeconds 1 exceeded"
    );
    let comps = view["result"]["compensations"].as_array().unwrap();
    assert_eq!(comps.len(), 1, "{view}");
    assert_eq!(comps[0]["compensation"], "release");
    assert_eq!(comps[0]["outcome"], "success", "{view}");
    assert!(s.root.join("acme/shop/released.txt").exists());
}

#[tokio::test]
async fn a_deadline_that_passed_while_the_server_was_down_fails_the_run_once_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    http_common::tree(&root);
    let doc = GATE.replace("maxWallclockSeconds: 1", "maxWallclockSeconds: 3");
    write(&root.join("acme/shop/_vance/workflows/gated.yaml"), &doc);
    let client = reqwest::Client::new();
    let mut server = serve_child::ServeChild::start(&root);
    let run = server.start_run(&client, "gated", ACME).await;
    server.wait_status(&client, &run, ACME, &["WAITING"]).await;
    server.kill(); // SIGKILL before the deadline
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut server = serve_child::ServeChild::start(&root);
    let view = server
        .wait_status(&client, &run, ACME, &["FAILED", "DONE", "CANCELLED"])
        .await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["reason"],
        "bounds exhausted: maxWallclockSeconds 3 exceeded"
    );
    let records: Value = client
        .get(format!(
            "{}/brain/acme/project/shop/workflows/runs/{run}/journal",
            server.base
        ))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let records = records.as_array().unwrap();
    let fired = records
        .iter()
        .filter(|r| r["type"] == "TimerFiredRecord")
        .count();
    assert_eq!(fired, 1, "the deadline fired once: {records:?}");
    assert_eq!(count(records, "CancelRequestedRecord"), 1, "{records:?}");
    let ends = records
        .iter()
        .filter(|r| r["type"] == "StatusRecord" && r["status"] == "FAILED")
        .count();
    assert_eq!(ends, 1, "the run failed once: {records:?}");
    server.stop();
}

#[tokio::test]
async fn a_tenant_default_deadline_applies_to_a_document_that_declares_none() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        &format!(
            "{}bounds:\n  maxWallclockSeconds: 1\n",
            http_common::TENANT_SETTINGS
        ),
    );
    let (_, view) = run(
        &s,
        "gated",
        &GATE.replace("bounds: { maxWallclockSeconds: 1 }\n", ""),
    )
    .await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(
        view["reason"],
        "bounds exhausted: maxWallclockSeconds 1 exceeded (the tenant's default, \
         bounds.maxWallclockSeconds in acme/_tenant/_vance/settings.yaml; a document's own \
         bounds.maxWallclockSeconds replaces it)"
    );
}
