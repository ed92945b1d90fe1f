//! Task output caps that hold before the memory is spent: an `http_request` body and an agent's
//! reply are read only up to the engine's task output limit (the connection is closed there,
//! so an endless body costs bounded memory), and a script's oversized result is refused with
//! the limit named.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use magrathea_core::{Engine, RunView};
use magrathea_yaml::{DocumentSource, Scope, YamlRuntime};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The engine's task output limit in these tests.
const LIMIT: usize = 64 * 1024;
/// More than any socket buffers between the two ends hold: a server that sent this much was
/// being read on, not hung up on.
const UNREAD_AT_MOST: u64 = 32 << 20;

/// A server on 127.0.0.1 that answers every request with `head`, then `prefix` and then an
/// endless chunked body of `x`, until the client hangs up.
struct Endless {
    port: u16,
    sent: Arc<AtomicU64>,
    hung_up: Arc<AtomicBool>,
}

impl Endless {
    async fn start(head: &'static str, prefix: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let sent = Arc::new(AtomicU64::new(0));
        let hung_up = Arc::new(AtomicBool::new(false));
        let (s, h) = (sent.clone(), hung_up.clone());
        tokio::spawn(async move {
            while let Ok((mut sock, _)) = listener.accept().await {
                let (sent, hung_up) = (s.clone(), h.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 64 * 1024];
                    let _ = sock.read(&mut buf).await;
                    let head = format!(
                        "HTTP/1.1 200 OK\r\n{head}transfer-encoding: chunked\r\n\r\n{:x}\r\n{prefix}\r\n",
                        prefix.len()
                    );
                    if sock.write_all(head.as_bytes()).await.is_err() {
                        hung_up.store(true, Ordering::SeqCst);
                        return;
                    }
                    let mut chunk = format!("{:x}\r\n", 64 * 1024).into_bytes();
                    chunk.extend(std::iter::repeat_n(b'x', 64 * 1024));
                    chunk.extend_from_slice(b"\r\n");
                    loop {
                        if sock.write_all(&chunk).await.is_err() {
                            hung_up.store(true, Ordering::SeqCst);
                            return;
                        }
                        sent.fetch_add(chunk.len() as u64, Ordering::SeqCst);
                    }
                });
            }
        });
        Self {
            port,
            sent,
            hung_up,
        }
    }

    /// Waits for the client to hang up and checks that it read little of the endless body.
    async fn assert_client_hung_up_early(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.hung_up.load(Ordering::SeqCst) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            self.hung_up.load(Ordering::SeqCst),
            "the client still reads the endless body"
        );
        let sent = self.sent.load(Ordering::SeqCst);
        assert!(
            sent < UNREAD_AT_MOST,
            "the server sent {sent} bytes before the client hung up"
        );
    }
}

/// A server on 127.0.0.1 that declares a `content-length` of `declared` bytes, sends none of
/// them and waits for the client to hang up.
async fn declaring(declared: u64) -> (u16, Arc<AtomicBool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hung_up = Arc::new(AtomicBool::new(false));
    let h = hung_up.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let hung_up = h.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let _ = sock.read(&mut buf).await;
                let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {declared}\r\n\r\n");
                let _ = sock.write_all(head.as_bytes()).await;
                // Nothing more is sent: only the client can end the exchange.
                while matches!(sock.read(&mut buf).await, Ok(n) if n > 0) {}
                hung_up.store(true, Ordering::SeqCst);
            });
        }
    });
    (port, hung_up)
}

struct Env {
    _dir: tempfile::TempDir,
    root: PathBuf,
    runtime: YamlRuntime,
    engine: Engine,
}

/// Tenant `acme`, project `shop`, loopback allowed by the egress policy, and an engine whose
/// task output limit is [`LIMIT`].
async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir_all(root.join("acme/shop/_vance/workflows")).unwrap();
    write(
        &root.join("acme/_tenant/_vance/settings.yaml"),
        "egress:\n  allowHosts: [\"127.0.0.1\"]\n",
    );
    let runtime = YamlRuntime::new(DocumentSource::new(&root));
    let engine = runtime
        .install(Engine::builder().in_memory().max_task_output_bytes(LIMIT))
        .build()
        .await
        .unwrap();
    runtime.attach(&engine);
    Env {
        _dir: dir,
        root,
        runtime,
        engine,
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workflow of one state `s` (`spec`, indented under it) that ends `done` on success and
/// `failed` on a technical error; `http_request` is among its allowed tools.
fn one_state(spec: &str) -> String {
    format!(
        "start: s\nallowedTools: [http_request]\nstates:\n  s:\n{spec}    on:\n      success: done\n    catch:\n      \
         technical_error: failed\n  done:\n    type: terminal\n  failed:\n    type: terminal\n    \
         outcome: failure\n"
    )
}

impl Env {
    fn project(&self, rel: &str, text: &str) {
        write(&self.root.join("acme/shop").join(rel), text);
    }

    async fn run(&self, name: &str) -> RunView {
        let run = self
            .runtime
            .start(
                &self.engine,
                &Scope::new("acme", "shop"),
                name,
                json!({}),
                "tester",
            )
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(60), self.engine.wait_settled(run))
            .await
            .expect("the run settles")
            .unwrap()
    }

    /// The last TaskResultRecord of the run.
    fn task_result(&self, view: &RunView) -> Value {
        self.engine
            .journal(view.workflow_run_id)
            .unwrap()
            .into_iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .rfind(|r| r["type"] == "TaskResultRecord")
            .expect("a TaskResultRecord")
    }

    /// The run ended in `failed` after a `technical_error`; its error message.
    fn technical_error(&self, view: &RunView) -> String {
        assert_eq!(view.current_state.as_deref(), Some("failed"), "{view:?}");
        let r = self.task_result(view);
        assert_eq!(r["outcome"], "technical_error", "{r}");
        r["error"].as_str().unwrap_or_default().to_string()
    }
}

