//! `tool_task` (reference §3.3) and the built-in tools, each against real endpoints: an HTTP
//! server on 127.0.0.1 started by the test, a project directory, the engine's inbox and
//! runs (§8.1 `workflow_start`), plus `#[task]`s and host tools called as tools.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::BoxFuture;
use magrathea_core::{
    Engine, Record, RunId, RunStatus, RunView, TaskError, TaskOptions, TaskRegistration,
};
use magrathea_yaml::runtime::{Tool, ToolContext, ToolError};
use magrathea_yaml::{DocumentSource, Scope, YamlRuntime};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

// ---------------------------------------------------------------------------------------
// A tiny HTTP/1.1 server on 127.0.0.1.

async fn http_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((sock, _)) = listener.accept().await {
            tokio::spawn(serve(sock));
        }
    });
    format!("http://{addr}")
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn serve(mut sock: TcpStream) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or_default().split(' ');
    let method = request.next().unwrap_or_default().to_string();
    let path = request.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let len: usize = header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = sock.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..]).into_owned();
    let (code, ctype, payload) = match path.as_str() {
        "/echo" => (
            "200 OK",
            "application/json",
            json!({
                "method": method,
                "token": header("x-token"),
                "contentType": header("content-type"),
                "body": body,
            })
            .to_string(),
        ),
        "/missing" => ("404 Not Found", "text/plain", "no such thing".to_string()),
        "/big" => ("200 OK", "text/plain", "a".repeat(5000)),
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(10)).await;
            ("200 OK", "text/plain", "late".to_string())
        }
        _ => (
            "500 Internal Server Error",
            "text/plain",
            "boom".to_string(),
        ),
    };
    let response = format!(
        "HTTP/1.1 {code}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nX-Served-By: \
         test\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    let _ = sock.write_all(response.as_bytes()).await;
    let _ = sock.shutdown().await;
}

// ---------------------------------------------------------------------------------------
// A tenant with two projects, a runtime and an engine.

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    runtime: YamlRuntime,
    engine: Engine,
    scope: Scope,
}

/// `greet`: a raw task registration expecting `{name: string}`.
fn greet() -> TaskRegistration {
    TaskRegistration::new("greet", TaskOptions::default(), |v, _| async move {
        #[derive(serde::Deserialize)]
        struct Input {
            name: String,
        }
        let input: Input = serde_json::from_value(v).map_err(|e| {
            TaskError::terminal(format!("invalid input for task `greet`: {e}"))
                .with_kind("technical_error")
        })?;
        Ok(json!({ "greeting": format!("hello {}", input.name) }))
    })
}

async fn env_with(runtime: impl FnOnce(YamlRuntime) -> YamlRuntime, attach: bool) -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    for p in ["acme/shop/_vance/workflows", "acme/other/_vance/workflows"] {
        std::fs::create_dir_all(root.join(p)).unwrap();
    }
    // The tests' HTTP server is on loopback, which the egress policy refuses unless allowed.
    std::fs::create_dir_all(root.join("acme/_tenant/_vance")).unwrap();
    std::fs::write(
        root.join("acme/_tenant/_vance/settings.yaml"),
        "egress:\n  allowHosts: [\"127.0.0.1\"]\n",
    )
    .unwrap();
    let rt = runtime(YamlRuntime::new(DocumentSource::new(&root)));
    let engine = rt
        .install(Engine::builder().in_memory().task(greet()))
        .build()
        .await
        .unwrap();
    if attach {
        rt.attach(&engine);
    }
    Env {
        _dir: dir,
        root,
        runtime: rt,
        engine,
        scope: Scope::new("acme", "shop"),
    }
}

async fn env() -> Env {
    env_with(|rt| rt, true).await
}

impl Env {
    fn project(&self) -> PathBuf {
        self.root.join("acme/shop")
    }

    fn write(&self, rel: &str, body: &str) {
        let path = self.project().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    }

    fn workflow(&self, name: &str, body: &str) {
        self.write(&format!("_vance/workflows/{name}.yaml"), body);
    }

