//! Commits into the journal log, the unfolded set they leave in memory, and the fold that moves
//! that set into redb's tables.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use redb::{ReadableTable, ReadableTableMetadata};

use super::{ACTIVE, CHECKPOINT, JOURNAL, KEYS, LOG, META, OpenLog, RUNS, RedbStore, io};
use crate::codec::DecodeError;
use crate::error::StoreError;
use crate::id::RunId;
use crate::store::wal::file::LogFile;
use crate::store::wal::{Wal, frame, payload};
use crate::store::{CommitBatch, EncodedRecord, RunSummary, log_frame};

/// When the unfolded entries are moved into redb.
#[derive(Debug, Clone, Copy)]
pub(super) struct FoldPolicy {
    /// Fold after a commit once this many entries (records, summaries, keys) are unfolded.
    pub(super) records: usize,
    /// ... or once their bytes reach this.
    pub(super) bytes: usize,
    /// Fold anything unfolded once the writer has had nothing to do for this long.
    pub(super) idle: Duration,
}

pub(super) const DEFAULT_FOLD: FoldPolicy = FoldPolicy {
    records: 32 * 1024,
    bytes: 8 << 20,
    idle: Duration::from_millis(200),
};

/// One run's unfolded records: `(seq, encoded record)` in seq order.
pub(super) type RunRecords = Vec<(u64, Box<[u8]>)>;

/// What was committed to the journal log and not yet folded into redb.
#[derive(Debug, Default)]
pub(super) struct Unfolded {
    /// Records by run, then seq.
    pub(super) runs: BTreeMap<u128, RunRecords>,
    /// The latest summary of each run whose summary changed.
    pub(super) summaries: BTreeMap<u128, RunSummary>,
    /// Idempotency keys of new runs.
    pub(super) keys: HashMap<String, u128>,
    /// Entries (records, summaries, keys) held.
    pub(super) records: usize,
    /// Their bytes.
    pub(super) bytes: usize,
    /// The LSN of the last log frame the set covers.
    pub(super) last_lsn: Option<u64>,
    /// The last row of the `journal_log` table (written by versions before the journal log)
    /// that the set covers.
    pub(super) legacy_log_key: Option<u64>,
    /// The checkpoint in redb when the set was recovered or last folded.
    pub(super) checkpoint: u64,
    /// When the writer last committed.
    pub(super) last_commit: Option<Instant>,
}

impl RedbStore {
    /// Creates the tables of a freshly opened database and recovers what the last process (or
    /// the database before a reopen) committed but did not fold: rows of the `journal_log`
    /// table left by older versions, then the log's frames past the checkpoint. Returns them
    /// with the log's file, ready for [`RedbStore::restart_log`].
    pub(super) fn recover(
        db: &redb::Database,
        open_log: &OpenLog,
    ) -> Result<(Unfolded, Box<dyn LogFile>), StoreError> {
        let tx = db.begin_write().map_err(io)?;
        let mut left = Unfolded::default();
        {
            tx.open_table(JOURNAL).map_err(io)?;
            tx.open_table(RUNS).map_err(io)?;
            tx.open_table(ACTIVE).map_err(io)?;
            tx.open_table(KEYS).map_err(io)?;
            let meta = tx.open_table(META).map_err(io)?;
            left.checkpoint = meta.get(CHECKPOINT).map_err(io)?.map_or(0, |v| v.value());
            let legacy = tx.open_table(LOG).map_err(io)?;
            if !legacy.is_empty().map_err(io)? {
                for row in legacy.iter().map_err(io)? {
                    let (k, v) = row.map_err(io)?;
                    for r in log_frame::decode(v.value())? {
                        left.add(&r);
                    }
                    left.legacy_log_key = Some(k.value());
                }
            }
        }
        tx.commit().map_err(io)?;
        let file = open_log()?;
        let bytes = Wal::read_all(&*file).map_err(|e| StoreError::Io(Arc::new(e)))?;
        let mut expected = left.checkpoint + 1;
        for f in frame::scan(&bytes)?.frames {
            if f.lsn <= left.checkpoint {
                continue; // folded before
            }
            if f.lsn != expected {
                return Err(DecodeError::Corrupt(
                    "the journal log misses frames after the store's checkpoint",
                )
                .into());
            }
            for entry in payload::decode(f.payload)? {
                left.apply(entry);
            }
            left.last_lsn = Some(f.lsn);
            expected += 1;
        }
        Ok((left, file))
    }