#[tokio::test]
async fn an_endless_http_body_fails_the_tool_task_at_the_task_output_limit() {
    let server = Endless::start("content-type: text/plain\r\n", "start").await;
    let e = env().await;
    e.project(
        "_vance/workflows/fetch.yaml",
        &one_state(&format!(
            "    type: tool_task\n    tool: http_request\n    timeoutSeconds: 30\n    params:\n      \
             url: http://127.0.0.1:{}/feed\n      maxResponseBytes: 104857600\n",
            server.port
        )),
    );
    let view = e.run("fetch").await;
    let error = e.technical_error(&view);
    assert!(
        error.contains("[MAG-BD020]")
            && error.contains(&LIMIT.to_string())
            && error.contains("EngineBuilder::max_task_output_bytes"),
        "the error names the limit and where it is set: {error}"
    );
    server.assert_client_hung_up_early().await;
}

#[tokio::test]
async fn max_response_bytes_below_the_output_limit_is_the_limit_named() {
    let server = Endless::start("content-type: text/plain\r\n", "start").await;
    let e = env().await;
    e.project(
        "_vance/workflows/fetch.yaml",
        &one_state(&format!(
            "    type: tool_task\n    tool: http_request\n    params:\n      \
             url: http://127.0.0.1:{}/feed\n      maxResponseBytes: 1000\n",
            server.port
        )),
    );
    let view = e.run("fetch").await;
    let error = e.technical_error(&view);
    assert!(
        error.contains("[MAG-BD020]") && error.contains("maxResponseBytes (1000)"),
        "{error}"
    );
    server.assert_client_hung_up_early().await;
}

#[tokio::test]
async fn an_endless_model_reply_fails_the_agent_task_at_the_task_output_limit() {
    // A chat completion whose assistant content never ends.
    let server = Endless::start(
        "content-type: application/json\r\n",
        r#"{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":""#,
    )
    .await;
    let e = env().await;
    e.project(
        "_vance/recipes/writer.yaml",
        &format!(
            "engine: chat\nprovider: openai\nbaseUrl: http://127.0.0.1:{}/v1\nmodel: gpt-test\n",
            server.port
        ),
    );
    e.project(
        "_vance/workflows/write.yaml",
        &one_state(
            "    type: agent_task\n    recipe: writer\n    timeoutSeconds: 30\n    params:\n      \
             prompt: Write at length.\n",
        ),
    );
    let view = e.run("write").await;
    let error = e.technical_error(&view);
    assert!(
        error.contains("[MAG-BD020]")
            && error.contains(&LIMIT.to_string())
            && error.contains("EngineBuilder::max_task_output_bytes"),
        "the error names the limit and where it is set: {error}"
    );
    server.assert_client_hung_up_early().await;
}

#[tokio::test]
async fn a_script_returning_a_huge_string_fails_with_the_output_limit_named() {
    let e = env().await;
    e.project("_vance/scripts/big.js", "return 'x'.repeat(1048576);\n");
    e.project(
        "_vance/workflows/big.yaml",
        &one_state("    type: script_task\n    path: _vance/scripts/big.js\n"),
    );
    let view = e.run("big").await;
    let error = e.technical_error(&view);
    assert!(
        error.starts_with("[MAG-BD002]")
            && error.contains("1048578 bytes")
            && error.contains(&format!("{LIMIT} bytes"))
            && error.contains("EngineBuilder::max_task_output_bytes"),
        "the error names the output's size, the limit and where it is set: {error}"
    );
    let r = e.task_result(&view);
    assert!(
        r["output"].to_string().len() < LIMIT,
        "the oversized output is not journaled"
    );
}

