//! A redb storage backend that fails writes and syncs on demand: to prove that a commit failing
//! *inside* redb, on the real file, loses nothing acknowledged and answers every waiter.
//!
//! [`FaultyBackend`] passes every call to redb's own [`FileBackend`] unless a fault is armed on
//! its [`DiskFaults`] handle, which the test keeps after the store has moved into an engine.
//! Open a [`RedbStore`](super::RedbStore) over it with [`FaultyBackend::open_store`]; the
//! store's journal log then obeys the same switch.

use std::fs::OpenOptions;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

use super::redb_store::{Durability, RedbStore};
use super::wal::{self, file::LogFile};
use crate::error::StoreError;

/// The switch of a [`FaultyBackend`]: how many of the next writes and syncs fail, and whether the
/// next sync waits for the test. Clones share the switch; every backend made from it (one per
/// reopen of the store) obeys it.
#[derive(Debug, Clone, Default)]
pub struct DiskFaults {
    inner: Arc<Faults>,
}

#[derive(Debug, Default)]
struct Faults {
    writes: AtomicU32,
    /// The next writes to the journal log that write half their bytes, then fail.
    short_writes: AtomicU32,
    syncs: AtomicU32,
    injected: AtomicU64,
    hold: Mutex<Hold>,
    released: Condvar,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Hold {
    #[default]
    Off,
    /// The next sync waits for [`DiskFaults::release`].
    NextSync,
    /// A sync is waiting.
    Holding,
}

impl DiskFaults {
    /// A switch with nothing armed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the next `n` writes to the file fail (`u32::MAX`: until [`DiskFaults::clear`]).
    pub fn fail_next_writes(&self, n: u32) {
        self.inner.writes.store(n, Ordering::SeqCst);
    }

    /// Makes the next `n` `sync_data` calls fail (`u32::MAX`: until [`DiskFaults::clear`]).
    pub fn fail_next_syncs(&self, n: u32) {
        self.inner.syncs.store(n, Ordering::SeqCst);
    }

    /// Makes the next `n` writes to the journal log write the first half of their bytes and
    /// then fail, like a disk that fills up in the middle of a write.
    pub fn short_next_log_writes(&self, n: u32) {
        self.inner.short_writes.store(n, Ordering::SeqCst);
    }

    /// Disarms every fault: the disk works again.
    pub fn clear(&self) {
        self.inner.writes.store(0, Ordering::SeqCst);
        self.inner.short_writes.store(0, Ordering::SeqCst);
        self.inner.syncs.store(0, Ordering::SeqCst);
    }

    /// Makes the next `sync_data` wait until [`DiskFaults::release`]: a commit that stays in
    /// progress for as long as the test needs (to queue appends behind it, say).
    pub fn hold_next_sync(&self) {
        *self.lock_hold() = Hold::NextSync;
    }

    /// Whether a sync is waiting for [`DiskFaults::release`].
    pub fn is_holding(&self) -> bool {
        *self.lock_hold() == Hold::Holding
    }

    /// Lets a held sync go on (it then obeys the faults armed at that moment).
    pub fn release(&self) {
        *self.lock_hold() = Hold::Off;
        self.inner.released.notify_all();
    }

