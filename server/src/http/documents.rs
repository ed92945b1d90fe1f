//! Documents of a project over REST: `GET|PUT|DELETE …/documents/{*path}` and
//! `GET …/documents?dir=`, where paths are relative to the project's `_vance/` directory
//! (e.g. `workflows/pr-review.yaml`; `_vance/workflows/pr-review.yaml`, relative to the
//! project as listings name it, is the same document). Every path segment must be a plain name (letters,
//! digits, `.`, `_`, `-`; no `..`, no hidden files), so nothing outside `_vance/` is reached.
//!
//! Reading needs `workflow.read`, writing `workflow.write`. `settings.yaml` holds event
//! tokens, webhook path tokens and signing secrets, with which anyone may start runs, and it
//! decides who may fire events: reading or writing it needs `workflow.write` and
//! `workflow.run` as well, so a token that may not start runs never learns a secret that
//! would let it. A PUT of `workflows/<name>.yaml` is
//! validated first: an invalid document is refused with 422 and the diagnostics of
//! `magrathea validate` (`path:line:column: [MAG-Ynnn] message`, the path relative to the
//! root). A valid workflow is written, and the response lists its warnings in the same form
//! (`path:line:column: warning: [MAG-Ynnn] message`):
//! what static analysis finds, and `workflow_task`s naming a workflow that neither the project
//! nor its tenant has. A workflow named `runs` is refused with 422 (`MAG-HTTP-RESERVED-NAME`):
//! `…/workflows/runs/…` are the routes of runs. Documents are written atomically (temporary
//! file, then rename).
//!
//! Trigger documents (`scheduler/`, `events/`, `hooks/`) start runs on their own, so writing
//! them needs `workflow.run` as well as `workflow.write`. A schedule is validated like a
//! workflow (422 with diagnostics). After a trigger document or `settings.yaml` is written, the
//! project's triggers are rebuilt at once, and the response's `warnings` name what keeps one
//! of the document's triggers from working (a webhook's token setting that is not set, …).
//!
//! Versions have their own routes (see [`super::versions`]): a PUT under
//! `workflow-history/` is refused with 409 (`MAG-VR005`), since the history is written by
//! publishing only; a draft under `workflow-drafts/` is stored as it is (a draft may be work
//! in progress) and validated when it is published.
//!
//! Symbolic links inside a project may not lead out of it: a read, a write or a listing that
//! would is refused with 403 (`MAG-HTTP-OUTSIDE-PROJECT`), and a listing leaves such links
//! out. Names over 255 bytes and paths over 1,024 bytes are refused with 400.
//!
//! A project holds at most [`DEFAULT_MAX_DOCUMENTS`](super::doc_quota::DEFAULT_MAX_DOCUMENTS)
//! documents and [`DEFAULT_MAX_DOCUMENT_BYTES`](super::doc_quota::DEFAULT_MAX_DOCUMENT_BYTES)
//! under `_vance/` (see [`super::doc_quota`]): a write past either is refused with 507
//! (`MAG-HTTP-QUOTA`).

use std::path::PathBuf;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use magrathea_yaml::runtime::check_name;
use magrathea_yaml::{LoadOptions, Scope, load_workflow_checked};
use serde::Deserialize;
use serde_json::{Value, json};

use super::auth::ApiScope;
use super::body::body_error;
use super::doc_paths::{
    beneath_error, check_writable, in_project, project_base, resolve_existing, segments,
};
use super::error::ApiError;
use super::state::AppState;

/// The workflow name the server's routes cannot reach: `…/workflows/runs/…` list and act on
/// runs.
pub(crate) use crate::versions::RESERVED_WORKFLOW_NAME;

/// `{tenant}`, `{project}` and the document path.
#[derive(Debug, Deserialize)]
pub(crate) struct DocumentPath {
    tenant: String,
    project: String,
    path: String,
}

/// `{tenant}` and `{project}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectPath {
    tenant: String,
    project: String,
}

/// Query of the listing.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    dir: Option<String>,
    /// At most this many entries (default and most [`MAX_LIST`]).
    limit: Option<super::error::QueryLimit>,
    /// The `next` of the previous page: entries after this name.
    cursor: Option<String>,
}

