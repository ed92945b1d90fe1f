//! The trigger routes (Friday §7), on the token's tenant, and their project-scoped
//! equivalents:
//!
//! | route | scope |
//! |-------|-------|
//! | `GET /v1/workflows/{workflowId}/triggers` | `workflow.read` |
//! | `PATCH /v1/workflow-triggers/{id}` `{enabled}` | `workflow.write` |
//! | `POST /v1/workflows/{workflowId}/triggers/resync` | `workflow.write` |
//! | `GET /v1/workflow-triggers/{id}/deliveries` | `workflow.read` |
//! | `GET /brain/{tenant}/project/{project}/triggers` | `workflow.read` |
//! | `GET /brain/{tenant}/project/{project}/workflows/{name}/triggers` | `workflow.read` |
//! | `PATCH /brain/{tenant}/project/{project}/triggers/{id}` | `workflow.write` |
//! | `POST /brain/{tenant}/project/{project}/triggers/resync` | `workflow.write` |
//! | `GET /brain/{tenant}/project/{project}/triggers/deliveries` | `workflow.read` |
//! | `POST /brain/{tenant}/project/{project}/schedules/{name}/trigger` | `workflow.run` |
//!
//! A `{workflowId}` is `<project>:<name>` (or `<tenant>:<project>:<name>`; the tenant must be
//! the token's), or a bare `<name>`, which means that workflow in every project of the
//! token's tenant. `{id}` is a registration id (`trg_…`); one of another tenant is not found
//! (404), as everywhere.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use magrathea_yaml::Scope;
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::{ApiScope, Principal, bearer};
use super::body::{JsonBody, NoFields};
use super::error::ApiError;
use super::state::AppState;
use crate::triggers::NotFired;
use crate::triggers::deliveries::{self, DeliveryQuery, DeliveryStatus};
use crate::triggers::registry::{self, Registration};
use crate::triggers::{TriggerError, Triggers};

impl From<TriggerError> for ApiError {
    fn from(e: TriggerError) -> Self {
        match e {
            TriggerError::NoCatalog => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "MAG-TR001", e.to_string())
            }
            TriggerError::Store(e) => ApiError::internal(e),
        }
    }
}

/// A caller of a `/v1/` route: any token, with `scope`.
fn caller(state: &AppState, headers: &HeaderMap, scope: ApiScope) -> Result<Principal, ApiError> {
    let who = state.auth.authenticate(bearer(headers))?;
    who.require(scope)?;
    Ok(who)
}

/// The projects and workflow name a `{workflowId}` names, for the caller.
fn workflow_scopes(
    state: &AppState,
    who: &Principal,
    workflow_id: &str,
) -> Result<(Vec<Scope>, String), ApiError> {
    let parts: Vec<&str> = workflow_id.split(':').collect();
    let not_found = || ApiError::not_found(format!("workflow `{workflow_id}` not found"));
    let valid = |n: &str| magrathea_yaml::runtime::check_name(n).is_ok() && n != "_tenant";
    if !parts.iter().all(|p| valid(p)) {
        return Err(not_found());
    }
    let projects = crate::triggers::projects(state.root());
    let (scopes, name): (Vec<Scope>, &str) = match parts.as_slice() {
        [name] => (
            projects
                .into_iter()
                .filter(|s| who.may_access(&s.tenant))
                .collect(),
            name,
        ),
        [project, name] => (
            projects
                .into_iter()
                .filter(|s| s.project == *project && who.may_access(&s.tenant))
                .collect(),
            name,
        ),
        [tenant, project, name] if who.may_access(tenant) => {
            (vec![Scope::new(*tenant, *project)], name)
        }
        _ => return Err(not_found()),
    };
    Ok((scopes, name.to_owned()))
}

/// Whether a project of `scopes` (or its tenant) has the workflow `name`.
fn has_workflow(state: &AppState, scopes: &[Scope], name: &str) -> bool {
    scopes
        .iter()
        .any(|s| state.docs().workflow(s, name).is_ok())
}

