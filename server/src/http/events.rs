//! Event triggers (reference §8.6): `GET|POST /brain/{tenant}/event/{project}/{event}` starts
//! the workflow named by the event document `_vance/events/<event>.yaml` (project, then
//! tenant):
//!
//! ```yaml
//! description: "GitHub PR Hook → pr-review"
//! workflow: pr-review
//! methods: [POST]                    # default [GET, POST]; others answer 405
//! auth:
//!   tokenSetting: events.github.token  # optional: require this Bearer token
//! params:                            # optional static parameters
//!   source: github
//! ```
//!
//! The document is read as [`EventDoc`] (the JSON Schema `schemas/event.schema.json` is
//! generated from it).
//!
//! Who may fire an event:
//! - With `auth.tokenSetting`: the holder of that token. The setting is a dotted path into the
//!   project's `_vance/settings.yaml` (falling back to the tenant's
//!   `_tenant/_vance/settings.yaml`: the project's value wins when both hold one), e.g.
//!   `events: {github: {token: "…"}}`. The request must carry `Authorization: Bearer <that
//!   value>`, compared in constant time; a setting that is missing refuses every request.
//!   Changing a project's `_vance/settings.yaml` through the documents API needs
//!   `workflow.run` as well as `workflow.write`, so writing documents never grants this.
//! - Without `auth.tokenSetting` (no `auth:` at all): an API token (see
//!   [`auth`](super::auth)) of the route's tenant with `workflow.run`. Writing an event
//!   document therefore never opens a way to run a workflow without a token.
//!
//! Credentials are checked before the event's name: without valid credentials the answer is
//! the same 401 (`MAG-HTTP-401`, one message) whether the event exists or not. An unknown
//! event answers 404 only to an API token of the tenant with `workflow.run` (another tenant's
//! token gets 404 for the tenant, a token without the scope 403, as on every route — also for
//! an event with a token of its own, so that the answer does not tell those apart).
//!
//! The run's parameters are the static `params` plus `payload`: the POST body (JSON, or the
//! body as a string when it is not JSON; absent when empty), or for GET the query parameters
//! as an object (a key given more than once: the list of its values, in order). The body is
//! limited to [`EVENT_BODY_LIMIT`] (413 past it). Reply: 202 `{workflowRunId, workflowName}`;
//! `startedBy` is `event:<event>`, and when an API token fired it, the run's `requestedBy` is
//! the token's subject. An `Idempotency-Key` header (the rules of a REST start's) makes the
//! call repeatable: the same key for the same event of the same project answers 200 with the
//! run it started first.

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

use super::auth::{ApiScope, Principal, bearer};
use super::body::body_error;
use super::error::ApiError;
use super::runs::Started;
use super::state::{AppState, Starter};
use crate::triggers::registry::{self, TriggerKind};

/// Largest accepted event body: 1 MiB.
pub const EVENT_BODY_LIMIT: usize = 1024 * 1024;

/// `{tenant}`, `{project}` and `{event}`.
#[derive(Debug, Deserialize)]
pub(crate) struct EventPath {
    tenant: String,
    project: String,
    event: String,
}

/// What the event's name leads to, before anyone is told.
enum Lookup {
    /// The document.
    Found(EventDoc),
    /// No such event (or a name that cannot be one).
    Missing,
    /// The document does not parse: the 422 to answer once the caller may know.
    Invalid(ApiError),
}

