//! The documents API stays inside the project (symbolic links that lead out are refused on
//! read, write and list; over-long names answer 400), and no error a client sees names a path
//! of the server's disk.

use crate::http_common;

use std::os::unix::fs::symlink;

use http_common::*;
use serde_json::{Value, json};

const DOCS: &str = "/brain/acme/project/shop/documents";

fn put(s: &Server, path: &str, text: &str) -> reqwest::RequestBuilder {
    auth(s.client.put(s.url(path)), Some(ACME)).body(text.to_owned())
}

#[tokio::test]
async fn a_document_linked_out_of_the_project_is_not_read() {
    let s = Server::start().await;
    let workflows = s.root.join("acme/shop/_vance/workflows");
    symlink("/etc/passwd", workflows.join("x.yaml")).unwrap();
    // A link to another tenant's document, and one to a file that does not exist outside.
    symlink(
        s.root.join("globex/shop/_vance/workflows/hello.yaml"),
        workflows.join("theirs.yaml"),
    )
    .unwrap();
    symlink(
        "/nonexistent/elsewhere.yaml",
        workflows.join("dangling.yaml"),
    )
    .unwrap();
    for name in ["x.yaml", "theirs.yaml", "dangling.yaml"] {
        let r = s
            .get(&format!("{DOCS}/workflows/{name}"), Some(ACME))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert_eq!(status, 403, "{name}: {body}");
        assert!(body.contains("MAG-HTTP-OUTSIDE-PROJECT"), "{body}");
        assert!(
            !body.contains("root:") && !body.contains("start:"),
            "{body}"
        );
        assert!(!body.contains(s.root.to_str().unwrap()), "{body}");
    }
    // A link that stays inside the project is read as its target.
    symlink("hello.yaml", workflows.join("alias.yaml")).unwrap();
    let r = s
        .get(&format!("{DOCS}/workflows/alias.yaml"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.text().await.unwrap(), HELLO);
    // A link to the project's settings holds their secrets: read as the settings are, only
    // with the scopes of writing them.
    write(
        &s.root.join("acme/shop/_vance/settings.yaml"),
        "events: { deploy: { token: secret-event-token } }\n",
    );
    symlink("../settings.yaml", workflows.join("settings-alias.yaml")).unwrap();
    let r = s
        .get(
            &format!("{DOCS}/workflows/settings-alias.yaml"),
            Some(ACME_WRITE),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(!r.text().await.unwrap().contains("secret-event-token"));
    let r = s
        .get(&format!("{DOCS}/workflows/settings-alias.yaml"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_directory_linked_to_another_tenant_is_neither_listed_nor_written() {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    std::fs::remove_dir_all(vance.join("workflows")).unwrap();
    symlink(
        "../../../globex/shop/_vance/workflows",
        vance.join("workflows"),
    )
    .unwrap();
    let theirs = s.root.join("globex/shop/_vance/workflows");

    let (status, code) = code(
        s.get(&format!("{DOCS}?dir=workflows"), Some(ACME))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "MAG-HTTP-OUTSIDE-PROJECT"));

    let r = put(&s, &format!("{DOCS}/workflows/planted.yaml"), APPROVE)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "{}", r.text().await.unwrap());
    assert!(!theirs.join("planted.yaml").exists(), "written outside");
    let r = put(&s, &format!("{DOCS}/workflows/hello.yaml"), APPROVE)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert_eq!(
        std::fs::read_to_string(theirs.join("hello.yaml")).unwrap(),
        HELLO,
        "another tenant's document was replaced"
    );
    // The listing of `_vance/` itself leaves the link out.
    let listed: Value = s.get_json(DOCS, Some(ACME)).await;
    assert_eq!(listed, json!({ "items": [] }), "{listed}");
}

#[tokio::test]
async fn a_listing_leaves_out_links_that_lead_out_of_the_project() {
    let s = Server::start().await;
    let workflows = s.root.join("acme/shop/_vance/workflows");
    symlink("/etc/passwd", workflows.join("leak.yaml")).unwrap();
    symlink("/etc", workflows.join("etc")).unwrap();
    symlink("hello.yaml", workflows.join("alias.yaml")).unwrap();
    let listed: Value = s
        .get_json(&format!("{DOCS}?dir=workflows"), Some(ACME))
        .await;
    assert_eq!(
        item_names(&listed),
        [
            "alias.yaml",
            "approve.yaml",
            "broken.yaml",
            "hello.yaml",
            "needs-param.yaml"
        ]
    );
}

/// A PUT of `path` is answered 400 with a message holding `says`.
async fn refused_400(s: &Server, path: &str, says: &str) {
    let r = put(s, path, APPROVE).send().await.unwrap();
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, 400, "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(says), "{body}");
}

#[tokio::test]
async fn over_long_names_and_paths_answer_400() {
    let s = Server::start().await;
    let long_name = format!("workflows/{}.yaml", "a".repeat(300));
    let long_path = vec!["abcdefghij"; 120].join("/");
    for path in [&long_name, &long_path] {
        let (status, code_) = code(
            s.get(&format!("{DOCS}/{path}"), Some(ACME))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!((status, code_.as_str()), (400, "MAG-HTTP-INVALID-PATH"));
        refused_400(&s, &format!("{DOCS}/{path}"), "at most").await;
        let (status, _) = code(
            s.get(&format!("{DOCS}?dir={path}"), Some(ACME))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, 400);
    }
    // The longest name there is may be written: its temporary file is named apart.
    for name in ["d".repeat(250), format!("{}.yaml", "w".repeat(245))] {
        let dir = if name.ends_with(".yaml") {
            "workflows"
        } else {
            "notes"
        };
        let r = put(&s, &format!("{DOCS}/{dir}/{name}"), APPROVE)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
        let r = s
            .get(&format!("{DOCS}/{dir}/{name}"), Some(ACME))
            .send()
            .await
            .unwrap();
        assert_eq!(r.text().await.unwrap(), APPROVE);
    }
    refused_400(
        &s,
        &format!("{DOCS}/notes/{}", "d".repeat(251)),
        "at most 250",
    )
    .await;
    // A workflow or project name too long for a file name is a bad request, not a failure
    // of the server (whose message would name the file system's refusal).
    let long = "a".repeat(256);
    for path in [
        format!("/brain/acme/project/shop/workflows/{long}/start"),
        format!("/brain/acme/project/{long}/workflows/hello/start"),
    ] {
        let r = s
            .post(&path, Some(ACME))
            .json(&json!({ "params": {} }))
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(matches!(status, 400 | 404), "{path}: {status} {body}");
        assert!(!body.contains("os error"), "{body}");
    }
    for path in [
        format!("/brain/acme/project/shop/workflows/{long}/graph"),
        format!("/brain/acme/project/{long}/documents"),
    ] {
        let status = s.get(&path, Some(ACME)).send().await.unwrap().status();
        assert!(matches!(status.as_u16(), 400 | 404), "{path}: {status}");
    }
}

#[tokio::test]
async fn no_error_body_names_the_servers_root() {
    let s = Server::start().await;
    let root = s.root.to_str().unwrap().to_owned();
    let vance = s.root.join("acme/shop/_vance");
    // A directory where a workflow document should be, and a broken event document.
    std::fs::create_dir_all(vance.join("workflows/dir.yaml")).unwrap();
    write(&vance.join("events/bad.yaml"), "auth: [unclosed\n  : :\n");
    let start = |name: &str| {
        s.post(
            &format!("/brain/acme/project/shop/workflows/{name}/start"),
            Some(ACME),
        )
        .json(&json!({ "params": {} }))
    };
    let mut bodies = Vec::new();
    for request in [
        put(&s, &format!("{DOCS}/workflows/new.yaml"), BROKEN),
        put(&s, &format!("{DOCS}/workflows/new.yaml"), "states: [\n"),
        start("broken"),
        start("dir"),
        start("missing"),
        s.get(&format!("{DOCS}/workflows/dir.yaml"), Some(ACME)),
        s.post("/brain/acme/event/shop/bad", None).json(&json!({})),
        s.get(
            "/brain/acme/project/shop/workflows/runs/0123456789abcdef0123456789abcdef",
            Some(ACME),
        ),
    ] {
        let r = request.send().await.unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(status >= 400, "{status}: {body}");
        bodies.push(body);
    }
    for body in &bodies {
        assert!(
            !body.contains(&root),
            "the root path reached a client: {body}"
        );
        assert!(
            !body.contains("/tmp"),
            "a server path reached a client: {body}"
        );
    }
    // The documents are still named, relative to the root.
    assert!(
        bodies[0].contains("acme/shop/_vance/workflows/new.yaml"),
        "{}",
        bodies[0]
    );
    assert!(
        bodies[3].contains("acme/shop/_vance/workflows/dir.yaml"),
        "{}",
        bodies[3]
    );
}

/// A write to a directory, or through a document as if it were one, has no document to write:
/// 409, and nothing is left behind.
#[tokio::test]
async fn a_write_to_a_directory_or_through_a_document_answers_409() {
    let s = Server::start().await;
    for path in ["scheduler", "workflows", "workflows/hello.yaml/x.yaml"] {
        write(&s.root.join("acme/shop/_vance/scheduler/keep.txt"), "x");
        let r = put(&s, &format!("{DOCS}/{path}"), "a: 1\n")
            .send()
            .await
            .unwrap();
        let (status, body) = code(r).await;
        assert_eq!(
            (status, body.as_str()),
            (409, "MAG-HTTP-NOT-A-DOCUMENT"),
            "{path}"
        );
    }
    let vance = s.root.join("acme/shop/_vance");
    let left: Vec<String> = std::fs::read_dir(&vance)
        .unwrap()
        .chain(std::fs::read_dir(vance.join("workflows")).unwrap())
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    assert!(vance.join("workflows/hello.yaml").is_file());
}

/// What a task's failure says is journaled and shown with its run: a denied tool, a missing
/// script and an unknown sub-workflow name their documents from the root, never by a path of
/// the server's disk.
#[tokio::test]
async fn no_run_or_journal_names_the_servers_root() {
    let s = Server::start().await;
    let root = s.root.to_str().unwrap().to_owned();
    write(
        &s.root.join("acme/_tenant/_vance/settings.yaml"),
        "execution:\n  shellTask: true\n  scriptTask: true\n",
    );
    let vance = s.root.join("acme/shop/_vance");
    write(
        &vance.join("settings.yaml"),
        "tools:\n  denied: [doc_read]\n",
    );
    write(
        &vance.join("workflows/leaky.yaml"),
        "start: tool\nstates:\n  tool:\n    type: tool_task\n    tool: doc_read\n    params: { path: x.yaml }\n    storeAs: tool\n    on: { success: script }\n    catch: { permission_error: script }\n  script:\n    type: script_task\n    path: _vance/scripts/missing.js\n    storeAs: script\n    on: { success: child }\n    catch: { technical_error: child }\n  child:\n    type: workflow_task\n    workflow: missing\n    storeAs: child\n    on: { success: done, failure: done }\n  done: { type: terminal }\n",
    );
    let run = s.start_run("shop", "leaky", json!({})).await;
    let view = s.wait_status("shop", &run, &["DONE", "FAILED"]).await;
    let journal: Value = s
        .get_json(
            &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
            Some(ACME),
        )
        .await;
    for (what, text) in [("run", view.to_string()), ("journal", journal.to_string())] {
        assert!(
            !text.contains(&root),
            "the root path is in the {what}: {text}"
        );
    }
    let vars = view["vars"].to_string();
    assert!(
        vars.contains("acme/shop/_vance/settings.yaml"),
        "the denial names the settings from the root: {vars}"
    );
    assert!(
        vars.contains("acme/shop/_vance/scripts/missing.js"),
        "{vars}"
    );
}

/// The files under `dir` and their bytes.
fn usage(dir: &std::path::Path) -> (usize, u64) {
    let mut used = (0, 0);
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            let (n, b) = usage(&entry.path());
            used = (used.0 + n, used.1 + b);
        } else if kind.is_file() {
            used = (used.0 + 1, used.1 + entry.metadata().unwrap().len());
        }
    }
    used
}

/// The message of a 507 `MAG-HTTP-QUOTA` refusal; panics on any other answer.
async fn quota_refusal(r: reqwest::Response) -> String {
    let status = r.status().as_u16();
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (507, Some("MAG-HTTP-QUOTA")),
        "{body}"
    );
    body["error"]["message"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_project_holds_a_bounded_number_and_size_of_documents() {
    use magrathea_server::http::doc_quota::DocumentQuota;
    let probe = Server::start().await;
    let (documents, bytes) = usage(&probe.root.join("acme/shop/_vance"));
    drop(probe);
    let s = Server::start_with(move |c| {
        c.document_quota(DocumentQuota {
            max_documents: documents + 2,
            max_bytes: bytes + 1_000,
            ..DocumentQuota::default()
        })
    })
    .await;
    let text = |n: usize| format!("# {}\n", "x".repeat(n - 3));
    let r = put(&s, &format!("{DOCS}/notes/a.md"), &text(600))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    // Past the bytes: refused, and nothing is written.
    let r = put(&s, &format!("{DOCS}/notes/b.md"), &text(600))
        .send()
        .await
        .unwrap();
    let message = quota_refusal(r).await;
    assert!(message.contains("acme/shop"), "{message}");
    assert!(!s.root.join("acme/shop/_vance/notes/b.md").exists());

    // Replacing a document counts its new size, not both.
    let r = put(&s, &format!("{DOCS}/notes/a.md"), &text(100))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = put(&s, &format!("{DOCS}/notes/b.md"), &text(600))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    // Past the number of documents, however small.
    let r = put(&s, &format!("{DOCS}/notes/c.md"), "# c\n")
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (507, "MAG-HTTP-QUOTA".into()));
    // An editor layout is a file under `_vance/` too: past the number, it is refused alike.
    let graph = "/brain/acme/project/shop/workflows/approve/graph?format=reactflow";
    let exported: Value = s.get_json(graph, Some(ACME)).await;
    let r = s
        .client
        .put(s.url(graph))
        .bearer_auth(ACME)
        .json(&exported)
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (507, "MAG-HTTP-QUOTA".into()));
    assert!(
        !s.root
            .join("acme/shop/_vance/workflows/approve.layout.json")
            .exists()
    );
    // Another project has its own quota.
    let r = put(&s, "/brain/acme/project/lab/documents/notes/c.md", "# c\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
}

#[tokio::test]
async fn concurrent_writes_cannot_pass_the_number_of_documents_together() {
    use magrathea_server::http::doc_quota::DocumentQuota;
    let probe = Server::start().await;
    let (documents, _) = usage(&probe.root.join("acme/shop/_vance"));
    drop(probe);
    let s = Server::start_with(move |c| {
        c.document_quota(DocumentQuota {
            max_documents: documents + 3,
            ..DocumentQuota::default()
        })
    })
    .await;
    let writes = (0..30).map(|i| put(&s, &format!("{DOCS}/notes/n{i}.md"), "# n\n").send());
    let answers = futures::future::join_all(writes).await;
    let created = answers
        .iter()
        .filter(|r| r.as_ref().unwrap().status() == 201)
        .count();
    assert_eq!(created, 3, "three documents fit");
    let (now, _) = usage(&s.root.join("acme/shop/_vance"));
    assert_eq!(now, documents + 3, "the bound holds");
}

#[tokio::test]
async fn a_tenant_holds_a_bounded_number_of_projects() {
    use magrathea_server::http::doc_quota::DocumentQuota;
    let probe = Server::start().await;
    let projects = std::fs::read_dir(probe.root.join("acme"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir() && e.file_name() != "_tenant")
        .count();
    drop(probe);
    let s = Server::start_with(move |c| {
        c.document_quota(DocumentQuota {
            max_projects: projects + 1,
            ..DocumentQuota::default()
        })
    })
    .await;
    // One more project may be created by writing into it.
    let r = put(&s, "/brain/acme/project/new1/documents/notes/a.md", "# a\n")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);

    // The next new one is refused and nothing is created; existing projects still take writes.
    let r = put(&s, "/brain/acme/project/new2/documents/notes/a.md", "# a\n")
        .send()
        .await
        .unwrap();
    let message = quota_refusal(r).await;
    assert!(message.contains("tenant `acme`"), "{message}");
    assert!(!s.root.join("acme/new2").exists());
    for path in [
        "/brain/acme/project/new1/documents/notes/b.md",
        &format!("{DOCS}/notes/b.md"),
    ] {
        let r = put(&s, path, "# b\n").send().await.unwrap();
        assert_eq!(r.status(), 201, "{path}");
    }

    // A tenant's workflow seen from a project without a directory: storing its editor layout
    // would create the project, and is refused too.
    write(
        &s.root.join("acme/_tenant/_vance/workflows/shared.yaml"),
        "start: done\nstates:\n  done: { type: terminal, result: ok }\n",
    );
    let graph_path = "/brain/acme/project/new3/workflows/shared/graph";
    let graph: Value = s.get_json(graph_path, Some(ACME)).await;
    assert!(graph["nodes"].is_array(), "{graph}");
    let r = auth(s.client.put(s.url(graph_path)), Some(ACME))
        .json(&graph)
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (507, "MAG-HTTP-QUOTA".into()));
    assert!(!s.root.join("acme/new3").exists());
}

/// YAML nested hundreds of thousands of `[` deep costs its parser the square of that: a
/// settings file or an event document that deep is refused before it is parsed, and a
/// settings file already on disk makes no start of any tenant wait on it.
#[tokio::test]
async fn yaml_nested_too_deep_is_refused_before_it_is_parsed() {
    let s = Server::start().await;
    let deep = format!(
        "webhooks:\n  x: {}{}\n",
        "[".repeat(300_000),
        "]".repeat(300_000)
    );
    for path in ["settings.yaml", "events/deep.yaml"] {
        let r = put(&s, &format!("{DOCS}/{path}"), &deep)
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert_eq!(status, 422, "{path}: {body}");
        assert!(
            body.contains("[MAG-Y003]") && body.contains("line 2"),
            "{path}: {body}"
        );
    }
    // Written on disk behind the API's back: the project's runs read their settings as usual
    // (the deep file is ignored, as an invalid one is), and so does another tenant.
    write(&s.root.join("acme/shop/_vance/settings.yaml"), &deep);
    for (tenant, token) in [("acme", ACME), ("globex", GLOBEX)] {
        let r: Value = s
            .post_json(
                &format!("/brain/{tenant}/project/shop/workflows/hello/start"),
                Some(token),
                &json!({}),
            )
            .await;
        let run = r["workflowRunId"].as_str().unwrap_or_else(|| panic!("{r}"));
        let view: Value = s
            .get_json(
                &format!("/brain/{tenant}/project/shop/workflows/runs/{run}"),
                Some(token),
            )
            .await;
        assert!(view["status"].is_string(), "{view}");
    }
}

/// A shell step can make links in its project to paths of another tenant. Whatever route
/// follows such a link (a workflow's graph, its versions, a publish, a start, a script's
/// path), it answers the same whether the path exists in the other tenant or not: the answer
/// tells nothing of another tenant's files.
#[tokio::test]
async fn a_link_out_answers_alike_whether_its_target_exists_or_not() {
    let s = Server::start().await;
    let project = s.root.join("acme/shop/_vance");
    let theirs = s.root.join("globex/shop/_vance/workflows");
    for (name, target) in [("there", "hello.yaml"), ("nowhere", "nothing.yaml")] {
        symlink(
            theirs.join(target),
            project.join(format!("workflows/{name}.yaml")),
        )
        .unwrap();
        std::fs::create_dir_all(project.join("workflow-drafts")).unwrap();
        symlink(
            theirs.join(target),
            project.join(format!("workflow-drafts/d-{name}.yaml")),
        )
        .unwrap();
    }
    let answer = |method: &'static str, path: String| {
        let req = match method {
            "GET" => s.get(&path, Some(ACME)),
            _ => auth(s.client.post(s.url(&path)), Some(ACME)).json(&json!({})),
        };
        async move {
            let (status, code) = http_common::code(req.send().await.unwrap()).await;
            (status, code)
        }
    };
    // A directory link out, a project that is a link to another tenant's, each to something
    // and to nothing.
    symlink(theirs.clone(), project.join("exdir")).unwrap();
    symlink(theirs.join("nodir"), project.join("midir")).unwrap();
    for (name, target) in [("p-there", "globex/shop"), ("p-nowhere", "globex/none")] {
        symlink(s.root.join(target), s.root.join("acme").join(name)).unwrap();
    }
    for (a, b) in [
        (
            format!("{DOCS}/exdir/hello.yaml"),
            format!("{DOCS}/exdir/nothing.yaml"),
        ),
        (
            format!("{DOCS}/exdir/hello.yaml"),
            format!("{DOCS}/midir/hello.yaml"),
        ),
        (format!("{DOCS}?dir=exdir"), format!("{DOCS}?dir=midir")),
        (
            "/brain/acme/project/p-there/documents/workflows/hello.yaml".to_owned(),
            "/brain/acme/project/p-nowhere/documents/workflows/hello.yaml".to_owned(),
        ),
        (
            "/brain/acme/project/p-there/workflows/hello/graph".to_owned(),
            "/brain/acme/project/p-nowhere/workflows/hello/graph".to_owned(),
        ),
    ] {
        let (there, nowhere) = (answer("GET", a.clone()).await, answer("GET", b).await);
        assert_eq!(there, nowhere, "{a}");
        assert_eq!(there.0, 403, "{a}: {there:?}");
    }
    // An event document linked out is no event of this project: the route answers as for a
    // missing one (401, before any credentials), to anyone, whatever is at the link's end.
    std::fs::create_dir_all(project.join("events")).unwrap();
    let globex_events = s.root.join("globex/shop/_vance/events");
    std::fs::create_dir_all(&globex_events).unwrap();
    std::fs::write(globex_events.join("gev.yaml"), "workflow: hello\n").unwrap();
    symlink(
        globex_events.join("gev.yaml"),
        project.join("events/exev.yaml"),
    )
    .unwrap();
    symlink(
        globex_events.join("none.yaml"),
        project.join("events/miev.yaml"),
    )
    .unwrap();
    for token in [None, Some(ACME)] {
        for event in ["exev", "miev", "no-such-event"] {
            let r = s
                .post(&format!("/brain/acme/event/shop/{event}"), token)
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            let expected = if token.is_none() { 401 } else { 404 };
            assert_eq!(r.status().as_u16(), expected, "{event} with {token:?}");
        }
    }
    // A loop of links and a link to nothing inside the project are no documents: 404.
    symlink("loop.yaml", project.join("workflows/loop.yaml")).unwrap();
    symlink("nothing.yaml", project.join("workflows/inmiss.yaml")).unwrap();
    for path in [
        format!("{DOCS}/workflows/loop.yaml"),
        format!("{DOCS}/workflows/inmiss.yaml"),
        "/brain/acme/project/shop/workflows/loop/graph".to_owned(),
        "/brain/acme/project/shop/workflows/inmiss/graph".to_owned(),
    ] {
        assert_eq!(answer("GET", path.clone()).await.0, 404, "{path}");
    }
    // A link up out of the project and back into it by its own name stays inside.
    symlink(
        "../../../shop/_vance/workflows/hello.yaml",
        project.join("workflows/reenter.yaml"),
    )
    .unwrap();
    let graph = s
        .get(
            "/brain/acme/project/shop/workflows/reenter/graph",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(graph.status(), 200);

    let base = "/brain/acme/project/shop/workflows";
    for (method, route) in [
        ("GET", "{}/graph"),
        ("GET", "{}/graph?format=mermaid"),
        ("GET", "{}/versions"),
        ("POST", "{}/start"),
        ("POST", "d-{}/publish"),
    ] {
        let there = answer(method, format!("{base}/{}", route.replace("{}", "there"))).await;
        let nowhere = answer(method, format!("{base}/{}", route.replace("{}", "nowhere"))).await;
        assert_eq!(there, nowhere, "{method} {route}");
        assert_eq!(
            there,
            (403, "MAG-HTTP-OUTSIDE-PROJECT".to_owned()),
            "{method} {route}"
        );
    }
}

/// A step may make a named pipe in its project (`mkfifo _vance/workflows/fifo.yaml`). Opening
/// one for reading waits for a writer that never comes: every route that reads the project's
/// files refuses it as no document instead, at once, and the server goes on answering. The
/// requests are sent from a thread of their own, so a server whose threads the pipe holds
/// fails the test instead of holding it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_pipe_in_a_project_is_no_document_and_holds_no_thread() {
    let s = Server::start().await;
    let vance = s.root.join("acme/shop/_vance");
    for fifo in [
        "workflows/fifo.yaml",
        "workflows/fifo.layout.json",
        "settings.yaml",
    ] {
        let made = std::process::Command::new("mkfifo")
            .arg(vance.join(fifo))
            .status()
            .unwrap();
        assert!(made.success(), "{fifo}");
    }
    let w = s.url("/brain/acme/project/shop/workflows");
    let (doc, health) = (
        s.url("/brain/acme/project/shop/documents/workflows/fifo.yaml"),
        s.url("/healthz"),
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let answers = rt.block_on(async {
            let client = reqwest::Client::new();
            let requests = [
                client.get(format!("{w}/fifo/graph")),
                client.get(format!("{w}/fifo/graph?format=reactflow")),
                client.post(format!("{w}/fifo/start")).json(&json!({})),
                client.get(doc),
                // The project's settings (a pipe here too) are read to start any workflow.
                client.post(format!("{w}/approve/start")).json(&json!({})),
                client.get(health),
            ];
            let mut answers = Vec::new();
            for request in requests {
                let r = request.bearer_auth(ACME).send().await.unwrap();
                let (status, url) = (r.status().as_u16(), r.url().path().to_owned());
                answers.push((url, status, r.text().await.unwrap()));
            }
            answers
        });
        let _ = tx.send(answers);
    });
    let Ok(answers) = rx.recv_timeout(std::time::Duration::from_secs(60)) else {
        // Let go of the server's threads (a writer opening each pipe ends the reads on it)
        // until the requests are through, so that the test fails instead of hanging on the
        // runtime's end.
        for _ in 0..60 {
            for fifo in [
                "workflows/fifo.yaml",
                "workflows/fifo.layout.json",
                "settings.yaml",
            ] {
                let _ = std::process::Command::new("timeout")
                    .args(["1", "sh", "-c", ": > \"$0\""])
                    .arg(vance.join(fifo))
                    .status();
            }
            if !matches!(rx.try_recv(), Err(std::sync::mpsc::TryRecvError::Empty)) {
                break;
            }
        }
        for fifo in [
            "workflows/fifo.yaml",
            "workflows/fifo.layout.json",
            "settings.yaml",
        ] {
            let _ = std::fs::remove_file(vance.join(fifo));
        }
        panic!("a request is held on a named pipe: the server stopped answering");
    };
    for (url, status, body) in &answers {
        assert!(*status < 500, "{url}: {status} {body}");
    }
    assert_eq!(answers.last().unwrap().1, 200, "healthz");
}

