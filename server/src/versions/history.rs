//! The versions of a workflow: the live document, then the texts it replaced, newest first.

use magrathea_yaml::{DocumentSource, Scope};
use serde::{Deserialize, Serialize};

use super::{VersionError, checked, history_dir, io, live_path, read_optional, rfc3339};
use crate::triggers::registry::sha256_hex;

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
    // Listed inside the project only: a history directory a step swaps for a link out lists
    // nothing of another project's.
    if let Ok(mut list) =
        crate::project_files::list_in_project(docs, scope, &history_dir(docs, scope, name))
    {
        while let Some(entry) = list.next_name() {
            let Ok(entry) = entry else { continue };
            let file = entry.to_string_lossy().into_owned();
            let Some(hash) = file.strip_suffix(".yaml") else {
                continue;
            };
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            // The entry itself, a link not followed: only a regular file is a version.
            let Ok(meta) = list.entry(&entry) else {
                continue;
            };
            if meta.is_dir || meta.is_symlink {
                continue;
            }
            let at = meta.modified;
            history.push((
                at,
                VersionEntry {
                    hash: hash.to_string(),
                    state: "history".into(),
                    at: at.and_then(rfc3339),
                    size: meta.len,
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
