//! Friday's approval routes (`/v1/workflow-approvals…`, scope `workflow.run`), mapped onto
//! the inbox: an approval is an `APPROVAL` inbox item of any project of the token's tenant.
//!
//! The DECISION a run opens under `onFailure: pause_for_approval` is an approval too (Friday's
//! `pause_for_approval`, mapped at the edge): approving it chooses `retry` (the failed state
//! runs again), rejecting it `abort` (the run fails); its status is `approved` once `retry` or
//! `fallback` was chosen, `rejected` once `abort` was.
//!
//! An approval shows the inbox item, the `tenant/project` of its run, `status` in Friday's
//! words — `pending`, `approved`, `rejected` (answered with anything but an approval),
//! `expired` (its timeout fired first), `cancelled` (its run ended or was cancelled first) — and
//! the inbox's own word as `inboxStatus`. `expiresAt` is when an item with a timeout expires,
//! `decidedAt` (the inbox's `answeredAt`) when an answered one was approved or rejected, with
//! `decidedByUserId` and `decisionComment`; and the other names of Friday's approval request
//! (`runId`, `nodeId`, `approverUserId`, `approverRole`, `timeoutAt`, `requestPayload`,
//! `updatedAt`) beside the inbox's own.
//! The listing takes `?status=` (Friday's words, the inbox's, or `all`; default `pending`),
//! `?assignee=`, `?approverUserId=` (approvals naming that user among their approvers, or
//! naming none and assigned to them), `?approverRole=` (naming that role), and pages with
//! `?limit=` (default and most 1,000; a page also ends before
//! [`MAX_PAGE_BYTES`](super::inbox::MAX_PAGE_BYTES) of JSON) and `?cursor=` (the
//! `X-Next-Cursor` header of the previous page, absent on the last), oldest first; it includes
//! the answered, expired and cancelled items of finished runs (of the
//! [`FINISHED_RUNS_LISTED`](super::inbox::FINISHED_RUNS_LISTED) most recently started ones).
//! The run in the reply of approve and reject is shown whole only to a token that also has
//! `workflow.read` (else its [`RunBrief`](super::visible::RunBrief)).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use magrathea_core::{GateAnswer, GateKind, InboxItem, InboxStatus, RunFilter};
use serde::{Deserialize, Serialize};

use super::approvers;
use super::auth::{ApiScope, Principal, bearer};
use super::body::JsonBody;
use super::error::ApiError;
use super::inbox::{Answered, Listing, answer_item, page, paged, parse_status, scoped_item};
use super::state::AppState;

/// An approval: the inbox item and the `tenant/project` of its run.
#[derive(Debug)]
pub struct Approval {
    /// `tenant/project` of the run.
    pub scope: String,
    /// The inbox item.
    pub item: InboxItem,
}

impl Approval {
    /// Friday's word for the item's status.
    pub fn status(&self) -> &'static str {
        friday_status(&self.item)
    }
}

/// Whether `item` is one of Friday's approvals: an `APPROVAL` item, or the DECISION of
/// `onFailure: pause_for_approval`.
pub fn is_approval(item: &InboxItem) -> bool {
    item.kind == GateKind::Approval || is_failure_pause(item)
}

/// Whether `item` is the DECISION a run opened under `onFailure: pause_for_approval`.
pub fn is_failure_pause(item: &InboxItem) -> bool {
    item.kind == GateKind::Decision
        && item
            .meta
            .get("onFailure")
            .and_then(serde_json::Value::as_str)
            == Some("pause_for_approval")
}

/// Friday's word for the item's status.
pub fn friday_status(item: &InboxItem) -> &'static str {
    match item.status {
        InboxStatus::Pending => "pending",
        InboxStatus::Answered => {
            let approved = item.answer.as_ref().is_some_and(|a| {
                a.value.get("approved") == Some(&serde_json::Value::Bool(true))
                    || (is_failure_pause(item)
                        && matches!(
                            a.value.get("chosen").and_then(serde_json::Value::as_str),
                            Some("retry" | "fallback")
                        ))
            });
            if approved { "approved" } else { "rejected" }
        }
        InboxStatus::TimedOut => "expired",
        InboxStatus::Closed => "cancelled",
    }
}

impl Serialize for Approval {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut v = serde_json::to_value(&self.item).map_err(serde::ser::Error::custom)?;
        if let Some(map) = v.as_object_mut() {
            if let Some(inbox) = map.remove("status") {
                map.insert("inboxStatus".into(), inbox);
            }
            map.insert("status".into(), self.status().into());
            map.insert("scope".into(), self.scope.clone().into());
            // Friday's `decidedAt`: when it was approved or rejected. An answer that came
            // after the item expired or its run ended is on the inbox's item, but decided
            // nothing: Friday's request resolves while pending only (seed 001 §9.2).
            if self.item.status != InboxStatus::Answered {
                map.remove("answer");
                map.remove("answeredAt");
            }
            // Friday's columns are all there, `null` until decided, as a typed client reads
            // them.
            let decided = self
                .item
                .answered_at
                .filter(|_| self.item.status == InboxStatus::Answered);
            let answer = self.item.answer.as_ref().filter(|_| decided.is_some());
            map.insert("decidedAt".into(), decided.into());
            map.insert(
                "decidedByUserId".into(),
                answer.map(|a| a.answered_by.clone()).into(),
            );
            map.insert(
                "decisionComment".into(),
                answer.and_then(|a| a.comment.clone()).into(),
            );
            friday_names(map, &self.item);
        }
        v.serialize(serializer)
    }
}

