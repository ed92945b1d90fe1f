//! `POST …/workflows/runs/{run_id}/retry` (scope `workflow.run`) with `{fromState?,
//! definition: "current" | "frozen"}` → 202 `{workflowRunId, workflowName, retryOf,
//! fromState, definition}`: a new run of a FAILED or CANCELLED YAML run's workflow, with its
//! parameters, that begins at `fromState` (by default the state the original ended in) with
//! the variables the original had when it last entered that state (Friday's `retryRun`).
//!
//! The entry state and the variables are derived from the original's journal (its
//! `StateEnteredRecord`s and the `VarRecord`s before them) and frozen in the new run's
//! `StartRecord` (`entry`), so its replay begins where it began. `frozen` runs the original's
//! definition, version and bounds; `current` the document as it is now, which must have the
//! state. The link is kept in the store (`run.origin`, kind `retry`) and shown by
//! `GET …/runs/{run_id}/origin`. With an `Idempotency-Key`, a retry sent again answers 200
//! with the run the first one started.
//!
//! Refusals: 409 `MAG-HTTP-RETRY-STATE` for a run that did not fail and was not cancelled;
//! 400 `MAG-HTTP-RETRY-FROM` for a state the original never entered (or the current document
//! lacks), `MAG-HTTP-RETRY-YAML` for a code workflow's run, `MAG-HTTP-RERUN-CHILD` for a
//! sub-run, `MAG-HTTP-INVALID-JSON` for a missing or unknown `definition`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use magrathea_core::{Entry, EntryPoint, Record, RunId, RunStatus, StartRequest};
use magrathea_yaml::{LoadOptions, parse_yaml};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::auth::ApiScope;
use super::body::JsonBody;
use super::error::ApiError;
use super::rerun::{definition_choice, put_origin, start_record};
use super::runs::RunPath;
use super::state::{AppState, Starter};

/// Body of a retry.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RetryBody {
    /// The state to begin again from (by default the last one the run entered).
    from_state: Option<String>,
    /// Required: `current` (the document now) or `frozen` (the run's own definition). Read as
    /// an option so that a body without it is told what it must hold.
    #[schemars(required, with = "String")]
    definition: Option<String>,
}

/// Why a run's journal gives no place to retry from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoEntry {
    /// The run never entered a state (a code workflow's run, or one that failed at once).
    #[error("the run never entered a state: there is nothing to retry from")]
    NoState,
    /// The run never entered the state asked for.
    #[error("the run never entered state `{0}`")]
    NotEntered(String),
}

/// Where a retry of the run whose journal is `journal` begins: `from` (by default the last
/// state it entered), with the variables it had when it last entered that state.
pub fn entry_of(journal: &[Entry], from: Option<&str>) -> Result<EntryPoint, NoEntry> {
    let target = match from {
        Some(s) => s.to_owned(),
        None => default_state(journal).ok_or(NoEntry::NoState)?,
    };
    let mut vars = Map::new();
    let mut at_entry = None;
    for e in journal {
        match &e.record {
            Record::Var { key, value, .. } => {
                vars.insert(key.clone(), value.clone());
            }
            Record::StateEntered { state, .. } if *state == target => {
                at_entry = Some(vars.clone());
            }
            _ => {}
        }
    }
    let vars = at_entry.ok_or_else(|| NoEntry::NotEntered(target.clone()))?;
    Ok(EntryPoint {
        state: target,
        vars: Value::Object(vars),
    })
}

/// The state a retry begins at by default: the last the run entered that is not a `terminal`
/// of its definition (a run that failed at `outcome: failure` is retried where it went
/// wrong, not at the terminal that ends it again at once) nor one of the compensations its
/// saga ran after the failure (a retry runs the failed state again, not an undo); the last it
/// entered if it entered no other.
fn default_state(journal: &[Entry]) -> Option<String> {
    let definition = journal.iter().find_map(|e| match &e.record {
        Record::Start(s) => Some((s.workflow_name.clone(), s.definition.clone()?)),
        _ => None,
    });
    let states = definition
        .and_then(|(name, text)| parse_yaml(&name, &text, &LoadOptions::default()).ok())
        .and_then(|root| root.get("states").cloned());
    let is_terminal = |state: &str| {
        states
            .as_ref()
            .and_then(|s| s.get(state))
            .and_then(|spec| spec.get("type"))
            .and_then(magrathea_yaml::YamlNode::as_str)
            == Some("terminal")
    };
    // The states named as some state's `compensate:`: a saga enters them after the failure.
    let compensations: Vec<&str> = states
        .as_ref()
        .and_then(magrathea_yaml::YamlNode::as_map)
        .map(|m| {
            m.iter()
                .filter_map(|(_, spec)| {
                    spec.get("compensate")
                        .and_then(magrathea_yaml::YamlNode::as_str)
                })
                .collect()
        })
        .unwrap_or_default();
    let entered: Vec<&str> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::StateEntered { state, .. } => Some(state.as_str()),
            _ => None,
        })
        .collect();
    // The compensations come last, after the state whose failure began the saga.
    let before_saga = entered
        .iter()
        .rposition(|s| !compensations.contains(s))
        .map_or(&entered[..0], |i| &entered[..=i]);
    before_saga
        .iter()
        .rev()
        .find(|s| !is_terminal(s))
        .or(entered.last())
        .map(|s| (*s).to_owned())
}

