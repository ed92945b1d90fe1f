//! The store files this process has open, and which of them an engine is letting go of: an
//! engine built on a file that a closing engine of this process still holds waits for it
//! instead of failing with `[MAG-ST002]`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

/// Open store files by absolute path: whether their engine is closing.
fn open_files() -> &'static Mutex<HashMap<PathBuf, bool>> {
    static OPEN: OnceLock<Mutex<HashMap<PathBuf, bool>>> = OnceLock::new();
    OPEN.get_or_init(Mutex::default)
}

fn key(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Held by an open store: the file is in the list while it lives, or until the store
/// releases it. It is the last thing the store drops, after the database and the log, so a
/// file that leaves the list is closed.
#[derive(Debug)]
pub(super) struct OpenHere(PathBuf, AtomicBool);

impl OpenHere {
    pub(super) fn new(path: &Path) -> Self {
        let path = key(path);
        open_files()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(path.clone(), false);
        Self(path, AtomicBool::new(false))
    }

    /// The engine on the file is closing.
    pub(super) fn closing(&self) {
        // A released file may be another store's now: its entry is not this one's.
        if self.1.load(Ordering::Acquire) {
            return;
        }
        if let Some(closing) = open_files()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&self.0)
        {
            *closing = true;
        }
    }

    /// The store closed its files: the file leaves the list now, once.
    pub(super) fn release(&self) {
        if !self.1.swap(true, Ordering::AcqRel) {
            open_files()
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.0);
        }
    }
}

impl Drop for OpenHere {
    fn drop(&mut self) {
        self.release();
    }
}

/// Whether a closing engine of this process still holds the store file at `path`.
pub(crate) fn closing_here(path: &Path) -> bool {
    open_files()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key(path))
        .copied()
        .unwrap_or(false)
}
