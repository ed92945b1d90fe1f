//! The run in the reply of cancel, an inbox answer, approve and reject shows its parameters,
//! variables and result only to a token that may read runs (`workflow.read`); a token that
//! may only act (`workflow.run`) sees the run's id, workflow, status and state.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

const SECRET: &str = "s3cret-param";

/// The keys a caller without `workflow.read` sees.
const BRIEF: [&str; 4] = ["currentState", "status", "workflowName", "workflowRunId"];

fn keys(run: &Value) -> Vec<String> {
    let mut k: Vec<String> = run.as_object().unwrap().keys().cloned().collect();
    k.sort();
    k
}

fn assert_brief(run: &Value) {
    assert_eq!(keys(run), BRIEF, "{run}");
    assert!(!run.to_string().contains(SECRET), "{run}");
}

fn assert_full(run: &Value) {
    assert!(
        run.get("params").is_some() && run.get("vars").is_some(),
        "{run}"
    );
}

async fn waiting(s: &Server, project: &str) -> (String, String) {
    let run = s
        .start_run(project, "approve", json!({ "token": SECRET }))
        .await;
    s.wait_status(project, &run, &["WAITING"]).await;
    let items: Vec<Value> = s
        .get_json(&format!("/brain/acme/project/{project}/inbox"), Some(ACME))
        .await;
    let item = items
        .into_iter()
        .find(|i| i["workflowRunId"] == run.as_str())
        .unwrap();
    (run, item["id"].as_str().unwrap().to_string())
}

#[tokio::test]
async fn cancel_shows_the_whole_run_only_to_a_reader() {
    let s = Server::start().await;
    for (token, full) in [(ACME_RUN, false), (ACME, true)] {
        let (run, _) = waiting(&s, "shop").await;
        let r: Value = s
            .post_json(
                &format!("/brain/acme/project/shop/workflows/runs/{run}/cancel"),
                Some(token),
                &json!({}),
            )
            .await;
        assert_eq!(r["cancel"], "requested", "{r}");
        assert_eq!(r["run"]["workflowRunId"], run.as_str());
        if full {
            assert_full(&r["run"]);
            assert_eq!(r["run"]["params"]["token"], SECRET);
        } else {
            assert_brief(&r["run"]);
        }
    }
}

#[tokio::test]
async fn an_inbox_answer_shows_the_whole_run_only_to_a_reader() {
    let s = Server::start().await;
    for (token, full) in [(ACME_RUN, false), (ACME, true)] {
        let (run, id) = waiting(&s, "shop").await;
        let r: Value = s
            .post_json(
                &format!("/brain/acme/project/shop/inbox/{id}/answer"),
                Some(token),
                &json!({ "kind": "approve" }),
            )
            .await;
        assert_eq!(r["applied"], true, "{r}");
        assert_eq!(r["run"]["workflowRunId"], run.as_str());
        if full {
            assert_full(&r["run"]);
        } else {
            assert_brief(&r["run"]);
        }
    }
}

#[tokio::test]
async fn approve_and_reject_show_the_whole_run_only_to_a_reader() {
    let s = Server::start().await;
    for (verb, token, full) in [
        ("approve", ACME_RUN, false),
        ("reject", ACME_RUN, false),
        ("approve", ACME, true),
        ("reject", ACME, true),
    ] {
        let (_, id) = waiting(&s, "lab").await;
        let r: Value = s
            .post_json(
                &format!("/v1/workflow-approvals/{id}/{verb}"),
                Some(token),
                &json!({}),
            )
            .await;
        assert_eq!(r["applied"], true, "{verb}: {r}");
        if full {
            assert_full(&r["run"]);
        } else {
            assert_brief(&r["run"]);
        }
    }
}
