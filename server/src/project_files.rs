//! A project's files as the server's own operations (publish, archive, versions) touch them:
//! in a served tree every path is resolved beneath the project directory at the instant of
//! use ([`magrathea_exec::beneath`]), so a directory a step swaps for a link meanwhile leads
//! nowhere else; in the owner's tree, as it is named.

use std::path::{Path, PathBuf};

use magrathea_exec::beneath::{self, DirList};
use magrathea_yaml::{DocumentSource, Scope};

use crate::atomic_write::write_atomically;

/// Writes `bytes` to `file`, a file of `scope`'s project, whole or not at all: in a served
/// tree beneath the project ([`magrathea_exec::beneath`]: a directory a step swaps for a link
/// meanwhile leads the write nowhere else), in the owner's tree as [`write_atomically`] does.
pub(crate) fn write_in_project(
    docs: &DocumentSource,
    scope: &Scope,
    file: &Path,
    bytes: &[u8],
) -> std::io::Result<()> {
    match beneath_project(docs, scope, file)? {
        Some((base, rel)) => magrathea_exec::beneath::write_atomically(&base, &rel, bytes),
        None => write_atomically(file, bytes),
    }
}

/// Removes `file`, a file of `scope`'s project, as [`write_in_project`] writes one.
pub(crate) fn remove_in_project(
    docs: &DocumentSource,
    scope: &Scope,
    file: &Path,
) -> std::io::Result<()> {
    match beneath_project(docs, scope, file)? {
        Some((base, rel)) => magrathea_exec::beneath::remove_file(&base, &rel),
        None => std::fs::remove_file(file),
    }
}

/// In a served tree, the canonical project directory (made when missing) and `file` relative
/// to it; `None` for the owner's tree.
fn beneath_project(
    docs: &DocumentSource,
    scope: &Scope,
    file: &Path,
) -> std::io::Result<Option<(PathBuf, PathBuf)>> {
    if !docs.is_served() {
        return Ok(None);
    }
    let project = docs.project_dir(scope);
    std::fs::create_dir_all(&project)?;
    let (Some(base), _) = docs.confined_beneath(&project)? else {
        return Ok(None);
    };
    let rel = file.strip_prefix(&project).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a file of the project", file.display()),
        )
    })?;
    Ok(Some((base, rel.to_path_buf())))
}

/// Removes the directory `dir` of `scope`'s project and everything in it, as
/// [`write_in_project`] writes a file.
pub(crate) fn remove_dir_all_in_project(
    docs: &DocumentSource,
    scope: &Scope,
    dir: &Path,
) -> std::io::Result<()> {
    match beneath_project(docs, scope, dir)? {
        Some((base, rel)) => beneath::remove_dir_all(&base, &rel),
        None => std::fs::remove_dir_all(dir),
    }
}

/// The entries of the directory `dir` of `scope`'s project, read one at a time, as
/// [`write_in_project`] opens a file.
pub(crate) fn list_in_project(
    docs: &DocumentSource,
    scope: &Scope,
    dir: &Path,
) -> std::io::Result<DirList> {
    match beneath_project(docs, scope, dir)? {
        Some((base, rel)) => beneath::list_dir(&base, &rel),
        None => beneath::list_dir_following(dir),
    }
}