/// The JSON of a registration with its next fire times and its last delivery.
fn described(state: &AppState, triggers: &Triggers, reg: &Registration) -> Result<Value, ApiError> {
    let catalog = triggers.catalog()?;
    let mut v = registry::shown(reg);
    let map = v
        .as_object_mut()
        .ok_or_else(|| ApiError::internal("a registration is not an object"))?;
    // A trigger of an archived workflow starts nothing (each firing is a failed delivery):
    // not active while the workflow is archived.
    let archived = reg
        .workflow
        .as_deref()
        .is_some_and(|w| state.docs().is_archived(&reg.scope(), w));
    if archived {
        map.insert("active".into(), json!(false));
    }
    map.insert("workflowArchived".into(), json!(archived));
    if reg.kind == registry::TriggerKind::Cron {
        let cursor = crate::triggers::cursor(catalog, &reg.id)?;
        let next = if reg.active && !archived {
            crate::triggers::next_fire_times(state, reg, cursor.as_ref(), triggers.now_ms(), 3)
        } else {
            Vec::new()
        };
        map.insert("nextFireMs".into(), json!(next.first()));
        map.insert(
            "nextFireAt".into(),
            json!(next.first().map(|t| crate::triggers::iso(*t))),
        );
        map.insert(
            "nextFireTimes".into(),
            json!(
                next.iter()
                    .map(|t| crate::triggers::iso(*t))
                    .collect::<Vec<_>>()
            ),
        );
        if let Some(run) = cursor.as_ref().and_then(|c| c.last_run.as_ref()) {
            map.insert("lastRunId".into(), json!(run));
            if let Ok(run) = run.parse()
                && let Ok(status) = state.engine.status(run)
            {
                map.insert("lastRunStatus".into(), json!(status));
            }
        }
    }
    map.insert(
        "lastDelivery".into(),
        json!(deliveries::last(catalog, reg)?.map(|d| d.view())),
    );
    Ok(v)
}

/// `GET /v1/workflows/{workflowId}/triggers` → `{workflowId, triggers}`.
pub(crate) async fn list_for_workflow(
    State(state): State<AppState>,
    Path(workflow_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let who = caller(&state, &headers, ApiScope::Read)?;
    let (scopes, name) = workflow_scopes(&state, &who, &workflow_id)?;
    let triggers = &state.triggers;
    let mut out = Vec::new();
    for scope in &scopes {
        for reg in registry::list(triggers.catalog()?, scope, None)? {
            if reg.workflow.as_deref() == Some(name.as_str()) {
                out.push(described(&state, triggers, &reg)?);
            }
        }
    }
    if out.is_empty() && !has_workflow(&state, &scopes, &name) {
        return Err(ApiError::not_found(format!(
            "workflow `{workflow_id}` not found"
        )));
    }
    Ok(Json(json!({ "workflowId": workflow_id, "triggers": out })))
}

/// `POST /v1/workflows/{workflowId}/triggers/resync` → `{workflowId, resynced, triggers}`.
pub(crate) async fn resync_workflow(
    State(state): State<AppState>,
    Path(workflow_id): Path<String>,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
) -> Result<Json<Value>, ApiError> {
    let who = caller(&state, &headers, ApiScope::Write)?;
    body.0?;
    let (scopes, name) = workflow_scopes(&state, &who, &workflow_id)?;
    let registered = |scope: &Scope| -> Result<bool, ApiError> {
        Ok(registry::list(state.triggers.catalog()?, scope, None)?
            .iter()
            .any(|r| r.workflow.as_deref() == Some(name.as_str())))
    };
    if !has_workflow(&state, &scopes, &name)
        && !scopes.iter().any(|s| registered(s).unwrap_or(false))
    {
        return Err(ApiError::not_found(format!(
            "workflow `{workflow_id}` not found"
        )));
    }
    // The workflow's scopes are projects of one tenant.
    let tenant = scopes.first().map(|s| s.tenant.clone()).unwrap_or_default();
    state
        .trigger_work(&tenant, move |state| {
            let mut resynced = Vec::new();
            let mut out = Vec::new();
            for scope in &scopes {
                let report = state.triggers.resync(state, scope)?;
                resynced.push(json!({ "scope": scope.key(), "report": report }));
                for reg in registry::list(state.triggers.catalog()?, scope, None)? {
                    if reg.workflow.as_deref() == Some(name.as_str()) {
                        out.push(described(state, &state.triggers, &reg)?);
                    }
                }
            }
            Ok(Json(
                json!({ "workflowId": workflow_id, "resynced": resynced, "triggers": out }),
            ))
        })
        .await?
}

/// Body of `PATCH …/triggers/{id}`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TriggerPatch {
    /// `false` pauses the trigger, `true` lifts the pause. Read as an option so that a body
    /// without it is told what it must hold; the schema says it is required.
    #[schemars(required, with = "bool")]
    enabled: Option<bool>,
}

