//! Trigger documents through the documents API: writing one takes the right to run workflows,
//! an invalid schedule is refused with its diagnostics, and a written document is a
//! registration at once.

use crate::http_common;

use http_common::{ACME, ACME_WRITE, Server};
use serde_json::Value;

const SCHEDULE: &str = "cron: \"0 0 6 * * *\"\nworkflow: hello\n";

/// PUTs a document; the status and the body's text.
async fn put(s: &Server, path: &str, token: &str, body: &str) -> (u16, String) {
    s.put_document(path, token, body).await
}

#[tokio::test]
async fn writing_a_trigger_document_needs_the_run_scope() {
    let s = Server::start().await;
    for path in [
        "scheduler/nightly.yaml",
        "events/github.yaml",
        "hooks/notify.yaml",
        "hooks/notify.js",
    ] {
        let (status, body) = put(&s, path, ACME_WRITE, SCHEDULE).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("workflow.run"), "{body}");
    }
    // Other documents stay writable with workflow.write alone.
    let (status, _) = put(&s, "workflows/other.yaml", ACME_WRITE, http_common::HELLO).await;
    assert_eq!(status, 201);
}

/// A run in flight reads the project's scripts, recipes and sub-workflows when its next step
/// begins: while one is unfinished, a write-only token cannot change them (nor remove them),
/// as in a project with triggers; a draft stays writable, and once the runs end every document
/// is again.
#[tokio::test]
async fn a_write_only_token_changes_no_document_a_run_in_flight_reads() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", serde_json::json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let (status, body) = put(&s, "scripts/next.js", ACME_WRITE, "return 1;\n").await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("workflow.run") && body.contains(&format!("run {run}")),
        "{body}"
    );
    let removed = s
        .client
        .delete(s.url("/brain/acme/project/shop/documents/workflows/hello.yaml"))
        .bearer_auth(ACME_WRITE)
        .send()
        .await
        .unwrap();
    assert_eq!(removed.status().as_u16(), 403);
    // A draft runs only when someone starts it.
    let (status, body) = put(
        &s,
        "workflow-drafts/next.yaml",
        ACME_WRITE,
        http_common::HELLO,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    // With the right to run workflows, or once the run ended, the write goes through.
    let (status, body) = put(&s, "scripts/next.js", ACME, "return 1;\n").await;
    assert_eq!(status, 201, "{body}");
    let r = s
        .client
        .post(s.url(&format!(
            "/brain/acme/project/shop/workflows/runs/{run}/cancel"
        )))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    s.wait_status("shop", &run, &["CANCELLED"]).await;
    let (status, body) = put(&s, "scripts/next.js", ACME_WRITE, "return 2;\n").await;
    assert_eq!(status, 200, "{body}");
}

/// An event document is called from outside whether or not it declares a webhook or a
/// subscription (its REST route, with a token of its own): a project (or tenant) with one is
/// a project with a trigger, whose workflows a write-only token can no longer change.
#[tokio::test]
async fn an_event_document_takes_the_run_scope_to_change_what_it_runs() {
    let s = Server::start().await;
    let (status, body) = put(
        &s,
        "events/ext.yaml",
        ACME,
        "workflow: job\nauth:\n  tokenSetting: events.ext\n",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = put(&s, "workflows/job.yaml", ACME_WRITE, http_common::HELLO).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("workflow.run") && body.contains("an event document under _vance/events/"),
        "{body}"
    );
    // One of the tenant's, which every project of the tenant serves, counts as well.
    std::fs::remove_file(s.root.join("acme/shop/_vance/events/ext.yaml")).unwrap();
    let (status, body) = put(&s, "workflows/job.yaml", ACME_WRITE, http_common::HELLO).await;
    assert_eq!(status, 201, "no event document left: {body}");
    http_common::write(
        &s.root.join("acme/_tenant/_vance/events/ext.yaml"),
        "workflow: job\n",
    );
    let (status, body) = put(&s, "workflows/job.yaml", ACME_WRITE, http_common::HELLO).await;
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("an event document under _tenant/_vance/events/"),
        "{body}"
    );
    // A directory linked out of the project (as a shell step could link it) is not read: what
    // lies behind it, another tenant's documents say, decides nothing here.
    std::fs::remove_file(s.root.join("acme/_tenant/_vance/events/ext.yaml")).unwrap();
    http_common::write(
        &s.root.join("globex/shop/_vance/events/theirs.yaml"),
        "workflow: job\n",
    );
    let events = s.root.join("acme/shop/_vance/events");
    std::fs::remove_dir_all(&events).unwrap();
    std::os::unix::fs::symlink(s.root.join("globex/shop/_vance/events"), &events).unwrap();
    let (status, body) = put(&s, "workflows/job.yaml", ACME_WRITE, http_common::HELLO).await;
    assert_eq!(status, 200, "{body}");
}

