//! Runs over REST: start, read, list with a cursor, cancel, journal; the error answers of a
//! start; and the scope rule: a run of another tenant or project is 404 on every route.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn start_get_list_journal_and_pagination() {
    let s = Server::start().await;
    let run = s.start_run("shop", "hello", json!({"who": "http"})).await;
    let v = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(v["workflowName"], "hello");
    assert_eq!(v["result"], "greeted");
    assert_eq!(
        v["startedBy"], "alice",
        "startedBy defaults to the token's subject"
    );
    assert_eq!(v["params"]["who"], "http");
    assert_eq!(v["scope"], "acme/shop");

    let journal: Vec<Value> = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    assert_eq!(journal[0]["type"], "StartRecord");
    assert!(
        journal
            .iter()
            .enumerate()
            .all(|(i, e)| e["seq"] == i as u64)
    );

    let mut ids = vec![run];
    for _ in 0..4 {
        ids.push(s.start_run("shop", "hello", json!({})).await);
    }
    s.start_run("shop", "approve", json!({})).await;
    // Newest first, 2 per page, following the cursor.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut path = "/brain/acme/project/shop/workflows/runs?workflow=hello&limit=2".to_string();
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let response = s.get(&path, Some(ACME)).send().await.unwrap();
        let next = response
            .headers()
            .get("x-next-cursor")
            .map(|v| v.to_str().unwrap().to_string());
        if next.is_some() {
            assert!(
                response.headers().get("link").is_some(),
                "a Link header names the next page"
            );
        }
        let page: Value = response.json().await.unwrap();
        let items = page.as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(
            items
                .iter()
                .map(|i| i["workflowRunId"].as_str().unwrap().to_string()),
        );
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    ids.reverse();
    assert_eq!(seen, ids, "every hello run once, newest first");

    let all = s
        .get("/brain/acme/project/shop/workflows/runs", Some(ACME))
        .send()
        .await
        .unwrap();
    assert!(
        all.headers().get("x-next-cursor").is_none(),
        "one page holds all"
    );
    let all: Value = all.json().await.unwrap();
    assert_eq!(all.as_array().unwrap().len(), 6);
    let bad = s
        .get(
            "/brain/acme/project/shop/workflows/runs?cursor=nope",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(code(bad).await, (400, "MAG-HTTP-INVALID-CURSOR".into()));
}

/// A project is a directory of the tree: a start in a project name that has none is 404,
/// even for a workflow the tenant holds (which a real project of the tenant starts).
#[tokio::test]
async fn a_start_in_a_project_that_does_not_exist_is_404() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/_tenant/_vance/workflows/shared.yaml"),
        "start: done\nstates:\n  done: { type: terminal, result: shared }\n",
    );
    for (project, name) in [("nosuch", "shared"), ("nosuch", "hello")] {
        let r = s
            .post(
                &format!("/brain/acme/project/{project}/workflows/{name}/start"),
                Some(ACME),
            )
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404, "{project}/{name}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("project `acme/nosuch` not found"),
            "{body}"
        );
    }
    assert!(!s.root.join("acme/nosuch").exists());
    let run = s.start_run("shop", "shared", json!({})).await;
    let v = s.wait_status("shop", &run, &["DONE"]).await;
    assert_eq!(v["result"], "shared");
}