    fn lock_hold(&self) -> std::sync::MutexGuard<'_, Hold> {
        self.inner
            .hold
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn wait_if_held(&self) {
        let mut hold = self.lock_hold();
        if *hold != Hold::NextSync {
            return;
        }
        *hold = Hold::Holding;
        while *hold == Hold::Holding {
            hold = self
                .inner
                .released
                .wait(hold)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// How many calls have failed by injection so far (to check that a fault was hit).
    pub fn injected(&self) -> u64 {
        self.inner.injected.load(Ordering::SeqCst)
    }

    /// Takes one armed fault from `counter`, if any; `u32::MAX` never runs out.
    fn take(&self, counter: &AtomicU32, what: &str) -> Result<(), std::io::Error> {
        let armed = counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
                0 => None,
                u32::MAX => Some(u32::MAX),
                n => Some(n - 1),
            })
            .is_ok();
        if armed {
            self.inner.injected.fetch_add(1, Ordering::SeqCst);
            return Err(std::io::Error::other(format!("injected {what} failure")));
        }
        Ok(())
    }
}

/// redb's [`FileBackend`] over a real file, with the faults of a [`DiskFaults`] switch.
#[derive(Debug)]
pub struct FaultyBackend {
    file: FileBackend,
    faults: DiskFaults,
}

impl FaultyBackend {
    /// Opens (or creates) the file at `path`, obeying `faults`.
    pub fn open(path: &Path, faults: DiskFaults) -> Result<Self, StoreError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let file = FileBackend::new(file).map_err(|e| StoreError::io(redb::Error::from(e)))?;
        Ok(Self { file, faults })
    }

    /// Opens a [`RedbStore`] at `path` over faulty backends: the first, and a fresh one for each
    /// reopen after an I/O failure, all switched by `faults`. The store's journal log (beside
    /// the file) obeys the same switch.
    pub fn open_store(
        path: impl AsRef<Path>,
        durability: Durability,
        faults: &DiskFaults,
    ) -> Result<RedbStore, StoreError> {
        Self::open_store_split(path, durability, faults, faults)
    }

    /// [`FaultyBackend::open_store`] with a switch of its own for the journal log: redb's file
    /// can fail (its folds and reads) while commits to the log go on, as on a disk that
    /// fills up after the log's preallocated space was taken.
    pub fn open_store_split(
        path: impl AsRef<Path>,
        durability: Durability,
        faults: &DiskFaults,
        log_faults: &DiskFaults,
    ) -> Result<RedbStore, StoreError> {
        let path = path.as_ref().to_path_buf();
        let (file, db_faults) = (path.clone(), faults.clone());
        let (logs, log_faults) = (super::redb_store::log_paths(&path), log_faults.clone());
        RedbStore::open_with_backend(
            path,
            durability,
            move || Self::open(&file, db_faults.clone()),
            move |segment| {
                let file: Box<dyn LogFile> = Box::new(FaultyLog {
                    file: wal::file::open(&logs[segment])?,
                    faults: log_faults.clone(),
                });
                Ok(file)
            },
        )
    }
}

/// The journal log's file, with the faults of a [`DiskFaults`] switch.
#[derive(Debug)]
struct FaultyLog {
    file: std::fs::File,
    faults: DiskFaults,
}

impl LogFile for FaultyLog {
    fn len(&self) -> Result<u64, std::io::Error> {
        LogFile::len(&self.file)
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), std::io::Error> {
        LogFile::read_exact_at(&self.file, buf, offset)
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> Result<(), std::io::Error> {
        self.faults.take(&self.faults.inner.writes, "write")?;
        if let Err(e) = self
            .faults
            .take(&self.faults.inner.short_writes, "short write")
        {
            LogFile::write_all_at(&self.file, &data[..data.len() / 2], offset)?;
            return Err(e);
        }
        LogFile::write_all_at(&self.file, data, offset)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.faults.wait_if_held();
        self.faults.take(&self.faults.inner.syncs, "sync")?;
        LogFile::sync_data(&self.file)
    }
}

impl StorageBackend for FaultyBackend {
    fn len(&self) -> Result<u64, std::io::Error> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> Result<(), std::io::Error> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> Result<(), std::io::Error> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> Result<(), std::io::Error> {
        self.faults.wait_if_held();
        self.faults.take(&self.faults.inner.syncs, "sync")?;
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> Result<(), std::io::Error> {
        self.faults.take(&self.faults.inner.writes, "write")?;
        self.file.write(offset, data)
    }

    fn close(&self) -> Result<(), std::io::Error> {
        self.file.close()
    }

    // The locks keep their meaning: a second open of the same file is still refused.
    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}
