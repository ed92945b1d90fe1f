//! The default store: one redb file and its journal log.
//!
//! A group commit is **one frame** in the journal log (`<file>-wal`, see
//! [`wal`](super::wal)): every record, run summary and idempotency key of the commit, written
//! into the log's preallocated file and made durable by one `fdatasync`. The committed entries
//! are also kept in memory (the *unfolded* set) so reads see them at once. From time to time —
//! when the unfolded set is large or the writer is idle — [`Store::maintain`] *folds* them: one
//! durable redb transaction moves them into `journal` (keyed `(run_id, seq)`), `runs`,
//! `active_runs` (and its index by scope) and `idempotency_keys`, and records the LSN of the
//! last frame it covers (the checkpoint); the log is then rewound. A run's records land in one
//! place per fold instead of once per commit, and the redb commit protocol (three syncs) is paid
//! per fold, not per step.
//! Opening the store folds whatever a crash left in the log past the checkpoint.
//!
//! After an I/O failure — redb's, or the log's — the store reopens both before its next
//! operation and recovers as a fresh open does: a transient disk error fails the commits it
//! hit, not every commit after it. A failed `fdatasync` of the log is never retried; the reopen
//! recovers from what the log holds on disk. A commit whose final sync failed may turn out to be
//! on disk after the reopen (see the [`Store`] contract).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use super::wal::Log;
use super::wal::file::LogFile;
use super::{CommitBatch, PageBound, RunFilter, RunSummary, Store};
use crate::codec;
use crate::error::StoreError;
use crate::id::RunId;
use crate::record::Entry;

mod catalog;
mod chunk;
mod fold;
mod log;
mod open_here;
mod private;
mod read;
#[cfg(test)]
mod tests;
mod unwritten;

use fold::{DEFAULT_FOLD, FoldPolicy, Unfolded};

/// The least time between two warnings of a failure that lasts (a full disk).
const WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(10);
pub(crate) use open_here::closing_here;
use read::{active_in, decode_summary, list_runs_in};

/// One record per row, `(run, seq)`: what versions before the journal chunks folded.
const JOURNAL: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal");
/// One row per run per fold, `(run, first seq)`: a chunk of the run's records ([`chunk`]).
const CHUNKS: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal_chunks");
const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("journal_log");
const RUNS: TableDefinition<u128, &[u8]> = TableDefinition::new("runs");
const ACTIVE: TableDefinition<u128, ()> = TableDefinition::new("active_runs");
/// The rows of `active_runs` again, keyed `(scope, run)`: a scope's (or a tenant's) active runs
/// without reading any other's.
const ACTIVE_BY_SCOPE: TableDefinition<(&str, u128), ()> =
    TableDefinition::new("active_runs_by_scope");
const KEYS: TableDefinition<&str, u128> = TableDefinition::new("idempotency_keys");
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
/// The `meta` key of the LSN of the last log frame folded into the tables.
const CHECKPOINT: &str = "log_checkpoint";
/// The `meta` key set (to 1) once both segments of the journal log were made: from then on a
/// segment that is missing or empty on open lost frames, and the store refuses to open.
const LOG_MADE: &str = "log_segments_made";

/// The page cache redb gets unless told otherwise ([`RedbStore::open_with_cache`]): 64 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

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
/// Opens a segment (0 or 1) of the journal log: at open, and again after an I/O failure.
type OpenLog = Box<dyn Fn(usize) -> Result<Box<dyn LogFile>, StoreError> + Send + Sync>;

/// A [`Store`] in one redb file and its journal log.
pub struct RedbStore {
    inner: Arc<Inner>,
}