#[tokio::test]
async fn start_errors_are_404_422_and_400() {
    let s = Server::start().await;
    let start = |name: &str, body: Value| {
        s.post(
            &format!("/brain/acme/project/shop/workflows/{name}/start"),
            Some(ACME),
        )
        .json(&body)
        .send()
    };
    let r = start("missing", json!({})).await.unwrap();
    assert_eq!(r.status(), 404);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-HTTP-WORKFLOW-NOT-FOUND");
    // Where it looked, as the command says it, relative to the root; and a near name.
    assert_eq!(
        body["error"]["message"],
        "[MAG-DOC001] unknown workflow `missing`: looked for \
         acme/shop/_vance/workflows/missing.yaml and acme/_tenant/_vance/workflows/missing.yaml"
    );
    let r = start("helo", json!({})).await.unwrap();
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .ends_with("acme/_tenant/_vance/workflows/helo.yaml (did you mean 'hello'?)"),
        "{body}"
    );

    let r = start("broken", json!({})).await.unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    let diags = body["error"]["diagnostics"].as_array().unwrap();
    assert!(!diags.is_empty(), "{body}");
    for d in diags {
        let d = d.as_str().unwrap();
        assert!(
            d.starts_with("acme/shop/_vance/workflows/broken.yaml:"),
            "{d}"
        );
        let rest = d.trim_start_matches("acme/shop/_vance/workflows/broken.yaml:");
        let mut parts = rest.splitn(3, ':');
        assert!(parts.next().unwrap().parse::<u32>().is_ok(), "{d}");
        assert!(parts.next().unwrap().parse::<u32>().is_ok(), "{d}");
        assert!(parts.next().unwrap().starts_with(" [MAG-Y"), "{d}");
    }

    // A document that is not UTF-8 is invalid too (not the server's failure), located.
    std::fs::write(
        s.root.join("acme/shop/_vance/workflows/latin.yaml"),
        b"start: a\nstates:\n  a: { type: terminal, result: \"caf\xe9\" }\n",
    )
    .unwrap();
    let r = start("latin", json!({})).await.unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["diagnostics"],
        json!([
            "acme/shop/_vance/workflows/latin.yaml:3:36: [MAG-Y001] the file is not UTF-8 text \
             (byte 0xE9): expected a UTF-8 document; save the file as UTF-8"
        ]),
        "{body}"
    );

    // Written through the documents API, it is refused where the byte is.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/workflows/latin2.yaml"))
        .bearer_auth(ACME)
        .body(&b"start: a\nstates:\n  a: { type: terminal, result: \"caf\xe9\" }\n"[..])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["diagnostics"],
        json!([
            "acme/shop/_vance/workflows/latin2.yaml:3:36: [MAG-Y001] the file is not UTF-8 text \
             (byte 0xE9): expected a UTF-8 document; save the file as UTF-8"
        ]),
        "{body}"
    );
    assert_eq!(
        body["error"]["message"],
        "invalid document: it is not UTF-8 text"
    );
    // Any document: a schedule's too, without naming it a workflow.
    let r = s
        .client
        .put(s.url("/brain/acme/project/shop/documents/scheduler/latin.yaml"))
        .bearer_auth(ACME)
        .body(&b"cron: \"0 * * * *\"\nworkflow: caf\xe9\n"[..])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["diagnostics"][0],
        "acme/shop/_vance/scheduler/latin.yaml:2:14: [MAG-Y001] the file is not UTF-8 text \
         (byte 0xE9): expected a UTF-8 document; save the file as UTF-8",
        "{body}"
    );

    // Its graph too.
    let r = s
        .get("/brain/acme/project/shop/workflows/latin/graph", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    // And its versions.
    let r = s
        .get(
            "/brain/acme/project/shop/workflows/latin/versions",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);

    let r = start("needs-param", json!({"params": {}})).await.unwrap();
    assert_eq!(code(r).await, (400, "MAG-HTTP-INVALID-PARAMS".into()));
    let r = start("needs-param", json!({"params": {"pr_url": 7}}))
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "MAG-HTTP-INVALID-PARAMS".into()));
    let r = start(
        "needs-param",
        json!({"params": {"pr_url": "u"}, "startedBy": "bot"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);

    let r = start("hello", json!({"unknown": 1})).await.unwrap();
    assert_eq!(code(r).await, (400, "MAG-HTTP-INVALID-JSON".into()));
    let r = s
        .post("/brain/acme/project/shop/workflows/hello/start", Some(ACME))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (400, "MAG-HTTP-INVALID-JSON".into()));
    // An array is not read as the fields in order, nor a scalar as nothing.
    for body in [r#"[{"who": "x"}, "mallory"]"#, "[]", "7", "\"params\""] {
        let r = s
            .post("/brain/acme/project/shop/workflows/hello/start", Some(ACME))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(
            code(r).await,
            (400, "MAG-HTTP-INVALID-JSON".into()),
            "{body}"
        );
    }
    // An empty body starts with no parameters.
    let r = s
        .post("/brain/acme/project/shop/workflows/hello/start", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // A byte-order mark before the JSON (as Windows tools write) is ignored; a UTF-16 body is
    // named for what it is.
    let r = s
        .post(
            "/brain/acme/project/shop/workflows/needs-param/start",
            Some(ACME),
        )
        .body(&b"\xEF\xBB\xBF{\"params\": {\"pr_url\": \"u\"}}"[..])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let r = s
        .post("/brain/acme/project/shop/workflows/hello/start", Some(ACME))
        .body(&b"\xFF\xFE{\x00}\x00"[..])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-HTTP-INVALID-JSON", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("UTF-16")),
        "{body}"
    );
}

