//! Pausing and resuming a run (scope `workflow.run`), body `{reason?}` (the reason is kept on
//! a pause):
//!
//! * `POST …/workflows/runs/{run_id}/pause` and `…/resume`, in the path's tenant and project;
//! * Friday's `POST /v1/workflow-runs/{runId}/pause` and `…/resume`, in the token's tenant.
//!
//! 200 `{pause|resume, run}`, where `pause` is `paused` or `alreadyPaused`, `resume` is
//! `resumed`, and `run` the run (brief without `workflow.read`), its status `PAUSED` after a
//! pause. The `/v1` routes add `status`, the run's status in Friday's words
//! (`FridayWorkflowRunStatus`: `running` for a run that runs or waits on a timer, a task or a
//! child, `paused` for a paused or blocked one and one waiting on a gate, as Friday's approval
//! node pauses its run, `completed`, `failed`, `cancelled`). 404 for a run that is not there (or not the caller's tenant's); 409
//! `MAG-HTTP-PAUSE-STATE` for a run that has ended (or is being cancelled, or is blocked) on a
//! pause, and for a run that is not paused on a resume. See [`Engine::pause`].
//!
//! A run that waits on the DECISION of `onFailure: pause_for_approval` is paused in Friday's
//! words (its `resumeRun`): resuming it answers the decision `retry`, so the failed state runs
//! again (`{resume: "resumed", run}`; who may answer is checked as for the decision itself).
//!
//! [`Engine::pause`]: magrathea_core::Engine::pause

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use magrathea_core::{
    ControlAck, DeliverError, InboxFilter, InboxItem, RunFilter, RunId, RunStatus, RunSummary,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{ApiScope, Principal, bearer};
use super::body::JsonBody;
use super::error::ApiError;
use super::runs::{RunPath, dto};
use super::state::AppState;
use super::visible::visible_run;

/// The most bytes of a pause's reason (it is journaled).
const MAX_REASON_BYTES: usize = 4096;

/// Body of a pause or a resume (optional).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PauseBody {
    /// Why, journaled with the control (at most 4 KiB).
    reason: Option<String>,
}

/// Which control a request asks for.
#[derive(Clone, Copy)]
enum Op {
    Pause,
    Resume,
}

/// `POST …/workflows/runs/{run_id}/pause`.
pub(crate) async fn pause(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PauseBody>,
) -> Result<Json<Value>, ApiError> {
    scoped(state, p, headers, body, Op::Pause).await
}

/// `POST …/workflows/runs/{run_id}/resume`.
pub(crate) async fn resume(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PauseBody>,
) -> Result<Json<Value>, ApiError> {
    scoped(state, p, headers, body, Op::Resume).await
}

/// `POST /v1/workflow-runs/{runId}/pause`.
pub(crate) async fn v1_pause(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PauseBody>,
) -> Result<Json<Value>, ApiError> {
    tenant_wide(state, run_id, headers, body, Op::Pause).await
}

/// `POST /v1/workflow-runs/{runId}/resume`.
pub(crate) async fn v1_resume(
    State(state): State<AppState>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<PauseBody>,
) -> Result<Json<Value>, ApiError> {
    tenant_wide(state, run_id, headers, body, Op::Resume).await
}

/// A run's status in Friday's words (`FridayWorkflowRunStatus`): a run that runs or waits
/// for a timer, a child or a task is `running`; one that is paused, waits on a gate (Friday's
/// approval node pauses its run), or is blocked until its code is fixed, is `paused`; `DONE`
/// is `completed`.
pub(crate) fn friday_run_status(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Paused | RunStatus::Waiting | RunStatus::Blocked => "paused",
        RunStatus::Done => "completed",
        RunStatus::Failed => "failed",
        RunStatus::Cancelled => "cancelled",
        _ => "running",
    }
}

async fn scoped(
    state: AppState,
    p: RunPath,
    headers: HeaderMap,
    body: Result<PauseBody, ApiError>,
    op: Op,
) -> Result<Json<Value>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let body = body?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let (answer, _) = control(&state, &who, summary.run_id, body, op).await?;
    Ok(Json(answer))
}

async fn tenant_wide(
    state: AppState,
    run_id: String,
    headers: HeaderMap,
    body: Result<PauseBody, ApiError>,
    op: Op,
) -> Result<Json<Value>, ApiError> {
    let who = state.auth.authenticate(bearer(&headers))?;
    who.require(ApiScope::Run)?;
    let body = body?;
    let summary = tenant_summary(&state, &who, &run_id)?;
    let (mut answer, status) = control(&state, &who, summary.run_id, body, op).await?;
    // Friday's routes say the run's status in Friday's words too.
    answer["status"] = json!(friday_run_status(status));
    Ok(Json(answer))
}

