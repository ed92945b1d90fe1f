//! `GET /brain/{tenant}/project/{project}/workflows`: every workflow document the project's
//! cascade sees, each checked by the validator of `magrathea validate` and the documents route,
//! so a client can show which documents are broken, where (line and column) and why.
//!
//! A workflow is `_vance/workflows/<name>.yaml` of the project or, when the project has none
//! of that name, of the tenant (`<tenant>/_tenant/_vance/workflows/`): one entry per name,
//! `source` saying which, sorted by name, at most [`MAX_WORKFLOWS`] a page (`?limit=`; the
//! `X-Next-Cursor` header names the `cursor` of the next page). A document is read up to
//! the loader's size limit (a larger one is reported invalid with `MAG-Y002`), and an entry
//! lists at most [`MAX_DIAGNOSTICS`] diagnostics (`diagnosticCount` has them all). A symbolic
//! link that leads out of its project (or tenant directory) is not listed, as in the documents
//! listing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use magrathea_yaml::runtime::check_name;
use magrathea_yaml::{
    Diagnostic, LoadOptions, Scope, Severity, YamlNode, load_workflow_checked, parse_yaml,
};
use serde::{Deserialize, Serialize};

use super::auth::ApiScope;
use super::doc_paths::{canonical_project, entry_inside};
use super::error::ApiError;
use super::state::AppState;

/// Most workflows one listing shows.
pub const MAX_WORKFLOWS: usize = 1000;

/// Most diagnostics one entry shows.
pub const MAX_DIAGNOSTICS: usize = 100;

/// `{tenant}` and `{project}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectPath {
    tenant: String,
    project: String,
}

/// One workflow document of the listing.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowEntry {
    /// The workflow's name (the file name without `.yaml`).
    pub name: String,
    /// The document's path relative to the project: `_vance/workflows/<name>.yaml`, or
    /// `../_tenant/_vance/workflows/<name>.yaml` for a tenant document.
    pub path: String,
    /// `project` or `tenant`: where the cascade found it.
    pub source: &'static str,
    /// Whether the document has no error (warnings allowed).
    pub valid: bool,
    /// The document's `description:`, when it has one that can be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The document's `version:`, when it has one that can be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Whether the workflow is archived in the project (refuses new starts).
    pub archived: bool,
    /// Whether the project holds a draft of it (`_vance/workflow-drafts/<name>.yaml`).
    pub has_draft: bool,
    /// Errors and warnings, by position, at most [`MAX_DIAGNOSTICS`].
    pub diagnostics: Vec<DiagnosticDto>,
    /// How many diagnostics the document has in all.
    pub diagnostic_count: usize,
}