impl TriggerPatch {
    fn enabled(&self) -> Result<bool, ApiError> {
        self.enabled.ok_or_else(|| {
            ApiError::bad_request(
                "MAG-HTTP-INVALID-JSON",
                "the body must be {\"enabled\": true} or {\"enabled\": false}",
            )
        })
    }
}

fn set_enabled(
    state: &AppState,
    reg: &Registration,
    enabled: bool,
) -> Result<Json<Value>, ApiError> {
    let catalog = state.triggers.catalog()?;
    registry::set_paused(catalog, &reg.id, !enabled)?;
    state.triggers.registrations_changed();
    let reg = registry::by_id(catalog, &reg.id)?
        .ok_or_else(|| ApiError::not_found(format!("trigger `{}` not found", reg.id)))?;
    Ok(Json(described(state, &state.triggers, &reg)?))
}

/// `PATCH /v1/workflow-triggers/{id}` with `{enabled}` → the trigger. Disabling pauses it
/// (kept across resyncs); enabling lifts the pause (a document's `enabled: false` stays).
pub(crate) async fn patch(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<TriggerPatch>,
) -> Result<Json<Value>, ApiError> {
    let who = caller(&state, &headers, ApiScope::Write)?;
    let body = body?;
    let reg = registry::by_id(state.triggers.catalog()?, &id)?
        .filter(|r| who.may_access(&r.tenant))
        .ok_or_else(|| ApiError::not_found(format!("trigger `{id}` not found")))?;
    let enabled = body.enabled()?;
    may_enable(&who, enabled)?;
    set_enabled(&state, &reg, enabled)
}

/// Lifting a pause makes the trigger start runs again: it takes `workflow.run` as well as
/// `workflow.write`, as writing a trigger document does (pausing takes `workflow.write`).
fn may_enable(who: &super::auth::Principal, enabled: bool) -> Result<(), ApiError> {
    if enabled {
        who.require(ApiScope::Run)?;
    }
    Ok(())
}

/// Query of the delivery lists.
#[derive(Debug, Deserialize)]
pub(crate) struct DeliveriesQuery {
    /// A trigger's id or document name (project routes).
    trigger: Option<String>,
    /// Only deliveries with this status.
    status: Option<String>,
    /// The `next` of the previous page.
    cursor: Option<String>,
    /// Page size (default 100, at most 1000).
    limit: Option<super::error::QueryLimit>,
}

fn query(q: &DeliveriesQuery, trigger_id: Option<String>) -> Result<DeliveryQuery, ApiError> {
    let status = match q.status.as_deref() {
        None | Some("all") => None,
        Some(s) => Some(
            serde_json::from_value::<DeliveryStatus>(json!(s)).map_err(|_| {
                ApiError::bad_request(
                    "MAG-HTTP-INVALID-QUERY",
                    format!(
                        "unknown status `{s}`: use accepted, duplicate, rejected, skipped, failed or all"
                    ),
                )
            })?,
        ),
    };
    if let Some(c) = q.cursor.as_deref()
        && !crate::triggers::deliveries::is_cursor(c)
    {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-CURSOR",
            format!("`{c}` is not a cursor of this list: pass the `next` of the previous page"),
        ));
    }
    // 100 by default; as every listing, at most its largest page (1,000).
    let limit = match &q.limit {
        None => 100,
        Some(l) => super::error::page_limit(Some(l), 1000)?,
    };
    Ok(DeliveryQuery {
        trigger_id,
        status,
        cursor: q.cursor.clone(),
        limit,
    })
}

