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

use crate::atomic_write::write_atomically;
use magrathea_yaml::{DocumentSource, LoadOptions, Scope, load_workflow};
use serde::{Deserialize, Serialize};

use crate::triggers::registry::sha256_hex;

/// Publishes and archive changes of this process, one at a time (they move files).
static CHANGES: Mutex<()> = Mutex::new(());

/// Why a version operation did nothing.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// The name is not a plain document name.
    #[error("[MAG-DOC002] invalid workflow name '{0}': use letters, digits, '.', '_' and '-'")]
    InvalidName(String),
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

/// What a publish did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// The workflow.
    pub name: String,
    /// The SHA-256 (hex) of the new live text.
    pub version: String,
    /// The SHA-256 of the replaced live text, now in the history; `None` on a first publish.
    pub previous: Option<String>,
    /// The trigger documents the draft carried, now live (`_vance/scheduler/<n>.yaml`,
    /// `_vance/events/<n>.yaml`); absent when it carried none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub triggers: Vec<String>,
    /// The texts of `triggers`, in their order (who published them is their writer).
    #[serde(skip)]
    pub trigger_texts: Vec<String>,
    /// The trigger documents an earlier publish of the workflow's graph made live whose nodes
    /// the graph no longer has, now removed; absent when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_triggers: Vec<String>,
}

/// The directory of the trigger documents a draft carries.
pub const DRAFT_TRIGGERS_SUFFIX: &str = ".triggers";

/// Most trigger documents a draft carries.
const MAX_DRAFT_TRIGGERS: usize = 100;

/// Largest trigger document a draft carries, as the scan of live ones reads.
const MAX_TRIGGER_BYTES: u64 = 256 * 1024;

/// A trigger document a draft carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DraftTrigger {
    /// `scheduler` or `events`.
    pub dir: &'static str,
    /// Its name, the file name without `.yaml`.
    pub name: String,
    /// Its text.
    pub text: String,
}

impl DraftTrigger {
    /// Where it goes live, from the project: `_vance/<dir>/<name>.yaml`.
    pub fn document(&self) -> String {
        format!("_vance/{}/{}.yaml", self.dir, self.name)
    }
}

/// `_vance/workflow-drafts/<name>.triggers/`: the trigger documents the draft of `name`
/// carries, in `scheduler/` and `events/`.
pub fn draft_triggers_dir(docs: &DocumentSource, scope: &Scope, name: &str) -> PathBuf {
    vance(docs, scope)
        .join(DRAFTS_DIR)
        .join(format!("{name}{DRAFT_TRIGGERS_SUFFIX}"))
}

/// `_vance/workflow-drafts/<name>.layout.json`: where the nodes of an imported graph stood, made
/// the workflow's layout file when the draft is published.
pub fn draft_layout_path(docs: &DocumentSource, scope: &Scope, name: &str) -> PathBuf {
    vance(docs, scope)
        .join(DRAFTS_DIR)
        .join(format!("{name}.layout.json"))
}