/// Many small objects cost far more memory than their text: a result with more objects and
/// arrays than one per 64 bytes of the limit is refused before it is read, whatever its size.
#[tokio::test]
async fn a_script_returning_many_small_objects_fails_before_they_are_read() {
    let e = env().await;
    let most = LIMIT / 64;
    e.project(
        "_vance/scripts/rows.js",
        &format!(
            "const a = []; for (let i = 0; i < {}; i++) a.push({{}}); return a;\n",
            most + 1
        ),
    );
    e.project(
        "_vance/workflows/rows.yaml",
        &one_state("    type: script_task\n    path: _vance/scripts/rows.js\n"),
    );
    let view = e.run("rows").await;
    let error = e.technical_error(&view);
    assert!(
        error.contains("[MAG-BD002]") && error.contains("objects and arrays"),
        "{error}"
    );
    // One fewer object fits.
    e.project(
        "_vance/scripts/fits.js",
        &format!(
            "const a = []; for (let i = 0; i < {}; i++) a.push({{}}); return a;\n",
            most - 1
        ),
    );
    e.project(
        "_vance/workflows/fits.yaml",
        &one_state("    type: script_task\n    path: _vance/scripts/fits.js\n"),
    );
    let view = e.run("fits").await;
    assert_eq!(e.task_result(&view)["outcome"], "success", "{view:?}");
}

#[tokio::test]
async fn a_body_declared_larger_than_the_limit_is_refused_before_it_is_read() {
    let (port, hung_up) = declaring(100 << 20).await;
    let e = env().await;
    e.project(
        "_vance/workflows/fetch.yaml",
        &one_state(&format!(
            "    type: tool_task\n    tool: http_request\n    params:\n      \
             url: http://127.0.0.1:{port}/big\n      maxResponseBytes: 104857600\n      \
             timeoutSeconds: 30\n"
        )),
    );
    let view = e.run("fetch").await;
    // Waiting for the 100 MiB that never come would end in a timeout instead.
    let error = e.technical_error(&view);
    assert!(
        error.contains("[MAG-BD020]") && error.contains(&LIMIT.to_string()),
        "{error}"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !hung_up.load(Ordering::SeqCst) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(hung_up.load(Ordering::SeqCst), "the client hung up");
}

/// Values the runtime builds itself are bounded as a task's output is, before anything is
/// journaled: a terminal's result that writes a 1 MiB parameter twenty times fails the run
/// (`MAG-BD003`), and so does a fan-out whose sub-runs' results together pass the bound (its
/// state ends `technical_error`, which the document may route).
#[tokio::test]
async fn a_result_or_fan_out_output_past_the_bound_is_refused_before_it_is_journaled() {
    use magrathea_core::{Record, RunStatus};

    let p = crate::common::Project::new(|rt| rt).await;
    let copies: Vec<String> = (0..20)
        .map(|i| format!("k{i}: \"${{params.big}}\""))
        .collect();
    p.workflow(
        "amplify",
        &format!(
            "start: done\nstates:\n  done:\n    type: terminal\n    storeAs: out\n    result: {{ {} }}\n",
            copies.join(", ")
        ),
    );
    let big = "x".repeat(1 << 20);
    let view = p.run("amplify", json!({ "big": big })).await;
    assert_eq!(view.status, RunStatus::Failed, "{:?}", view.reason);
    assert!(
        view.reason
            .as_deref()
            .is_some_and(|r| r.contains("[MAG-BD003]")),
        "{:?}",
        view.reason
    );
    assert!(
        !p.records(&view)
            .iter()
            .any(|r| matches!(r, Record::Var { key, .. } if key == "out")),
        "nothing of it was stored"
    );

    p.workflow(
        "gather",
        "start: fan\nstates:\n  fan:\n    type: foreach_task\n    items: \"${params.items}\"\n    \
         maxParallelism: 4\n    start: echo\n    states:\n      echo: { type: terminal, result: \
         \"${params.big}\" }\n    storeAs: all\n    on: { success: done }\n    catch: { \
         technical_error: refused }\n  done: { type: terminal, result: gathered }\n  refused: { \
         type: terminal, result: \"${state.lastError}\" }\n",
    );
    let view = p
        .run(
            "gather",
            json!({ "items": [1, 2, 3, 4, 5, 6, 7, 8], "big": "y".repeat(3 << 20) }),
        )
        .await;
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.current_state.as_deref(), Some("refused"), "{view:?}");
    // What the state stores is its error, as for any task that fails (reference §3: storeAs
    // keeps a non-null output), not the gathered results.
    let stored: Vec<Value> = p
        .records(&view)
        .into_iter()
        .filter_map(|r| match r {
            Record::Var { key, value, .. } if key == "all" => Some(value),
            _ => None,
        })
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
    assert!(
        stored[0]["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("[MAG-BD003] the output of state 'fan'")),
        "{}",
        stored[0]
    );
    assert!(stored[0].to_string().len() < 1024);
}
