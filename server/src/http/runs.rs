//! Runs over REST (reference §8.2): start, read, list, cancel (the journal: [`super::journal`]).
//!
//! Every route is scoped by `{tenant}/{project}`: a run of another scope is answered 404,
//! exactly like a run that does not exist.
//!
//! A start records `startedBy` = the token's subject; a `startedBy` in the body is not trusted
//! and is recorded as the run's `requestedBy` (with `--insecure-no-auth` it is the starter,
//! `anonymous` without one). An `Idempotency-Key` header (1 to 255 visible ASCII characters,
//! else 400) makes a start repeatable: the same key for the same workflow of the same `tenant/project` answers 200
//! with the run it started first, instead of 201 with a new one; keys of different projects,
//! tenants or workflows never meet. The run in the reply of `cancel` is shown whole only to a
//! token that also has `workflow.read` (else its [`RunBrief`](super::visible::RunBrief)).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use magrathea_core::{
    CancelAck, Engine, Record, RunError, RunFilter, RunId, RunView, StartRecord, StoreError,
};
use magrathea_yaml::{LoadOptions, YamlNode, parse_yaml};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::auth::ApiScope;
use super::body::JsonBody;
use super::error::ApiError;
use super::run_filter::{Filters, scan};
use super::state::{AppState, Starter};
use super::sub_runs::{SubRun, sub_runs};
use super::visible::visible_run;

/// The request header that makes a start repeatable.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";

/// The longest accepted `Idempotency-Key`, in bytes.
pub const MAX_IDEMPOTENCY_KEY: usize = 255;

/// Largest page of `GET …/workflows/runs` (the reference's cap).
pub const MAX_PAGE: usize = 100;

/// `{tenant}` and `{project}` of a route.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectPath {
    tenant: String,
    project: String,
}

/// A workflow of a project.
#[derive(Debug, Deserialize)]
pub(crate) struct WorkflowPath {
    tenant: String,
    project: String,
    name: String,
}

/// A run of a project.
#[derive(Debug, Deserialize)]
pub(crate) struct RunPath {
    pub(crate) tenant: String,
    pub(crate) project: String,
    pub(crate) run_id: String,
}

/// Body of `POST …/workflows/{name}/start`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StartBody {
    /// The run's parameters, checked against the workflow's `parameters:`.
    #[serde(default)]
    params: Value,
    /// Kept as the run's `requestedBy`; `startedBy` is the token's subject.
    #[serde(default)]
    started_by: Option<String>,
    /// Start the project's draft (`_vance/workflow-drafts/<name>.yaml`) instead of the live
    /// document.
    #[serde(default)]
    draft: bool,
}

/// Query of `POST …/workflows/{name}/start`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StartQuery {
    /// `?draft=true`: like `"draft": true` in the body.
    #[serde(default)]
    draft: bool,
}

/// Reply of a start (REST, WebSocket and events).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Started {
    /// The new run.
    #[schemars(with = "String")]
    pub workflow_run_id: RunId,
    /// Its workflow.
    pub workflow_name: String,
}

/// A run as the API and the `magrathea` command show it (the reference's
/// `MagratheaProcessDto`): the fields of its [`RunView`], a projection of the journal, plus the
/// `description` and `tags` of the workflow document (reference §2.1: "visible in Web UI
/// listings").
///
/// The two labels are read from the run's frozen definition (`StartRecord.definitionYaml`), so
/// they are what the run executes, whatever became of the document since. Both are always
/// present: a code workflow has no document, so its `description` is `null` and its `tags`
/// are `[]`, exactly like a document that declares neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDto {
    /// The run as its journal shows it (serialised inline: `workflowRunId`, `status`, …).
    #[serde(flatten)]
    pub run: RunView,
    /// The workflow document's `description:`; `null` when it has none or is code.
    pub description: Option<String>,
    /// The workflow document's `tags:`; empty when it has none or is code.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Who the starter said the run is for (an API body's `startedBy`, not verified), or the
    /// subject of the token that fired an event; absent when none was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    /// The SHA-256 (hex) of the frozen definition the run executes, the version it runs: the
    /// same as the `version` a publish answered and `versions` lists. `null` for a code
    /// workflow.
    #[serde(default)]
    pub definition_hash: Option<String>,
    /// Whether the run was started from a draft (its version ends with `+draft`).
    #[serde(default)]
    pub draft: bool,
    /// The runs this run started (`workflow_task`, fan-outs), in journal order, at most
    /// [`MAX_SUB_RUNS`](super::sub_runs::MAX_SUB_RUNS); their `parentRunId` names this run.
    #[serde(default)]
    pub sub_runs: Vec<SubRun>,
    /// How many runs this run started in all (more than `subRuns` holds when it is cut).
    #[serde(default)]
    pub sub_run_count: usize,
}

