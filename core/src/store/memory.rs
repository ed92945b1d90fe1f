//! An in-memory store for tests and ephemeral engines. Nothing survives the process.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use super::catalog::{self, Catalog};
use super::{CommitBatch, RunFilter, RunSummary, Store, summary_matches};
use crate::error::StoreError;
use crate::id::RunId;

/// A [`Store`] in memory. Keeps every contract except durability across processes.
#[derive(Debug, Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    catalog: Mutex<BTreeMap<(String, String), Vec<u8>>>,
}

#[derive(Debug, Default)]
struct Inner {
    journal: BTreeMap<(RunId, u64), Vec<u8>>,
    runs: BTreeMap<RunId, RunSummary>,
    active: BTreeSet<RunId>,
    keys: HashMap<String, RunId>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave a half-applied batch: batches are applied
        // after all checks, so the data is still consistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Catalog for MemoryStore {
    fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.entries().get(&(table.into(), key.into())).cloned())
    }

    fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError> {
        catalog::check(key, Some(value))?;
        self.entries()
            .insert((table.into(), key.into()), value.to_vec());
        Ok(())
    }

    fn insert_new(
        &self,
        table: &str,
        key: &str,
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, StoreError> {
        catalog::check(key, Some(value))?;
        let mut entries = self.entries();
        match entries.get(&(table.into(), key.into())) {
            Some(held) => Ok(Some(held.clone())),
            None => {
                entries.insert((table.into(), key.into()), value.to_vec());
                Ok(None)
            }
        }
    }

    fn swap(
        &self,
        table: &str,
        key: &str,
        expected: Option<&[u8]>,
        value: &[u8],
    ) -> Result<bool, StoreError> {
        catalog::check(key, Some(value))?;
        let mut entries = self.entries();
        let slot = (table.to_owned(), key.to_owned());
        if entries.get(&slot).map(Vec::as_slice) != expected {
            return Ok(false);
        }
        entries.insert(slot, value.to_vec());
        Ok(true)
    }

    fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError> {
        let mut entries = self.entries();
        Ok(keys
            .iter()
            .filter(|k| entries.remove(&(table.to_owned(), (*k).clone())).is_some())
            .count())
    }

    fn scan(
        &self,
        table: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let entries = self.entries();
        let from = (table.to_owned(), prefix.to_owned());
        Ok(entries
            .range(from..)
            .take_while(|((t, k), _)| t == table && k.starts_with(prefix))
            .filter(|((_, k), _)| after.is_none_or(|a| k.as_str() > a))
            .take(limit)
            .map(|((_, k), v)| (k.clone(), v.clone()))
            .collect())
    }
}

impl MemoryStore {
    fn entries(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Vec<u8>>> {
        self.catalog.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Store for MemoryStore {
    fn catalog(&self) -> Option<&dyn Catalog> {
        Some(self)
    }

    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let mut inner = self.lock();
        for batch in batches {
            for r in &batch.records {
                inner.journal.insert((r.run_id, r.seq), r.bytes.clone());
            }
            for s in &batch.summaries {
                if s.status.is_terminal() {
                    inner.active.remove(&s.run_id);
                } else {
                    inner.active.insert(s.run_id);
                }
                inner.runs.insert(s.run_id, s.clone());
            }
            for (k, id) in &batch.idempotency_keys {
                inner.keys.insert(k.clone(), *id);
            }
        }
        Ok(())
    }

    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .journal
            .range((run_id, 0)..=(run_id, u64::MAX))
            .map(|((_, seq), b)| (*seq, b.clone()))
            .collect())
    }

    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let inner = self.lock();
        let mut bound = super::PageBound::new(limit, max_bytes);
        Ok(inner
            .journal
            .range((run_id, from_seq)..=(run_id, u64::MAX))
            .take_while(|(_, b)| bound.admits(b.len()))
            .map(|((_, seq), b)| (*seq, b.clone()))
            .collect())
    }

    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        Ok(self.lock().runs.get(&run_id).cloned())
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let inner = self.lock();
        let limit = if filter.limit == 0 {
            usize::MAX
        } else {
            filter.limit
        };
        Ok(inner
            .runs
            .values()
            .rev()
            .filter(|s| filter.before.is_none_or(|b| s.run_id < b))
            .filter(|s| summary_matches(s, filter))
            .take(limit)
            .cloned()
            .collect())
    }

    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        Ok(self.lock().active.iter().copied().collect())
    }

    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        Ok(self.lock().keys.get(key).copied())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn keeps_the_store_contracts() {
        crate::store::contract::check_all(&super::MemoryStore::new());
    }

    #[test]
    fn reads_journal_ranges_as_slices_of_the_journal() {
        crate::store::contract::check_ranges(&super::MemoryStore::new());
    }
}
