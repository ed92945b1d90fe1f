//! The API's error type: a stable code, a message and the HTTP status it answers with.
//!
//! Every error body is `{"error": {"code": "MAG-HTTP-…", "message": "…"}}`; invalid documents
//! add `"diagnostics": ["path:line:column: [MAG-Ynnn] message", …]`, warnings among them
//! marked as `magrathea validate` marks them (`path:line:column: warning: [MAG-Ynnn] …`).
//!
//! No message names a path of the server's disk: documents are named relative to the root
//! (`acme/shop/_vance/workflows/x.yaml`) or to the project. A failure of the server or its
//! store ([`ApiError::internal`]) answers a generic message with a reference that the server
//! logs next to the full error, so an operator can find it and a client learns nothing of the
//! machine.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::Json;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// An error answered to an API client.
#[derive(Debug, Clone)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// A stable code, `MAG-HTTP-…`, for clients and searches.
    pub code: &'static str,
    /// A message for people.
    pub message: String,
    /// Positioned findings of an invalid document (422 only).
    pub diagnostics: Vec<String>,
}

impl ApiError {
    /// An error with a status, a stable code and a message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            diagnostics: Vec::new(),
        }
    }

    /// 401: no token, or a token that is not configured.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "MAG-HTTP-401", message)
    }

    /// 403: the token lacks the route's scope.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "MAG-HTTP-403", message)
    }

    /// 404 for anything outside the caller's tenant and project, or that does not exist;
    /// the two are indistinguishable on purpose.
    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "MAG-HTTP-404", what)
    }

    /// 400: a malformed request.
    pub fn bad_request(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// 422: an invalid workflow document, from the loader's diagnostics (each rendered as
    /// `path:line:column: message`, a warning's as `…: warning: message`), the path of each
    /// shown as `label` says.
    pub fn invalid_diagnostics<'a>(
        diagnostics: impl IntoIterator<Item = &'a magrathea_yaml::Diagnostic>,
        label: impl Fn(&str) -> String,
    ) -> Self {
        Self::invalid_document(
            diagnostics
                .into_iter()
                .map(|d| d.rendered_at(&label(&d.path)))
                .collect(),
        )
    }

    /// 422: an invalid workflow document, with its diagnostics.
    pub fn invalid_document(diagnostics: Vec<String>) -> Self {
        // Warnings are listed beside the errors (`path:line:col: warning: …`), not counted.
        let errors = diagnostics
            .iter()
            .filter(|d| !d.contains(": warning: "))
            .count();
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            code: "MAG-HTTP-422",
            message: format!("invalid workflow document ({errors} error(s))"),
            diagnostics,
        }
    }

    /// The answer to a start the engine refused: 429 `MAG-EN008` when the tenant has as many
    /// runs in progress as it may, 400 for input that cannot be journaled, else 500.
    pub fn from_start(error: magrathea_core::StartError) -> Self {
        use magrathea_core::StartError;
        match error {
            e @ (StartError::TenantFull { .. } | StartError::TenantMemoryFull { .. }) => {
                Self::new(StatusCode::TOO_MANY_REQUESTS, "MAG-EN008", e.to_string())
            }
            StartError::InvalidInput(m) => Self::bad_request("MAG-HTTP-INVALID-PARAMS", m),
            e => Self::internal(e),
        }
    }

    /// 500: a failure of the server or its store. The full error is logged with a reference;
    /// the client gets only the reference (errors of the store or the disk may name files of
    /// the server).
    pub fn internal(error: impl std::fmt::Display) -> Self {
        let reference = next_reference();
        tracing::error!(reference = %reference, error = %error, "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "MAG-HTTP-500",
            format!(
                "internal server error (reference {reference}; the server log has the details)"
            ),
        )
    }
}

/// A reference unique within this process and unlikely to repeat across restarts or across
/// the workers of one store: 32 random bits drawn when the process first needs one, and a
/// counter.
fn next_reference() -> String {
    static PROCESS: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let process = *PROCESS.get_or_init(|| uuid::Uuid::new_v4().as_u128() as u32);
    format!("E{process:08x}-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// The most bytes of an error's message an answer carries: a message that quotes what the
/// client sent (a state's name, a status word) is cut, so a megabyte sent is not a megabyte
/// answered.
pub const MAX_MESSAGE_BYTES: usize = 4096;

/// `message`, cut to [`MAX_MESSAGE_BYTES`] on a character's boundary with the cut said.
fn bounded(message: String) -> String {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message;
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} more bytes cut)",
        &message[..end],
        message.len() - end
    )
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut error = json!({ "code": self.code, "message": bounded(self.message) });
        if !self.diagnostics.is_empty() {
            error["diagnostics"] = json!(self.diagnostics);
        }
        let mut response = (self.status, Json(json!({ "error": error }))).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

