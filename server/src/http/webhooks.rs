//! `POST /v1/workflow-webhooks/{pathToken}` (Friday §6.2): a public route; the path token,
//! the signature and the dedupe key of the event document's `webhook:` block decide what
//! happens (see `docs/webhooks.md`).
//!
//! Answers: 202 `{workflowRunId, workflowName, duplicate: false}` for a delivery that started
//! a run; 200 `{…, duplicate: true}` for a repeat inside the dedupe window (nothing started);
//! 404 for a token no webhook has (nothing recorded: there is no trigger to record it on);
//! the rejection's status (401, 405, 413, 400) for a delivery that fails verification; 409 for
//! a paused or disabled webhook, said only after verification. Every delivery of a known
//! webhook is recorded, with its reason code when it was not accepted.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::error::ApiError;
use super::state::{AppState, Starter};
use crate::triggers::dedupe::{self, Claim};
use crate::triggers::deliveries::{self, Delivery, DeliveryStatus};
use crate::triggers::registry::{self, Registration};
use crate::webhook::{self, Incoming};

fn not_found() -> ApiError {
    ApiError::not_found("no webhook has this path token")
}

/// Records `d`; a failure to record is logged, never the caller's problem.
fn keep(state: &AppState, d: &Delivery) {
    if let Ok(catalog) = state.triggers.catalog()
        && let Err(e) = deliveries::record(catalog, d)
    {
        tracing::warn!(trigger = %d.trigger_id, error = %e, "could not record a webhook delivery");
    }
}

/// The handler. A 405 names the method the route takes (`Allow: POST`).
pub(crate) async fn invoke(
    state: State<AppState>,
    token: Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match deliver(state, token, method, headers, body).await {
        Ok(response) => response,
        Err(e) if e.status == StatusCode::METHOD_NOT_ALLOWED => {
            let mut response = e.into_response();
            response.headers_mut().insert(
                axum::http::header::ALLOW,
                axum::http::HeaderValue::from_static("POST"),
            );
            response
        }
        Err(e) => e.into_response(),
    }
}

async fn deliver(
    State(state): State<AppState>,
    Path(token): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    if token.len() > 512 {
        return Err(not_found());
    }
    let catalog = state.triggers.catalog()?;
    let hash = webhook::path_token_hash(&token);
    let Some(mut reg) = registry::by_webhook_token(catalog, &hash)? else {
        return Err(not_found());
    };
    let now = state.triggers.now_ms();
    let mut doc = crate::triggers::load_webhook(state.docs(), &reg);
    if doc.is_none() {
        // The document changed on disk since the last resync: read it now.
        state.triggers.resync(&state, &reg.scope())?;
        reg = registry::by_webhook_token(catalog, &hash)?.ok_or_else(not_found)?;
        doc = crate::triggers::load_webhook(state.docs(), &reg);
    }
    let Some(doc) = doc else {
        return Err(not_found());
    };
    let Some(cfg) = doc.webhook.as_ref() else {
        return Err(not_found());
    };
    let body = match body {
        Ok(b) => b,
        // Over the server's own body limit: the same refusal as over the webhook's.
        Err(e) if e.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            return Err(refuse(&state, &reg, now, &webhook::Rejection::TooLarge));
        }
        Err(e) => {
            let d = Delivery::new(&reg, DeliveryStatus::Rejected, now)
                .reason("bad_body")
                .message(e.body_text());
            keep(&state, &d);
            return Err(super::body::body_error(e.status(), e.body_text()));
        }
    };
    let secrets = cfg
        .signature
        .as_ref()
        .map(|s| super::setting::texts(state.docs(), &reg.scope(), &s.secret_setting))
        .unwrap_or_default();
    let incoming = Incoming {
        method: &method,
        headers: &headers,
        body: &body,
        now_unix_ms: now,
    };
    let accepted = match webhook::verify(cfg, &secrets, &incoming) {
        Ok(a) => a,
        Err(rejection) => return Err(refuse(&state, &reg, now, &rejection)),
    };
    // Paused or not is said only to a delivery that passed verification: without the
    // signing secret, a caller learns nothing of the webhook's state.
    if !reg.active {
        let d = Delivery::new(&reg, DeliveryStatus::Rejected, now)
            .reason("trigger_disabled")
            .message("[MAG-HTTP-TRIGGER-DISABLED] the webhook is paused or disabled");
        keep(&state, &d);
        // Like every refusal of a delivery, the message opens with its code.
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-TRIGGER-DISABLED",
            "[MAG-HTTP-TRIGGER-DISABLED] this webhook is paused or its document says \
             `enabled: false`; nothing was started",
        ));
    }
    let workflow = doc.workflow.clone();
    let mut params = doc.params.clone();
    if let Some(payload) = accepted.params_payload.clone() {
        params.insert("payload".into(), payload);
    }
    params.insert("headers".into(), Value::Object(accepted.headers.clone()));
    let mut start_key = format!("webhook:{}:{}", reg.key(), uuid::Uuid::now_v7().simple());
    let mut claimed = None;
    if let Some(key) = &accepted.dedupe_key {
        let key_hash = registry::sha256_hex(key);
        match dedupe::claim(
            catalog,
            &reg.id,
            &reg.key(),
            &key_hash,
            now,
            webhook::dedupe_window_ms(cfg),
        )? {
            Claim::First(seen) => {
                start_key.clone_from(&seen.start_key);
                claimed = Some((key_hash, seen));
            }
            Claim::Repeat(seen) => {
                return duplicate(
                    &state,
                    &reg,
                    &workflow,
                    Value::Object(params),
                    (key, &key_hash),
                    seen,
                    now,
                )
                .await;
            }
        }
    }
    let starter = Starter {
        requested_by: reg.written_by.clone(),
        idempotency_key: Some(start_key),
        ..Starter::new(&format!("webhook:{}", reg.name))
    };
    let mut d = Delivery::new(&reg, DeliveryStatus::Accepted, now);
    d.dedupe_key.clone_from(&accepted.dedupe_key);
    match state
        .start_as(
            &reg.scope(),
            &workflow,
            Value::Object(params),
            &starter,
            "webhook",
        )
        .await
    {
        Ok((run, _)) => {
            if let Some((key_hash, seen)) = &claimed {
                dedupe::started(catalog, &reg.id, key_hash, seen, &run.to_string())?;
            }
            keep(&state, &d.run(run));
            Ok((
                StatusCode::ACCEPTED,
                Json(json!({
                    "workflowRunId": run.to_string(),
                    "workflowName": workflow,
                    "duplicate": false,
                })),
            )
                .into_response())
        }
        Err(e) => {
            if let Some((key_hash, seen)) = &claimed {
                release_refused(catalog, &reg.id, key_hash, seen, &e)?;
            }
            d.status = DeliveryStatus::Failed;
            d.error_code = Some(e.code.to_owned());
            keep(
                &state,
                &d.reason("start_refused").message(e.message.clone()),
            );
            // 404 says only that no webhook has the token: a workflow that is not there is
            // a start refused, as a schedule fired by hand answers one.
            if e.status == StatusCode::NOT_FOUND {
                return Err(ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "MAG-HTTP-TRIGGER-FAILED",
                    e.message,
                ));
            }
            Err(e)
        }
    }
}

