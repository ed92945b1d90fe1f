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
    /// The n-th call gets the n-th assistant message (the last one repeats); a message with
    /// `tool_calls` finishes with `tool_calls`, the others with `stop`.
    Script(Vec<Value>),
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
    let canned = server.canned.lock().unwrap().clone();
    let content = match &canned {
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

#[tokio::test]
async fn a_valid_reply_succeeds_stores_data_and_journals_usage() {
    let data = json!({ "risk": "medium", "focus_areas": ["migrations", "auth"] });
    let reply = json!({ "success": true, "data": data }).to_string();
    let (p, server, v) = scenario(Canned::Reply(reply), "", "").await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["plan_output"], data);
    assert_eq!(v.result, Some(json!({ "risk": "medium" })));

    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "success");
    assert_eq!(r["output"]["data"], data);
    assert_eq!(
        r["output"]["usage"],
        json!({ "promptTokens": 1200, "completionTokens": 300, "totalTokens": 1500 })
    );
    assert_eq!(r["output"]["costUsd"], Value::Null, "no prices, no cost");

    // The request spoke the chat-completions protocol with the key and the recipe's model.
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let (auth, body) = &requests[0];
    assert_eq!(auth.as_deref(), Some(format!("Bearer {KEY}").as_str()));
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["response_format"], json!({ "type": "json_object" }));
    assert_eq!(body["messages"][0]["role"], "system");
    assert_eq!(body["messages"][0]["content"], "You review pull requests.");
    assert_eq!(body["messages"][1]["role"], "user");
    let user = body["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains("Analyse PR https://git.example/pr/42"),
        "{user}"
    );
    assert!(
        user.contains("focus_areas") && user.contains("\"success\""),
        "{user}"
    );
}

#[tokio::test]
async fn success_false_is_an_agent_error_caught_with_the_reply_as_output() {
    let reply = json!({ "success": false, "error": "cannot open the PR" });
    let (p, _server, v) = scenario(Canned::Reply(reply.to_string()), "", "").await;
    assert_eq!(v.status, RunStatus::Failed);
    assert_eq!(
        v.current_state.as_deref(),
        Some("review"),
        "routed by catch"
    );
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "agent_error");
    assert_eq!(r["output"]["data"], reply, "output = lastInvalid");
    assert_eq!(r["output"]["usage"]["totalTokens"], 1500);
    assert!(
        r["error"].as_str().unwrap().contains("cannot open the PR"),
        "{r}"
    );
    assert_eq!(v.vars["plan_output"], reply);
}

#[tokio::test]
async fn a_schema_violation_is_an_agent_error_with_the_invalid_reply() {
    let reply = json!({ "success": true, "data": { "risk": "catastrophic", "focus_areas": [1] } });
    let (p, _server, v) = scenario(Canned::Reply(reply.to_string()), "", "").await;
    assert_eq!(v.current_state.as_deref(), Some("review"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "agent_error");
    assert_eq!(r["output"]["data"], reply);
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("does not match the schema"), "{error}");
    assert!(error.contains("/risk"), "{error}");

    // A missing property of the properties map is a violation too.
    let reply = json!({ "success": true, "data": { "risk": "low" } });
    let (p, _server, v) = scenario(Canned::Reply(reply.to_string()), "", "").await;
    assert_eq!(p.plan_result(&v)["outcome"], "agent_error");
}