/// The trigger documents the draft of `name` carries, by directory and name, each checked
/// (valid, and starting this workflow only): every problem is a diagnostic of an
/// invalid draft.
pub fn draft_triggers(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
) -> Result<Vec<DraftTrigger>, VersionError> {
    let root = draft_triggers_dir(docs, scope, name);
    let shown = |dir: &str, file: &str| {
        format!(
            "{}/{}/_vance/{DRAFTS_DIR}/{name}{DRAFT_TRIGGERS_SUFFIX}/{dir}/{file}",
            scope.tenant, scope.project
        )
    };
    let mut out = Vec::new();
    let mut diagnostics = Vec::new();
    // Only schedules and event documents go live with a draft: anything else beside them
    // (a hook, which runs JavaScript, is written through the documents API) refuses the
    // publish rather than vanishing with the directory.
    if let Ok(entries) = std::fs::read_dir(&root) {
        let mut others: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                let name = e.file_name();
                !(matches!(name.to_str(), Some("scheduler" | "events"))
                    && e.file_type().is_ok_and(|t| t.is_dir()))
            })
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .take(MAX_DRAFT_TRIGGERS)
            .collect();
        others.sort();
        for other in others {
            diagnostics.push(format!(
                "{}: [MAG-VR003] a draft carries trigger documents in scheduler/ and events/ \
                 only; write hooks and other documents through the documents API",
                shown("", &other).replace("//", "/")
            ));
        }
    }
    for dir in ["scheduler", "events"] {
        let path = root.join(dir);
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(name, "reading the draft's triggers", e)),
        };
        docs.confined_dir(&path)
            .map_err(|e| io(name, "reading the draft's triggers", e))?;
        let mut files: Vec<_> = entries.filter_map(Result::ok).collect();
        files.sort_by_key(std::fs::DirEntry::file_name);
        for entry in files {
            let file = entry.file_name().to_string_lossy().into_owned();
            if out.len() + diagnostics.len() >= MAX_DRAFT_TRIGGERS {
                diagnostics.push(format!(
                    "{}: [MAG-VR003] a draft carries at most {MAX_DRAFT_TRIGGERS} trigger \
                     documents",
                    shown(dir, "")
                ));
                break;
            }
            let stem = file.strip_suffix(".yaml").filter(|n| check_name(n).is_ok());
            let regular = entry.file_type().is_ok_and(|t| t.is_file());
            let (Some(stem), true) = (stem, regular) else {
                diagnostics.push(format!(
                    "{}: [MAG-VR003] expected a trigger document `<name>.yaml`, a regular file",
                    shown(dir, &file)
                ));
                continue;
            };
            let too_long = entry.metadata().is_ok_and(|m| m.len() > MAX_TRIGGER_BYTES);
            let text = if too_long {
                Err(format!("longer than {MAX_TRIGGER_BYTES} bytes"))
            } else {
                docs.read_text(&entry.path()).map_err(|e| e.to_string())
            };
            match text.and_then(|text| {
                crate::triggers::documents::check_trigger_draft(
                    &shown(dir, &file),
                    dir,
                    stem,
                    &text,
                    name,
                )
                .map(|()| text)
            }) {
                Ok(text) => out.push(DraftTrigger {
                    dir,
                    name: stem.to_owned(),
                    text,
                }),
                Err(e) if e.starts_with(&shown(dir, &file)) => diagnostics.push(e),
                Err(e) => diagnostics.push(format!("{}: {e}", shown(dir, &file))),
            }
        }
    }
    if diagnostics.is_empty() {
        Ok(out)
    } else {
        Err(VersionError::Invalid {
            name: name.to_string(),
            diagnostics,
        })
    }
}

/// One version of a workflow, as `versions` lists them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionEntry {
    /// The SHA-256 (hex) of the text.
    pub hash: String,
    /// `live` or `history`.
    pub state: String,
    /// When the file was written (RFC 3339): for a history entry, when it was archived into
    /// the history; for the live document, when it was last written.
    pub at: Option<String>,
    /// Its size in bytes.
    pub size: u64,
}

/// The versions of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Versions {
    /// The workflow.
    pub name: String,
    /// Whether it is archived (refuses new starts).
    pub archived: bool,
    /// Whether it has a draft.
    pub draft: bool,
    /// The live document first, then the history, newest first.
    pub versions: Vec<VersionEntry>,
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