/// The most entries of one page of a listing.
pub const MAX_LIST: usize = 1000;

fn vance_dir(state: &AppState, scope: &Scope) -> PathBuf {
    state.docs().project_dir(scope).join("_vance")
}

/// The file or directory `parts` name below the project's `_vance/`.
fn under_vance(state: &AppState, scope: &Scope, parts: &[&str]) -> PathBuf {
    parts.iter().fold(vance_dir(state, scope), |d, s| d.join(s))
}

/// The segments of a path that must name a document (to write or remove): not empty.
fn document_segments(path: &str) -> Result<Vec<&str>, ApiError> {
    let parts = segments(path)?;
    if parts.is_empty() {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-PATH",
            "empty document path",
        ));
    }
    Ok(parts)
}

/// A document path as messages name it: relative to the project.
fn project_rel(parts: &[&str]) -> String {
    std::iter::once("_vance")
        .chain(parts.iter().copied())
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether reading the document needs the scopes of writing it (its secrets start runs).
fn holds_secrets(parts: &[&str]) -> bool {
    parts == ["settings.yaml"]
}

/// `GET …/documents/{*path}` → the document's text.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(p): Path<DocumentPath>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let parts = segments(&p.path)?;
    if holds_secrets(&parts) {
        who.require(ApiScope::Write)?;
        who.require(ApiScope::Run)?;
    }
    let file = under_vance(&state, &scope, &parts);
    let not_found = || ApiError::not_found(format!("document `{}` not found", p.path));
    let project = state.docs().project_dir(&scope);
    let Some(file) = resolve_existing(&project, &file, &project_rel(&parts))? else {
        return Err(not_found());
    };
    // The same file under another name (a link inside the project) holds the same secrets.
    if !holds_secrets(&parts) && state.docs().is_settings_file(&scope, &file) {
        who.require(ApiScope::Write)?;
        who.require(ApiScope::Run)?;
    }
    let preconditions = super::doc_etag::Preconditions::of(&headers)?;
    match read_resolved(&project, &project_rel(&parts), file).await? {
        // The client's copy is current: said without the body.
        Some(bytes) if preconditions.check_read(&project_rel(&parts), &bytes)? => Ok((
            StatusCode::NOT_MODIFIED,
            [super::doc_etag::etag_header(&bytes)],
        )
            .into_response()),
        Some(bytes) => Ok((
            [
                (
                    header::CONTENT_TYPE,
                    axum::http::HeaderValue::from_static("application/yaml; charset=utf-8"),
                ),
                super::doc_etag::etag_header(&bytes),
            ],
            bytes,
        )
            .into_response()),
        None => Err(not_found()),
    }
}