#[tokio::test]
async fn cancel_ends_a_waiting_run() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let r: Value = s
        .post_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/cancel"),
            Some(ACME),
            &json!({"reason": "not needed"}),
        )
        .await;
    assert_eq!(r["cancel"], "requested", "{r}");
    let v = s.wait_status("shop", &run, &["CANCELLED"]).await;
    assert_eq!(v["reason"], "not needed");
    let again: Value = s
        .post(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/cancel"),
            Some(ACME),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(again["cancel"], "alreadyFinished");
}

#[tokio::test]
async fn runs_and_items_of_another_tenant_or_project_are_404_everywhere() {
    let s = Server::start().await;
    let run = s.start_run("shop", "approve", json!({})).await;
    s.wait_status("shop", &run, &["WAITING"]).await;
    let items: Vec<Value> = s
        .get_json("/brain/acme/project/shop/inbox", Some(ACME))
        .await;
    let item = items[0]["id"].as_str().unwrap().to_string();

    // (tenant, project, token): another project of the tenant, another tenant's route with
    // its own token, and the run's own route with another tenant's token.
    let elsewhere = [
        ("acme", "lab", ACME),
        ("globex", "shop", GLOBEX),
        ("acme", "shop", GLOBEX),
    ];
    for (t, p, token) in elsewhere {
        let base = format!("/brain/{t}/project/{p}");
        let gets = [
            format!("{base}/workflows/runs/{run}"),
            format!("{base}/workflows/runs/{run}/journal"),
            format!("{base}/workflows/runs/{run}/events"),
            format!("{base}/inbox/{item}"),
        ];
        for path in gets {
            let r = s.get(&path, Some(token)).send().await.unwrap();
            assert_eq!(
                code(r).await,
                (404, "MAG-HTTP-404".into()),
                "GET {path} as {token}"
            );
        }
        let posts = [
            (format!("{base}/workflows/runs/{run}/cancel"), json!({})),
            (
                format!("{base}/inbox/{item}/answer"),
                json!({"kind": "approve"}),
            ),
        ];
        for (path, body) in posts {
            let r = s.post(&path, Some(token)).json(&body).send().await.unwrap();
            assert_eq!(
                code(r).await,
                (404, "MAG-HTTP-404".into()),
                "POST {path} as {token}"
            );
        }
        let list: Value = s
            .get_json(&format!("{base}/workflows/runs"), Some(token))
            .await;
        if t == "acme" && p == "shop" {
            assert_eq!(list["error"]["code"], "MAG-HTTP-404");
        } else {
            assert_eq!(list, json!([]), "{t}/{p}");
        }
    }
    // Globex's approvals do not include acme's item, and cannot answer it.
    let approvals: Value = s.get_json("/v1/workflow-approvals", Some(GLOBEX)).await;
    assert_eq!(approvals, json!([]));
    let r = s
        .post(
            &format!("/v1/workflow-approvals/{item}/approve"),
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-404".into()));
    // Nothing was answered or cancelled.
    let v = s.wait_status("shop", &run, &["WAITING"]).await;
    assert_eq!(v["status"], "WAITING");
}

/// A page of runs ends early, with a cursor, once its JSON passes 8 MiB: each run's view holds
/// its parameters, so a page of large runs would otherwise be as large as a hundred of them.
/// Following the cursors lists every run once.
#[tokio::test]
async fn a_page_of_large_runs_is_cut_by_its_size_and_the_cursor_goes_on() {
    let s = Server::start().await;
    let big = "x".repeat(900 * 1024);
    let mut started = Vec::new();
    for _ in 0..12 {
        started.push(s.start_run("shop", "approve", json!({ "blob": big })).await);
    }
    let base = "/brain/acme/project/shop/workflows/runs?workflow=approve&limit=100";
    let (next, first) = s.get_page(base, Some(ACME)).await;
    let first = first.as_array().unwrap().clone();
    assert!(
        (8..12).contains(&first.len()),
        "{} runs on the first page",
        first.len()
    );
    let cursor = next.expect("a cursor to the rest");
    assert_eq!(first.last().unwrap()["workflowRunId"], cursor.as_str());
    let (last_next, rest) = s
        .get_page(&format!("{base}&cursor={cursor}"), Some(ACME))
        .await;
    assert_eq!(last_next, None);
    let mut listed: Vec<String> = first
        .iter()
        .chain(rest.as_array().unwrap())
        .map(|r| r["workflowRunId"].as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    started.sort();
    assert_eq!(listed, started);
}