impl RunDto {
    /// The DTO of `run`, reading its journal once. A journal with records that cannot be
    /// decoded is shown like [`Engine::run`] shows it, from the records that can.
    pub fn load(engine: &Engine, run: RunId) -> Result<Self, RunError> {
        let summary = engine.summary(run)?;
        let store = engine.store();
        match store.read_journal(run) {
            Ok(entries) => {
                let start = entries.iter().find_map(|e| match &e.record {
                    Record::Start(s) => Some(s),
                    _ => None,
                });
                let mut dto = Self::new(RunView::project(&entries, &summary), start.map(|s| &**s));
                (dto.sub_runs, dto.sub_run_count) = sub_runs(engine, &summary, &entries);
                Ok(dto)
            }
            Err(StoreError::Decode(_)) => {
                let view = engine.run(run)?;
                let start = store.read_journal_raw(run)?.iter().find_map(|(_, bytes)| {
                    match magrathea_core::codec::decode(bytes) {
                        Ok((Record::Start(s), _)) => Some(s),
                        _ => None,
                    }
                });
                Ok(Self::new(view, start.as_deref()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The DTO of a run whose view and `StartRecord` are at hand (`None`: no labels).
    pub fn new(run: RunView, start: Option<&StartRecord>) -> Self {
        let (description, tags) = start.map(labels).unwrap_or_default();
        Self {
            run,
            description,
            tags,
            requested_by: start.and_then(|s| s.requested_by.clone()),
            definition_hash: start
                .filter(|s| !s.frontend.is_code())
                .and_then(|s| s.definition.as_deref())
                .map(crate::triggers::registry::sha256_hex),
            draft: start.is_some_and(|s| {
                !s.frontend.is_code()
                    && magrathea_yaml::runtime::is_draft_version(&s.workflow_version)
            }),
            sub_runs: Vec::new(),
            sub_run_count: 0,
        }
    }
}

/// `description` and `tags` of a YAML run's frozen definition. The definition was valid when
/// the run started; it is read with the YAML reader only (not validated again), so that a
/// later, stricter validation rule cannot hide an old run's labels.
fn labels(start: &StartRecord) -> (Option<String>, Vec<String>) {
    let text = match &start.definition {
        Some(text) if !start.frontend.is_code() => text,
        _ => return (None, Vec::new()),
    };
    let Ok(root) = parse_yaml(&start.workflow_name, text, &LoadOptions::default()) else {
        return (None, Vec::new());
    };
    let description = root
        .get("description")
        .and_then(YamlNode::as_str)
        .map(str::to_owned);
    let tags = root
        .get("tags")
        .and_then(YamlNode::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(YamlNode::as_str)
        .map(str::to_owned)
        .collect();
    (description, tags)
}

/// `POST /brain/{tenant}/project/{project}/workflows/{name}/start` → 201 [`Started`] (200
/// with the earlier run when its `Idempotency-Key` started one). `startedBy` is the token's
/// subject; a body's `startedBy` is recorded as `requestedBy` (see [`Starter::claimed`]).
pub(crate) async fn start(
    State(state): State<AppState>,
    Path(p): Path<WorkflowPath>,
    Query(q): Query<StartQuery>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<StartBody>,
) -> Result<(StatusCode, Json<Started>), ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let body = body?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let key = idempotency_key(&headers)?;
    let starter = Starter {
        // Scoped by project and workflow, so one tenant's key never finds another's run.
        idempotency_key: key.map(|k| format!("api:{}:{}:{k}", scope.key(), p.name)),
        ..Starter::claimed(&who, body.started_by)
    };
    let (run, created) = state
        .start_from(
            &scope,
            &p.name,
            body.params,
            &starter,
            "rest",
            body.draft || q.draft,
        )
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        Json(Started {
            workflow_run_id: run,
            workflow_name: p.name,
        }),
    ))
}

/// The request's `Idempotency-Key`: 400 unless 1 to [`MAX_IDEMPOTENCY_KEY`] visible ASCII
/// characters.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY_HEADER) else {
        return Ok(None);
    };
    checked_idempotency_key_bytes(value.as_bytes()).map(Some)
}

/// An idempotency key as a WebSocket start gives it: the header's rules.
pub(crate) fn checked_idempotency_key(key: &str) -> Result<String, ApiError> {
    checked_idempotency_key_bytes(key.as_bytes())
}

/// 1 to [`MAX_IDEMPOTENCY_KEY`] visible ASCII characters, else 400.
fn checked_idempotency_key_bytes(bytes: &[u8]) -> Result<String, ApiError> {
    if bytes.is_empty()
        || bytes.len() > MAX_IDEMPOTENCY_KEY
        || !bytes.iter().all(u8::is_ascii_graphic)
    {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-IDEMPOTENCY-KEY",
            format!(
                "`Idempotency-Key` must be 1 to {MAX_IDEMPOTENCY_KEY} visible ASCII characters \
                 (got {} bytes)",
                bytes.len()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// Query of `GET …/workflows/runs/{run_id}`: an optional long poll ([`super::run_wait`]).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct GetQuery {
    wait: Option<String>,
    until: Option<String>,
}

/// `GET …/workflows/runs/{run_id}[?wait=30s&until=ended|settled]` → the [`RunDto`], after
/// waiting for the run to end or settle when `wait` is given ([`super::run_wait`]).
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    Query(q): Query<GetQuery>,
    headers: HeaderMap,
) -> Result<Json<RunDto>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let wait = super::run_wait::Wait::parse(q.wait.as_deref(), q.until.as_deref())?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    if let Some(wait) = wait {
        let token = super::auth::bearer(&headers);
        wait.wait(&state, &p.tenant, &who, token, &summary).await?;
        // A token revoked while the request waited gets no answer but 401.
        state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    }
    Ok(Json(dto(&state, summary.run_id).await?))
}

/// The [`RunDto`] of a run known to exist: its journal read whole, off the runtime's threads
/// and within its tenant's share of such reads ([`super::journal_reads`]).
pub(crate) async fn dto(state: &AppState, run: RunId) -> Result<RunDto, ApiError> {
    state
        .journal_read(&state.tenant_of(run), move |engine| {
            RunDto::load(engine, run)
        })
        .await?
        .map_err(ApiError::internal)
}

/// Query of `GET …/workflows/runs` (the filters: [`super::run_filter`]).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListQuery {
    workflow: Option<String>,
    limit: Option<super::error::QueryLimit>,
    cursor: Option<String>,
    status: Option<String>,
    started_by: Option<String>,
    since: Option<String>,
    until: Option<String>,
}

