//! The default store: one redb file.
//!
//! A group commit appends **one row** to `journal_log`, keyed by a commit counter: a frame of
//! every record in the commit ([`log_frame`](super::log_frame)). Rows at the right edge of a
//! B-tree are cheap, so a commit of 1,000 records from 1,000 runs writes a handful of pages
//! instead of one leaf per run. The committed records are also kept in memory (the *unfolded*
//! set) so reads see them at once. From time to time — when the unfolded set is large or the
//! writer is idle — [`Store::maintain`] *folds* them: one transaction moves them into `journal`,
//! keyed `(run_id, seq)`, and deletes the log rows it covered. A run's records then land in one
//! place per fold instead of once per commit. Opening the file folds whatever a crash left in
//! the log.
//!
//! After redb reports an I/O failure it refuses every later operation on that database
//! (`PreviousIo`) until it is reopened. The store therefore reopens the file before its next
//! operation, and folds what the log holds as a fresh open does: a transient disk error fails the
//! commits it hit, not every commit after it. A commit whose final fsync failed may turn out to
//! be on disk after the reopen (see the [`Store`] contract).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{CommitBatch, RunFilter, RunSummary, Store};
use crate::codec;
use crate::error::StoreError;
use crate::id::RunId;
use crate::record::Entry;

mod catalog;
mod log;
mod read;
#[cfg(test)]
mod tests;

use log::{DEFAULT_FOLD, FoldPolicy, Unfolded};
use read::{decode_summary, list_runs_in};

const JOURNAL: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal");
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("journal_log");
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

/// Opens the store's database: at open, and again after an I/O failure.
type OpenDatabase = Box<dyn Fn() -> Result<redb::Database, StoreError> + Send + Sync>;

/// A [`Store`] in one redb file.
pub struct RedbStore {
    /// `None` only between dropping a failed database and a successful reopen.
    db: RwLock<Option<redb::Database>>,
    open_database: OpenDatabase,
    /// redb reported an I/O failure: the database must be reopened before it is used again.
    io_failed: AtomicBool,
    path: PathBuf,
    durability: Durability,
    unfolded: RwLock<Unfolded>,
    next_log_key: AtomicU64,
    fold: FoldPolicy,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .field("io_failed", &self.io_failed)
            .finish_non_exhaustive()
    }
}

/// A redb error as a [`StoreError::Io`] whose source is the `std::io::Error` when there is one,
/// else redb's error.
fn io(e: impl Into<redb::Error>) -> StoreError {
    match e.into() {
        redb::Error::Io(e) => StoreError::Io(Arc::new(e)),
        other => StoreError::Io(Arc::new(other)),
    }
}

/// Whether redb has latched a failure that only a reopen clears.
fn needs_reopen(e: &StoreError) -> bool {
    let StoreError::Io(source) = e else {
        return false;
    };
    source.is::<std::io::Error>()
        || matches!(
            source.downcast_ref::<redb::Error>(),
            Some(redb::Error::PreviousIo)
        )
}

fn open_error(e: redb::DatabaseError, path: &Path) -> StoreError {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => StoreError::Locked(path.display().to_string()),
        other => io(other),
    }
}

