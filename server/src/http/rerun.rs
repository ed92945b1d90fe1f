//! `POST …/workflows/runs/{run_id}/rerun` (scope `workflow.run`) with `{definition?:
//! "current" | "frozen"}` → 202 `{workflowRunId, workflowName, rerunOf, definition}`: a new run
//! of the same workflow with the same parameters (Friday's rerun), started by the caller.
//!
//! `current` (the default) starts the workflow as its document (or registered code) is now,
//! validating the parameters again; `frozen` starts exactly the definition, version and bounds
//! the original run started with, whatever became of the document since. The link is kept in
//! the store (`run.origin`) and shown as `rerunOf` by `GET …/runs/{run_id}/origin`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use magrathea_core::{Record, RunId, StartRecord, StartRequest};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::ApiScope;
use super::body::JsonBody;
use super::error::ApiError;
use super::runs::RunPath;
use super::state::{AppState, Starter};

/// Run id → `{kind, of, …}`: where a run came from (a rerun or a retry).
const ORIGINS: &str = "run.origin";

/// Keeps `origin` as where `run` came from; a failure to record is logged, the run stands.
pub(crate) fn put_origin(catalog: &dyn magrathea_core::Catalog, run: RunId, origin: &Value) {
    if let Err(e) = catalog.put(ORIGINS, &run.to_string(), origin.to_string().as_bytes()) {
        tracing::warn!(%run, error = %e, "could not record where a run came from");
    }
}

/// Where `run` came from, as `GET …/runs/{run_id}/origin` shows it: `{kind: "retry",
/// retryOf, fromState, definition}`, `{rerunOf, definition}`, or `{}` for a run started
/// afresh.
pub fn origin_of(
    catalog: &dyn magrathea_core::Catalog,
    run: RunId,
) -> Result<Value, magrathea_core::StoreError> {
    let found = catalog
        .get(ORIGINS, &run.to_string())?
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
    Ok(match found {
        Some(o) if o["kind"] == "retry" => json!({
            "kind": "retry",
            "retryOf": o["of"],
            "fromState": o["fromState"],
            "definition": o["definition"],
        }),
        Some(o) => json!({ "rerunOf": o["of"], "definition": o["definition"] }),
        None => json!({}),
    })
}

/// Where `run` came from as [`origin_of`] shows it; `{}` when that cannot be read.
pub(crate) fn recorded_origin(state: &AppState, run: RunId) -> Value {
    state
        .triggers
        .catalog()
        .ok()
        .and_then(|catalog| origin_of(catalog, run).ok())
        .unwrap_or_else(|| json!({}))
}

/// Records that `run` reruns `of` on the `definition` (`current` or `frozen`); a failure to
/// record is logged, the run stands.
pub fn record_origin(
    catalog: &dyn magrathea_core::Catalog,
    run: RunId,
    of: RunId,
    definition: &str,
) {
    let origin = json!({ "kind": "rerun", "of": of.to_string(), "definition": definition });
    put_origin(catalog, run, &origin);
}

/// The definition a repeated run starts on, `current` or `frozen`, as a body gave it.
pub(crate) fn definition_choice(given: &str) -> Result<&'static str, ApiError> {
    match given {
        "current" => Ok("current"),
        "frozen" => Ok("frozen"),
        other => Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-JSON",
            format!("`definition: {other}`: expected `current` or `frozen`"),
        )),
    }
}

/// Body of a rerun.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RerunBody {
    /// `current` (the document now, the default) or `frozen` (the run's own definition).
    definition: Option<String>,
}

pub(crate) fn start_record(state: &AppState, run: RunId) -> Result<StartRecord, ApiError> {
    let first = state
        .engine
        .store()
        .read_journal_range(run, 0, 1, usize::MAX)
        .map_err(ApiError::internal)?;
    match first.first().map(|(_, b)| magrathea_core::codec::decode(b)) {
        Some(Ok((Record::Start(s), _))) => Ok(*s),
        _ => Err(ApiError::internal(
            "the run's journal does not start with its StartRecord",
        )),
    }
}

/// The handler.
pub(crate) async fn rerun(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<RerunBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let body = body?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let original = start_record(&state, summary.run_id)?;
    if original.parent.is_some() {
        return Err(ApiError::bad_request(
            "MAG-HTTP-RERUN-CHILD",
            "a sub-run is rerun through its parent: rerun the parent run",
        ));
    }
    let which = definition_choice(body.definition.as_deref().unwrap_or("current"))?;
    // With an `Idempotency-Key`, a rerun sent again (a client retrying after a timeout) gets
    // the same new run: keyed by the run it reruns, so it never meets a start's key.
    let key = super::runs::idempotency_key(&headers)?
        .map(|k| format!("api:{}:rerun:{}:{k}", scope.key(), summary.run_id));
    let answer = |status, run: RunId, definition: &str| {
        (
            status,
            Json(json!({
                "workflowRunId": run.to_string(),
                "workflowName": original.workflow_name,
                "rerunOf": summary.run_id.to_string(),
                "definition": definition,
            })),
        )
    };
    // The run an earlier request with the key started, with the definition it started on
    // (not this request's).
    let earlier = |run: RunId| {
        let origin = recorded_origin(&state, run);
        let definition = origin["definition"].as_str().unwrap_or(which);
        answer(StatusCode::OK, run, definition)
    };
    if let Some(existing) = state.run_of_key(key.as_deref())? {
        return Ok(earlier(existing));
    }
    let starter = Starter {
        idempotency_key: key.clone(),
        ..Starter::new(&who.subject)
    };
    let (run, created) = match which {
        "current" => {
            state
                .start_as(
                    &scope,
                    &original.workflow_name,
                    original.params.clone(),
                    &starter,
                    "rerun",
                )
                .await?
        }
        _ => {
            state.refuse_if_archived(&scope, &original.workflow_name)?;
            let mut req = StartRequest::repeat_of(&original).started_by(&who.subject);
            // With a key, the run gets an id chosen here: a rerun whose key another took
            // meanwhile returns that one's run, and only its own id says it created one.
            let chosen = key.as_ref().map(|_| RunId::new());
            if let Some(key) = &key {
                req = req.idempotency_key(key.clone());
                req.run_id = chosen;
            }
            let run = state
                .engine
                .start(req)
                .await
                .map_err(ApiError::from_start)?;
            let created = chosen.is_none_or(|id| id == run);
            if created {
                state.metrics.run_started("rerun");
            }
            (run, created)
        }
    };
    if !created {
        return Ok(earlier(run));
    }
    if let Ok(catalog) = state.triggers.catalog() {
        record_origin(catalog, run, summary.run_id, which);
    }
    Ok(answer(StatusCode::ACCEPTED, run, which))
}

/// `GET …/workflows/runs/{run_id}/origin` → `{rerunOf, definition}` for a rerun, `{kind:
/// "retry", retryOf, fromState, definition}` for a retry, `{}` for a run started otherwise.
pub(crate) async fn origin(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    Ok(Json(origin_of(state.triggers.catalog()?, summary.run_id)?))
}