    async fn run_in(&self, scope: &Scope, name: &str, params: Value) -> RunView {
        let run = self
            .runtime
            .start(&self.engine, scope, name, params, "tester")
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.engine.wait_settled(run))
            .await
            .expect("the run settles")
            .unwrap()
    }

    async fn run(&self, name: &str, params: Value) -> RunView {
        self.run_in(&self.scope, name, params).await
    }

    fn outcomes(&self, view: &RunView) -> Vec<String> {
        self.engine
            .journal(view.workflow_run_id)
            .unwrap()
            .into_iter()
            .filter_map(|e| match e.record {
                Record::TaskResult { outcome, .. } => Some(outcome.into_string()),
                _ => None,
            })
            .collect()
    }

    fn ctx(&self) -> ToolContext {
        self.runtime.tool_context(&self.scope, "tester")
    }
}

/// A one-state workflow calling `tool` with `params` (YAML flow text), storing the output
/// as `out` and ending in `ok` / `denied` / `broken` by outcome.
fn one_tool(allowed: &str, tool: &str, params: &str) -> String {
    format!(
        r#"
parameters:
  base: {{ type: string }}
allowedTools: {allowed}
start: call
states:
  call:
    type: tool_task
    tool: {tool}
    params: {params}
    storeAs: out
    on:
      success: ok
    catch:
      permission_error: denied
      technical_error: broken
  ok: {{ type: terminal, result: ok }}
  denied: {{ type: terminal, outcome: failure, result: denied }}
  broken: {{ type: terminal, outcome: failure, result: broken }}
"#
    )
}

fn error_of(view: &RunView) -> String {
    view.vars["out"]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

// ---------------------------------------------------------------------------------------
// http_request

#[tokio::test]
async fn http_request_from_yaml_routes_on_the_status_and_a_5xx_or_a_timeout_as_a_technical_error() {
    let base = http_server().await;
    let e = env().await;
    e.workflow(
        "call",
        r##"
parameters:
  base: { type: string, required: true }
  path: { type: string, required: true }
  timeout: { type: number, required: true }
allowedTools: [http_request]
start: call
states:
  call:
    type: tool_task
    tool: http_request
    params:
      method: post
      url: "${params.base}${params.path}"
      headers: { X-Token: secret }
      body: { hello: world }
      timeoutSeconds: "${params.timeout}"
    storeAs: resp
    on:
      success: route
    catch:
      technical_error: broken
  route:
    type: condition_task
    transitions:
      - if: "#state['resp']['status'] == 200"
        to: ok
      - else: not_ok
  ok: { type: terminal, result: "${state.resp.body.token}" }
  not_ok: { type: terminal, result: "status ${state.resp.status}" }
  broken: { type: terminal, outcome: failure, result: "${state.resp.error}" }
"##,
    );

    let ok = e
        .run(
            "call",
            json!({"base": base, "path": "/echo", "timeout": 0.5}),
        )
        .await;
    assert_eq!(ok.status, RunStatus::Done, "{ok:?}");
    assert_eq!(ok.result, Some(json!("secret")));
    let resp = &ok.vars["resp"];
    assert_eq!(resp["status"], 200);
    assert_eq!(resp["headers"]["x-served-by"], "test");
    assert_eq!(resp["body"]["method"], "POST");
    assert_eq!(resp["body"]["contentType"], "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(resp["body"]["body"].as_str().unwrap()).unwrap(),
        json!({"hello": "world"})
    );

    let missing = e
        .run(
            "call",
            json!({"base": base, "path": "/missing", "timeout": 0.5}),
        )
        .await;
    assert_eq!(missing.status, RunStatus::Done, "{missing:?}");
    assert_eq!(missing.result, Some(json!("status 404")));
    assert_eq!(missing.vars["resp"]["body"], "no such thing");

    // A server error routes as technical_error, its answer beside the error.
    let failing = e
        .run(
            "call",
            json!({"base": base, "path": "/other", "timeout": 0.5}),
        )
        .await;
    assert_eq!(failing.status, RunStatus::Failed, "{failing:?}");
    assert_eq!(e.outcomes(&failing), vec!["technical_error"]);
    assert_eq!(failing.vars["resp"]["status"], 500, "{failing:?}");
    assert_eq!(failing.vars["resp"]["body"], "boom");
    let msg = failing.result.unwrap().as_str().unwrap().to_string();
    assert!(msg.contains("answered 500"), "{msg}");

    let slow = e
        .run(
            "call",
            json!({"base": base, "path": "/slow", "timeout": 0.5}),
        )
        .await;
    assert_eq!(slow.status, RunStatus::Failed, "{slow:?}");
    assert_eq!(e.outcomes(&slow), vec!["technical_error"]);
    let msg = slow.result.unwrap().as_str().unwrap().to_string();
    assert!(
        msg.contains("[MAG-TL004]") && msg.contains("timed out"),
        "{msg}"
    );
}

#[tokio::test]
async fn http_request_directly_text_bodies_limits_and_transport_errors() {
    let base = http_server().await;
    let e = env().await;
    let ctx = e.ctx();
    let http = |params: Value| {
        let rt = e.runtime.clone();
        let ctx = ctx.clone();
        async move { rt.invoke_tool("http_request", params, &ctx).await }
    };

    let r = http(json!({"url": format!("{base}/echo"), "body": "raw text"}))
        .await
        .unwrap();
    assert_eq!(r["status"], 200);
    assert_eq!(r["body"]["method"], "GET");
    assert_eq!(r["body"]["body"], "raw text");
    assert_eq!(r["body"]["contentType"], Value::Null);

    // A 5xx is the service failing (reference §4.2: technical_error), its answer kept.
    let e500 = http(json!({"url": format!("{base}/other"), "method": "DELETE"}))
        .await
        .unwrap_err();
    assert_eq!(e500.outcome(), "technical_error");
    assert!(e500.to_string().contains("answered 500"), "{e500}");
    let magrathea_exec::ToolError::ServiceFailed { response, .. } = &e500 else {
        panic!("{e500:?}");
    };
    assert_eq!(response["status"], 500);
    assert_eq!(response["body"], "boom");

    let r = http(json!({"url": format!("{base}/big"), "maxResponseBytes": 5000}))
        .await
        .unwrap();
    assert_eq!(r["body"].as_str().unwrap().len(), 5000);
    let err = http(json!({"url": format!("{base}/big"), "maxResponseBytes": 4999}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("maxResponseBytes")),
        "{err}"
    );

    let err = http(json!({"url": format!("{base}/slow"), "timeoutSeconds": 0.2}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("timed out")),
        "{err}"
    );

    // A port nobody listens on: connection refused.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let err = http(json!({"url": format!("http://127.0.0.1:{port}/")}))
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::Failed(_)), "{err}");
    assert_eq!(err.outcome(), "technical_error");

    for (params, needle) in [
        (json!({}), "`params.url` is required"),
        (json!({"url": "ftp://x/"}), "http or https"),
        (json!({"url": "not a url"}), "invalid url"),
        (json!({"url": base.clone(), "method": "NO PE"}), "method"),
        (json!({"url": base.clone(), "timeout": 3}), "timeoutSeconds"),
        (
            json!({"url": base.clone(), "headers": {"bad header": "x"}}),
            "header",
        ),
    ] {
        let err = http(params.clone()).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::InvalidParams(m) if m.contains(needle)),
            "{params}: {err}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// doc_read / doc_list