/// Publishes the project's draft of `name`: validates it and the trigger documents it
/// carries, keeps the live document in the history under its hash, makes the draft live with
/// its trigger documents and removes it. An invalid draft changes nothing, nor does a draft
/// with trigger documents when `may_add_triggers` is false.
pub fn publish(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
    may_add_triggers: bool,
) -> Result<Published, VersionError> {
    checked(name)?;
    let _one = CHANGES.lock().unwrap_or_else(|e| e.into_inner());
    let draft_path = docs.draft_path(scope, name);
    let draft = read_optional(docs, &draft_path)
        .map_err(|e| io(name, "reading the draft", e))?
        .ok_or_else(|| VersionError::NoDraft(name.to_string()))?;
    let label = format!(
        "{}/{}/_vance/{DRAFTS_DIR}/{name}.yaml",
        scope.tenant, scope.project
    );
    if let Err(diags) = load_workflow(&label, &draft, &LoadOptions::default()) {
        return Err(VersionError::Invalid {
            name: name.to_string(),
            diagnostics: diags.iter().map(|d| d.to_string()).collect(),
        });
    }
    let triggers = draft_triggers(docs, scope, name)?;
    // An imported graph's layout goes live with its draft; a broken one refuses the publish.
    let layout_label = format!("_vance/{DRAFTS_DIR}/{name}.layout.json");
    let layout_path = draft_layout_path(docs, scope, name);
    // Read only inside the project, as the draft is.
    if std::fs::symlink_metadata(&layout_path).is_ok() {
        docs.confined(&layout_path)
            .map_err(|e| io(name, "reading the draft's layout", e))?;
    }
    let layout = crate::editor_graph::Layout::read(&layout_path, &layout_label).map_err(|e| {
        VersionError::Invalid {
            name: name.to_string(),
            diagnostics: vec![format!(
                "{}/{}/{layout_label}: {e}",
                scope.tenant, scope.project
            )],
        }
    })?;
    // A draft imported from a graph with trigger nodes carries its `.triggers` directory, even
    // empty: its trigger nodes are all the triggers of the graph, so the earlier ones it no
    // longer has go.
    let from_graph = draft_triggers_dir(docs, scope, name).is_dir();
    let stale = if from_graph {
        // Listed, and removed, only inside the project: a trigger directory that is a link
        // out would have another project's documents taken for this graph's.
        for dir in ["scheduler", "events"] {
            docs.confined_dir(&vance(docs, scope).join(dir))
                .map_err(|e| io(name, "checking where the triggers are", e))?;
        }
        stale_graph_triggers(docs, scope, name, &triggers)
    } else {
        Vec::new()
    };
    if (!triggers.is_empty() || !stale.is_empty()) && !may_add_triggers {
        return Err(VersionError::TriggersNeedRun {
            name: name.to_string(),
            documents: triggers
                .iter()
                .map(DraftTrigger::document)
                .chain(stale.iter().cloned())
                .collect(),
        });
    }
    let live = live_path(docs, scope, name);
    // What publish writes stays in the project: no directory on the way may be a link out.
    let trigger_dirs: Vec<PathBuf> = triggers
        .iter()
        .map(|t| vance(docs, scope).join(t.dir))
        .collect();
    for dir in [
        live.parent(),
        Some(history_dir(docs, scope, name).as_path()),
    ]
    .into_iter()
    .flatten()
    .chain(trigger_dirs.iter().map(PathBuf::as_path))
    {
        docs.confined_dir(dir)
            .map_err(|e| io(name, "checking where the versions are written", e))?;
    }
    let current =
        read_optional(docs, &live).map_err(|e| io(name, "reading the live document", e))?;
    let previous = match &current {
        // A publish cut short after writing the live text (the draft is live already, its
        // predecessor kept): the predecessor is the newest entry of the history, and the live
        // text is no version it replaced.
        Some(text) if *text == draft => newest_in_history(docs, scope, name),
        Some(text) => {
            let hash = sha256_hex(text);
            let entry = history_dir(docs, scope, name).join(format!("{hash}.yaml"));
            match read_optional(docs, &entry).map_err(|e| io(name, "reading the history", e))? {
                // Same hash, same text: the entry is already kept.
                Some(kept) if kept == *text => {}
                Some(_) => {
                    return Err(VersionError::HistoryMismatch(format!(
                        "_vance/{HISTORY_DIR}/{name}/{hash}.yaml"
                    )));
                }
                None => write_atomically(&entry, text.as_bytes())
                    .map_err(|e| io(name, "writing the history", e))?,
            }
            Some(hash)
        }
        None => None,
    };
    write_atomically(&live, draft.as_bytes())
        .map_err(|e| io(name, "writing the live document", e))?;
    // The triggers after the document they start, so none fires the old text; the draft goes
    // last, so a publish cut short is done again by publishing again.
    for t in &triggers {
        let path = vance(docs, scope)
            .join(t.dir)
            .join(format!("{}.yaml", t.name));
        write_atomically(&path, t.text.as_bytes())
            .map_err(|e| io(name, "writing a trigger document", e))?;
    }
    for document in &stale {
        match std::fs::remove_file(docs.project_dir(scope).join(document)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(name, "removing a trigger the graph no longer has", e)),
        }
    }
    if let Some(layout) = layout {
        let live_layout = crate::editor_graph::layout_path(&docs.project_dir(scope), name);
        layout
            .write(
                &live_layout,
                &format!("_vance/workflows/{name}.layout.json"),
            )
            .map_err(|e| {
                io(
                    name,
                    "writing the layout",
                    std::io::Error::other(e.to_string()),
                )
            })?;
        std::fs::remove_file(draft_layout_path(docs, scope, name))
            .map_err(|e| io(name, "removing the draft's layout", e))?;
    }
    if from_graph {
        std::fs::remove_dir_all(draft_triggers_dir(docs, scope, name))
            .map_err(|e| io(name, "removing the draft's triggers", e))?;
    }
    std::fs::remove_file(&draft_path).map_err(|e| io(name, "removing the draft", e))?;
    Ok(Published {
        name: name.to_string(),
        version: sha256_hex(&draft),
        previous,
        triggers: triggers.iter().map(DraftTrigger::document).collect(),
        trigger_texts: triggers.into_iter().map(|t| t.text).collect(),
        removed_triggers: stale,
    })
}

