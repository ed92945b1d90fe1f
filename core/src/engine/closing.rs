//! Engines whose last [`Engine`](super::Engine) handle was dropped, and closing them when a
//! new engine of this process wants their store file.
//!
//! An engine without handles goes on with what it has in memory (a task finishes, a timer
//! fires) and lets go of its file once its runs are idle. A new engine built on the same file
//! does not wait for that: it closes the old one — its runs leave memory where their journal
//! stands, a running task attempt is aborted and runs again on the new engine, as after a
//! crash — and waits until the file is let go of. An engine stopped with
//! [`Engine::stop`](super::Engine::stop) whose handles still live lets go of its file when a
//! new engine wants it: its store closes, and the old handles read nothing more.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError, Weak};

use super::EngineInner;

/// Whether the engine is closing, and whether by a clean stop of its process
/// ([`Engine::stop`](super::Engine::stop)).
#[derive(Debug, Default)]
pub(crate) struct Closing(AtomicBool, AtomicBool);

impl Closing {
    /// Whether the engine is closing.
    pub(crate) fn is_closed(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Whether the engine's process stops cleanly: the runs leaving memory journal the
    /// executions they interrupt. An engine closed because another took its store over is
    /// not (its process may be gone in all but name).
    pub(crate) fn is_clean_stop(&self) -> bool {
        self.1.load(Ordering::Acquire)
    }
}

/// Engines of this process by the absolute path of their store file.
type ByFile = Mutex<HashMap<PathBuf, Weak<EngineInner>>>;

/// Engines of this process without handles.
fn orphans() -> &'static ByFile {
    static ORPHANS: OnceLock<ByFile> = OnceLock::new();
    ORPHANS.get_or_init(Mutex::default)
}

/// Engines of this process stopped with [`Engine::stop`](super::Engine::stop).
fn stopped() -> &'static ByFile {
    static STOPPED: OnceLock<ByFile> = OnceLock::new();
    STOPPED.get_or_init(Mutex::default)
}

/// Takes `file`'s entry out of `registry` when its engine is gone (not when it is another's).
fn forget_dropped(registry: &ByFile, file: &Path) {
    let mut engines = registry.lock().unwrap_or_else(PoisonError::into_inner);
    if engines.get(file).is_some_and(|w| w.strong_count() == 0) {
        engines.remove(file);
    }
}

/// Notes `engine` as stopped: a new engine of this process on its file may take the file from
/// it (see [`release_stopped`]). An engine that let go of its file already (stopped again
/// after a new engine took the file over) is not noted: the entry is the new engine's.
pub(crate) fn note_stopped(engine: &std::sync::Arc<EngineInner>) {
    if !engine.store.holds_files() {
        return;
    }
    if let Some(file) = &engine.file {
        stopped()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(file), std::sync::Arc::downgrade(engine));
    }
}

/// Has the stopped engine of this process that holds the store file at `path` let go of it,
/// once its runs have left memory (until then the caller waits); whether there is one.
pub(crate) fn release_stopped(path: &Path) -> bool {
    let engine = stopped()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key(path))
        .and_then(Weak::upgrade);
    let Some(engine) = engine else {
        return false;
    };
    if engine.active().is_empty() {
        engine.store.close_files();
        let mut stopped = stopped().lock().unwrap_or_else(PoisonError::into_inner);
        let file = key(path);
        if stopped
            .get(&file)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), std::sync::Arc::as_ptr(&engine)))
        {
            stopped.remove(&file);
        }
    }
    true
}

fn key(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Closes the engine of this process without handles that holds the store file at `path`, if
/// there is one; whether there was. One whose last reference is going (its entry is there, but
/// it can no longer be reached) counts: its drop lets the file go, and marks the store closing
/// before it takes its entry out, so a new engine waits for it rather than failing at once.
pub(crate) fn close_orphan(path: &Path) -> bool {
    let orphan = orphans()
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key(path))
        .cloned();
    match orphan.map(|weak| weak.upgrade()) {
        Some(Some(engine)) => {
            engine.close();
            true
        }
        Some(None) => true,
        None => false,
    }
}

/// Held by every [`Engine`](super::Engine) handle (and by no part of the engine): when the
/// last handle goes, the engine is listed as one a new engine on its file may close.
#[derive(Debug)]
pub(crate) struct Lifeline(pub(crate) Weak<EngineInner>);

impl Drop for Lifeline {
    fn drop(&mut self) {
        let Some(engine) = self.0.upgrade() else {
            return;
        };
        // An engine that let go of its file (a stopped one another engine took it from) is
        // nobody's to close: the file's entry, if any, is the new engine's.
        if !engine.store.holds_files() {
            return;
        }
        if let Some(file) = &engine.file {
            orphans()
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key(file), self.0.clone());
        }
    }
}

impl EngineInner {
    /// Closes the engine: no run comes into memory any more, the runs in memory leave it
    /// (their running task attempts are aborted and run again when the store is next opened,
    /// as after a crash; nothing is journaled for them), and the store is told, so that a new
    /// engine on the same file waits for it to be let go of instead of failing at once.
    /// [`EngineInner::close`] by a clean stop of the process.
    pub(crate) fn stop(&self) {
        self.closing.1.store(true, Ordering::Release);
        self.close();
    }

    pub(crate) fn close(&self) {
        // Marked before the drivers are woken, and under the lock of the runs in memory, so
        // that a run coming into memory meanwhile sees the mark (see `recover_claimed`).
        let active = self.active();
        self.closing.0.store(true, Ordering::Release);
        for driver in active.values() {
            let _ = driver.send(super::Event::Close);
        }
        drop(active);
        // Callers waiting for a run's status are told the engine stopped, rather than left
        // waiting for a change no driver here will make.
        self.status_waiters.notify_all();
        self.store.closing();
    }
}

impl Drop for EngineInner {
    /// The journal writer's thread may hold the store a moment longer: a new engine on the
    /// same file waits for it.
    fn drop(&mut self) {
        self.store.closing();
        if let Some(file) = &self.file {
            let file = key(file);
            forget_dropped(orphans(), &file);
            forget_dropped(stopped(), &file);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An engine being dropped (its entry there, itself no longer reachable) is one to wait
    /// for: a build on its file in that instant does not fail as if another process held it.
    #[test]
    fn an_orphan_being_dropped_is_waited_for_and_an_unknown_file_is_not() {
        let path = std::env::temp_dir().join("closing-test-never-opened.redb");
        assert!(!close_orphan(&path));
        orphans()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key(&path), Weak::new());
        assert!(close_orphan(&path), "an engine going away is waited for");
        orphans()
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(&path));
    }
}
