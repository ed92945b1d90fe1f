//! The built-in engines: any OpenAI-compatible chat-completions endpoint.

use std::sync::OnceLock;

use futures::future::BoxFuture;
use serde_json::{Value, json};

use crate::body::{BodyError, read_capped};

use crate::tools::http::{egress_client, egress_denial, egress_refusal};

use super::{
    AgentEngine, AgentError, AgentReply, AgentRequest, ChatMessage, CloseReason,
    DEFAULT_MAX_TOOL_ROUNDS, ReplyFormat, Usage, jeltz,
};

/// The recipe fields the built-in engines understand (besides `engine`).
const KNOWN_FIELDS: &str = "engine, provider, baseUrl, model, apiKeyEnv, temperature, \
                            maxTokens, timeoutSeconds, prices, system, jsonMode, tools, \
                            allowedToolsAdd, maxToolRounds";

pub(crate) const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// What a chat-completions response may hold beyond the task's output limit: its JSON
/// envelope (ids, usage, tool calls' framing). A reply past limit + envelope cannot become an
/// output the engine accepts, so it is not read further.
const REPLY_ENVELOPE_BYTES: usize = 64 * 1024;

/// What the built-in engine does with the task's `params`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `prompt` + `schema` → `{success, data}` (the runtime does the wrapper parse).
    Jeltz,
    /// `prompt` → the last assistant message.
    Chat,
}

/// A built-in engine that talks to an OpenAI-compatible chat-completions endpoint
/// (`POST {baseUrl}/chat/completions`, `Authorization: Bearer <key>`).
///
/// [`OpenAiEngine::jeltz`] is registered as `jeltz`, [`OpenAiEngine::chat`] as `chat`. Without
/// recipe `tools:` an attempt is one request (a reply without text content is an empty
/// assistant message); with them the request carries the OpenAI `tools` array and the engine
/// executes the model's `tool_calls` through the request's tool box (permission-checked) and
/// asks again, for at most the recipe's `maxToolRounds` rounds.
#[derive(Debug)]
pub struct OpenAiEngine {
    mode: Mode,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl OpenAiEngine {
    /// The Jeltz engine: `params.prompt` and `params.schema`, JSON mode, wrapper reply.
    pub fn jeltz() -> Self {
        Self {
            mode: Mode::Jeltz,
            client: OnceLock::new(),
        }
    }

    /// The plain chat engine: `params.prompt`; the last assistant message is the output.
    pub fn chat() -> Self {
        Self {
            mode: Mode::Chat,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<reqwest::Client, AgentError> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"))
            })
            .clone()
            .map_err(AgentError::Transport)
    }

