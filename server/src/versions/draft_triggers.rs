//! The trigger documents a draft carries (`_vance/workflow-drafts/<name>.triggers/`), as a
//! Friday graph's trigger nodes import them, and the live ones of a graph that its next
//! publish removes.

use std::path::PathBuf;

use magrathea_yaml::runtime::{DRAFTS_DIR, check_name};
use magrathea_yaml::{DocumentSource, Scope};

use crate::project_files::list_in_project;

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
    // Listed inside the project only: a `.triggers` that is a link out (a step may make one,
    // or swap one in) lists nothing of another project's, and refuses the publish.
    let listed = match list_in_project(docs, scope, &root) {
        Ok(list) => Some(list),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(name, "reading the draft's triggers", e)),
    };
    if let Some(mut list) = listed {
        let mut others: Vec<String> = Vec::new();
        while let Some(entry) = list.next_name() {
            let Ok(entry) = entry else { continue };
            let is_dir = list.entry(&entry).is_ok_and(|m| m.is_dir);
            if matches!(entry.to_str(), Some("scheduler" | "events")) && is_dir {
                continue;
            }
            if others.len() < MAX_DRAFT_TRIGGERS {
                others.push(entry.to_string_lossy().into_owned());
            }
        }
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
        let mut list = match list_in_project(docs, scope, &path) {
            Ok(list) => list,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io(name, "reading the draft's triggers", e)),
        };
        // Names and what each is (its link not followed), read through the listed directory.
        let mut files = Vec::new();
        while let Some(entry) = list.next_name() {
            let Ok(entry) = entry else { continue };
            let meta = list.entry(&entry).ok();
            files.push((entry, meta));
            if files.len() > MAX_DRAFT_TRIGGERS {
                break;
            }
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        for (entry, meta) in files {
            let file = entry.to_string_lossy().into_owned();
            if out.len() + diagnostics.len() >= MAX_DRAFT_TRIGGERS {
                diagnostics.push(format!(
                    "{}: [MAG-VR003] a draft carries at most {MAX_DRAFT_TRIGGERS} trigger \
                     documents",
                    shown(dir, "")
                ));
                break;
            }
            let stem = file.strip_suffix(".yaml").filter(|n| check_name(n).is_ok());
            let regular = meta.is_some_and(|m| !m.is_dir && !m.is_symlink);
            let (Some(stem), true) = (stem, regular) else {
                diagnostics.push(format!(
                    "{}: [MAG-VR003] expected a trigger document `<name>.yaml`, a regular file",
                    shown(dir, &file)
                ));
                continue;
            };
            let too_long = meta.is_some_and(|m| m.len > MAX_TRIGGER_BYTES);
            let text = if too_long {
                Err(format!("longer than {MAX_TRIGGER_BYTES} bytes"))
            } else {
                docs.read_text(&path.join(&entry))
                    .map_err(|e| e.to_string())
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