/// A step may make a sparse file of any length in no time (`truncate -s 100G`): the server
/// looks at a project file's length before it reads it, and reads none longer than 16 MiB, so
/// one request cannot fill its memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_sparse_file_in_a_project_is_not_read() {
    let s = Server::start().await;
    let big = s.root.join("acme/shop/_vance/workflows/big.yaml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let r = s
        .get(
            "/brain/acme/project/shop/documents/workflows/big.yaml",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the most the server reads"),
        "{body}"
    );
    // The workflow listing reports it as a document over its limit.
    let listed: Value = s
        .get_json("/brain/acme/project/shop/workflows", Some(ACME))
        .await;
    assert!(listed.to_string().contains("MAG-Y002"), "{listed}");
    let r = s
        .post("/brain/acme/project/shop/workflows/big/start", Some(ACME))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422, "an invalid document, not a server error");
    let body = r.text().await.unwrap();
    assert!(body.contains("the most the server reads"), "{body}");
    assert!(body.contains("[MAG-Y002]"), "{body}");
    let r = s
        .get("/brain/acme/project/shop/workflows/big/graph", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body = r.text().await.unwrap();
    assert!(
        body.contains("acme/shop/_vance/workflows/big.yaml:1:1: [MAG-Y002]"),
        "{body}"
    );
}