/// The live trigger documents (`_vance/scheduler/`, `_vance/events/`) that an import of the
/// graph of `name` wrote (named `<name>-…`, starting `name`, with `params.triggerNodeId`) and
/// that `carried` does not replace: those of trigger nodes the graph no longer has.
fn stale_graph_triggers(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
    carried: &[DraftTrigger],
) -> Vec<String> {
    let mut out = Vec::new();
    for dir in ["scheduler", "events"] {
        let Ok(entries) = std::fs::read_dir(vance(docs, scope).join(dir)) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok).take(MAX_DRAFT_TRIGGERS * 10) {
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(stem) = file.strip_suffix(".yaml") else {
                continue;
            };
            let ours = stem.starts_with(&format!("{name}-"))
                && !carried.iter().any(|t| t.dir == dir && t.name == stem)
                && entry.file_type().is_ok_and(|t| t.is_file())
                && entry.metadata().is_ok_and(|m| m.len() <= MAX_TRIGGER_BYTES);
            if !ours {
                continue;
            }
            let graph_made = docs
                .read_text(&entry.path())
                .ok()
                .and_then(|text| crate::triggers::documents::graph_trigger_of(dir, stem, &text))
                .is_some_and(|(workflow, _)| workflow == name);
            if graph_made {
                out.push(format!("_vance/{dir}/{file}"));
            }
        }
    }
    out.sort();
    out
}

/// The hash of the text the history received last, if any.
fn newest_in_history(docs: &DocumentSource, scope: &Scope, name: &str) -> Option<String> {
    std::fs::read_dir(history_dir(docs, scope, name))
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let hash = e.file_name().to_str()?.strip_suffix(".yaml")?.to_owned();
            let at = e.metadata().and_then(|m| m.modified()).ok()?;
            Some((at, hash))
        })
        .max()
        .map(|(_, hash)| hash)
}