/// What a [`RedbStore`] and its fold thread share.
pub struct Inner {
    /// `None` only between dropping a failed database and a successful reopen.
    db: RwLock<Option<redb::Database>>,
    open_database: OpenDatabase,
    open_log: OpenLog,
    /// The journal log's writer; `None` between a failure and the reopen that recovers.
    log: Mutex<Option<Log>>,
    /// The thread of the last fold started by [`Store::maintain`].
    fold_thread: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Why the last fold on its thread failed, until one succeeds.
    fold_error: Mutex<Option<StoreError>>,
    /// Counts reopens: a fold begun before one writes nothing.
    epoch: AtomicU64,
    /// redb or the log reported an I/O failure: the database must be reopened before it is used again.
    io_failed: AtomicBool,
    /// The store closed its files for a new engine ([`Store::close_files`]): it answers nothing
    /// more.
    released: AtomicBool,
    /// The warnings of reopens, which a full disk repeats at every read while it lasts.
    reopen_warnings: crate::LogThrottle,
    /// The warnings of failed folds, which a full disk repeats at every try.
    fold_warnings: crate::LogThrottle,
    path: PathBuf,
    durability: Durability,
    unfolded: RwLock<Unfolded>,
    fold: FoldPolicy,
    /// The file in this process's list of open stores; last, so that it leaves the list once
    /// the database and the log are closed.
    open_here: open_here::OpenHere,
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .field("io_failed", &self.io_failed)
            .finish_non_exhaustive()
    }
}

impl Drop for RedbStore {
    /// Waits for a fold in progress, so that the file is closed (and can be opened again)
    /// once the store is dropped.
    fn drop(&mut self) {
        self.inner.join_fold();
    }
}

impl std::ops::Deref for RedbStore {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.inner
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
        // A file shorter than its own header says: cut short by a copy or a truncation.
        redb::DatabaseError::Storage(redb::StorageError::Io(e))
            if e.kind() == std::io::ErrorKind::UnexpectedEof =>
        {
            StoreError::io(std::io::Error::new(
                e.kind(),
                format!(
                    "{} is truncated (it ends before the data its header describes: {e}); \
                     restore the store from a backup",
                    path.display()
                ),
            ))
        }
        redb::DatabaseError::Storage(redb::StorageError::Corrupted(why)) => corrupt(path, &why),
        other => io(other),
    }
}

/// The most [`room_beside`] writes: a commit of more is not held back for want of room.
const MOST_PROBED: u64 = 64 << 20;
/// What a commit's journal log frames and headers add to its records, at most.
const FRAME_SLACK: u64 = 64 << 10;

/// The scratch file [`room_beside`] writes beside the store file at `path`.
fn scratch_path(path: &Path) -> PathBuf {
    let mut scratch = path.as_os_str().to_owned();
    scratch.push(".probe");
    PathBuf::from(scratch)
}

/// Whether the disk of the store file at `path` has room for a commit of `bytes` bytes of
/// records: a scratch file of that size and its log framing (at most [`MOST_PROBED`]) is
/// written beside it (mode 0600) and removed. Written, not sized: a file's length takes no
/// room until its blocks are written. One a crash left is removed when the store opens.
fn room_beside(path: &Path, bytes: u64) -> Result<(), StoreError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt as _;
    let scratch = scratch_path(path);
    let want = bytes.saturating_add(FRAME_SLACK).min(MOST_PROBED);
    let written = (|| {
        let _ = std::fs::remove_file(&scratch);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&scratch)?;
        let zeros = vec![0u8; 64 << 10];
        let mut left = want;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            file.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        file.flush()
    })();
    let _ = std::fs::remove_file(&scratch);
    written.map_err(StoreError::io)
}

/// The store file at `path` is damaged (`why`, as redb says it).
fn corrupt(path: &Path, why: &str) -> StoreError {
    StoreError::CorruptIndex(format!(
        "{} is damaged ({why}); restore the store from a backup",
        path.display()
    ))
}

impl RedbStore {
    /// Opens (or creates) the store file at `path`; its parent directory is created if needed.
    /// redb's page cache holds at most [`DEFAULT_CACHE_BYTES`].
    pub fn open(path: impl AsRef<Path>, durability: Durability) -> Result<Self, StoreError> {
        Self::open_with_cache(path, durability, DEFAULT_CACHE_BYTES)
    }

