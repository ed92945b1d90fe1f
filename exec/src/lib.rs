//! Magrathea's task executors, usable from YAML and from code: `shell_task` (a process),
//! `script_task` (sandboxed JavaScript), `tool_task` (a tool registry behind the permission
//! cascade) and `agent_task` (recipes on OpenAI-compatible endpoints), and the project tree
//! they run in ([`DocumentSource`], [`Scope`], [`ProjectSettings`], lanes).
//!
//! Each executor is a journaled task of the replay core: a typed input ([`ShellInput`],
//! [`ScriptInput`], [`ToolInput`], [`AgentInput`]) becomes an [`ExecCall`], which becomes a
//! core [`TaskCall`](magrathea_core::TaskCall) that carries the executor's body. The journal
//! holds the typed input and a small [`RunContext`] (scope, workflow, who started it, allowed
//! tools), nothing more; what a step may see of its run but must not journal (the YAML run's
//! parameters and variables, which grow with the run) travels as [`RunData`] inside the call.
//!
//! ```no_run
//! # #[cfg(all(feature = "shell", feature = "tools"))]
//! # mod demo {
//! # use magrathea_core::WorkflowContext;
//! use magrathea_exec::{DocumentSource, Executors, Scope, ShellInput, ToolInput};
//! # async fn demo(ctx: WorkflowContext) {
//! let executors = Executors::new(DocumentSource::new("/srv/projects"));
//! // In a workflow: a shell command in the project's `workspace` directory, journaled.
//! let scope = Scope::new("acme", "shop");
//! let call = executors.call(ShellInput::new("cargo test")).scope(&scope).label("test");
//! let result = ctx.task_with(call.into_task_call()).await;
//! // A tool, through the permission cascade of `acme/shop`.
//! let call = executors
//!     .call(ToolInput::new("doc_read", serde_json::json!({"path": "README.md"})))
//!     .scope(&scope);
//! let read = ctx.task_with(call.into_task_call()).await;
//! # }
//! # }
//! ```
//!
//! With the `magrathea` crate's `exec` feature, `Context::exec` runs the same calls with typed
//! outputs from a `#[workflow]`.
//!
//! # Features
//!
//! Every executor is behind a feature (all on by default): `shell`, `script` (brings the
//! QuickJS engine), `tools` (brings the HTTP client of the `http_request` tool) and `agent`
//! (implies `tools`). Without any of them the crate is the project tree and the call plumbing.

// Helpers shared by several executors go unused when a build leaves those executors out.
#![cfg_attr(
    not(all(
        feature = "shell",
        feature = "script",
        feature = "tools",
        feature = "agent"
    )),
    allow(dead_code, unused_imports, unused_variables)
)]

#[cfg(feature = "tools")]
pub mod beneath;
mod body;
pub mod bounds;
mod call;
pub mod confine;
mod documents;
pub mod egress;
mod executors;
mod file_cache;
mod lanes;
pub mod policy;
pub mod regular_file;
mod settings;
pub mod settings_check;

#[cfg(feature = "agent")]
pub mod agent;
#[cfg(feature = "script")]
pub mod script;
#[cfg(feature = "shell")]
pub mod shell;
#[cfg(feature = "tools")]
pub mod suggest;
#[cfg(feature = "tools")]
pub mod tools;
#[cfg(any(feature = "shell", feature = "script"))]
mod workspace;
pub mod yaml_text;

pub use bounds::TenantBounds;
pub use call::{ExecCall, IntoExecCall, RunContext, RunData};
pub use documents::{
    DRAFTS_DIR, DocumentError, DocumentSource, HISTORY_DIR, NotUtf8Text, STATE_DIR, Scope,
    check_name, leads_out, root_relative, utf8_position,
};
pub use egress::EgressPolicy;
pub use executors::{Executors, LanePermit};
pub use file_cache::Stamp as FileStamp;
pub use policy::{ExecutionPolicy, TaskType};
pub use settings::{
    LaneSettings, ProjectSettings, SandboxMode, ShellSettings, TenantAgentSettings, TenantSettings,
    TenantShellSettings, TimeoutDefaults,
};

#[cfg(feature = "agent")]
pub use agent::{AgentEngine, AgentInput, AgentOutput};
#[cfg(feature = "script")]
pub use script::{
    HookError, HookHost, HookLogLevel, HookOutcome, HookScript, ScriptInput, run_hook,
};
#[cfg(feature = "shell")]
pub use shell::{ShellInput, ShellOutput, ShellStatus};
#[cfg(feature = "tools")]
pub use tools::{Tool, ToolContext, ToolError, ToolInput};

use std::time::Duration;

use magrathea_core::TaskError;
use serde_json::{Value, json};

/// The longest duration an executor takes from its input: 100 years of 365.25 days, as the
/// YAML front end's limit on document durations.
const MAX_SECS: f64 = 3_155_760_000.0;

/// A number of seconds as a duration, clamped to `0..=100 years`; NaN and negative values give
/// zero. Never panics, unlike `Duration::from_secs_f64`.
pub(crate) fn saturating_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        Duration::ZERO
    } else {
        Duration::from_secs_f64(secs.min(MAX_SECS))
    }
}

/// A positive timeout in seconds: a number or numeric text (what `${…}` resolves to).
pub(crate) fn positive_secs(v: Option<&Value>) -> Option<f64> {
    let v = v?;
    let secs = v
        .as_f64()
        .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))?;
    (secs.is_finite() && secs > 0.0).then_some(secs)
}

/// A `technical_error` that retrying cannot fix, carrying its message as output.
pub(crate) fn technical(msg: String) -> TaskError {
    TaskError::terminal(msg.clone())
        .with_kind(TaskError::TECHNICAL)
        .with_output(json!({ "error": msg }))
}

/// A string field of a spec, empty when absent.
pub(crate) fn text_field(spec: &Value, key: &str) -> String {
    match spec.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An optional, non-empty string field of a spec.
pub(crate) fn opt_text(spec: &Value, key: &str) -> Option<String> {
    Some(text_field(spec, key)).filter(|s| !s.is_empty())
}
