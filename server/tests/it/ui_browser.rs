//! The web UI at `/ui` in a real headless Chromium, against a real `magrathea serve`: sign
//! in, live runs, the inbox moving a run's graph on, a failed run's journal, a broken
//! document's diagnostics, and a token without `workflow.run` seeing no answer buttons.
//! Screenshots of the main views land in `target/ui-screenshots/`.

use crate::http_common;
use crate::ui_common;

use http_common::{ACME, ACME_READ};
use serde_json::json;
use ui_common::Ui;

/// The `data-status` of the run's row in the runs list, or null.
const ROW_STATUS: &str = "const r = document.querySelector(`tr[data-run=\"${arguments[0]}\"]`); \
     return r ? r.dataset.status : null;";

/// The states of the graph on screen marked `cls`.
const GRAPH_STATES: &str = "return [...document.querySelectorAll(`#run-graph g.node.${arguments[0]}`)] \
     .map(g => g.dataset.state).join(',');";

#[tokio::test(flavor = "multi_thread")]
async fn signing_in_lists_the_projects_of_the_token_and_keeps_the_token_out_of_the_url() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    let options = ui
        .wait_js(
            "const o = [...document.querySelectorAll('#project-select option')].map(o => o.value); \
             return o.length ? o.join(',') : null;",
            "the project picker",
        )
        .await;
    assert_eq!(options, json!("acme/lab,acme/shop"));
    let who = ui
        .wait_js(
            "return document.getElementById('who').textContent",
            "the subject",
        )
        .await;
    assert_eq!(who, json!("Signed in as alice"));
    let url = ui.c.current_url().await.unwrap().to_string();
    assert!(!url.contains(ACME), "{url}");
    // Kept in the tab's session storage only.
    let stored = ui
        .js("return [sessionStorage.getItem('magrathea.token'), localStorage.length, document.cookie]", vec![])
        .await;
    assert_eq!(stored, json!([ACME, 0, ""]));
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_token_is_told_and_not_kept() {
    let ui = Ui::start().await;
    ui.c.goto(&ui.url("/ui")).await.unwrap();
    ui.wait_js(
        "return !document.getElementById('sign-in').hidden",
        "the sign-in form",
    )
    .await;
    ui.js(
        "document.getElementById('token').value = 'not-a-token'; \
         document.getElementById('sign-in-form').requestSubmit(); return null;",
        vec![],
    )
    .await;
    let error = ui
        .wait_js(
            "return document.getElementById('sign-in-error').textContent",
            "the refusal",
        )
        .await;
    assert_eq!(error, json!("That token was refused."));
    let stored = ui
        .js("return sessionStorage.getItem('magrathea.token')", vec![])
        .await;
    assert_eq!(stored, json!(null));
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_started_over_the_api_appears_and_reaches_done_live() {
    let ui = Ui::start().await;
    let hello = ui.start_run("hello", ACME).await;
    let fails = ui.start_run("fails", ACME).await;
    ui.wait_status(&hello, &["DONE"]).await;
    ui.wait_status(&fails, &["FAILED"]).await;
    ui.sign_in(ACME).await;
    ui.wait_js(
        "return !!document.getElementById('runs-table')",
        "the runs list",
    )
    .await;
    // A mark on the page: it survives only if the page is never reloaded.
    ui.js("window.__stillHere = true; return null;", vec![])
        .await;
    let run = ui.start_run("approve", ACME).await;
    let status = ui
        .wait_js_args(ROW_STATUS, vec![json!(run)], "the new run's row")
        .await;
    assert!(
        status == json!("RUNNING") || status == json!("WAITING"),
        "{status}"
    );
    ui.screenshot("runs").await;
    // Approved over the API, the row turns DONE without a reload.
    let items: serde_json::Value = ui
        .http
        .get(ui.url("/brain/acme/project/shop/inbox"))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let item = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["workflowRunId"] == json!(run))
        .expect("the gate's item")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = ui
        .http
        .post(ui.url(&format!("/brain/acme/project/shop/inbox/{item}/answer")))
        .bearer_auth(ACME)
        .json(&json!({"kind": "approve"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    ui.wait_js_args(
        "const r = document.querySelector(`tr[data-run=\"${arguments[0]}\"]`); \
         return r && r.dataset.status === 'DONE';",
        vec![json!(run)],
        "the run's row to show DONE",
    )
    .await;
    assert_eq!(
        ui.js("return window.__stillHere === true", vec![]).await,
        json!(true)
    );
    ui.close().await;
}

/// Answers the project's first inbox item over the API (not through the page).
#[tokio::test(flavor = "multi_thread")]
async fn approving_in_the_inbox_moves_the_runs_graph_on() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    let current = ui
        .wait_js_args(GRAPH_STATES, vec![json!("current")], "the current state")
        .await;
    assert_eq!(current, json!("review"));
    ui.view("#/inbox").await;
    ui.wait_js(
        "return [...document.querySelectorAll('#inbox-items article h3')].some(h => h.textContent.includes('Ship it?'))",
        "the gate's item",
    )
    .await;
    ui.screenshot("inbox").await;
    ui.js(
        "document.querySelector('#inbox-items textarea[name=comment]').value = 'looks good'; return null;",
        vec![],
    )
    .await;
    ui.click("#inbox-items button[data-answer=approve]").await;
    ui.wait_js(
        "const m = document.getElementById('inbox-message'); return m.textContent.includes('Answered');",
        "the answer's confirmation",
    )
    .await;
    ui.click("#inbox-message a").await;
    let current = ui
        .wait_js_args(
            "const s = [...document.querySelectorAll('#run-graph g.node.current')].map(g => g.dataset.state).join(','); \
             return s === 'yes' ? s : null;",
            vec![],
            "the graph to move on to `yes`",
        )
        .await;
    assert_eq!(current, json!("yes"));
    let taken = ui
        .js("return [...document.querySelectorAll('#run-graph g.edge.taken')].map(g => g.dataset.edge).join(',')", vec![])
        .await;
    assert_eq!(taken, json!("review->yes"));
    let status = ui.wait_status(&run, &["DONE"]).await;
    assert_eq!(status["result"], json!("approved"));
    ui.wait_js(
        "return document.getElementById('run-title').textContent.includes('DONE')",
        "the run's DONE badge",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_graph_of_an_open_run_moves_on_live() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    ui.wait_js_args(GRAPH_STATES, vec![json!("current")], "the current state")
        .await;
    ui.js("window.__stillHere = true; return null;", vec![])
        .await;
    ui.answer_over_the_api(json!({"kind": "reject"})).await;
    ui.wait_js(
        "return [...document.querySelectorAll('#run-graph g.node.current')].map(g => g.dataset.state).join(',') === 'no'",
        "the graph to move on to `no` live",
    )
    .await;
    assert_eq!(
        ui.js("return window.__stillHere === true", vec![]).await,
        json!(true)
    );
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_runs_journal_opens() {
    let ui = Ui::start().await;
    let run = ui.start_run("fails", ACME).await;
    ui.wait_status(&run, &["FAILED"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    ui.wait_js(
        "return document.getElementById('run-title').textContent.includes('FAILED')",
        "the FAILED badge",
    )
    .await;
    // The cause behind the reason, as `runs show` prints it: the last failed attempt.
    let error = ui
        .wait_js(
            "const e = document.getElementById('run-error'); return e ? e.textContent : null;",
            "the run's last error",
        )
        .await;
    assert!(
        error
            .as_str()
            .is_some_and(|e| e.starts_with("boom attempt 1: business_error")),
        "{error}"
    );
    // The failed step's result: its outcome, and its payload once expanded.
    let outcome = ui
        .wait_js(
            "const r = document.querySelector('#journal tr.rec-bad[data-type=TaskResultRecord]'); \
             return r ? r.children[5].textContent : null;",
            "the failed step in the journal",
        )
        .await;
    assert_ne!(outcome, json!("success"));
    ui.click("#journal tr.rec-bad[data-type=TaskResultRecord] summary")
        .await;
    let payload = ui
        .wait_js(
            "const d = document.querySelector('#journal tr.rec-bad[data-type=TaskResultRecord] details'); \
             return d && d.open ? d.querySelector('pre').innerText : null;",
            "the expanded payload",
        )
        .await;
    let payload = payload.as_str().unwrap();
    assert!(payload.contains("about to fail"), "{payload}");
    let types = ui
        .js("return [...document.querySelectorAll('#journal tr')].map(r => r.dataset.type).filter(Boolean)", vec![])
        .await;
    assert_eq!(
        types.as_array().unwrap().last(),
        Some(&json!("StatusRecord"))
    );
    // A FAILED run offers a retry to a token that may run.
    ui.wait_js(
        "return !!document.querySelector('button[data-action=retry]')",
        "the retry button",
    )
    .await;
    ui.screenshot("run-detail").await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_broken_documents_validation_error_shows_its_line() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    ui.view("#/workflows").await;
    let diag = ui
        .wait_js(
            "const r = document.querySelector('tr[data-workflow=broken] .diagnostics'); \
             return r ? r.innerText : null;",
            "the broken document's diagnostics",
        )
        .await;
    let diag = diag.as_str().unwrap();
    // `start: nowhere` is on line 1 of the document.
    assert!(diag.contains("broken.yaml:1:"), "{diag}");
    assert!(diag.contains("nowhere"), "{diag}");
    let valid = ui
        .js(
            "return document.querySelector('tr[data-workflow=hello] .badge').textContent",
            vec![],
        )
        .await;
    assert_eq!(valid, json!("VALID"));
    ui.screenshot("workflows").await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_workflow_run_sees_no_answer_buttons() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME_READ).await;
    ui.view("#/inbox").await;
    ui.wait_js(
        "return [...document.querySelectorAll('#inbox-items article')].length === 1",
        "the pending item",
    )
    .await;
    let buttons = ui
        .js(
            "return document.querySelectorAll('#inbox-items button, #inbox-items textarea').length",
            vec![],
        )
        .await;
    assert_eq!(buttons, json!(0));
    ui.view(&format!("#/run/{run}")).await;
    ui.wait_js_args(GRAPH_STATES, vec![json!("current")], "the run's graph")
        .await;
    let actions = ui
        .js(
            "return document.querySelectorAll('button[data-action]').length",
            vec![],
        )
        .await;
    assert_eq!(actions, json!(0));
    ui.close().await;
}

/// The run ids of the runs list's rows, in order, joined by commas.
const ROWS: &str = "return [...document.querySelectorAll('#runs-table tr[data-run]')] \
     .map(r => r.dataset.run).join(',') === arguments[0];";

#[tokio::test(flavor = "multi_thread")]
async fn the_runs_list_filters_by_status_and_opens_a_run_by_id() {
    let ui = Ui::start().await;
    let hello = ui.start_run("hello", ACME).await;
    ui.wait_status(&hello, &["DONE"]).await;
    let fails = ui.start_run("fails", ACME).await;
    ui.wait_status(&fails, &["FAILED"]).await;
    ui.sign_in(ACME).await;
    // Newest first.
    ui.wait_js_args(
        ROWS,
        vec![json!(format!("{fails},{hello}"))],
        "both runs, newest first",
    )
    .await;
    ui.js(
        "const s = document.getElementById('f-status'); s.value = 'FAILED'; \
         s.form.requestSubmit(); return null;",
        vec![],
    )
    .await;
    ui.wait_js_args(ROWS, vec![json!(fails)], "only the failed run")
        .await;
    ui.js(
        "const i = document.getElementById('run-search'); i.value = arguments[0]; \
         i.form.requestSubmit(); return null;",
        vec![json!(hello)],
    )
    .await;
    ui.wait_js_args(
        "const e = document.getElementById('run-id'); return e && e.textContent === arguments[0];",
        vec![json!(hello)],
        "the run opened by its id",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_and_its_sub_run_link_both_ways() {
    let ui = Ui::start().await;
    let parent = ui.start_run("parent", ACME).await;
    ui.wait_status(&parent, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{parent}")).await;
    ui.wait_js(
        "return !!document.querySelector('#subruns-title')",
        "the sub-runs",
    )
    .await;
    let state = ui
        .js(
            "return document.querySelector('#subruns-title').parentElement.innerText",
            vec![],
        )
        .await;
    assert!(
        state.as_str().unwrap().contains("hello from state call"),
        "{state}"
    );
    ui.click("#subruns-title + ul a").await;
    let child = ui
        .wait_js_args(
            "const e = document.getElementById('run-id'); \
             return e && e.textContent !== arguments[0] ? e.textContent : null;",
            vec![json!(parent)],
            "the sub-run's page",
        )
        .await;
    let view = ui.wait_status(child.as_str().unwrap(), &["DONE"]).await;
    assert_eq!(view["parentRunId"], json!(parent));
    ui.wait_js(
        "return document.body.innerText.includes('Sub-run of')",
        "the link to the parent",
    )
    .await;
    // A sub-run is run again through its parent: the server refuses it, the page offers none.
    ui.wait_js(
        "return document.getElementById('run-title').textContent.includes('DONE')",
        "the sub-run's DONE badge",
    )
    .await;
    assert_eq!(
        ui.js(
            "return [...document.querySelectorAll('button[data-action]')].map(b => b.dataset.action).join(',')",
            vec![]
        )
        .await,
        json!("")
    );
    ui.click(&format!("a[href^=\"#/run/{parent}?\"]")).await;
    ui.wait_js_args(
        "const e = document.getElementById('run-id'); return e && e.textContent === arguments[0];",
        vec![json!(parent)],
        "the parent's page again",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workflows_view_shows_a_schedule_its_next_fire_and_its_last_delivery() {
    let ui = Ui::start().await;
    // A schedule written through the documents API registers at once; fired by hand, it has
    // a delivery.
    let put = ui
        .http
        .put(ui.url("/brain/acme/project/shop/documents/scheduler/nightly.yaml"))
        .bearer_auth(ACME)
        .body("cron: \"0 0 6 * * *\"\nworkflow: hello\n")
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), 201);
    let fired = ui
        .http
        .post(ui.url("/brain/acme/project/shop/schedules/nightly/trigger"))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    assert_eq!(fired.status(), 202);
    ui.sign_in(ACME).await;
    ui.view("#/workflows").await;
    let row = ui
        .wait_js(
            "const r = [...document.querySelectorAll('#triggers table.triggers tbody tr')] \
               .find(r => r.cells[0].textContent === 'nightly'); \
             return r && r.cells[5].textContent ? [...r.cells].slice(0, 6).map(c => c.textContent) : null;",
            "the schedule's row with its last delivery",
        )
        .await;
    assert_eq!(row[1], "cron", "{row}");
    assert_eq!(row[2], "hello", "{row}");
    assert_eq!(row[3], "yes", "{row}");
    assert!(
        !row[4].as_str().unwrap().is_empty(),
        "a next fire time: {row}"
    );
    assert!(
        row[5].as_str().unwrap().starts_with("accepted "),
        "the last delivery: {row}"
    );
    ui.screenshot("triggers").await;
    // The view kept open follows the schedule: a later delivery replaces the last one shown.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let fired = ui
        .http
        .post(ui.url("/brain/acme/project/shop/schedules/nightly/trigger"))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    assert_eq!(fired.status(), 202);
    ui.wait_js_args(
        "const r = [...document.querySelectorAll('#triggers table.triggers tbody tr')] \
           .find(r => r.cells[0].textContent === 'nightly'); \
         return r && r.cells[5].textContent.startsWith('accepted ') \
           && r.cells[5].textContent !== arguments[0];",
        vec![row[5].clone()],
        "the later delivery, without reopening the view",
    )
    .await;
    // A trigger that cannot fire says why, in the server's words.
    let put = ui
        .http
        .put(ui.url("/brain/acme/project/shop/documents/events/gh.yaml"))
        .bearer_auth(ACME)
        .body("workflow: hello\nwebhook:\n  tokenSetting: webhooks.gh.path\n")
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.text().await.unwrap());
    ui.view("#/runs").await;
    ui.view("#/workflows").await;
    let enabled = ui
        .wait_js(
            "const r = [...document.querySelectorAll('#triggers table.triggers tbody tr')] \
               .find(r => r.cells[0].textContent === 'gh'); \
             return r ? r.cells[3].textContent : null;",
            "the webhook's row",
        )
        .await;
    let enabled = enabled.as_str().unwrap();
    assert!(
        enabled.starts_with("inactive") && enabled.contains("MAG-TR002"),
        "{enabled}"
    );
    ui.close().await;
}

/// Clicks the button of the run view whose text is `arguments[0]`, once it is there.
/// Clicks the enabled action button labelled `arguments[0]`, as a person can (a button is
/// disabled while the previous action's request is on its way).
const CLICK_BUTTON: &str = "const b = [...document.querySelectorAll('button[data-action]')] \
       .find(b => b.textContent === arguments[0] && !b.disabled); \
     if (!b) return null; b.click(); return true;";

#[tokio::test(flavor = "multi_thread")]
async fn the_operators_buttons_pause_resume_and_cancel_a_run_and_retry_a_failed_one() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    ui.wait_js_args(CLICK_BUTTON, vec![json!("Pause")], "the Pause button")
        .await;
    ui.wait_status(&run, &["PAUSED"]).await;
    ui.wait_js(
        "return document.getElementById('run-title').textContent.includes('PAUSED')",
        "the run's PAUSED badge",
    )
    .await;
    ui.wait_js_args(CLICK_BUTTON, vec![json!("Resume")], "the Resume button")
        .await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.wait_js_args(CLICK_BUTTON, vec![json!("Cancel")], "the Cancel button")
        .await;
    ui.wait_status(&run, &["CANCELLED"]).await;

    let failed = ui.start_run("fails", ACME).await;
    ui.wait_status(&failed, &["FAILED"]).await;
    ui.view(&format!("#/run/{failed}")).await;
    ui.wait_js_args(
        CLICK_BUTTON,
        vec![json!("Retry (frozen definition)")],
        "the Retry button",
    )
    .await;
    let retry = ui
        .wait_js(
            "const a = [...document.querySelectorAll('a.mono')].find(a => a.parentElement.textContent.startsWith('Retry started')); \
             return a ? a.textContent : null;",
            "the retry's run link",
        )
        .await;
    let retry = retry.as_str().unwrap().to_string();
    assert_ne!(retry, failed);
    let origin: serde_json::Value = ui
        .http
        .get(ui.url(&format!(
            "/brain/acme/project/shop/workflows/runs/{retry}/origin"
        )))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(origin["kind"], "retry", "{origin}");
    assert_eq!(origin["definition"], "frozen", "{origin}");
    ui.close().await;
}

const DECIDE: &str = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: DECISION, title: "Which way?", options: [ship, hold] }
    on: { ship: shipped, hold: held }
  shipped: { type: terminal, result: shipped }
  held: { type: terminal, result: held }
"#;

const FEEDBACK: &str = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: FEEDBACK, title: "Any notes?" }
    storeAs: notes
    on: { success: done }
  done: { type: terminal, result: "${state.notes.text}" }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_inbox_chooses_an_option_and_sends_feedback() {
    let ui = Ui::start().await;
    let dir = ui.root.join("acme/shop/_vance/workflows");
    std::fs::write(dir.join("decide.yaml"), DECIDE).unwrap();
    std::fs::write(dir.join("feedback.yaml"), FEEDBACK).unwrap();
    let decide = ui.start_run("decide", ACME).await;
    let notes = ui.start_run("feedback", ACME).await;
    ui.wait_status(&decide, &["WAITING"]).await;
    ui.wait_status(&notes, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/inbox").await;
    // The DECISION item offers its options as buttons; `hold` is chosen.
    ui.wait_js(
        "const a = [...document.querySelectorAll('#inbox-items article')] \
           .find(a => a.textContent.includes('Which way?')); \
         const b = a && [...a.querySelectorAll('button[data-answer=choose]')].find(b => b.textContent === 'hold'); \
         if (!b) return null; b.click(); return true;",
        "the decision's `hold` button",
    )
    .await;
    let decided = ui.wait_status(&decide, &["DONE"]).await;
    assert_eq!(decided["result"], json!("held"));
    // The FEEDBACK item takes a text; approve and reject, which it refuses, are not offered.
    let offered = ui
        .wait_js(
            "const a = [...document.querySelectorAll('#inbox-items article')] \
               .find(a => a.textContent.includes('Any notes?')); \
             return a ? [...a.querySelectorAll('button[data-answer]')].map(b => b.dataset.answer).join(',') : null;",
            "the feedback item's buttons",
        )
        .await;
    assert_eq!(offered, json!("text,insufficient_info"));
    ui.wait_js(
        "const a = [...document.querySelectorAll('#inbox-items article')] \
           .find(a => a.textContent.includes('Any notes?')); \
         const t = a && a.querySelector('textarea[name=text]'); \
         const b = a && a.querySelector('button[data-answer=text]'); \
         if (!t || !b) return null; t.value = 'ship on Monday'; b.click(); return true;",
        "the feedback form",
    )
    .await;
    let answered = ui.wait_status(&notes, &["DONE"]).await;
    assert_eq!(answered["result"], json!("ship on Monday"));
    ui.close().await;
}

/// Every outcome of the gate leads to `done`: only the edge of the one taken is drawn so.
const FORK: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Fork?" }
    on: { approved: done, rejected: done }
  done: { type: terminal }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_graph_is_the_definition_it_ran_with_and_marks_the_outcome_taken() {
    let ui = Ui::start().await;
    let file = ui.root.join("acme/shop/_vance/workflows/fork.yaml");
    std::fs::write(&file, FORK).unwrap();
    let run = ui.start_run("fork", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.answer_over_the_api(json!({"kind": "approve"})).await;
    ui.wait_status(&run, &["DONE"]).await;
    // The document moves on; the run keeps the definition it started with.
    std::fs::write(&file, FORK.replace("review", "check")).unwrap();
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    let current = ui
        .wait_js_args(GRAPH_STATES, vec![json!("current")], "the current state")
        .await;
    assert_eq!(current, json!("done"));
    let visited = ui.js(GRAPH_STATES, vec![json!("visited")]).await;
    assert_eq!(visited, json!("review,done"));
    let taken = ui
        .js("return [...document.querySelectorAll('#run-graph g.edge.taken')].map(g => g.dataset.label).join(',')", vec![])
        .await;
    assert_eq!(taken, json!("approved"));
    ui.close().await;
}