    /// Starts the log's writer on `file` after a fold left nothing of it unfolded: its next
    /// frame goes to the start of the file, past the checkpoint.
    pub(super) fn restart_log(&self, file: Box<dyn LogFile>) -> Result<(), StoreError> {
        let next = {
            let u = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
            u.checkpoint.max(u.last_lsn.unwrap_or(0)) + 1
        };
        let sync = self.durability == super::Durability::Immediate;
        let wal = Wal::rewound(file, next, sync).map_err(|e| StoreError::Io(Arc::new(e)))?;
        *self.log.lock().unwrap_or_else(PoisonError::into_inner) = Some(wal);
        Ok(())
    }

    /// Moves everything unfolded into redb's tables in one durable transaction that records
    /// the checkpoint, then rewinds the log; only then forgets the set in memory, so a reader
    /// always finds each entry in one place or the other (or briefly both; reads keep one).
    pub(super) fn fold(&self) -> Result<(), StoreError> {
        self.with_db(|db| self.fold_in(db))
    }

    pub(super) fn fold_in(&self, db: &redb::Database) -> Result<(), StoreError> {
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        if unfolded.last_lsn.is_none() && unfolded.legacy_log_key.is_none() {
            return Ok(());
        }
        let mut tx = db.begin_write().map_err(io)?;
        // Always durable: the log is rewound over what this commit covers.
        tx.set_durability(redb::Durability::Immediate).map_err(io)?;
        {
            let mut journal = tx.open_table(JOURNAL).map_err(io)?;
            for (run, records) in &unfolded.runs {
                for (seq, bytes) in records {
                    journal.insert((*run, *seq), &bytes[..]).map_err(io)?;
                }
            }
            let mut runs = tx.open_table(RUNS).map_err(io)?;
            let mut active = tx.open_table(ACTIVE).map_err(io)?;
            for (id, s) in &unfolded.summaries {
                let bytes = serde_json::to_vec(s).map_err(StoreError::io)?;
                runs.insert(*id, bytes.as_slice()).map_err(io)?;
                if s.status.is_terminal() {
                    active.remove(*id).map_err(io)?;
                } else {
                    active.insert(*id, ()).map_err(io)?;
                }
            }
            let mut keys = tx.open_table(KEYS).map_err(io)?;
            for (key, id) in &unfolded.keys {
                keys.insert(key.as_str(), *id).map_err(io)?;
            }
            if let Some(last) = unfolded.legacy_log_key {
                let mut log = tx.open_table(LOG).map_err(io)?;
                log.retain_in(..=last, |_, _| false).map_err(io)?;
            }
            if let Some(lsn) = unfolded.last_lsn {
                let mut meta = tx.open_table(META).map_err(io)?;
                meta.insert(CHECKPOINT, lsn).map_err(io)?;
            }
        }
        tx.commit().map_err(io)?;
        drop(unfolded);
        let mut unfolded = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        *unfolded = Unfolded {
            checkpoint: unfolded.last_lsn.unwrap_or(unfolded.checkpoint),
            last_commit: unfolded.last_commit,
            ..Unfolded::default()
        };
        if let Some(wal) = self
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            wal.rewind();
        }
        Ok(())
    }

    /// Writes the batches as one frame of the journal log (one `fdatasync`), then publishes
    /// them to readers in the unfolded set.
    pub(super) fn commit_in(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let wal = log.as_mut().ok_or_else(|| {
            StoreError::io("the journal log is closed after an I/O failure and not yet reopened")
        })?;
        let lsn = wal
            .append(|buf| payload::encode(batches, buf))
            .map_err(|e| StoreError::Io(Arc::new(e)))?;
        let mut unfolded = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        drop(log);
        for b in batches {
            for r in &b.records {
                unfolded.add(r);
            }
            for s in &b.summaries {
                unfolded.summary(s.clone());
            }
            for (key, run) in &b.idempotency_keys {
                unfolded.key(key.clone(), *run);
            }
        }
        unfolded.last_lsn = Some(lsn);
        unfolded.last_commit = Some(Instant::now());
        Ok(())
    }
}

impl Unfolded {
    pub(super) fn add(&mut self, r: &EncodedRecord) {
        self.records += 1;
        self.bytes += r.bytes.len();
        self.runs
            .entry(r.run_id.as_u128())
            .or_default()
            .push((r.seq, r.bytes.clone().into_boxed_slice()));
    }

    fn summary(&mut self, s: RunSummary) {
        self.records += 1;
        self.bytes += 128 + s.workflow_name.len() + s.scope.as_str().len();
        self.summaries.insert(s.run_id.as_u128(), s);
    }

    fn key(&mut self, key: String, run: RunId) {
        self.records += 1;
        self.bytes += key.len() + 16;
        self.keys.insert(key, run.as_u128());
    }

    fn apply(&mut self, entry: payload::Entry) {
        match entry {
            payload::Entry::Record(r) => self.add(&r),
            payload::Entry::Summary(s) => self.summary(*s),
            payload::Entry::Key(k, run) => self.key(k, run),
        }
    }
}
