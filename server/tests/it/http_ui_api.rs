//! The routes the web UI needs beyond the runs API: who the token is (`/v1/me`), the
//! workflows of a project with their diagnostics, filters of the run listing, and the links
//! between a run and its sub-runs. Each is checked against a real server on 127.0.0.1, with
//! the rule that a token of one tenant learns nothing of another.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn me_names_the_token_its_scopes_and_the_projects_of_its_tenant_only() {
    let s = Server::start().await;
    // A directory that is not a project (hidden) and the tenant-wide one are not listed.
    std::fs::create_dir_all(s.root.join("acme/.cache")).unwrap();
    let me: Value = s.get_json("/v1/me", Some(ACME)).await;
    assert_eq!(me["subject"], "alice");
    assert_eq!(me["tenant"], "acme");
    assert_eq!(
        me["scopes"],
        serde_json::json!(["workflow.read", "workflow.write", "workflow.run"])
    );
    assert_eq!(
        me["tenants"],
        serde_json::json!([{"name": "acme", "projects": ["lab", "shop"], "truncated": false}]),
        "only the token's tenant, its projects sorted, without _tenant: {me}"
    );
    assert!(
        !me.to_string().contains("globex"),
        "another tenant is never named: {me}"
    );

    let runner: Value = s.get_json("/v1/me", Some(ACME_RUN)).await;
    assert_eq!(runner["subject"], "runner");
    assert_eq!(runner["scopes"], serde_json::json!(["workflow.run"]));

    let globex: Value = s.get_json("/v1/me", Some(GLOBEX)).await;
    assert_eq!(globex["tenants"][0]["name"], "globex");
    assert_eq!(
        globex["tenants"][0]["projects"],
        serde_json::json!(["shop"])
    );
    assert_eq!(globex["tenants"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn me_without_a_valid_token_is_401() {
    let s = Server::start().await;
    for token in [None, Some("no-such-token")] {
        let (status, code) = code(s.get("/v1/me", token).send().await.unwrap()).await;
        assert_eq!((status, code.as_str()), (401, "MAG-HTTP-401"), "{token:?}");
    }
}

#[tokio::test]
async fn me_lists_roles_of_the_token_entry() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let extra = format!(
        "{}  - token: ops-token\n    tenant: acme\n    subject: olga\n    scopes: [workflow.read]\n    roles: [ops, release]\n",
        tokens_yaml()
    );
    write(&root.join("_auth/tokens.yaml"), &extra);
    let config = magrathea_server::ServeConfig::new(&root).addr("127.0.0.1:0".parse().unwrap());
    let (addr, _handle) = magrathea_server::serve(config).await.unwrap();
    let me: Value = reqwest::Client::new()
        .get(format!("http://{addr}/v1/me"))
        .bearer_auth("ops-token")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["subject"], "olga");
    assert_eq!(me["roles"], serde_json::json!(["ops", "release"]));
    assert_eq!(me["scopes"], serde_json::json!(["workflow.read"]));
}

#[tokio::test]
async fn me_without_authentication_lists_every_tenant() {
    let s = Server::start_with(|c| c.insecure_no_auth(true)).await;
    let me: Value = s.get_json("/v1/me", None).await;
    assert_eq!(me["subject"], "anonymous");
    assert_eq!(me["tenant"], Value::Null);
    let names: Vec<&str> = me["tenants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["acme", "globex"], "_auth is not a tenant: {me}");
    assert_eq!(
        me["tenants"][0]["projects"],
        serde_json::json!(["lab", "shop"])
    );
}

#[tokio::test]
async fn me_lists_at_most_a_thousand_projects() {
    let s = Server::start().await;
    for i in 0..1005 {
        std::fs::create_dir_all(s.root.join(format!("acme/p{i:04}"))).unwrap();
    }
    let me: Value = s.get_json("/v1/me", Some(ACME)).await;
    let projects = me["tenants"][0]["projects"].as_array().unwrap();
    assert_eq!(projects.len(), 1000);
    assert_eq!(me["tenants"][0]["truncated"], true);
    assert_eq!(projects[0], "lab", "sorted before being cut");
}

#[tokio::test]
async fn the_ui_routes_are_in_the_openapi_document() {
    let s = Server::start().await;
    let doc: Value = s.get_json("/openapi.json", None).await;
    let paths = &doc["paths"];
    assert!(paths["/v1/me"]["get"].is_object(), "{}", paths);
    assert!(
        paths["/brain/{tenant}/project/{project}/workflows"]["get"].is_object(),
        "{paths}"
    );
}

/// A workflow that calls `missing`, a workflow no one has: valid, with a warning.
const CALLS_MISSING: &str = "description: Calls a missing workflow.\nversion: 3\nstart: call\nstates:\n  call:\n    type: workflow_task\n    workflow: missing\n    on: { success: done, failure: done }\n  done: { type: terminal }\n";

fn workflows_of(listing: &Value) -> Vec<(&str, &str)> {
    listing
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (w["name"].as_str().unwrap(), w["source"].as_str().unwrap()))
        .collect()
}