/// The bytes of the document at `real` (resolved inside `project`; `rel` as the request names
/// it): `None` when there is none, or it is no regular file (a named pipe a step made would
/// block the read). It is opened beneath the project, so a directory of its path that a step
/// swaps for a link after it was resolved leads nowhere else.
async fn read_resolved(
    project: &std::path::Path,
    rel: &str,
    real: std::path::PathBuf,
) -> Result<Option<Vec<u8>>, ApiError> {
    let base = project_base(project, rel)?;
    let read = tokio::task::spawn_blocking(move || {
        magrathea_exec::regular_file::open_beneath(&base, &real)
            .and_then(magrathea_exec::regular_file::read_opened)
    })
    .await
    .map_err(ApiError::internal)?;
    match read {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if magrathea_exec::beneath::is_outside(&e) => {
            Err(beneath_error(e, rel, ApiError::internal))
        }
        Err(e)
            if magrathea_exec::regular_file::is_not_regular(&e)
                || matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::IsADirectory
                ) =>
        {
            Ok(None)
        }
        // A file a step made far longer than any document (a sparse one costs it nothing).
        Err(e) if magrathea_exec::regular_file::is_too_large(&e) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "MAG-HTTP-422",
            format!("document `{rel}` is {e}"),
        )),
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// `PUT …/documents/{*path}` with the document's text → 201 (created) or 200 (replaced)
/// `{path, warnings}`; 422 with diagnostics for an invalid workflow.
pub(crate) async fn put(
    State(state): State<AppState>,
    Path(p): Path<DocumentPath>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Write)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let parts = document_segments(&p.path)?;
    let preconditions = super::doc_etag::Preconditions::of(&headers)?;
    if parts == ["settings.yaml"] && !who.has(ApiScope::Run) {
        // The project's settings hold event tokens and workspace paths: changing them is a
        // way to run workflows, so it takes the right to run them.
        return Err(ApiError::forbidden(
            "writing _vance/settings.yaml needs the scopes `workflow.write` and `workflow.run`",
        ));
    }
    if parts[0] == magrathea_yaml::runtime::HISTORY_DIR {
        // The history keeps every replaced version by its content hash: written by publish
        // only, never overwritten.
        return Err(history_refused(&format!(
            "write a draft to _vance/{}/ and publish it instead",
            magrathea_yaml::runtime::DRAFTS_DIR
        )));
    }
    let trigger_doc = is_trigger_document(&parts);
    if trigger_doc && !who.has(ApiScope::Run) {
        // Schedules, webhooks, event subscriptions and hooks start runs on their own: writing
        // one is a way to run workflows, so it takes the right to run them.
        return Err(ApiError::forbidden(format!(
            "writing _vance/{}/ needs the scopes `workflow.write` and `workflow.run`: its documents start runs",
            parts[0]
        )));
    }
    if !trigger_doc && parts[0] != magrathea_yaml::runtime::DRAFTS_DIR {
        super::automated::check_automated(&state, &scope, &who, &project_rel(&parts))?;
    }
    let body = body.map_err(|e| body_error(e.status(), e.body_text()))?;
    // Refused as every other invalid document is: 422, with the diagnostic at its place.
    let mut text = String::from_utf8(body.to_vec()).map_err(|e| {
        let label = format!(
            "{}/{}/_vance/{}",
            scope.tenant,
            scope.project,
            parts.join("/")
        );
        // Whatever the document is (a workflow, a schedule, a script): no kind is named.
        ApiError {
            message: "invalid document: it is not UTF-8 text".into(),
            ..ApiError::invalid_document(vec![
                magrathea_yaml::DocumentError::NotUtf8 {
                    path: label.into(),
                    text: magrathea_exec::NotUtf8Text::of(&e),
                }
                .to_string(),
            ])
        }
    })?;
    let rel = parts.join("/");
    let mut warnings = Vec::new();
    // A draft of that name could not be published: refused as the live document is.
    if parts.len() == 2
        && (parts[0] == "workflows" || parts[0] == magrathea_yaml::runtime::DRAFTS_DIR)
        && parts[1].strip_suffix(".yaml") == Some(RESERVED_WORKFLOW_NAME)
    {
        let refused = crate::versions::VersionError::ReservedName(RESERVED_WORKFLOW_NAME.into());
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "MAG-HTTP-RESERVED-NAME",
            refused.to_string(),
        ));
    }
    if parts.len() == 2 && parts[0] == "workflows" && parts[1].ends_with(".yaml") {
        let label = format!("{}/{}/_vance/{rel}", scope.tenant, scope.project);
        // The document may start itself; it exists once this write succeeds. The workflows
        // it starts are looked up with its errors too (one pass to fix all).
        let own = parts[1].trim_end_matches(".yaml");
        // Checked off the runtime's threads: a large document takes a while to compile, and
        // other requests (other tenants') must not wait behind it.
        let (checking, in_scope, own, document) =
            (state.clone(), scope.clone(), own.to_owned(), text);
        let (document, checked) = tokio::task::spawn_blocking(move || {
            let exists =
                |name: &str| name == own || checking.docs().workflow(&in_scope, name).is_ok();
            let checked = load_workflow_checked(&label, &document, &LoadOptions::default(), exists)
                .map(|loaded| {
                    loaded
                        .warnings
                        .iter()
                        .map(|w| w.rendered_at(&w.path))
                        .collect::<Vec<_>>()
                })
                .map_err(|diags| ApiError::invalid_diagnostics(diags.iter(), str::to_owned));
            (document, checked)
        })
        .await
        .map_err(ApiError::internal)?;
        text = document;
        warnings = checked?;
    }
    if parts.len() == 2 && parts[0] == "scheduler" && parts[1].ends_with(".yaml") {
        // A schedule is checked like a workflow: refused with its diagnostics when invalid.
        let label = format!("{}/{}/_vance/{rel}", scope.tenant, scope.project);
        let name = parts[1].trim_end_matches(".yaml");
        match magrathea_yaml::scheduler::load_schedule(&label, name, &text) {
            Err(diags) => {
                return Err(ApiError {
                    message: format!("invalid schedule document ({} error(s))", diags.len()),
                    ..ApiError::invalid_diagnostics(diags.iter(), str::to_owned)
                });
            }
            // Each tick would fail to start: said now, as for a workflow_task's target.
            Ok(schedule) => warnings.extend(super::document_warnings::missing_workflow(
                &state,
                &scope,
                &label,
                schedule.workflow(),
                "each tick",
            )),
        }
    }
    if parts.len() == 2 && parts[0] == "events" && parts[1].ends_with(".yaml") {
        // An event document is refused when it does not parse: a misspelt key (say
        // `auth: {tokenSettings: …}`) would otherwise change who may fire it.
        let label = format!("{}/{}/_vance/{rel}", scope.tenant, scope.project);
        match crate::triggers::parse_event_at(&label, &text) {
            Err(e) => {
                return Err(ApiError {
                    message: "invalid event document (1 error(s))".into(),
                    ..ApiError::invalid_document(vec![e])
                });
            }
            // Each request, delivery or event would fail to start: said now, as for a
            // schedule's.
            Ok(doc) => warnings.extend(super::document_warnings::missing_workflow(
                &state,
                &scope,
                &label,
                &doc.workflow,
                "each request to it",
            )),
        }
    }
    if parts == ["settings.yaml"] {
        // Settings that do not parse would be ignored for the defaults (and a project's tool
        // settings fail closed), a value out of range for its own default: refused here
        // instead, with where the problem is.
        let label = format!("{}/{}/_vance/settings.yaml", scope.tenant, scope.project);
        let mut found = magrathea_exec::settings_check::check_settings(&label, &text, false);
        if found.is_empty() {
            let ceiling = state
                .docs()
                .tenant_settings(&scope)
                .bounds
                .task_timeout_ceiling();
            found = magrathea_exec::settings_check::check_against_tenant(&label, &text, ceiling);
        }
        if !found.is_empty() {
            return Err(ApiError {
                message: format!("invalid settings document ({} error(s))", found.len()),
                ..ApiError::invalid_document(found)
            });
        }
    }
    let file = under_vance(&state, &scope, &parts);
    check_writable(
        &state.docs().project_dir(&scope),
        &file,
        &project_rel(&parts),
    )?;
    let not_a_document = || {
        ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-NOT-A-DOCUMENT",
            format!(
                "`{}` is a directory, or goes through a document: there is no document to \
                 write there; name a file inside the directory, or a path whose parents are \
                 directories",
                project_rel(&parts)
            ),
        )
    };
    if file.is_dir() {
        return Err(not_a_document());
    }
    let quota = state.document_quota;
    let (project, vance, target, len, label) = (
        state.docs().project_dir(&scope),
        vance_dir(&state, &scope),
        file.clone(),
        text.len() as u64,
        scope.key(),
    );
    let tenant = scope.tenant.clone();
    // Counted and written in the tenant's turn: concurrent writes cannot pass a bound together.
    let _turn = super::doc_quota::write_turn(&tenant).await;
    tokio::task::spawn_blocking(move || {
        quota.check_project(&project, &tenant)?;
        quota.check(&vance, &target, len, &label)
    })
    .await
    .map_err(ApiError::internal)??;
    // Checked in the tenant's turn, which every write of its documents takes: nothing this
    // server writes comes between the check and the write.
    if preconditions.any() {
        let current = current_bytes(&state, &scope, &parts, &file).await?;
        preconditions.check(&project_rel(&parts), current.as_deref())?;
    }
    let created = !file.exists();
    // Written beneath the project: no directory a step swaps for a link meanwhile leads the
    // write out of it.
    let rel = project_rel(&parts);
    let base = project_base(&state.docs().project_dir(&scope), &rel)?;
    let inside = in_project(&state.docs().project_dir(&scope), &file, &rel)?.to_path_buf();
    let bytes = text.as_bytes().to_vec();
    let written_tag = super::doc_etag::etag_header(&bytes);
    // Through no link at all, inside the project too: the scopes a write takes are decided by
    // the path as written (a trigger document needs `workflow.run`), and a link such as
    // `_vance/notes -> events` would put the document where the path does not say.
    let draft = parts[0] == magrathea_yaml::runtime::DRAFTS_DIR;
    tokio::task::spawn_blocking(move || {
        // Not while a publish of this process moves the drafts (see `versions::hold_changes`).
        let _held = draft.then(crate::versions::hold_changes);
        magrathea_exec::beneath::write_atomically_no_links(&base, &inside, &bytes)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| {
        beneath_error(e, &rel, |e| match e.kind() {
            // A parent that is a document, or a directory at the document's name.
            std::io::ErrorKind::NotADirectory
            | std::io::ErrorKind::IsADirectory
            | std::io::ErrorKind::AlreadyExists => not_a_document(),
            _ => ApiError::internal(e),
        })
    })?;
    if trigger_doc {
        let doc = project_rel(&parts);
        let (in_scope, by) = (scope.clone(), who.clone());
        warnings.extend(
            state
                .trigger_work(&scope.tenant, move |state| {
                    super::document_warnings::triggers_published(
                        state,
                        &in_scope,
                        &by,
                        &[doc],
                        &[text],
                    )
                })
                .await?,
        );
    } else if parts == ["settings.yaml"] {
        // Registrations follow the documents at once (settings hold webhook path tokens).
        resync_in_share(&state, &scope).await?;
    }
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        status,
        [written_tag],
        Json(json!({ "path": rel, "warnings": warnings })),
    )
        .into_response())
}