    /// [`RedbStore::open`] with redb's page cache (reads and writes of the folded journal and
    /// the run index) bounded at `cache_bytes`. The journal log and the unfolded entries do
    /// not use it. A larger cache speeds up reads of journals folded long ago; a smaller one
    /// keeps the resident memory of a process with a large store down.
    pub fn open_with_cache(
        path: impl AsRef<Path>,
        durability: Durability,
        cache_bytes: usize,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            private::create_dir_all(dir)?;
        }
        // A room check's scratch file a crash left (see `room_beside`) takes room for nothing.
        let _ = std::fs::remove_file(scratch_path(&path));
        let file = path.clone();
        let open_database = Box::new(move || {
            private::create_file(&file);
            // redb panics on some damage it meets while opening (a bit flipped in its
            // allocator state): that is a corrupt file, said as such, not a crash.
            crate::panic::catch_quietly(|| {
                redb::Builder::new()
                    .set_cache_size(cache_bytes)
                    .create(&file)
            })
            .map_err(|panic| corrupt(&file, &panic.message))?
            .map_err(|e| open_error(e, &file))
        });
        let logs = log_paths(&path);
        let open_log: OpenLog = Box::new(move |segment| {
            let file: Box<dyn LogFile> = Box::new(super::wal::file::open(&logs[segment])?);
            Ok(file)
        });
        let db = match open_database() {
            // A file an earlier open created and could not write (a full disk, a crash) is
            // created again; one this open created and could not write goes, so that the
            // next open, with space, starts afresh.
            Err(StoreError::Locked(p)) => return Err(StoreError::Locked(p)),
            Err(_) if unwritten::remove_if_unwritten(&path) => {
                open_database().inspect_err(|_| {
                    unwritten::remove_if_unwritten(&path);
                })?
            }
            Err(e) => return Err(e),
            Ok(db) => db,
        };
        Self::open_with(path, durability, db, open_database, open_log)
    }

    /// Opens a store over a redb storage backend that `backend` makes; it is called again to
    /// reopen the database after an I/O failure. `path` is what [`RedbStore::path`] reports.
    /// For tests that inject faults below redb (see [`FaultyBackend`](super::FaultyBackend)).
    #[cfg(any(test, feature = "test-util"))]
    pub(crate) fn open_with_backend<B: redb::StorageBackend>(
        path: impl AsRef<Path>,
        durability: Durability,
        backend: impl Fn() -> Result<B, StoreError> + Send + Sync + 'static,
        log_file: impl Fn(usize) -> Result<Box<dyn LogFile>, StoreError> + Send + Sync + 'static,
    ) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let file = path.clone();
        let open_database = Box::new(move || {
            redb::Builder::new()
                .create_with_backend(backend()?)
                .map_err(|e| open_error(e, &file))
        });
        let db = open_database()?;
        Self::open_with(path, durability, db, open_database, Box::new(log_file))
    }

    /// The store over `db`, just opened by `open_database` (which reopens it after an I/O
    /// failure).
    fn open_with(
        path: PathBuf,
        durability: Durability,
        db: redb::Database,
        open_database: OpenDatabase,
        open_log: OpenLog,
    ) -> Result<Self, StoreError> {
        let (left_in_log, files) = Inner::recover(&db, &open_log)?;
        let inner = Inner {
            db: RwLock::new(Some(db)),
            open_database,
            open_log,
            log: Mutex::new(None),
            fold_thread: Mutex::new(None),
            fold_error: Mutex::new(None),
            epoch: AtomicU64::new(0),
            io_failed: AtomicBool::new(false),
            released: AtomicBool::new(false),
            reopen_warnings: crate::LogThrottle::new(WARN_EVERY),
            fold_warnings: crate::LogThrottle::new(WARN_EVERY),
            open_here: open_here::OpenHere::new(&path),
            path,
            durability,
            unfolded: RwLock::new(left_in_log),
            fold: DEFAULT_FOLD,
        };
        inner.fold_all()?;
        inner.restart_log(files)?;
        inner.note_log_made()?;
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The paths of the store's journal log, two segment files: the file's path with `-wal.0`
    /// and `-wal.1` appended.
    pub fn log_paths(&self) -> [PathBuf; 2] {
        log_paths(&self.path)
    }

    /// [`RedbStore::log_paths`] of a store file at `path`, opened or not.
    pub fn log_paths_of(path: &Path) -> [PathBuf; 2] {
        log_paths(path)
    }

    /// Entries (records, run summaries, idempotency keys) committed to the journal log but not
    /// yet folded into redb's tables.
    pub fn unfolded_records(&self) -> usize {
        self.unfolded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .records()
    }

    /// Waits for a fold running on its thread (see [`Store::maintain`]) to end; then reports
    /// whether the last fold failed, and why. For tests that look at the file after a fold.
    #[cfg(any(test, feature = "test-util"))]
    pub fn settle_fold(&self) -> Result<(), StoreError> {
        self.join_fold();
        match &*self
            .fold_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Folds everything committed into redb's tables now, on the caller's thread.
    #[cfg(test)]
    fn fold(&self) -> Result<(), StoreError> {
        self.fold_all()
    }

    /// The fold policy, to change in tests.
    #[cfg(test)]
    fn fold_policy(&mut self) -> &mut FoldPolicy {
        &mut Arc::get_mut(&mut self.inner)
            .expect("no fold is running")
            .fold
    }
}

impl Inner {
    /// Runs `f` on the database, reopening it first if an earlier operation left it failed.
    fn with_db<T>(
        &self,
        f: impl FnOnce(&redb::Database) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.released.load(Ordering::Acquire) {
            return Err(StoreError::Closed);
        }
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

    /// Closes the database and the log and leaves this process's list of open files (see
    /// [`Store::close_files`]): a fold in progress ends first, and none starts after.
    fn close_files(&self) {
        if self.released.swap(true, Ordering::AcqRel) {
            return;
        }
        self.join_fold();
        {
            // Readers and a commit in progress finish first: they hold the database.
            let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
            *self.log.lock().unwrap_or_else(PoisonError::into_inner) = None;
            *db = None;
        }
        // A fold that began meanwhile found the store released.
        self.join_fold();
        self.open_here.release();
    }

    /// Drops the failed database and opens it again; then, like an open, folds the log. Holding
    /// the database exclusively keeps out every reader and the writer meanwhile.
    fn reopen(&self) -> Result<(), StoreError> {
        let mut db = self.db.write().unwrap_or_else(PoisonError::into_inner);
        if !self.io_failed.load(Ordering::Acquire) {
            return Ok(()); // another thread reopened it first
        }
        // The old database must close (and release its file lock) before the file is reopened,
        // and the log's writer, stopped or not, is replaced by one recovered from the file.
        *db = None;
        *self.log.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.epoch.fetch_add(1, Ordering::AcqRel);
        let fresh = (self.open_database)()?;
        let (left_in_log, files) = Self::recover(&fresh, &self.open_log)?;
        {
            let mut unfolded = self
                .unfolded
                .write()
                .unwrap_or_else(PoisonError::into_inner);
            *unfolded = Unfolded {
                last_commit: unfolded.last_commit,
                ..left_in_log
            };
        }
        if let Some(left_out) = self.reopen_warnings.allow() {
            tracing::warn!(
                path = %self.path.display(),
                left_out,
                "reopened the journal store after an I/O failure"
            );
        }
        self.io_failed.store(false, Ordering::Release);
        let db = db.insert(fresh);
        let healed = self.fold_all_in(db).and_then(|()| self.restart_log(files));
        if let Err(e) = &healed
            && needs_reopen(e)
        {
            self.io_failed.store(true, Ordering::Release);
        }
        healed
    }

    fn redb_durability(&self) -> redb::Durability {
        match self.durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::RelaxedForTests => redb::Durability::None,
        }
    }
}

/// The journal log's segments beside the redb file at `path`.
pub(crate) fn log_paths(path: &Path) -> [PathBuf; 2] {
    [0, 1].map(|segment| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!("-wal.{segment}"));
        PathBuf::from(name)
    })
}

