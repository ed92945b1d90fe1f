//! One lock per project for its resyncs, kept only while someone holds or waits for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use magrathea_yaml::Scope;

/// A project: its tenant and its name.
type ProjectKey = (String, String);

/// The locks of the projects being resynced, by tenant and project.
#[derive(Debug, Default)]
pub(crate) struct ResyncLocks {
    by_project: Mutex<HashMap<ProjectKey, Arc<Mutex<()>>>>,
}

/// A project's lock, taken out of [`ResyncLocks`]; dropping the last one of a project
/// forgets it, so the map holds only projects in a resync.
#[derive(Debug)]
pub(crate) struct ProjectLock<'a> {
    locks: &'a ResyncLocks,
    key: ProjectKey,
    lock: Arc<Mutex<()>>,
}

impl ResyncLocks {
    /// The lock of `scope`'s project.
    pub(crate) fn of(&self, scope: &Scope) -> ProjectLock<'_> {
        let key = (scope.tenant.clone(), scope.project.clone());
        let lock = self
            .by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone();
        ProjectLock {
            locks: self,
            key,
            lock,
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl ProjectLock<'_> {
    /// Waits for the project's earlier resyncs.
    pub(crate) fn lock(&self) -> std::sync::LockResult<std::sync::MutexGuard<'_, ()>> {
        self.lock.lock()
    }
}

impl Drop for ProjectLock<'_> {
    fn drop(&mut self) {
        let mut map = self
            .locks
            .by_project
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // The map's own reference and this one: nobody else holds or waits for the lock.
        if Arc::strong_count(&self.lock) == 2 {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_waits_for_its_own_resyncs_only_and_is_forgotten_after() {
        let locks = ResyncLocks::default();
        let a = Scope::new("acme", "shop");
        let b = Scope::new("globex", "vault");
        let first = locks.of(&a);
        let held = first.lock().unwrap();
        // Another project's lock is free while acme/shop's is held.
        let other = locks.of(&b);
        assert!(other.lock.try_lock().is_ok());
        drop(other);
        // The same project's is not.
        let second = locks.of(&a);
        assert!(second.lock.try_lock().is_err());
        drop(held);
        assert!(second.lock.try_lock().is_ok());
        drop(second);
        drop(first);
        assert_eq!(locks.len(), 0);
    }
}
