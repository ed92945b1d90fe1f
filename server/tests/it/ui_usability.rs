//! The web UI as people use it, in a real headless Chromium against a real `magrathea serve`:
//! a double click acts once, a comment being typed survives the inbox's refresh, the journal
//! marks failures only, a run's link opens it from any project, large integers are shown as
//! the server sent them, a waiting run's duration goes on, a token that may answer but not
//! read finds its approvals, the skip link leaves the view where it is, and a workflow's page
//! starts a run with the parameters written in it.

use std::time::Duration;

use crate::http_common;
use crate::ui_common;

use http_common::{ACME, ACME_RUN};
use serde_json::{Value, json};
use ui_common::Ui;

/// The runs of `workflow` in acme/shop, over the API.
async fn runs_of(ui: &Ui, workflow: &str) -> Vec<Value> {
    ui.http
        .get(ui.url(&format!(
            "/brain/acme/project/shop/workflows/runs?workflow={workflow}"
        )))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_double_click_on_run_again_starts_one_run() {
    let ui = Ui::start().await;
    let run = ui.start_run("hello", ACME).await;
    ui.wait_status(&run, &["DONE"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    // Two clicks in one go, as a double click gives them.
    ui.wait_js(
        "const b = [...document.querySelectorAll('button[data-action=rerun]')][0]; \
         if (!b) return null; b.click(); b.click(); return true;",
        "the Run again button",
    )
    .await;
    ui.wait_js(
        "return document.body.innerText.includes('Rerun started')",
        "the rerun's link",
    )
    .await;
    // Whatever the second click sent has had ample time to arrive.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let runs = runs_of(&ui, "hello").await;
    assert_eq!(runs.len(), 2, "{runs:?}");
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_comment_being_typed_survives_the_inbox_refresh() {
    let ui = Ui::start().await;
    let first = ui.start_run("approve", ACME).await;
    ui.wait_status(&first, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/inbox").await;
    ui.wait_js(
        "return document.querySelectorAll('#inbox-items article').length === 1",
        "the pending item",
    )
    .await;
    // Typed, then the focus moves elsewhere (a person reading another card).
    ui.js(
        "const t = document.querySelector('#inbox-items textarea[name=comment]'); \
         t.focus(); t.value = 'half-typed comment'; \
         t.dispatchEvent(new Event('input', {bubbles: true})); t.blur(); \
         document.getElementById('inbox-title').focus(); return null;",
        vec![],
    )
    .await;
    // A second item makes the inbox reload.
    let second = ui.start_run("approve", ACME).await;
    ui.wait_status(&second, &["WAITING"]).await;
    ui.wait_js(
        "return document.querySelectorAll('#inbox-items article').length === 2",
        "the second item",
    )
    .await;
    let kept = ui
        .js(
            "const a = document.querySelector(`#inbox-items article[data-item^=\"${arguments[0]}\"]`); \
             return a.querySelector('textarea[name=comment]').value;",
            vec![json!(first)],
        )
        .await;
    assert_eq!(kept, json!("half-typed comment"));
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_journal_marks_failures_and_not_an_approval() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.answer_over_the_api(json!({"kind": "approve"})).await;
    ui.wait_status(&run, &["DONE"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    let marks = ui
        .wait_js(
            "const rows = [...document.querySelectorAll('#journal tr[data-type=TaskResultRecord]')]; \
             const done = [...document.querySelectorAll('#journal tr[data-type=StatusRecord]')].length; \
             return rows.length && done ? rows.map(r => `${r.children[5].textContent}:${r.classList.contains('rec-bad')}`).join(',') : null;",
            "the gate's result in the journal",
        )
        .await;
    assert_eq!(marks, json!("approved:false"));
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_runs_link_names_its_project_and_opens_it_from_another() {
    let ui = Ui::start().await;
    let run = ui.start_run("hello", ACME).await;
    ui.wait_status(&run, &["DONE"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/runs").await;
    let href = ui
        .wait_js_args(
            "const a = document.querySelector(`tr[data-run=\"${arguments[0]}\"] a`); \
             return a ? a.getAttribute('href') : null;",
            vec![json!(run)],
            "the run's row",
        )
        .await;
    let href = href.as_str().unwrap().to_owned();
    assert!(href.contains("project=acme%2Fshop"), "{href}");
    // Another project on screen, then the link (as from a bookmark or a colleague).
    ui.pick_project("acme/lab").await;
    ui.view(&href).await;
    ui.wait_js_args(
        "const e = document.getElementById('run-id'); return e && e.textContent === arguments[0];",
        vec![json!(run)],
        "the run's page",
    )
    .await;
    assert_eq!(
        ui.js(
            "return document.getElementById('project-select').value",
            vec![]
        )
        .await,
        json!("acme/shop")
    );
    // A project the token may not open is said so, not guessed.
    ui.view(&format!("#/run/{run}?project=globex%2Fshop")).await;
    ui.wait_js(
        "return document.body.innerText.includes('no access to project globex/shop')",
        "the refusal",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn journal_payloads_show_large_integers_as_the_server_sent_them() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    let raw = ui
        .http
        .get(ui.url(&format!(
            "/brain/acme/project/shop/workflows/runs/{run}/journal"
        )))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // An integer beyond what a JavaScript number holds exactly (2^53).
    let big = raw
        .split(|c: char| !c.is_ascii_digit())
        .find(|d| d.parse::<u64>().is_ok_and(|n| n > 1 << 53))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("no large integer in the journal: {raw}"));
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    let shown = ui
        .wait_js(
            "const pres = [...document.querySelectorAll('#journal details pre')]; \
             return pres.length ? pres.map(p => p.textContent).join('\\n') : null;",
            "the journal's payloads",
        )
        .await;
    assert!(shown.as_str().unwrap().contains(&big), "{big} in {shown}");
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_runs_duration_goes_on() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view(&format!("#/run/{run}")).await;
    let first = ui
        .wait_js(
            "const d = document.getElementById('run-duration'); return d ? d.textContent : null;",
            "the duration",
        )
        .await;
    // No record arrives while the run waits at its gate; the duration moves all the same.
    ui.wait_js_args(
        "const d = document.getElementById('run-duration'); return d && d.textContent !== arguments[0];",
        vec![first],
        "the duration to move on",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_that_may_answer_but_not_read_finds_its_approvals_and_answers_them() {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME_RUN).await;
    ui.view("#/inbox").await;
    ui.wait_js(
        "return [...document.querySelectorAll('#inbox-items article h3')].some(h => h.textContent.includes('Ship it?'))",
        "the approval",
    )
    .await;
    // It cannot read runs: the card names the run without a link to a page it cannot open.
    let links = ui
        .js(
            "return document.querySelectorAll('#inbox-items a[href^=\"#/run/\"]').length",
            vec![],
        )
        .await;
    assert_eq!(links, 0);
    assert!(ui.page_text().await.contains(&run));
    ui.click("#inbox-items button[data-answer=approve]").await;
    let view = ui.wait_status(&run, &["DONE"]).await;
    assert_eq!(view["result"], "approved", "{view}");
    let said = ui
        .wait_js(
            "const m = document.querySelector('p.ok'); return m ? m.innerText : null",
            "the answer's message",
        )
        .await;
    assert!(!said.as_str().unwrap().contains("Open the run"), "{said}");
    ui.close().await;
}

/// A token that may start runs but not read documents is told, on a workflow's page, that its
/// scope is missing: not that the project has no such document.
#[tokio::test(flavor = "multi_thread")]
async fn a_token_that_may_not_read_is_told_so_on_a_workflow_s_page() {
    let ui = Ui::start().await;
    ui.sign_in(ACME_RUN).await;
    ui.view("#/workflow/hello").await;
    let said = ui
        .wait_js(
            "const t = document.body.innerText; \
             return t.includes('Document') && (t.match(/workflow\\.read/g) || []).length >= 3 \
             ? t : null",
            "the graph, triggers and document sections each saying the scope is missing",
        )
        .await;
    assert!(
        !said.as_str().unwrap().contains("No document of this name"),
        "{said}"
    );
    ui.close().await;
}

const LONG_NAMES: &str = r#"
start: collect_customer_information_from_the_form
states:
  collect_customer_information_from_the_form:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Complete?" }
    on: { approved: notify_customer_by_email_done }
    catch: { human_rejected: notify_customer_by_email_done }
  notify_customer_by_email_done: { type: terminal }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn long_state_names_fit_their_nodes_and_labels_between_one_pair_do_not_overlap() {
    let ui = Ui::start().await;
    http_common::write(
        &ui.root.join("acme/shop/_vance/workflows/longnames.yaml"),
        LONG_NAMES,
    );
    ui.sign_in(ACME).await;
    ui.view("#/workflow/longnames").await;
    let overflow = ui
        .wait_js(
            "const nodes = [...document.querySelectorAll('svg.graph g.node')]; \
             if (nodes.length !== 2) return null; \
             return nodes.map(g => { const t = g.querySelector('text.node-name'); \
               const r = g.querySelector('rect'); \
               return t.getComputedTextLength() - r.width.baseVal.value; }).join(',');",
            "the graph's nodes",
        )
        .await;
    for over in overflow.as_str().unwrap().split(',') {
        let over: f64 = over.parse().unwrap();
        assert!(over <= 0.0, "a name wider than its node by {over} px");
    }
    let labels = ui
        .js(
            "return [...document.querySelectorAll('svg.graph g.edge text.edge-label')] \
               .map(t => t.getBBox()).map(b => [b.x, b.y, b.width, b.height]);",
            vec![],
        )
        .await;
    let boxes: Vec<Vec<f64>> = serde_json::from_value(labels).unwrap();
    assert_eq!(boxes.len(), 2, "{boxes:?}");
    let (a, b) = (&boxes[0], &boxes[1]);
    let apart =
        a[1] + a[3] <= b[1] || b[1] + b[3] <= a[1] || a[0] + a[2] <= b[0] || b[0] + b[2] <= a[0];
    assert!(apart, "the two labels overlap: {boxes:?}");
    ui.close().await;
}

const ONLY_RUNNER: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Runner's call", approvers: { users: [runner] } }
    on: { approved: done }
    catch: { human_rejected: done }
  done: { type: terminal }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_answer_stays_said_while_the_inbox_refreshes() {
    let ui = Ui::start().await;
    http_common::write(
        &ui.root.join("acme/shop/_vance/workflows/only-runner.yaml"),
        ONLY_RUNNER,
    );
    let run = ui.start_run("only-runner", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/inbox").await;
    ui.click("#inbox-items button[data-answer=approve]").await;
    ui.wait_js(
        "const e = document.querySelector('#inbox-items .error'); \
         return e ? e.textContent.includes('MAG-HTTP-NOT-APPROVER') : null;",
        "the refusal",
    )
    .await;
    // Another item makes the inbox reload; the refusal is still there to read.
    let other = ui.start_run("approve", ACME).await;
    ui.wait_status(&other, &["WAITING"]).await;
    ui.wait_js(
        "return document.querySelectorAll('#inbox-items article').length === 2",
        "the second item",
    )
    .await;
    let still = ui
        .js(
            "const e = document.querySelector('#inbox-items .error'); return e ? e.textContent : null;",
            vec![],
        )
        .await;
    assert!(
        still
            .as_str()
            .is_some_and(|t| t.contains("MAG-HTTP-NOT-APPROVER")),
        "{still}"
    );
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_skip_link_moves_the_focus_and_keeps_the_view() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    ui.view("#/inbox").await;
    ui.wait_js(
        "return document.getElementById('inbox-title') ? true : null",
        "the inbox",
    )
    .await;
    ui.js(
        "document.querySelector('a.skip').click(); return null;",
        vec![],
    )
    .await;
    // The router has had time to act on any change of address.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (hash, focused) = (
        ui.js("return location.hash", vec![]).await,
        ui.js("return document.activeElement.id", vec![]).await,
    );
    assert_eq!(hash, "#/inbox");
    assert_eq!(focused, "main");
    let still = ui
        .js("return !!document.getElementById('inbox-title')", vec![])
        .await;
    assert_eq!(still, true, "the inbox is still the view");
    ui.close().await;
}

/// Writes `text` into the start form's parameters and submits it.
async fn submit_start(ui: &Ui, text: &str) {
    ui.js(
        "const a = document.getElementById('start-params'); a.value = arguments[0]; \
         document.querySelector('.start-form .error, .start-form .ok')?.remove(); return null;",
        vec![json!(text)],
    )
    .await;
    ui.click("#start-run").await;
}

/// The text of the start form's answer, once there is one.
async fn start_answer(ui: &Ui) -> String {
    ui.wait_js(
        "const m = document.querySelector('.start-form .error, .start-form .ok'); \
         return m ? m.innerText : null",
        "the start form's answer",
    )
    .await
    .as_str()
    .unwrap()
    .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_workflow_page_starts_a_run_with_the_parameters_written() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    ui.view("#/workflow/needs-param").await;
    // The form offers the required parameter as null, to fill in.
    let offered = ui
        .wait_js(
            "const a = document.getElementById('start-params'); return a ? a.value : null",
            "the start form",
        )
        .await;
    let offered: Value = serde_json::from_str(offered.as_str().unwrap()).unwrap();
    assert_eq!(offered, json!({"pr_url": null}));
    // Sent as offered, it is refused as missing: nothing starts with an empty value.
    submit_start(&ui, &offered.to_string()).await;
    let refused = start_answer(&ui).await;
    assert!(
        refused.contains("MAG-HTTP-INVALID-PARAMS") && refused.contains("missing"),
        "{refused}"
    );

    // Not JSON, or not an object: said, and nothing is started.
    submit_start(&ui, "{pr_url: ").await;
    assert!(start_answer(&ui).await.contains("not JSON"));
    submit_start(&ui, "[1]").await;
    assert!(start_answer(&ui).await.contains("JSON object"));
    // Parameters the workflow refuses: the server's answer is shown.
    submit_start(&ui, "{}").await;
    let refused = start_answer(&ui).await;
    assert!(refused.contains("MAG-HTTP-INVALID-PARAMS"), "{refused}");
    assert!(refused.contains("pr_url"), "{refused}");
    assert_eq!(runs_of(&ui, "needs-param").await.len(), 0);

    submit_start(&ui, r#"{"pr_url": "https://example.com/pull/7"}"#).await;
    let started = start_answer(&ui).await;
    assert!(started.starts_with("Started"), "{started}");
    let runs = runs_of(&ui, "needs-param").await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    let run = runs[0]["workflowRunId"].as_str().unwrap().to_owned();
    assert!(started.contains(&run), "{started}");
    ui.screenshot("workflow-start").await;
    let view = ui.wait_status(&run, &["DONE"]).await;
    assert_eq!(view["params"]["pr_url"], "https://example.com/pull/7");
    assert_eq!(view["startedBy"], "alice");
    // Its link opens the run.
    ui.click("#started-run").await;
    ui.wait_js_args(
        "return location.hash.startsWith('#/run/' + arguments[0]) || null",
        vec![json!(run)],
        "the run's page",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_without_workflow_run_gets_no_start_form() {
    let ui = Ui::start().await;
    ui.sign_in(http_common::ACME_READ).await;
    ui.view("#/workflow/hello").await;
    ui.wait_js(
        "return document.getElementById('workflow-graph')?.querySelector('svg') ? true : null",
        "the workflow's graph",
    )
    .await;
    let form = ui
        .js("return !!document.getElementById('start-params')", vec![])
        .await;
    assert_eq!(form, false);
    ui.close().await;
}

/// A token the server stops accepting during the session is forgotten, whichever view's
/// request was refused: the view stops polling and the sign-in form takes its place.
#[tokio::test(flavor = "multi_thread")]
async fn a_token_refused_during_the_session_is_forgotten_and_sign_in_shown() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    for view in ["#/runs", "#/inbox", "#/workflows"] {
        ui.view(view).await;
        ui.wait_js(
            "return document.getElementById('sign-in').hidden || null",
            "signed in",
        )
        .await;
        // The token stops being accepted (as if revoked): the view's next poll is refused.
        ui.js(
            "sessionStorage.setItem('magrathea.token', 'revoked-token'); \
             window.dispatchEvent(new HashChangeEvent('hashchange')); return null;",
            vec![],
        )
        .await;
        let message = ui
            .wait_js(
                "return document.getElementById('sign-in').hidden ? null : \
                 document.getElementById('sign-in-error').textContent",
                "the sign-in form",
            )
            .await;
        assert_eq!(
            message, "The session's token is no longer accepted.",
            "{view}"
        );
        let kept = ui
            .js("return sessionStorage.getItem('magrathea.token')", vec![])
            .await;
        assert_eq!(kept, Value::Null, "{view}: the token is forgotten");
        ui.sign_in(ACME).await;
    }
    ui.close().await;
}

/// The runs list is drawn afresh at each poll; the run link that has the keyboard's focus
/// keeps it in the new rows, so a keyboard user going down the list is not sent to its top.
#[tokio::test(flavor = "multi_thread")]
async fn the_runs_list_keeps_the_focused_run_across_its_polls() {
    let ui = Ui::start().await;
    let mut runs = Vec::new();
    for _ in 0..4 {
        runs.push(ui.start_run("approve", ACME).await);
    }
    ui.sign_in(ACME).await;
    ui.view("#/runs").await;
    ui.wait_js(
        "return document.querySelectorAll('tr[data-run] a').length >= 4 || null",
        "the runs",
    )
    .await;
    // Focus the third run's link, and mark its row to see it replaced by a poll.
    let focused = ui
        .js(
            "const tr = document.querySelectorAll('tr[data-run]')[2]; tr.dataset.old = '1'; \
             tr.querySelector('a').focus(); return tr.dataset.run;",
            vec![],
        )
        .await;
    ui.wait_js(
        "return document.querySelector('tr[data-old]') ? null : true",
        "a poll drawing the rows afresh",
    )
    .await;
    let now = ui
        .js(
            "return document.activeElement.closest('tr[data-run]')?.dataset.run ?? null",
            vec![],
        )
        .await;
    assert_eq!(now, focused, "the same run's link has the focus");
    ui.close().await;
}

/// A gate titled with one 400-character word and a workflow with a 200-character name wrap in
/// their card and cells: the page stays as wide as the window, its columns on screen. A run
/// that ended shows when.
#[tokio::test(flavor = "multi_thread")]
async fn long_unbroken_values_wrap_and_an_ended_run_shows_its_end() {
    let ui = Ui::start().await;
    let word = "W".repeat(400);
    let name = format!("a{}", "b".repeat(199));
    http_common::write(
        &ui.root
            .join(format!("acme/shop/_vance/workflows/{name}.yaml")),
        &format!(
            "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: {{ kind: APPROVAL, \
             title: \"{word}\", body: \"{word}\" }}\n    on: {{ approved: done }}\n  done: {{ type: \
             terminal }}\n"
        ),
    );
    let run = ui.start_run(&name, ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    let fits = "return document.documentElement.scrollWidth <= window.innerWidth";
    for (view, what) in [
        ("#/inbox", "#inbox-items article"),
        ("#/runs", "table tbody tr"),
        ("#/workflows", "#workflow-list tbody tr"),
    ] {
        ui.view(view).await;
        ui.wait_js_args(
            "return document.querySelector(arguments[0]) !== null",
            vec![json!(what)],
            view,
        )
        .await;
        let width = ui
            .js(
                "return [document.documentElement.scrollWidth, window.innerWidth]",
                vec![],
            )
            .await;
        assert_eq!(ui.js(fits, vec![]).await, json!(true), "{view}: {width}");
    }
    ui.view(&format!("#/run/{run}")).await;
    ui.wait_js(
        "return document.getElementById('run-id') !== null",
        "the run's page",
    )
    .await;
    assert!(!ui.page_text().await.contains("Finished"), "still waiting");
    ui.answer_over_the_api(json!({ "kind": "approve" })).await;
    ui.wait_status(&run, &["DONE"]).await;
    ui.wait_js(
        "return [...document.querySelectorAll('.meta dt')].some(d => d.textContent === 'Finished')",
        "the run's end",
    )
    .await;
    ui.close().await;
}

/// The workflow page holds its YAML document (the reference's document editor): saved, it is
/// what the next run starts with; an invalid text is refused with its line and column and
/// nothing is written; a token without `workflow.write` reads it only.
#[tokio::test(flavor = "multi_thread")]
async fn the_workflow_page_edits_its_document() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    ui.view("#/workflow/hello").await;
    let text = ui
        .wait_js(
            "const a = document.getElementById('document-text'); return a ? a.value : null",
            "the document",
        )
        .await;
    let file = ui.root.join("acme/shop/_vance/workflows/hello.yaml");
    assert_eq!(
        text.as_str().unwrap(),
        std::fs::read_to_string(&file).unwrap()
    );
    let save = |body: &str| {
        ui.js(
            "const a = document.getElementById('document-text'); a.value = arguments[0]; \
             document.getElementById('document-message').textContent = ''; \
             document.getElementById('document-save').click(); return true;",
            vec![json!(body)],
        )
    };
    let answer = || {
        ui.wait_js(
            "const m = document.getElementById('document-message'); \
             return m && m.textContent ? m.textContent : null",
            "the save's answer",
        )
    };
    // Invalid: refused where it is wrong, the file untouched.
    save("start: nowhere\nstates:\n  done: { type: terminal }\n").await;
    let refused = answer().await;
    let refused = refused.as_str().unwrap();
    assert!(
        refused.contains(":1:8") && refused.contains("MAG-Y008"),
        "{refused}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text.as_str().unwrap()
    );
    // Valid: saved, and the next run starts with it.
    let edited = "parameters:\n  n: { type: integer, default: 42 }\n\
                  start: done\nstates:\n  done: { type: terminal, result: { edited: true } }\n";
    save(edited).await;
    let saved = answer().await;
    assert!(saved.as_str().unwrap().starts_with("Saved"), "{saved}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), edited);
    // The page's start form follows the save: it offers the saved defaults, not the old ones.
    let offered = ui
        .wait_js(
            "const a = document.getElementById('start-params'); \
             return a && a.value.includes('42') ? JSON.parse(a.value) : null",
            "the saved defaults in the start form",
        )
        .await;
    assert_eq!(offered, json!({ "n": 42 }));
    let run = ui.start_run("hello", ACME).await;
    let view = ui.wait_status(&run, &["DONE"]).await;
    assert_eq!(view["result"], json!({ "edited": true }));
    // A reader reads.
    ui.click("#sign-out").await;
    ui.sign_in(http_common::ACME_READ).await;
    ui.view("#/workflow/hello").await;
    let read_only = ui
        .wait_js(
            "const a = document.getElementById('document-text'); \
             return a ? [a.readOnly, !!document.getElementById('document-save')] : null",
            "the document, read only",
        )
        .await;
    assert_eq!(read_only, json!([true, false]));
    ui.close().await;
}