fn rfc3339(t: SystemTime) -> Option<String> {
    let ts = jiff::Timestamp::try_from(t).ok()?;
    Some(format!("{ts:.3}"))
}

/// The versions of `name` in the project: the live document, then its history, newest first.
/// A name with neither a live document, a draft nor a history is unknown.
pub fn versions(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
) -> Result<Versions, VersionError> {
    checked(name)?;
    let mut out = Vec::new();
    let live = live_path(docs, scope, name);
    if let Some(text) =
        read_optional(docs, &live).map_err(|e| io(name, "reading the live document", e))?
    {
        let at = std::fs::metadata(&live).and_then(|m| m.modified()).ok();
        out.push(VersionEntry {
            hash: sha256_hex(&text),
            state: "live".into(),
            at: at.and_then(rfc3339),
            size: text.len() as u64,
        });
    }
    let mut history = Vec::new();
    if let Ok(entries) = std::fs::read_dir(history_dir(docs, scope, name)) {
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            let Some(hash) = file.strip_suffix(".yaml") else {
                continue;
            };
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let at = meta.modified().ok();
            history.push((
                at,
                VersionEntry {
                    hash: hash.to_string(),
                    state: "history".into(),
                    at: at.and_then(rfc3339),
                    size: meta.len(),
                },
            ));
        }
    }
    history.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.hash.cmp(&b.1.hash)));
    out.extend(history.into_iter().map(|(_, e)| e));
    let draft = docs.draft_path(scope, name).is_file();
    if out.is_empty() && !draft {
        return Err(VersionError::UnknownWorkflow(name.to_string()));
    }
    Ok(Versions {
        name: name.to_string(),
        archived: docs.is_archived(scope, name),
        draft,
        versions: out,
    })
}

