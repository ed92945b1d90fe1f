//! What passes between the `agent_task` executor and an agent engine: the [`AgentEngine`]
//! trait, its request and reply, and the errors and close reasons an attempt ends with.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use magrathea_core::TaskError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[allow(unused_imports, reason = "rustdoc links")]
use super::OpenAiEngine;
use super::{Recipe, ToolBox};
#[allow(unused_imports, reason = "rustdoc links")]
use crate::Executors;

/// An engine that runs recipes: code (Jeltz, Ford, …), configured by a [`Recipe`].
///
/// The runtime registers [`OpenAiEngine::jeltz`](super::OpenAiEngine::jeltz) as `jeltz` and [`OpenAiEngine::chat`](super::OpenAiEngine::chat) as
/// `chat`; a host replaces or adds engines with [`Executors::with_agent_engine`](crate::Executors::with_agent_engine). A recipe
/// picks its engine with `engine:`.
pub trait AgentEngine: Send + Sync + 'static {
    /// Runs one attempt. The runtime enforces the time limit (`request.timeout`) by dropping
    /// the future, and maps the reply to the task's outcome by [`AgentEngine::reply_format`].
    fn run(&self, request: AgentRequest) -> BoxFuture<'_, Result<AgentReply, AgentError>>;

    /// How the reply becomes the task's outcome; [`ReplyFormat::LastMessage`] unless the
    /// engine speaks the Jeltz wrapper.
    fn reply_format(&self) -> ReplyFormat {
        ReplyFormat::LastMessage
    }
}

/// How an engine's reply becomes an `agent_task` outcome (reference §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyFormat {
    /// Jeltz: the last assistant message is a `{success, data}` wrapper validated against
    /// `params.schema`.
    Wrapper,
    /// The close reason decides; the last assistant message is the output.
    LastMessage,
}

/// An API key, read at call time. Its `Debug` does not show it and it is not serialisable.
#[derive(Clone)]
pub struct ApiKey(pub(super) String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key, for the `Authorization` header.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Who asks: the run and state an attempt belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AgentRunInfo {
    /// The workflow run.
    pub run_id: String,
    /// The state (the task's journaled label).
    pub state: String,
    /// The attempt, from 1.
    pub attempt: u32,
    /// Stable across re-executions of the same attempt: pass it on to dedupe.
    pub idempotency_key: String,
    /// `tenant/project`.
    pub scope: String,
    /// The workflow.
    pub workflow_name: String,
    /// Who started the run.
    pub started_by: String,
    /// The workflow's `allowedTools:` (empty when it declares none; [`AgentRequest::tools`]
    /// applies the cascade).
    pub allowed_tools: Vec<String>,
}

/// One attempt of an `agent_task`, as handed to an [`AgentEngine`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentRequest {
    /// The recipe's name (`recipe:` of the state).
    pub recipe_name: String,
    /// The recipe.
    pub recipe: Recipe,
    /// The state's resolved `params:` (`prompt`, `schema`, engine-specific fields).
    pub engine_params: Value,
    /// The run.
    pub run: AgentRunInfo,
    /// The key named by the recipe's `apiKeyEnv`, if it names one.
    pub api_key: Option<ApiKey>,
    /// The attempt's time limit (the runtime enforces it too).
    pub timeout: Option<Duration>,
    /// The recipe's tools, permission-checked per call (empty without `tools:`).
    pub tools: ToolBox,
    /// The most bytes of output the task may return (the engine's
    /// [`TaskOutputLimit`](magrathea_core::TaskOutputLimit)). An engine that reads its reply
    /// from a service stops reading once the reply is clearly past it, so an oversized reply
    /// never sits whole in memory.
    pub output_limit: Option<usize>,
    /// Where the engine may connect, in a served tree: the tenant's `egress:` settings, as
    /// for the `http_request` tool (private, loopback and reserved addresses refused unless
    /// listed). `None` for the owner's own command, which may reach anything. The built-in
    /// engines enforce it; a host engine that makes its own connections should too.
    pub egress: Option<crate::egress::EgressPolicy>,
    /// What the attempt's replies have consumed so far. An engine adds each reply's usage as
    /// it arrives, so an attempt that fails or runs out of time after paid rounds still
    /// counts them against the run's cost bound (`bounds.maxTotalCostUsd`).
    pub spent: UsageMeter,
}