/// `DELETE …/documents/{*path}` → 204 once the document is gone; 404 when there is none.
///
/// It takes the scopes a write of the same path takes: removing `settings.yaml` or a trigger
/// document changes who may start runs and which runs start. The history of published versions
/// is kept (409, `MAG-VR005`). Runs already started keep the definition they started with;
/// after a trigger document or `settings.yaml` is removed, the project's triggers are rebuilt
/// at once, so a removed schedule stops firing and a removed webhook answers 404.
pub(crate) async fn delete(
    State(state): State<AppState>,
    Path(p): Path<DocumentPath>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Write)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let parts = document_segments(&p.path)?;
    let preconditions = super::doc_etag::Preconditions::of(&headers)?;
    let trigger_doc = is_trigger_document(&parts);
    if (trigger_doc || parts == ["settings.yaml"]) && !who.has(ApiScope::Run) {
        return Err(ApiError::forbidden(format!(
            "removing {} needs the scopes `workflow.write` and `workflow.run`: it decides which \
             runs start",
            project_rel(&parts)
        )));
    }
    if parts[0] == magrathea_yaml::runtime::HISTORY_DIR {
        return Err(history_refused("its versions are not removed"));
    }
    if !trigger_doc && parts[0] != magrathea_yaml::runtime::DRAFTS_DIR {
        super::automated::check_automated(&state, &scope, &who, &project_rel(&parts))?;
    }
    let file = under_vance(&state, &scope, &parts);
    let project = state.docs().project_dir(&scope);
    let not_found = || ApiError::not_found(format!("document `{}` not found", p.path));
    // A link inside the project is removed itself, never what it leads to; one leading out of
    // the project is refused like any other access through it.
    let Some(real) = resolve_existing(&project, &file, &project_rel(&parts))? else {
        return Err(not_found());
    };
    if real.is_dir() {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "MAG-HTTP-NOT-A-DOCUMENT",
            format!(
                "`{}` is a directory: remove the documents inside it one by one",
                project_rel(&parts)
            ),
        ));
    }
    // Removed in the tenant's turn, as a write is made: a conditional write's check and its
    // write never have a removal (of the document, or of the directory it goes in) between them.
    let turn = super::doc_quota::write_turn(&scope.tenant).await;
    if preconditions.any() {
        let current = current_bytes(&state, &scope, &parts, &file).await?;
        preconditions.check(&project_rel(&parts), current.as_deref())?;
    }
    // Removed in its directory, opened beneath the project: a link swapped in meanwhile
    // leads the removal nowhere else.
    let rel = project_rel(&parts);
    let base = project_base(&project, &rel)?;
    let inside = in_project(&project, &file, &rel)?.to_path_buf();
    // Through no link on the way (see `put`): the scopes are the path's as written.
    let removed = tokio::task::spawn_blocking(move || {
        magrathea_exec::beneath::remove_file_no_links(&base, &inside)
    })
    .await
    .map_err(ApiError::internal)?;
    match removed {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found()),
        Err(e) => return Err(beneath_error(e, &rel, ApiError::internal)),
    }
    // The directories the document's write created go with it once empty (the quota counts
    // files; directories left behind would not be): up to `_vance/<first>/`, which stays.
    let top = state
        .docs()
        .project_dir(&scope)
        .join("_vance")
        .join(parts[0]);
    let base = project_base(&project, &rel)?;
    let mut dir = file.parent().map(std::path::Path::to_path_buf);
    while let Some(d) = dir
        && d.starts_with(&top)
        && d != top
        && let Ok(inside) = in_project(&project, &d, &rel)
    {
        let (base, inside) = (base.clone(), inside.to_path_buf());
        let removed = tokio::task::spawn_blocking(move || {
            magrathea_exec::beneath::remove_empty_dir(&base, &inside)
        })
        .await;
        if !matches!(removed, Ok(Ok(()))) {
            break;
        }
        dir = d.parent().map(std::path::Path::to_path_buf);
    }
    drop(turn);
    if trigger_doc
        && let Err(e) = state.triggers.catalog().and_then(|catalog| {
            crate::triggers::registry::forget_writer(catalog, &scope, &project_rel(&parts))
                .map_err(Into::into)
        })
    {
        tracing::warn!(error = %e, "could not forget who wrote the trigger document");
    }
    if trigger_doc || parts == ["settings.yaml"] {
        resync_in_share(&state, &scope).await?;
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The bytes of the document at `file` now, for a conditional write or removal; `None` when
/// there is none (or it is no regular file).
async fn current_bytes(
    state: &AppState,
    scope: &Scope,
    parts: &[&str],
    file: &std::path::Path,
) -> Result<Option<Vec<u8>>, ApiError> {
    let project = state.docs().project_dir(scope);
    let rel = project_rel(parts);
    match resolve_existing(&project, file, &rel)? {
        Some(real) => read_resolved(&project, &rel, real).await,
        None => Ok(None),
    }
}

/// Rebuilds `scope`'s registrations after a write (a failure is logged: the write stands),
/// within its tenant's share of such work.
async fn resync_in_share(state: &AppState, scope: &Scope) -> Result<(), ApiError> {
    let in_scope = scope.clone();
    state
        .trigger_work(&scope.tenant, move |state| {
            if let Err(e) = state.triggers.resync(state, &in_scope) {
                tracing::warn!(error = %e, "could not resync the project's triggers");
            }
        })
        .await
}

/// 409 `MAG-VR005` for a write or removal under the history of published versions.
fn history_refused(instead: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "MAG-VR005",
        format!(
            "[MAG-VR005] _vance/{}/ is the immutable history of published workflows; {instead}",
            magrathea_yaml::runtime::HISTORY_DIR
        ),
    )
}