#[tokio::test]
async fn malformed_json_is_an_agent_error_with_the_raw_text() {
    let text = "Sure! Here is the plan: {success: yes";
    let (p, _server, v) = scenario(Canned::Reply(text.into()), "", "").await;
    assert_eq!(v.current_state.as_deref(), Some("review"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "agent_error");
    assert_eq!(r["output"]["data"], text);
}

#[tokio::test]
async fn http_500_is_a_technical_error() {
    let (p, _server, v) = scenario(Canned::Status(500, "upstream exploded"), "", "").await;
    assert_eq!(v.current_state.as_deref(), Some("broken"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("500") && error.contains("upstream exploded"),
        "{error}"
    );
}

#[tokio::test]
async fn an_error_body_echoing_the_key_does_not_journal_it() {
    // `scenario` asserts that the key is nowhere in the journal.
    let (p, _server, v) = scenario(Canned::EchoAuth, "", "").await;
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("401") && error.contains("<redacted>"),
        "{error}"
    );
}

#[tokio::test]
async fn a_slow_server_times_out() {
    let reply = json!({ "success": true, "data": {} }).to_string();
    let server = fake(Canned::Slow(Duration::from_secs(20), reply)).await;
    let p = project(|rt| rt).await;
    p.recipe("reviewer", &recipe(&server.base_url(), ""));
    p.workflow(
        "pr-review",
        &workflow("reviewer", "").replace("timeoutSeconds: 5", "timeoutSeconds: 0.3"),
    );
    let started = std::time::Instant::now();
    let v = p.run_pr("pr-review").await;
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(v.current_state.as_deref(), Some("slow"));
    assert_eq!(p.plan_result(&v)["outcome"], "timeout");
}

#[tokio::test]
async fn the_recipe_timeout_applies_when_the_state_has_none() {
    let reply = json!({ "success": true, "data": {} }).to_string();
    let server = fake(Canned::Slow(Duration::from_secs(20), reply)).await;
    let p = project(|rt| rt).await;
    p.recipe(
        "reviewer",
        &recipe(&server.base_url(), "timeoutSeconds: 0.3\n"),
    );
    p.workflow(
        "pr-review",
        &workflow("reviewer", "").replace("    timeoutSeconds: 5\n", ""),
    );
    let v = p.run_pr("pr-review").await;
    assert_eq!(p.plan_result(&v)["outcome"], "timeout");
}

#[tokio::test]
async fn priced_usage_exhausts_max_total_cost_usd() {
    let reply = json!({ "success": true, "data": { "risk": "low", "focus_areas": [] } });
    let (p, _server, v) = scenario(
        Canned::Reply(reply.to_string()),
        "prices: { inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }\n",
        "bounds:\n  maxTotalCostUsd: 0.000001\n",
    )
    .await;
    assert_eq!(v.status, RunStatus::Failed);
    let reason = v.reason.as_deref().unwrap();
    assert!(
        reason.starts_with("bounds exhausted: maxTotalCostUsd"),
        "{reason}"
    );
    let cost = p.plan_result(&v)["output"]["costUsd"].as_f64().unwrap();
    // 1200 prompt tokens at $1/M + 300 completion tokens at $2/M.
    assert!((cost - 0.0018).abs() < 1e-12, "{cost}");

    // Within the bound the same run succeeds.
    let (_p, _server, v) = scenario(
        Canned::Reply(reply.to_string()),
        "prices: { inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }\n",
        "bounds:\n  maxTotalCostUsd: 1.0\n",
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
}

#[tokio::test]
async fn an_inline_recipe_definition_is_rejected_at_load_time() {
    let p = project(|rt| rt).await;
    p.workflow(
        "inline",
        "start: a\nstates:\n  a:\n    type: agent_task\n    recipe:\n      engine: jeltz\n      \
         model: gpt-test\n    params: { prompt: hi }\n    on: { success: done }\n  done:\n    \
         type: terminal\n",
    );
    let err = p
        .runtime
        .start(&p.engine, &p.scope, "inline", json!({}), "tester")
        .await
        .unwrap_err();
    assert!(matches!(err, YamlStartError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("recipe"), "{err}");
}

#[tokio::test]
async fn an_unknown_recipe_names_both_places_searched() {
    let p = project(|rt| rt).await;
    p.workflow("pr-review", &workflow("nowhere", ""));
    let v = p.run_pr("pr-review").await;
    assert_eq!(v.current_state.as_deref(), Some("broken"));
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("acme/shop/_vance/recipes/nowhere.yaml")
            && error.contains("acme/_tenant/_vance/recipes/nowhere.yaml"),
        "{error}"
    );
}

#[tokio::test]
async fn an_unset_key_variable_is_a_technical_error_before_any_call() {
    let server = fake(Canned::Reply("{}".into())).await;
    let p = project(|rt| rt.with_agent_env(|_| None)).await;
    p.recipe("reviewer", &recipe(&server.base_url(), ""));
    p.workflow("pr-review", &workflow("reviewer", ""));
    let v = p.run_pr("pr-review").await;
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    assert!(r["error"].as_str().unwrap().contains(KEY_VAR), "{r}");
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn the_chat_engine_from_the_tenant_returns_the_last_assistant_message() {
    let server = fake(Canned::Reply("LGTM, ship it".into())).await;
    let p = project(|rt| rt).await;
    let tenant = p.project.parent().unwrap().join("_tenant/_vance/recipes");
    write(
        &tenant,
        "chatty",
        &format!(
            "engine: chat\nbaseUrl: {}\nmodel: gpt-test\nprices: {{ inputPerMTokUsd: 0.15, \
             outputPerMTokUsd: 0.6 }}\n",
            server.base_url()
        ),
    );
    p.workflow("pr-review", &workflow("chatty", ""));
    let v = p.run_pr("pr-review").await;
    assert_eq!(v.vars["plan_output"], "LGTM, ship it");
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "success");
    assert!(r["output"]["costUsd"].as_f64().unwrap() > 0.0);
    let (auth, body) = &server.requests()[0];
    assert_eq!(auth, &None, "no apiKeyEnv, no Authorization header");
    assert_eq!(body.get("response_format"), None);
    assert_eq!(
        body["messages"],
        json!([{ "role": "user", "content": "Analyse PR https://git.example/pr/42, identify risks, propose review plan." }])
    );
}

/// A state's `params.model` and `params.temperature` win over its recipe's (a recipe without
/// `model:` serves states that name one); a `params.model` that is not a string is a
/// `technical_error` before any call.
#[tokio::test]
async fn a_states_model_and_temperature_win_over_the_recipes() {
    let server = fake(Canned::Reply("fine".into())).await;
    let p = project(|rt| rt).await;
    p.recipe(
        "shared",
        &format!(
            "engine: chat
baseUrl: {}
temperature: 0.2
",
            server.base_url()
        ),
    );
    let doc = |model: &str| {
        format!(
            r#"
start: ask
states:
  ask:
    type: agent_task
    recipe: shared
    params:
      prompt: hello
      model: {model}
      temperature: 0.7
    storeAs: said
    on:
      success: done
    catch:
      technical_error: broken
  done:
    type: terminal
  broken:
    type: terminal
    outcome: failure
"#
        )
    };
    p.workflow("ask", &doc("gpt-state"));
    let v = p.run_pr("ask").await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["said"], "fine");
    let (_, body) = &server.requests()[0];
    assert_eq!(body["model"], "gpt-state");
    assert_eq!(body["temperature"], 0.7);

    p.workflow("ask", &doc("[not, a, string]"));
    let v = p.run_pr("ask").await;
    assert_eq!(v.status, RunStatus::Failed, "{v:?}");
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    assert!(
        r["error"].to_string().contains("params.model"),
        "the error names the field: {r}"
    );
    assert_eq!(server.requests().len(), 1, "no call for the bad model");
}

/// What a host engine saw of a request: the prompt, the workflow and the recipe's persona.
type Seen = Arc<Mutex<Vec<(Value, String, Value)>>>;

/// A host engine that closes with a fixed reason and notes what it saw, for the test to check
/// after the run (a panic inside the engine would only be a failed attempt).
struct Closing(CloseReason, Seen);

impl AgentEngine for Closing {
    fn run(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentReply, AgentError>> {
        let reason = self.0;
        self.1.lock().unwrap().push((
            request.engine_params["prompt"].clone(),
            request.run.workflow_name.clone(),
            request.recipe.extra["persona"].clone(),
        ));
        Box::pin(async move {
            Ok(AgentReply::new(
                reason,
                vec![ChatMessage::new("assistant", "brain the size of a planet")],
            ))
        })
    }
}

#[tokio::test]
async fn host_engines_map_close_reasons_to_outcomes() {
    for (reason, outcome) in [
        (CloseReason::Done, "success"),
        (CloseReason::AutoClose, "success"),
        (CloseReason::Stale, "technical_error"),
        (CloseReason::Stopped, "cancelled"),
        (CloseReason::UserDelete, "cancelled"),
    ] {
        let seen = Seen::default();
        let engine = Closing(reason, seen.clone());
        let p = project(|rt| rt.with_agent_engine("marvin", engine)).await;
        p.recipe("depressed", "engine: marvin\npersona: marvin\n");
        p.workflow("pr-review", &workflow("depressed", ""));
        let v = p.run_pr("pr-review").await;
        let r = p.plan_result(&v);
        assert_eq!(r["outcome"], outcome, "{reason:?}");
        if outcome == "success" {
            assert_eq!(v.vars["plan_output"], "brain the size of a planet");
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{reason:?}: one request, no retry: {seen:?}");
        let (prompt, workflow_name, persona) = &seen[0];
        assert!(
            prompt.as_str().is_some_and(|p| p.starts_with("Analyse")),
            "{prompt}"
        );
        assert_eq!(workflow_name, "pr-review");
        assert_eq!(persona, "marvin");
    }
}

// ---------------------------------------------------------------------------------------------
// Tool calling (§10: agents' tool calls pass the same permission cascade as tool_task).

const TOOLS: &str = "tools: [doc_read, http_request]\n";

fn plan_json() -> Value {
    json!({ "risk": "low", "focus_areas": ["docs"] })
}

fn final_answer() -> Value {
    answer(&json!({ "success": true, "data": plan_json() }).to_string())
}

/// A project with `notes/pr.md`, the `reviewer` recipe (`recipe_extra` added) and the
/// `pr-review` workflow (`head` added), run against `script`.
async fn tool_scenario(
    script: impl FnOnce(&Fake) -> Vec<Value>,
    recipe_extra: &str,
    head: &str,
    setup: impl FnOnce(&Project),
) -> (Project, Fake, RunView) {
    let server = fake(Canned::Reply(String::new())).await;
    server.answer(Canned::Script(script(&server)));
    let p = project(|rt| rt).await;
    std::fs::create_dir_all(p.project.join("notes")).unwrap();
    std::fs::write(
        p.project.join("notes/pr.md"),
        "PR 42 touches the payment migrations.",
    )
    .unwrap();
    setup(&p);
    p.recipe("reviewer", &recipe(&server.base_url(), recipe_extra));
    p.workflow("pr-review", &workflow("reviewer", head));
    let view = p.run_pr("pr-review").await;
    p.assert_key_not_journaled(&view);
    (p, server, view)
}

/// The tool message answering `id` in a request body.
fn tool_message(body: &Value, id: &str) -> Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no tool message for {id} in {body}"))
}

/// The JSON in a tool message's content.
fn tool_result(message: &Value) -> Value {
    serde_json::from_str(message["content"].as_str().unwrap()).unwrap()
}

#[tokio::test]
async fn an_allowed_doc_read_call_is_executed_and_its_result_sent_back() {
    let (p, server, v) = tool_scenario(
        |_| {
            vec![
                tool_call("call_1", "doc_read", json!({ "path": "notes/pr.md" })),
                final_answer(),
            ]
        },
        TOOLS,
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(v.vars["plan_output"], plan_json());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // Both registered tools are offered, with their schemas.
    let tools = &requests[0].1["tools"];
    let names: Vec<&str> = tools
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["doc_read", "http_request"]);
    assert_eq!(tools[0]["type"], "function");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["path"])
    );
    // The second request carries the assistant's call and the tool's result.
    let second = &requests[1].1;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_1");
    let result = tool_result(&tool_message(second, "call_1"));
    assert_eq!(result["content"], "PR 42 touches the payment migrations.");
    assert_eq!(
        second["tools"], *tools,
        "the tools are offered in every round"
    );

    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "success");
    assert_eq!(
        r["output"]["toolCalls"],
        json!([{ "name": "doc_read", "allowed": true, "ok": true }])
    );
    // Usage adds up over both rounds.
    assert_eq!(
        r["output"]["usage"],
        json!({ "promptTokens": 2400, "completionTokens": 600, "totalTokens": 3000 })
    );
}

