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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::{CommitBatch, EncodedRecord, RunFilter, RunSummary, Store, log_frame, summary_matches};
use crate::codec;
use crate::error::StoreError;
use crate::id::RunId;
use crate::record::Entry;

const JOURNAL: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal");
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("journal_log");
const RUNS: TableDefinition<u128, &[u8]> = TableDefinition::new("runs");
const ACTIVE: TableDefinition<u128, ()> = TableDefinition::new("active_runs");
const KEYS: TableDefinition<&str, u128> = TableDefinition::new("idempotency_keys");

/// When the unfolded records are moved into `journal`.
#[derive(Debug, Clone, Copy)]
struct FoldPolicy {
    /// Fold after a commit once this many records are unfolded.
    records: usize,
    /// ... or once their bytes reach this.
    bytes: usize,
    /// Fold anything unfolded once the writer has had nothing to do for this long.
    idle: Duration,
}

const DEFAULT_FOLD: FoldPolicy = FoldPolicy {
    records: 32 * 1024,
    bytes: 8 << 20,
    idle: Duration::from_millis(200),
};

/// One run's unfolded records: `(seq, encoded record)` in seq order.
type RunRecords = Vec<(u64, Box<[u8]>)>;

/// Records committed to `journal_log` and not yet folded into `journal`, by run then seq.
#[derive(Debug, Default)]
struct Unfolded {
    runs: BTreeMap<u128, RunRecords>,
    records: usize,
    bytes: usize,
    /// The last `journal_log` key the set covers.
    last_log_key: Option<u64>,
    /// When the writer last committed.
    last_commit: Option<Instant>,
}

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

    /// Creates the tables of a freshly opened database and reads what its log holds: what the
    /// last process (or the database before a reopen) committed but did not fold.
    fn read_log(db: &redb::Database) -> Result<Unfolded, StoreError> {
        let tx = db.begin_write().map_err(io)?;
        let mut left_in_log = Unfolded::default();
        {
            tx.open_table(JOURNAL).map_err(io)?;
            tx.open_table(RUNS).map_err(io)?;
            tx.open_table(ACTIVE).map_err(io)?;
            tx.open_table(KEYS).map_err(io)?;
            let log = tx.open_table(LOG).map_err(io)?;
            for row in log.iter().map_err(io)? {
                let (k, v) = row.map_err(io)?;
                for r in log_frame::decode(v.value())? {
                    left_in_log.add(&r);
                }
                left_in_log.last_log_key = Some(k.value());
            }
        }
        tx.commit().map_err(io)?;
        Ok(left_in_log)
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

    /// A run's records in seq order, each passed through `each` as `(seq, bytes)`.
    fn read_run<T>(
        &self,
        run_id: RunId,
        mut each: impl FnMut(u64, &[u8]) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let id = run_id.as_u128();
        // Unfolded records first, then the table: a fold that commits in between moves
        // records from the first place to the second, so this order never misses one.
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        let recent: Vec<(u64, Box<[u8]>)> = unfolded.runs.get(&id).cloned().unwrap_or_default();
        drop(unfolded);
        self.with_db(|db| Self::read_run_in(db, id, recent, &mut each))
    }

    fn read_run_in<T>(
        db: &redb::Database,
        id: u128,
        recent: RunRecords,
        each: &mut impl FnMut(u64, &[u8]) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let tx = db.begin_read().map_err(io)?;
        let table = tx.open_table(JOURNAL).map_err(io)?;
        // Seqs are dense from 0: the last one sizes the result (records are large enough that
        // growing a vector of ten thousand of them shows in replay times).
        let range = || table.range((id, 0)..=(id, u64::MAX)).map_err(io);
        let last_folded = range()?.next_back().transpose().map_err(io)?;
        // A hint only, capped so that a corrupt seq cannot ask for a huge allocation.
        let last_seq = last_folded.map_or(0, |(k, _)| k.value().1);
        let capacity = usize::try_from(last_seq)
            .unwrap_or(usize::MAX)
            .saturating_add(1 + recent.len())
            .min(1 << 20);
        let mut out = Vec::with_capacity(capacity);
        let mut folded_up_to = None;
        for row in range()? {
            let (k, v) = row.map_err(io)?;
            let seq = k.value().1;
            out.push(each(seq, v.value())?);
            folded_up_to = Some(seq);
        }
        // A run's records are folded in seq order, so the folded ones are a prefix.
        for (seq, bytes) in recent {
            if folded_up_to.is_none_or(|last| seq > last) {
                out.push(each(seq, &bytes)?);
            }
        }
        Ok(out)
    }

    /// At most `limit` of a run's records from `from_seq` on: a range scan of `journal`, then
    /// the unfolded records past what the scan found (the same two places, in the same order,
    /// as [`RedbStore::read_run`]; only the slice asked for is copied).
    fn read_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let id = run_id.as_u128();
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        let recent: RunRecords = unfolded.runs.get(&id).map_or_else(Vec::new, |records| {
            let first = records.partition_point(|(seq, _)| *seq < from_seq);
            records[first..].iter().take(limit).cloned().collect()
        });
        drop(unfolded);
        self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let table = tx.open_table(JOURNAL).map_err(io)?;
            let mut out = Vec::with_capacity(limit.min(1024));
            let mut folded_up_to = None;
            for row in table.range((id, from_seq)..=(id, u64::MAX)).map_err(io)? {
                if out.len() >= limit {
                    return Ok(out);
                }
                let (k, v) = row.map_err(io)?;
                let seq = k.value().1;
                out.push((seq, v.value().to_vec()));
                folded_up_to = Some(seq);
            }
            // Unfolded records of a run all follow its folded ones (folds move a prefix); a
            // record folded since `recent` was taken is in both places and kept once.
            for (seq, bytes) in recent {
                if out.len() >= limit {
                    break;
                }
                if folded_up_to.is_none_or(|last| seq > last) {
                    out.push((seq, bytes.into_vec()));
                }
            }
            Ok(out)
        })
    }

    fn redb_durability(&self) -> redb::Durability {
        match self.durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::RelaxedForTests => redb::Durability::None,
        }
    }

    /// Moves every unfolded record into `journal` and deletes the log rows they came from, in
    /// one transaction; only then forgets them in memory, so a reader always finds each record
    /// in one place or the other (or briefly both; reads keep one copy).
    fn fold(&self) -> Result<(), StoreError> {
        self.with_db(|db| self.fold_in(db))
    }

    fn fold_in(&self, db: &redb::Database) -> Result<(), StoreError> {
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        let Some(last) = unfolded.last_log_key else {
            return Ok(());
        };
        let mut tx = db.begin_write().map_err(io)?;
        tx.set_durability(self.redb_durability()).map_err(io)?;
        {
            let mut journal = tx.open_table(JOURNAL).map_err(io)?;
            for (run, records) in &unfolded.runs {
                for (seq, bytes) in records {
                    journal.insert((*run, *seq), &bytes[..]).map_err(io)?;
                }
            }
            let mut log = tx.open_table(LOG).map_err(io)?;
            log.retain_in(..=last, |_, _| false).map_err(io)?;
        }
        tx.commit().map_err(io)?;
        drop(unfolded);
        let mut unfolded = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let last_commit = unfolded.last_commit;
        *unfolded = Unfolded {
            last_commit,
            ..Unfolded::default()
        };
        Ok(())
    }

    /// Writes the batches in one transaction: one `journal_log` row for all their records.
    fn commit_in(&self, db: &redb::Database, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let mut tx = db.begin_write().map_err(io)?;
        tx.set_durability(self.redb_durability()).map_err(io)?;
        let records = batches.iter().flat_map(|b| &b.records);
        let log_key = self.next_log_key.load(Ordering::Relaxed);
        let mut frame = Vec::new();
        for r in records.clone() {
            log_frame::push(r, &mut frame);
        }
        {
            if !frame.is_empty() {
                let mut log = tx.open_table(LOG).map_err(io)?;
                log.insert(log_key, frame.as_slice()).map_err(io)?;
            }
            let has_summaries = batches.iter().any(|b| !b.summaries.is_empty());
            if has_summaries {
                let mut runs = tx.open_table(RUNS).map_err(io)?;
                let mut active = tx.open_table(ACTIVE).map_err(io)?;
                for s in batches.iter().flat_map(|b| &b.summaries) {
                    let bytes = serde_json::to_vec(s).map_err(StoreError::io)?;
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
        // The unfolded set is locked across the commit, so that a reader that sees this
        // commit's summaries (a run just ended) and then reads the journal finds its records:
        // the journal read waits for them to be published.
        let mut unfolded = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        // Dropping an uncommitted transaction aborts it: an error above applies nothing.
        tx.commit().map_err(io)?;
        if !frame.is_empty() {
            for r in records {
                unfolded.add(r);
            }
            unfolded.last_log_key = Some(log_key);
            self.next_log_key.store(log_key + 1, Ordering::Relaxed);
        }
        unfolded.last_commit = Some(Instant::now());
        Ok(())
    }
}

impl Unfolded {
    /// The `journal_log` key of the next commit.
    fn next_log_key(&self) -> u64 {
        self.last_log_key.map_or(0, |k| k + 1)
    }

    fn add(&mut self, r: &EncodedRecord) {
        self.records += 1;
        self.bytes += r.bytes.len();
        self.runs
            .entry(r.run_id.as_u128())
            .or_default()
            .push((r.seq, r.bytes.clone().into_boxed_slice()));
    }
}

fn decode_summary(bytes: &[u8]) -> Result<RunSummary, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::CorruptIndex(e.to_string()))
}

