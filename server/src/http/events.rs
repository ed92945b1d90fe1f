//! Event triggers (reference §8.6): `GET|POST /brain/{tenant}/event/{project}/{event}` starts
//! the workflow named by the event document `_vance/events/<event>.yaml` (project, then
//! tenant):
//!
//! ```yaml
//! description: "GitHub PR Hook → pr-review"
//! workflow: pr-review
//! methods: [POST]                    # default [POST]; others answer 405
//! auth:
//!   tokenSetting: events.github.token  # optional: require this Bearer token
//! params:                            # optional static parameters
//!   source: github
//! ```
//!
//! The document is read as [`EventDoc`] (the JSON Schema `schemas/event.schema.json` is
//! generated from it).
//!
//! `auth.tokenSetting` is a dotted path into the project's `_vance/settings.yaml` (falling back
//! to the tenant's `_tenant/_vance/settings.yaml`), e.g. `events: {github: {token: "…"}}`. The
//! request must carry `Authorization: Bearer <that value>`, compared in constant time; a
//! setting that is missing refuses every request (401). Without `auth`, the event is open.
//! API tokens play no part here.
//!
//! The run's parameters are the static `params` plus `payload`: the POST body (JSON, or the
//! body as a string when it is not JSON; absent when empty), or for GET the query parameters
//! as an object. The body is limited to [`EVENT_BODY_LIMIT`] (413 past it). Reply: 202
//! `{workflowRunId, workflowName}`; `startedBy` is `event:<event>`.

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use magrathea_yaml::schema::EventDocument as EventDoc;
use magrathea_yaml::{DocumentError, Scope};
use serde::Deserialize;
use serde_json::Value;
use subtle::ConstantTimeEq;

use super::auth::bearer;
use super::body::body_error;
use super::error::ApiError;
use super::runs::Started;
use super::state::AppState;

/// Largest accepted event body: 1 MiB.
pub const EVENT_BODY_LIMIT: usize = 1024 * 1024;

/// `{tenant}`, `{project}` and `{event}`.
#[derive(Debug, Deserialize)]
pub(crate) struct EventPath {
    tenant: String,
    project: String,
    event: String,
}

fn load(state: &AppState, scope: &Scope, event: &str) -> Result<EventDoc, ApiError> {
    let not_found = || ApiError::not_found(format!("event `{event}` not found"));
    let (path, text) = match state.docs().document(scope, "events", event) {
        Ok(found) => found,
        Err(DocumentError::UnknownWorkflow { .. } | DocumentError::InvalidName(_)) => {
            return Err(not_found());
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    serde_yaml_ng::from_str(&text).map_err(|e| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "MAG-HTTP-INVALID-EVENT",
            format!("invalid event document {}: {e}", state.label(&path)),
        )
    })
}

/// The value at a dotted path of the project's (else the tenant's) settings.
fn setting(state: &AppState, scope: &Scope, dotted: &str) -> Option<String> {
    let files = [
        state.docs().project_dir(scope).join("_vance/settings.yaml"),
        state.docs().tenant_dir(scope).join("_vance/settings.yaml"),
    ];
    files.iter().find_map(|file| {
        let text = std::fs::read_to_string(file).ok()?;
        let mut value: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).ok()?;
        for key in dotted.split('.') {
            value = value.get(key)?.clone();
        }
        match value {
            serde_yaml_ng::Value::String(s) => Some(s),
            serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
            _ => None,
        }
    })
}

fn check_token(
    state: &AppState,
    scope: &Scope,
    event: &str,
    doc: &EventDoc,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    let Some(key) = doc.auth.as_ref().and_then(|a| a.token_setting.as_deref()) else {
        return Ok(());
    };
    let Some(expected) = setting(state, scope, key) else {
        tracing::warn!(
            event,
            setting = key,
            "event token setting is not set; refusing"
        );
        return Err(ApiError::unauthorized(format!(
            "event `{event}` requires a token, and its setting is not configured"
        )));
    };
    let presented = bearer(headers).unwrap_or("");
    // Equal lengths are compared in constant time; the length itself is not secret.
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(ApiError::unauthorized("missing or wrong event token"))
    }
}

/// `GET|POST /brain/{tenant}/event/{project}/{event}` → 202 [`Started`].
pub(crate) async fn trigger(
    State(state): State<AppState>,
    Path(p): Path<EventPath>,
    Query(query): Query<BTreeMap<String, String>>,
    method: Method,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let scope = state.scope(&p.tenant, &p.project)?;
    let doc = load(&state, &scope, &p.event)?;
    check_token(&state, &scope, &p.event, &doc, &headers)?;
    if !doc
        .methods
        .iter()
        .any(|m| m.eq_ignore_ascii_case(method.as_str()))
    {
        let mut response = ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MAG-HTTP-405",
            format!("event `{}` accepts {}", p.event, doc.methods.join(", ")),
        )
        .into_response();
        if let Ok(allow) = HeaderValue::from_str(&doc.methods.join(", ").to_uppercase()) {
            response.headers_mut().insert(header::ALLOW, allow);
        }
        return Ok(response);
    }
    let body = body.map_err(|e| body_error(e.status(), e.body_text()))?;
    let mut params = doc.params;
    if method == Method::GET {
        if !query.is_empty() {
            let q = query
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            params.insert("payload".into(), Value::Object(q));
        }
    } else if !body.iter().all(u8::is_ascii_whitespace) {
        let payload = serde_json::from_slice(&body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
        params.insert("payload".into(), payload);
    }
    let started_by = format!("event:{}", p.event);
    let run = state
        .start(
            &scope,
            &doc.workflow,
            Value::Object(params),
            &started_by,
            "event",
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(Started {
            workflow_run_id: run,
            workflow_name: doc.workflow,
        }),
    )
        .into_response())
}
