//! A read-only view of a store, for callers outside the engine.

use std::fmt;
use std::sync::Arc;

use super::{RunFilter, RunSummary, Store};
use crate::error::StoreError;
use crate::id::RunId;
use crate::record::Entry;

/// The reads of an engine's store. Writes go through the engine's journal writer only: a
/// commit behind its back would break the single-writer contract and the journal's order.
#[derive(Clone)]
pub struct StoreReader {
    store: Arc<dyn Store>,
}

impl fmt::Debug for StoreReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreReader").finish_non_exhaustive()
    }
}

impl StoreReader {
    pub(crate) fn new(store: Arc<dyn Store>) -> Self {
        Self { store }
    }

    /// Whether an I/O failure keeps the store from answering reads until it recovers
    /// ([`Store::failing`]).
    pub fn failing(&self) -> bool {
        self.store.failing()
    }

    /// The decoded journal of a run (empty for an unknown run).
    pub fn read_journal(&self, run_id: RunId) -> Result<Vec<Entry>, StoreError> {
        self.store.read_journal(run_id)
    }

    /// The encoded records of a run, with their seqs.
    pub fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.store.read_journal_raw(run_id)
    }

    /// At most `limit` encoded records of a run from `from_seq` on, in `seq` order, and no
    /// more than `max_bytes` of them after the first (see [`Store::read_journal_range`]).
    pub fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.store
            .read_journal_range(run_id, from_seq, limit, max_bytes)
    }

    /// The run's summary, if the run exists.
    pub fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        self.store.run_summary(run_id)
    }

    /// Runs matching the filter, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.store.list_runs(filter)
    }

    /// Runs that have not ended.
    pub fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.store.active_runs()
    }

    /// The run started with this idempotency key.
    pub fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        self.store.find_idempotency_key(key)
    }
}
