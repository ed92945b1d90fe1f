//! Where a served project's steps may reach on disk: its workspaces stay inside the project
//! directory (or under a root the tenant's administrator lists). No step reads the settings
//! files that hold secrets either
//! ([`DocumentSource::is_settings_file`](crate::DocumentSource::is_settings_file)).
//!
//! Shell steps add the Landlock sandbox on top (see the `shell` module); script steps run in
//! the server's own process, so these checks are all that keeps them in their project.

use std::path::{Path, PathBuf};

use crate::DocumentSource;
use crate::settings::TenantShellSettings;

/// The real path of the workspace `dir` (named `name`) of a served project, or why it is
/// refused: its real path lies neither inside the project directory nor under one of the
/// tenant's `shell.workspaceRoots`, or it lies in the document tree of `docs` outside the
/// project (another project, the tenant's `_tenant/`, `_auth/`, the store) or in the server's
/// store given outside the tree, whatever the roots say. A
/// token that may write a project's settings must not make `/` (or another tenant's tree) a
/// workspace. The real path is the one to use from then on, so that a symbolic link swapped
/// after the check changes nothing. A workspace that does not exist is given back as it is
/// (the caller reports it).
pub(crate) fn contained(
    docs: &DocumentSource,
    project: &Path,
    dir: PathBuf,
    name: &str,
    tenant: &TenantShellSettings,
) -> Result<PathBuf, String> {
    let outside = || {
        format!(
            "workspace `{name}` lies outside the project directory: a served project's workspaces \
             stay inside it unless the tenant's administrator lists their root under \
             `shell.workspaceRoots` in _tenant/_vance/settings.yaml"
        )
    };
    let real_of = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    // Named outside the project and outside every root the tenant allows: refused before
    // anything is looked up there, so that the answer tells nothing of what exists.
    let named_inside = |root: &Path| dir.starts_with(root) || dir.starts_with(real_of(root));
    if !named_inside(project) && !tenant.workspace_roots.iter().any(|r| named_inside(r)) {
        return Err(outside());
    }
    let Ok(real) = dir.canonicalize() else {
        // Nothing there. A link of the project that leads out to nothing is refused as one
        // that leads out to something: the answer must not tell which paths exist outside.
        let real_project = real_of(project);
        if let Ok(rel) = dir
            .strip_prefix(project)
            .or_else(|_| dir.strip_prefix(&real_project))
            && crate::confine::resolve_inside(&real_project, project, &real_project.join(rel))
                == Err(crate::confine::Unresolved::LeadsOut)
        {
            return Err(outside());
        }
        return Ok(dir);
    };
    let project = real_of(project);
    if real.starts_with(&project) {
        return Ok(real);
    }
    let inside = |root: &Path| root.canonicalize().is_ok_and(|root| real.starts_with(root));
    let protected = docs.protected().any(|p| real.starts_with(real_of(p)));
    if !protected && tenant.workspace_roots.iter().any(|r| inside(r)) {
        return Ok(real);
    }
    Err(outside())
}