    async fn call(&self, req: AgentRequest) -> Result<AgentReply, AgentError> {
        let recipe = &req.recipe;
        let name = &req.recipe_name;
        if !recipe.extra.is_empty() {
            let keys: Vec<&String> = recipe.extra.keys().collect();
            return Err(AgentError::Config(format!(
                "[MAG-AG003] recipe `{name}`: unknown field(s) {keys:?} for engine `{}` (known: \
                 {KNOWN_FIELDS})",
                recipe.engine
            )));
        }
        if let Some(p) = recipe.provider.as_deref()
            && p != "openai"
        {
            return Err(AgentError::Config(format!(
                "[MAG-AG003] recipe `{name}`: provider `{p}` is not supported; the built-in \
                 engines speak `openai` (chat completions)"
            )));
        }
        // A state's `params.model` and `params.temperature` win over the recipe's, so that
        // one recipe (endpoint, key, prices) serves states that pick their own model.
        let model = match req.engine_params.get("model") {
            Some(Value::String(m)) => Some(m.as_str()),
            None | Some(Value::Null) => recipe.model.as_deref(),
            Some(other) => {
                return Err(AgentError::Config(format!(
                    "[MAG-AG004] agent_task has `params.model` {other}: expected a string"
                )));
            }
        };
        let Some(model) = model else {
            return Err(AgentError::Config(format!(
                "[MAG-AG003] recipe `{name}` has no `model:` (and the state no `params.model`)"
            )));
        };
        let temperature = match req.engine_params.get("temperature") {
            Some(Value::Number(t)) => t.as_f64(),
            None | Some(Value::Null) => recipe.temperature,
            Some(other) => {
                return Err(AgentError::Config(format!(
                    "[MAG-AG004] agent_task has `params.temperature` {other}: expected a number"
                )));
            }
        };
        let Some(prompt) = req.engine_params.get("prompt").and_then(Value::as_str) else {
            return Err(AgentError::Config(
                "[MAG-AG004] agent_task has no `params.prompt` string".into(),
            ));
        };
        let schema = match req.engine_params.get("schema") {
            Some(s) if self.mode == Mode::Jeltz && !s.is_null() => {
                Some(jeltz::normalise_schema(s).map_err(AgentError::Config)?)
            }
            _ => None,
        };
        let mut messages = Vec::new();
        if let Some(system) = recipe.system.as_deref() {
            messages.push(ChatMessage::new("system", system));
        }
        let user = match self.mode {
            Mode::Jeltz => jeltz::user_message(prompt, schema.as_ref()),
            Mode::Chat => prompt.to_string(),
        };
        messages.push(ChatMessage::new("user", user));

        let mut body = json!({ "model": model });
        if let Some(t) = temperature {
            body["temperature"] = json!(t);
        }
        if let Some(n) = recipe.max_tokens {
            body["max_tokens"] = json!(n);
        }
        if self.mode == Mode::Jeltz && recipe.json_mode.unwrap_or(true) {
            body["response_format"] = json!({ "type": "json_object" });
        }
        let specs = req.tools.specs();
        if !specs.is_empty() {
            body["tools"] = Value::Array(specs);
        }
        let base = recipe.base_url.as_deref().unwrap_or(DEFAULT_BASE_URL);
        let url = format!("{}/chat/completions", base.trim_end_matches('/'));
        let max_rounds = recipe.max_tool_rounds.unwrap_or(DEFAULT_MAX_TOOL_ROUNDS);
        // The conversation as sent: assistant tool calls and tool results do not fit
        // `ChatMessage`.
        let mut wire: Vec<Value> = messages
            .iter()
            .map(|m| json!({ "role": m.role, "content": m.content }))
            .collect();
        let mut round = 0;
        loop {
            body["messages"] = Value::Array(wire.clone());
            let reply = self.post(&url, &body, &req).await?;
            if let Some(u) = usage_of(&reply) {
                req.spent.add(u);
            }
            let Some(message) = reply.pointer("/choices/0/message") else {
                return Err(AgentError::Transport(format!(
                    "[MAG-AG005] POST {url}: the response has no `choices[0].message`: {}",
                    shown(&reply.to_string(), &req)
                )));
            };
            let content = message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let calls: &[Value] = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .map_or(&[], Vec::as_slice);
            let finish = reply.pointer("/choices/0/finish_reason");
            if req.tools.is_empty() || calls.is_empty() {
                if !req.tools.is_empty() && finish == Some(&json!("tool_calls")) {
                    return Err(AgentError::Transport(format!(
                        "[MAG-AG005] POST {url}: finish_reason `tool_calls` without \
                         `choices[0].message.tool_calls`: {}",
                        shown(&reply.to_string(), &req)
                    )));
                }
                messages.push(ChatMessage::new("assistant", content));
                break;
            }
            if round >= max_rounds {
                return Err(AgentError::ToolRounds {
                    message: format!(
                        "[MAG-AG010] recipe `{name}`: the model still calls tools after \
                         maxToolRounds ({max_rounds}) rounds"
                    ),
                    usage: req.spent.total(),
                });
            }
            round += 1;
            let calls = wire_calls(calls, round);
            wire.push(json!({
                "role": "assistant",
                "content": message.get("content").cloned().unwrap_or(Value::Null),
                "tool_calls": calls,
            }));
            messages.push(ChatMessage::new("assistant", content));
            for call in &calls {
                let id = call.get("id").cloned().unwrap_or(Value::Null);
                let function = call.get("function").unwrap_or(&Value::Null);
                let tool = function
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let arguments = function.get("arguments").cloned().unwrap_or(Value::Null);
                let result = match req.tools.call(tool, arguments).await {
                    Ok(v) => v.to_string(),
                    Err(e) => json!({ "error": e.to_string() }).to_string(),
                };
                wire.push(json!({ "role": "tool", "tool_call_id": id, "content": result }));
                messages.push(ChatMessage::new("tool", result));
            }
        }
        let mut out = AgentReply::new(CloseReason::Done, messages);
        out.usage = req.spent.total();
        Ok(out)
    }