/// Whether the YAML document `text` (of workflow `name`) has a state `state`.
pub fn defines_state(name: &str, text: &str, state: &str) -> bool {
    parse_yaml(name, text, &LoadOptions::default())
        .ok()
        .and_then(|root| root.get("states").map(|s| s.get(state).is_some()))
        .unwrap_or(false)
}

/// Records that `run` retries `of` from `from_state` on the `definition`; a failure to record
/// is logged, the run stands.
pub fn record_origin(
    catalog: &dyn magrathea_core::Catalog,
    run: RunId,
    of: RunId,
    from_state: &str,
    definition: &str,
) {
    let origin = json!({
        "kind": "retry",
        "of": of.to_string(),
        "fromState": from_state,
        "definition": definition,
    });
    put_origin(catalog, run, &origin);
}

fn from_error(e: &NoEntry) -> ApiError {
    ApiError::bad_request("MAG-HTTP-RETRY-FROM", e.to_string())
}

/// The handler.
pub(crate) async fn retry(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<RetryBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let body = body?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let which = match body.definition.as_deref() {
        Some(given) => definition_choice(given)?,
        None => {
            return Err(ApiError::bad_request(
                "MAG-HTTP-INVALID-JSON",
                "`definition` is required: `current` (the document as it is now) or `frozen` \
                 (the original's definition)",
            ));
        }
    };
    if !matches!(summary.status, RunStatus::Failed | RunStatus::Cancelled) {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-RETRY-STATE",
            format!(
                "run {} is {}: only a FAILED or CANCELLED run can be retried",
                summary.run_id, summary.status
            ),
        ));
    }
    let original = start_record(&state, summary.run_id)?;
    if original.parent.is_some() {
        return Err(ApiError::bad_request(
            "MAG-HTTP-RERUN-CHILD",
            "a sub-run is retried through its parent: retry the parent run",
        ));
    }
    if original.frontend.as_str() != "yaml" {
        return Err(ApiError::bad_request(
            "MAG-HTTP-RETRY-YAML",
            "only a YAML workflow's run can be retried from a state; rerun it instead",
        ));
    }
    // With an `Idempotency-Key`, a retry sent again (a client retrying after a timeout) gets
    // the run the first one started: keyed by the run it retries, so it never meets a
    // start's or a rerun's key.
    let key = super::runs::idempotency_key(&headers)?
        .map(|k| format!("api:{}:retry:{}:{k}", scope.key(), summary.run_id));
    let earlier = |run: RunId| {
        let origin = super::rerun::recorded_origin(&state, run);
        (
            StatusCode::OK,
            Json(json!({
                "workflowRunId": run.to_string(),
                "workflowName": original.workflow_name,
                "retryOf": summary.run_id.to_string(),
                "fromState": origin["fromState"],
                "definition": origin["definition"],
            })),
        )
    };
    if let Some(existing) = state.run_of_key(key.as_deref())? {
        return Ok(earlier(existing));
    }
    let run = summary.run_id;
    let journal = state
        .journal_read(&p.tenant, move |engine| engine.journal(run))
        .await?
        .map_err(ApiError::internal)?;
    let entry = entry_of(&journal, body.from_state.as_deref()).map_err(|e| from_error(&e))?;
    let from_state = entry.state.clone();
    let starter = Starter::new(&who.subject);
    let mut req = match which {
        "frozen" => {
            state.refuse_if_archived(&scope, &original.workflow_name)?;
            StartRequest::repeat_of(&original).started_by(&who.subject)
        }
        _ => state
            .runtime
            .start_request(
                &scope,
                &original.workflow_name,
                original.params.clone(),
                |r| starter.apply(r),
            )
            .map_err(|e| state.start_error(e))?,
    };
    let defined = req
        .definition
        .as_deref()
        .is_some_and(|text| defines_state(&original.workflow_name, text, &from_state));
    if !defined {
        return Err(ApiError::bad_request(
            "MAG-HTTP-RETRY-FROM",
            format!(
                "the {which} definition of workflow `{}` has no state `{from_state}`",
                original.workflow_name
            ),
        ));
    }
    req.entry = Some(entry);
    // With a key, the run gets an id chosen here: a retry whose key another took meanwhile
    // returns that one's run, and only its own id says it created one.
    let chosen = key.as_ref().map(|_| RunId::new());
    if let Some(key) = key {
        req = req.idempotency_key(key);
        req.run_id = chosen;
    }
    let run = state
        .engine
        .start(req)
        .await
        .map_err(ApiError::from_start)?;
    if chosen.is_some_and(|id| id != run) {
        return Ok(earlier(run));
    }
    state.metrics.run_started("retry");
    if let Ok(catalog) = state.triggers.catalog() {
        record_origin(catalog, run, summary.run_id, &from_state, which);
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({
            "workflowRunId": run.to_string(),
            "workflowName": original.workflow_name,
            "retryOf": summary.run_id.to_string(),
            "fromState": from_state,
            "definition": which,
        })),
    ))
}
