//! Versions of a workflow over REST: `POST …/workflows/{name}/publish`, `GET …/versions`,
//! `POST …/archive` and `…/unarchive` (see [`crate::versions`]). Publishing and archiving need
//! `workflow.write`, listing `workflow.read`; another tenant's project is answered 404 like a
//! workflow that does not exist.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::ApiScope;
use super::body::{JsonBody, NoFields};
use super::error::ApiError;
use super::state::AppState;
use crate::versions::{self, VersionError, Versions};

/// `{tenant}`, `{project}` and the workflow.
#[derive(Debug, Deserialize)]
pub(crate) struct WorkflowPath {
    tenant: String,
    project: String,
    name: String,
}

fn api_error(e: VersionError) -> ApiError {
    match e {
        VersionError::InvalidName(_) => {
            ApiError::bad_request("MAG-HTTP-INVALID-NAME", e.to_string())
        }
        VersionError::ReservedName(_) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "MAG-HTTP-RESERVED-NAME",
            e.to_string(),
        ),
        VersionError::NoDraft(_) => {
            ApiError::new(StatusCode::NOT_FOUND, "MAG-VR002", e.to_string())
        }
        VersionError::UnknownWorkflow(_) => ApiError::new(
            StatusCode::NOT_FOUND,
            "MAG-HTTP-WORKFLOW-NOT-FOUND",
            e.to_string(),
        ),
        VersionError::Invalid { name, diagnostics } => ApiError {
            code: "MAG-VR003",
            message: format!("[MAG-VR003] the draft of '{name}' is invalid; nothing was published"),
            ..ApiError::invalid_document(diagnostics)
        },
        VersionError::HistoryMismatch(_) => {
            ApiError::new(StatusCode::CONFLICT, "MAG-VR004", e.to_string())
        }
        VersionError::OutsideProject(_) => ApiError::new(
            StatusCode::FORBIDDEN,
            "MAG-HTTP-OUTSIDE-PROJECT",
            e.to_string(),
        ),
        // Invalid, not the server's failure.
        VersionError::NotUtf8 { .. } => ApiError::invalid_document(vec![e.to_string()]),
        VersionError::TriggersNeedRun { .. } => ApiError::forbidden(e.to_string()),
        VersionError::Io { .. } => ApiError::internal(e),
    }
}

/// `POST …/workflows/{name}/publish` → `{name, version, previous}`; 422 with diagnostics for
/// an invalid draft (nothing changes), 404 (`MAG-VR002`) without a draft.
pub(crate) async fn publish(
    State(state): State<AppState>,
    Path(p): Path<WorkflowPath>,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
) -> Result<Json<Value>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Write)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    body.0?;
    super::automated::check_automated(
        &state,
        &scope,
        &who,
        &format!("the live workflow `{}`", p.name),
    )?;
    let (docs, may_add_triggers) = (state.docs().clone(), who.has(ApiScope::Run));
    let (in_scope, name) = (scope.clone(), p.name.clone());
    // In the tenant's write turn, as the documents API writes: a conditional write of the live
    // document never has a publish between its check and its write.
    let turn = super::doc_quota::write_turn(&scope.tenant).await;
    let published = tokio::task::spawn_blocking(move || {
        versions::publish(&docs, &in_scope, &name, may_add_triggers)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(api_error)?;
    drop(turn);
    let mut reply = serde_json::to_value(&published).map_err(ApiError::internal)?;
    if let Ok(catalog) = state.triggers.catalog() {
        for document in &published.removed_triggers {
            if let Err(e) = crate::triggers::registry::forget_writer(catalog, &scope, document) {
                tracing::warn!(error = %e, "could not forget who wrote a removed trigger");
            }
        }
    }
    if !published.triggers.is_empty() || !published.removed_triggers.is_empty() {
        let (in_scope, by) = (scope.clone(), who.clone());
        let (docs, texts) = (published.triggers.clone(), published.trigger_texts.clone());
        let warnings = state
            .trigger_work(&scope.tenant, move |state| {
                super::document_warnings::triggers_published(state, &in_scope, &by, &docs, &texts)
            })
            .await?;
        reply["warnings"] = json!(warnings);
    }
    Ok(Json(reply))
}

/// `GET …/workflows/{name}/versions` → `{name, archived, draft, versions: [{hash, state, at,
/// size}]}`, the live document first, then the history, newest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(p): Path<WorkflowPath>,
    headers: HeaderMap,
) -> Result<Json<Versions>, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    versions::versions(state.docs(), &scope, &p.name)
        .map(Json)
        .map_err(api_error)
}

async fn set_archived(
    state: AppState,
    p: WorkflowPath,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
    archived: bool,
) -> Result<Json<Value>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Write)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    body.0?;
    if !archived {
        // Unarchiving lets the project's triggers start the workflow again.
        super::automated::check_automated(
            &state,
            &scope,
            &who,
            &format!("whether `{}` may start", p.name),
        )?;
    }
    let now = versions::set_archived(state.docs(), &scope, &p.name, archived, &who.subject)
        .map_err(api_error)?;
    Ok(Json(json!({ "name": p.name, "archived": now })))
}

/// `POST …/workflows/{name}/archive` → `{name, archived: true}`: new starts are refused with
/// 409 (`MAG-VR001`); runs already started finish.
pub(crate) async fn archive(
    State(state): State<AppState>,
    Path(p): Path<WorkflowPath>,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
) -> Result<Json<Value>, ApiError> {
    set_archived(state, p, headers, body, true).await
}

/// `POST …/workflows/{name}/unarchive` → `{name, archived: false}`.
pub(crate) async fn unarchive(
    State(state): State<AppState>,
    Path(p): Path<WorkflowPath>,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
) -> Result<Json<Value>, ApiError> {
    set_archived(state, p, headers, body, false).await
}
