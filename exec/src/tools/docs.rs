//! `doc_read` and `doc_list`: the caller's project documents, never anything outside.
//!
//! Paths are relative to the project directory (`<root>/<tenant>/<project>`), with `/`
//! separators, e.g. `_vance/notes/today.md`. Absolute paths and `..` are refused, and so is
//! any path that resolves (through symbolic links) outside the project or into the engine's
//! store directory `.magrathea/` (where the `magrathea` command keeps a project's journals and
//! its control key): those are
//! [`ToolError::PermissionDenied`] (`permission_error`). A missing document, a directory
//! given to `doc_read`, a file larger than 4 MiB or one that is not UTF-8 text are
//! [`ToolError::Failed`] (`technical_error`).

use std::path::{Component, Path, PathBuf};

use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::{Tool, ToolContext, ToolError};
use crate::DocumentSource;

/// Largest document `doc_read` returns.
const MAX_READ_BYTES: u64 = 4 * 1024 * 1024;
/// Most entries `doc_list` returns; more set `truncated`.
const MAX_ENTRIES: usize = 10_000;

/// A document path of a project, resolved and checked to stay inside it.
struct Resolved {
    /// The canonical project directory.
    root: PathBuf,
    /// The canonical target.
    path: PathBuf,
}

impl Resolved {
    /// `path` relative to the project, `/`-separated (`""` for the project itself).
    fn relative(&self, path: &Path) -> String {
        relative(&self.root, path)
    }
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn resolve(docs: &DocumentSource, ctx: &ToolContext, rel: &str) -> Result<Resolved, ToolError> {
    let escape = || ToolError::PermissionDenied(format!("path `{rel}` is outside the project"));
    let given = Path::new(rel);
    for c in given.components() {
        match c {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => {
                return Err(escape());
            }
        }
    }
    let project = docs.project_dir(&ctx.scope());
    let root = project.canonicalize().map_err(|e| {
        // The server's layout is not the workflow's business: name the project, not its path.
        let scope = ctx.scope();
        ToolError::Failed(format!(
            "the project directory of {}/{} is not readable: {}",
            scope.tenant,
            scope.project,
            e.kind()
        ))
    })?;
    // Resolved without looking past the project: a link out is refused alike whether its
    // target exists or not.
    let path = match crate::confine::resolve_inside(&root, &project, &root.join(given)) {
        Ok(path) => path,
        Err(crate::confine::Unresolved::LeadsOut) => return Err(escape()),
        Err(crate::confine::Unresolved::Missing) => {
            return Err(ToolError::Failed(format!(
                "no document `{rel}` in the project"
            )));
        }
        Err(crate::confine::Unresolved::Unreadable) => {
            return Err(ToolError::Failed(format!(
                "cannot open `{rel}`: too many symbolic links, or one that cannot be read"
            )));
        }
    };
    if in_engine_dir(&root, &path) {
        return Err(ToolError::PermissionDenied(format!(
            "`{rel}` is in `{ENGINE_DIR}/`, the engine's own store (journals of every run, the \
             control key), not a document"
        )));
    }
    Ok(Resolved { root, path })
}

/// The directory a project run by the `magrathea` command keeps its store in.
const ENGINE_DIR: &str = ".magrathea";

/// Whether the canonical `path` lies in the engine's directory of the project `root`.
fn in_engine_dir(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root)
        .is_ok_and(|rel| rel.components().any(|c| c.as_os_str() == ENGINE_DIR))
}

/// `doc_read`: one document's text.
pub(crate) struct DocRead {
    docs: DocumentSource,
}

impl DocRead {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self { docs }
    }

    fn run(&self, params: &Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let rel = params
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let r = resolve(&self.docs, ctx, rel)?;
        if self.docs.is_settings_file(&ctx.scope(), &r.path) {
            return Err(ToolError::PermissionDenied(format!(
                "`{rel}` is the project's settings, which hold its secrets: no tool reads them"
            )));
        }
        let meta = crate::beneath::metadata(&r.root, &r.path)
            .map_err(|e| ToolError::Failed(format!("cannot open `{rel}`: {e}")))?;
        if !meta.is_file() {
            return Err(ToolError::Failed(format!(
                "`{rel}` is a directory; list it with doc_list"
            )));
        }
        if meta.len() > MAX_READ_BYTES {
            return Err(ToolError::Failed(format!(
                "`{rel}` has {} bytes, more than doc_read's limit of {MAX_READ_BYTES}",
                meta.len()
            )));
        }
        // Opened beneath the project: a directory a step swaps for a link after the check
        // leads nowhere else.
        let bytes = self
            .docs
            .open_confined(&r.path)
            .and_then(crate::regular_file::read_opened)
            .map_err(|e| ToolError::Failed(format!("cannot read `{rel}`: {e}")))?;
        let size = bytes.len();
        let content = String::from_utf8(bytes)
            .map_err(|_| ToolError::Failed(format!("`{rel}` is not UTF-8 text")))?;
        Ok(json!({ "path": r.relative(&r.path), "content": content, "size": size }))
    }
}