fn load(state: &AppState, scope: &Scope, event: &str) -> Result<Lookup, ApiError> {
    let (path, text) = match state.docs().document(scope, "events", event) {
        Ok(found) => found,
        // A document that leads out of the project through a link is none of this project's
        // events: refused as a missing one is, before any credentials are checked.
        Err(
            DocumentError::UnknownWorkflow { .. }
            | DocumentError::InvalidName(_)
            | DocumentError::OutsideProject(_),
        ) => {
            return Ok(Lookup::Missing);
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    Ok(match crate::triggers::parse_event(&text) {
        Ok(doc) => Lookup::Found(doc),
        Err(e) => Lookup::Invalid(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "MAG-HTTP-INVALID-EVENT",
            format!("invalid event document {}: {e}", state.label(&path)),
        )),
    })
}

/// The one 401 of this route, whatever was wrong or missing, so that it tells nothing about
/// the event.
fn refused() -> ApiError {
    ApiError::unauthorized(
        "missing or invalid credentials for this event: send the event's own token when its \
         document sets `auth.tokenSetting`, else an API token of the tenant with `workflow.run`",
    )
}

/// The caller of an event without a token setting: an API token of the tenant with
/// `workflow.run`. A 401 becomes [`refused`], and so does the 404 of another tenant's token:
/// an event with a token setting refuses that token with the same 401, so a 404 would tell
/// which tenants, projects and events exist. A 403 (the tenant's own token without the scope)
/// stays.
fn api_caller(state: &AppState, tenant: &str, headers: &HeaderMap) -> Result<Principal, ApiError> {
    state
        .auth
        .authorize(bearer(headers), tenant, ApiScope::Run)
        .map_err(|e| {
            if e.status == 401 || e.status == 404 {
                refused()
            } else {
                e
            }
        })
}

/// The value at a dotted path of the project's (else the tenant's) settings.
fn setting(state: &AppState, scope: &Scope, dotted: &str) -> Option<String> {
    super::setting::text(state.docs(), scope, dotted)
}

/// Whether an operator paused a trigger of the event document `name` (its webhook or its
/// subscription): a paused document is off for its REST route too, as with `enabled: false`.
fn paused(state: &AppState, scope: &Scope, name: &str) -> Result<bool, ApiError> {
    // A store without a catalog holds no triggers, so none is paused.
    let Ok(catalog) = state.triggers.catalog() else {
        return Ok(false);
    };
    for kind in [TriggerKind::Webhook, TriggerKind::Event] {
        let id = registry::id_of(&registry::key_of(&scope.tenant, &scope.project, kind, name));
        if registry::is_paused(catalog, &id)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Checks the event token of `key` (a dotted settings path).
fn check_token(
    state: &AppState,
    scope: &Scope,
    event: &str,
    key: &str,
    headers: &HeaderMap,
) -> Result<(), ApiError> {
    let Some(expected) = setting(state, scope, key) else {
        tracing::warn!(
            event,
            setting = key,
            "event token setting is not set to a text; refusing"
        );
        return Err(refused());
    };
    let presented = bearer(headers).unwrap_or("");
    // Equal lengths are compared in constant time; the length itself is not secret.
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(refused())
    }
}

/// `GET|POST /brain/{tenant}/event/{project}/{event}` → 202 [`Started`].
pub(crate) async fn trigger(
    State(state): State<AppState>,
    Path(p): Path<EventPath>,
    Query(query): Query<Vec<(String, String)>>,
    method: Method,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    // A name that cannot be a project is treated like an unknown event: credentials first.
    let Ok(scope) = state.scope(&p.tenant, &p.project) else {
        api_caller(&state, &p.tenant, &headers)?;
        return Err(ApiError::not_found(format!(
            "project `{}/{}` not found",
            p.tenant, p.project
        )));
    };
    let doc = match load(&state, &scope, &p.event)? {
        Lookup::Found(doc) => doc,
        Lookup::Missing => {
            api_caller(&state, &p.tenant, &headers)?;
            return Err(ApiError::not_found(format!(
                "event `{}` not found",
                p.event
            )));
        }
        Lookup::Invalid(e) => {
            api_caller(&state, &p.tenant, &headers)?;
            return Err(e);
        }
    };
    let token_setting = doc.auth.as_ref().and_then(|a| a.token_setting.as_deref());
    let requested_by = match token_setting {
        Some(key) => {
            if let Err(e) = check_token(&state, &scope, &p.event, key, &headers) {
                // The tenant's own API token without `workflow.run` gets the 403 it gets for
                // every other event, so that the answer does not tell which events have a
                // token of their own.
                if let Err(scope) = api_caller(&state, &p.tenant, &headers)
                    && scope.status == 403
                {
                    return Err(scope);
                }
                return Err(e);
            }
            None
        }
        None => Some(api_caller(&state, &p.tenant, &headers)?.subject),
    };
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
    if doc.enabled == Some(false) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-TRIGGER-DISABLED",
            format!(
                "event `{}` is switched off by its document (`enabled: false`)",
                p.event
            ),
        ));
    }
    if paused(&state, &scope, &p.event)? {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-TRIGGER-DISABLED",
            format!(
                "event `{}` is paused by an operator: resume it with `PATCH …/triggers/{}` \
                 and {{\"enabled\": true}}",
                p.event, p.event
            ),
        ));
    }
    let body = body.map_err(|e| body_error(e.status(), e.body_text()))?;
    let mut params = doc.params;
    if method == Method::GET {
        if !query.is_empty() {
            params.insert("payload".into(), Value::Object(query_payload(query)));
        }
    } else if let text = super::body::without_bom(&body)
        && !text.iter().all(u8::is_ascii_whitespace)
    {
        let payload = serde_json::from_slice(text)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(text).into_owned()));
        params.insert("payload".into(), payload);
    }
    let key = super::runs::idempotency_key(&headers)?;
    let starter = Starter {
        requested_by,
        // Scoped by project and event, as a REST start's key is by project and workflow.
        idempotency_key: key.map(|k| format!("event:{}:{}:{k}", scope.key(), p.event)),
        ..Starter::new(&format!("event:{}", p.event))
    };
    let (run, created) = state
        .start_as(
            &scope,
            &doc.workflow,
            Value::Object(params),
            &starter,
            "event",
        )
        .await?;
    let status = if created {
        StatusCode::ACCEPTED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Started {
            workflow_run_id: run,
            workflow_name: doc.workflow,
        }),
    )
        .into_response())
}

/// A GET event's query parameters as its payload: each key's value, or the list of its
/// values, in order, when the query gives the key more than once (`?tag=a&tag=b`).
fn query_payload(query: Vec<(String, String)>) -> serde_json::Map<String, Value> {
    let mut payload = serde_json::Map::new();
    for (key, value) in query {
        match payload.get_mut(&key) {
            None => {
                payload.insert(key, Value::String(value));
            }
            Some(Value::Array(values)) => values.push(Value::String(value)),
            Some(first) => {
                let first = first.take();
                payload.insert(key, Value::Array(vec![first, Value::String(value)]));
            }
        }
    }
    payload
}
