//! Friday's approval routes (`/v1/workflow-approvals…`, scope `workflow.run`), mapped onto
//! the inbox: an approval is an `APPROVAL` inbox item of any project of the token's tenant.
//! The run in the reply of approve and reject is shown whole only to a token that also has
//! `workflow.read` (else its [`RunBrief`](super::visible::RunBrief)).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use magrathea_core::{GateAnswer, GateKind, InboxItem};
use serde::{Deserialize, Serialize};

use super::auth::{ApiScope, Principal, bearer};
use super::body::JsonBody;
use super::error::ApiError;
use super::inbox::{Answered, answer_item, items, scoped_item};
use super::state::AppState;

/// An approval: the inbox item and the `tenant/project` of its run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    /// `tenant/project` of the run.
    pub scope: String,
    /// The inbox item.
    #[serde(flatten)]
    pub item: InboxItem,
}

/// Query of `GET /v1/workflow-approvals`.
#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalQuery {
    assignee: Option<String>,
    /// `pending` (default), `answered`, `timed_out`, `closed` or `all`.
    status: Option<String>,
}

/// Body of approve and reject.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommentBody {
    comment: Option<String>,
}

fn caller(state: &AppState, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let who = state.auth.authenticate(bearer(headers))?;
    who.require(ApiScope::Run)?;
    Ok(who)
}

fn in_tenant(who: &Principal, scope: &str) -> bool {
    scope
        .split_once('/')
        .is_some_and(|(tenant, _)| who.may_access(tenant))
}

/// `GET /v1/workflow-approvals?assignee=&status=` → the tenant's approvals, oldest first.
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(q): Query<ApprovalQuery>,
    headers: HeaderMap,
) -> Result<Json<Vec<Approval>>, ApiError> {
    let who = caller(&state, &headers)?;
    let found = items(
        &state,
        |s| in_tenant(&who, s),
        q.status.as_deref(),
        q.assignee.as_deref(),
    )?;
    Ok(Json(
        found
            .into_iter()
            .filter(|(_, i)| i.kind == GateKind::Approval)
            .map(|(scope, item)| Approval { scope, item })
            .collect(),
    ))
}

fn approval(state: &AppState, who: &Principal, id: &str) -> Result<InboxItem, ApiError> {
    let item = scoped_item(state, id, |s| in_tenant(who, s))?;
    if item.kind != GateKind::Approval {
        return Err(ApiError::not_found(format!("approval `{id}` not found")));
    }
    Ok(item)
}

/// `GET /v1/workflow-approvals/{id}` → the approval.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Approval>, ApiError> {
    let who = caller(&state, &headers)?;
    let item = approval(&state, &who, &id)?;
    let scope = state
        .engine
        .summary(item.workflow_run_id)
        .map(|s| s.scope.into_string())
        .unwrap_or_default();
    Ok(Json(Approval { scope, item }))
}

async fn decide(
    state: AppState,
    id: String,
    headers: HeaderMap,
    answer: GateAnswer,
    comment: Option<String>,
) -> Result<Json<Answered>, ApiError> {
    let who = caller(&state, &headers)?;
    let item = approval(&state, &who, &id)?;
    let answer = match comment {
        Some(c) => answer.with_comment(c),
        None => answer,
    };
    Ok(Json(answer_item(&state, &item, answer, &who).await?))
}

/// `POST /v1/workflow-approvals/{id}/approve` with `{comment?}` → `{applied, ignored, run}`.
pub(crate) async fn approve(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CommentBody>,
) -> Result<Json<Answered>, ApiError> {
    decide(state, id, headers, GateAnswer::approve(), body.comment).await
}

/// `POST /v1/workflow-approvals/{id}/reject` with `{comment?}` → `{applied, ignored, run}`.
pub(crate) async fn reject(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CommentBody>,
) -> Result<Json<Answered>, ApiError> {
    decide(state, id, headers, GateAnswer::reject(), body.comment).await
}