#[tokio::test]
async fn a_tool_the_workflow_does_not_allow_is_not_executed() {
    let (p, server, v) = tool_scenario(
        |s| {
            vec![
                tool_call(
                    "call_1",
                    "http_request",
                    json!({ "method": "GET", "url": s.target_url() }),
                ),
                final_answer(),
            ]
        },
        TOOLS,
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    assert_eq!(v.status, RunStatus::Done, "the model answers anyway: {v:?}");
    assert_eq!(v.vars["plan_output"], plan_json());

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let error = tool_result(&tool_message(&requests[1].1, "call_1"));
    let error = error["error"].as_str().unwrap();
    assert!(
        error.starts_with("permission denied:") && error.contains("allowedTools [doc_read]"),
        "{error}"
    );
    let r = p.plan_result(&v);
    let calls = &r["output"]["toolCalls"];
    assert_eq!(calls[0]["name"], "http_request");
    assert_eq!(calls[0]["allowed"], false);
    assert_eq!(calls[0]["ok"], false);
    assert!(
        calls[0]["error"]
            .as_str()
            .unwrap()
            .contains("permission denied")
    );

    // A workflow without allowedTools gets the default pool: doc_read yes, http_request no.
    let (p, server, v) = tool_scenario(
        |s| {
            vec![
                tool_call("a", "doc_read", json!({ "path": "notes/pr.md" })),
                tool_call("b", "http_request", json!({ "url": s.target_url() })),
                final_answer(),
            ]
        },
        TOOLS,
        "",
        |_| {},
    )
    .await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    let third = &server.requests()[2].1;
    assert!(tool_result(&tool_message(third, "a"))["content"].is_string());
    let error = tool_result(&tool_message(third, "b"))["error"].to_string();
    assert!(error.contains("default tool pool"), "{error}");
    let calls = &p.plan_result(&v)["output"]["toolCalls"];
    assert_eq!(calls[0]["allowed"], true);
    assert_eq!(calls[1]["allowed"], false);
}

#[tokio::test]
async fn tenant_and_project_denials_win_over_the_workflows_allowed_tools() {
    for level in ["tenant", "project"] {
        let (p, server, v) = tool_scenario(
            |_| {
                vec![
                    tool_call("call_1", "doc_read", json!({ "path": "notes/pr.md" })),
                    final_answer(),
                ]
            },
            TOOLS,
            "allowedTools: [doc_read]",
            |p| {
                let dir = match level {
                    "tenant" => p.project.parent().unwrap().join("_tenant/_vance"),
                    _ => p.project.join("_vance"),
                };
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("settings.yaml"), "tools:\n  denied: [doc_read]\n")
                    .unwrap();
            },
        )
        .await;
        assert_eq!(v.status, RunStatus::Done, "{level}: {v:?}");
        let error = tool_result(&tool_message(&server.requests()[1].1, "call_1"));
        let error = error["error"].as_str().unwrap();
        assert!(
            error.starts_with("permission denied:")
                && error.contains(&format!("the {level}'s tools.denied")),
            "{level}: {error}"
        );
        assert!(!error.contains("payment"), "the document was not read");
        let calls = &p.plan_result(&v)["output"]["toolCalls"];
        assert_eq!(calls[0]["allowed"], false, "{level}");
    }
}

