//! A store file that an open created but never wrote.
//!
//! redb creates a new file, sets its length and then writes its header. When that write fails
//! (a full disk) or the process dies between the two, the file is left all zeros: not a
//! database, so every later open refused it ("magic number mismatch") even after space was
//! freed. Such a file holds nothing — no commit reached it — so an open that meets it takes
//! it away and creates the store afresh.

use std::io::Read;
use std::path::Path;

/// The longest file looked at: a file redb has just created is a few pages long.
const MAX_LEN: u64 = 16 << 20;

/// Takes away the file at `path` if it was created and never written: all zeros (or empty),
/// no longer than [`MAX_LEN`], and not open in another store (it is locked while it is).
/// Returns whether it did.
pub(super) fn remove_if_unwritten(path: &Path) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    // An open store holds the file's lock; one that is creating it too.
    if file.try_lock().is_err() {
        return false;
    }
    let unwritten = file
        .metadata()
        .is_ok_and(|meta| meta.is_file() && meta.len() <= MAX_LEN)
        && all_zeros(&mut file);
    // Removed while locked: an open that found the file before holds the old, empty one and
    // fails on it as this open did.
    unwritten && std::fs::remove_file(path).is_ok()
}

fn all_zeros(file: &mut std::fs::File) -> bool {
    let mut buf = [0u8; 64 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => return true,
            Ok(n) if buf[..n].iter().all(|&b| b == 0) => {}
            Ok(_) | Err(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_of_zeros_is_taken_away_and_one_with_data_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = dir.path().join("zeros.redb");
        std::fs::write(&zeros, vec![0u8; 73_728]).unwrap();
        assert!(remove_if_unwritten(&zeros));
        assert!(!zeros.exists());

        let data = dir.path().join("data.redb");
        let mut bytes = vec![0u8; 73_728];
        bytes[70_000] = 1;
        std::fs::write(&data, &bytes).unwrap();
        assert!(!remove_if_unwritten(&data));
        assert!(data.exists());

        assert!(!remove_if_unwritten(&dir.path().join("missing.redb")));
    }

    #[test]
    fn a_locked_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let zeros = dir.path().join("zeros.redb");
        std::fs::write(&zeros, vec![0u8; 4096]).unwrap();
        let holder = std::fs::File::open(&zeros).unwrap();
        holder.lock().unwrap();
        assert!(!remove_if_unwritten(&zeros));
        assert!(zeros.exists());
    }
}
