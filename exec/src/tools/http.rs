//! `http_request`: one HTTP(S) request.
//!
//! Params: `method` (default `GET`), `url` (`http` or `https`), `headers` (name → value),
//! `body` (a string is sent as is; any other JSON value is sent as JSON with
//! `content-type: application/json` unless given), `timeoutSeconds` (default 30, covers
//! connecting, sending and reading the whole response), `maxResponseBytes` (default 1 MiB).
//!
//! Result: `{status, headers, body}`. A status below 500 is a `success`: workflows route on
//! `status` with a condition. `headers` maps lower-case names to values (repeated headers
//! joined with `, `). `body` is the parsed JSON when the response's content type is JSON
//! and parses, else the text (invalid UTF-8 replaced).
//!
//! Failures are `technical_error`: a 5xx answer (reference §4.2, "Tool/API/Shell infra broken
//! (IOException, 5xx, …)"; the error's output holds `status`, `headers` and `body` beside
//! `error`), invalid URL, connection errors, timeouts, and a response
//! body larger than `maxResponseBytes` or than the calling task's output limit (the engine's
//! [`TaskOutputLimit`](magrathea_core::TaskOutputLimit), 4 MiB by default), whichever is
//! lower: `[MAG-BD020]`, an error rather than a silently truncated body. The body is read as
//! a stream and reading stops at the limit, so an oversized or endless body never sits whole
//! in memory.
//! Redirects are followed (at most 10).
//!
//! Two tenant settings hold whoever calls the tool (a `tool_task` or an agent): the project
//! must be allowed to make requests at all (`execution.httpRequest`, see
//! [`policy`](crate::policy); `[MAG-PL001]`), and every destination — the URL, each redirect
//! hop, each address a name resolves to — must pass the egress policy (`egress:`, see
//! [`egress`](crate::egress); `[MAG-EG001]`). Both refusals are `permission_error`.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use futures::future::BoxFuture;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::body::{BodyError, read_capped};
use crate::documents::DocumentSource;
use crate::egress::{EgressPolicy, HostVerdict};
use crate::policy::{self, TaskType};

const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;
const MAX_REDIRECTS: usize = 10;

pub(crate) struct HttpRequest {
    docs: DocumentSource,
}

/// A destination the egress policy refuses; found again in the error chain of the request.
#[derive(Debug)]
struct Denied(String);

impl std::fmt::Display for Denied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[MAG-EG001] {}", self.0)
    }
}

impl std::error::Error for Denied {}

/// A client bound to `egress`: its resolver and redirect policy enforce it, and it uses no
/// proxy. Built per call, as the policy is the calling tenant's. The `http_request` tool's
/// client, and agent engines' in a served tree.
pub(crate) fn egress_client(egress: &EgressPolicy) -> reqwest::Result<reqwest::Client> {
    let hops = egress.clone();
    reqwest::Client::builder()
        .user_agent(concat!("magrathea/", env!("CARGO_PKG_VERSION")))
        // A proxy would connect to the destination on our behalf, unchecked.
        .no_proxy()
        .dns_resolver(Arc::new(Resolver {
            egress: egress.clone(),
        }))
        .redirect(reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error("too many redirects");
            }
            match check_url(&hops, attempt.url()) {
                Ok(()) => attempt.follow(),
                Err(denied) => attempt.error(denied),
            }
        }))
        .build()
}

/// Why `egress` refuses `url` before any lookup (`[MAG-EG001] …`), if it does.
pub(crate) fn egress_refusal(egress: &EgressPolicy, url: &reqwest::Url) -> Option<String> {
    check_url(egress, url).err().map(|d| d.to_string())
}

/// The egress refusal in a failed request's error chain, if the policy stopped it (a name
/// that resolved to refused addresses only, a redirect to a refused host).
pub(crate) fn egress_denial(e: &reqwest::Error) -> Option<String> {
    denial(e)
}

