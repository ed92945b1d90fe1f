//! A store that fails or slows commits on demand: to prove that failures lose nothing
//! acknowledged, and to give commits the duration of a real fsync over a memory store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use super::{CommitBatch, RunFilter, RunSummary, Store};
use crate::error::StoreError;
use crate::id::RunId;

/// Wraps a store; the next `n` commits fail (applying nothing) after [`FaultyStore::fail_next`],
/// and every commit takes at least [`FaultyStore::delay_commits`].
#[derive(Debug)]
pub struct FaultyStore<S> {
    inner: S,
    failures: Arc<AtomicU32>,
    delay_micros: AtomicU64,
    room: Arc<AtomicU64>,
}

impl<S: Store> FaultyStore<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            failures: Arc::new(AtomicU32::new(0)),
            delay_micros: AtomicU64::new(0),
            room: Arc::new(AtomicU64::new(u64::MAX)),
        }
    }

    /// Makes every commit take `delay` longer (a slow disk); zero turns it off.
    pub fn delay_commits(&self, delay: Duration) {
        let micros = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.delay_micros.store(micros, Ordering::SeqCst);
    }

    /// Makes the next `n` commits fail.
    pub fn fail_next(&self, n: u32) {
        self.failures.store(n, Ordering::SeqCst);
    }

    /// A handle on the disk's room, in bytes of records (unlimited at first): a commit whose
    /// records hold more fails as on a full disk, and so does [`Store::has_room`] for more; an
    /// empty commit succeeds. Set it after the store moved into an engine.
    pub fn room(&self) -> Arc<AtomicU64> {
        self.room.clone()
    }

    /// A handle that can arm failures after the store moved into an engine.
    pub fn trigger(&self) -> Arc<AtomicU32> {
        self.failures.clone()
    }
}

impl<S: Store> Store for FaultyStore<S> {
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let armed = self
            .failures
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if armed {
            return Err(StoreError::io(std::io::Error::other(
                "injected commit failure",
            )));
        }
        let bytes: u64 = batches
            .iter()
            .flat_map(|b| &b.records)
            .map(|r| r.bytes.len() as u64)
            .sum();
        if bytes > self.room.load(Ordering::SeqCst) {
            return Err(no_room());
        }
        let delay = self.delay_micros.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay));
        }
        self.inner.commit(batches)
    }
    fn catalog(&self) -> Option<&dyn super::Catalog> {
        self.inner.catalog()
    }

    fn has_room(&self, bytes: u64) -> Result<(), StoreError> {
        if bytes > self.room.load(Ordering::SeqCst) {
            return Err(no_room());
        }
        self.inner.has_room(bytes)
    }

    fn maintain(&self) -> Result<(), StoreError> {
        self.inner.maintain()
    }
    fn failing(&self) -> bool {
        self.inner.failing()
    }
    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.inner.read_journal_raw(run_id)
    }
    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.inner
            .read_journal_range(run_id, from_seq, limit, max_bytes)
    }
    fn read_journal_for_replay(
        &self,
        run_id: RunId,
    ) -> Result<(Vec<crate::record::Entry>, u64), StoreError> {
        self.inner.read_journal_for_replay(run_id)
    }
    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        self.inner.run_summary(run_id)
    }
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs(filter)
    }
    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.inner.active_runs()
    }
    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        self.inner.find_idempotency_key(key)
    }
}

/// A full disk's error.
fn no_room() -> StoreError {
    StoreError::io(std::io::Error::new(
        std::io::ErrorKind::StorageFull,
        "injected: no space left on device",
    ))
}