impl Store for RedbStore {
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
        self.read_run(run_id, |seq, bytes| Ok((seq, bytes.to_vec())))
    }

    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read_range(run_id, from_seq, limit)
    }

    fn read_journal_measured(&self, run_id: RunId) -> Result<(Vec<Entry>, u64), StoreError> {
        let mut total = 0u64;
        let entries = self.read_run(run_id, |seq, bytes| {
            total += bytes.len() as u64;
            let (record, at_ms) = codec::decode(bytes)?;
            Ok(Entry { seq, at_ms, record })
        })?;
        Ok((entries, total))
    }

    fn read_journal(&self, run_id: RunId) -> Result<Vec<Entry>, StoreError> {
        // Decodes straight from redb's pages, without copying each record first.
        self.read_run(run_id, |seq, bytes| {
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

fn list_runs_in(db: &redb::Database, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
    let tx = db.begin_read().map_err(io)?;
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

#[cfg(test)]
mod tests {
    use redb::ReadableTableMetadata;

    use super::*;

    fn record(run: RunId, seq: u64) -> EncodedRecord {
        EncodedRecord {
            run_id: run,
            seq,
            bytes: vec![seq as u8; 3],
        }
    }

    fn batch(run: RunId, seqs: std::ops::Range<u64>) -> CommitBatch {
        CommitBatch {
            records: seqs.map(|s| record(run, s)).collect(),
            ..Default::default()
        }
    }

    fn seqs(store: &RedbStore, run: RunId) -> Vec<u64> {
        let rows = store.read_journal_raw(run).unwrap();
        for (seq, bytes) in &rows {
            assert_eq!(
                bytes,
                &vec![*seq as u8; 3],
                "record {seq} reads back its own bytes"
            );
        }
        rows.into_iter().map(|(s, _)| s).collect()
    }

    #[test]
    fn keeps_the_store_contracts() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        super::super::contract_tests::check_all(&store);
    }

    #[test]
    fn keeps_the_store_contracts_when_folding_after_every_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        store.fold.records = 1;
        super::super::contract_tests::check_all(&store);
        assert_eq!(
            store.unfolded_records(),
            0,
            "the contract's maintain folded"
        );
    }

    #[test]
    fn reads_journal_ranges_as_slices_of_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        super::super::contract_tests::check_ranges(&store);
        assert_eq!(
            store.unfolded_records(),
            18,
            "the ranges above were read unfolded"
        );
        store.fold().unwrap();
        super::super::contract_tests::check_ranges(&store);
    }

    #[test]
    fn reads_journal_ranges_across_folded_and_unfolded_records() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        store.fold.records = 1;
        // `maintain` folds after every commit here: the first ten records are folded, the
        // last five are not.
        super::super::contract_tests::check_ranges(&store);
        assert!(store.unfolded_records() > 0);
    }

    #[test]
    fn reads_join_folded_and_unfolded_records_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        let (a, b) = (RunId::new(), RunId::new());
        store.commit(&[&batch(a, 0..3), &batch(b, 0..1)]).unwrap();
        assert_eq!(store.unfolded_records(), 4);
        assert_eq!(seqs(&store, a), [0, 1, 2]);
        store.fold().unwrap();
        assert_eq!(store.unfolded_records(), 0);
        store.commit(&[&batch(a, 3..5)]).unwrap();
        assert_eq!(
            seqs(&store, a),
            [0, 1, 2, 3, 4],
            "folded prefix, then unfolded"
        );
        assert_eq!(seqs(&store, b), [0]);
        let tx = store
            .db
            .read()
            .unwrap()
            .as_ref()
            .unwrap()
            .begin_read()
            .unwrap();
        assert_eq!(
            tx.open_table(LOG).unwrap().len().unwrap(),
            1,
            "folded rows are deleted"
        );
    }

    #[test]
    fn maintain_folds_only_past_the_threshold_or_after_idling() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = RedbStore::open(dir.path().join("j.redb"), Durability::Immediate).unwrap();
        store.fold = FoldPolicy {
            records: 10,
            bytes: usize::MAX,
            idle: Duration::from_secs(3600),
        };
        let run = RunId::new();
        store.commit(&[&batch(run, 0..9)]).unwrap();
        store.maintain().unwrap();
        assert_eq!(store.unfolded_records(), 9, "below the threshold");
        store.commit(&[&batch(run, 9..10)]).unwrap();
        store.maintain().unwrap();
        assert_eq!(store.unfolded_records(), 0, "at the threshold");

        store.fold.idle = Duration::ZERO;
        store.commit(&[&batch(run, 10..11)]).unwrap();
        store.maintain().unwrap();
        assert_eq!(store.unfolded_records(), 0, "idle");
        assert_eq!(seqs(&store, run), (0..11).collect::<Vec<_>>());
    }

    #[test]
    fn opening_folds_what_the_last_process_left_in_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/j.redb");
        let run = RunId::new();
        {
            let store = RedbStore::open(&path, Durability::Immediate).unwrap();
            store.commit(&[&batch(run, 0..2)]).unwrap();
            store.fold().unwrap();
            store.commit(&[&batch(run, 2..4)]).unwrap();
            store.commit(&[&batch(run, 4..5)]).unwrap();
            assert_eq!(store.unfolded_records(), 3);
            // Dropped without a fold, like a process that stops right after a commit.
        }
        let store = RedbStore::open(&path, Durability::Immediate).unwrap();
        assert_eq!(store.unfolded_records(), 0);
        assert_eq!(seqs(&store, run), [0, 1, 2, 3, 4]);
        let tx = store
            .db
            .read()
            .unwrap()
            .as_ref()
            .unwrap()
            .begin_read()
            .unwrap();
        assert!(tx.open_table(LOG).unwrap().is_empty().unwrap());
        drop(tx);
        store.commit(&[&batch(run, 5..6)]).unwrap();
        assert_eq!(seqs(&store, run), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_corrupt_log_row_fails_the_open_with_a_journal_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.redb");
        {
            let db = redb::Database::create(&path).unwrap();
            let tx = db.begin_write().unwrap();
            // A frame entry that claims 9 bytes of record and holds none.
            let frame = [[0u8; 16].as_slice(), &[0, 9]].concat();
            tx.open_table(LOG)
                .unwrap()
                .insert(0, frame.as_slice())
                .unwrap();
            tx.commit().unwrap();
        }
        let err = RedbStore::open(&path, Durability::Immediate).unwrap_err();
        assert!(matches!(err, StoreError::Decode(_)), "{err}");
        assert!(err.to_string().contains("[MAG-JF003]"), "{err}");
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