/// The run's summary if it is in a tenant the caller may access; 404 otherwise.
fn tenant_summary(state: &AppState, who: &Principal, run: &str) -> Result<RunSummary, ApiError> {
    let not_found = || ApiError::not_found(format!("run `{run}` not found"));
    let id: RunId = run.parse().map_err(|_| not_found())?;
    match state.engine.summary(id) {
        Ok(s) if super::approvals::in_tenant(who, s.scope.as_str()) => Ok(s),
        Ok(_) | Err(magrathea_core::RunError::NotFound(_)) => Err(not_found()),
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// The pending DECISION of `onFailure: pause_for_approval` that `run` waits on, if any.
fn failure_pause(state: &AppState, run: RunId) -> Result<Option<InboxItem>, ApiError> {
    let summary = state.engine.summary(run).map_err(ApiError::internal)?;
    if summary.status != RunStatus::Waiting {
        return Ok(None);
    }
    let runs = RunFilter {
        scope: Some(summary.scope.as_str().to_owned()),
        ..RunFilter::default()
    };
    let items = state
        .engine
        .inbox_of(InboxFilter::Pending, &runs, |s| s.run_id == run)
        .map_err(ApiError::internal)?;
    Ok(items
        .into_iter()
        .find(|i| i.workflow_run_id == run && super::approvals::is_failure_pause(i)))
}

/// Pauses or resumes `run`: the answer (`{pause|resume, run}`) and the run's status after.
async fn control(
    state: &AppState,
    who: &Principal,
    run: RunId,
    body: PauseBody,
    op: Op,
) -> Result<(Value, RunStatus), ApiError> {
    if body
        .reason
        .as_ref()
        .is_some_and(|r| r.len() > MAX_REASON_BYTES)
    {
        return Err(ApiError::bad_request(
            "MAG-HTTP-PAUSE-REASON",
            format!("`reason` is longer than {MAX_REASON_BYTES} bytes"),
        ));
    }
    if let Op::Resume = op
        && let Some(item) = failure_pause(state, run)?
    {
        let answer = magrathea_core::GateAnswer::choose("retry");
        let answer = match body.reason {
            Some(reason) => answer.with_comment(reason),
            None => answer,
        };
        let answered = super::inbox::answer_item(state, &item, answer, who).await?;
        if !answered.applied {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "MAG-HTTP-PAUSE-STATE",
                format!(
                    "run {run}: its decision `{}` was answered meanwhile",
                    item.id
                ),
            ));
        }
        let status = state
            .engine
            .summary(run)
            .map_err(ApiError::internal)?
            .status;
        return Ok((json!({ "resume": "resumed", "run": answered.run }), status));
    }
    let done = match op {
        Op::Pause => state
            .engine
            .pause(run, &who.subject, body.reason.as_deref())
            .await
            .map(|ack| ("pause", ack)),
        Op::Resume => state
            .engine
            .unpause(run, &who.subject)
            .await
            .map(|ack| ("resume", ack)),
    };
    let (field, ack) = done.map_err(|e| match e {
        DeliverError::RunNotFound(_) => ApiError::not_found(format!("run `{run}` not found")),
        // Waiting on a gate is Friday's paused run: say how such a run goes on.
        e @ DeliverError::NotPaused(_, RunStatus::Waiting) => ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-PAUSE-STATE",
            format!(
                "{e}; it waits on an inbox item: answer it (`POST \
                 /v1/workflow-approvals/{{id}}/approve` or `/reject`, or the inbox's answer \
                 route) to let it go on"
            ),
        ),
        e @ (DeliverError::NotPausable(..)
        | DeliverError::NotPaused(..)
        | DeliverError::Blocked(..)) => {
            ApiError::new(StatusCode::CONFLICT, "MAG-HTTP-PAUSE-STATE", e.to_string())
        }
        e => ApiError::from(e),
    })?;
    let word = match ack {
        ControlAck::Paused => "paused",
        ControlAck::AlreadyPaused => "alreadyPaused",
        ControlAck::Resumed => "resumed",
    };
    let dto = dto(state, run).await?;
    let run = visible_run(&dto, &dto.run, who);
    Ok((json!({ field: word, "run": run }), dto.run.status))
}
