//! What an `agent_task` of a served tree may use of the server: a recipe is a document any
//! token with `workflow.write` may write, so its `apiKeyEnv` names only a variable the
//! tenant's settings list, and its engine connects only where the tenant's `egress:` allows.
//! Each test runs a real chat-completions exchange with a service on 127.0.0.1 through the
//! executors' own API, as a code workflow's journaled task.

#![cfg(feature = "agent")]

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use magrathea_core::{Engine, RunStatus, StartRequest, WorkflowRegistration};
use magrathea_exec::{AgentInput, DocumentSource, Executors, Scope};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The key the server's environment would hold.
const KEY: &str = "sk-of-the-server-5b1e";

/// A chat-completions service on 127.0.0.1 that answers `hello` and keeps each request's
/// `Authorization` header (empty when absent).
async fn model_service() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let mut buf = vec![0u8; 64 * 1024];
            let n = sock.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).into_owned();
            let auth = head
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .starts_with("authorization:")
                        .then(|| l["authorization:".len()..].trim().to_string())
                })
                .unwrap_or_default();
            log.lock().unwrap().push(auth);
            let body = json!({
                "choices": [{
                    "index": 0,
                    "message": { "role": "assistant", "content": "hello" },
                    "finish_reason": "stop"
                }],
                "usage": { "prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2 }
            })
            .to_string();
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
                 connection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = sock.write_all(reply.as_bytes()).await;
        }
    });
    (port, seen)
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An engine whose workflow `agent` runs recipe `chat` (on the service at `port`, with
/// `apiKeyEnv: OPENAI_API_KEY`) in acme/shop of a tree with the tenant settings `tenant`,
/// served or not; answers `{kind, output}`. The agents' key source holds [`KEY`].
async fn engine(root: &Path, served: bool, tenant: &str, port: u16) -> Engine {
    write(&root.join("acme/_tenant/_vance/settings.yaml"), tenant);
    write(
        &root.join("acme/shop/_vance/recipes/chat.yaml"),
        &format!(
            "engine: chat\nbaseUrl: http://127.0.0.1:{port}/v1\nmodel: m\n\
             apiKeyEnv: OPENAI_API_KEY\n"
        ),
    );
    let mut docs = DocumentSource::new(root);
    if served {
        docs = docs.served();
    }
    let executors = Executors::new(docs)
        .with_agent_env(|name| (name == "OPENAI_API_KEY").then(|| KEY.to_string()));
    let scope = Scope::new("acme", "shop");
    let agent = WorkflowRegistration::new("agent", "", move |ctx, _input: Value| {
        let (executors, scope) = (executors.clone(), scope.clone());
        async move {
            let call = executors
                .call(AgentInput::new("chat", json!({ "prompt": "hi" })))
                .scope(&scope)
                .label("ask");
            Ok(match ctx.task_with(call.into_task_call()).await {
                Ok(output) => json!({ "kind": "success", "output": output }),
                Err(e) => json!({ "kind": e.kind, "output": e.output }),
            })
        }
    });
    Engine::builder()
        .in_memory()
        .workflow(agent)
        .build()
        .await
        .unwrap()
}

async fn ask(engine: &Engine) -> Value {
    let run = engine
        .start(StartRequest::code("agent", Value::Null))
        .await
        .unwrap();
    let view = tokio::time::timeout(Duration::from_secs(30), engine.wait(run))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done, "{view:?}");
    view.result.unwrap()
}

#[tokio::test]
async fn a_served_recipe_uses_only_the_keys_and_hosts_its_tenant_allows() {
    let (port, seen) = model_service().await;
    let dir = tempfile::tempdir().unwrap();
    // No `agents.keyEnv`: the recipe may not name a server variable; nothing is sent.
    let e = engine(dir.path(), true, "", port).await;
    let r = ask(&e).await;
    assert_eq!(r["kind"], "technical_error", "{r}");
    let error = r["output"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("[MAG-AG011]") && error.contains("agents.keyEnv"),
        "{r}"
    );
    assert!(!r.to_string().contains(KEY), "{r}");
    // The key is listed for another host: it is not sent here.
    let e = engine(
        dir.path(),
        true,
        "agents:\n  keyEnv: { OPENAI_API_KEY: [api.openai.com] }\n",
        port,
    )
    .await;
    let r = ask(&e).await;
    assert_eq!(r["kind"], "technical_error", "{r}");
    assert!(r.to_string().contains("[MAG-AG011]"), "{r}");
    // The key may go to the service's host, but the service is on loopback, which the egress
    // policy refuses.
    let listed = format!("agents:\n  keyEnv: {{ OPENAI_API_KEY: [\"127.0.0.1:{port}\"] }}\n");
    let e = engine(dir.path(), true, &listed, port).await;
    let r = ask(&e).await;
    assert_eq!(r["kind"], "technical_error", "{r}");
    assert!(r.to_string().contains("[MAG-EG001]"), "{r}");
    assert!(seen.lock().unwrap().is_empty(), "a request was sent");
    // The tenant lists the host: the call goes through, with the key.
    let tenant = format!("{listed}egress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n");
    let e = engine(dir.path(), true, &tenant, port).await;
    let r = ask(&e).await;
    assert_eq!(r["kind"], "success", "{r}");
    assert_eq!(r["output"]["data"], "hello", "{r}");
    assert_eq!(*seen.lock().unwrap(), [format!("Bearer {KEY}")]);
}

#[tokio::test]
async fn the_owners_own_recipes_reach_any_host_with_any_key() {
    let (port, seen) = model_service().await;
    let dir = tempfile::tempdir().unwrap();
    let e = engine(dir.path(), false, "", port).await;
    let r = ask(&e).await;
    assert_eq!(r["kind"], "success", "{r}");
    assert_eq!(*seen.lock().unwrap(), [format!("Bearer {KEY}")]);
}
