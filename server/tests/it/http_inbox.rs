//! Gates answered over HTTP drive YAML runs to their end; answering twice is idempotent;
//! Friday's `/v1/workflow-approvals` routes act on the same inbox.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn an_answer_over_http_drives_the_run_to_done_and_a_second_is_ignored() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let item = s.pending_item(&run).await;
    assert_eq!(item["kind"], "APPROVAL");
    assert_eq!(item["status"], "PENDING");
    let id = item["id"].as_str().unwrap();
    let got: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    assert_eq!(got["title"], "Ship it?");

    let answer = format!("/brain/acme/project/shop/inbox/{id}/answer");
    let bad = s
        .post(&answer, Some(ACME))
        .json(&json!({"kind": "maybe"}))
        .send()
        .await
        .unwrap();
    assert_eq!(code(bad).await, (400, "MAG-HTTP-INVALID-ANSWER".into()));
    // An answer of the wrong kind is told what this API takes for this gate.
    let wrong = s
        .post(&answer, Some(ACME))
        .json(&json!({"kind": "choose", "option": "a"}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 400);
    let wrong: Value = wrong.json().await.unwrap();
    let message = wrong["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("MAG-GT002") && message.contains("`{kind: approve}`"),
        "{message}"
    );
    let r = s
        .post(&answer, Some(ACME))
        .json(&json!({"kind": "approve", "comment": "lgtm"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let a: Value = r.json().await.unwrap();
    assert_eq!(
        (a["applied"].clone(), a["ignored"].clone()),
        (json!(true), json!(false)),
        "{a}"
    );
    let v = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(v["result"], "approved", "{v}");

    let r = s
        .post(&answer, Some(ACME))
        .json(&json!({"kind": "reject"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let a: Value = r.json().await.unwrap();
    assert_eq!(
        (a["applied"].clone(), a["ignored"].clone()),
        (json!(false), json!(true)),
        "{a}"
    );
    assert_eq!(a["run"]["result"], "approved");
    // The reply carries the run as `GET …/runs/{id}` shows it.
    let shown: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}"),
            Some(ACME),
        )
        .await;
    assert_eq!(a["run"], shown, "{a}");

    let answered: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox?status=all", Some(ACME))
        .await;
    let mine = answered.iter().find(|i| i["id"] == id);
    // Inbox items are listed for unfinished runs only; a finished run's item is read by id.
    if let Some(mine) = mine {
        assert_eq!(mine["status"], "ANSWERED");
    }
    let got: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    assert_eq!(got["status"], "ANSWERED");
    assert_eq!(got["answer"]["answeredBy"], "alice");
    assert_eq!(got["answer"]["comment"], "lgtm");
}

#[tokio::test]
async fn approvals_routes_list_approve_and_reject_within_the_tenant() {
    let s = Server::start().await;
    let yes = s.start_run("shop", "approve", json!({})).await;
    let no = s.start_run("lab", "approve", json!({})).await;
    s.wait_status("shop", &yes, &["WAITING"]).await;
    s.wait_status("lab", &no, &["WAITING"]).await;
    let list: Vec<Value> = s.get_json("/v1/workflow-approvals", Some(ACME)).await;
    assert_eq!(list.len(), 2, "both projects of the tenant: {list:?}");
    let id_of = |run: &str| {
        list.iter()
            .find(|a| a["workflowRunId"] == run)
            .map(|a| (a["id"].as_str().unwrap().to_string(), a["scope"].clone()))
            .unwrap()
    };
    let (yes_id, scope) = id_of(&yes);
    assert_eq!(scope, "acme/shop");
    let (no_id, _) = id_of(&no);
    let one: Value = s
        .get_json(&format!("/v1/workflow-approvals/{yes_id}"), Some(ACME))
        .await;
    assert_eq!(one["title"], "Ship it?");
    // Friday's names of an approval request beside the inbox's (§2).
    assert_eq!(one["runId"], yes.as_str(), "{one}");
    assert_eq!(one["nodeId"], "review", "{one}");
    assert_eq!(one["updatedAt"], one["createdAt"], "{one}");
    assert_eq!(one.get("decidedByUserId"), Some(&Value::Null), "{one}");

    let r: Value = s
        .post_json(
            &format!("/v1/workflow-approvals/{yes_id}/approve"),
            Some(ACME),
            &json!({"comment": "ok"}),
        )
        .await;
    assert_eq!(r["applied"], true, "{r}");
    // Friday's words beside the engine's: the approval as it now stands, the run's status.
    assert_eq!(r["approval"]["id"], yes_id.as_str(), "{r}");
    assert_eq!(r["approval"]["status"], "approved", "{r}");
    assert!(
        ["running", "completed"].contains(&r["status"].as_str().unwrap_or_default()),
        "{r}"
    );
    let r: Value = s
        .post(
            &format!("/v1/workflow-approvals/{no_id}/reject"),
            Some(ACME),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["applied"], true, "{r}");
    assert_eq!(r["approval"]["status"], "rejected", "{r}");
    assert_eq!(
        s.wait_status("shop", &yes, &["DONE"]).await["result"],
        "approved"
    );
    assert_eq!(
        s.wait_status("lab", &no, &["DONE"]).await["result"],
        "rejected"
    );
    // Friday's decidedAt: when the answer was journaled; a pending approval's is null, as
    // are its decider and comment (Friday's columns are all there).
    for key in ["decidedAt", "decidedByUserId", "decisionComment"] {
        assert_eq!(one.get(key), Some(&Value::Null), "{key}: {one}");
    }
    let decided: Value = s
        .get_json(&format!("/v1/workflow-approvals/{yes_id}"), Some(ACME))
        .await;
    let at = decided["decidedAt"]
        .as_u64()
        .unwrap_or_else(|| panic!("{decided}"));
    assert!(at >= decided["createdAt"].as_u64().unwrap(), "{decided}");
    assert_eq!(decided["answeredAt"], at, "{decided}");
    assert_eq!(decided["updatedAt"], at, "{decided}");
    assert_eq!(decided["decidedByUserId"], "alice", "{decided}");
    assert_eq!(decided["decisionComment"], "ok", "{decided}");
    // Its one approval met the default quorum of one.
    assert_eq!(one["approvals"], json!([]), "{one}");
    assert_eq!(decided["approvals"], json!(["alice"]), "{decided}");
    let rejected: Value = s
        .get_json(&format!("/v1/workflow-approvals/{no_id}"), Some(ACME))
        .await;
    assert_eq!(rejected["approvals"], json!([]), "{rejected}");
}

#[tokio::test]
async fn friday_routes_speak_friday_status_words_and_page_through_finished_runs() {
    let s = Server::start().await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = s.start_run("shop", "approve", json!({})).await;
        s.wait_status("shop", &run, &["WAITING"]).await;
        runs.push(run);
    }
    let item = |run: &str| format!("{run}-2");
    let decide = |run: String, verb: &'static str| {
        let s = &s;
        async move {
            let r = s
                .post(
                    &format!("/v1/workflow-approvals/{}/{verb}", item(&run)),
                    Some(ACME),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
        }
    };
    decide(runs[0].clone(), "approve").await;
    decide(runs[1].clone(), "reject").await;
    s.wait_status("shop", &runs[0], &["DONE"]).await;
    s.wait_status("shop", &runs[1], &["DONE"]).await;
    let status_of = |list: &[Value], run: &str| {
        list.iter()
            .find(|a| a["workflowRunId"] == run)
            .map(|a| (a["status"].clone(), a["inboxStatus"].clone()))
    };
    let all: Vec<Value> = s
        .get_json("/v1/workflow-approvals?status=all", Some(ACME))
        .await;
    assert_eq!(
        status_of(&all, &runs[0]),
        Some((json!("approved"), json!("ANSWERED")))
    );
    assert_eq!(
        status_of(&all, &runs[1]),
        Some((json!("rejected"), json!("ANSWERED")))
    );
    assert_eq!(
        status_of(&all, &runs[2]),
        Some((json!("pending"), json!("PENDING")))
    );
    let approved: Vec<Value> = s
        .get_json("/v1/workflow-approvals?status=approved", Some(ACME))
        .await;
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0]["workflowRunId"], runs[0].as_str());
    // Pages of one, oldest first, with the cursor in X-Next-Cursor.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("/v1/workflow-approvals?status=all&limit=1&cursor={c}"),
            None => "/v1/workflow-approvals?status=all&limit=1".to_owned(),
        };
        let r = s.get(&url, Some(ACME)).send().await.unwrap();
        cursor = r
            .headers()
            .get("x-next-cursor")
            .map(|v| v.to_str().unwrap().to_owned());
        let page: Vec<Value> = r.json().await.unwrap();
        assert_eq!(page.len(), 1);
        seen.push(page[0]["workflowRunId"].as_str().unwrap().to_owned());
        if cursor.is_none() {
            break;
        }
    }
    assert_eq!(seen, runs, "every approval once, oldest first");
}