#[tokio::test]
async fn doc_read_never_reads_the_projects_settings() {
    let e = env().await;
    e.write("_vance/notes/today.md", "# Today\n");
    // The project's settings hold its secrets: no tool reads them, by name or by a link.
    e.write(
        "_vance/settings.yaml",
        "events: { deploy: { token: secret-event-token } }\n",
    );
    std::os::unix::fs::symlink(
        e.project().join("_vance/settings.yaml"),
        e.project().join("_vance/notes/settings-link.yaml"),
    )
    .unwrap();
    for path in ["_vance/settings.yaml", "_vance/notes/settings-link.yaml"] {
        e.workflow(
            "secrets",
            &one_tool("[doc_read]", "doc_read", &format!("{{ path: {path} }}")),
        );
        let v = e.run("secrets", json!({})).await;
        assert_eq!(v.result, Some(json!("denied")), "{path}: {v:?}");
        assert!(error_of(&v).contains("hold its secrets"), "{v:?}");
        assert!(!format!("{v:?}").contains("secret-event-token"), "{v:?}");
    }
}

#[tokio::test]
async fn doc_read_and_doc_list_read_the_project_and_refuse_every_escape() {
    let e = env().await;
    e.write("_vance/notes/today.md", "# Today\nship it\n");
    e.write("_vance/notes/deep/x.txt", "x");
    e.write("README.md", "readme");
    // Outside the project: the tenant's other project, and a file outside the root.
    std::fs::write(e.root.join("acme/other/secret.txt"), "secret").unwrap();
    std::os::unix::fs::symlink(
        e.root.join("acme/other/secret.txt"),
        e.project().join("_vance/notes/leak.txt"),
    )
    .unwrap();
    std::os::unix::fs::symlink(e.root.join("acme/other"), e.project().join("_vance/escape"))
        .unwrap();
    std::os::unix::fs::symlink(
        e.project().join("README.md"),
        e.project().join("_vance/readme-link"),
    )
    .unwrap();

    // Through YAML.
    e.workflow(
        "read",
        &one_tool("[doc_read]", "doc_read", "{ path: _vance/notes/today.md }"),
    );
    let v = e.run("read", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(
        v.vars["out"],
        json!({"path": "_vance/notes/today.md", "content": "# Today\nship it\n", "size": 16})
    );
    e.workflow(
        "list",
        &one_tool("[doc_list]", "doc_list", "{ path: _vance/notes }"),
    );
    let v = e.run("list", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(
        v.vars["out"]["entries"],
        json!([
            {"path": "_vance/notes/deep", "kind": "dir", "size": 0},
            {"path": "_vance/notes/today.md", "kind": "file", "size": 16},
        ]),
        "the link out of the project is not listed"
    );
    // doc_read and doc_list are in the default pool: no allowedTools needed.
    e.workflow(
        "default_pool",
        "start: l\nstates:\n  l:\n    type: tool_task\n    tool: doc_list\n    storeAs: out\n    \
         on: { success: d }\n  d: { type: terminal }\n",
    );
    let v = e.run("default_pool", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let paths: Vec<&str> = v.vars["out"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        vec!["_vance/notes", "_vance/readme-link", "_vance/workflows"]
    );

    // An escape through YAML is a permission_error.
    e.workflow(
        "escape",
        &one_tool("[doc_read]", "doc_read", "{ path: ../other/secret.txt }"),
    );
    let v = e.run("escape", json!({})).await;
    assert_eq!(v.result, Some(json!("denied")), "{v:?}");
    assert!(error_of(&v).contains("outside the project"), "{v:?}");

    // Directly.
    let ctx = e.ctx();
    let read = |path: &str| {
        let rt = e.runtime.clone();
        let ctx = ctx.clone();
        let params = json!({ "path": path });
        async move { rt.invoke_tool("doc_read", params, &ctx).await }
    };
    assert_eq!(
        read("./_vance/readme-link").await.unwrap()["content"],
        "readme"
    );
    for bad in [
        "../other/secret.txt",
        "_vance/../../other/secret.txt",
        "/etc/passwd",
        "_vance/notes/leak.txt",
        "_vance/escape/secret.txt",
    ] {
        let err = read(bad).await.unwrap_err();
        assert!(
            matches!(err, ToolError::PermissionDenied(_)),
            "{bad}: {err}"
        );
        assert_eq!(err.outcome(), "permission_error");
    }
    for (bad, needle) in [
        ("_vance/nope.md", "no document"),
        ("_vance/notes", "is a directory"),
    ] {
        let err = read(bad).await.unwrap_err();
        assert!(
            matches!(&err, ToolError::Failed(m) if m.contains(needle)),
            "{bad}: {err}"
        );
    }
    let all = e
        .runtime
        .invoke_tool("doc_list", json!({"path": ".", "recursive": true}), &ctx)
        .await
        .unwrap();
    let files: Vec<&str> = all["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "file")
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"_vance/notes/deep/x.txt"), "{files:?}");
    assert!(files.contains(&"README.md"), "{files:?}");
    assert!(!files.iter().any(|f| f.contains("secret")), "{files:?}");
    let err = e
        .runtime
        .invoke_tool("doc_list", json!({"path": "../other"}), &ctx)
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::PermissionDenied(_)), "{err}");
}

