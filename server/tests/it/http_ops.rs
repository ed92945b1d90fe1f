//! Operations and documents: health, metrics, the OpenAPI document (each of its routes exists
//! in the router), and documents read, listed and written with validation.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn health_and_metrics() {
    let s = Server::start().await;
    let h: Value = s.get_json("/healthz", None).await;
    assert_eq!(h, json!({"status": "ok"}));
    // Before any run: the run and step series are there at 0, for a dashboard or an alert on
    // an absent series.
    let text = s.get_text("/metrics", None).await;
    for needle in [
        "magrathea_runs_started_total{trigger=\"rest\"} 0",
        "magrathea_runs_started_total{trigger=\"schedule\"} 0",
        "magrathea_runs_finished_total{status=\"FAILED\"} 0",
        "magrathea_step_duration_seconds_count{task=\"shell_task\"} 0",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
    let run = s.start_run("shop", "hello", json!({})).await;
    s.wait_status("shop", &run, &["DONE"]).await;
    let text = s.get_text("/metrics", None).await;
    for needle in [
        "magrathea_runs_started_total{trigger=\"rest\"} 1",
        "magrathea_runs_finished_total{status=\"DONE\"} 1",
        "magrathea_journal_commits_total",
        "magrathea_journal_records_total",
        "magrathea_journal_commit_seconds_total",
        "magrathea_http_requests_total{method=\"POST\",route=\"/brain/{tenant}/project/{project}/workflows/{name}/start\",status=\"201\"} 1",
        "magrathea_http_request_duration_seconds_bucket",
        "magrathea_journal_commit_records_bucket",
        "magrathea_journal_commit_duration_seconds_bucket",
        "magrathea_step_duration_seconds_count{task=\"shell_task\"} 1",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

/// A sub-run is a started run too: the runs started and finished add up when a parent starts
/// a child, rather than the children finishing unstarted.
#[tokio::test]
async fn a_sub_run_is_counted_as_started() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/parent.yaml"),
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: hello\n    \
         on: { success: done }\n  done: { type: terminal }\n",
    );
    let run = s.start_run("shop", "parent", json!({})).await;
    s.wait_status("shop", &run, &["DONE"]).await;
    // The child's end is counted as its status changes; give the watcher a moment.
    let mut text = s.get_text("/metrics", None).await;
    for _ in 0..100 {
        if text.contains("magrathea_runs_finished_total{status=\"DONE\"} 2") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        text = s.get_text("/metrics", None).await;
    }
    for needle in [
        "magrathea_runs_started_total{trigger=\"rest\"} 1",
        "magrathea_runs_started_total{trigger=\"sub_run\"} 1",
        "magrathea_runs_finished_total{status=\"DONE\"} 2",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

/// A page of nothing is no page: `limit=0` is refused on every listing, as on the documents',
/// and so is a limit that is no whole number, with the same code rather than the query
/// parser's.
#[tokio::test]
async fn a_limit_of_zero_or_no_number_is_refused_on_every_listing() {
    let s = Server::start().await;
    for limit in ["0", "-1", "ten", "1.5"] {
        for path in [
            "/brain/acme/project/shop/workflows/runs?limit=",
            "/brain/acme/project/shop/inbox?limit=",
            "/v1/workflow-approvals?status=all&limit=",
            "/brain/acme/project/shop/documents?dir=workflows&limit=",
            "/brain/acme/project/shop/triggers/deliveries?limit=",
        ] {
            let r = s
                .get(&format!("{path}{limit}"), Some(ACME))
                .send()
                .await
                .unwrap();
            assert_eq!(
                code(r).await,
                (400, "MAG-HTTP-INVALID-LIMIT".into()),
                "{path}{limit}"
            );
        }
    }
    // Past the most a page holds, a listing answers its largest page.
    let r = s
        .get(
            "/brain/acme/project/shop/workflows/runs?limit=100000",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn every_openapi_route_exists_in_the_router() {
    let s = Server::start().await;
    let doc: Value = s.get_json("/openapi.json", None).await;
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.len() >= 18, "{}", paths.len());
    let mut checked = 0;
    for (path, item) in paths {
        let concrete = path
            .replace("{tenant}", "acme")
            .replace("{project}", "shop")
            .replace("{path}", "workflows/hello.yaml")
            .replace('{', "x")
            .replace('}', "");
        for method in item.as_object().unwrap().keys() {
            let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            let r = s
                .client
                .request(m, s.url(&concrete))
                .bearer_auth(ACME)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let streams = r
                .headers()
                .get("content-type")
                .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
            if streams {
                // A live stream (the tenant's events) answers and stays open: it exists.
                assert_eq!(status, 200, "{method} {path}");
                checked += 1;
                continue;
            }
            let (_, code) = code(r).await;
            assert_ne!(code, "MAG-HTTP-NO-ROUTE", "{method} {path}");
            assert_ne!(status, 405, "{method} {path}: the router lacks the method");
            checked += 1;
        }
    }
    assert!(checked >= 20, "{checked}");
    let r = s.get("/no/such/route", Some(ACME)).send().await.unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-NO-ROUTE".into()));
}

#[tokio::test]
async fn documents_are_read_listed_and_written_with_validation() {
    let s = Server::start().await;
    let base = "/brain/acme/project/shop/documents";
    let text = s
        .get_text(&format!("{base}/workflows/hello.yaml"), Some(ACME_READ))
        .await;
    assert_eq!(text, HELLO);
    let list: Value = s
        .get_json(&format!("{base}?dir=workflows"), Some(ACME_READ))
        .await;
    assert_eq!(
        item_names(&list),
        [
            "approve.yaml",
            "broken.yaml",
            "hello.yaml",
            "needs-param.yaml"
        ]
    );
    let top: Value = s.get_json(base, Some(ACME)).await;
    assert_eq!(
        top["items"][0],
        json!({"name": "workflows", "path": "workflows", "kind": "dir"})
    );
    // Paged by name: the page's last name is the next page's cursor, in the body and in
    // X-Next-Cursor; the last page names none.
    let page = |query: &str| format!("{base}?dir=workflows&{query}");
    let (header, first) = s.get_page(&page("limit=3"), Some(ACME_READ)).await;
    assert_eq!(
        item_names(&first),
        ["approve.yaml", "broken.yaml", "hello.yaml"]
    );
    assert_eq!(
        (header.as_deref(), &first["next"]),
        (Some("hello.yaml"), &json!("hello.yaml"))
    );
    let (header, last) = s
        .get_page(&page("limit=3&cursor=hello.yaml"), Some(ACME_READ))
        .await;
    assert_eq!(item_names(&last), ["needs-param.yaml"]);
    assert_eq!((header, last.get("next")), (None, None));
    // A limit past the largest page (1,000) gets the largest page, as on every listing.
    for query in ["limit=1001", "limit=18446744073709551616"] {
        let (header, all) = s.get_page(&page(query), Some(ACME_READ)).await;
        assert_eq!(item_names(&all).len(), 4, "{query}");
        assert_eq!(header, None, "{query}");
    }
    for (query, code_) in [
        ("limit=0", "MAG-HTTP-INVALID-LIMIT"),
        ("limit=-1", "MAG-HTTP-INVALID-LIMIT"),
        ("cursor=..", "MAG-HTTP-INVALID-CURSOR"),
    ] {
        let r = s
            .get(&format!("{base}?dir=workflows&{query}"), Some(ACME_READ))
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, code_.into()), "{query}");
    }

    let put = |path: &str, body: &str, token: &str| {
        s.client
            .put(s.url(&format!("{base}/{path}")))
            .bearer_auth(token)
            .body(body.to_string())
            .send()
    };
    let r = put("workflows/new.yaml", BROKEN, ACME).await.unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    let first = body["error"]["diagnostics"][0].as_str().unwrap();
    assert!(
        first.starts_with("acme/shop/_vance/workflows/new.yaml:"),
        "{first}"
    );
    assert!(first.contains(": [MAG-Y"), "{first}");
    assert!(!s.root.join("acme/shop/_vance/workflows/new.yaml").exists());

    let r = put("workflows/new.yaml", HELLO, ACME).await.unwrap();
    assert_eq!(r.status(), 201);
    let r = put("workflows/new.yaml", HELLO, ACME).await.unwrap();
    assert_eq!(r.status(), 200);
    let run = s.start_run("shop", "new", json!({})).await;
    s.wait_status("shop", &run, &["DONE"]).await;

    // A path may also name the document as listings and diagnostics do, from the project:
    // the same document, validated the same way, never a `_vance/_vance/` beside it.
    let r = put("_vance/workflows/viaproject.yaml", BROKEN, ACME)
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let r = put("_vance/workflows/viaproject.yaml", HELLO, ACME)
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert!(
        s.root
            .join("acme/shop/_vance/workflows/viaproject.yaml")
            .exists()
    );
    assert!(!s.root.join("acme/shop/_vance/_vance").exists());
    let text = s
        .get_text(
            &format!("{base}/_vance/workflows/viaproject.yaml"),
            Some(ACME_READ),
        )
        .await;
    assert_eq!(text, HELLO);
    let list: Value = s
        .get_json(&format!("{base}?dir=_vance/workflows"), Some(ACME_READ))
        .await;
    assert!(item_names(&list).contains(&"viaproject.yaml"));
    let run = s.start_run("shop", "viaproject", json!({})).await;
    s.wait_status("shop", &run, &["DONE"]).await;

    for bad in [
        "../../../etc/passwd",
        "workflows/../../x",
        "..",
        ".hidden",
        "a/%2e%2e/b",
    ] {
        let r = s
            .get(&format!("{base}/{bad}"), Some(ACME))
            .send()
            .await
            .unwrap();
        assert!(
            matches!(r.status().as_u16(), 400 | 404),
            "{bad}: {}",
            r.status()
        );
    }
    let r = put("x/..%2F..%2Fescape.yaml", "a: 1", ACME).await.unwrap();
    assert_eq!(r.status(), 400);
    assert!(!s.root.join("acme/escape.yaml").exists());
    let r = s
        .get(&format!("{base}/workflows/none.yaml"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-404".into()));

    // settings.yaml holds event tokens and webhook secrets, which start runs: reading it
    // needs the scopes of writing it, workflow.write and workflow.run.
    write(
        &s.root.join("acme/shop/_vance/settings.yaml"),
        "events: {}\n",
    );
    for token in [ACME_READ, ACME_WRITE, ACME_RUN] {
        let r = s
            .get(&format!("{base}/settings.yaml"), Some(token))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{token}");
    }
    let r = s
        .get(&format!("{base}/settings.yaml"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);

    // Settings that do not parse would be ignored for the defaults: refused with where.
    let r = put("settings.yaml", "lanes: [\n", ACME).await.unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    let first = body["error"]["diagnostics"][0].as_str().unwrap();
    assert!(
        first.starts_with("acme/shop/_vance/settings.yaml:") && first.contains("[MAG-Y001]"),
        "{first}"
    );
    assert_eq!(
        std::fs::read_to_string(s.root.join("acme/shop/_vance/settings.yaml")).unwrap(),
        "events: {}\n"
    );
    // A tool section the cascade cannot read would deny every tool of the project.
    let r = put("settings.yaml", "tools:\n  bogus: 1\n", ACME)
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    // A value its setting cannot take would be ignored as well: refused at its place.
    let r = put(
        "settings.yaml",
        "defaults:\n  taskTimeoutSeconds: -1\n",
        ACME,
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    let first = body["error"]["diagnostics"][0].as_str().unwrap();
    assert!(
        first.starts_with("acme/shop/_vance/settings.yaml:2:23: [MAG-Y026]"),
        "{first}"
    );
    let r = put("settings.yaml", "lanes:\n  maxConcurrentTasks: 2\n", ACME)
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

/// What the framework refuses before a handler runs is answered in the API's JSON shape too.
#[tokio::test]
async fn a_query_or_path_that_does_not_parse_and_a_wrong_method_answer_json_with_a_code() {
    let s = Server::start().await;
    let runs = "/brain/acme/project/shop/workflows/runs";
    for (request, status, expected) in [
        (
            s.get(&format!("{runs}?cursor=a&cursor=b"), Some(ACME)),
            400,
            "MAG-HTTP-INVALID-REQUEST",
        ),
        (
            s.get(&format!("{runs}/%FF"), Some(ACME)),
            400,
            "MAG-HTTP-INVALID-REQUEST",
        ),
        (
            auth(
                s.client
                    .delete(s.url(&format!("{runs}/0123456789abcdef0123456789abcdef"))),
                Some(ACME),
            ),
            405,
            "MAG-HTTP-405",
        ),
    ] {
        let r = request.send().await.unwrap();
        let allow = r.headers().get("allow").cloned();
        assert_eq!(
            r.headers()["content-type"].to_str().unwrap(),
            "application/json"
        );
        let (got, code_) = code(r).await;
        assert_eq!((got, code_.as_str()), (status, expected));
        if status == 405 {
            assert!(allow.is_some(), "a 405 keeps its Allow header");
        }
    }
}

#[tokio::test]
async fn a_workflow_written_with_warnings_is_written_and_its_warnings_returned() {
    let s = Server::start().await;
    let url = s.url("/brain/acme/project/shop/documents/workflows/parent.yaml");
    let parent = "\
start: child
states:
  child:
    type: workflow_task
    workflow: no-such-workflow
    timeoutSeconds: 60
    on: { success: again }
  again:
    type: workflow_task
    workflow: parent
    on: { success: common, failure: done }
  common:
    type: workflow_task
    workflow: shared
    on: { success: done, failure: done }
  done: { type: terminal }
";
    write(
        &s.root.join("acme/_tenant/_vance/workflows/shared.yaml"),
        HELLO,
    );
    let r = s
        .client
        .put(url.clone())
        .bearer_auth(ACME)
        .body(parent)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    let label = "acme/shop/_vance/workflows/parent.yaml";
    assert_eq!(
        body["warnings"],
        json!([
            format!(
                "{label}:3:3: warning: [MAG-YA003] a `failure` or `timeout` of workflow_task `child` would fail the run: no 'on:' or 'catch:' routes them"
            ),
            format!(
                "{label}:5:15: warning: [MAG-YA005] workflow_task 'child' starts workflow 'no-such-workflow', which is not a workflow of the project or its tenant: expected _vance/workflows/no-such-workflow.yaml; the task would end with 'failure'"
            ),
        ]),
        "a workflow that starts itself, or one of the tenant, is no warning"
    );
    assert!(
        s.root
            .join("acme/shop/_vance/workflows/parent.yaml")
            .exists()
    );

    // A transition that can never be taken is a warning: the document is written, as the
    // reference's loader takes it.
    let never = "\
start: wait
states:
  wait:
    type: timer_task
    duration: 5m
    on: { success: done }
  done: { type: terminal }
";
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/never.yaml"))
        .bearer_auth(ACME)
        .body(never)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["warnings"],
        json!([
            "acme/shop/_vance/workflows/never.yaml:3:3: warning: [MAG-YA003] a `fired` of timer_task `wait` would fail the run: no 'on:' routes it",
            "acme/shop/_vance/workflows/never.yaml:6:11: warning: [MAG-YA001] state 'wait' has 'on: success', but a timer_task never ends that way: it ends with fired; the transition can never be taken",
        ])
    );
    // A wrong target is an error: refused, and the message counts it.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/wrong.yaml"))
        .bearer_auth(ACME)
        .body(never.replace("success: done", "fired: dnoe"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["diagnostics"][0]
            .as_str()
            .is_some_and(|d| d.contains("[MAG-Y010] unknown transition target 'dnoe'")),
        "{body}"
    );
    assert_eq!(
        body["error"]["message"],
        "invalid workflow document (1 error(s))"
    );
    assert!(
        !s.root
            .join("acme/shop/_vance/workflows/wrong.yaml")
            .exists()
    );
}

/// `…/workflows/runs/…` are the routes of runs: a workflow named `runs` could be written but
/// not started, graphed or versioned over HTTP, so its document is refused when written.
#[tokio::test]
async fn a_workflow_named_runs_is_refused_when_written() {
    let s = Server::start().await;
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/runs.yaml"))
        .bearer_auth(ACME)
        .body("start: done\nstates:\n  done: { type: terminal }\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-HTTP-RESERVED-NAME", "{body}");
    assert!(
        !s.root.join("acme/shop/_vance/workflows/runs.yaml").exists(),
        "nothing was written"
    );
    // A name that merely starts with it is fine.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/runs-nightly.yaml"))
        .bearer_auth(ACME)
        .body("start: done\nstates:\n  done: { type: terminal }\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // Nor may it come in as a draft, to be published.
    let (status, body) = s
        .put_document(
            "workflow-drafts/runs.yaml",
            ACME,
            "start: done\nstates:\n  done: { type: terminal }\n",
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("MAG-HTTP-RESERVED-NAME"), "{body}");
    assert!(
        !s.root
            .join("acme/shop/_vance/workflow-drafts/runs.yaml")
            .exists(),
        "nothing was written"
    );
}

#[tokio::test]
async fn the_document_schemas_are_served_without_a_token() {
    let s = Server::start().await;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .join("schemas");
    for name in [
        "workflow",
        "settings",
        "recipe",
        "event",
        "scheduler",
        "hook",
    ] {
        let r = s
            .get(&format!("/schemas/{name}.schema.json"), None)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{name}");
        assert_eq!(
            r.headers()[reqwest::header::CONTENT_TYPE],
            "application/schema+json"
        );
        let served: Value = r.json().await.unwrap();
        let file = std::fs::read_to_string(root.join(format!("{name}.schema.json"))).unwrap();
        let committed: Value = serde_json::from_str(&file).unwrap();
        assert_eq!(served, committed, "{name}");
    }
    let r = s
        .get("/schemas/nope.schema.json", None)
        .send()
        .await
        .unwrap();
    let (status, code) = code(r).await;
    assert_eq!((status, code.as_str()), (404, "MAG-HTTP-404"));
}

/// The lines of `magrathea_http_requests_total` and of the duration histogram's counts in a
/// scrape.
async fn request_series(s: &Server) -> (Vec<String>, usize) {
    let text = s.get_text("/metrics", None).await;
    let requests: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("magrathea_http_requests_total{"))
        .map(str::to_owned)
        .collect();
    let durations = text
        .lines()
        .filter(|l| l.starts_with("magrathea_http_request_duration_seconds_count{"))
        .count();
    (requests, durations)
}

#[tokio::test]
async fn request_metrics_keep_one_series_for_unknown_paths_and_methods() {
    let s = Server::start().await;
    // The scrape's own series exists from the first scrape on.
    request_series(&s).await;
    // 100 distinct paths and 100 distinct methods, in two rounds.
    let round = |from: usize| {
        let s = &s;
        async move {
            for i in from..from + 50 {
                s.get(&format!("/no-such-path-{i}"), None)
                    .send()
                    .await
                    .unwrap();
                let method = reqwest::Method::from_bytes(format!("BREW{i}").as_bytes()).unwrap();
                s.client
                    .request(method.clone(), s.url("/healthz"))
                    .send()
                    .await
                    .unwrap();
                s.client
                    .request(method, s.url(&format!("/elsewhere/{i}")))
                    .send()
                    .await
                    .unwrap();
            }
        }
    };
    round(0).await;
    let (first, first_durations) = request_series(&s).await;
    round(50).await;
    let (second, second_durations) = request_series(&s).await;
    let labels = |lines: &[String]| -> Vec<String> {
        lines
            .iter()
            .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
            .collect()
    };
    assert_eq!(
        labels(&first),
        labels(&second),
        "50 more distinct paths and methods added series"
    );
    assert_eq!(first_durations, second_durations);
    assert!(first.len() <= 5, "{first:#?}");
    let all = second.join("\n");
    assert!(all.contains("method=\"other\""), "{all}");
    assert!(all.contains("route=\"unmatched\""), "{all}");
    assert!(
        !all.contains("no-such-path") && !all.contains("BREW"),
        "{all}"
    );
}

/// A document's `ETag` is the SHA-256 of its bytes, and a write or removal that sends the tag
/// it read (`If-Match`) or asks to create only (`If-None-Match: *`) happens only if the
/// document is still as the client saw it: two editors cannot overwrite each other unseen.
#[tokio::test]
async fn conditional_writes_keep_an_edit_from_being_overwritten_unseen() {
    use sha2::{Digest, Sha256};
    let s = Server::start().await;
    let path = "/brain/acme/project/shop/documents/workflows/edited.yaml";
    let tag = |text: &str| format!("\"{}\"", hex::encode(Sha256::digest(text.as_bytes())));
    let first = "start: done\nstates:\n  done: { type: terminal, result: one }\n";
    let second = "start: done\nstates:\n  done: { type: terminal, result: two }\n";
    let third = "start: done\nstates:\n  done: { type: terminal, result: three }\n";
    let send = async |method: reqwest::Method, cond: Option<(&str, &str)>, body: &str| {
        let mut req = s.client.request(method, s.url(path)).bearer_auth(ACME);
        if let Some((name, value)) = cond {
            req = req.header(name, value);
        }
        let r = req.body(body.to_owned()).send().await.unwrap();
        let etag = r
            .headers()
            .get("etag")
            .map(|v| v.to_str().unwrap().to_owned());
        (r.status().as_u16(), etag, r.text().await.unwrap())
    };
    // Created only if absent; the answer names the new text's tag, as a read does.
    let (status, etag, _) = send(reqwest::Method::PUT, Some(("If-None-Match", "*")), first).await;
    assert_eq!((status, etag.as_deref()), (201, Some(tag(first).as_str())));
    let (status, _, body) = send(reqwest::Method::PUT, Some(("If-None-Match", "*")), first).await;
    assert_eq!(status, 412, "{body}");
    let read = s.get(path, Some(ACME)).send().await.unwrap();
    assert_eq!(read.headers()["etag"].to_str().unwrap(), tag(first));
    // A read of a copy that is current answers 304 without the body (a weak tag will do), one
    // that insists on a stale tag 412.
    for sent in [tag(first), format!("W/{}", tag(first))] {
        let r = s
            .get(path, Some(ACME))
            .header("If-None-Match", &sent)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 304, "{sent}");
        assert!(r.text().await.unwrap().is_empty());
    }
    let r = s
        .get(path, Some(ACME))
        .header("If-Match", "\"stale\"")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 412);
    // If-None-Match compares weakly on a write too.
    let weak = format!("W/{}", tag(first));
    let (status, _, _) = send(reqwest::Method::PUT, Some(("If-None-Match", &weak)), third).await;
    assert_eq!(status, 412);
    // Alice saves on top of what she read; Bob, who read the same, is refused.
    let seen = tag(first);
    let (status, _, body) = send(reqwest::Method::PUT, Some(("If-Match", &seen)), second).await;
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = send(reqwest::Method::PUT, Some(("If-Match", &seen)), third).await;
    assert_eq!(status, 412, "{body}");
    assert!(
        body.contains("MAG-HTTP-PRECONDITION-FAILED")
            && body.contains(tag(second).trim_matches('"')),
        "the refusal names the tag it has now: {body}"
    );
    assert_eq!(
        s.get_text(path, Some(ACME)).await,
        second,
        "Bob's edit did not land"
    );
    // A removal too: not of a text the client has not seen.
    let (status, _, _) = send(reqwest::Method::DELETE, Some(("If-Match", &seen)), "").await;
    assert_eq!(status, 412);
    assert_eq!(s.get_text(path, Some(ACME)).await, second);
    let now = tag(second);
    let (status, _, body) = send(reqwest::Method::DELETE, Some(("If-Match", &now)), "").await;
    assert_eq!(status, 204, "{body}");
    // Without a condition, the last write wins as before.
    let (status, _, _) = send(reqwest::Method::PUT, None, third).await;
    assert_eq!(status, 201);
}
