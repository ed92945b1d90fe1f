//! Versions of a project's workflows: drafts, publishing, the history of replaced documents,
//! and archiving. The HTTP API and the `magrathea` command both call these functions.
//!
//! * A **draft** is `_vance/workflow-drafts/<name>.yaml`; it is started only explicitly.
//! * **Publishing** validates the draft, keeps the live `_vance/workflows/<name>.yaml` in the
//!   history as `_vance/workflow-history/<name>/<sha256 of its text>.yaml` (written once,
//!   never overwritten: the same hash is the same text), makes the draft the live document by
//!   a temporary file and a rename, and removes the draft. The trigger documents a draft
//!   carries (`_vance/workflow-drafts/<name>.triggers/{scheduler,events}/*.yaml`, as a Friday
//!   graph's trigger nodes import) go live with it, under `_vance/scheduler/` and
//!   `_vance/events/`.
//! * **Archiving** writes the marker `_vance/workflow-state/<name>.yaml`; while it exists the
//!   workflow refuses new starts (`[MAG-VR001]`) and runs already started finish. A marker file
//!   of its own per workflow, rather than moving the document away, keeps the document where
//!   `validate`, `graph` and the documents API find it, and keeps two archive requests of
//!   different workflows from racing over one shared file. Writing the marker takes
//!   `workflow.write`, exactly as writing any document does.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

use magrathea_yaml::runtime::{DRAFTS_DIR, HISTORY_DIR, check_name};
use magrathea_yaml::{DocumentSource, Scope};

/// Publishes and archive changes of this process, one at a time (they move files), and the
/// documents API's writes of drafts, which a publish must not lose.
static CHANGES: Mutex<()> = Mutex::new(());

/// Holds off publishes and archive changes of this process while the caller writes a draft:
/// a draft written during a publish is either published or left as the draft, never removed
/// unpublished.
pub(crate) fn hold_changes() -> std::sync::MutexGuard<'static, ()> {
    CHANGES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The one workflow name a project may not use: `…/workflows/runs/…` are the routes of runs.
pub const RESERVED_WORKFLOW_NAME: &str = "runs";

mod archive;
mod draft_triggers;
mod history;
mod publish;

pub use archive::set_archived;
pub use draft_triggers::{DRAFT_TRIGGERS_SUFFIX, DraftTrigger, draft_triggers, draft_triggers_dir};
pub use history::{VersionEntry, Versions, versions};
pub use publish::{Published, draft_layout_path, publish};

/// Why a version operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// The name is not a plain document name.
    #[error(
        "[MAG-DOC002] invalid workflow name '{0}': use ASCII letters, digits, '.', '_' and '-'"
    )]
    InvalidName(String),
    /// The name is the one the run routes take (`runs`): the workflow's own routes could not
    /// be reached.
    #[error(
        "[MAG-HTTP-RESERVED-NAME] a workflow cannot be named `{0}`: …/workflows/{0}/… are the \
         routes of runs, so its start, graph, versions and triggers could not be reached; name \
         the document otherwise"
    )]
    ReservedName(String),
    /// Publishing found no draft.
    #[error("[MAG-VR002] workflow '{0}' has no draft: looked for _vance/{DRAFTS_DIR}/{0}.yaml")]
    NoDraft(String),
    /// The project has neither a live document nor a draft of that name.
    #[error("[MAG-DOC001] unknown workflow '{0}': the project has no _vance/workflows/{0}.yaml")]
    UnknownWorkflow(String),
    /// The draft is invalid: its diagnostics, each `path:line:column: [code] message`.
    #[error("[MAG-VR003] the draft of '{name}' is invalid; nothing was published:\n{}", .diagnostics.join("\n"))]
    Invalid {
        /// The workflow.
        name: String,
        /// The draft's diagnostics.
        diagnostics: Vec<String>,
    },
    /// A history entry under the live document's hash holds other text.
    #[error(
        "[MAG-VR004] the history entry {0} holds other text than its hash says; nothing was published"
    )]
    HistoryMismatch(String),
    /// A document of the workflow is a symbolic link that leads out of the project.
    #[error(
        "[MAG-HTTP-OUTSIDE-PROJECT] {0}; versions are read and written only inside the project"
    )]
    OutsideProject(String),
    /// A document of the workflow (the live one, its draft or a version kept) is not UTF-8
    /// text: invalid, as `validate` says.
    #[error("[MAG-Y001] a document of '{name}' is not UTF-8 text: {message}")]
    NotUtf8 {
        /// The workflow.
        name: String,
        /// Which document, and where.
        message: String,
    },
    /// The draft carries trigger documents, and whoever publishes may not declare triggers.
    #[error(
        "publishing '{name}' makes its draft's trigger documents live ({}): that needs the \
         scopes `workflow.write` and `workflow.run`", .documents.join(", ")
    )]
    TriggersNeedRun {
        /// The workflow.
        name: String,
        /// The trigger documents, as they would be published (`_vance/scheduler/x.yaml`).
        documents: Vec<String>,
    },
    /// The file system refused.
    #[error("cannot change the versions of '{name}': {message}")]
    Io {
        /// The workflow.
        name: String,
        /// The I/O error, without the server's paths.
        message: String,
    },
}