/// Once a project has a trigger, its documents decide what runs without anyone starting it: a
/// token that may write but not run can no longer change them (a workflow, a script), publish a
/// draft or unarchive a workflow. Drafts stay writable; a token that may run changes anything.
#[tokio::test]
async fn a_project_with_triggers_takes_the_run_scope_to_change_what_they_run() {
    let s = Server::start().await;
    let (status, _) = put(&s, "workflows/job.yaml", ACME_WRITE, http_common::HELLO).await;
    assert_eq!(status, 201, "no trigger yet: workflow.write suffices");
    let (status, body) = put(
        &s,
        "scheduler/tick.yaml",
        ACME,
        "cron: \"0 0 6 * * *\"\nworkflow: job\n",
    )
    .await;
    assert_eq!(status, 201, "{body}");

    let shell = "start: a\nstates:\n  a:\n    type: shell_task\n    run: \"touch owned\"\n    dirName: workspace\n    timeoutSeconds: 5\n    on: { success: done, timeout: done }\n  done: { type: terminal }\n";
    for path in [
        "workflows/job.yaml",
        "workflows/new.yaml",
        "scripts/step.js",
    ] {
        let (status, body) = put(&s, path, ACME_WRITE, shell).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(
            body.contains("workflow.run") && body.contains("scheduler/tick.yaml"),
            "{body}"
        );
    }
    let gone = s
        .client
        .delete(s.url("/brain/acme/project/shop/documents/workflows/job.yaml"))
        .bearer_auth(ACME_WRITE)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status().as_u16(), 403);
    assert_eq!(
        std::fs::read_to_string(s.root.join("acme/shop/_vance/workflows/job.yaml")).unwrap(),
        http_common::HELLO
    );

    // A draft runs only when someone starts it; publishing it is a change of what runs.
    let (status, body) = put(&s, "workflow-drafts/job.yaml", ACME_WRITE, shell).await;
    assert!((200..300).contains(&status), "{body}");
    let r = s
        .post(
            "/brain/acme/project/shop/workflows/job/publish",
            Some(ACME_WRITE),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    let r = s
        .post("/brain/acme/project/shop/workflows/job/publish", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{}", r.text().await.unwrap());
    let (status, body) = put(&s, "workflows/job.yaml", ACME, http_common::HELLO).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_written_schedule_is_registered_at_once_and_an_invalid_one_is_refused() {
    let s = Server::start().await;
    let (status, body) = put(
        &s,
        "scheduler/nightly.yaml",
        ACME,
        "cron: \"0 0 6 * * *\"\nworkflow: hello\nrecipe: audit\n",
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("nightly.yaml:3:1"), "{body}");
    assert!(body.contains("invalid schedule document"), "{body}");
    let listed: Value = s
        .get_json("/brain/acme/project/shop/triggers", Some(ACME))
        .await;
    assert_eq!(listed["triggers"], serde_json::json!([]));

    let (status, body) = put(&s, "scheduler/nightly.yaml", ACME, SCHEDULE).await;
    assert_eq!(status, 201, "{body}");
    let listed: Value = s
        .get_json("/v1/workflows/shop:hello/triggers", Some(ACME))
        .await;
    let t = &listed["triggers"][0];
    assert_eq!(t["triggerType"], "cron");
    assert_eq!(t["name"], "nightly");
    assert_eq!(t["active"], true);
    assert_eq!(t["nextFireTimes"].as_array().unwrap().len(), 3);
    // A bare name finds it in every project of the tenant.
    let listed: Value = s.get_json("/v1/workflows/hello/triggers", Some(ACME)).await;
    assert_eq!(listed["triggers"].as_array().unwrap().len(), 1);
}

/// A schedule naming a workflow the project and its tenant do not have is written (the
/// workflow may come later) with a warning that each tick would fail to start.
#[tokio::test]
async fn a_schedule_of_an_unknown_workflow_is_written_with_a_warning() {
    let s = Server::start().await;
    let (status, body) = put(
        &s,
        "scheduler/nowf.yaml",
        ACME,
        "cron: \"0 0 6 * * *\"\nworkflow: nosuchwf\n",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    let warnings = body["warnings"].as_array().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.as_str().unwrap().contains("workflow `nosuchwf`")),
        "{body}"
    );
    let (status, body) = put(&s, "scheduler/ok.yaml", ACME, SCHEDULE).await;
    assert_eq!(status, 201, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["warnings"], serde_json::json!([]), "{body}");
}

/// A misspelt key of an event document would change who may fire it (`auth: {tokenSettings}`
/// left the event open to any API token that may run workflows): the document is refused on
/// write, and one written on disk is refused when it is fired.
#[tokio::test]
async fn an_event_document_with_an_unknown_key_or_method_is_refused() {
    let s = Server::start().await;
    for (doc, needle) in [
        (
            "workflow: hello\nauth: {tokenSettings: events.ev.token}\n",
            "tokenSettings",
        ),
        ("workflow: hello\nbogus: 1\n", "bogus"),
        ("workflow: hello\nmethods: [FETCH]\n", "FETCH"),
        // The event route is GET|POST (reference §8.6): no document opens it to another.
        ("workflow: hello\nmethods: [DELETE]\n", "DELETE"),
    ] {
        let (status, body) = put(&s, "events/ev.yaml", ACME, doc).await;
        assert_eq!(status, 422, "{doc}: {body}");
        assert!(body.contains(needle), "{body}");
    }
    // One naming a workflow that is not there is written, with a warning.
    let (status, body) = put(&s, "events/later.yaml", ACME, "workflow: later\n").await;
    assert_eq!(status, 201, "{body}");
    assert!(
        body.contains("workflow `later` is not a workflow of the project or its tenant"),
        "{body}"
    );
    // A document that does not parse is said where, with its code, as a workflow's is.
    for (doc, at) in [
        ("workflow: [hello\n", ":2:1:"),
        (
            "workflow: hello\nsubscribe:\n  event: workflow.run.failed\n  bogus: 1\n",
            ":4:3:",
        ),
    ] {
        let (status, body) = put(&s, "events/ev.yaml", ACME, doc).await;
        assert_eq!(status, 422, "{doc}: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let diag = v["error"]["diagnostics"][0].as_str().unwrap();
        assert!(
            diag.starts_with(&format!("acme/shop/_vance/events/ev.yaml{at}"))
                && diag.contains(": [MAG-TR005] ")
                && !diag.contains(" at line "),
            "{diag}"
        );
    }
    // Written on disk, the typo makes the event refuse every request, an API token's too.
    http_common::write(
        &s.root.join("acme/shop/_vance/events/ev.yaml"),
        "workflow: hello\nauth: {tokenSettings: events.ev.token}\n",
    );
    let r = s
        .post("/brain/acme/event/shop/ev", Some(ACME))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let (status, body) = put(
        &s,
        "events/ev.yaml",
        ACME,
        "workflow: hello\nmethods: [get, POST]\n",
    )
    .await;
    // A valid document replaces it (methods in any case).
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_webhook_whose_token_setting_is_missing_is_registered_with_its_error() {
    let s = Server::start().await;
    let (status, body) = put(
        &s,
        "events/github.yaml",
        ACME,
        "workflow: hello\nwebhook:\n  tokenSetting: webhooks.github.path\n",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert!(body.contains("MAG-TR002"), "the reply warns: {body}");
    let listed: Value = s
        .get_json(
            "/brain/acme/project/shop/workflows/hello/triggers",
            Some(ACME),
        )
        .await;
    let t = &listed["triggers"][0];
    assert_eq!(t["triggerType"], "webhook");
    assert_eq!(t["active"], false);
    assert!(
        t["error"]
            .as_str()
            .unwrap()
            .contains("webhooks.github.path")
    );
}

#[tokio::test]
async fn a_settings_file_that_does_not_parse_is_refused_and_never_stood_in_for() {
    let s = Server::start().await;
    let big = "webhooks:\n  github:\n    path: project-token-0123456789\nmisc:\n  big: 99999999999999999999\n";
    // Through the API: refused, where the number is.
    let (status, body) = put(&s, "settings.yaml", ACME, big).await;
    assert_eq!(status, 422, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    let diag = v["error"]["diagnostics"][0].as_str().unwrap();
    assert!(
        diag.starts_with("acme/shop/_vance/settings.yaml:5:8: [MAG-Y001]")
            && diag.contains("too large"),
        "{diag}"
    );
    // Written on disk, with the tenant's file holding a token under the same name: the
    // project's unreadable file is said, and the tenant's token does not stand in for its.
    http_common::write(&s.root.join("acme/shop/_vance/settings.yaml"), big);
    http_common::write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        "webhooks:\n  github:\n    path: tenant-token-0123456789\n",
    );
    let (status, body) = put(
        &s,
        "events/github.yaml",
        ACME,
        "workflow: hello\nwebhook:\n  tokenSetting: webhooks.github.path\n",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let listed: Value = s
        .get_json(
            "/brain/acme/project/shop/workflows/hello/triggers",
            Some(ACME),
        )
        .await;
    let t = &listed["triggers"][0];
    assert_eq!(t["active"], false, "{t}");
    let error = t["error"].as_str().unwrap();
    assert!(
        error.contains("cannot be read")
            && error.contains("acme/shop/_vance/settings.yaml:5:8")
            && error.contains("too large"),
        "{error}"
    );
}

#[tokio::test]
async fn the_trigger_routes_refuse_what_they_cannot_do_and_say_why() {
    let s = Server::start().await;
    let (status, _) = put(&s, "scheduler/nightly.yaml", ACME, SCHEDULE).await;
    assert_eq!(status, 201);
    // Fired by hand: 202 with the run and its delivery; an unknown schedule: 404.
    let r = s
        .post(
            "/brain/acme/project/shop/schedules/nightly/trigger",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let fired: Value = r.json().await.unwrap();
    assert_eq!(fired["workflowName"], "hello");
    assert_eq!(fired["delivery"]["reason"], "manual");
    assert!(fired["workflowRunId"].is_string());
    let r = s
        .post(
            "/brain/acme/project/shop/schedules/nope/trigger",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    // A paused schedule fires nothing, by hand either (409, as the event route answers).
    let r = s
        .client
        .patch(s.url("/brain/acme/project/shop/triggers/nightly"))
        .bearer_auth(ACME)
        .json(&serde_json::json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = s
        .post(
            "/brain/acme/project/shop/schedules/nightly/trigger",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    let (status, body) = http_common::code(r).await;
    assert_eq!((status, body.as_str()), (409, "MAG-HTTP-TRIGGER-DISABLED"));
    // Lifting the pause makes it start runs again: a token that may not start runs may pause
    // it but not lift the pause, on either route.
    let id = http_common::trigger(&s, "nightly").await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for url in [
        "/brain/acme/project/shop/triggers/nightly".to_owned(),
        format!("/v1/workflow-triggers/{id}"),
    ] {
        for (enabled, want) in [(true, 403), (false, 200)] {
            let r = s
                .client
                .patch(s.url(&url))
                .bearer_auth(ACME_WRITE)
                .json(&serde_json::json!({ "enabled": enabled }))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), want, "{url} enabled: {enabled}");
        }
    }
    // Nor one whose document switches it off.
    let (status, _) = put(
        &s,
        "scheduler/off.yaml",
        ACME,
        &format!("{SCHEDULE}enabled: false\n"),
    )
    .await;
    assert_eq!(status, 201);
    let r = s
        .post("/brain/acme/project/shop/schedules/off/trigger", Some(ACME))
        .send()
        .await
        .unwrap();
    let (status, body) = http_common::code(r).await;
    assert_eq!((status, body.as_str()), (409, "MAG-HTTP-TRIGGER-DISABLED"));
    // A page size of nothing, or of no number, is said; a larger one than 1,000 gets 1,000.
    for limit in ["0", "ten"] {
        let r = s
            .get(
                &format!("/brain/acme/project/shop/triggers/deliveries?limit={limit}"),
                Some(ACME),
            )
            .send()
            .await
            .unwrap();
        let (status, body) = http_common::code(r).await;
        assert_eq!((status, body.as_str()), (400, "MAG-HTTP-INVALID-LIMIT"));
    }
    let r = s
        .get(
            "/brain/acme/project/shop/triggers/deliveries?limit=1001",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // A PATCH must say what it wants.
    let r = s
        .client
        .patch(s.url("/brain/acme/project/shop/triggers/nightly"))
        .bearer_auth(ACME)
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("enabled"));
    // An unknown delivery status is named with the known ones.
    let r = s
        .get(
            "/brain/acme/project/shop/triggers/deliveries?status=weird",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("accepted, duplicate"));
    // A document that declares two triggers is named by id, as the answer lists them.
    let (status, _) = put(
        &s,
        "events/both.yaml",
        ACME,
        "workflow: hello\nwebhook:\n  tokenSetting: webhooks.path\nsubscribe:\n  event: workflow.run.failed\n",
    )
    .await;
    assert_eq!(status, 201);
    let r = s
        .client
        .patch(s.url("/brain/acme/project/shop/triggers/both"))
        .bearer_auth(ACME)
        .json(&serde_json::json!({"enabled": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let text = r.text().await.unwrap();
    assert!(
        text.contains("MAG-HTTP-AMBIGUOUS-TRIGGER") && text.contains("trg_"),
        "{text}"
    );
}

/// `enabled: false` in an event document switches all of it off — its webhook refuses
/// deliveries (409, on record as `trigger_disabled`), its REST event route answers 409 — and
/// the listing says so; without it, the document works again. Only a webhook with `dedupe:`
/// lists a dedupe window.
#[tokio::test]
async fn an_event_document_that_says_enabled_false_is_switched_off_until_it_says_otherwise() {
    const TOKEN: &str = "0123456789abcdef0123456789abcdef";
    let s = Server::start().await;
    let (status, body) = put(
        &s,
        "settings.yaml",
        ACME,
        &format!("webhooks:\n  github:\n    path: {TOKEN}\n"),
    )
    .await;
    assert!(status == 200 || status == 201, "{body}");
    let hook = "workflow: hello\nwebhook:\n  tokenSetting: webhooks.github.path\n";
    let deliver = async || {
        let r = s
            .client
            .post(s.url(&format!("/v1/workflow-webhooks/{TOKEN}")))
            .body("{}")
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    };
    let event_route = async || {
        let r = s
            .post("/brain/acme/event/shop/github", Some(ACME))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    };
    let listed = async || -> Value {
        let v: Value = s
            .get_json("/v1/workflows/shop:hello/triggers", Some(ACME))
            .await;
        v["triggers"][0].clone()
    };

    let (status, body) = put(
        &s,
        "events/github.yaml",
        ACME,
        &format!("{hook}enabled: false\n"),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let t = listed().await;
    assert_eq!(
        (&t["enabledInDocument"], &t["active"]),
        (&Value::Bool(false), &Value::Bool(false)),
        "{t}"
    );
    assert!(
        t.get("dedupeWindowSec").is_none(),
        "no dedupe: no window: {t}"
    );
    let (status, body) = deliver().await;
    assert_eq!(status, 409, "{body}");
    let refusal: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        refusal["error"]["code"], "MAG-HTTP-TRIGGER-DISABLED",
        "{body}"
    );
    assert!(
        refusal["error"]["message"].as_str().is_some_and(|m| m
            .starts_with("[MAG-HTTP-TRIGGER-DISABLED] ")
            && m.contains("enabled: false")),
        "like every refused delivery, the message opens with its code: {body}"
    );
    let (status, body) = event_route().await;
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("enabled: false"), "{body}");
    let deliveries: Value = s
        .get_json(
            "/brain/acme/project/shop/triggers/deliveries?trigger=github",
            Some(ACME),
        )
        .await;
    assert_eq!(
        deliveries["deliveries"][0]["reason"], "trigger_disabled",
        "{deliveries}"
    );
    let runs: Value = s
        .get_json("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .await;
    assert_eq!(
        runs.as_array().map(Vec::len),
        Some(0),
        "nothing started: {runs}"
    );

    let (status, body) = put(
        &s,
        "events/github.yaml",
        ACME,
        &format!("{hook}  dedupe:\n    header: X-Delivery\n    window: 60s\n"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let t = listed().await;
    assert_eq!(t["active"], true, "{t}");
    assert_eq!(t["dedupeWindowSec"], 60, "{t}");
    let (status, body) = event_route().await;
    assert_eq!(status, 202, "{body}");
}

/// A schedule fired by hand whose workflow refuses its parameters answers as every other
/// start path does (400 `MAG-HTTP-INVALID-PARAMS`), and its delivery keeps the error's code.
#[tokio::test]
async fn a_schedule_fired_by_hand_with_refused_parameters_answers_400() {
    let s = Server::start().await;
    let needs = "parameters:\n  who:\n    type: string\n    required: true\nstart: done\n\
                 states:\n  done:\n    type: terminal\n";
    let (status, body) = put(&s, "workflows/needs.yaml", ACME, needs).await;
    assert!(status == 201 || status == 200, "{status} {body}");
    let (status, body) = put(
        &s,
        "scheduler/bare.yaml",
        ACME,
        "cron: \"0 0 6 * * *\"\nworkflow: needs\n",
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let r = s
        .post(
            "/brain/acme/project/shop/schedules/bare/trigger",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    let (status, code) = http_common::code(r).await;
    assert_eq!((status, code.as_str()), (400, "MAG-HTTP-INVALID-PARAMS"));
    let page: Value = s
        .get_json(
            "/brain/acme/project/shop/triggers/deliveries?trigger=bare",
            Some(ACME),
        )
        .await;
    let d = &page["deliveries"][0];
    assert_eq!(d["status"], "failed", "{page}");
    assert_eq!(d["reason"], "manual", "{page}");
    assert_eq!(d["errorCode"], "MAG-HTTP-INVALID-PARAMS", "{page}");
}

/// Deliveries are kept for their retention after their trigger's document is removed, and can
/// still be listed by the trigger's name or id.
#[tokio::test]
async fn a_removed_triggers_deliveries_are_still_found_by_its_name_and_id() {
    let s = Server::start().await;
    let (status, body) = put(&s, "scheduler/gone.yaml", ACME, SCHEDULE).await;
    assert_eq!(status, 201, "{body}");
    let fired: Value = s
        .post_json(
            "/brain/acme/project/shop/schedules/gone/trigger",
            Some(ACME),
            &serde_json::json!({}),
        )
        .await;
    let id = fired["delivery"]["triggerId"].as_str().unwrap().to_owned();
    let r = s
        .client
        .delete(s.url("/brain/acme/project/shop/documents/scheduler/gone.yaml"))
        .bearer_auth(ACME)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    for filter in ["gone", id.as_str()] {
        let page: Value = s
            .get_json(
                &format!("/brain/acme/project/shop/triggers/deliveries?trigger={filter}"),
                Some(ACME),
            )
            .await;
        assert_eq!(page["deliveries"].as_array().unwrap().len(), 1, "{page}");
        assert_eq!(page["deliveries"][0]["triggerId"], id.as_str(), "{page}");
    }
    // A name that never had a trigger is still unknown.
    let r = s
        .get(
            "/brain/acme/project/shop/triggers/deliveries?trigger=never",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// A trigger document the scan never reads (here in a subdirectory of `scheduler/`) is
/// written, and the writer is told that it starts nothing; one read as a schedule is not.
#[tokio::test]
async fn a_trigger_document_that_is_never_registered_is_said_to_start_nothing() {
    let s = Server::start().await;
    let doc = "workflow: hello\ncron: \"0 3 1 1 *\"\n";
    let (status, body) = put(&s, "scheduler/nested/yearly.yaml", ACME, doc).await;
    assert_eq!(status, 201, "{body}");
    assert!(
        body.contains("not registered, so it starts nothing"),
        "{body}"
    );
    let (status, body) = put(&s, "scheduler/yearly.yaml", ACME, doc).await;
    assert_eq!(status, 201, "{body}");
    assert!(!body.contains("not registered"), "{body}");
    // A plain event document (the seed's §8.6 example) is read by its route at each call, and
    // a hook's script by its hook: neither is said to start nothing.
    let event = "description: \"GitHub PR Hook → pr-review\"\nworkflow: hello\nmethods: [POST]\n";
    let (status, body) = put(&s, "events/github-pr.yaml", ACME, event).await;
    assert_eq!(status, 201, "{body}");
    assert!(!body.contains("not registered"), "{body}");
    let (status, body) = put(&s, "hooks/review.js", ACME, "log.info('hi');\n").await;
    assert_eq!(status, 201, "{body}");
    assert!(!body.contains("not registered"), "{body}");
    let (status, body) = put(&s, "events/nested/github-pr.yaml", ACME, event).await;
    assert_eq!(status, 201, "{body}");
    assert!(body.contains("not registered"), "{body}");
}

/// An event whose `auth.tokenSetting` names a setting set nowhere answers every call 401: the
/// write says so, and says nothing once the setting is there.
#[tokio::test]
async fn an_event_whose_token_setting_is_missing_is_warned_of() {
    let s = Server::start().await;
    let event = "workflow: hello\nmethods: [POST]\nauth:\n  tokenSetting: events.github.token\n";
    let (status, body) = put(&s, "events/github-pr.yaml", ACME, event).await;
    assert_eq!(status, 201, "{body}");
    assert!(
        body.contains("auth.tokenSetting `events.github.token` is set neither"),
        "{body}"
    );
    let (status, body) = put(
        &s,
        "settings.yaml",
        ACME,
        "events:\n  github:\n    token: ev-secret-token-abc\n",
    )
    .await;
    assert!(status == 200 || status == 201, "{body}");
    let (status, body) = put(&s, "events/github-pr.yaml", ACME, event).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("tokenSetting"), "{body}");
}

/// A webhook whose `signature.secretSetting` names a setting set nowhere refuses every
/// delivery (401 `no_secret`): the write says so, and says nothing once the secret is there.
#[tokio::test]
async fn a_webhook_whose_secret_setting_is_missing_is_warned_of() {
    let s = Server::start().await;
    let (status, body) = put(
        &s,
        "settings.yaml",
        ACME,
        "webhooks:\n  pay:\n    path: whk-0123456789abcdef0123456789abcdef\n",
    )
    .await;
    assert!(status == 200 || status == 201, "{body}");
    let event = "workflow: hello\nwebhook:\n  tokenSetting: webhooks.pay.path\n  signature:\n    \
                 secretSetting: webhooks.pay.secret\n";
    let (status, body) = put(&s, "events/pay.yaml", ACME, event).await;
    assert_eq!(status, 201, "{body}");
    assert!(
        body.contains(
            "webhook.signature.secretSetting `webhooks.pay.secret` is set neither in the \
             project's nor in the tenant's _vance/settings.yaml: every delivery is refused \
             (401 no_secret)"
        ),
        "{body}"
    );
    let (status, body) = put(
        &s,
        "settings.yaml",
        ACME,
        "webhooks:\n  pay:\n    path: whk-0123456789abcdef0123456789abcdef\n    secret: s3cret\n",
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = put(&s, "events/pay.yaml", ACME, event).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap()["warnings"],
        serde_json::json!([]),
        "{body}"
    );
}