#[tokio::test]
async fn workflows_lists_project_and_tenant_documents_with_their_diagnostics() {
    let s = Server::start().await;
    let tenant = s.root.join("acme/_tenant/_vance/workflows");
    // A tenant document shadowed by the project's, and one only the tenant has.
    write(&tenant.join("hello.yaml"), BROKEN);
    write(&tenant.join("shared.yaml"), NEEDS_PARAM);
    let vance = s.root.join("acme/shop/_vance");
    write(&vance.join("workflows/calls-missing.yaml"), CALLS_MISSING);
    write(&vance.join("workflow-drafts/hello.yaml"), HELLO);
    write(
        &vance.join("workflow-state/approve.yaml"),
        "archived: true\n",
    );
    // Not a workflow: another extension. Listed, invalid as `magrathea validate` says: a
    // document whose file name no run can start (hidden, or with a space or markup in it).
    write(&vance.join("workflows/hello.layout.json"), "{}");
    write(&vance.join("workflows/.hidden.yaml"), HELLO);
    write(&vance.join("workflows/we ird.yaml"), HELLO);
    write(&vance.join("workflows/<img src=x>.yaml"), HELLO);
    // Saved as Latin-1: placed and named as `magrathea validate` places and names it.
    std::fs::write(
        vance.join("workflows/latin.yaml"),
        b"start: a\nstates:\n  a: { type: terminal, result: \"caf\xe9\" }\n",
    )
    .unwrap();

    let list: Value = s
        .get_json("/brain/acme/project/shop/workflows", Some(ACME_READ))
        .await;
    assert_eq!(
        workflows_of(&list),
        [
            (".hidden", "project"),
            ("<img src=x>", "project"),
            ("approve", "project"),
            ("broken", "project"),
            ("calls-missing", "project"),
            ("hello", "project"),
            ("latin", "project"),
            ("needs-param", "project"),
            ("shared", "tenant"),
            ("we ird", "project"),
        ],
        "{list}"
    );
    let by_name = |n: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == n)
            .unwrap()
            .clone()
    };

    for bad in [".hidden", "<img src=x>", "we ird"] {
        let w = by_name(bad);
        assert_eq!(w["valid"], false, "{w}");
        assert_eq!(w["path"], format!("_vance/workflows/{bad}.yaml"));
        assert_eq!(w["diagnosticCount"], 1, "{w}");
        let d = &w["diagnostics"][0];
        assert_eq!(
            (d["severity"].as_str(), d["code"].as_str()),
            (Some("error"), Some("MAG-DOC002"))
        );
        assert!(
            d["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("invalid document name '{bad}'")),
            "{d}"
        );
    }

    let latin = by_name("latin");
    assert_eq!(latin["valid"], false, "{latin}");
    assert_eq!(
        latin["diagnostics"],
        json!([{
            "severity": "error",
            "code": "MAG-Y001",
            "message": "the file is not UTF-8 text (byte 0xE9): expected a UTF-8 document; \
                        save the file as UTF-8",
            "line": 3,
            "column": 36,
        }]),
        "{latin}"
    );

    let broken = by_name("broken");
    assert_eq!(broken["valid"], false);
    assert_eq!(broken["path"], "_vance/workflows/broken.yaml");
    let d = &broken["diagnostics"][0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["code"], "MAG-Y008", "{broken}");
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(1), Some(8))
    );
    assert!(
        d["message"].as_str().unwrap().contains("nowhere"),
        "the message says what is wrong: {d}"
    );

    let hello = by_name("hello");
    assert_eq!(
        hello["valid"], true,
        "the project's hello, not the tenant's broken one"
    );
    assert_eq!(hello["hasDraft"], true);
    assert_eq!(hello["archived"], false);
    assert!(
        hello["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["severity"] == "warning"),
        "a valid document has warnings only: {hello}"
    );

    assert_eq!(by_name("approve")["archived"], true);
    assert_eq!(by_name("approve")["hasDraft"], false);

    let calls = by_name("calls-missing");
    assert_eq!(calls["valid"], true);
    assert_eq!(calls["description"], "Calls a missing workflow.");
    assert_eq!(calls["version"], "3");
    let w = &calls["diagnostics"][0];
    assert_eq!(
        (w["severity"].as_str(), w["code"].as_str()),
        (Some("warning"), Some("MAG-YA005")),
        "{calls}"
    );
    assert_eq!(w["line"], 7);

    let shared = by_name("shared");
    assert_eq!(shared["path"], "../_tenant/_vance/workflows/shared.yaml");
    assert_eq!(shared["valid"], true);
}

