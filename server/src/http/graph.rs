//! A workflow's graph over REST: `GET …/workflows/{name}/graph?format=` renders it (the
//! editor's React Flow JSON by default, or Mermaid or DOT text), and `PUT` with an editor
//! graph stores where its nodes stand, in the project's layout file
//! `_vance/workflows/<name>.layout.json` (see [`crate::editor_graph`]).
//! `GET …/workflows/runs/{run_id}/graph?format=` renders the definition a run started with
//! (its `StartRecord`'s frozen document), which the document may have left since.
//!
//! A `PUT` keeps only node ids, positions, sizes and the viewport: edges and node data are
//! ignored, because the document is the truth. It replaces the whole layout (states it does
//! not name go back to the automatic layout) and answers the graph as the next `GET` will.
//! Nodes that are not states of the document answer 422 (`MAG-GR004`); a body that is not an
//! editor graph 400 (`MAG-GR002`); an unknown `format` 400 (`MAG-GR001`).

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use magrathea_yaml::{DocumentError, LoadOptions, Loaded, Scope, load_workflow};
use serde::Deserialize;

use super::auth::ApiScope;
use super::body::body_error;
use super::error::ApiError;
use super::runs::RunPath;
use super::state::AppState;
use crate::editor_graph::{self, GraphError, GraphFormat, Layout};

/// `{tenant}`, `{project}` and `{name}`.
#[derive(Debug, Deserialize)]
pub(crate) struct GraphPath {
    tenant: String,
    project: String,
    name: String,
}

/// Query of the `GET`.
#[derive(Debug, Deserialize)]
pub(crate) struct GraphQuery {
    format: Option<String>,
}

impl From<GraphError> for ApiError {
    fn from(e: GraphError) -> Self {
        let status = match &e {
            GraphError::UnknownFormat { .. } | GraphError::NotAGraph { .. } => {
                StatusCode::BAD_REQUEST
            }
            GraphError::LayoutIo { .. } => return ApiError::internal(e),
            _ => StatusCode::UNPROCESSABLE_ENTITY,
        };
        ApiError::new(status, e.code(), e.to_string())
    }
}

/// The workflow `name` of `scope`, loaded and valid: 404 when there is none, 422 with its
/// diagnostics when it is invalid.
fn load(state: &AppState, scope: &Scope, name: &str) -> Result<Loaded, ApiError> {
    let (path, text) = match state.docs().workflow(scope, name) {
        Ok(found) => found,
        Err(e @ DocumentError::UnknownWorkflow { .. }) => return Err(state.unknown_workflow(&e)),
        Err(DocumentError::InvalidName(_)) => {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                "MAG-HTTP-WORKFLOW-NOT-FOUND",
                format!("[MAG-DOC001] unknown workflow `{name}`"),
            ));
        }
        Err(e @ DocumentError::OutsideProject(_)) => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "MAG-HTTP-OUTSIDE-PROJECT",
                e.to_string(),
            ));
        }
        // Not UTF-8: an invalid document, located as its diagnostics are.
        Err(DocumentError::NotUtf8 { path, text }) => return Err(state.not_utf8(&path, text)),
        Err(e @ DocumentError::TooLarge { .. }) => {
            return Err(ApiError::invalid_document(vec![e.to_string()]));
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    load_workflow(&state.label(&path), &text, &LoadOptions::default())
        .map_err(|diags| ApiError::invalid_diagnostics(diags.iter(), str::to_owned))
}

/// The layout file of `name` and how clients see its path.
fn layout_file(state: &AppState, scope: &Scope, name: &str) -> (std::path::PathBuf, String) {
    let path = editor_graph::layout_path(&state.docs().project_dir(scope), name);
    (path, format!("_vance/workflows/{name}.layout.json"))
}

/// The layout file `label` cannot be used: 403 when it leads out of the project through a
/// symbolic link, else the I/O failure.
fn layout_refused(label: String, e: std::io::Error) -> ApiError {
    if magrathea_exec::leads_out(&e) {
        return ApiError::new(
            StatusCode::FORBIDDEN,
            "MAG-HTTP-OUTSIDE-PROJECT",
            format!("`{label}` leads outside the project through a symbolic link"),
        );
    }
    GraphError::LayoutIo {
        file: label,
        source: e,
    }
    .into()
}

/// `GET …/workflows/{name}/graph?format=reactflow|mermaid|dot`.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(p): Path<GraphPath>,
    Query(q): Query<GraphQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let format = format_of(&q)?;
    let loaded = load(&state, &scope, &p.name)?;
    render(format, &loaded, || {
        let (path, label) = layout_file(&state, &scope, &p.name);
        // Opened beneath the project: a link a step swaps in after the check leads nowhere.
        match state.docs().open_confined(&path) {
            Ok(file) => Ok(Layout::read_opened(Ok(file), &label)?),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(layout_refused(label, e)),
        }
    })
}