/// `GET /v1/workflow-triggers/{id}/deliveries` → `{deliveries, next?}`, newest first.
pub(crate) async fn deliveries_of(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<DeliveriesQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let who = caller(&state, &headers, ApiScope::Read)?;
    let catalog = state.triggers.catalog()?;
    let reg = registry::by_id(catalog, &id)?
        .filter(|r| who.may_access(&r.tenant))
        .ok_or_else(|| ApiError::not_found(format!("trigger `{id}` not found")))?;
    let page = deliveries::list(
        catalog,
        &reg.tenant,
        &reg.project,
        &query(&q, Some(reg.id))?,
    )?;
    Ok(page_response(page))
}

/// `{tenant}` and `{project}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectPath {
    tenant: String,
    project: String,
}

/// `{tenant}`, `{project}` and a `{name}` or `{id}`.
#[derive(Debug, Deserialize)]
pub(crate) struct NamedPath {
    tenant: String,
    project: String,
    name: String,
}

fn project(
    state: &AppState,
    headers: &HeaderMap,
    tenant: &str,
    project: &str,
    scope: ApiScope,
) -> Result<Scope, ApiError> {
    state.authorize(headers, tenant, scope)?;
    state.scope(tenant, project)
}

/// `GET /brain/{tenant}/project/{project}/triggers` → `{triggers}`: every trigger of the
/// project.
pub(crate) async fn list_project(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let scope = project(&state, &headers, &p.tenant, &p.project, ApiScope::Read)?;
    let mut out = Vec::new();
    for reg in registry::list(state.triggers.catalog()?, &scope, None)? {
        out.push(described(&state, &state.triggers, &reg)?);
    }
    Ok(Json(json!({ "triggers": out })))
}

/// `GET /brain/{tenant}/project/{project}/workflows/{name}/triggers` → `{workflowId,
/// triggers}`.
pub(crate) async fn list_project_workflow(
    State(state): State<AppState>,
    Path(p): Path<NamedPath>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let scope = project(&state, &headers, &p.tenant, &p.project, ApiScope::Read)?;
    let mut out = Vec::new();
    for reg in registry::list(state.triggers.catalog()?, &scope, None)? {
        if reg.workflow.as_deref() == Some(p.name.as_str()) {
            out.push(described(&state, &state.triggers, &reg)?);
        }
    }
    if out.is_empty() && !has_workflow(&state, std::slice::from_ref(&scope), &p.name) {
        return Err(ApiError::not_found(format!(
            "workflow `{}` not found",
            p.name
        )));
    }
    Ok(Json(json!({
        "workflowId": format!("{}:{}", p.project, p.name),
        "triggers": out
    })))
}

/// `POST /brain/{tenant}/project/{project}/triggers/resync` → `{resynced, triggers}`.
pub(crate) async fn resync_project(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
) -> Result<Json<Value>, ApiError> {
    let scope = project(&state, &headers, &p.tenant, &p.project, ApiScope::Write)?;
    body.0?;
    let tenant = scope.tenant.clone();
    state
        .trigger_work(&tenant, move |state| {
            let report = state.triggers.resync(state, &scope)?;
            let mut out = Vec::new();
            for reg in registry::list(state.triggers.catalog()?, &scope, None)? {
                out.push(described(state, &state.triggers, &reg)?);
            }
            Ok(Json(json!({ "resynced": report, "triggers": out })))
        })
        .await?
}