/// The listing pages by name: `limit` a page, the `X-Next-Cursor` header naming the next
/// page's `cursor` while more follow, so a project of more than a page of documents is listed
/// whole (project and tenant documents merged, each name once).
#[tokio::test]
async fn workflows_are_listed_a_page_at_a_time() {
    let s = Server::start().await;
    let all: Vec<(String, String)> = s
        .get_json::<Value>("/brain/acme/project/shop/workflows", Some(ACME))
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_owned(),
                w["source"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert!(all.len() >= 3, "{all:?}");
    let mut paged = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("?limit=2&cursor={c}"),
            None => "?limit=2".to_owned(),
        };
        let (next, page) = s
            .get_page(
                &format!("/brain/acme/project/shop/workflows{query}"),
                Some(ACME),
            )
            .await;
        // An answer other than 200 is an error object, not a page.
        assert!(page.is_array(), "{query}: {page}");
        let names = workflows_of(&page);
        assert!(names.len() <= 2, "{names:?}");
        paged.extend(
            names
                .iter()
                .map(|(n, src)| (n.to_string(), src.to_string())),
        );
        match next {
            Some(n) => cursor = Some(n),
            None => break,
        }
    }
    assert_eq!(paged, all);
    let r = s
        .get("/brain/acme/project/shop/workflows?limit=0", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("MAG-HTTP-INVALID-LIMIT"));
}

#[tokio::test]
async fn workflows_needs_read_and_hides_other_tenants() {
    let s = Server::start().await;
    let path = "/brain/acme/project/shop/workflows";
    let r = s.get(path, Some(GLOBEX)).send().await.unwrap();
    assert_eq!(
        code(r).await.0,
        404,
        "another tenant's project is not found"
    );
    let r = s.get(path, Some(ACME_RUN)).send().await.unwrap();
    assert_eq!(code(r).await, (403, "MAG-HTTP-403".into()));
    let r = s.get(path, None).send().await.unwrap();
    assert_eq!(code(r).await.0, 401);
    let r = s
        .get("/brain/acme/project/_tenant/workflows", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(
        code(r).await.0,
        404,
        "the tenant directory is not a project"
    );
    let empty: Value = s
        .get_json("/brain/acme/project/nothing-here/workflows", Some(ACME))
        .await;
    assert_eq!(empty, serde_json::json!([]));
}

#[tokio::test]
async fn workflows_reports_oversized_documents_and_skips_links_out_of_the_project() {
    let s = Server::start().await;
    let dir = s.root.join("acme/shop/_vance/workflows");
    let big = format!(
        "start: a\n# {}\nstates:\n  a: {{ type: terminal }}\n",
        "x".repeat(1024 * 1024)
    );
    write(&dir.join("huge.yaml"), &big);
    // The link's target is outside the root altogether (and must never be read).
    let secret = tempfile::tempdir().unwrap();
    let target = secret.path().join("secret.yaml");
    std::fs::write(&target, HELLO).unwrap();
    std::os::unix::fs::symlink(&target, dir.join("leak.yaml")).unwrap();
    let list: Value = s
        .get_json("/brain/acme/project/shop/workflows", Some(ACME))
        .await;
    let names: Vec<&str> = workflows_of(&list).iter().map(|(n, _)| *n).collect();
    assert!(!names.contains(&"leak"), "{names:?}");
    let huge = list
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["name"] == "huge")
        .unwrap();
    assert_eq!(huge["valid"], false);
    assert_eq!(huge["diagnostics"][0]["code"], "MAG-Y002", "{huge}");
}