impl Store for RedbStore {
    fn closing(&self) {
        self.inner.open_here.closing();
    }

    fn close_files(&self) {
        self.inner.close_files();
    }

    fn holds_files(&self) -> bool {
        !self.inner.released.load(Ordering::Acquire)
    }

    fn catalog(&self) -> Option<&dyn super::Catalog> {
        Some(self)
    }

    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        self.with_db(|_| self.commit_in(batches))
    }

    fn maintain(&self) -> Result<(), StoreError> {
        self.inner.maintain()
    }

    fn has_room(&self, bytes: u64) -> Result<(), StoreError> {
        room_beside(&self.path, bytes)
    }

    fn failing(&self) -> bool {
        self.inner.io_failed.load(Ordering::Acquire)
    }

    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read_run(run_id, 0, PageBound::ALL, |seq, bytes| {
            Ok((seq, bytes.to_vec()))
        })
    }

    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        let bound = PageBound::new(limit, max_bytes);
        self.read_run(run_id, from_seq, bound, |seq, bytes| {
            Ok((seq, bytes.to_vec()))
        })
    }

    fn read_journal_for_replay(&self, run_id: RunId) -> Result<(Vec<Entry>, u64), StoreError> {
        let mut total = 0u64;
        let entries = self.read_run(run_id, 0, PageBound::ALL, |seq, bytes| {
            total += bytes.len() as u64;
            let (record, at_ms) = codec::decode_for_replay(bytes)?;
            Ok(Entry { seq, at_ms, record })
        })?;
        Ok((entries, total))
    }

    fn read_journal(&self, run_id: RunId) -> Result<Vec<Entry>, StoreError> {
        // Decodes straight from redb's pages, without copying each record first.
        self.read_run(run_id, 0, PageBound::ALL, |seq, bytes| {
            let (record, at_ms) = codec::decode(bytes)?;
            Ok(Entry { seq, at_ms, record })
        })
    }

    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        if let Some(s) = self.unfolded_summary(run_id) {
            return Ok(Some(s));
        }
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
        let recent = self.unfolded_summaries(filter);
        self.with_db(|db| list_runs_in(db, filter, recent))
    }

    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        let recent = self.unfolded_summaries(&RunFilter::default());
        let mut active = self.with_db(|db| {
            let tx = db.begin_read().map_err(io)?;
            let table = tx.open_table(ACTIVE).map_err(io)?;
            table
                .iter()
                .map_err(io)?
                .map(|row| Ok(row.map_err(io)?.0.value()))
                .collect::<Result<std::collections::BTreeSet<u128>, StoreError>>()
        })?;
        for s in recent {
            if s.status.is_terminal() {
                active.remove(&s.run_id.as_u128());
            } else {
                active.insert(s.run_id.as_u128());
            }
        }
        Ok(active.into_iter().map(RunId::from_u128).collect())
    }

    fn active_summaries(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let selection = RunFilter {
            before: None,
            limit: 0,
            ..filter.clone()
        };
        // The unfolded summaries first: a fold in between moves them into the tables, where
        // the second read finds them too.
        let recent = self.unfolded_summaries(&selection);
        let mut active = self.with_db(|db| active_in(db, &selection))?;
        for s in recent {
            if s.status.is_terminal() {
                active.remove(&s.run_id.as_u128());
            } else {
                active.insert(s.run_id.as_u128(), s);
            }
        }
        Ok(active.into_values().collect())
    }

    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        if let Some(run) = self.unfolded_key(key) {
            return Ok(Some(run));
        }
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
