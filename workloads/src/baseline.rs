//! The raw baselines: what the disk and redb cost with no engine in between.
//!
//! - [`FsyncFile`]: a 64-byte `pwrite` into a preallocated file, then `fdatasync`. The file is
//!   allocated and synced first, so each `fdatasync` flushes data only, as redb's commits to
//!   an already-grown file do.
//! - [`RawRedb`]: a redb `Immediate` commit of one codec-encoded record, in the engine's
//!   journal table layout.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::common::{raw_commit, raw_redb, small_record};
use crate::error::{Context, Result};

/// Size of the preallocated file the writes cycle through.
const FILE_BYTES: u64 = 1 << 20;
/// Bytes written before each `fdatasync`: about one small record.
const WRITE_BYTES: u64 = 64;

/// A preallocated file for the raw `fdatasync` baseline.
#[derive(Debug)]
pub struct FsyncFile {
    file: File,
    offset: u64,
}

impl FsyncFile {
    /// Creates `fsync.bin` in `dir`, allocates 1 MiB and syncs it.
    pub fn create(dir: &Path) -> Result<Self> {
        let what = "creating the fdatasync file";
        let file = File::create(dir.join("fsync.bin")).context(what)?;
        file.write_all_at(&vec![0u8; FILE_BYTES as usize], 0)
            .context(what)?;
        file.sync_all().context(what)?;
        Ok(Self { file, offset: 0 })
    }

    /// Overwrites the next 64 bytes and `fdatasync`s.
    pub fn sync_one(&mut self) -> Result<()> {
        let what = "writing and syncing the fdatasync file";
        self.file
            .write_all_at(&[7u8; WRITE_BYTES as usize], self.offset)
            .context(what)?;
        self.offset = (self.offset + WRITE_BYTES) % FILE_BYTES;
        self.file.sync_data().context(what)
    }

    /// The time of `n` [`sync_one`](Self::sync_one)s in sequence.
    pub fn time(&mut self, n: u64) -> Result<Duration> {
        let started = Instant::now();
        for _ in 0..n {
            self.sync_one()?;
        }
        Ok(started.elapsed())
    }
}

/// A raw redb database in the engine's journal layout, for the redb commit baselines.
#[derive(Debug)]
pub struct RawRedb {
    db: redb::Database,
    record: Vec<u8>,
    run: u128,
    seq: u64,
}

impl RawRedb {
    /// Creates the database at `path`.
    pub fn create(path: &Path) -> Result<Self> {
        Ok(Self {
            db: raw_redb(path)?,
            record: small_record(1),
            run: Uuid::now_v7().as_u128(),
            seq: 0,
        })
    }

    /// The database, for workloads of their own (batched commits).
    pub fn database(&self) -> &redb::Database {
        &self.db
    }

    /// Commits the next record of the current run, alone in an `Immediate` transaction.
    pub fn commit_one(&mut self) -> Result<()> {
        raw_commit(&self.db, [(self.run, self.seq)], &self.record)?;
        self.seq += 1;
        Ok(())
    }

    /// The time of `n` [`commit_one`](Self::commit_one)s in sequence.
    pub fn time(&mut self, n: u64) -> Result<Duration> {
        let started = Instant::now();
        for _ in 0..n {
            self.commit_one()?;
        }
        Ok(started.elapsed())
    }

    /// The time of `commits` commits of one record each for a fresh run: the floor of a
    /// workflow of that many steps, one commit per step on its critical path.
    pub fn time_run(&mut self, commits: u64) -> Result<Duration> {
        self.run = Uuid::now_v7().as_u128();
        self.seq = 0;
        self.time(commits)
    }
}