/// The verdict on a URL's host: refused, or allowed (names are checked again by
/// [`Resolver`] after resolution).
fn check_url(egress: &EgressPolicy, url: &reqwest::Url) -> Result<(), Denied> {
    let Some(host) = url.host_str() else {
        return Err(Denied(format!("url `{url}` has no host")));
    };
    // The URL parser has normalised every IPv4 spelling (`2130706433`, `0x7f.1`, `127.1`) to
    // dotted quads and IPv6 to its bracketed canonical form, so a literal parses here.
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let port = url.port_or_known_default().unwrap_or(0);
    match egress.check_host(host, ip, port) {
        HostVerdict::Denied(m) => Err(Denied(m)),
        HostVerdict::Allowed | HostVerdict::Resolve => Ok(()),
    }
}

/// Resolves names once and hands the connector only the addresses the policy allows, so the
/// connection goes to an address that was checked (no second lookup after the check).
struct Resolver {
    egress: EgressPolicy,
}

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let egress = self.egress.clone();
        Box::pin(async move {
            let host = name.as_str().to_string();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let listed = egress.allow_private || egress.host_listed(&host);
            let kept: Vec<SocketAddr> = addrs
                .iter()
                .copied()
                .filter(|a| listed || egress.address_allowed(a.ip()))
                .collect();
            if kept.is_empty() && !addrs.is_empty() {
                let shown: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
                return Err(Box::new(Denied(format!(
                    "{host} resolves to private, loopback or reserved addresses only ({}): add \
                     it to `egress.allowHosts` (or set `egress.allowPrivate: true`)",
                    shown.join(", ")
                )))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The most bytes of body to read: the request's `maxResponseBytes`, or the calling task's
/// output limit when that is lower (then `true`: the engine's limit is the one that binds).
fn body_cap(max_response_bytes: u64, output_limit: Option<usize>) -> (u64, bool) {
    match output_limit.map(|l| l as u64) {
        Some(l) if l < max_response_bytes => (l, true),
        _ => (max_response_bytes, false),
    }
}

/// The settings file a refusal names, relative to the tree.
fn settings_file(ctx: &ToolContext) -> String {
    format!("{}/_tenant/_vance/settings.yaml", ctx.tenant)
}

/// The refusal in `e`'s source chain, if the egress policy stopped the request.
fn denial(e: &reqwest::Error) -> Option<String> {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = src {
        if let Some(d) = s.downcast_ref::<Denied>() {
            return Some(d.to_string());
        }
        src = s.source();
    }
    None
}

impl HttpRequest {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self { docs }
    }

    /// A client bound to `egress` (see [`egress_client`]).
    fn client(&self, egress: &EgressPolicy) -> Result<reqwest::Client, ToolError> {
        egress_client(egress)
            .map_err(|e| ToolError::Failed(format!("cannot build the HTTP client: {e}")))
    }

    async fn run(&self, params: Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        policy::check(&self.docs, &ctx.scope(), TaskType::HttpRequest)
            .map_err(ToolError::PermissionDenied)?;
        let egress = self.docs.tenant_settings(&ctx.scope()).egress;
        let text = |k: &str| params.get(k).and_then(Value::as_str);
        let method = text("method").unwrap_or("GET").to_ascii_uppercase();
        let method = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|_| ToolError::InvalidParams(format!("invalid HTTP method `{method}`")))?;
        let url = text("url").unwrap_or_default();
        let url = reqwest::Url::parse(url)
            .map_err(|e| ToolError::InvalidParams(format!("invalid url `{url}`: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::InvalidParams(format!(
                "url `{url}` must be http or https"
            )));
        }
        check_url(&egress, &url)
            .map_err(|d| ToolError::PermissionDenied(format!("{d} (in {})", settings_file(ctx))))?;
        let timeout = params
            .get("timeoutSeconds")
            .and_then(Value::as_f64)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        if !(timeout > 0.0 && timeout.is_finite()) {
            return Err(ToolError::InvalidParams(format!(
                "timeoutSeconds must be positive, got {timeout}"
            )));
        }
        let max = params
            .get("maxResponseBytes")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
        let mut headers = HeaderMap::new();
        if let Some(map) = params.get("headers").and_then(Value::as_object) {
            for (k, v) in map {
                let name = HeaderName::from_bytes(k.as_bytes())
                    .map_err(|_| ToolError::InvalidParams(format!("invalid header name `{k}`")))?;
                let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                let value = HeaderValue::from_str(&v).map_err(|_| {
                    ToolError::InvalidParams(format!("invalid value for header `{k}`"))
                })?;
                headers.append(name, value);
            }
        }
        let body = match params.get("body") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone().into_bytes()),
            Some(other) => {
                if !headers.contains_key(CONTENT_TYPE) {
                    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                }
                Some(other.to_string().into_bytes())
            }
        };
        let mut req = self
            .client(&egress)?
            .request(method.clone(), url.clone())
            .headers(headers)
            .timeout(crate::saturating_secs(timeout));
        if let Some(b) = body {
            req = req.body(b);
        }
        let describe = |e: reqwest::Error| {
            if let Some(d) = denial(&e) {
                ToolError::PermissionDenied(format!(
                    "{method} {url}: {d} (in {})",
                    settings_file(ctx)
                ))
            } else if e.is_timeout() {
                ToolError::Failed(format!("{method} {url} timed out after {timeout} s"))
            } else {
                let mut msg = e.to_string();
                let mut src = std::error::Error::source(&e);
                while let Some(s) = src {
                    msg.push_str(": ");
                    msg.push_str(&s.to_string());
                    src = s.source();
                }
                ToolError::Failed(format!("{method} {url}: {msg}"))
            }
        };
        let resp = req.send().await.map_err(describe)?;
        let status = resp.status().as_u16();
        let mut out_headers = Map::new();
        for (k, v) in resp.headers() {
            let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
            match out_headers.get_mut(k.as_str()) {
                Some(Value::String(prev)) => {
                    prev.push_str(", ");
                    prev.push_str(&v);
                }
                _ => {
                    out_headers.insert(k.as_str().to_string(), Value::String(v));
                }
            }
        }
        let is_json = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let ct = ct.to_ascii_lowercase();
                ct.contains("/json") || ct.contains("+json")
            });
        let (cap, by_engine) = body_cap(max, ctx.output_limit);
        let buf = match read_capped(resp, cap).await {
            Ok(buf) => buf,
            Err(BodyError::Transport(e)) => return Err(describe(e)),
            Err(BodyError::TooLarge) if by_engine => {
                return Err(ToolError::Failed(format!(
                    "[MAG-BD020] {method} {url}: the response body is larger than {cap} bytes, \
                     the most a task's output may hold (EngineBuilder::max_task_output_bytes); \
                     reading stopped there"
                )));
            }
            Err(BodyError::TooLarge) => {
                return Err(ToolError::Failed(format!(
                    "[MAG-BD020] {method} {url}: the response body is larger than \
                     maxResponseBytes ({cap}); reading stopped there"
                )));
            }
        };
        let body = is_json
            .then(|| serde_json::from_slice::<Value>(&buf).ok())
            .flatten()
            .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&buf).into_owned()));
        let response = json!({ "status": status, "headers": out_headers, "body": body });
        if status >= 500 {
            return Err(ToolError::ServiceFailed {
                message: format!(
                    "{method} {url}: the server answered {status}, a failure of the service \
                     (technical_error; its answer is in the output)"
                ),
                response,
            });
        }
        Ok(response)
    }
}

impl Tool for HttpRequest {
    fn name(&self) -> &str {
        "http_request"
    }

    fn description(&self) -> &str {
        "Sends one HTTP request and returns the response's status, headers and body (parsed \
         JSON for JSON responses). A status below 500 is a result; a 5xx answer, transport \
         errors, timeouts and oversized responses fail."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["url"],
            "properties": {
                "method": {
                    "type": "string",
                    "description": "HTTP method, default GET",
                    "default": "GET"
                },
                "url": { "type": "string", "format": "uri", "description": "http or https URL" },
                "headers": {
                    "type": "object",
                    "additionalProperties": { "type": "string" },
                    "description": "request headers"
                },
                "body": {
                    "description": "a string is sent as is; other JSON values as JSON"
                },
                "timeoutSeconds": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "default": DEFAULT_TIMEOUT_SECONDS
                },
                "maxResponseBytes": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_MAX_RESPONSE_BYTES
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