/// A diagnostic as JSON.
#[derive(Debug, Clone, Serialize)]
pub struct DiagnosticDto {
    /// `error` or `warning`.
    pub severity: &'static str,
    /// The stable code (`MAG-Y010`, `MAG-YA005`, …).
    pub code: &'static str,
    /// What was found and what was expected (without the `[code]` prefix).
    pub message: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl DiagnosticDto {
    fn of(d: &Diagnostic) -> Self {
        let code = d.code.as_str();
        let prefix = format!("[{code}] ");
        Self {
            severity: match d.severity {
                Severity::Warning => "warning",
                _ => "error",
            },
            code,
            message: d
                .message
                .strip_prefix(&prefix)
                .unwrap_or(&d.message)
                .to_string(),
            line: d.line,
            column: d.column,
        }
    }
}

/// `?limit=&cursor=` of the workflows listing.
#[derive(Debug, Deserialize)]
pub(crate) struct ListQuery {
    /// Entries a page (default and at most [`MAX_WORKFLOWS`]).
    limit: Option<super::error::QueryLimit>,
    /// The `X-Next-Cursor` of the previous page: the last name it listed.
    cursor: Option<String>,
}

/// `GET …/workflows?limit=&cursor=` → the [`WorkflowEntry`]s of the project, sorted by name,
/// a page at a time: when more follow, the `X-Next-Cursor` header holds the `cursor` of the
/// next page.
pub(crate) async fn list(
    State(state): State<AppState>,
    UrlPath(p): UrlPath<ProjectPath>,
    axum::extract::Query(q): axum::extract::Query<ListQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let scope = state.scope(&p.tenant, &p.project)?;
    let limit = super::error::page_limit(q.limit.as_ref(), MAX_WORKFLOWS)?;
    let cursor = q.cursor.filter(|c| !c.is_empty());
    // Every document of the page is read and validated (up to a thousand of up to 1 MiB
    // each): one of the tenant's bounded heavy reads, as a whole journal is.
    let reader = state.clone();
    let (entries, next) = state
        .journal_read(&p.tenant, move |_| {
            entries(&reader, &scope, cursor.as_deref(), limit)
        })
        .await??;
    Ok(super::inbox::paged(entries, next))
}

/// Where a workflow document was found.
struct Found {
    file: PathBuf,
    source: &'static str,
    /// Why its file name is not a workflow's name (no run can start it), if it is not.
    bad_name: Option<String>,
}

/// The entries named after `cursor`, at most `limit`, with the name to continue from when
/// more follow.
fn entries(
    state: &AppState,
    scope: &Scope,
    cursor: Option<&str>,
    limit: usize,
) -> Result<(Vec<WorkflowEntry>, Option<String>), ApiError> {
    let docs = state.docs();
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for (dir, source) in [
        (docs.project_dir(scope), "project"),
        (docs.tenant_dir(scope), "tenant"),
    ] {
        for (name, file, bad_name) in workflow_files(&dir)? {
            found.entry(name).or_insert(Found {
                file,
                source,
                bad_name,
            });
        }
    }
    let names: BTreeSet<String> = found
        .iter()
        .filter(|(_, f)| f.bad_name.is_none())
        .map(|(name, _)| name.clone())
        .collect();
    let mut after: Vec<(String, Found)> = found
        .into_iter()
        .filter(|(name, _)| cursor.is_none_or(|c| name.as_str() > c))
        .take(limit.saturating_add(1))
        .collect();
    let next = (after.len() > limit).then(|| {
        after.truncate(limit);
        after.last().map(|(name, _)| name.clone())
    });
    let page = after
        .into_iter()
        .map(|(name, f)| entry(state, scope, &names, name, f))
        .collect();
    Ok((page, next.flatten()))
}

/// The `<name>.yaml` files of `<dir>/_vance/workflows/` that stay inside `dir`, each with why
/// its name is not a workflow's (`MAG-DOC002`) when it is not: such a document is listed,
/// invalid, rather than left out without a word.
fn workflow_files(dir: &Path) -> Result<Vec<(String, PathBuf, Option<String>)>, ApiError> {
    let Some(base) = canonical_project(dir)? else {
        return Ok(Vec::new());
    };
    let Ok(read) = std::fs::read_dir(dir.join("_vance").join("workflows")) else {
        return Ok(Vec::new());
    };
    Ok(read
        .flatten()
        .filter_map(|e| {
            let file_name = e.file_name().to_string_lossy().into_owned();
            let name = file_name.strip_suffix(".yaml")?.to_string();
            let path = e.path();
            let bad_name = check_name(&name)
                .and_then(|()| check_name(&file_name))
                .err()
                .map(|e| e.to_string());
            (entry_inside(&base, &path) && path.is_file()).then_some((name, path, bad_name))
        })
        .collect())
}

fn entry(
    state: &AppState,
    scope: &Scope,
    names: &BTreeSet<String>,
    name: String,
    found: Found,
) -> WorkflowEntry {
    let docs = state.docs();
    let path = match found.source {
        "project" => format!("_vance/workflows/{name}.yaml"),
        _ => format!("../_tenant/_vance/workflows/{name}.yaml"),
    };
    let label = format!("{}/{}/{path}", scope.tenant, scope.project);
    let opts = LoadOptions::default();
    let read = match &found.bad_name {
        Some(why) => Err(("MAG-DOC002", why.clone(), (1, 1))),
        None => read_bounded(docs, &found.file, opts.max_bytes),
    };
    let (valid, diags, description, version) = match read {
        Err((code, message, at)) => (
            false,
            vec![DiagnosticDto::read_error(code, message, at)],
            None,
            None,
        ),
        // The workflows it starts are looked up with its errors too (one pass to fix all).
        Ok(text) => {
            match load_workflow_checked(&label, &text, &opts, |n: &str| names.contains(n)) {
                Ok(loaded) => {
                    let diags = loaded.warnings.iter().map(DiagnosticDto::of).collect();
                    (
                        true,
                        diags,
                        loaded.doc.description.clone(),
                        loaded.doc.version.clone(),
                    )
                }
                Err(all) => {
                    let diags = all.iter().map(DiagnosticDto::of).collect();
                    let (description, version) = labels(&label, &text, &opts);
                    (false, diags, description, version)
                }
            }
        }
    };
    let diagnostic_count = diags.len();
    let mut diagnostics: Vec<DiagnosticDto> = diags;
    diagnostics.truncate(MAX_DIAGNOSTICS);
    // A name that is none has no archive mark or draft (their paths are made from it).
    let named = found.bad_name.is_none();
    WorkflowEntry {
        archived: named && docs.is_archived(scope, &name),
        has_draft: named && docs.draft_path(scope, &name).is_file(),
        name,
        path,
        source: found.source,
        valid,
        description,
        version,
        diagnostics,
        diagnostic_count,
    }
}

impl DiagnosticDto {
    /// A document that could not be read as text, or whose name is none; `at` is the line
    /// and column the reason lies at.
    fn read_error(code: &'static str, message: String, at: (usize, usize)) -> Self {
        let message = match message.strip_prefix(&format!("[{code}] ")) {
            Some(rest) => rest.to_string(),
            None => message,
        };
        Self {
            severity: "error",
            code,
            message,
            line: u32::try_from(at.0).unwrap_or(u32::MAX),
            column: u32::try_from(at.1).unwrap_or(u32::MAX),
        }
    }
}

/// Why a listed document could not be read: its code, the reason, and the line and column.
type ReadError = (&'static str, String, (usize, usize));

/// The file's text, reading at most one byte more than `max` (so that the loader reports a
/// document over its limit without the server holding all of it).
/// A failure is the code and message of its diagnostic.
fn read_bounded(
    docs: &magrathea_yaml::DocumentSource,
    file: &Path,
    max: usize,
) -> Result<String, ReadError> {
    let unreadable =
        |e: std::io::Error| ("MAG-Y001", format!("cannot read the document: {e}"), (1, 1));
    let too_large = || {
        (
            "MAG-Y002",
            format!("the document is larger than {max} bytes, the most a workflow may have"),
            (1, 1),
        )
    };
    // Opened beneath its project: a link a step swaps in after the listing leads nowhere.
    let f = docs.open_confined(file).map_err(|e| {
        if magrathea_exec::regular_file::is_too_large(&e) {
            too_large()
        } else {
            unreadable(e)
        }
    })?;
    let mut bytes = Vec::new();
    f.take(max as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() > max {
        return Err(too_large());
    }
    // Placed and named as `magrathea validate` and a document PUT place and name it.
    String::from_utf8(bytes).map_err(|e| {
        let why = magrathea_exec::NotUtf8Text::of(&e);
        (
            "MAG-Y001",
            format!(
                "{}: expected a UTF-8 document; save the file as UTF-8",
                why.what
            ),
            (why.line, why.column),
        )
    })
}

/// `description` and `version` of a document that does not validate, when it parses.
fn labels(label: &str, text: &str, opts: &LoadOptions) -> (Option<String>, Option<String>) {
    let Ok(root) = parse_yaml(label, text, opts) else {
        return (None, None);
    };
    let field = |key: &str| root.get(key).and_then(YamlNode::as_str).map(str::to_owned);
    (field("description"), field("version"))
}