/// The registration `id_or_name` of a project: an id, or a document name (when a document
/// declares two triggers, a webhook and a subscription, the name is ambiguous: use the id).
fn find(state: &AppState, scope: &Scope, id_or_name: &str) -> Result<Registration, ApiError> {
    let regs = registry::list(state.triggers.catalog()?, scope, None)?;
    let mut found: Vec<Registration> = regs
        .into_iter()
        .filter(|r| r.id == id_or_name || r.name == id_or_name)
        .collect();
    match found.len() {
        0 => Err(ApiError::not_found(format!(
            "trigger `{id_or_name}` not found"
        ))),
        1 => Ok(found.remove(0)),
        _ => Err(ApiError::bad_request(
            "MAG-HTTP-AMBIGUOUS-TRIGGER",
            format!(
                "`{id_or_name}` declares several triggers ({}): name one by its id",
                found
                    .iter()
                    .map(|r| format!("{} {}", r.kind.as_str(), r.id))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

/// `PATCH /brain/{tenant}/project/{project}/triggers/{name}` (an id or a document name) with
/// `{enabled}` → the trigger.
pub(crate) async fn patch_project(
    State(state): State<AppState>,
    Path(p): Path<NamedPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<TriggerPatch>,
) -> Result<Json<Value>, ApiError> {
    let scope = project(&state, &headers, &p.tenant, &p.project, ApiScope::Write)?;
    let body = body?;
    let reg = find(&state, &scope, &p.name)?;
    let enabled = body.enabled()?;
    may_enable(&caller(&state, &headers, ApiScope::Write)?, enabled)?;
    set_enabled(&state, &reg, enabled)
}

/// `GET /brain/{tenant}/project/{project}/triggers/deliveries?trigger=&status=&cursor=&limit=`
/// → `{deliveries, next?}`, newest first.
pub(crate) async fn deliveries_of_project(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    Query(q): Query<DeliveriesQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let scope = project(&state, &headers, &p.tenant, &p.project, ApiScope::Read)?;
    let trigger_id = match &q.trigger {
        Some(t) => Some(match find(&state, &scope, t) {
            Ok(reg) => reg.id,
            // A trigger whose document was removed keeps its deliveries for the retention.
            Err(e) if e.status == StatusCode::NOT_FOUND => {
                let retired = deliveries::retired_trigger_ids(
                    state.triggers.catalog()?,
                    &scope.tenant,
                    &scope.project,
                    t,
                )?;
                match <[String; 1]>::try_from(retired) {
                    Ok([id]) => id,
                    Err(ids) if ids.is_empty() => return Err(e),
                    Err(ids) => {
                        return Err(ApiError::bad_request(
                            "MAG-HTTP-AMBIGUOUS-TRIGGER",
                            format!(
                                "`{t}` named several removed triggers ({}): name one by its id",
                                ids.join(", ")
                            ),
                        ));
                    }
                }
            }
            Err(e) => return Err(e),
        }),
        None => None,
    };
    let page = deliveries::list(
        state.triggers.catalog()?,
        &scope.tenant,
        &scope.project,
        &query(&q, trigger_id)?,
    )?;
    Ok(page_response(page))
}

/// A page of deliveries as `{deliveries, next?}`, with the next page's cursor also in the
/// `X-Next-Cursor` header, as the other paged routes give it.
fn page_response(page: deliveries::DeliveryPage) -> axum::response::Response {
    super::inbox::paged(page.view(), page.next)
}

/// `POST /brain/{tenant}/project/{project}/schedules/{name}/trigger` → 202 `{workflowRunId,
/// workflowName, delivery}`: fires the schedule now.
pub(crate) async fn fire_schedule(
    State(state): State<AppState>,
    Path(p): Path<NamedPath>,
    headers: HeaderMap,
    body: JsonBody<NoFields>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    body.0?;
    match state
        .triggers
        .fire_now(&state, &scope, &p.name, &who.subject)
        .await?
    {
        Ok(d) if d.run_id.is_some() => Ok((
            StatusCode::ACCEPTED,
            Json(json!({
                "workflowRunId": d.run_id,
                "workflowName": registry::by_id(state.triggers.catalog()?, &d.trigger_id)?.and_then(|r| r.workflow),
                "delivery": d.view(),
            })),
        )),
        // Refused parameters and an archived workflow answer as every other start path
        // does; any other refusal (no such workflow) is the trigger's failure.
        Ok(d) => {
            let message = d
                .message
                .unwrap_or_else(|| "the run could not be started".into());
            Err(match d.error_code.as_deref() {
                Some("MAG-HTTP-INVALID-PARAMS") => {
                    ApiError::bad_request("MAG-HTTP-INVALID-PARAMS", message)
                }
                Some("MAG-VR001") => ApiError::new(StatusCode::CONFLICT, "MAG-VR001", message),
                _ => ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    "MAG-HTTP-TRIGGER-FAILED",
                    message,
                ),
            })
        }
        Err(NotFired::Off(why)) => Err(ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-TRIGGER-DISABLED",
            why,
        )),
        Err(NotFired::Unknown(why)) => Err(ApiError::not_found(why)),
    }
}