/// Records a delivery the webhook refuses, and the error that answers it.
fn refuse(
    state: &AppState,
    reg: &Registration,
    now: i64,
    rejection: &webhook::Rejection,
) -> ApiError {
    let d = Delivery::new(reg, DeliveryStatus::Rejected, now)
        .reason(rejection.reason())
        .message(rejection.message());
    keep(state, &d);
    ApiError::new(
        rejection.status(),
        "MAG-HTTP-WEBHOOK-REJECTED",
        rejection.message(),
    )
}

/// A start refused (a 4xx: the workflow is archived, its document invalid, its parameters
/// wrong) started nothing, so the dedupe key goes back: a retry of the delivery is a first
/// delivery, not a duplicate of a run that does not exist. After any other error the key
/// stays, and a repeat makes the same start again under the same idempotency key.
fn release_refused(
    catalog: &dyn magrathea_core::Catalog,
    trigger: &str,
    key_hash: &str,
    seen: &dedupe::Seen,
    e: &ApiError,
) -> Result<(), ApiError> {
    if e.status.is_client_error() {
        dedupe::release(catalog, trigger, key_hash, seen)?;
    }
    Ok(())
}

/// A repeat inside the window: the first delivery's run, nothing started. If the first
/// delivery's run is not on record yet (it is starting, or its process stopped before it
/// noted the run), the start is made again with the first delivery's key, which returns that
/// run.
async fn duplicate(
    state: &AppState,
    reg: &Registration,
    workflow: &str,
    params: Value,
    (key, key_hash): (&str, &str),
    seen: dedupe::Seen,
    now: i64,
) -> Result<Response, ApiError> {
    let run = match seen.run_id.clone() {
        Some(run) => run,
        None => {
            let starter = Starter {
                requested_by: reg.written_by.clone(),
                idempotency_key: Some(seen.start_key.clone()),
                ..Starter::new(&format!("webhook:{}", reg.name))
            };
            match state
                .start_as(&reg.scope(), workflow, params, &starter, "webhook")
                .await
            {
                Ok((run, _)) => run.to_string(),
                Err(e) => {
                    release_refused(state.triggers.catalog()?, &reg.id, key_hash, &seen, &e)?;
                    let mut d = Delivery::start_refused(reg, now, e.code, &e.message);
                    d.dedupe_key = Some(key.to_owned());
                    keep(state, &d);
                    return Err(e);
                }
            }
        }
    };
    let mut d = Delivery::new(reg, DeliveryStatus::Duplicate, now)
        .reason("duplicate")
        .message(format!(
            "the same dedupe key came {} ms before, inside the window",
            now - seen.first_ms
        ))
        .run(&run);
    d.dedupe_key = Some(key.to_owned());
    keep(state, &d);
    Ok((
        StatusCode::OK,
        Json(json!({
            "workflowRunId": run,
            "workflowName": workflow,
            "duplicate": true,
        })),
    )
        .into_response())
}
