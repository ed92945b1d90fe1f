//! The document root's directories: `<root>/<tenant>/<project>/`, with a tenant's tenant-wide
//! documents in `<root>/<tenant>/_tenant/` and the server's tokens in `<root>/_auth/`. A tenant
//! or a project is a directory whose name is a plain name ([`check_name`]) and not one of
//! those two; symbolic links are not followed.

use std::path::Path;

use magrathea_yaml::runtime::check_name;

/// The directory of a tenant's tenant-wide documents, which is not a project.
pub(crate) const TENANT_DIR: &str = "_tenant";

/// The directory of the server's token file, which is not a tenant.
pub(crate) const AUTH_DIR: &str = "_auth";

/// The sorted names of the directories in `dir` that are plain names. A missing directory
/// has none.
fn dir_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str().map(str::to_owned))
        .filter(|n| check_name(n).is_ok())
        .collect();
    names.sort();
    names
}

/// The sorted names of the tenants of the document root `root`.
pub(crate) fn tenant_names(root: &Path) -> Vec<String> {
    let mut names = dir_names(root);
    names.retain(|n| n != AUTH_DIR && n != TENANT_DIR);
    names
}

/// The sorted names of the projects in the tenant directory `tenant`.
pub(crate) fn project_names(tenant: &Path) -> Vec<String> {
    let mut names = dir_names(tenant);
    names.retain(|n| n != TENANT_DIR);
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projects_are_the_plain_named_directories_beside_the_tenant_documents() {
        let tenant = tempfile::tempdir().unwrap();
        for dir in ["shop", "lab", "_tenant", ".hidden", "has space"] {
            std::fs::create_dir(tenant.path().join(dir)).unwrap();
        }
        std::fs::write(tenant.path().join("file"), "").unwrap();
        // A link to a directory is not a project: it may lead anywhere.
        std::os::unix::fs::symlink(tenant.path().join("shop"), tenant.path().join("linked"))
            .unwrap();
        assert_eq!(project_names(tenant.path()), ["lab", "shop"]);
        assert!(project_names(&tenant.path().join("missing")).is_empty());
    }

    #[test]
    fn tenants_are_the_plain_named_directories_but_the_token_directory() {
        let root = tempfile::tempdir().unwrap();
        for dir in ["acme", "_auth", "_other", "globex", ".git"] {
            std::fs::create_dir(root.path().join(dir)).unwrap();
        }
        assert_eq!(tenant_names(root.path()), ["_other", "acme", "globex"]);
    }
}