impl Tool for DocRead {
    fn name(&self) -> &str {
        "doc_read"
    }

    fn description(&self) -> &str {
        "Reads a text document of the caller's project by its path relative to the project \
         directory (e.g. `_vance/notes/today.md`)."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": { "type": "string", "description": "relative to the project directory" }
            },
            "additionalProperties": false
        })
    }

    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { self.run(&params, ctx) })
    }
}

/// `doc_list`: the entries of a project directory.
pub(crate) struct DocList {
    docs: DocumentSource,
}

impl DocList {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self { docs }
    }

    fn run(&self, params: &Value, ctx: &ToolContext) -> Result<Value, ToolError> {
        let rel = params
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("_vance");
        let recursive = params
            .get("recursive")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let r = resolve(&self.docs, ctx, rel)?;
        if !r.path.is_dir() {
            return Err(ToolError::Failed(format!(
                "`{rel}` is not a directory; read it with doc_read"
            )));
        }
        let mut entries = Vec::new();
        let mut truncated = false;
        let mut pending = vec![r.path.clone()];
        while let Some(dir) = pending.pop() {
            // Each directory is opened beneath the project, and each entry looked at through
            // it: a directory a step swaps for a link out meanwhile lists nothing outside.
            let mut read = crate::beneath::list_dir(&r.root, &dir)
                .map_err(|e| ToolError::Failed(format!("cannot list `{rel}`: {e}")))?;
            while let Some(entry) = read.next_name() {
                let Ok(entry) = entry else { continue };
                let path = dir.join(&entry);
                let Ok(own) = read.entry(&entry) else {
                    continue;
                };
                let is_link = own.is_symlink;
                // A link is listed only when its target is inside the project too.
                if is_link
                    && !path
                        .canonicalize()
                        .is_ok_and(|t| t.starts_with(&r.root) && !in_engine_dir(&r.root, &t))
                {
                    continue;
                }
                // The engine's store is not a document.
                if in_engine_dir(&r.root, &path) {
                    continue;
                }
                // What a link leads to, resolved beneath the project at this instant.
                let (is_dir, len) = if is_link {
                    match crate::beneath::metadata(&r.root, &path) {
                        Ok(m) => (m.is_dir(), m.len()),
                        Err(_) => continue,
                    }
                } else {
                    (own.is_dir, own.len)
                };
                if entries.len() >= MAX_ENTRIES {
                    truncated = true;
                    break;
                }
                let kind = if is_dir { "dir" } else { "file" };
                let size = if is_dir { 0 } else { len };
                entries.push(json!({
                    "path": r.relative(&path),
                    "kind": kind,
                    "size": size,
                }));
                // Links are not followed when descending: no cycles, no double listing.
                if recursive && is_dir && !is_link {
                    pending.push(path);
                }
            }
            if truncated {
                break;
            }
        }
        entries.sort_by(|a, b| a["path"].as_str().cmp(&b["path"].as_str()));
        Ok(json!({
            "path": r.relative(&r.path),
            "entries": entries,
            "truncated": truncated,
        }))
    }
}

impl Tool for DocList {
    fn name(&self) -> &str {
        "doc_list"
    }

    fn description(&self) -> &str {
        "Lists the documents of a directory of the caller's project (default `_vance`), \
         optionally recursively: each entry's path relative to the project, kind (file or \
         dir) and size in bytes."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "directory relative to the project directory; `.` is the project",
                    "default": "_vance"
                },
                "recursive": { "type": "boolean", "default": false }
            },
            "additionalProperties": false
        })
    }

    fn invoke<'a>(
        &'a self,
        params: Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<Value, ToolError>> {
        Box::pin(async move { self.run(&params, ctx) })
    }
}
