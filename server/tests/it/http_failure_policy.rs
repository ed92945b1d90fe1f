//! `onFailure:` (Friday's failurePolicy) over real HTTP: compensation in reverse order, a
//! failing compensation reported after its retries, continue_on_error and fallback (a failing
//! fallback state fails the run), and a rejection's reason under compensation.

use crate::http_common;
use crate::serve_child;

use http_common::{Server, write};
use serde_json::{Value, json};

const SAGA: &str = r#"
onFailure: compensate
start: reserve
states:
  reserve:
    type: shell_task
    run: "echo reserved"
    dirName: workspace
    compensate: release
    on: { success: charge }
  charge:
    type: shell_task
    run: "echo charged"
    dirName: workspace
    compensate: refund
    on: { success: ship }
  ship:
    type: shell_task
    run: "exit 3"
    dirName: workspace
    on: { success: done }
  release:
    type: shell_task
    run: "echo released"
    dirName: workspace
  refund:
    type: shell_task
    run: "echo refunded; exit ${params.refund_exit}"
    splice: quoted
    dirName: workspace
    retry: { maxAttempts: 2, on: [business_error] }
  done: { type: terminal }
"#;

const CONTINUE: &str = r#"
onFailure: Continue_On_Error   # read in any case, as the schema allows
start: flaky
states:
  flaky:
    type: shell_task
    run: "exit 4"
    dirName: workspace
    on: { success: after }
  after: { type: terminal, result: "${state.lastError.state}" }
"#;

const FALLBACK: &str = r#"
onFailure: { policy: fallback, fallback: cleanup }
start: flaky
states:
  flaky:
    type: shell_task
    run: "exit 5"
    dirName: workspace
    on: { success: done }
  cleanup: { type: terminal, outcome: failure, result: { cleaned: "${state.lastError.outcome}" } }
  done: { type: terminal }
"#;

async fn run(s: &Server, name: &str, doc: &str, params: Value) -> Value {
    write(
        &s.root
            .join(format!("acme/shop/_vance/workflows/{name}.yaml")),
        doc,
    );
    let id = s.start_run("shop", name, params).await;
    s.wait_status("shop", &id, &["DONE", "FAILED"]).await
}

#[tokio::test]
async fn compensation_undoes_the_completed_states_in_reverse_and_the_run_fails() {
    let s = Server::start().await;
    let view = run(&s, "saga", SAGA, json!({"refund_exit": 0})).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    let result = &view["result"];
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("no transition for outcome"),
        "{result}"
    );
    let done: Vec<(String, String, String)> = result["compensations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["state"].as_str().unwrap().into(),
                c["compensation"].as_str().unwrap().into(),
                c["outcome"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        done,
        vec![
            ("charge".into(), "refund".into(), "success".into()),
            ("reserve".into(), "release".into(), "success".into()),
        ]
    );
    assert!(
        view["reason"]
            .as_str()
            .unwrap()
            .contains("compensated 2 state(s)")
    );
}

#[tokio::test]
async fn a_failing_compensation_is_retried_then_reported_and_the_others_still_run() {
    let s = Server::start().await;
    let view = run(&s, "saga", SAGA, json!({"refund_exit": 1})).await;
    assert_eq!(view["status"], "FAILED");
    let comps = view["result"]["compensations"].as_array().unwrap();
    assert_eq!(comps[0]["compensation"], "refund");
    assert_ne!(comps[0]["outcome"], "success", "{comps:?}");
    assert_eq!(comps[1]["compensation"], "release");
    assert_eq!(comps[1]["outcome"], "success");
    assert!(
        view["reason"]
            .as_str()
            .unwrap()
            .contains("some compensations failed")
    );
    // The refund ran twice (its retry), each attempt on record.
    let journal: Value = s
        .get_json(
            &format!(
                "/brain/acme/project/shop/workflows/runs/{}/journal",
                view["workflowRunId"].as_str().unwrap()
            ),
            Some(http_common::ACME),
        )
        .await;
    let refunds = journal["records"]
        .as_array()
        .or_else(|| journal.as_array())
        .unwrap()
        .iter()
        .filter(|r| {
            r.to_string().contains("TaskStartedRecord") && r.to_string().contains("\"refund\"")
        })
        .count();
    assert_eq!(refunds, 2, "{journal}");
}

#[tokio::test]
async fn continue_on_error_follows_the_success_target_with_the_error_stored() {
    let s = Server::start().await;
    let view = run(&s, "cont", CONTINUE, json!({})).await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "flaky");
    assert_eq!(view["vars"]["lastError"]["state"], "flaky");
}