fn vance(docs: &DocumentSource, scope: &Scope) -> PathBuf {
    docs.project_dir(scope).join("_vance")
}

fn live_path(docs: &DocumentSource, scope: &Scope, name: &str) -> PathBuf {
    vance(docs, scope)
        .join("workflows")
        .join(format!("{name}.yaml"))
}

fn history_dir(docs: &DocumentSource, scope: &Scope, name: &str) -> PathBuf {
    vance(docs, scope).join(HISTORY_DIR).join(name)
}

fn io(name: &str, what: &str, e: std::io::Error) -> VersionError {
    if magrathea_exec::leads_out(&e) {
        return VersionError::OutsideProject(e.to_string());
    }
    if let Some(text) = magrathea_exec::NotUtf8Text::in_error(&e) {
        return VersionError::NotUtf8 {
            name: name.to_string(),
            message: format!("{what}: {text}"),
        };
    }
    VersionError::Io {
        name: name.to_string(),
        message: format!("{what}: {}", e.kind()),
    }
}

fn checked(name: &str) -> Result<(), VersionError> {
    check_name(name).map_err(|_| VersionError::InvalidName(name.to_string()))
}

fn read_optional(docs: &DocumentSource, path: &Path) -> std::io::Result<Option<String>> {
    match docs.read_text(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn rfc3339(t: SystemTime) -> Option<String> {
    let ts = jiff::Timestamp::try_from(t).ok()?;
    Some(format!("{ts:.3}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) const VALID: &str = "start: a\nstates:\n  a:\n    type: terminal\n";

    pub(crate) fn project() -> (tempfile::TempDir, DocumentSource, Scope) {
        let dir = tempfile::tempdir().unwrap();
        let docs = DocumentSource::new(dir.path());
        let scope = Scope::new("acme", "shop");
        std::fs::create_dir_all(docs.project_dir(&scope).join("_vance/workflow-drafts")).unwrap();
        (dir, docs, scope)
    }

    #[test]
    fn unknown_names_and_traversal_are_refused() {
        let (_d, docs, scope) = project();
        assert!(matches!(
            versions(&docs, &scope, "nope"),
            Err(VersionError::UnknownWorkflow(_))
        ));
        assert!(matches!(
            set_archived(&docs, &scope, "nope", true, "ann"),
            Err(VersionError::UnknownWorkflow(_))
        ));
        assert!(matches!(
            publish(&docs, &scope, "../x", true),
            Err(VersionError::InvalidName(_))
        ));
        assert!(matches!(
            publish(&docs, &scope, "nodraft", true),
            Err(VersionError::NoDraft(_))
        ));
    }
}