#[tokio::test]
async fn more_tool_rounds_than_max_tool_rounds_is_a_technical_error() {
    let (p, server, v) = tool_scenario(
        // The model never stops calling tools.
        |_| {
            vec![tool_call(
                "again",
                "doc_read",
                json!({ "path": "notes/pr.md" }),
            )]
        },
        &format!(
            "{TOOLS}maxToolRounds: 2\nprices: {{ inputPerMTokUsd: 1.0, outputPerMTokUsd: 2.0 }}\n"
        ),
        "allowedTools: [doc_read]",
        |_| {},
    )
    .await;
    assert_eq!(v.current_state.as_deref(), Some("broken"), "{v:?}");
    assert_eq!(
        server.requests().len(),
        3,
        "two rounds of calls, then the limit"
    );
    let r = p.plan_result(&v);
    assert_eq!(r["outcome"], "technical_error");
    let error = r["error"].as_str().unwrap();
    assert!(error.contains("maxToolRounds (2)"), "{error}");
    assert_eq!(r["output"]["toolCalls"].as_array().unwrap().len(), 2);
    assert_eq!(r["output"]["usage"]["totalTokens"], 4500);
    // The rounds were paid for: 3 × (1200 × $1/M + 300 × $2/M).
    let cost = r["output"]["costUsd"].as_f64().unwrap();
    assert!((cost - 0.0054).abs() < 1e-12, "{cost}");
}