#[tokio::test]
async fn fallback_goes_to_the_named_state() {
    let s = Server::start().await;
    let view = run(&s, "fall", FALLBACK, json!({})).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert!(view["result"]["cleaned"].is_string(), "{view}");
    assert_eq!(view["currentState"], "cleanup");
}

/// A fallback state that fails itself, with nothing to route its failure.
const FAILING_FALLBACK: &str = r#"
onFailure: { policy: fallback, fallback: cleanup }
start: flaky
states:
  flaky:
    type: shell_task
    run: "exit 5"
    dirName: workspace
    on: { success: done }
  cleanup:
    type: shell_task
    run: "echo cleaning >> cleanups.log; exit 4"
    dirName: workspace
    on: { success: done }
  done: { type: terminal }
"#;

#[tokio::test]
async fn a_fallback_state_that_fails_fails_the_run_instead_of_falling_back_to_itself() {
    let s = Server::start().await;
    let view = run(&s, "fall_fails", FAILING_FALLBACK, json!({})).await;
    assert_eq!(view["status"], "FAILED", "{view}");
    assert_eq!(view["currentState"], "cleanup", "{view}");
    assert_eq!(view["vars"]["lastError"]["state"], "flaky", "{view}");
    let reason = view["reason"].as_str().unwrap();
    assert!(reason.contains("no transition for outcome"), "{reason}");
    let log = std::fs::read_to_string(s.root.join("acme/shop/cleanups.log")).unwrap();
    assert_eq!(log, "cleaning\n", "the fallback ran once");
}

/// An approval nothing routes a rejection of, under a policy that ends the run with the
/// original reason.
const REJECTED_SAGA: &str = r#"
onFailure: compensate
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: Ship it?, onReject: fail }
    on: { approved: done }
  done: { type: terminal }
"#;

#[tokio::test]
async fn a_rejection_compensated_keeps_its_approval_rejected_reason() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/rejected.yaml"),
        REJECTED_SAGA,
    );
    let id = s.start_run("shop", "rejected", json!({})).await;
    s.wait_status("shop", &id, &["WAITING"]).await;
    let r = s
        .post(
            &format!("/v1/workflow-approvals/{id}-2/reject"),
            Some(http_common::ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let view = s.wait_status("shop", &id, &["FAILED"]).await;
    let reason = view["reason"].as_str().unwrap();
    assert!(reason.starts_with("APPROVAL_REJECTED: "), "{reason}");
    assert!(reason.contains("compensated 0 state(s)"), "{reason}");
}

/// Like [`SAGA`], with a refund that waits for the file `release-refund` in the workspace
/// (writing `refunding` first), so the server can be killed in the middle of compensating.
const HELD_SAGA: &str = r#"
onFailure: compensate
start: reserve
states:
  reserve:
    type: shell_task
    run: "echo reserved >> saga.log"
    dirName: workspace
    compensate: release
    on: { success: charge }
  charge:
    type: shell_task
    run: "echo charged >> saga.log"
    dirName: workspace
    compensate: refund
    on: { success: ship }
  ship:
    type: shell_task
    run: "exit 3"
    dirName: workspace
    on: { success: done }
  release:
    type: shell_task
    run: "echo released >> saga.log"
    dirName: workspace
  refund:
    type: shell_task
    run: "touch refunding; while [ ! -e release-refund ]; do sleep 0.05; done; echo refunded >> saga.log"
    dirName: workspace
  done: { type: terminal }
"#;

#[tokio::test]
async fn a_compensation_interrupted_by_sigkill_carries_on_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    http_common::tree(&root);
    let project = root.join("acme/shop");
    write(&project.join("_vance/workflows/held.yaml"), HELD_SAGA);
    let client = reqwest::Client::new();
    let mut server = serve_child::ServeChild::start(&root);
    let run = server.start_run(&client, "held", http_common::ACME).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !project.join("refunding").exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the refund never started"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    server.kill(); // SIGKILL in the middle of the refund
    std::fs::write(project.join("release-refund"), "").unwrap();
    let mut server = serve_child::ServeChild::start(&root);
    let view = server
        .wait_status(&client, &run, http_common::ACME, &["FAILED"])
        .await;
    let comps: Vec<&str> = view["result"]["compensations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["compensation"].as_str().unwrap())
        .collect();
    assert_eq!(comps, ["refund", "release"], "{view}");
    let log = std::fs::read_to_string(project.join("saga.log")).unwrap();
    // Each forward step once; the refund (re-executed after the crash) then the release.
    assert!(log.starts_with("reserved\ncharged\n"), "{log}");
    assert!(log.ends_with("refunded\nreleased\n"), "{log}");
    server.stop();
}
