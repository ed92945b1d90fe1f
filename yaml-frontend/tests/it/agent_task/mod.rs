//! `agent_task` (reference §3.1, §9) against a fake OpenAI-compatible chat-completions server
//! started by each test.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use futures::future::BoxFuture;
use magrathea_core::{RunStatus, RunView};
use magrathea_yaml::runtime::{
    AgentEngine, AgentError, AgentReply, AgentRequest, ChatMessage, CloseReason,
};
use magrathea_yaml::{YamlRuntime, YamlStartError};
use serde_json::{Value, json};
mod replies;
mod tools;

const KEY_VAR: &str = "MAGRATHEA_TEST_AGENT_KEY";
const KEY: &str = "sk-test-5f0c1d9e-never-journal-me";

// ---------------------------------------------------------------------------------------------
// The fake server.

/// What the fake endpoint answers.
#[derive(Clone)]
enum Canned {
    /// A chat completion whose assistant message is this text.
    Reply(String),
    /// An HTTP error with this body.
    Status(u16, &'static str),
    /// A reply after a delay.
    Slow(Duration, String),
    /// HTTP 401 whose body echoes the Authorization header (as some proxies do).
    EchoAuth,
    /// The same after this many characters: an error quotes the body's start only, and the
    /// quote's end falls inside the key.
    EchoAuthAfter(usize),
    /// The n-th call gets the n-th assistant message (the last one repeats); a message with
    /// `tool_calls` finishes with `tool_calls`, the others with `stop`.
    Script(Vec<Value>),
    /// The n-th call gets the n-th answer (the last one repeats); a `Script` in it answers
    /// with its first message.
    Steps(Vec<Canned>),
}

struct Server {
    canned: Mutex<Canned>,
    /// `(Authorization header, request body)` of every call.
    seen: Mutex<Vec<(Option<String>, Value)>>,
    /// Calls of `/target`, a URL a tool may be pointed at.
    target_hits: AtomicUsize,
}

struct Fake {
    addr: SocketAddr,
    server: Arc<Server>,
}

impl Fake {
    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
    fn requests(&self) -> Vec<(Option<String>, Value)> {
        self.server.seen.lock().unwrap().clone()
    }
    /// Replaces what the endpoint answers.
    fn answer(&self, canned: Canned) {
        *self.server.canned.lock().unwrap() = canned;
    }
    fn target_url(&self) -> String {
        format!("http://{}/target", self.addr)
    }
}

async fn fake(canned: Canned) -> Fake {
    let server = Arc::new(Server {
        canned: Mutex::new(canned),
        seen: Mutex::new(Vec::new()),
        target_hits: AtomicUsize::new(0),
    });
    let app = axum::Router::new()
        .route("/v1/chat/completions", post(completions))
        .route("/target", any(target))
        .with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    Fake { addr, server }
}

async fn completions(
    State(server): State<Arc<Server>>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let n = {
        let mut seen = server.seen.lock().unwrap();
        seen.push((auth, body.clone()));
        seen.len()
    };
    let model = body["model"].clone();
    let mut canned = server.canned.lock().unwrap().clone();
    if let Canned::Steps(steps) = canned {
        canned = steps[(n - 1).min(steps.len() - 1)].clone();
        if let Canned::Script(messages) = canned {
            canned = Canned::Script(messages[..1].to_vec());
        }
    }
    let content = match &canned {
        Canned::Steps(_) => unreachable!("steps are not nested"),
        Canned::Reply(text) => text.clone(),
        Canned::Script(messages) => {
            let message = messages[(n - 1).min(messages.len() - 1)].clone();
            let finish = if message.get("tool_calls").is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            return completion(&model, message, finish).into_response();
        }
        Canned::Status(code, text) => {
            return (StatusCode::from_u16(*code).unwrap(), *text).into_response();
        }
        Canned::EchoAuth => {
            let auth = server.seen.lock().unwrap().last().unwrap().0.clone();
            let body = format!("invalid credentials: {}", auth.unwrap_or_default());
            return (StatusCode::UNAUTHORIZED, body).into_response();
        }
        Canned::EchoAuthAfter(pad) => {
            let auth = server.seen.lock().unwrap().last().unwrap().0.clone();
            let body = format!("{}{}", "x".repeat(*pad), auth.unwrap_or_default());
            return (StatusCode::UNAUTHORIZED, body).into_response();
        }
        Canned::Slow(delay, text) => {
            tokio::time::sleep(*delay).await;
            text.clone()
        }
    };
    completion(
        &model,
        json!({ "role": "assistant", "content": content }),
        "stop",
    )
    .into_response()
}

fn completion(model: &Value, message: Value, finish_reason: &str) -> Json<Value> {
    Json(json!({
        "id": "chatcmpl-test-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason
        }],
        "usage": { "prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500 }
    }))
}

