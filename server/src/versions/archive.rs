//! Archiving: the marker `_vance/workflow-state/<name>.yaml` that refuses new starts.

use std::time::SystemTime;

use magrathea_yaml::{DocumentSource, Scope};

use super::{CHANGES, VersionError, checked, io, rfc3339};
use crate::project_files::{remove_in_project, write_in_project};

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
        write_in_project(docs, scope, &marker, text.as_bytes())
            .map_err(|e| io(name, "writing the marker", e))?;
    } else {
        match remove_in_project(docs, scope, &marker) {
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
    use crate::versions::live_path;
    use crate::versions::tests::{VALID, project};

    /// A `workflow-state` directory that is a link out of the project is refused: archiving
    /// and unarchiving write or remove nothing through it.
    #[test]
    fn archive_and_unarchive_refuse_a_state_directory_that_leads_out() {
        let (_d, docs, scope) = project();
        let docs = docs.served();
        let live = live_path(&docs, &scope, "w");
        std::fs::create_dir_all(live.parent().unwrap()).unwrap();
        std::fs::write(&live, VALID).unwrap();
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
}
