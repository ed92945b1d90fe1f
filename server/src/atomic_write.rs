//! Writing a document whole or not at all: a temporary file beside it, then a rename.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use magrathea_yaml::{DocumentSource, Scope};

/// Writes `bytes` to `file` through a temporary file in the same directory and a rename,
/// creating the directory. The temporary file has a short name of its own (the document's
/// name may be as long as a file name can be) that no other write of this process shares,
/// and nothing of it is left behind when the write fails.
pub(crate) fn write_atomically(file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = file.parent().unwrap_or(file);
    std::fs::create_dir_all(dir)?;
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".write.{}.{n}.tmp", std::process::id()));
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, file));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_with_the_longest_name_is_written_whole_and_nothing_else_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sub").join("n".repeat(255));
        write_atomically(&file, b"one").unwrap();
        write_atomically(&file, b"two").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // A directory where the file should be: refused, and no temporary file stays.
        let taken = dir.path().join("taken");
        std::fs::create_dir_all(taken.join("inner")).unwrap();
        assert!(write_atomically(&taken, b"x").is_err());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }
}