// ---------------------------------------------------------------------------------------
// inbox_read

const GATED: &str = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done }
    catch: { human_rejected: done }
  done: { type: terminal }
"#;

async fn wait_for_pending(engine: &Engine, n: usize) {
    for _ in 0..300 {
        if engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .len()
            >= n
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{n} inbox items never opened");
}

#[tokio::test]
async fn inbox_read_returns_the_items_of_the_callers_scope_only() {
    let e = env().await;
    e.workflow("gated", GATED);
    std::fs::write(e.root.join("acme/other/_vance/workflows/gated.yaml"), GATED).unwrap();
    let other = Scope::new("acme", "other");
    let mine = e
        .runtime
        .start(&e.engine, &e.scope, "gated", json!({}), "tester")
        .await
        .unwrap();
    e.runtime
        .start(&e.engine, &other, "gated", json!({}), "tester")
        .await
        .unwrap();
    wait_for_pending(&e.engine, 2).await;

    e.workflow("read", &one_tool("[inbox_read]", "inbox_read", "{}"));
    let v = e.run("read", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["out"]["count"], 1, "{v:?}");
    let item = &v.vars["out"]["items"][0];
    assert_eq!(item["workflowRunId"], mine.to_string());
    assert_eq!(item["title"], "Ship it?");
    assert_eq!(item["status"], "PENDING");

    let direct = e
        .runtime
        .invoke_tool("inbox_read", json!({"status": "ALL"}), &e.ctx())
        .await
        .unwrap();
    assert_eq!(direct["count"], 1);
    let err = e
        .runtime
        .invoke_tool("inbox_read", json!({"status": "DONE"}), &e.ctx())
        .await
        .unwrap_err();
    assert!(matches!(err, ToolError::InvalidParams(_)), "{err}");
}

#[tokio::test]
async fn inbox_read_pages_with_a_limit_and_the_next_cursor() {
    let e = env().await;
    e.workflow("gated", GATED);
    let mut runs = Vec::new();
    for _ in 0..3 {
        let run = e
            .runtime
            .start(&e.engine, &e.scope, "gated", json!({}), "tester")
            .await
            .unwrap();
        runs.push(run.to_string());
        wait_for_pending(&e.engine, runs.len()).await;
    }
    let read = |params: Value| {
        let ctx = e.ctx();
        let runtime = &e.runtime;
        async move { runtime.invoke_tool("inbox_read", params, &ctx).await }
    };
    let first = read(json!({"limit": 2})).await.unwrap();
    assert_eq!(first["count"], 2, "{first}");
    let next = first["next"].as_str().expect("a next cursor").to_owned();
    let rest = read(json!({"limit": 2, "cursor": next})).await.unwrap();
    assert_eq!(rest["count"], 1, "{rest}");
    assert_eq!(rest["next"], Value::Null, "the last page");
    let seen: Vec<Value> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .chain(rest["items"].as_array().unwrap())
        .map(|i| i["workflowRunId"].clone())
        .collect();
    let expected: Vec<Value> = runs.iter().map(|r| json!(r)).collect();
    assert_eq!(seen, expected, "every item once, oldest first");

    let whole = read(json!({})).await.unwrap();
    assert_eq!(
        (whole["count"].clone(), whole["next"].clone()),
        (json!(3), Value::Null)
    );
    for bad in [
        json!({"cursor": "nope"}),
        json!({"limit": 0}),
        json!({"limit": 5000}),
    ] {
        let err = read(bad.clone()).await.unwrap_err();
        assert!(matches!(err, ToolError::InvalidParams(_)), "{bad}: {err}");
    }
}

#[tokio::test]
async fn engine_tools_without_an_attached_engine_are_technical_errors() {
    let e = env_with(|rt| rt, false).await;
    e.workflow("read", &one_tool("[inbox_read]", "inbox_read", "{}"));
    let v = e.run("read", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    assert!(error_of(&v).contains("YamlRuntime::attach"), "{v:?}");
    let err = e
        .runtime
        .invoke_tool("workflow_start", json!({"name": "x"}), &e.ctx())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("attach"), "{err}");
}

// ---------------------------------------------------------------------------------------
// workflow_start (§8.1)

#[tokio::test]
async fn workflow_start_starts_a_run_pinned_to_the_callers_scope_and_user() {
    let e = env().await;
    e.workflow(
        "child",
        "parameters:\n  who: { type: string, required: true }\nstart: d\nstates:\n  d: { type: \
         terminal, result: \"hi ${params.who}\" }\n",
    );
    // A workflow of the same name in another project is not reachable.
    std::fs::write(
        e.root.join("acme/other/_vance/workflows/only_there.yaml"),
        "start: d\nstates:\n  d: { type: terminal }\n",
    )
    .unwrap();
    e.workflow(
        "parent",
        &one_tool(
            "[workflow_start]",
            "workflow_start",
            "{ name: child, params: { who: bob } }",
        ),
    );
    let v = e.run("parent", json!({})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    let out = &v.vars["out"];
    assert_eq!(out["workflowName"], "child");
    let child: RunId = out["workflowRunId"].as_str().unwrap().parse().unwrap();
    let child = e.engine.wait_settled(child).await.unwrap();
    assert_eq!(child.status, RunStatus::Done);
    assert_eq!(child.result, Some(json!("hi bob")));
    assert_eq!(child.scope, "acme/shop");
    assert_eq!(child.started_by, "tester");
    assert_eq!(child.parent_run_id, None, "a started run, not a child run");

    for (params, needle) in [
        ("{ name: only_there }", "[MAG-DOC001]"),
        ("{ name: ../other/x }", "[MAG-DOC002]"),
        ("{ name: child }", "[MAG-YP001]"),
    ] {
        e.workflow(
            "bad",
            &one_tool("[workflow_start]", "workflow_start", params),
        );
        let v = e.run("bad", json!({})).await;
        assert_eq!(v.result, Some(json!("broken")), "{params}: {v:?}");
        assert!(error_of(&v).contains(needle), "{params}: {v:?}");
    }

    // workflow_start is not in the default pool (§8.1).
    e.workflow(
        "undeclared",
        &one_tool("null", "workflow_start", "{ name: child }").replace("allowedTools: null\n", ""),
    );
    let v = e.run("undeclared", json!({})).await;
    assert_eq!(v.result, Some(json!("denied")), "{v:?}");
}

#[tokio::test]
async fn workflow_start_of_an_archived_workflow_fails_naming_the_archive() {
    let e = env().await;
    e.workflow("child", "start: d\nstates:\n  d: { type: terminal }\n");
    e.write("_vance/workflow-state/child.yaml", "archived: true\n");
    e.workflow(
        "parent",
        &one_tool("[workflow_start]", "workflow_start", "{ name: child }"),
    );
    let v = e.run("parent", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    assert!(error_of(&v).contains("[MAG-VR001]"), "{v:?}");
}

// ---------------------------------------------------------------------------------------
// #[task]s and host tools

#[tokio::test]
async fn a_task_registered_with_the_engine_is_callable_as_a_tool() {
    let e = env().await;
    e.workflow(
        "hello",
        &one_tool("[greet]", "greet", "{ name: \"${params.base}\" }"),
    );
    let v = e.run("hello", json!({"base": "world"})).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["out"], json!({"greeting": "hello world"}));

    e.workflow("wrong", &one_tool("[greet]", "greet", "{ nam: x }"));
    let v = e.run("wrong", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    assert_eq!(e.outcomes(&v), vec!["technical_error"]);
    let err = error_of(&v);
    assert!(err.contains("greet") && err.contains("`name`"), "{err}");

    // A registered task still needs the workflow's permission.
    e.workflow(
        "undeclared",
        &one_tool("[doc_read]", "greet", "{ name: x }"),
    );
    let v = e.run("undeclared", json!({})).await;
    assert_eq!(v.result, Some(json!("denied")), "{v:?}");
}

/// A host tool: `mode` chooses the result.
struct Modal;

impl Tool for Modal {
    fn name(&self) -> &str {
        "modal"
    }
    fn description(&self) -> &str {
        "Succeeds, fails or refuses by `mode`, echoing the invocation context."
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["mode"],
            "properties": { "mode": { "type": "string", "enum": ["ok", "fail", "deny"] } },
            "additionalProperties": false
        })
    }
    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move {
            match params["mode"].as_str() {
                Some("ok") => Ok(json!({
                    "tenant": ctx.tenant,
                    "project": ctx.project,
                    "user": ctx.user,
                    "run": ctx.workflow_run_id.map(|r| r.to_string()),
                    "workflow": ctx.workflow_name,
                    "state": ctx.state,
                    "engine": ctx.engine.is_some(),
                    "key": ctx.idempotency_key.is_some(),
                })),
                Some("deny") => Err(ToolError::PermissionDenied("not for you".into())),
                _ => Err(ToolError::Failed("it broke".into())),
            }
        })
    }
}

