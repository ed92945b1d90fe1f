//! `web_search`: a web search through the search service the tenant names (reference §10,
//! where it is in the default pool).
//!
//! Params: `query` (required), `limit` (results, default 10; a larger one returns 50, one below
//! 1 is refused). Result:
//! `{query, results: [{title, url, snippet}]}`.
//!
//! The service is a SearxNG-compatible JSON endpoint set by the tenant's administrator in
//! `_tenant/_vance/settings.yaml`:
//!
//! ```yaml
//! webSearch:
//!   url: https://search.example.com/search   # asked as `<url>?q=<query>&format=json`
//!   timeoutSeconds: 15                       # default 15
//! ```
//!
//! The request goes through the tenant's egress policy (`egress:`) as `http_request`'s do,
//! but needs no `execution.httpRequest`: searching reads, and the tenant chose the service.
//! Without `webSearch.url` the call ends `technical_error` `[MAG-TL006]`, naming the setting;
//! a failing service (transport error, timeout, a 5xx, an answer that is not its JSON) is
//! `technical_error` too.

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::http::{egress_client, egress_denial, egress_refusal};
use super::{Tool, ToolContext, ToolError};
use crate::body::{BodyError, read_capped};
use crate::documents::DocumentSource;

const DEFAULT_LIMIT: u64 = 10;
const MAX_LIMIT: u64 = 50;
/// The most bytes of a service's answer read.
const MAX_ANSWER_BYTES: u64 = 1024 * 1024;

pub(crate) struct WebSearch {
    docs: DocumentSource,
}

impl WebSearch {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self { docs }
    }

    async fn run(&self, params: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let settings_file = format!("{}/_tenant/_vance/settings.yaml", ctx.tenant);
        let settings = self.docs.tenant_settings(&ctx.scope());
        let Some(service) = settings.web_search.url.as_deref() else {
            return Err(ToolError::Failed(format!(
                "[MAG-TL006] web_search has no search service: set `webSearch.url` (a \
                 SearxNG-compatible JSON endpoint) in {settings_file}"
            )));
        };
        let query = params
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or_else(|| ToolError::InvalidParams("`query` must be a non-empty text".into()))?;
        let limit = match params.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 => n.min(MAX_LIMIT),
                _ => {
                    return Err(ToolError::InvalidParams(format!(
                        "`limit` is {v}: expected a whole number of results from 1 (at most \
                         {MAX_LIMIT} are returned)"
                    )));
                }
            },
        };
        let mut url = reqwest::Url::parse(service).map_err(|e| {
            ToolError::Failed(format!(
                "[MAG-TL006] webSearch.url `{service}` in {settings_file} is no URL: {e}"
            ))
        })?;
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        let egress = settings.egress;
        if let Some(refused) = egress_refusal(&egress, &url) {
            return Err(ToolError::PermissionDenied(format!(
                "web_search: {refused} (in {settings_file})"
            )));
        }
        let failed = |what: String| ToolError::Failed(format!("web_search via {service}: {what}"));
        let client = egress_client(&egress).map_err(|e| failed(e.to_string()))?;
        let transport = |e: reqwest::Error| match egress_denial(&e) {
            Some(d) => ToolError::PermissionDenied(format!("web_search: {d} (in {settings_file})")),
            None if e.is_timeout() => failed("the search service did not answer in time".into()),
            None => failed(e.to_string()),
        };
        let answer = client
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(crate::saturating_secs(
                settings.web_search.timeout_seconds(),
            ))
            .send()
            .await
            .map_err(transport)?;
        let status = answer.status();
        if !status.is_success() {
            return Err(failed(format!("the search service answered {status}")));
        }
        let body = match read_capped(answer, MAX_ANSWER_BYTES).await {
            Ok(body) => body,
            Err(BodyError::Transport(e)) => return Err(transport(e)),
            Err(BodyError::TooLarge) => {
                return Err(failed(format!(
                    "the answer is larger than {MAX_ANSWER_BYTES} bytes"
                )));
            }
        };
        let found: Value = serde_json::from_slice(&body)
            .map_err(|e| failed(format!("the answer is not JSON: {e}")))?;
        let Some(items) = found.get("results").and_then(Value::as_array) else {
            return Err(failed(
                "the answer has no `results` list (expected SearxNG's JSON format)".into(),
            ));
        };
        let text = |item: &Value, key: &str| {
            item.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let results: Vec<Value> = items
            .iter()
            .filter(|item| item.get("url").is_some_and(Value::is_string))
            .take(usize::try_from(limit).unwrap_or(usize::MAX))
            .map(|item| {
                json!({
                    "title": text(item, "title"),
                    "url": text(item, "url"),
                    "snippet": text(item, "content"),
                })
            })
            .collect();
        Ok(json!({ "query": query, "results": results }))
    }
}

impl Tool for WebSearch {
    fn name(&self) -> &str {
        "web_search"
    }

    fn description(&self) -> &str {
        "Searches the web through the tenant's search service and returns the results' titles, \
         URLs and snippets."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["query"],
            "properties": {
                "query": { "type": "string", "description": "what to search for" },
                "limit": {
                    "type": "integer",
                    "description": "most results, default 10, at most 50",
                    "default": DEFAULT_LIMIT
                }
            },
            "additionalProperties": false
        })
    }

    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.run(params, ctx))
    }
}
