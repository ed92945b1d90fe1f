//! The shapes of `_vance/settings.yaml` and `_vance/events/<name>.yaml`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::runtime::ProjectSettings;

/// `_vance/settings.yaml` of a project (or of `_tenant`).
#[derive(Debug, JsonSchema)]
#[schemars(
    title = "Magrathea settings",
    description = "Settings of a project or tenant, `_vance/settings.yaml`. Sections not listed here (e.g. event tokens named by an event document's `auth.tokenSetting`) are allowed."
)]
pub struct SettingsDocument {
    /// Lanes, workspaces and shell limits.
    #[serde(flatten)]
    pub project: ProjectSettings,
    /// The tool permission cascade at this level (reference §10).
    pub tools: Option<ToolSettings>,
    /// The reference's name for `tools.allowed` (§10); given both ways, both hold.
    #[serde(rename = "allowedTools")]
    pub allowed_tools: Option<Vec<String>>,
    /// The reference's name for `tools.denied` (§10); the two lists add up.
    pub denied: Option<Vec<String>>,
    /// The tenant's own sections (`execution:`, `egress:`, …): read from
    /// `_tenant/_vance/settings.yaml` only, never from a project's file.
    #[serde(flatten)]
    pub tenant: magrathea_exec::TenantSettings,
}

/// The `tools:` section of the settings. Unknown keys make every tool of the scope denied
/// (fail closed), so the schema refuses them too.
#[derive(Debug, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// The tools allowed at this level; absent puts no restriction here, `[]` allows nothing.
    pub allowed: Option<Vec<String>>,
    /// Tools denied at this level, over every allow.
    pub denied: Option<Vec<String>>,
}

/// `_vance/events/<event>.yaml`: `GET|POST /brain/{tenant}/event/{project}/{event}` starts
/// `workflow` with `params` plus the request's `payload` (reference §8.6).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(
    title = "Magrathea event",
    description = "An event trigger, `_vance/events/<event>.yaml`: a request to /brain/{tenant}/event/{project}/{event} starts `workflow`."
)]
#[non_exhaustive]
pub struct EventDocument {
    /// Audit marker.
    #[serde(default)]
    pub description: Option<String>,
    /// The workflow to start (project, then tenant).
    #[schemars(regex(pattern = r"\S"))]
    pub workflow: String,
    /// The HTTP methods accepted (default `[GET, POST]`, the reference's route); others
    /// answer 405.
    #[serde(default = "get_and_post")]
    #[schemars(with = "Vec<super::words::Words<HttpMethodWords>>", extend("minItems" = 1))]
    pub methods: Vec<String>,
    /// Requires a Bearer token, if set.
    #[serde(default)]
    pub auth: Option<EventAuth>,
    /// Static parameters of the run; the request adds `payload`.
    #[serde(default)]
    pub params: Map<String, Value>,
    /// Also starts `workflow` from `POST /v1/workflow-webhooks/{pathToken}`, with optional
    /// HMAC-SHA256 signatures and delivery dedupe, if set.
    // Boxed: most events have none, and the block is several times the size of the rest.
    #[serde(default)]
    pub webhook: Option<Box<super::WebhookConfig>>,
    /// Starts `workflow` on the engine's own events too (run and approval events), with
    /// `params` plus `event`, the event's JSON; see [`crate::events`].
    #[serde(default)]
    pub subscribe: Option<crate::events::Subscription>,
    /// False switches the document off (default true): its event route answers 409, its
    /// webhook refuses deliveries and its subscription fires nothing, until it says true
    /// again.
    #[serde(default)]
    pub enabled: Option<bool>,
}

/// The `auth:` of an event document.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct EventAuth {
    /// A dotted path into the settings (project, then tenant), e.g. `events.github.token`,
    /// whose value requests must present as `Authorization: Bearer <value>`.
    #[serde(default)]
    pub token_setting: Option<String>,
}

impl EventDocument {
    /// Whether `method` (in any case) is one an event can accept.
    #[must_use]
    pub fn accepts_method(method: &str) -> bool {
        use super::words::WordList;
        HttpMethodWords::WORDS.contains(&method.to_ascii_uppercase().as_str())
    }

    /// Checks what the keys' types cannot: each method is one of [`HttpMethodWords`] (in any
    /// case), and there is at least one.
    pub fn check(&self) -> Result<(), String> {
        use super::words::WordList;
        for method in &self.methods {
            if !Self::accepts_method(method) {
                return Err(format!(
                    "methods: `{method}` is not an HTTP method an event accepts; expected one \
                     of {}",
                    HttpMethodWords::WORDS.join(", ")
                ));
            }
        }
        if self.methods.is_empty() {
            return Err(
                "methods: an event accepts at least one method (default [GET, POST])".into(),
            );
        }
        Ok(())
    }
}

fn get_and_post() -> Vec<String> {
    vec!["GET".into(), "POST".into()]
}

/// HTTP methods an event can accept: its route is `GET|POST` (reference §8.6).
#[derive(Debug)]
pub struct HttpMethodWords;

impl super::words::WordList for HttpMethodWords {
    const NAME: &'static str = "HttpMethod";
    const WORDS: &'static [&'static str] = &["GET", "POST"];
}
