//! Pausing and resuming runs over HTTP (the brain routes and Friday's `/v1` routes): a paused
//! run lets its running step finish and starts nothing new, a timer that comes due waits for
//! the resume, a SIGKILLed server brings a paused run back paused, and the refusals.

use crate::http_common;
use crate::serve_child;

use std::path::Path;
use std::time::Duration;

use http_common::*;
use serde_json::{Value, json};
use serve_child::ServeChild;

/// A first step that runs until the file `go` exists, then a second step, then the end.
const TWO_STEPS: &str = r#"
start: first
states:
  first:
    type: shell_task
    run: "touch first.started; while [ ! -e go ]; do sleep 0.05; done; echo one"
    dirName: workspace
    on:
      success: second
  second:
    type: shell_task
    run: "touch second.started; echo two"
    dirName: workspace
    on:
      success: done
  done: { type: terminal, result: finished }
"#;

/// A timer, then a step.
const NAP: &str = r#"
start: nap
states:
  nap:
    type: timer_task
    duration: 1s
    on:
      fired: after
  after:
    type: shell_task
    run: "touch after.started; echo after"
    dirName: workspace
    on:
      success: done
  done: { type: terminal, result: rested }
"#;

/// Waits up to 30 s for `path` to exist.
async fn wait_file(path: &Path) {
    for _ in 0..600 {
        if path.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{} never appeared", path.display());
}

async fn control(
    client: &reqwest::Client,
    base: &str,
    path: &str,
    token: &str,
    body: Value,
) -> (u16, Value) {
    let r = client
        .post(format!("{base}{path}"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

fn brain(run: &str, op: &str) -> String {
    format!("/brain/acme/project/shop/workflows/runs/{run}/{op}")
}

async fn journal_types(client: &reqwest::Client, base: &str, run: &str) -> Vec<String> {
    let j: Vec<Value> = client
        .get(format!("{base}{}", brain(run, "journal")))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    j.iter()
        .map(|e| e["type"].as_str().unwrap().to_owned())
        .collect()
}

/// Waits until the run's journal holds `n` records of `type_name`.
async fn wait_records(client: &reqwest::Client, base: &str, run: &str, type_name: &str, n: usize) {
    for _ in 0..600 {
        let types = journal_types(client, base, run).await;
        if types.iter().filter(|t| *t == type_name).count() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run} never journaled {n} {type_name}");
}

#[tokio::test]
async fn a_paused_run_finishes_its_running_step_starts_no_next_one_and_resumes_to_done() {
    let s = Server::start().await;
    let project = s.root.join("acme/shop");
    write(&project.join("_vance/workflows/two.yaml"), TWO_STEPS);
    let workspace = project.clone();
    let base = format!("http://{}", s.addr);
    let run = s.start_run("shop", "two", json!({})).await;
    wait_file(&workspace.join("first.started")).await;

    let (status, body) = control(
        &s.client,
        &base,
        &brain(&run, "pause"),
        ACME,
        json!({"reason": "maintenance"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["pause"], "paused");
    assert_eq!(body["run"]["status"], "PAUSED");
    // A second pause changes nothing.
    let (status, body) = control(&s.client, &base, &brain(&run, "pause"), ACME, json!({})).await;
    assert_eq!(
        (status, body["pause"].clone()),
        (200, json!("alreadyPaused"))
    );

    // The running step finishes and is journaled; the next state does not start.
    std::fs::write(workspace.join("go"), "").unwrap();
    wait_records(&s.client, &base, &run, "TaskResultRecord", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!workspace.join("second.started").exists());
    let types = journal_types(&s.client, &base, &run).await;
    assert_eq!(
        types.iter().filter(|t| *t == "TaskStartedRecord").count(),
        1,
        "{types:?}"
    );
    assert!(types.contains(&"PauseRequestedRecord".to_owned()));
    let view: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}"),
            Some(ACME),
        )
        .await;
    assert_eq!(view["status"], "PAUSED");
    assert!(view["pausedAt"].as_u64().is_some(), "{view}");
    assert!(view.get("resumedAt").is_none(), "{view}");
    // Listings show it too.
    let listed: Value = s
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    let text = listed.to_string();
    assert!(text.contains(&run) && text.contains("\"PAUSED\""), "{text}");

    // Another tenant's token does not find it, on either route.
    let (status, _) = control(&s.client, &base, &brain(&run, "resume"), GLOBEX, json!({})).await;
    assert_eq!(status, 404);
    let (status, _) = control(
        &s.client,
        &base,
        &format!("/v1/workflow-runs/{run}/resume"),
        GLOBEX,
        json!({}),
    )
    .await;
    assert_eq!(status, 404);
    // A token without workflow.run may not.
    let (status, _) = control(
        &s.client,
        &base,
        &format!("/v1/workflow-runs/{run}/resume"),
        ACME_READ,
        json!({}),
    )
    .await;
    assert_eq!(status, 403);

    let (status, body) = control(
        &s.client,
        &base,
        &format!("/v1/workflow-runs/{run}/resume"),
        ACME,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["resume"], "resumed");
    // Friday's route answers with Friday's word for the run's status too.
    assert_eq!(body["status"], "running", "{body}");
    let view = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(view["result"], "finished");
    assert!(
        view["resumedAt"].as_u64() >= view["pausedAt"].as_u64(),
        "{view}"
    );
    assert!(workspace.join("second.started").exists());

    // Wrong states: resuming a run that is not paused, pausing one that has ended.
    let (status, body) = control(&s.client, &base, &brain(&run, "resume"), ACME, json!({})).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "MAG-HTTP-PAUSE-STATE");
    let (status, body) = control(
        &s.client,
        &base,
        &format!("/v1/workflow-runs/{run}/pause"),
        ACME,
        json!({}),
    )
    .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "MAG-HTTP-PAUSE-STATE");
    // An unknown run.
    let unknown = "0194a0b0c0d07e008000000000000000";
    let (status, _) = control(&s.client, &base, &brain(unknown, "pause"), ACME, json!({})).await;
    assert_eq!(status, 404);
}

/// Friday's approval node pauses its run (seed §5.6): a run waiting on an approval is `paused`
/// in Friday's words, also after an operator's pause of it is resumed; a run on a timer runs.
#[tokio::test]
async fn a_run_waiting_on_an_approval_is_paused_in_fridays_words() {
    let s = Server::start().await;
    let base = format!("http://{}", s.addr);
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let v1 = |op: &str| format!("/v1/workflow-runs/{run}/{op}");
    let (status, body) = control(&s.client, &base, &v1("pause"), ACME, json!({})).await;
    assert_eq!((status, &body["status"]), (200, &json!("paused")), "{body}");
    let (status, body) = control(&s.client, &base, &v1("resume"), ACME, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["run"]["status"], "WAITING", "{body}");
    assert_eq!(
        body["status"], "paused",
        "it still waits on the approval: {body}"
    );
    // A resume does not answer the approval: the refusal says what does.
    let (status, body) = control(&s.client, &base, &v1("resume"), ACME, json!({})).await;
    assert_eq!(status, 409, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("/v1/workflow-approvals/"), "{message}");

    write(&s.root.join("acme/shop/_vance/workflows/nap.yaml"), NAP);
    let napping = s.start_run("shop", "nap", json!({})).await;
    control(&s.client, &base, &brain(&napping, "pause"), ACME, json!({})).await;
    let (status, body) = control(
        &s.client,
        &base,
        &format!("/v1/workflow-runs/{napping}/resume"),
        ACME,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "running", "{body}");
}

#[tokio::test]
async fn a_timer_due_while_paused_takes_effect_on_resume_and_cancel_ends_a_paused_run() {
    let s = Server::start().await;
    let project = s.root.join("acme/shop");
    write(&project.join("_vance/workflows/nap.yaml"), NAP);
    write(&project.join("_vance/workflows/two.yaml"), TWO_STEPS);
    let workspace = project.clone();
    let base = format!("http://{}", s.addr);

    let run = s.start_run("shop", "nap", json!({})).await;
    let (status, body) = control(&s.client, &base, &brain(&run, "pause"), ACME, json!({})).await;
    assert_eq!(status, 200, "{body}");
    wait_records(&s.client, &base, &run, "TimerFiredRecord", 1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !workspace.join("after.started").exists(),
        "no progress while paused"
    );
    // The timer's own task step is the only one started; its result waits for the resume.
    let types = journal_types(&s.client, &base, &run).await;
    let count = |t: &str| types.iter().filter(|x| *x == t).count();
    assert_eq!(count("TaskStartedRecord"), 1, "{types:?}");
    assert_eq!(count("TaskResultRecord"), 0, "{types:?}");
    let (status, _) = control(&s.client, &base, &brain(&run, "resume"), ACME, json!({})).await;
    assert_eq!(status, 200);
    let view = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(view["result"], "rested");

    // Cancel works on a paused run, and what it held never runs.
    let run = s.start_run("shop", "two", json!({})).await;
    wait_file(&workspace.join("first.started")).await;
    let (status, _) = control(&s.client, &base, &brain(&run, "pause"), ACME, json!({})).await;
    assert_eq!(status, 200);
    std::fs::write(workspace.join("go"), "").unwrap();
    wait_records(&s.client, &base, &run, "TaskResultRecord", 1).await;
    let (status, body) = control(&s.client, &base, &brain(&run, "cancel"), ACME, json!({})).await;
    assert_eq!(status, 200, "{body}");
    s.wait_status("shop", &run, &["CANCELLED"]).await;
    assert!(!workspace.join("second.started").exists());
}

#[tokio::test]
async fn a_paused_run_stays_paused_after_sigkill_and_restart_and_resumes_to_done() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let project = root.join("acme/shop");
    write(&project.join("_vance/workflows/two.yaml"), TWO_STEPS);
    let workspace = project.clone();
    let client = reqwest::Client::new();

    let mut server = ServeChild::start(&root);
    let run = server.start_run(&client, "two", ACME).await;
    wait_file(&workspace.join("first.started")).await;
    let (status, body) = control(
        &client,
        &server.base,
        &brain(&run, "pause"),
        ACME,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    std::fs::write(workspace.join("go"), "").unwrap();
    wait_records(&client, &server.base, &run, "TaskResultRecord", 1).await;
    server.kill(); // SIGKILL

    let mut server = ServeChild::start(&root);
    let view = server.wait_status(&client, &run, ACME, &["PAUSED"]).await;
    assert_eq!(view["status"], "PAUSED");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !workspace.join("second.started").exists(),
        "no new step after the restart"
    );
    let (status, body) = control(
        &client,
        &server.base,
        &brain(&run, "resume"),
        ACME,
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let view = server.wait_status(&client, &run, ACME, &["DONE"]).await;
    assert_eq!(view["result"], "finished");
    assert!(workspace.join("second.started").exists());
    server.stop();
}
