//! Writing a document whole or not at all: a temporary file beside it, then a rename.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

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
