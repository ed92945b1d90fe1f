//! The trigger documents a draft carries (`_vance/workflow-drafts/<name>.triggers/`), as a
//! Friday graph's trigger nodes import them, and the live ones of a graph that its next
//! publish removes.

use std::path::PathBuf;

use magrathea_yaml::runtime::{DRAFTS_DIR, check_name};
use magrathea_yaml::{DocumentSource, Scope};

use super::{VersionError, io, vance};

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

/// The live trigger documents (`_vance/scheduler/`, `_vance/events/`) that an import of the
/// graph of `name` wrote (named `<name>-…`, starting `name`, with `params.triggerNodeId`) and
/// that `carried` does not replace: those of trigger nodes the graph no longer has.
pub(super) fn stale_graph_triggers(
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
