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
mod doc_read;
mod engine_tools;
mod host_tools;
mod http_request;

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