/// The ids of a page of the run listing, and its next cursor.
async fn run_page(s: &Server, query: &str, token: &str) -> (Vec<String>, Option<String>) {
    let r = s
        .get(
            &format!("/brain/acme/project/shop/workflows/runs?{query}"),
            Some(token),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{query}");
    let next = r
        .headers()
        .get("x-next-cursor")
        .map(|v| v.to_str().unwrap().to_string());
    let items: Vec<Value> = r.json().await.unwrap();
    let ids = items
        .iter()
        .map(|i| i["workflowRunId"].as_str().unwrap().to_string())
        .collect();
    (ids, next)
}

/// Starts `name` in acme/shop as `token` and returns the run id.
async fn start_as(s: &Server, name: &str, token: &str) -> String {
    let r = s
        .post(
            &format!("/brain/acme/project/shop/workflows/{name}/start"),
            Some(token),
        )
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    v["workflowRunId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn runs_filter_by_status_starter_and_start_time() {
    let s = Server::start().await;
    let done1 = start_as(&s, "hello", ACME).await;
    s.wait_status("shop", &done1, &["DONE"]).await;
    let waiting = start_as(&s, "approve", ACME_RUN).await;
    let w = s.wait_status("shop", &waiting, &["WAITING"]).await;
    let done2 = start_as(&s, "hello", ACME_RUN).await;
    s.wait_status("shop", &done2, &["DONE"]).await;
    // Another tenant's runs never show.
    let r = s
        .post(
            "/brain/globex/project/shop/workflows/hello/start",
            Some(GLOBEX),
        )
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    let (ids, next) = run_page(&s, "status=DONE", ACME_READ).await;
    assert_eq!(ids, [done2.clone(), done1.clone()], "newest first");
    assert_eq!(next, None);
    let (ids, _) = run_page(&s, "status=waiting", ACME_READ).await;
    assert_eq!(ids, vec![waiting.clone()], "status in any case");
    let (ids, _) = run_page(&s, "startedBy=runner", ACME_READ).await;
    assert_eq!(ids, [done2.clone(), waiting.clone()]);
    let (ids, _) = run_page(&s, "startedBy=runner&status=DONE&workflow=hello", ACME_READ).await;
    assert_eq!(ids, vec![done2.clone()]);
    let (ids, _) = run_page(&s, "startedBy=nobody", ACME_READ).await;
    assert!(ids.is_empty());

    // since <= start < until, as epoch ms or RFC 3339.
    let at = w["createdAt"].as_u64().unwrap();
    let (ids, _) = run_page(&s, &format!("since={at}"), ACME_READ).await;
    assert!(ids.contains(&waiting) && !ids.contains(&done1), "{ids:?}");
    let (ids, _) = run_page(&s, &format!("until={at}"), ACME_READ).await;
    assert!(!ids.contains(&waiting) && ids.contains(&done1), "{ids:?}");
    let rfc = jiff::Timestamp::from_millisecond(at as i64)
        .unwrap()
        .to_string();
    let (by_rfc, _) = run_page(
        &s,
        &format!("since={}", rfc.replace(':', "%3A").replace('+', "%2B")),
        ACME_READ,
    )
    .await;
    let (by_ms, _) = run_page(&s, &format!("since={at}"), ACME_READ).await;
    assert_eq!(by_rfc, by_ms, "{rfc}");
}

#[tokio::test]
async fn filtered_runs_page_with_a_cursor_and_bad_filters_are_400() {
    let s = Server::start().await;
    let mut done = Vec::new();
    for _ in 0..3 {
        let run = start_as(&s, "hello", ACME).await;
        s.wait_status("shop", &run, &["DONE"]).await;
        done.push(run);
        start_as(&s, "approve", ACME).await;
    }
    done.reverse();
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut q = "status=DONE&limit=1".to_string();
        if let Some(c) = &cursor {
            q.push_str(&format!("&cursor={c}"));
        }
        let r = s
            .get(
                &format!("/brain/acme/project/shop/workflows/runs?{q}"),
                Some(ACME),
            )
            .send()
            .await
            .unwrap();
        if r.headers().get("x-next-cursor").is_some() {
            let link = r.headers()["link"].to_str().unwrap().to_string();
            assert!(
                link.contains("status=DONE"),
                "the link keeps the filter: {link}"
            );
        }
        let (ids, next) = {
            let next = r
                .headers()
                .get("x-next-cursor")
                .map(|v| v.to_str().unwrap().to_string());
            let items: Vec<Value> = r.json().await.unwrap();
            assert!(items.iter().all(|i| i["status"] == "DONE"));
            let ids: Vec<String> = items
                .iter()
                .map(|i| i["workflowRunId"].as_str().unwrap().to_string())
                .collect();
            (ids, next)
        };
        seen.extend(ids);
        match next {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    assert_eq!(seen, done, "every DONE run once, newest first");

    for (query, want) in [
        ("status=SLEEPING", "MAG-HTTP-UI-INVALID-STATUS"),
        ("since=yesterday", "MAG-HTTP-UI-INVALID-TIME"),
        ("until=2026-13-01T00:00:00Z", "MAG-HTTP-UI-INVALID-TIME"),
    ] {
        let r = s
            .get(
                &format!("/brain/acme/project/shop/workflows/runs?{query}"),
                Some(ACME),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(code(r).await, (400, want.to_string()), "{query}");
    }
    // Another tenant's token is 404 before any filter is looked at.
    let r = s
        .get(
            "/brain/acme/project/shop/workflows/runs?status=DONE",
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await.0, 404);
}

/// Calls `hello` as a sub-run, then waits at a gate.
const PARENT: &str = "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: hello\n    on: { success: review }\n  review:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: \"Ok?\" }\n    on: { approved: done }\n    catch: { human_rejected: done }\n  done: { type: terminal }\n";

#[tokio::test]
async fn a_run_and_its_sub_runs_link_both_ways() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/shop/_vance/workflows/parent.yaml"),
        PARENT,
    );
    let parent = s.start_run("shop", "parent", serde_json::json!({})).await;
    let p = s.wait_status("shop", &parent, &["WAITING"]).await;
    assert_eq!(
        p["parentRunId"],
        Value::Null,
        "a top-level run has no parent"
    );
    assert_eq!(p["subRunCount"], 1);
    let subs = p["subRuns"].as_array().unwrap();
    assert_eq!(subs.len(), 1, "{p}");
    assert_eq!(subs[0]["workflow"], "hello");
    assert_eq!(
        subs[0]["state"], "call",
        "the parent's state that started it"
    );
    assert_eq!(subs[0]["status"], "DONE");
    let child = subs[0]["runId"].as_str().unwrap();
    let c = s.wait_status("shop", child, &["DONE"]).await;
    assert_eq!(c["parentRunId"], parent.as_str());
    assert_eq!(c["subRuns"], serde_json::json!([]));
    assert_eq!(c["subRunCount"], 0);
    // The child is a run of the same project: another tenant does not see it.
    let r = s
        .get(
            &format!("/brain/globex/project/shop/workflows/runs/{child}"),
            Some(GLOBEX),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await.0, 404);
}

#[tokio::test]
async fn run_filters_and_sub_runs_work_on_a_postgres_store() {
    let cluster = magrathea_postgres::testing::TestCluster::start();
    let url = cluster.create_database();
    let s = Server::start_with(|c| c.store(&url)).await;
    write(
        &s.root.join("acme/shop/_vance/workflows/parent.yaml"),
        PARENT,
    );
    let parent = start_as(&s, "parent", ACME_RUN).await;
    let p = s.wait_status("shop", &parent, &["WAITING"]).await;
    let child = p["subRuns"][0]["runId"].as_str().unwrap().to_string();
    let c = s.wait_status("shop", &child, &["DONE"]).await;
    assert_eq!(c["parentRunId"], parent.as_str());
    let hello = start_as(&s, "hello", ACME).await;
    s.wait_status("shop", &hello, &["DONE"]).await;

    let (ids, next) = run_page(&s, "status=done", ACME_READ).await;
    assert_eq!(ids, vec![hello.clone(), child.clone()]);
    assert_eq!(next, None);
    let (ids, next) = run_page(&s, "status=DONE&limit=1", ACME_READ).await;
    assert_eq!(ids, vec![hello.clone()]);
    let (ids, _) = run_page(
        &s,
        &format!("status=DONE&limit=1&cursor={}", next.unwrap()),
        ACME_READ,
    )
    .await;
    assert_eq!(ids, vec![child.clone()]);
    let (ids, _) = run_page(&s, "startedBy=runner&status=WAITING", ACME_READ).await;
    assert_eq!(ids, vec![parent.clone()]);
}