impl From<magrathea_core::StoreError> for ApiError {
    fn from(e: magrathea_core::StoreError) -> Self {
        match e {
            // On a shared store: the run's worker did not answer; what became of the request
            // is the message's to say (it names no file of the server).
            e @ magrathea_core::StoreError::Unanswered { .. } => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "MAG-HTTP-WORKER-UNAVAILABLE",
                e.to_string(),
            ),
            e => Self::internal(e),
        }
    }
}

impl From<magrathea_core::DeliverError> for ApiError {
    /// A delivery's error that no route answers in its own way: a store's error as the
    /// store's errors are answered; any other, 500.
    fn from(e: magrathea_core::DeliverError) -> Self {
        match e {
            magrathea_core::DeliverError::Store(e) => e.into(),
            e => Self::internal(e),
        }
    }
}

/// The answer of the router's fallback: no route has this path.
/// Answers the errors the framework makes itself in the API's shape: a query string or a
/// path segment that does not parse (400), a method the route does not take (405, with its
/// `Allow` header), a body over the limit (413). Handlers answer [`ApiError`]s already; this
/// leaves every JSON response, and every success, as it is.
pub(crate) async fn framework_errors(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let allow = response.headers().get(header::ALLOW).cloned();
    // The framework's messages are one short line; more is not read.
    let text = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let error = match status {
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(
            status,
            "MAG-HTTP-405",
            "this route does not take this method; GET /openapi.json lists each route's methods",
        ),
        StatusCode::PAYLOAD_TOO_LARGE => super::body::body_error(status, text),
        s if s.is_client_error() => ApiError::new(
            status,
            "MAG-HTTP-INVALID-REQUEST",
            if text.is_empty() {
                s.canonical_reason().unwrap_or("invalid request").to_owned()
            } else {
                text
            },
        ),
        _ => ApiError::internal(text),
    };
    let mut response = error.into_response();
    if let Some(allow) = allow {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    response
}

pub(crate) async fn no_route() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "MAG-HTTP-NO-ROUTE",
        "no such route; GET /openapi.json lists them",
    )
}

/// A `limit` query parameter as it was written: a whole number, or text that is none (`-1`,
/// `ten`), which the route refuses with its own error rather than the query parser's.
#[derive(Debug, Clone)]
pub(crate) enum QueryLimit {
    /// A whole number.
    Number(usize),
    /// Anything else, as written.
    Invalid(String),
}

impl<'de> serde::Deserialize<'de> for QueryLimit {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Ok(match text.parse() {
            Ok(n) => Self::Number(n),
            // A whole number too large to hold asks for the largest page, as any above it.
            Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
                Self::Number(usize::MAX)
            }
            Err(_) => Self::Invalid(text),
        })
    }
}

impl QueryLimit {
    /// The number, or 400 `MAG-HTTP-INVALID-LIMIT` saying what is expected.
    pub(crate) fn number(&self, max: usize) -> Result<usize, ApiError> {
        match self {
            Self::Number(n) => Ok(*n),
            Self::Invalid(text) => Err(invalid_limit(text, max)),
        }
    }
}

fn invalid_limit(text: &str, max: usize) -> ApiError {
    ApiError::bad_request(
        "MAG-HTTP-INVALID-LIMIT",
        format!(
            "limit `{text}`: expected a whole number of at least 1 (a page holds at most {max})"
        ),
    )
}

/// The `limit` of a page: `max` when absent, at most `max` (a larger one gets `max`); 0 and
/// text that is not a whole number are refused (400 `MAG-HTTP-INVALID-LIMIT`), as a page of
/// nothing is no page.
pub(crate) fn page_limit(limit: Option<&QueryLimit>, max: usize) -> Result<usize, ApiError> {
    match limit.map(|l| l.number(max)).transpose()? {
        Some(0) => Err(invalid_limit("0", max)),
        limit => Ok(limit.unwrap_or(max).min(max)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_internal_error_answers_a_reference_not_its_text() {
        let a = ApiError::internal("cannot open /srv/magrathea/acme/journal.redb: disk full");
        let b = ApiError::internal("the same again");
        assert_eq!(a.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!a.message.contains("/srv"), "{}", a.message);
        assert!(!a.message.contains("disk full"), "{}", a.message);
        assert!(a.message.contains("reference E"), "{}", a.message);
        assert_ne!(a.message, b.message, "each error gets its own reference");
    }

    /// A message quoting a megabyte the client sent answers a few kilobytes.
    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        let sent = "é".repeat(500_000);
        let cut = bounded(format!("unknown state `{sent}`"));
        assert!(cut.len() < MAX_MESSAGE_BYTES + 64, "{}", cut.len());
        assert!(cut.starts_with("unknown state `é"), "{cut:.40}");
        assert!(cut.ends_with("more bytes cut)"), "{} bytes", cut.len());
        assert_eq!(bounded("short".into()), "short");
    }
}