/// The names of Friday's approval request (§2 `workflow_approval_requests`) beside the inbox's
/// own: `runId`, `nodeId` (the state), `approverUserId` and `approverRole` (the first named
/// approver user and role; with no approvers named, the assignee as the user), `timeoutAt`
/// (`expiresAt`), `requestPayload` (`payload`) and `updatedAt` (when it was decided, or
/// expired, else created); those that are unset are `null`. Times are milliseconds since the
/// Unix epoch, as the item's own.
fn friday_names(map: &mut serde_json::Map<String, serde_json::Value>, item: &InboxItem) {
    use serde_json::Value;
    map.insert("runId".into(), item.workflow_run_id.to_string().into());
    map.insert("nodeId".into(), item.workflow_state.clone().into());
    let approvers = item.meta.get("approvers");
    let first = |key: &str| {
        approvers
            .and_then(|a| a.get(key))
            .and_then(Value::as_array)
            .and_then(|list| list.iter().find_map(Value::as_str))
            .map(str::to_owned)
    };
    let user = match approvers {
        Some(_) => first("users"),
        None => Some(item.assigned_to.clone()).filter(|a| !a.is_empty()),
    };
    // Friday's nullable columns are `null` when unset, not left out.
    map.insert("approverUserId".into(), user.into());
    map.insert("approverRole".into(), first("roles").into());
    map.insert("timeoutAt".into(), item.expires_at.into());
    if let Some(payload) = map.get("payload").cloned() {
        map.insert("requestPayload".into(), payload);
    }
    let updated = match item.status {
        InboxStatus::Answered => item.answered_at.unwrap_or(item.created_at),
        // It changed when its timeout fired; a late answer changed nothing.
        InboxStatus::TimedOut => item.expires_at.unwrap_or(item.created_at),
        _ => item.created_at,
    };
    map.insert("updatedAt".into(), updated.into());
}

/// Query of `GET /v1/workflow-approvals`.
#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalQuery {
    assignee: Option<String>,
    /// Only approvals for this approver (Friday's `approverUserId`): naming them among their
    /// approvers' users, or naming no approvers and assigned to them.
    #[serde(rename = "approverUserId")]
    approver_user_id: Option<String>,
    /// Only approvals naming this role among their approvers' roles (Friday's `approverRole`).
    #[serde(rename = "approverRole")]
    approver_role: Option<String>,
    /// `pending` (default), `approved`, `rejected`, `expired`, `cancelled`; or the inbox's
    /// `answered`, `timed_out`, `closed`; or `all`.
    status: Option<String>,
    /// Page size (default and most 1,000).
    limit: Option<super::error::QueryLimit>,
    /// The `X-Next-Cursor` of the previous page.
    cursor: Option<String>,
}

/// Body of approve and reject.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommentBody {
    /// The approver's comment (journaled with the answer).
    comment: Option<String>,
}

fn caller(state: &AppState, headers: &HeaderMap) -> Result<Principal, ApiError> {
    let who = state.auth.authenticate(bearer(headers))?;
    who.require(ApiScope::Run)?;
    Ok(who)
}

pub(crate) fn in_tenant(who: &Principal, scope: &str) -> bool {
    scope
        .split_once('/')
        .is_some_and(|(tenant, _)| who.may_access(tenant))
}

/// `GET /v1/workflow-approvals?assignee=&approverUserId=&approverRole=&status=&limit=&cursor=`
/// → the tenant's approvals, oldest first, a page at a time.
pub(crate) async fn list(
    State(state): State<AppState>,
    Query(q): Query<ApprovalQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let who = caller(&state, &headers)?;
    let wanted = q
        .status
        .as_deref()
        .unwrap_or("pending")
        .to_ascii_lowercase();
    let friday = ["approved", "rejected", "expired", "cancelled"].contains(&wanted.as_str());
    let listing = Listing {
        runs: RunFilter {
            scope_prefix: who.tenant.as_ref().map(|t| format!("{t}/")),
            ..RunFilter::default()
        },
        status: parse_status(Some(if friday { "all" } else { wanted.as_str() }))?,
        assignee: q.assignee,
        limit: q.limit,
        cursor: q.cursor,
    };
    let tenant = who.clone();
    let (user, role) = (q.approver_user_id, q.approver_role);
    let (found, next) = page(
        &state,
        listing,
        move |s| in_tenant(&tenant, s),
        move |item| {
            is_approval(item)
                && (!friday || friday_status(item) == wanted)
                && user
                    .as_deref()
                    .is_none_or(|u| approvers::is_for_user(item, u))
                && role
                    .as_deref()
                    .is_none_or(|r| approvers::is_for_role(item, r))
        },
    )
    .await?;
    let found: Vec<Approval> = found
        .into_iter()
        .map(|(scope, item)| Approval { scope, item })
        .collect();
    Ok(paged(found, next))
}