#[tokio::test]
async fn host_tools_get_the_invocation_context_and_their_errors_route_by_kind() {
    let e = env_with(|rt| rt.with_tool(Modal), true).await;
    assert!(e.runtime.tool_names().contains(&"modal".to_string()));
    assert_eq!(e.runtime.tool("modal").unwrap().name(), "modal");
    for (mode, result, needle) in [
        ("ok", "ok", ""),
        ("deny", "denied", "not for you"),
        ("fail", "broken", "it broke"),
        ("other", "broken", "[MAG-TL003]"),
    ] {
        e.workflow(
            &format!("m_{mode}"),
            &one_tool("[modal]", "modal", &format!("{{ mode: {mode} }}")),
        );
        let v = e.run(&format!("m_{mode}"), json!({})).await;
        assert_eq!(v.result, Some(json!(result)), "{mode}: {v:?}");
        assert!(error_of(&v).contains(needle), "{mode}: {v:?}");
        if mode == "ok" {
            assert_eq!(
                v.vars["out"],
                json!({
                    "tenant": "acme", "project": "shop", "user": "tester",
                    "run": v.workflow_run_id.to_string(), "workflow": "m_ok",
                    "state": "call", "engine": true, "key": true,
                })
            );
        }
    }

    // Allowed but registered nowhere: a technical error naming the registered tools.
    e.workflow("ghost", &one_tool("[modl]", "modl", "{}"));
    let v = e.run("ghost", json!({})).await;
    assert_eq!(v.result, Some(json!("broken")), "{v:?}");
    let err = error_of(&v);
    assert!(
        err.contains("[MAG-TL001]") && err.contains("did you mean 'modal'"),
        "{err}"
    );
}