/// The header that carries the cursor of the next (older) page; absent on the last page.
pub const NEXT_CURSOR_HEADER: &str = "x-next-cursor";

/// `GET …/workflows/runs?workflow=&status=&startedBy=&since=&until=&limit=&cursor=` → a JSON
/// array of [`RunDto`]s, newest first, as the reference's `List<MagratheaProcessDto>`; `limit`
/// (default and maximum 100) per page. When older runs remain, the `X-Next-Cursor` header holds
/// the `cursor` of the next page and a `Link: <…>; rel="next"` header the whole URL. A filtered
/// page reads at most [`MAX_SCAN`](super::run_filter::MAX_SCAN) runs, and may therefore hold
/// fewer than `limit` runs and still name a next page; so does a page whose JSON passes
/// [`MAX_PAGE_BYTES`](super::inbox::MAX_PAGE_BYTES) (after its first run).
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    use axum::response::IntoResponse;
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let limit = super::error::page_limit(q.limit.as_ref(), MAX_PAGE)?;
    let before = match q.cursor.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => Some(c.parse::<RunId>().map_err(|_| {
            ApiError::bad_request("MAG-HTTP-INVALID-CURSOR", format!("invalid cursor `{c}`"))
        })?),
        None => None,
    };
    let filters = Filters::parse(
        q.status.as_deref(),
        q.started_by.as_deref(),
        q.since.as_deref(),
        q.until.as_deref(),
    )?;
    let workflow = q.workflow.filter(|w| !w.is_empty());
    let filter = RunFilter {
        workflow: workflow.clone(),
        scope: Some(scope.key()),
        scope_prefix: None,
        before,
        limit: limit + 1,
    };
    let (summaries, next_cursor) = if filters.any() {
        let s2 = state.clone();
        let f2 = filters.clone();
        let page = tokio::task::spawn_blocking(move || scan(&s2, &filter, &f2, limit))
            .await
            .map_err(ApiError::internal)??;
        (page.runs, page.next.map(|r| r.to_string()))
    } else {
        let mut summaries = state.engine.list_runs(&filter)?;
        let more = summaries.len() > limit;
        summaries.truncate(limit);
        let next = more
            .then(|| summaries.last().map(|s| s.run_id.to_string()))
            .flatten();
        (summaries, next)
    };
    // The page ends early, with a cursor, once its JSON passes MAX_PAGE_BYTES: a run's view
    // holds its parameters and variables, which may be megabytes each.
    let mut body = Vec::from(b"[".as_slice());
    let mut next_cursor = next_cursor;
    for (i, s) in summaries.iter().enumerate() {
        if i > 0 && body.len() >= super::inbox::MAX_PAGE_BYTES {
            next_cursor = Some(summaries[i - 1].run_id.to_string());
            break;
        }
        let run = dto(&state, s.run_id).await?;
        if !filters.status_matches(run.run.status) {
            continue;
        }
        if body.len() > 1 {
            body.push(b',');
        }
        serde_json::to_writer(&mut body, &run).map_err(ApiError::internal)?;
    }
    body.push(b']');
    let mut response = (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response();
    if let Some(cursor) = next_cursor {
        let mut next = format!(
            "/brain/{}/project/{}/workflows/runs?limit={limit}&cursor={cursor}",
            p.tenant, p.project
        );
        if let Some(w) = &workflow {
            next.push_str(&format!("&workflow={w}"));
        }
        next.push_str(&filters.query());
        let h = response.headers_mut();
        if let Ok(v) = cursor.parse() {
            h.insert(NEXT_CURSOR_HEADER, v);
        }
        if let Ok(v) = format!("<{next}>; rel=\"next\"").parse() {
            h.insert(axum::http::header::LINK, v);
        }
    }
    Ok(response)
}

/// Body of `POST …/cancel`.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CancelBody {
    /// Why the run is cancelled (journaled).
    reason: Option<String>,
}

/// `POST …/workflows/runs/{run_id}/cancel` with `{reason?}` → `{cancel, run}` where `cancel`
/// is `requested`, `alreadyRequested` or `alreadyFinished` and `run` the [`RunDto`] (its
/// [`RunBrief`](super::visible::RunBrief) for a token without `workflow.read`).
pub(crate) async fn cancel(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CancelBody>,
) -> Result<Json<Value>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let body = body?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let summary = state.scoped_summary(&scope, &p.run_id)?;
    let reason = body
        .reason
        .unwrap_or_else(|| format!("cancelled by {}", who.subject));
    let ack = state
        .engine
        .cancel(summary.run_id, &reason)
        .await
        .map_err(ApiError::from)?;
    let cancel = match ack {
        CancelAck::Requested => "requested",
        CancelAck::AlreadyRequested => "alreadyRequested",
        CancelAck::AlreadyFinished => "alreadyFinished",
    };
    let run = dto(&state, summary.run_id).await?;
    let run = visible_run(&run, &run.run, &who);
    Ok(Json(serde_json::json!({ "cancel": cancel, "run": run })))
}
