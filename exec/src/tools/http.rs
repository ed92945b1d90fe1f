//! `http_request`: one HTTP(S) request.
//!
//! Params: `method` (default `GET`), `url` (`http` or `https`), `headers` (name → value),
//! `body` (a string is sent as is; any other JSON value is sent as JSON with
//! `content-type: application/json` unless given), `timeoutSeconds` (default 30, covers
//! connecting, sending and reading the whole response), `maxResponseBytes` (default 1 MiB).
//!
//! Result: `{status, headers, body}`. Every HTTP status is a `success`: workflows route on
//! `status` with a condition. `headers` maps lower-case names to values (repeated headers
//! joined with `, `). `body` is the parsed JSON when the response's content type is JSON
//! and parses, else the text (invalid UTF-8 replaced).
//!
//! Failures are `technical_error`: invalid URL, connection errors, timeouts, and a response
//! larger than `maxResponseBytes` (an error rather than a silently truncated body).
//! Redirects are followed (at most 10). There is no egress filter: restrict who may call
//! the tool through the permission cascade.

use std::sync::OnceLock;

use futures::future::BoxFuture;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::{Tool, ToolContext, ToolError};

const DEFAULT_TIMEOUT_SECONDS: f64 = 30.0;
const DEFAULT_MAX_RESPONSE_BYTES: u64 = 1024 * 1024;

pub(crate) struct HttpRequest {
    client: OnceLock<reqwest::Client>,
}

impl HttpRequest {
    pub(crate) fn new() -> Self {
        Self {
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, ToolError> {
        if let Some(c) = self.client.get() {
            return Ok(c);
        }
        let client = reqwest::Client::builder()
            .user_agent(concat!("magrathea/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ToolError::Failed(format!("cannot build the HTTP client: {e}")))?;
        Ok(self.client.get_or_init(|| client))
    }

    async fn run(&self, params: Value) -> Result<Value, ToolError> {
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
            .client()?
            .request(method.clone(), url.clone())
            .headers(headers)
            .timeout(crate::saturating_secs(timeout));
        if let Some(b) = body {
            req = req.body(b);
        }
        let describe = |e: reqwest::Error| {
            if e.is_timeout() {
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
        let mut resp = req.send().await.map_err(describe)?;
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
        let too_big = || {
            ToolError::Failed(format!(
                "{method} {url}: the response body exceeds maxResponseBytes ({max})"
            ))
        };
        if resp.content_length().is_some_and(|n| n > max) {
            return Err(too_big());
        }
        let is_json = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                let ct = ct.to_ascii_lowercase();
                ct.contains("/json") || ct.contains("+json")
            });
        let mut buf: Vec<u8> = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(describe)? {
            if (buf.len() + chunk.len()) as u64 > max {
                return Err(too_big());
            }
            buf.extend_from_slice(&chunk);
        }
        let body = is_json
            .then(|| serde_json::from_slice::<Value>(&buf).ok())
            .flatten()
            .unwrap_or_else(|| Value::String(String::from_utf8_lossy(&buf).into_owned()));
        Ok(json!({ "status": status, "headers": out_headers, "body": body }))
    }
}

impl Tool for HttpRequest {
    fn name(&self) -> &str {
        "http_request"
    }

    fn description(&self) -> &str {
        "Sends one HTTP request and returns the response's status, headers and body (parsed \
         JSON for JSON responses). Any HTTP status is a result; transport errors, timeouts \
         and oversized responses fail."
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
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(self.run(params))
    }
}