/// Archives (`true`) or unarchives (`false`) the workflow `name` of the project; `by` is
/// recorded in the marker. Returns whether it is archived now. Archiving needs the workflow
/// to exist (live in the project or the tenant, or as a draft); unarchiving a workflow that
/// is not archived does nothing.
pub fn set_archived(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
    archived: bool,
    by: &str,
) -> Result<bool, VersionError> {
    checked(name)?;
    let _one = CHANGES.lock().unwrap_or_else(|e| e.into_inner());
    let marker = docs.archive_marker(scope, name);
    // The marker is written and removed only inside the project: a `workflow-state` that is a
    // link out (a shell step can make one) would have another tenant's file written over or
    // removed.
    if let Some(dir) = marker.parent() {
        docs.confined_dir(dir)
            .map_err(|e| io(name, "checking where the marker is kept", e))?;
    }
    let unknown = || docs.workflow(scope, name).is_err() && !docs.draft_path(scope, name).is_file();
    if archived {
        if unknown() {
            return Err(VersionError::UnknownWorkflow(name.to_string()));
        }
        let at = rfc3339(SystemTime::now()).unwrap_or_default();
        let text = format!(
            "# Archived: new starts of `{name}` are refused; runs already started finish.\n\
             archived: true\narchivedAt: {}\narchivedBy: {}\n",
            serde_json::Value::from(at),
            serde_json::Value::from(by)
        );
        write_atomically(&marker, text.as_bytes())
            .map_err(|e| io(name, "writing the marker", e))?;
    } else {
        match std::fs::remove_file(&marker) {
            Ok(()) => {}
            // Not archived: nothing to do, unless there is no such workflow at all.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if unknown() {
                    return Err(VersionError::UnknownWorkflow(name.to_string()));
                }
            }
            Err(e) => return Err(io(name, "removing the marker", e)),
        }
    }
    Ok(archived)
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "start: a\nstates:\n  a:\n    type: terminal\n";

    fn project() -> (tempfile::TempDir, DocumentSource, Scope) {
        let dir = tempfile::tempdir().unwrap();
        let docs = DocumentSource::new(dir.path());
        let scope = Scope::new("acme", "shop");
        std::fs::create_dir_all(docs.project_dir(&scope).join("_vance/workflow-drafts")).unwrap();
        (dir, docs, scope)
    }

    /// A publish killed after it wrote the live text leaves the draft (and its triggers)
    /// behind; publishing again finishes it and names the text the first one replaced.
    #[test]
    fn a_publish_is_answered_in_the_api_s_camel_case() {
        let p = Published {
            name: "w".into(),
            version: "v".into(),
            previous: None,
            triggers: Vec::new(),
            trigger_texts: Vec::new(),
            removed_triggers: vec!["_vance/scheduler/w-t.yaml".into()],
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["removedTriggers"][0], "_vance/scheduler/w-t.yaml", "{v}");
    }

    /// A `workflow-state` directory that is a link out of the project is refused: archiving
    /// and unarchiving write or remove nothing through it.
    #[test]
    fn archive_and_unarchive_refuse_a_state_directory_that_leads_out() {
        let (_d, docs, scope) = project();
        let docs = docs.served();
        std::fs::write(live_path(&docs, &scope, "w"), VALID).unwrap_or_else(|_| {
            std::fs::create_dir_all(live_path(&docs, &scope, "w").parent().unwrap()).unwrap();
            std::fs::write(live_path(&docs, &scope, "w"), VALID).unwrap();
        });
        let elsewhere = docs
            .project_dir(&Scope::new("other", "p"))
            .join("_vance/workflows");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("w.yaml"), VALID).unwrap();
        let state = docs
            .archive_marker(&scope, "w")
            .parent()
            .unwrap()
            .to_path_buf();
        std::os::unix::fs::symlink(&elsewhere, &state).unwrap();
        for archived in [true, false] {
            let e = set_archived(&docs, &scope, "w", archived, "mallory").unwrap_err();
            assert!(matches!(e, VersionError::OutsideProject(_)), "{e}");
            assert_eq!(
                std::fs::read_to_string(elsewhere.join("w.yaml")).unwrap(),
                VALID
            );
        }
        assert!(!docs.is_archived(&scope, "w"));
    }

    /// A graph's publish lists the triggers it may remove only inside the project: through
    /// an events directory that links to another project it removes nothing there.
    #[test]
    fn a_graph_publish_removes_no_trigger_through_a_link_out() {
        let (_d, docs, scope) = project();
        let docs = docs.served();
        std::fs::write(docs.draft_path(&scope, "w"), VALID).unwrap();
        std::fs::create_dir_all(draft_triggers_dir(&docs, &scope, "w")).unwrap();
        let theirs = docs
            .project_dir(&Scope::new("other", "p"))
            .join("_vance/events");
        std::fs::create_dir_all(&theirs).unwrap();
        let trigger = theirs.join("w-t1.yaml");
        std::fs::write(
            &trigger,
            "workflow: w\nparams:\n  triggerNodeId: t1\nsubscribe:\n  event: workflow.run.failed\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(&theirs, vance(&docs, &scope).join("events")).unwrap();
        let e = publish(&docs, &scope, "w", true).unwrap_err();
        assert!(matches!(e, VersionError::OutsideProject(_)), "{e}");
        assert!(trigger.is_file(), "the other project's trigger stays");
    }

    #[test]
    fn a_drafts_layout_goes_live_with_it_and_a_broken_one_refuses_the_publish() {
        let (_d, docs, scope) = project();
        std::fs::write(docs.draft_path(&scope, "w"), VALID).unwrap();
        let draft_layout = draft_layout_path(&docs, &scope, "w");
        std::fs::write(&draft_layout, "{not a layout").unwrap();
        let e = publish(&docs, &scope, "w", true).unwrap_err();
        assert!(e.to_string().contains("w.layout.json"), "{e}");
        assert!(
            docs.draft_path(&scope, "w").exists(),
            "nothing was published"
        );
        assert!(!live_path(&docs, &scope, "w").exists());

        let layout = r#"{"schemaVersion":"1.0","nodes":{"a":{"x":1.0,"y":2.0}}}"#;
        std::fs::write(&draft_layout, layout).unwrap();
        publish(&docs, &scope, "w", true).unwrap();
        assert!(!draft_layout.exists());
        let live = crate::editor_graph::layout_path(&docs.project_dir(&scope), "w");
        let read = crate::editor_graph::Layout::read(&live, "w.layout.json")
            .unwrap()
            .unwrap();
        assert_eq!(read.nodes["a"].x, 1.0);
    }

    #[test]
    fn publishing_again_after_a_publish_cut_short_names_the_replaced_version() {
        let (_d, docs, scope) = project();
        std::fs::write(docs.draft_path(&scope, "w"), VALID).unwrap();
        let first = publish(&docs, &scope, "w", true).unwrap();
        let second_text = format!("description: two\n{VALID}");
        std::fs::write(docs.draft_path(&scope, "w"), &second_text).unwrap();
        // Cut short: the old text is kept and the draft is live, the draft not yet removed.
        let entry = history_dir(&docs, &scope, "w").join(format!("{}.yaml", first.version));
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::fs::write(&entry, VALID).unwrap();
        std::fs::write(live_path(&docs, &scope, "w"), &second_text).unwrap();
        let again = publish(&docs, &scope, "w", true).unwrap();
        assert_eq!(again.version, sha256_hex(&second_text));
        assert_eq!(again.previous.as_deref(), Some(first.version.as_str()));
        assert!(!docs.draft_path(&scope, "w").exists());
        let listed = versions(&docs, &scope, "w").unwrap();
        let hashes: Vec<_> = listed.versions.iter().map(|v| v.hash.as_str()).collect();
        assert_eq!(hashes, [again.version.as_str(), first.version.as_str()]);
    }

    #[test]
    fn a_first_publish_has_no_previous_and_a_second_keeps_the_first_in_history() {
        let (_d, docs, scope) = project();
        std::fs::write(docs.draft_path(&scope, "w"), VALID).unwrap();
        let first = publish(&docs, &scope, "w", true).unwrap();
        assert_eq!(first.previous, None);
        assert_eq!(first.version, sha256_hex(VALID));
        assert!(!docs.draft_path(&scope, "w").exists());
        let second_text = format!("description: two\n{VALID}");
        std::fs::write(docs.draft_path(&scope, "w"), &second_text).unwrap();
        let second = publish(&docs, &scope, "w", true).unwrap();
        assert_eq!(second.previous.as_deref(), Some(first.version.as_str()));
        let kept = history_dir(&docs, &scope, "w").join(format!("{}.yaml", first.version));
        assert_eq!(std::fs::read_to_string(kept).unwrap(), VALID);
        let listed = versions(&docs, &scope, "w").unwrap();
        let states: Vec<_> = listed.versions.iter().map(|v| v.state.as_str()).collect();
        assert_eq!(states, ["live", "history"]);
        assert_eq!(listed.versions[0].hash, second.version);
    }

    #[test]
    fn a_history_entry_with_other_text_is_never_overwritten() {
        let (_d, docs, scope) = project();
        std::fs::write(docs.draft_path(&scope, "w"), VALID).unwrap();
        publish(&docs, &scope, "w", true).unwrap();
        let entry = history_dir(&docs, &scope, "w").join(format!("{}.yaml", sha256_hex(VALID)));
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::fs::write(&entry, "tampered").unwrap();
        std::fs::write(docs.draft_path(&scope, "w"), format!("tags: [x]\n{VALID}")).unwrap();
        let err = publish(&docs, &scope, "w", true).unwrap_err();
        assert!(err.to_string().contains("[MAG-VR004]"), "{err}");
        assert_eq!(std::fs::read_to_string(&entry).unwrap(), "tampered");
        assert_eq!(
            std::fs::read_to_string(live_path(&docs, &scope, "w")).unwrap(),
            VALID
        );
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