/// Whether a path under `_vance/` is a trigger document (or a hook's script): its directory
/// is `scheduler`, `events` or `hooks`.
fn is_trigger_document(parts: &[&str]) -> bool {
    parts.len() >= 2 && matches!(parts[0], "scheduler" | "events" | "hooks")
}

/// `GET …/documents?dir=workflows&limit=&cursor=` → `{items: [{name, path, kind:
/// "file"|"dir"}], next?}`, sorted by name, at most `limit` (default and most [`MAX_LIST`])
/// a page; `next` (also the `X-Next-Cursor` header) is the `cursor` of the next page. `dir`
/// defaults to `_vance/` itself. A missing directory lists nothing. A directory of any size
/// (a shell step may fill one) is read in one pass that keeps only the page's names.
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    Query(q): Query<ListQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let limit = super::error::page_limit(q.limit.as_ref(), MAX_LIST)?;
    let cursor = q.cursor.filter(|c| !c.is_empty());
    if let Some(c) = &cursor
        && check_name(c).is_err()
    {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-CURSOR",
            format!("invalid cursor `{c}`: pass the `next` of the previous page unchanged"),
        ));
    }
    let dir_arg = q.dir.unwrap_or_default();
    let parts: Vec<String> = segments(&dir_arg)?.into_iter().map(str::to_owned).collect();
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    let dir = under_vance(&state, &scope, &refs);
    let project = state.docs().project_dir(&scope);
    let Some(dir) = resolve_existing(&project, &dir, &project_rel(&refs))? else {
        return Ok(super::inbox::paged(json!({ "items": [] }), None));
    };
    let (items, next) = tokio::task::spawn_blocking(move || {
        list_page(&project, &dir, &parts, cursor.as_deref(), limit)
    })
    .await
    .map_err(ApiError::internal)??;
    let body = match &next {
        Some(n) => json!({ "items": items, "next": n }),
        None => json!({ "items": items }),
    };
    Ok(super::inbox::paged(body, next))
}

