//! Commits into the journal log, and recovery from it on open (and on a reopen).

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::fold::{Gen, Unfolded};
use super::{
    ACTIVE, ACTIVE_BY_SCOPE, CHECKPOINT, CHUNKS, Inner, JOURNAL, KEYS, LOG, LOG_MADE, META,
    OpenLog, RUNS, io,
};
use crate::codec::DecodeError;
use crate::error::StoreError;
use crate::store::wal::file::LogFile;
use crate::store::wal::{Log, Wal, frame, payload};
use crate::store::{CommitBatch, log_frame};

/// The two segment files of the journal log.
pub(super) type LogFiles = [Box<dyn LogFile>; 2];

fn io_error(e: std::io::Error) -> StoreError {
    StoreError::Io(Arc::new(e))
}

impl Inner {
    /// Creates the tables of a freshly opened database and recovers what the last process (or
    /// the database before a reopen) committed but did not fold: rows of the `journal_log`
    /// table left by older versions, then the frames past the checkpoint in both log segments.
    /// Returns them with the segments' files, ready for [`Inner::restart_log`] once folded.
    pub(super) fn recover(
        db: &redb::Database,
        open_log: &OpenLog,
    ) -> Result<(Unfolded, LogFiles), StoreError> {
        let tx = db.begin_write().map_err(io)?;
        let mut left = Unfolded::default();
        let made;
        {
            tx.open_table(JOURNAL).map_err(io)?;
            tx.open_table(CHUNKS).map_err(io)?;
            tx.open_table(KEYS).map_err(io)?;
            index_active_by_scope(&tx)?;
            let meta = tx.open_table(META).map_err(io)?;
            left.checkpoint = meta.get(CHECKPOINT).map_err(io)?.map_or(0, |v| v.value());
            made = meta.get(LOG_MADE).map_err(io)?.is_some();
            let legacy = tx.open_table(LOG).map_err(io)?;
            if !legacy.is_empty().map_err(io)? {
                for row in legacy.iter().map_err(io)? {
                    let (k, v) = row.map_err(io)?;
                    for r in log_frame::decode(v.value())? {
                        left.current.add(&r);
                    }
                    left.current.legacy_log_key = Some(k.value());
                }
            }
        }
        tx.commit().map_err(io)?;

        let files = [open_log(0)?, open_log(1)?];
        let contents = [
            Wal::read_all(&*files[0]).map_err(io_error)?,
            Wal::read_all(&*files[1]).map_err(io_error)?,
        ];
        // Both segments were made (and begin with the log's magic) by an earlier open: one
        // that is missing or empty now lost the frames it held.
        if made && contents.iter().any(|c| c.len() < frame::MAGIC.len()) {
            return Err(DecodeError::Corrupt(
                "a segment of the journal log is missing or empty, though the store made both \
                 (a log file deleted or truncated): the frames it held past the store's \
                 checkpoint are lost; restore the store from a backup, its three files together",
            )
            .into());
        }
        let checkpoint = left.checkpoint;
        let mut scanned = [
            frame::scan(&contents[0], checkpoint, 0)?.frames,
            frame::scan(&contents[1], checkpoint, 0)?.frames,
        ];
        // A segment whose first frame is damaged goes on after the other's newest frame: scan
        // it again knowing that, so that frames acknowledged after the damage are found.
        let newest = |frames: &[frame::Frame<'_>]| frames.iter().map(|f| f.lsn).max();
        for i in 0..2 {
            if scanned[i].is_empty()
                && let Some(other) = newest(&scanned[1 - i])
            {
                scanned[i] = frame::scan(&contents[i], checkpoint, other)?.frames;
            }
        }
        let [mut frames, more] = scanned;
        frames.extend(more);
        frames.retain(|f| f.lsn > left.checkpoint);
        frames.sort_by_key(|f| f.lsn);
        for (expected, f) in (left.checkpoint + 1..).zip(frames) {
            if f.lsn != expected {
                return Err(DecodeError::Corrupt(
                    "the journal log misses frames after the store's checkpoint (a log file \
                     from another store, or lost): restore the store from a backup",
                )
                .into());
            }
            apply(&mut left.current, f.payload)?;
            left.current.last_lsn = Some(f.lsn);
        }
        Ok((left, files))
    }

    /// Starts the log's writer on its segments once a fold left nothing unfolded: the next
    /// frame goes to the start of the first segment, past the checkpoint.
    pub(super) fn restart_log(&self, files: LogFiles) -> Result<(), StoreError> {
        let next = self
            .unfolded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .checkpoint
            + 1;
        let sync = self.durability == super::Durability::Immediate;
        let log = Log::rewound(files, next, sync).map_err(io_error)?;
        *self.log.lock().unwrap_or_else(PoisonError::into_inner) = Some(log);
        Ok(())
    }

    /// Notes in the tables that both log segments were made, once (see `LOG_MADE`).
    pub(super) fn note_log_made(&self) -> Result<(), StoreError> {
        let db = self.db.read().unwrap_or_else(PoisonError::into_inner);
        let Some(db) = db.as_ref() else {
            return Ok(());
        };
        let read = db.begin_read().map_err(io)?;
        let noted = match read.open_table(META) {
            Ok(meta) => meta.get(LOG_MADE).map_err(io)?.is_some(),
            Err(redb::TableError::TableDoesNotExist(_)) => false,
            Err(e) => return Err(io(e)),
        };
        drop(read);
        if !noted {
            let tx = db.begin_write().map_err(io)?;
            tx.open_table(META)
                .map_err(io)?
                .insert(LOG_MADE, 1)
                .map_err(io)?;
            tx.commit().map_err(io)?;
        }
        Ok(())
    }

    /// Writes the batches as one frame of the journal log (one `fdatasync`), then publishes
    /// them to readers in the unfolded set.
    pub(super) fn commit_in(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let log = log.as_mut().ok_or_else(|| {
            StoreError::io("the journal log is closed after an I/O failure and not yet reopened")
        })?;
        let lsn = log
            .append(|buf| payload::encode(batches, buf))
            .map_err(io_error)?;
        let mut unfolded = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let current = &mut unfolded.current;
        for b in batches {
            for r in &b.records {
                current.add(r);
            }
            for s in &b.summaries {
                current.summary(s.clone());
            }
            for (key, run) in &b.idempotency_keys {
                current.key(key.clone(), *run);
            }
        }
        current.last_lsn = Some(lsn);
        unfolded.last_commit = Some(Instant::now());
        Ok(())
    }
}

/// Adds the entries of a frame's payload to `generation`.
fn apply(generation: &mut Gen, frame_payload: &[u8]) -> Result<(), StoreError> {
    for entry in payload::decode(frame_payload)? {
        match entry {
            payload::Entry::Record(r) => generation.add(&r),
            payload::Entry::Summary(s) => generation.summary(*s),
            payload::Entry::Key(k, run) => generation.key(k, run),
        }
    }
    Ok(())
}

/// Fills `active_runs_by_scope` from `active_runs` and `runs` when it is empty and they are
/// not: a file written before the index existed gets it once, at its first open.
fn index_active_by_scope(tx: &redb::WriteTransaction) -> Result<(), StoreError> {
    let runs = tx.open_table(RUNS).map_err(io)?;
    let active = tx.open_table(ACTIVE).map_err(io)?;
    let mut by_scope = tx.open_table(ACTIVE_BY_SCOPE).map_err(io)?;
    if !by_scope.is_empty().map_err(io)? {
        return Ok(());
    }
    for row in active.iter().map_err(io)? {
        let id = row.map_err(io)?.0.value();
        if let Some(v) = runs.get(id).map_err(io)? {
            let s = super::read::decode_summary(v.value())?;
            by_scope.insert((s.scope.as_str(), id), ()).map_err(io)?;
        }
    }
    Ok(())
}