async fn approval(state: &AppState, who: &Principal, id: &str) -> Result<InboxItem, ApiError> {
    // The read counts among the whole-journal reads of the token's tenant (of the item's run,
    // read from its id, for a token of every tenant).
    let tenant = match &who.tenant {
        Some(tenant) => tenant.clone(),
        None => id
            .rsplit_once('-')
            .and_then(|(run, _)| run.parse::<magrathea_core::RunId>().ok())
            .map(|run| state.tenant_of(run))
            .unwrap_or_default(),
    };
    let who = who.clone();
    let item = scoped_item(state, &tenant, id, move |s| in_tenant(&who, s)).await?;
    if !is_approval(&item) {
        return Err(ApiError::not_found(format!("approval `{id}` not found")));
    }
    Ok(item)
}

/// `GET /v1/workflow-approvals/{id}` → the approval, with the `approvals` counted towards its
/// quorum and the `refusals` of answers its approvers rules left out.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, ApiError> {
    let who = caller(&state, &headers)?;
    let item = approval(&state, &who, &id).await?;
    let scope = state
        .engine
        .summary(item.workflow_run_id)
        .map(|s| s.scope.into_string())
        .unwrap_or_default();
    let votes = super::approvers::counted(state.triggers.catalog()?, &item)?;
    let mut v = serde_json::to_value(Approval { scope, item }).map_err(ApiError::internal)?;
    if let Some(map) = v.as_object_mut() {
        // The approvals counted towards a quorum and the refused answers.
        map.insert("approvals".into(), serde_json::json!(votes));
        map.insert(
            "refusals".into(),
            serde_json::json!(super::approvers::refusals(&state, &id)?),
        );
    }
    Ok(Json(v))
}

async fn decide(
    state: AppState,
    id: String,
    headers: HeaderMap,
    answer: GateAnswer,
    body: Result<CommentBody, ApiError>,
) -> Result<Json<Decided>, ApiError> {
    let who = caller(&state, &headers)?;
    let comment = body?.comment;
    let item = approval(&state, &who, &id).await?;
    // The failure's DECISION: approving runs the failed state again, rejecting fails the run.
    let answer = if is_failure_pause(&item) {
        let approved = answer.value.get("approved") == Some(&serde_json::Value::Bool(true));
        GateAnswer::choose(if approved { "retry" } else { "abort" })
    } else {
        answer
    };
    let answer = match comment {
        Some(c) => answer.with_comment(c),
        None => answer,
    };
    let answered = answer_item(&state, &item, answer, &who).await?;
    let mut decided = Decided {
        answered,
        approval: None,
        status: None,
    };
    // The answer is journaled: a read that fails now leaves the fields out, not the reply.
    if let (Ok(summary), Ok(now)) = (
        state.engine.summary(item.workflow_run_id),
        approval(&state, &who, &id).await,
    ) {
        decided.status = Some(super::pause::friday_run_status(summary.status).into());
        let now = Approval {
            scope: summary.scope.into_string(),
            item: now,
        };
        decided.approval = serde_json::to_value(now).ok();
    }
    Ok(Json(decided))
}

/// Reply of a `/v1` approve or reject: the answer's, with Friday's words beside the engine's
/// run view.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Decided {
    /// Whether the answer was applied, and the run afterwards.
    #[serde(flatten)]
    pub answered: Answered,
    /// The approval as it now stands, in Friday's words (`approved`, `rejected`, `pending`
    /// short of its quorum, or `expired` or `cancelled` when the answer came too late).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<serde_json::Value>,
    /// The run's status in Friday's words (`running`, `paused`, `completed`, `failed`,
    /// `cancelled`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `POST /v1/workflow-approvals/{id}/approve` with `{comment?}` → `{applied, ignored, run,
/// approval, status}` (`status` the run's in Friday's words).
pub(crate) async fn approve(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CommentBody>,
) -> Result<Json<Decided>, ApiError> {
    decide(state, id, headers, GateAnswer::approve(), body).await
}

/// `POST /v1/workflow-approvals/{id}/reject` with `{comment?}` → `{applied, ignored, run,
/// approval, status}`.
pub(crate) async fn reject(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CommentBody>,
) -> Result<Json<Decided>, ApiError> {
    decide(state, id, headers, GateAnswer::reject(), body).await
}
