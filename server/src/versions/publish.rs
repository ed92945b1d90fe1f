//! Publishing a draft: validated with the trigger documents it carries, the live text kept in
//! the history under its hash, the draft made live with its triggers and layout.

use std::path::PathBuf;

use magrathea_yaml::runtime::{DRAFTS_DIR, HISTORY_DIR};
use magrathea_yaml::{DocumentSource, LoadOptions, Scope, load_workflow};
use serde::{Deserialize, Serialize};

use super::draft_triggers::{
    DraftTrigger, draft_triggers, draft_triggers_dir, stale_graph_triggers,
};
use super::{CHANGES, VersionError, checked, history_dir, io, live_path, read_optional, vance};
use crate::project_files::{
    list_in_project, remove_dir_all_in_project, remove_in_project, write_in_project,
};
use crate::triggers::registry::sha256_hex;

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

/// `_vance/workflow-drafts/<name>.layout.json`: where the nodes of an imported graph stood, made
/// the workflow's layout file when the draft is published.
pub fn draft_layout_path(docs: &DocumentSource, scope: &Scope, name: &str) -> PathBuf {
    vance(docs, scope)
        .join(DRAFTS_DIR)
        .join(format!("{name}.layout.json"))
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
    if name == super::RESERVED_WORKFLOW_NAME {
        return Err(VersionError::ReservedName(name.to_string()));
    }
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
    // Read only inside the project, as the draft is: opened beneath it, so a link a step
    // swaps in after a check leads nowhere else.
    let opened = match docs.open_confined(&layout_path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(io(name, "reading the draft's layout", e));
        }
        opened => opened,
    };
    let layout = crate::editor_graph::Layout::read_opened(opened, &layout_label).map_err(|e| {
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
                None => write_in_project(docs, scope, &entry, text.as_bytes())
                    .map_err(|e| io(name, "writing the history", e))?,
            }
            Some(hash)
        }
        None => None,
    };
    write_in_project(docs, scope, &live, draft.as_bytes())
        .map_err(|e| io(name, "writing the live document", e))?;
    // The triggers after the document they start, so none fires the old text; the draft goes
    // last, so a publish cut short is done again by publishing again.
    for t in &triggers {
        let path = vance(docs, scope)
            .join(t.dir)
            .join(format!("{}.yaml", t.name));
        write_in_project(docs, scope, &path, t.text.as_bytes())
            .map_err(|e| io(name, "writing a trigger document", e))?;
    }
    for document in &stale {
        match remove_in_project(docs, scope, &docs.project_dir(scope).join(document)) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(name, "removing a trigger the graph no longer has", e)),
        }
    }
    if let Some(layout) = layout {
        let live_layout = crate::editor_graph::layout_path(&docs.project_dir(scope), name);
        layout
            .write_with(&format!("_vance/workflows/{name}.layout.json"), |bytes| {
                write_in_project(docs, scope, &live_layout, bytes)
            })
            .map_err(|e| {
                io(
                    name,
                    "writing the layout",
                    std::io::Error::other(e.to_string()),
                )
            })?;
        remove_in_project(docs, scope, &draft_layout_path(docs, scope, name))
            .map_err(|e| io(name, "removing the draft's layout", e))?;
    }
    if from_graph {
        remove_dir_all_in_project(docs, scope, &draft_triggers_dir(docs, scope, name))
            .map_err(|e| io(name, "removing the draft's triggers", e))?;
    }
    remove_draft_if_published(docs, scope, name, &draft)?;
    Ok(Published {
        name: name.to_string(),
        version: sha256_hex(&draft),
        previous,
        triggers: triggers.iter().map(DraftTrigger::document).collect(),
        trigger_texts: triggers.into_iter().map(|t| t.text).collect(),
        removed_triggers: stale,
    })
}

/// Removes the draft of `name` if it still holds `published`: a draft saved since it was
/// read (by an editor, another process) is the next draft, not this one, and stays.
fn remove_draft_if_published(
    docs: &DocumentSource,
    scope: &Scope,
    name: &str,
    published: &str,
) -> Result<(), VersionError> {
    let path = docs.draft_path(scope, name);
    let now = read_optional(docs, &path).map_err(|e| io(name, "reading the draft again", e))?;
    if now.as_deref() == Some(published) {
        remove_in_project(docs, scope, &path).map_err(|e| io(name, "removing the draft", e))?;
    }
    Ok(())
}

/// The hash of the text the history received last, if any (listed inside the project only).
fn newest_in_history(docs: &DocumentSource, scope: &Scope, name: &str) -> Option<String> {
    let mut list = list_in_project(docs, scope, &history_dir(docs, scope, name)).ok()?;
    let mut newest: Option<(std::time::SystemTime, String)> = None;
    while let Some(entry) = list.next_name() {
        let Ok(entry) = entry else { continue };
        let Some(hash) = entry.to_str().and_then(|f| f.strip_suffix(".yaml")) else {
            continue;
        };
        let Some(at) = list.entry(&entry).ok().and_then(|m| m.modified) else {
            continue;
        };
        if newest
            .as_ref()
            .is_none_or(|(t, h)| (at, hash) > (*t, h.as_str()))
        {
            newest = Some((at, hash.to_owned()));
        }
    }
    newest.map(|(_, hash)| hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::tests::{VALID, project};
    use crate::versions::versions;

    #[test]
    fn a_draft_saved_since_it_was_read_is_kept_and_the_published_one_goes() {
        let (_d, docs, scope) = project();
        let path = docs.draft_path(&scope, "w");
        let newer = format!("{VALID}# the next edit\n");
        std::fs::write(&path, &newer).unwrap();
        remove_draft_if_published(&docs, &scope, "w", VALID).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), newer, "kept");
        std::fs::write(&path, VALID).unwrap();
        remove_draft_if_published(&docs, &scope, "w", VALID).unwrap();
        assert!(!path.exists(), "the published draft goes");
        // Gone already (removed by hand): nothing to do.
        remove_draft_if_published(&docs, &scope, "w", VALID).unwrap();
    }

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

    /// A publish killed after it wrote the live text leaves the draft (and its triggers)
    /// behind; publishing again finishes it and names the text the first one replaced.
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
}
