//! The file under the journal log, behind a trait so that tests can inject faults below it
//! (see [`FaultyBackend`](crate::store::FaultyBackend)).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt as _};
use std::path::Path;

/// Positioned reads and writes and `fdatasync` on the log's file.
pub(crate) trait LogFile: Send + Sync + std::fmt::Debug {
    /// The file's length in bytes.
    fn len(&self) -> io::Result<u64>;
    /// Fills `buf` from `offset`.
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `data` at `offset`.
    fn write_all_at(&self, data: &[u8], offset: u64) -> io::Result<()>;
    /// `fdatasync`: the written data, and the length if it grew, are on disk when it returns.
    fn sync_data(&self) -> io::Result<()>;
}

impl LogFile for File {
    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(self, buf, offset)
    }

    fn write_all_at(&self, data: &[u8], offset: u64) -> io::Result<()> {
        FileExt::write_all_at(self, data, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        File::sync_data(self)
    }
}

/// Opens (or creates) the log file at `path`. A file it creates is made durable in its
/// directory (the directory is synced), so that a log acknowledged into is never lost to a
/// crash that forgets the file's name.
pub(crate) fn open(path: &Path) -> io::Result<File> {
    let existed = path.exists();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        // The runs' parameters, variables and outputs: for the store's owner alone.
        .mode(0o600)
        .open(path)?;
    if !existed && let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        File::open(dir)?.sync_all()?;
    }
    Ok(file)
}