/// Why an engine's conversation ended (reference §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CloseReason {
    /// The engine finished.
    Done,
    /// The engine closed itself automatically after finishing.
    AutoClose,
    /// The process went stale (→ `technical_error`).
    Stale,
    /// Stopped (→ `cancelled`).
    Stopped,
    /// Archived (→ `cancelled`).
    Archived,
    /// Deleted by a user (→ `cancelled`).
    UserDelete,
    /// Abandoned (→ `cancelled`).
    Abandoned,
}

/// A chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The text.
    pub content: String,
}

impl ChatMessage {
    /// A message.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// Token usage of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt (input) tokens.
    pub prompt_tokens: u64,
    /// Completion (output) tokens.
    pub completion_tokens: u64,
    /// Total tokens.
    pub total_tokens: u64,
}

impl Usage {
    /// `self` with `other` added.
    pub fn plus(self, other: Usage) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            total_tokens: self.total_tokens.saturating_add(other.total_tokens),
        }
    }
}

/// The usage of one attempt's replies so far, shared between the engine and the runtime
/// ([`AgentRequest::spent`]); clones share the tally.
#[derive(Debug, Clone, Default)]
pub struct UsageMeter(Arc<Mutex<Option<Usage>>>);

impl UsageMeter {
    /// Adds one reply's usage.
    pub fn add(&self, usage: Usage) {
        let mut total = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        *total = Some(total.unwrap_or_default().plus(usage));
    }

    /// The usage so far; `None` when no reply reported any.
    pub fn total(&self) -> Option<Usage> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What an engine answers.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentReply {
    /// Why the conversation ended.
    pub close_reason: CloseReason,
    /// The conversation; the last `assistant` message is the answer.
    pub messages: Vec<ChatMessage>,
    /// Token usage, if known.
    pub usage: Option<Usage>,
    /// The cost, if the engine knows it; otherwise the recipe's `prices` price `usage`.
    pub cost_usd: Option<f64>,
}

impl AgentReply {
    /// A reply without usage.
    pub fn new(close_reason: CloseReason, messages: Vec<ChatMessage>) -> Self {
        Self {
            close_reason,
            messages,
            usage: None,
            cost_usd: None,
        }
    }

    /// With token usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// With the engine's own cost figure.
    pub fn with_cost_usd(mut self, cost: f64) -> Self {
        self.cost_usd = Some(cost);
        self
    }

    /// The text of the last assistant message.
    pub fn last_assistant(&self) -> Option<&str> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.role == "assistant")
            .map(|m| m.content.as_str())
    }
}

/// Why an engine produced no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The endpoint could not be reached or answered with an error (→ `technical_error`).
    #[error("{0}")]
    Transport(String),
    /// The recipe or the task's params are unusable (→ `technical_error`).
    #[error("{0}")]
    Config(String),
    /// The call ran out of time (→ `timeout`).
    #[error("{0}")]
    Timeout(String),
    /// The engine's process was stopped (→ `cancelled`).
    #[error("{0}")]
    Cancelled(String),
    /// The model kept calling tools beyond the recipe's `maxToolRounds` (→ `technical_error`);
    /// `usage` is what the rounds consumed, so it still counts against the run's cost bound.
    #[error("{message}")]
    ToolRounds {
        /// What happened.
        message: String,
        /// The usage of all rounds, if known.
        usage: Option<Usage>,
    },
}

impl AgentError {
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Self::Transport(_) | Self::Config(_) | Self::ToolRounds { .. } => TaskError::TECHNICAL,
            Self::Timeout(_) => TaskError::TIMEOUT,
            Self::Cancelled(_) => TaskError::CANCELLED,
        }
    }
}