/// The page of `dir` after `cursor`: the `limit` least names above it, with the name to
/// continue from when more follow.
fn list_page(
    project: &std::path::Path,
    dir: &std::path::Path,
    parts: &[String],
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<Value>, Option<String>), ApiError> {
    // Listed beneath the project: a directory a step swaps for a link out after the check
    // lists nothing outside it.
    let Some(base) = super::doc_paths::canonical_project(project)? else {
        return Ok((Vec::new(), None));
    };
    let Ok(rel_dir) = dir.strip_prefix(project) else {
        return Ok((Vec::new(), None));
    };
    let mut list = match magrathea_exec::beneath::list_dir(&base, rel_dir) {
        Ok(list) => list,
        Err(e) if magrathea_exec::beneath::is_outside(&e) => {
            return Err(beneath_error(e, &parts.join("/"), ApiError::internal));
        }
        Err(_) => return Ok((Vec::new(), None)),
    };
    // The `limit + 1` least names above the cursor, in a max-heap: memory for one page,
    // whatever the directory holds.
    let mut least = std::collections::BinaryHeap::with_capacity(limit + 1);
    while let Some(entry) = list.next_name() {
        let Ok(entry) = entry else { continue };
        let name = entry.to_string_lossy().into_owned();
        if check_name(&name).is_err() || cursor.is_some_and(|c| name.as_str() <= c) {
            continue;
        }
        if least.len() <= limit {
            least.push(name);
        } else if least.peek().is_some_and(|top| name < *top) {
            least.pop();
            least.push(name);
        }
    }
    let mut names = least.into_sorted_vec();
    let more = names.len() > limit;
    names.truncate(limit);
    let next = more.then(|| names.last().cloned()).flatten();
    let mut items = Vec::with_capacity(names.len());
    for name in names {
        let Ok(meta) = list.entry(std::ffi::OsStr::new(&name)) else {
            continue;
        };
        // A link is listed as what it leads to beneath the project; one that leads out (or
        // nowhere) is left out.
        let is_dir = if meta.is_symlink {
            match magrathea_exec::beneath::metadata(&base, &rel_dir.join(&name)) {
                Ok(target) => target.is_dir(),
                Err(_) => continue,
            }
        } else {
            meta.is_dir
        };
        let kind = if is_dir { "dir" } else { "file" };
        let rel = parts
            .iter()
            .map(String::as_str)
            .chain([name.as_str()])
            .collect::<Vec<_>>()
            .join("/");
        items.push(json!({ "name": name, "path": rel, "kind": kind }));
    }
    Ok((items, next))
}