#[tokio::test]
async fn an_inbox_item_with_a_timeout_shows_when_it_expires() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/timed.yaml"),
        "start: review\nstates:\n  review:\n    type: gate_task\n    timeoutSeconds: 3600\n    inbox: { kind: APPROVAL, title: \"Ship it?\" }\n    on:\n      approved: done\n    catch:\n      timeout: done\n  done: { type: terminal }\n",
    );
    let run = s.start_run("shop", "timed", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let list: Vec<Value> = s.get_json("/v1/workflow-approvals", Some(ACME)).await;
    let a = list
        .iter()
        .find(|a| a["workflowRunId"] == run.as_str())
        .unwrap();
    let created = a["createdAt"].as_u64().unwrap();
    assert_eq!(a["expiresAt"].as_u64().unwrap(), created + 3_600_000, "{a}");

    // The project's inbox shows the reference's payload (§3.4) for the UI.
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == run.as_str())
        .unwrap();
    assert_eq!(
        item["payload"],
        json!({
            "kind": "workflow.gate",
            "workflowRunId": run,
            "workflowName": "timed",
            "workflowState": "review",
        }),
        "{item}"
    );
}

#[tokio::test]
async fn an_answer_after_the_timeout_lands_on_the_item_and_the_run_does_not_react() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/brief.yaml"),
        "start: review\nstates:\n  review:\n    type: gate_task\n    timeoutSeconds: 1\n    inbox: { kind: APPROVAL, title: \"Ship it?\" }\n    on:\n      approved: shipped\n    catch:\n      timeout: expired\n  shipped: { type: terminal, result: shipped }\n  expired: { type: terminal, result: expired }\n",
    );
    let run = s.start_run("shop", "brief", json!({})).await;
    let done = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(done["result"], "expired", "{done}");
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox?status=all", Some(ACME))
        .await;
    let item = items
        .iter()
        .find(|i| i["workflowRunId"] == run.as_str())
        .unwrap();
    assert_eq!(item["status"], "TIMED_OUT", "{item}");
    assert!(item["answer"].is_null(), "{item}");
    let id = item["id"].as_str().unwrap().to_owned();

    let r = s
        .post(
            &format!("/brain/acme/project/shop/inbox/{id}/answer"),
            Some(ACME),
        )
        .json(&json!({"kind": "approve", "comment": "late"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let answered: Value = r.json().await.unwrap();
    assert_eq!(answered["applied"], false, "{answered}");
    assert_eq!(answered["ignored"], true, "{answered}");
    assert_eq!(answered["run"]["result"], "expired", "{answered}");

    // The answer is on the item, which stays timed out; the run did not move.
    let got: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    assert_eq!(got["status"], "TIMED_OUT", "{got}");
    assert_eq!(got["answer"]["value"], json!({"approved": true}), "{got}");
    assert_eq!(got["answer"]["comment"], "late", "{got}");
    assert!(got["answeredAt"].as_u64().is_some(), "{got}");
    // Friday's view: the approval expired; nobody decided it (a late answer is no decision).
    let friday: Value = s
        .get_json(&format!("/v1/workflow-approvals/{id}"), Some(ACME))
        .await;
    assert_eq!(friday["status"], "expired", "{friday}");
    assert_eq!(friday.get("decidedAt"), Some(&Value::Null), "{friday}");
    assert!(friday.get("answer").is_none(), "{friday}");
    assert!(friday.get("answeredAt").is_none(), "{friday}");
    assert_eq!(friday["updatedAt"], friday["timeoutAt"], "{friday}");
    let view = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(view["result"], "expired", "{view}");
    assert_eq!(view["currentState"], "expired", "{view}");
}

/// A rejection nothing routes fails the run with Friday's reason code `APPROVAL_REJECTED`
/// (then the reference's words), whether the gate says Friday's `onReject` (beside its inbox
/// or in it) or not.
#[tokio::test]
async fn a_rejection_nothing_routes_fails_the_run_with_approval_rejected() {
    let s = Server::start().await;
    let doc = |on_reject: &str, in_inbox: &str| {
        format!(
            "start: review\nstates:\n  review:\n    type: gate_task\n{on_reject}    inbox: {{ \
             kind: APPROVAL, title: \"Ship it?\"{in_inbox} }}\n    on:\n      approved: done\n  \
             done: {{ type: terminal }}\n"
        )
    };
    let workflows = s.root.join("acme/shop/_vance/workflows");
    write(
        &workflows.join("strict.yaml"),
        &doc("    onReject: fail\n", ""),
    );
    write(
        &workflows.join("inboxed.yaml"),
        &doc("", ", onReject: reject_branch"),
    );
    write(&workflows.join("plain.yaml"), &doc("", ""));
    let reject = |run: String| {
        let s = &s;
        async move {
            s.wait_status("shop", &run, &["WAITING"]).await;
            let r = s
                .post(
                    &format!("/v1/workflow-approvals/{run}-2/reject"),
                    Some(ACME),
                )
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            let view = s.wait_status("shop", &run, &["FAILED"]).await;
            view["reason"].as_str().unwrap().to_owned()
        }
    };
    for name in ["strict", "inboxed", "plain"] {
        let run = s.start_run("shop", name, json!({})).await;
        let reason = reject(run).await;
        assert_eq!(
            reason,
            "APPROVAL_REJECTED: the approval of state 'review' was rejected (no transition for \
             outcome 'rejected')",
            "{name}"
        );
    }
    // `on: rejected` (Friday's reject_branch) still routes, as the fixture's approve shows.
    let routed = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &routed, &["WAITING"]).await;
    s.post(
        &format!("/v1/workflow-approvals/{routed}-2/reject"),
        Some(ACME),
    )
    .send()
    .await
    .unwrap();
    let view = s.wait_status("shop", &routed, &["DONE"]).await;
    assert_eq!(view["result"], "rejected");
}

/// Tokens with roles: `ops-bob` (role ops), `dev-carol` (role dev), of tenant acme.
pub(crate) fn approver_tokens(root: &std::path::Path) {
    let mut tokens = std::fs::read_to_string(root.join("_auth/tokens.yaml")).unwrap();
    tokens.push_str(
        "  - token: ops-bob\n    tenant: acme\n    subject: bob\n    scopes: [workflow.read, workflow.run]\n    roles: [ops]\n\
         \x20 - token: ops-dave\n    tenant: acme\n    subject: dave\n    scopes: [workflow.read, workflow.run]\n    roles: [ops]\n\
         \x20 - token: dev-carol\n    tenant: acme\n    subject: carol\n    scopes: [workflow.read, workflow.run]\n    roles: [dev]\n",
    );
    write(&root.join("_auth/tokens.yaml"), &tokens);
}

pub(crate) const GUARDED: &str = "start: review\nstates:\n  review:\n    type: gate_task\n    inbox:\n      kind: APPROVAL\n      title: Deploy?\n      approvers: { roles: [ops], users: [alice] }\n      quorum: 2\n      selfApproval: false\n    on:\n      approved: done\n      rejected: stopped\n  done: { type: terminal, result: deployed }\n  stopped: { type: terminal, result: stopped }\n";

#[tokio::test]
async fn approvers_quorum_and_self_approval_are_enforced_and_refusals_recorded() {
    // Tokens are read at start: add the role tokens, then serve the tree again (on a store of
    // its own, the first server holds the default one).
    let fixture = Server::start().await;
    approver_tokens(&fixture.root);
    let (addr, _handle) = magrathea_server::serve(
        magrathea_server::ServeConfig::new(&fixture.root)
            .addr("127.0.0.1:0".parse().unwrap())
            .store(fixture.root.join("second-store")),
    )
    .await
    .unwrap();
    let url = |p: &str| format!("http://{addr}{p}");
    let client = reqwest::Client::new();
    write(
        &fixture.root.join("acme/shop/_vance/workflows/guarded.yaml"),
        GUARDED,
    );
    // alice (full token) starts it: she may not approve her own run.
    let r: Value = client
        .post(url("/brain/acme/project/shop/workflows/guarded/start"))
        .bearer_auth(ACME)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let run = r["workflowRunId"].as_str().unwrap().to_owned();
    let item = format!("{run}-2");
    let approve = |token: &'static str| {
        client
            .post(url(&format!("/v1/workflow-approvals/{item}/approve")))
            .bearer_auth(token)
            .send()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let v: Value = client
            .get(url(&format!(
                "/brain/acme/project/shop/workflows/runs/{run}"
            )))
            .bearer_auth(ACME)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if v["status"] == "WAITING" {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{v}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let r = approve(ACME).await.unwrap();
    assert_eq!(r.status(), 403, "self approval");
    let r = approve("dev-carol").await.unwrap();
    assert_eq!(r.status(), 403, "not an approver");
    // A comment too long to journal is refused before the approval counts towards the quorum,
    // in words that fit the route it came by (no `kind`, which `/v1` does not take).
    let long = client
        .post(url(&format!("/v1/workflow-approvals/{item}/approve")))
        .bearer_auth("ops-bob")
        .json(&json!({ "comment": "a".repeat(17_000) }))
        .send()
        .await
        .unwrap();
    assert_eq!(long.status(), 400);
    let text = long.text().await.unwrap();
    assert!(
        text.contains("MAG-HTTP-INVALID-ANSWER")
            && text.contains("[MAG-GT002]")
            && text.contains("the comment holds 17000 bytes")
            && !text.contains("kind"),
        "{text}"
    );
    let r: Value = approve("ops-bob").await.unwrap().json().await.unwrap();
    assert_eq!(r["applied"], false);
    assert_eq!(
        r["ignored"], false,
        "the refused approval did not count: {r}"
    );
    assert_eq!(r["pending"], json!({"approvals": ["bob"], "quorum": 2}));
    // The same approver twice still counts once, and the answer says it changed nothing.
    let r: Value = approve("ops-bob").await.unwrap().json().await.unwrap();
    assert_eq!(r["pending"]["approvals"], json!(["bob"]));
    assert_eq!(r["ignored"], true, "{r}");
    let r: Value = approve("ops-dave").await.unwrap().json().await.unwrap();
    assert_eq!(r["applied"], true, "{r}");
    // Once answered, someone not allowed is still refused (and recorded), not ignored.
    let late = client
        .post(url(&format!("/v1/workflow-approvals/{item}/reject")))
        .bearer_auth("dev-carol")
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 403, "a late answer by someone not allowed");
    let one: Value = client
        .get(url(&format!("/v1/workflow-approvals/{item}")))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["status"], "approved");
    assert_eq!(one["answer"]["value"]["approvers"], json!(["bob", "dave"]));
    let refused: Vec<(String, String)> = one["refusals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["by"].as_str().unwrap().into(),
                r["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        refused,
        vec![
            ("alice".into(), "self_approval".into()),
            ("carol".into(), "not_an_approver".into()),
            ("carol".into(), "not_an_approver".into())
        ]
    );
}

#[tokio::test]
async fn a_documents_default_gate_timeout_expires_an_unanswered_approval() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/hurry.yaml"),
        "start: review\ndefaults:\n  gateTimeoutSeconds: 1\nstates:\n  review:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: \"Ship it?\" }\n    on:\n      approved: done\n    catch:\n      timeout: late\n  done: { type: terminal, result: shipped }\n  late: { type: terminal, result: expired }\n",
    );
    let run = s.start_run("shop", "hurry", json!({})).await;
    let view = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(view["result"], "expired");
    let all: Vec<Value> = s
        .get_json("/v1/workflow-approvals?status=expired", Some(ACME))
        .await;
    assert!(
        all.iter().any(|a| a["workflowRunId"] == run.as_str()),
        "{all:?}"
    );
}