    /// The client for `req`: the shared one, or in a served tree one bound to the tenant's
    /// egress policy (the endpoint refused before anything is sent when the policy says so).
    fn client_for(&self, url: &str, req: &AgentRequest) -> Result<reqwest::Client, AgentError> {
        let Some(egress) = &req.egress else {
            return self.client();
        };
        let parsed = reqwest::Url::parse(url)
            .map_err(|e| AgentError::Config(format!("[MAG-AG005] POST {url}: invalid URL: {e}")))?;
        if let Some(refused) = egress_refusal(egress, &parsed) {
            return Err(AgentError::Transport(format!(
                "[MAG-AG005] POST {url}: {refused} (the tenant's `egress:` in \
                 _tenant/_vance/settings.yaml)"
            )));
        }
        egress_client(egress)
            .map_err(|e| AgentError::Transport(format!("cannot build the HTTP client: {e}")))
    }

    /// One chat-completions request; the parsed response.
    async fn post(&self, url: &str, body: &Value, req: &AgentRequest) -> Result<Value, AgentError> {
        let mut http = self.client_for(url, req)?.post(url).json(body);
        if let Some(key) = &req.api_key {
            http = http.bearer_auth(key.expose());
        }
        if let Some(t) = req.timeout {
            http = http.timeout(t);
        }
        let response = http.send().await.map_err(|e| transport(url, e))?;
        let status = response.status();
        let limit = req
            .output_limit
            .unwrap_or(magrathea_core::DEFAULT_MAX_TASK_OUTPUT_BYTES);
        let cap = limit.saturating_add(REPLY_ENVELOPE_BYTES) as u64;
        let bytes = match read_capped(response, cap).await {
            Ok(bytes) => bytes,
            Err(BodyError::Transport(e)) => return Err(transport(url, e)),
            Err(BodyError::TooLarge) => {
                return Err(AgentError::Transport(format!(
                    "[MAG-BD020] POST {url}: the model service's response is larger than {cap} \
                     bytes: the {limit} bytes a task's output may hold \
                     (EngineBuilder::max_task_output_bytes) plus {REPLY_ENVELOPE_BYTES} for \
                     the response's envelope; reading stopped there (lower the recipe's \
                     `maxTokens`, or ask for a shorter answer)"
                )));
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            return Err(AgentError::Transport(format!(
                "[MAG-AG005] POST {url}: HTTP {status}: {}",
                shown(&text, req)
            )));
        }
        serde_json::from_str(&text).map_err(|e| {
            AgentError::Transport(format!(
                "[MAG-AG005] POST {url}: the response is not chat-completion JSON ({e}): {}",
                shown(&text, req)
            ))
        })
    }
}

/// The tool calls of a reply as the conversation sends them back: each with an id of its own
/// (one the service left out or left empty is made up, `call_<round>_<n>`, unlike every other
/// id of the reply: a result names its call by it) and its arguments as JSON text, as OpenAI's
/// protocol has both; what the service sent is otherwise kept.
fn wire_calls(calls: &[Value], round: u32) -> Vec<Value> {
    let given = |call: &Value| {
        call.get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty())
            .map(str::to_owned)
    };
    let mut taken: std::collections::HashSet<String> = calls.iter().filter_map(given).collect();
    let mut made = 0usize;
    calls
        .iter()
        .map(|call| {
            let mut call = call.clone();
            let missing = given(&call).is_none();
            let Some(fields) = call.as_object_mut() else {
                return call;
            };
            if missing {
                let id = loop {
                    let id = format!("call_{round}_{made}");
                    made += 1;
                    if taken.insert(id.clone()) {
                        break id;
                    }
                };
                fields.insert("id".into(), json!(id));
            }
            if let Some(args) = fields
                .get_mut("function")
                .and_then(Value::as_object_mut)
                .and_then(|f| f.get_mut("arguments"))
                && !args.is_string()
                && !args.is_null()
            {
                *args = Value::String(args.to_string());
            }
            call
        })
        .collect()
}

/// A token count of a reply's `usage`: a whole number, else a number or numeric text read up
/// to the next whole number (a count is never priced below what was written), capped at what
/// a `u64` holds; `None` for anything else.
fn token_count(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.trim().parse::<f64>().ok()?,
        _ => return None,
    };
    // `as` saturates: a count past u64's range is the most there is.
    (f.is_finite() && f >= 0.0).then(|| f.ceil() as u64)
}

