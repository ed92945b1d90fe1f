//! One lock per idempotency key, for starts.
//!
//! A keyed start looks its key up and, if it is new, commits the run's `StartRecord` together
//! with the key; two starts with one key must not both find it new. Holding one lock for every
//! key would serialise all keyed starts, so that no two of them ever share a group commit;
//! [`KeyLocks`] serialises starts per key only.
//!
//! Invariant: the map holds an entry for a key exactly while some start holds or waits for
//! that key's lock, so its size is bounded by the number of keyed starts in flight. A handle's
//! clone of the entry is only taken under the map's lock, so when the last handle checks the
//! entry's count under that lock, no other start can be about to use it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

type Entry = Arc<tokio::sync::Mutex<()>>;

/// Locks keyed by idempotency key; see the module docs.
#[derive(Default)]
pub(crate) struct KeyLocks {
    map: Mutex<HashMap<String, Entry>>,
}

impl fmt::Debug for KeyLocks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyLocks")
            .field("keys", &self.map().len())
            .finish()
    }
}

impl KeyLocks {
    fn map(&self) -> MutexGuard<'_, HashMap<String, Entry>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the lock of `key`. Cancel-safe: dropping the future while it waits removes
    /// the key's entry if nobody else uses it. The guard owns what it needs, so that it can
    /// outlive the caller (a start that must hold its key until its commit, see
    /// `EngineInner::start`).
    pub(crate) async fn lock(self: &Arc<Self>, key: &str) -> KeyGuard {
        let entry = self.map().entry(key.to_owned()).or_default().clone();
        let handle = Handle {
            locks: self.clone(),
            key: key.to_owned(),
            entry: Some(entry.clone()),
        };
        let guard = entry.lock_owned().await;
        KeyGuard {
            _guard: guard,
            _handle: handle,
        }
    }

    /// Number of keys locked or waited for.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.map().len()
    }
}

/// Holds the lock of one key until dropped.
pub(crate) struct KeyGuard {
    // Dropped first: the lock is released before the entry's count is checked.
    _guard: tokio::sync::OwnedMutexGuard<()>,
    _handle: Handle,
}

/// A start's claim on a key's entry; the last one removes the entry.
struct Handle {
    locks: Arc<KeyLocks>,
    key: String,
    entry: Option<Entry>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut map = self.locks.map();
        if let Some(entry) = self.entry.take() {
            // The map's clone and this one: nobody else holds or waits for the key.
            if Arc::strong_count(&entry) == 2 {
                map.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use futures::FutureExt;

    use super::*;

    #[tokio::test]
    async fn one_key_is_exclusive_and_other_keys_are_not() {
        let locks = Arc::new(KeyLocks::default());
        let a = locks.lock("a").await;
        // Another key is free while `a` is held.
        let b = locks.lock("b").await;
        assert_eq!(locks.len(), 2);
        assert!(
            locks.lock("a").now_or_never().is_none(),
            "a second holder of `a` got the lock"
        );
        drop(a);
        let again = locks.lock("a").await;
        drop(again);
        drop(b);
        assert_eq!(locks.len(), 0, "entries are removed when unused");
    }

    #[tokio::test]
    async fn a_waiter_dropped_while_waiting_leaves_no_entry_behind() {
        let locks = Arc::new(KeyLocks::default());
        let a = locks.lock("a").await;
        {
            let mut waiting = Box::pin(locks.lock("a"));
            assert!((&mut waiting).now_or_never().is_none());
            assert_eq!(locks.len(), 1);
        }
        assert_eq!(locks.len(), 1, "the holder's entry stays");
        drop(a);
        assert_eq!(locks.len(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_concurrent_holders_of_one_key_never_overlap_and_clean_up() {
        let locks = Arc::new(KeyLocks::default());
        // Holders inside, per key; and how often a holder found another one of its key.
        let inside = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let overlaps = Arc::new(AtomicU32::new(0));
        let tasks: Vec<_> = (0..64)
            .map(|i| {
                let (locks, inside, overlaps) = (locks.clone(), inside.clone(), overlaps.clone());
                tokio::spawn(async move {
                    let key = ["even", "odd"][i % 2];
                    let _g = locks.lock(key).await;
                    if inside[i % 2].fetch_add(1, Ordering::SeqCst) > 0 {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                    tokio::task::yield_now().await;
                    inside[i % 2].fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(overlaps.load(Ordering::SeqCst), 0);
        assert_eq!(locks.len(), 0);
    }
}