impl RedbStore {
    /// Opens (or creates) the store file at `path`; its parent directory is created if needed.
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let file = path.clone();
        let open_database =
            Box::new(move || redb::Database::create(&file).map_err(|e| open_error(e, &file)));
        Self::open_with(path, durability, open_database)
    }

    /// Opens a store over a redb storage backend that `backend` makes; it is called again to
    /// reopen the database after an I/O failure. `path` is what [`RedbStore::path`] reports.
    /// For tests that inject faults below redb (see [`FaultyBackend`](super::FaultyBackend)).
    #[cfg(any(test, feature = "test-util"))]
    pub fn open_with_backend<B: redb::StorageBackend>(
        path: impl AsRef<Path>,
        durability: Durability,
        backend: impl Fn() -> Result<B, StoreError> + Send + Sync + 'static,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let file = path.clone();
        let open_database = Box::new(move || {
            redb::Builder::new()
                .create_with_backend(backend()?)
                .map_err(|e| open_error(e, &file))
        });
        Self::open_with(path, durability, open_database)
    }

    fn open_with(
        path: PathBuf,
        durability: Durability,
        open_database: OpenDatabase,
    ) -> Result<Self, StoreError> {
        let db = open_database()?;
        let left_in_log = Self::read_log(&db)?;
        let store = Self {
            db: RwLock::new(Some(db)),
            open_database,
            io_failed: AtomicBool::new(false),
            path,
            durability,
            next_log_key: AtomicU64::new(left_in_log.next_log_key()),
            unfolded: RwLock::new(left_in_log),
            fold: DEFAULT_FOLD,
        };
        store.fold()?;
        Ok(store)
    }

    /// Runs `f` on the database, reopening it first if an earlier operation left it failed.
    fn with_db<T>(
        &self,
        f: impl FnOnce(&redb::Database) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.io_failed.load(Ordering::Acquire) {
            self.reopen()?;
        }
        let guard = self.db.read().unwrap_or_else(PoisonError::into_inner);
        let db = guard.as_ref().ok_or_else(|| {
            StoreError::io("the database is closed after an I/O failure and not yet reopened")
        })?;
        let result = f(db);
        if let Err(e) = &result
            && needs_reopen(e)
        {
            self.io_failed.store(true, Ordering::Release);
        }
        result
    }

    /// Drops the failed database and opens it again; then, like an open, folds the log. Holding
    /// the database exclusively keeps out every reader and the writer meanwhile.
    fn reopen(&self) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if !self.io_failed.load(Ordering::Acquire) {
            return Ok(()); // another thread reopened it first
        }
        // The old database must close (and release its file lock) before the file is reopened.
        *db = None;
        let fresh = (self.open_database)()?;
        let left_in_log = Self::read_log(&fresh)?;
        {
            let mut unfolded = self
                .unfolded
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            self.next_log_key
                .store(left_in_log.next_log_key(), Ordering::Relaxed);
            *unfolded = Unfolded {
                last_commit: unfolded.last_commit,
                ..left_in_log
            };
        }
        tracing::warn!(path = %self.path.display(), "reopened the journal store after an I/O failure");
        self.io_failed.store(false, Ordering::Release);
        let db = db.insert(fresh);
        let folded = self.fold_in(db);
        if let Err(e) = &folded
            && needs_reopen(e)
        {
            self.io_failed.store(true, Ordering::Release);
        }
        folded
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records committed but not yet folded into the `journal` table.
    pub fn unfolded_records(&self) -> usize {
        self.unfolded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .records
    }

    fn redb_durability(&self) -> redb::Durability {
        match self.durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::RelaxedForTests => redb::Durability::None,
        }
    }
}

impl Store for RedbStore {
    fn catalog(&self) -> Option<&dyn super::Catalog> {
        Some(self)
    }

    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        self.with_db(|db| self.commit_in(db, batches))
    }

    fn maintain(&self) -> Result<(), StoreError> {
        if self.io_failed.load(Ordering::Acquire) {
            // Heal while idle, so that reads need not wait for the next commit.
            self.reopen()?;
        }
        let due = {
            let u = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
            u.records >= self.fold.records
                || u.bytes >= self.fold.bytes
                || (u.records > 0 && u.last_commit.is_some_and(|t| t.elapsed() >= self.fold.idle))
        };
        if due { self.fold() } else { Ok(()) }
    }

    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read_run(run_id, 0, usize::MAX, |seq, bytes| {
            Ok((seq, bytes.to_vec()))
        })
    }

    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read_run(run_id, from_seq, limit, |seq, bytes| {
            Ok((seq, bytes.to_vec()))
        })
    }

    fn read_journal_measured(&self, run_id: RunId) -> Result<(Vec<Entry>, u64), StoreError> {
        let mut total = 0u64;
        let entries = self.read_run(run_id, 0, usize::MAX, |seq, bytes| {
            total += bytes.len() as u64;
            let (record, at_ms) = codec::decode(bytes)?;
            Ok(Entry { seq, at_ms, record })
        })?;
        Ok((entries, total))
    }

    fn read_journal(&self, run_id: RunId) -> Result<Vec<Entry>, StoreError> {
        // Decodes straight from redb's pages, without copying each record first.
        self.read_run(run_id, 0, usize::MAX, |seq, bytes| {
            let (record, at_ms) = codec::decode(bytes)?;
            Ok(Entry { seq, at_ms, record })
        })
    }

    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let table = tx.open_table(RUNS).map_err(io)?;
            match table.get(run_id.as_u128()).map_err(io)? {
                Some(v) => decode_summary(v.value()).map(Some),
                None => Ok(None),
            }
        })
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.with_db(|db| list_runs_in(db, filter))
    }

    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let table = tx.open_table(ACTIVE).map_err(io)?;
            table
                .iter()
                .map_err(io)?
                .map(|row| Ok(RunId::from_u128(row.map_err(io)?.0.value())))
                .collect()
        })
    }

    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let table = tx.open_table(KEYS).map_err(io)?;
            Ok(table
                .get(key)
                .map_err(io)?
                .map(|v| RunId::from_u128(v.value())))
        })
    }
}