/// The `format` a query asks for (`reactflow` when it names none, `?format=` included).
fn format_of(q: &GraphQuery) -> Result<GraphFormat, ApiError> {
    Ok(match q.format.as_deref().map(str::trim) {
        None | Some("") => GraphFormat::default(),
        Some(f) => f.parse::<GraphFormat>()?,
    })
}

/// `loaded`'s graph in `format`: Mermaid or DOT text, or the editor graph with the positions
/// of the layout `layout` reads (only asked for then).
fn render(
    format: GraphFormat,
    loaded: &Loaded,
    layout: impl FnOnce() -> Result<Option<Layout>, ApiError>,
) -> Result<Response, ApiError> {
    let text = |body: String| {
        ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
    };
    Ok(match format {
        GraphFormat::Mermaid => text(loaded.plan.graph().to_mermaid()),
        GraphFormat::Dot => text(loaded.plan.graph().to_dot()),
        GraphFormat::ReactFlow => {
            Json(editor_graph::export(loaded, layout()?.as_ref())).into_response()
        }
    })
}

/// `GET …/workflows/runs/{run_id}/graph?format=`: the graph of the document the run started
/// with, frozen in its `StartRecord` (positions from the workflow's layout file where they
/// name its states). 404 for a run of another project and for a code workflow's run, which
/// has no document.
pub(crate) async fn get_run(
    State(state): State<AppState>,
    Path(p): Path<RunPath>,
    Query(q): Query<GraphQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let format = format_of(&q)?;
    let run = state.scoped_summary(&scope, &p.run_id)?.run_id;
    let start = super::rerun::start_record(&state, run)?;
    let Some(definition) = start.definition.filter(|_| !start.frontend.is_code()) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "MAG-HTTP-NO-GRAPH",
            format!(
                "run `{run}` runs the code workflow `{}`: it has no document to draw",
                start.workflow_name
            ),
        ));
    };
    let label = format!("{}@{run}", start.workflow_name);
    let loaded = load_workflow(&label, &definition, &LoadOptions::default())
        .map_err(|diags| ApiError::invalid_diagnostics(diags.iter(), str::to_owned))?;
    // The editor's positions, where the run's states still have them; a branch's sub-run
    // (`par#fan.lint`) or a workflow since removed has no layout file.
    render(format, &loaded, || {
        let (path, label) = layout_file(&state, &scope, &start.workflow_name);
        Ok(match state.docs().open_confined(&path) {
            Ok(file) => Layout::read_opened(Ok(file), &label).ok().flatten(),
            Err(_) => None,
        })
    })
}

/// `PUT …/workflows/{name}/graph` with an editor graph → 200 with the graph as stored.
pub(crate) async fn put(
    State(state): State<AppState>,
    Path(p): Path<GraphPath>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Write)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let loaded = load(&state, &scope, &p.name)?;
    let body = body.map_err(|e| body_error(e.status(), e.body_text()))?;
    let states: Vec<String> = loaded.plan.states.iter().map(|s| s.name.clone()).collect();
    let layout = Layout::from_editor_graph(super::body::without_bom(&body), &p.name, &states)?;
    let (path, label) = layout_file(&state, &scope, &p.name);
    // The layout is written beside the project's documents, never through a link out of it.
    if let Some(dir) = path.parent()
        && let Err(e) = state.docs().confined_dir(dir)
    {
        return Err(layout_refused(label, e));
    }
    // A tenant's workflow seen from a project without a directory: the layout would create it.
    // And the layout is a file under `_vance/`: it counts against the project's documents as
    // a document written through the documents API does.
    let (quota, project) = (state.document_quota, state.docs().project_dir(&scope));
    let (tenant, key) = (scope.tenant.clone(), scope.key());
    let len = serde_json::to_string_pretty(&layout).map_or(0, |t| t.len() as u64 + 1);
    let target = path.clone();
    let _turn = super::doc_quota::write_turn(&tenant).await;
    tokio::task::spawn_blocking(move || {
        quota.check_project(&project, &tenant)?;
        quota.check(&project.join("_vance"), &target, len, &key)
    })
    .await
    .map_err(ApiError::internal)??;
    // Written beneath the project: a directory a step swaps for a link meanwhile leads the
    // write nowhere else.
    let project = state.docs().project_dir(&scope);
    let base = super::doc_paths::project_base(&project, &label)?;
    let inside = super::doc_paths::in_project(&project, &path, &label)?.to_path_buf();
    layout.write_with(&label, |bytes| {
        magrathea_exec::beneath::write_atomically(&base, &inside, bytes)
    })?;
    Ok(Json(editor_graph::export(&loaded, Some(&layout))).into_response())
}
