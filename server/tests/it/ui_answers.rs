//! The web UI's answers, failures and short ids as people meet them, in a real headless
//! Chromium against a real `magrathea serve`: an approval that counts toward a quorum says so,
//! an item answered elsewhere while a comment is being typed keeps the comment and says it
//! closed, a card being typed in keeps its focus across a refresh, a malformed link says so,
//! and the short id the runs list shows opens its run.
use crate::http_common;
use crate::ui_common;

use http_common::ACME;
use serde_json::json;
use ui_common::Ui;

const QUORUM: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Two of us", quorum: 2 }
    on: { approved: done }
    catch: { human_rejected: done }
  done: { type: terminal }
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_approval_below_the_quorum_is_said_to_count() {
    let ui = Ui::start().await;
    http_common::write(&ui.root.join("acme/shop/_vance/workflows/two.yaml"), QUORUM);
    let run = ui.start_run("two", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/inbox").await;
    ui.click("#inbox-items button[data-answer=approve]").await;
    let said = ui
        .wait_js(
            "const m = document.getElementById('inbox-message'); \
             return m && m.textContent.trim() ? m.textContent : null;",
            "the answer's message",
        )
        .await;
    assert!(
        said.as_str()
            .is_some_and(|t| t.contains("Approval counted: 1 of the 2")),
        "{said}"
    );
    ui.close().await;
}

/// A served tree with one pending approval, its inbox open in the browser and `text` being
/// typed into the card's comment box (focused); the browser and the approval's run.
async fn typing_in_the_only_card(text: &str) -> (Ui, String) {
    let ui = Ui::start().await;
    let run = ui.start_run("approve", ACME).await;
    ui.wait_status(&run, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/inbox").await;
    ui.wait_js(
        "return document.querySelectorAll('#inbox-items article').length === 1",
        "the pending item",
    )
    .await;
    ui.js(
        "const t = document.querySelector('#inbox-items textarea[name=comment]'); \
         t.focus(); t.value = arguments[0]; \
         t.dispatchEvent(new Event('input', {bubbles: true})); return null;",
        vec![json!(text)],
    )
    .await;
    (ui, run)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_item_answered_elsewhere_keeps_the_comment_being_typed_and_says_it_closed() {
    let (ui, run) = typing_in_the_only_card("my reasons").await;
    ui.answer_over_the_api(json!({"kind": "approve"})).await;
    ui.wait_status(&run, &["DONE"]).await;
    let note = ui
        .wait_js(
            "const n = document.querySelector('#inbox-items .closed-elsewhere'); \
             return n ? n.textContent : null;",
            "the note that the item closed",
        )
        .await;
    assert!(
        note.as_str().is_some_and(|t| t.contains("no longer open")),
        "{note}"
    );
    let kept = ui
        .js(
            "return document.querySelector('#inbox-items textarea[name=comment]').value;",
            vec![],
        )
        .await;
    assert_eq!(kept, json!("my reasons"));
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_link_says_so() {
    let ui = Ui::start().await;
    ui.sign_in(ACME).await;
    ui.view("#/run/%E0%A4%A").await;
    let said = ui
        .wait_js(
            "const e = document.querySelector('#view .error'); return e ? e.textContent : null;",
            "the error",
        )
        .await;
    assert!(
        said.as_str().is_some_and(|t| t.contains("malformed")),
        "{said}"
    );
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_short_id_the_list_shows_opens_its_run() {
    let ui = Ui::start().await;
    let parent = ui.start_run("parent", ACME).await;
    ui.wait_status(&parent, &["WAITING"]).await;
    ui.sign_in(ACME).await;
    ui.view("#/runs").await;
    let shown = ui
        .wait_js(
            "const a = [...document.querySelectorAll('tr[data-run] td:first-child a')] \
               .map(a => [a.closest('tr').dataset.run, a.textContent]); \
             return a.length === 2 ? a : null;",
            "the run and its sub-run",
        )
        .await;
    let rows = shown.as_array().unwrap();
    assert_ne!(rows[0][1], rows[1][1], "two runs, two short ids: {rows:?}");
    let sub = rows.iter().find(|r| r[0] != json!(parent)).unwrap();
    let short = sub[1].as_str().unwrap();
    assert!(short.contains('…') && short.len() < 32, "{short}");
    ui.js(
        "const i = document.getElementById('run-search'); i.value = arguments[0]; \
         i.form.requestSubmit(); return null;",
        vec![json!(short)],
    )
    .await;
    ui.wait_js_args(
        "const e = document.getElementById('run-id'); return e && e.textContent === arguments[0];",
        vec![sub[0].clone()],
        "the sub-run opened by its short id",
    )
    .await;
    ui.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_in_a_card_goes_on_across_the_inbox_refresh() {
    let (ui, _first) = typing_in_the_only_card("abc").await;
    // A second item makes the inbox reload while the first card is being typed in.
    let second = ui.start_run("approve", ACME).await;
    ui.wait_status(&second, &["WAITING"]).await;
    ui.wait_js(
        "return document.querySelectorAll('#inbox-items article').length === 2",
        "the second item",
    )
    .await;
    let focused = ui
        .js(
            "const a = document.activeElement; \
             return a && a.name === 'comment' ? a.value : null;",
            vec![],
        )
        .await;
    assert_eq!(
        focused,
        json!("abc"),
        "the box keeps the focus and the text"
    );
    ui.close().await;
}