#[test]
fn tools_describe_themselves_with_a_json_schema() {
    let rt = YamlRuntime::new(DocumentSource::new(Path::new("/nonexistent")));
    assert_eq!(
        rt.tool_names(),
        vec![
            "doc_list",
            "doc_read",
            "http_request",
            "inbox_read",
            "workflow_start"
        ]
    );
    for name in rt.tool_names() {
        let tool = rt.tool(&name).unwrap();
        assert_eq!(tool.name(), name);
        assert!(!tool.description().is_empty());
        assert_eq!(tool.parameters()["type"], "object", "{name}");
    }
}

/// A host tool that never answers.
struct Stall;

impl Tool for Stall {
    fn name(&self) -> &str {
        "stall"
    }
    fn description(&self) -> &str {
        "Never answers."
    }
    fn parameters(&self) -> Value {
        json!({ "type": "object" })
    }
    fn invoke<'a>(
        &'a self,
        _params: Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(std::future::pending())
    }
}

#[tokio::test]
async fn a_tool_task_ends_with_outcome_timeout_at_its_timeout_seconds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("acme/shop/_vance/workflows")).unwrap();
    let rt = YamlRuntime::new(DocumentSource::new(root)).with_tool(Stall);
    // A registered task that never answers either: a #[task] called as a tool.
    let slow = TaskRegistration::new("slow", TaskOptions::default(), |_, _| {
        std::future::pending::<Result<Value, TaskError>>()
    });
    let engine = rt
        .install(Engine::builder().in_memory().task(slow))
        .build()
        .await
        .unwrap();
    std::fs::write(
        root.join("acme/shop/_vance/workflows/stalls.yaml"),
        r#"
allowedTools: [stall, slow]
start: tool
states:
  tool:
    type: tool_task
    tool: stall
    timeoutSeconds: 0.2
    storeAs: tool
    catch:
      timeout: task
  task:
    type: tool_task
    tool: slow
    timeoutSeconds: 0.2
    storeAs: task
    catch:
      timeout: done
  done: { type: terminal, result: both timed out }
"#,
    )
    .unwrap();
    let scope = Scope::new("acme", "shop");
    let run = rt
        .start(&engine, &scope, "stalls", json!({}), "tester")
        .await
        .unwrap();
    let v = tokio::time::timeout(Duration::from_secs(30), engine.wait(run))
        .await
        .expect("the timeouts end the run")
        .unwrap();
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.result, Some(json!("both timed out")));
    let error = v.vars["tool"]["error"].as_str().unwrap();
    assert!(
        error.contains("[MAG-TL005]") && error.contains("stall"),
        "{error}"
    );
    assert!(
        v.vars["task"]["error"]
            .as_str()
            .unwrap()
            .contains("timed out")
    );
}