#[tokio::test]
async fn an_agent_s_http_request_is_held_to_the_tenant_s_egress_policy() {
    let script = |s: &Fake| {
        vec![
            tool_call("call_1", "http_request", json!({ "url": s.target_url() })),
            final_answer(),
        ]
    };
    let (_, server, v) = tool_scenario(script, TOOLS, "allowedTools: [http_request]", |_| {}).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 0);
    let error = tool_result(&tool_message(&server.requests()[1].1, "call_1"));
    let error = error["error"].as_str().unwrap();
    assert!(
        error.starts_with("permission denied:") && error.contains("[MAG-EG001]"),
        "{error}"
    );

    // Allowed by the tenant, the same call reaches the target.
    let allow = |p: &Project| {
        let settings = p.project.parent().unwrap().join("_tenant/_vance");
        std::fs::create_dir_all(&settings).unwrap();
        std::fs::write(
            settings.join("settings.yaml"),
            "egress:\n  allowHosts: [\"127.0.0.1\"]\n",
        )
        .unwrap();
    };
    let (_, server, v) = tool_scenario(script, TOOLS, "allowedTools: [http_request]", allow).await;
    assert_eq!(v.status, RunStatus::Done, "{v:?}");
    assert_eq!(server.server.target_hits.load(Ordering::SeqCst), 1);
}