fn usage_of(reply: &Value) -> Option<Usage> {
    reply.get("usage").filter(|u| u.is_object()).map(|u| {
        let n = |k: &str| u.get(k).and_then(token_count);
        let (p, c) = (
            n("prompt_tokens").unwrap_or(0),
            n("completion_tokens").unwrap_or(0),
        );
        Usage {
            prompt_tokens: p,
            completion_tokens: c,
            // A total the service does not split is priced as such (see `cost_of`).
            total_tokens: n("total_tokens").unwrap_or(0).max(p.saturating_add(c)),
        }
    })
}

impl AgentEngine for OpenAiEngine {
    fn run(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentReply, AgentError>> {
        Box::pin(self.call(request))
    }

    fn reply_format(&self) -> ReplyFormat {
        match self.mode {
            Mode::Jeltz => ReplyFormat::Wrapper,
            Mode::Chat => ReplyFormat::LastMessage,
        }
    }
}

fn transport(url: &str, e: reqwest::Error) -> AgentError {
    if let Some(refused) = egress_denial(&e) {
        return AgentError::Transport(format!(
            "[MAG-AG005] POST {url}: {refused} (the tenant's `egress:` in \
             _tenant/_vance/settings.yaml)"
        ));
    }
    let e = e.without_url();
    if e.is_timeout() {
        AgentError::Timeout(format!("[MAG-AG006] POST {url}: timed out: {e}"))
    } else {
        AgentError::Transport(format!("[MAG-AG005] POST {url}: {e}"))
    }
}

/// The start of a response quoted in an error: the request's API key taken out of it first
/// (an endpoint may echo the request's headers), so that a key cut short by the quote's end
/// is not left in it.
fn shown(text: &str, req: &AgentRequest) -> String {
    let text = match req
        .api_key
        .as_ref()
        .map(|k| k.expose())
        .filter(|k| !k.is_empty())
    {
        Some(key) => std::borrow::Cow::Owned(text.replace(key, "<redacted>")),
        None => std::borrow::Cow::Borrowed(text),
    };
    clip(&text, 500)
}

fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_usage_is_read_whatever_numbers_the_service_writes() {
        let usage = |u: Value| usage_of(&json!({ "usage": u })).unwrap();
        let u = usage(json!({"prompt_tokens": "10", "completion_tokens": 5}));
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (10, 5, 15)
        );
        let u = usage(json!({"prompt_tokens": 10.2, "completion_tokens": 5}));
        assert_eq!(u.prompt_tokens, 11, "never counted below what was written");
        let u = usage(json!({"prompt_tokens": 1e30, "completion_tokens": 5}));
        assert_eq!(u.prompt_tokens, u64::MAX);
        assert_eq!(u.total_tokens, u64::MAX);
        let u = usage(json!({"total_tokens": 99}));
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (0, 0, 99)
        );
        let u = usage(json!({"prompt_tokens": "many", "completion_tokens": -3}));
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (0, 0, 0)
        );
        assert!(usage_of(&json!({ "usage": 7 })).is_none());
    }

    #[test]
    fn a_tool_call_goes_back_with_an_id_of_its_own_and_its_arguments_as_text() {
        let sent = json!({"type": "function", "function": {"name": "doc_read", "arguments": {"path": "a"}}});
        let back = wire_calls(std::slice::from_ref(&sent), 2);
        assert_eq!(back[0]["id"], "call_2_0");
        assert_eq!(back[0]["function"]["arguments"], "{\"path\":\"a\"}");
        assert_eq!(back[0]["type"], "function");
        let well_formed = json!({"id": "abc", "function": {"name": "x", "arguments": "{}"}});
        let back = wire_calls(std::slice::from_ref(&well_formed), 1);
        assert_eq!(
            back.as_slice(),
            std::slice::from_ref(&well_formed),
            "a well-formed call is sent back as it came"
        );
        // Made-up ids are unlike the ids the service gave, and an empty id is none.
        let calls = [
            json!({"function": {"name": "x", "arguments": "{}"}}),
            json!({"id": "call_1_0", "function": {"name": "x", "arguments": "{}"}}),
            json!({"id": "", "function": {"name": "x", "arguments": "{}"}}),
        ];
        let ids: Vec<Value> = wire_calls(&calls, 1)
            .iter()
            .map(|c| c["id"].clone())
            .collect();
        assert_eq!(
            ids,
            [json!("call_1_1"), json!("call_1_0"), json!("call_1_2")]
        );
    }
}
