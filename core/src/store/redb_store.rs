//! The default store: one redb file.

use std::path::{Path, PathBuf};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{CommitBatch, RunFilter, RunSummary, Store, summary_matches};
use crate::error::StoreError;
use crate::id::RunId;

const JOURNAL: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal");
const RUNS: TableDefinition<u128, &[u8]> = TableDefinition::new("runs");
const ACTIVE: TableDefinition<u128, ()> = TableDefinition::new("active_runs");
const KEYS: TableDefinition<&str, u128> = TableDefinition::new("idempotency_keys");

/// How hard a commit works to reach the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Durability {
    /// Every commit is on disk when it returns (fsync). The default.
    #[default]
    Immediate,
    /// **Not crash-safe.** Commits are not synced; a crash may lose recent commits. For tests
    /// and benches that measure the engine without the disk.
    RelaxedForTests,
}

/// A [`Store`] in one redb file.
#[derive(Debug)]
pub struct RedbStore {
    db: redb::Database,
    path: PathBuf,
    durability: Durability,
}

fn io<E: std::fmt::Display>(e: E) -> StoreError {
    StoreError::Io(e.to_string())
}

impl RedbStore {
    /// Opens (or creates) the store file at `path`; its parent directory is created if needed.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let db = redb::Database::create(&path).map_err(|e| match e {
            redb::DatabaseError::DatabaseAlreadyOpen => {
                StoreError::Locked(path.display().to_string())
            }
            other => io(other),
        })?;
        let tx = db.begin_write().map_err(io)?;
        {
            tx.open_table(JOURNAL).map_err(io)?;
            tx.open_table(RUNS).map_err(io)?;
            tx.open_table(ACTIVE).map_err(io)?;
            tx.open_table(KEYS).map_err(io)?;
        }
        tx.commit().map_err(io)?;
        Ok(Self {
            db,
            path,
            durability,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn decode_summary(bytes: &[u8]) -> Result<RunSummary, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Io(format!("corrupt run index: {e}")))
}

impl Store for RedbStore {
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let mut tx = self.db.begin_write().map_err(io)?;
        tx.set_durability(match self.durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::RelaxedForTests => redb::Durability::None,
        })
        .map_err(io)?;
        {
            let mut journal = tx.open_table(JOURNAL).map_err(io)?;
            for batch in batches {
                for r in &batch.records {
                    journal
                        .insert((r.run_id.as_u128(), r.seq), r.bytes.as_slice())
                        .map_err(io)?;
                }
            }
            let has_summaries = batches.iter().any(|b| !b.summaries.is_empty());
            if has_summaries {
                let mut runs = tx.open_table(RUNS).map_err(io)?;
                let mut active = tx.open_table(ACTIVE).map_err(io)?;
                for s in batches.iter().flat_map(|b| &b.summaries) {
                    let bytes = serde_json::to_vec(s).map_err(io)?;
                    runs.insert(s.run_id.as_u128(), bytes.as_slice())
                        .map_err(io)?;
                    if s.status.is_terminal() {
                        active.remove(s.run_id.as_u128()).map_err(io)?;
                    } else {
                        active.insert(s.run_id.as_u128(), ()).map_err(io)?;
                    }
                }
            }
            if batches.iter().any(|b| !b.idempotency_keys.is_empty()) {
                let mut keys = tx.open_table(KEYS).map_err(io)?;
                for (k, id) in batches.iter().flat_map(|b| &b.idempotency_keys) {
                    keys.insert(k.as_str(), id.as_u128()).map_err(io)?;
                }
            }
        }
        // Dropping an uncommitted transaction aborts it: an error above applies nothing.
        tx.commit().map_err(io)
    }

    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let tx = self.db.begin_read().map_err(io)?;
        let table = tx.open_table(JOURNAL).map_err(io)?;
        let id = run_id.as_u128();
        table
            .range((id, 0)..=(id, u64::MAX))
            .map_err(io)?
            .map(|row| {
                let (k, v) = row.map_err(io)?;
                Ok((k.value().1, v.value().to_vec()))
            })
            .collect()
    }

    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        let tx = self.db.begin_read().map_err(io)?;
        let table = tx.open_table(RUNS).map_err(io)?;
        match table.get(run_id.as_u128()).map_err(io)? {
            Some(v) => decode_summary(v.value()).map(Some),
            None => Ok(None),
        }
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let tx = self.db.begin_read().map_err(io)?;
        let table = tx.open_table(RUNS).map_err(io)?;
        let upper = filter.before.map_or(u128::MAX, |b| b.as_u128());
        let limit = if filter.limit == 0 {
            usize::MAX
        } else {
            filter.limit
        };
        let mut out = Vec::new();
        for row in table.range(..upper).map_err(io)?.rev() {
            let (_, v) = row.map_err(io)?;
            let s = decode_summary(v.value())?;
            if summary_matches(&s, filter) {
                out.push(s);
                if out.len() >= limit {
                    break;
                }
            }
        }
        if filter.before.is_none() && out.len() < limit {
            // `..u128::MAX` excludes the largest possible id; include it for completeness.
            if let Some(v) = table.get(u128::MAX).map_err(io)? {
                let s = decode_summary(v.value())?;
                if summary_matches(&s, filter) {
                    out.insert(0, s);
                }
            }
        }
        Ok(out)
    }

    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        let tx = self.db.begin_read().map_err(io)?;
        let table = tx.open_table(ACTIVE).map_err(io)?;
        table
            .iter()
            .map_err(io)?
            .map(|row| Ok(RunId::from_u128(row.map_err(io)?.0.value())))
            .collect()
    }

    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        let tx = self.db.begin_read().map_err(io)?;
        let table = tx.open_table(KEYS).map_err(io)?;
        Ok(table
            .get(key)
            .map_err(io)?
            .map(|v| RunId::from_u128(v.value())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_store_contracts() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        super::super::contract_tests::check_all(&store);
    }

    #[test]
    fn survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/j.redb");
        let run = RunId::new();
        {
            let store = RedbStore::open(&path, Durability::Immediate).unwrap();
            let batch = CommitBatch {
                records: vec![super::super::EncodedRecord {
                    run_id: run,
                    seq: 0,
                    bytes: vec![9],
                }],
                ..Default::default()
            };
            store.commit(&[&batch]).unwrap();
        }
        let store = RedbStore::open(&path, Durability::Immediate).unwrap();
        assert_eq!(store.read_journal_raw(run).unwrap(), vec![(0, vec![9])]);
    }

    #[test]
    fn a_second_open_of_the_same_file_is_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.redb");
        let _first = RedbStore::open(&path, Durability::Immediate).unwrap();
        let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
        assert!(matches!(err, StoreError::Locked(_)), "{err}");
    }
}