async fn target(State(server): State<Arc<Server>>) -> &'static str {
    server.target_hits.fetch_add(1, Ordering::SeqCst);
    "hit"
}

/// An assistant message asking for one tool call (`arguments` as the JSON text OpenAI sends).
fn tool_call(id: &str, name: &str, arguments: Value) -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": id,
            "type": "function",
            "function": { "name": name, "arguments": arguments.to_string() }
        }]
    })
}

/// A final assistant message.
fn answer(text: &str) -> Value {
    json!({ "role": "assistant", "content": text })
}

// ---------------------------------------------------------------------------------------------
// The project.

use crate::common;
use common::Project;

async fn project(runtime: impl FnOnce(YamlRuntime) -> YamlRuntime) -> Project {
    // The API key comes from this lookup instead of the process environment.
    Project::new(|r| runtime(r.with_agent_env(|name| (name == KEY_VAR).then(|| KEY.into())))).await
}

fn write(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join(format!("{name}.yaml")), body).unwrap();
}

fn recipe(base_url: &str, extra: &str) -> String {
    format!(
        "engine: jeltz\nprovider: openai\nbaseUrl: {base_url}\nmodel: gpt-test\n\
         apiKeyEnv: {KEY_VAR}\ntemperature: 0\nsystem: You review pull requests.\n{extra}"
    )
}

/// The reference's `plan` state, routed: success → done, agent_error → review,
/// technical_error → broken, timeout → slow.
fn workflow(recipe: &str, head: &str) -> String {
    format!(
        r#"
start: plan
{head}
parameters:
  pr_url: {{ type: string, required: true }}
states:
  plan:
    type: agent_task
    recipe: {recipe}
    params:
      prompt: "Analyse PR ${{params.pr_url}}, identify risks, propose review plan."
      schema:
        risk:        {{ type: string, enum: [low, medium, high] }}
        focus_areas: {{ type: array,  items: {{ type: string }} }}
    storeAs: plan_output
    timeoutSeconds: 5
    on:
      success: done
    catch:
      agent_error: review
      technical_error: broken
      timeout: slow
  done:
    type: terminal
    result:
      risk: "${{state.plan_output.risk}}"
  review:
    type: terminal
    outcome: failure
  broken:
    type: terminal
    outcome: failure
  slow:
    type: terminal
    outcome: failure
"#
    )
}

impl Project {
    fn recipe(&self, name: &str, body: &str) {
        self.document("recipes", name, body);
    }
    async fn run_pr(&self, name: &str) -> RunView {
        let run = self
            .runtime
            .start(
                &self.engine,
                &self.scope,
                name,
                json!({ "pr_url": "https://git.example/pr/42" }),
                "tester",
            )
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(30), self.engine.wait_settled(run))
            .await
            .expect("the run settles")
            .unwrap()
    }
    fn journal(&self, view: &RunView) -> Vec<Value> {
        self.engine
            .journal(view.workflow_run_id)
            .unwrap()
            .into_iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    }
    /// The final TaskResultRecord of the `plan` state.
    fn plan_result(&self, view: &RunView) -> Value {
        self.journal(view)
            .into_iter()
            .rfind(|r| r["type"] == "TaskResultRecord")
            .expect("a TaskResultRecord")
    }
    fn assert_key_not_journaled(&self, view: &RunView) {
        let text = serde_json::to_string(&self.journal(view)).unwrap();
        assert!(!text.contains(KEY), "the API key leaked into the journal");
        assert!(
            !text.contains("sk-test"),
            "the API key leaked into the journal"
        );
    }
}

async fn scenario(canned: Canned, recipe_extra: &str, head: &str) -> (Project, Fake, RunView) {
    let server = fake(canned).await;
    let p = project(|rt| rt).await;
    p.recipe("reviewer", &recipe(&server.base_url(), recipe_extra));
    p.workflow("pr-review", &workflow("reviewer", head));
    let view = p.run_pr("pr-review").await;
    p.assert_key_not_journaled(&view);
    (p, server, view)
}

// ---------------------------------------------------------------------------------------------
// The cases.