#[tokio::test]
async fn an_unknown_approvals_cursor_is_refused_naming_what_to_pass() {
    let s = Server::start().await;
    let r = s
        .get("/v1/workflow-approvals?status=all&cursor=nope", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("X-Next-Cursor"));
}

/// A page of the project's inbox (`query` after the `?`): its items and its
/// `X-Next-Cursor`.
async fn inbox_page(s: &Server, query: &str) -> (Vec<Value>, Option<String>) {
    let r = s
        .get(
            &format!("/brain/acme/project/shop/inbox?{query}"),
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{query}");
    let cursor = r
        .headers()
        .get("x-next-cursor")
        .map(|v| v.to_str().unwrap().to_owned());
    (r.json().await.unwrap(), cursor)
}

#[tokio::test]
async fn the_project_inbox_pages_with_a_cursor_that_outlives_an_answer() {
    let s = Server::start().await;
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = s.start_run("shop", "approve", json!({})).await;
        s.wait_status("shop", &run, &["WAITING"]).await;
        runs.push(run);
    }
    let (first, cursor) = inbox_page(&s, "limit=1").await;
    let cursor = cursor.expect("a next page");
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["workflowRunId"], runs[0].as_str());

    // The item the cursor names is answered before the next page is asked for.
    let id = first[0]["id"].as_str().unwrap();
    let r = s.answer(id, &json!({"kind": "approve"})).await;
    assert_eq!(r.status(), 200);
    s.wait_status("shop", &runs[0], &["DONE"]).await;

    let (second, cursor) = inbox_page(&s, &format!("limit=1&cursor={cursor}")).await;
    let cursor = cursor.expect("a third page");
    assert_eq!(second.len(), 1);
    assert_eq!(second[0]["workflowRunId"], runs[1].as_str());

    let (last, cursor) = inbox_page(&s, &format!("limit=5&cursor={cursor}")).await;
    assert_eq!(cursor, None, "the last page names no next one");
    assert_eq!(last.len(), 1);
    assert_eq!(last[0]["workflowRunId"], runs[2].as_str());

    // A cursor that names no item is refused.
    let r = s
        .get("/brain/acme/project/shop/inbox?cursor=nope", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "MAG-HTTP-INVALID-CURSOR".into()));
}

