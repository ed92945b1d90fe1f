//! A shell step's private temporary directory (`TMPDIR`), and the removal of those that a
//! killed process left behind.
//!
//! The directory is removed when the step ends, but a process killed with SIGKILL (or stopped
//! by the power) removes nothing; its step's processes die with it (the lifeline in
//! [`super::run_shell`]), and the directory would stay in the system's temporary directory for
//! good. So the process that creates one holds a lock on it (`flock` on the directory itself,
//! which the kernel drops when the process dies in any way), and the first shell step of a
//! process, and then one a minute after the last sweep, removes every such directory whose
//! lock nobody holds: its owner is gone.
//!
//! A directory is only taken once it has not changed for [`STALE_AFTER`], so the instant
//! between its creation and its lock never looks abandoned; a directory of another user is left
//! alone (it cannot be opened). Symbolic links are never followed.

use std::fs::File;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use tempfile::TempDir;

/// The name every step's directory starts with.
const PREFIX: &str = "magrathea-shell-";

/// How long an unlocked directory must have been left unchanged before it is removed.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// At most this many entries of the temporary directory are looked at in one sweep: a
/// directory crowded by other programs does not hold the sweep for long.
const SWEEP_REACH: usize = 100_000;

/// A step's temporary directory, locked while it lives and removed when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    // Removed before the lock is let go.
    dir: TempDir,
    _held: File,
}

impl Scratch {
    /// Creates and locks a new directory under the system's temporary directory; the first
    /// call of a process, and then one at most every [`STALE_AFTER`], also starts the sweep of
    /// abandoned ones (on a thread of its own). The later sweeps take what a crash just before
    /// this process started left (too young for its first sweep).
    pub(crate) fn create() -> io::Result<Self> {
        static SWEPT: Mutex<Option<Instant>> = Mutex::new(None);
        {
            let mut swept = SWEPT.lock().unwrap_or_else(PoisonError::into_inner);
            if swept.is_none_or(|at| at.elapsed() >= STALE_AFTER) {
                *swept = Some(Instant::now());
                let root = std::env::temp_dir();
                // Without a thread the sweep is skipped: it only tidies.
                let _ = std::thread::Builder::new()
                    .name("magrathea-shell-sweep".into())
                    .spawn(move || sweep(&root, STALE_AFTER));
            }
        }
        // Private: other users of the machine must not read what a step writes there.
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?;
        let held = File::open(dir.path())?;
        held.try_lock().map_err(io::Error::from)?;
        Ok(Self { dir, _held: held })
    }

    /// The directory's path.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes the step directories under `root` that no process holds and that have not changed
/// for `stale_after`; gives how many it removed. Errors leave a directory where it is.
fn sweep(root: &Path, stale_after: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let now = SystemTime::now();
    let mut removed = 0;
    for entry in entries.take(SWEEP_REACH).filter_map(Result::ok) {
        if !entry
            .file_name()
            .as_encoded_bytes()
            .starts_with(PREFIX.as_bytes())
        {
            continue;
        }
        // The entry's own type: a symbolic link is not a directory here.
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let path = entry.path();
        if abandoned(&path, now, stale_after) && std::fs::remove_dir_all(&path).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether nobody holds `dir` and it has not changed for `stale_after`. The lock taken to
/// find out is let go at once: removing the directory needs none (a process that held it would
/// have held it from the start).
fn abandoned(dir: &Path, now: SystemTime, stale_after: Duration) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return false;
    };
    let settled = meta
        .modified()
        .ok()
        .and_then(|m| now.duration_since(m).ok())
        .is_some_and(|age| age >= stale_after);
    settled && meta.is_dir() && File::open(dir).is_ok_and(|f| f.try_lock().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step directory under `root`, last changed `age` ago.
    fn step_dir(root: &Path, name: &str, age: Duration) -> std::path::PathBuf {
        let dir = root.join(format!("{PREFIX}{name}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("magrathea-env"), "x").unwrap();
        File::open(&dir)
            .unwrap()
            .set_modified(SystemTime::now() - age)
            .unwrap();
        dir
    }

    #[test]
    fn removes_only_unheld_settled_step_directories() {
        let root = tempfile::tempdir().unwrap();
        let old = Duration::from_secs(3600);
        let orphan = step_dir(root.path(), "orphan", old);
        let held = step_dir(root.path(), "held", old);
        let lock = File::open(&held).unwrap();
        lock.try_lock().unwrap();
        let fresh = step_dir(root.path(), "fresh", Duration::ZERO);
        let other = root.path().join("other-program");
        std::fs::create_dir(&other).unwrap();
        let target = root.path().join("elsewhere");
        std::fs::create_dir(&target).unwrap();
        let link = root.path().join(format!("{PREFIX}link"));
        std::os::unix::fs::symlink(&target, &link).unwrap();

        assert_eq!(sweep(root.path(), STALE_AFTER), 1);
        assert!(
            !orphan.exists(),
            "an unheld directory of a dead process is removed"
        );
        assert!(held.join("magrathea-env").exists(), "a held one is kept");
        assert!(
            fresh.exists(),
            "one that may be in its first instant is kept"
        );
        assert!(other.exists() && target.exists() && link.exists());

        drop(lock);
        assert_eq!(sweep(root.path(), STALE_AFTER), 1);
        assert!(!held.exists(), "once its holder is gone it is removed too");
    }

    #[test]
    fn a_created_directory_is_private_and_held_until_dropped() {
        let scratch = Scratch::create().unwrap();
        let path = scratch.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        File::open(&path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(3600))
            .unwrap();
        assert!(!abandoned(&path, SystemTime::now(), STALE_AFTER));
        drop(scratch);
        assert!(!path.exists());
    }
}