/// Placeholders in `approvers:` are resolved when the gate opens (reference §2.4: any string
/// of a state's spec), so the user a parameter names may answer and others may not.
#[tokio::test]
async fn approvers_named_by_a_parameter_are_resolved_when_the_gate_opens() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/named.yaml"),
        "parameters:\n  who: { type: string }\nstart: g\nstates:\n  g:\n    type: gate_task\n    \
         inbox:\n      kind: APPROVAL\n      title: Ship?\n      approvers: { users: [\"${params.who}\"] }\n    \
         on: { approved: done, rejected: done }\n  done: { type: terminal }\n",
    );
    let run = s.start_run("shop", "named", json!({"who": "runner"})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let item = s.pending_item(&run).await;
    let id = item["id"].as_str().unwrap();
    let got: Value = s
        .get_json(&format!("/brain/acme/project/shop/inbox/{id}"), Some(ACME))
        .await;
    assert_eq!(
        got["meta"]["approvers"]["users"],
        json!(["runner"]),
        "{got}"
    );
    let answer = format!("/brain/acme/project/shop/inbox/{id}/answer");
    // alice is not the approver the parameter named.
    let r = s
        .post(&answer, Some(ACME))
        .json(&json!({"kind": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = s
        .post(&answer, Some(ACME_RUN))
        .json(&json!({"kind": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let v = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    assert_eq!(v["status"], "DONE", "{v}");
}

/// Friday's `approverUserId` and `approverRole` select the approvals a person may answer: one
/// naming its approvers lists under each named user and role (not under its assignee), one
/// naming none under the user it is assigned to.
#[tokio::test]
async fn approvals_are_listed_by_approver_user_and_role() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/guarded.yaml"),
        GUARDED,
    );
    // alice starts the guarded one (approvers: alice and role ops), runner the open one.
    let guarded = s.start_run("shop", "guarded", json!({})).await;
    let open: Value = s
        .post_json(
            "/brain/acme/project/shop/workflows/approve/start",
            Some(ACME_RUN),
            &json!({}),
        )
        .await;
    let open = open["workflowRunId"].as_str().unwrap().to_owned();
    s.wait_status("shop", &guarded, &["WAITING"]).await;
    s.wait_status("shop", &open, &["WAITING"]).await;
    let runs = |query: &'static str| {
        let s = &s;
        async move {
            let list: Vec<Value> = s
                .get_json(&format!("/v1/workflow-approvals?{query}"), Some(ACME))
                .await;
            list.iter()
                .map(|a| a["workflowRunId"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(runs("").await.len(), 2);
    let list: Vec<Value> = s.get_json("/v1/workflow-approvals", Some(ACME)).await;
    let of = |run: &str| list.iter().find(|a| a["workflowRunId"] == run).unwrap();
    // Friday's approverUserId and approverRole: the first named, or the assignee.
    assert_eq!(of(&guarded)["approverUserId"], "alice");
    assert_eq!(of(&guarded)["approverRole"], "ops");
    assert_eq!(of(&open)["approverUserId"], "runner");
    assert_eq!(of(&open).get("approverRole"), Some(&Value::Null));
    assert_eq!(of(&open).get("timeoutAt"), Some(&Value::Null));
    assert_eq!(runs("approverUserId=alice").await, vec![guarded.clone()]);
    assert_eq!(runs("approverUserId=runner").await, vec![open.clone()]);
    assert_eq!(runs("approverUserId=bob").await, Vec::<String>::new());
    assert_eq!(runs("approverRole=ops").await, vec![guarded.clone()]);
    assert_eq!(runs("approverRole=dev").await, Vec::<String>::new());
    assert_eq!(
        runs("approverUserId=alice&approverRole=ops&status=pending").await,
        vec![guarded]
    );
}

/// The record of refused answers is bounded per approval: past the first 100, a refusal is
/// still answered 403 but no longer kept, so a token cannot grow the store by refusals.
#[tokio::test]
async fn refused_answers_are_recorded_up_to_a_bound() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/guarded.yaml"),
        GUARDED,
    );
    // alice starts it, and may not approve her own run (selfApproval: false).
    let run = s.start_run("shop", "guarded", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let item = format!("{run}-2");
    for _ in 0..105 {
        let r = s
            .post(
                &format!("/v1/workflow-approvals/{item}/approve"),
                Some(ACME),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
    }
    let one: Value = s
        .get_json(&format!("/v1/workflow-approvals/{item}"), Some(ACME))
        .await;
    assert_eq!(one["refusals"].as_array().unwrap().len(), 100, "{one}");
    assert_eq!(one["status"], "pending");
}

#[tokio::test]
async fn whoever_fires_a_schedule_by_hand_is_its_runs_requester_and_no_self_approver() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/guarded.yaml"),
        GUARDED,
    );
    // The schedule runs as carol; alice fires it by hand.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/scheduler/deploy.yaml"))
        .bearer_auth(ACME)
        .body("cron: \"0 0 1 1 *\"\nworkflow: guarded\nrunAs: carol\n")
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    let r: Value = s
        .post_json(
            "/brain/acme/project/shop/schedules/deploy/trigger",
            Some(ACME),
            &json!({}),
        )
        .await;
    let run = r["workflowRunId"].as_str().unwrap().to_owned();
    let view = s.wait_status("shop", &run, &["WAITING"]).await;
    assert_eq!(view["startedBy"], "carol", "{view}");
    assert_eq!(view["requestedBy"], "alice", "{view}");
    // alice may not approve the run she fired (selfApproval: false), though it runs as carol.
    let r = s
        .post(
            &format!("/v1/workflow-approvals/{run}-2/approve"),
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "self approval through a schedule's runAs");
    let body = r.text().await.unwrap();
    assert!(body.contains("selfApproval"), "{body}");
}
