//! The journal log and its fold: a commit appends one `journal_log` row and keeps its records
//! in memory (the unfolded set) until a fold moves them into `journal`.

use std::collections::BTreeMap;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use redb::ReadableTable;

use super::{ACTIVE, JOURNAL, KEYS, LOG, RUNS, RedbStore, io};
use crate::error::StoreError;
use crate::store::{CommitBatch, EncodedRecord, log_frame};

/// When the unfolded records are moved into `journal`.
#[derive(Debug, Clone, Copy)]
pub(super) struct FoldPolicy {
    /// Fold after a commit once this many records are unfolded.
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

/// Records committed to `journal_log` and not yet folded into `journal`, by run then seq.
#[derive(Debug, Default)]
pub(super) struct Unfolded {
    pub(super) runs: BTreeMap<u128, RunRecords>,
    pub(super) records: usize,
    pub(super) bytes: usize,
    /// The last `journal_log` key the set covers.
    pub(super) last_log_key: Option<u64>,
    /// When the writer last committed.
    pub(super) last_commit: Option<Instant>,
}

impl RedbStore {
    /// Creates the tables of a freshly opened database and reads what its log holds: what the
    /// last process (or the database before a reopen) committed but did not fold.
    pub(super) fn read_log(db: &redb::Database) -> Result<Unfolded, StoreError> {
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

    /// Moves every unfolded record into `journal` and deletes the log rows they came from, in
    /// one transaction; only then forgets them in memory, so a reader always finds each record
    /// in one place or the other (or briefly both; reads keep one copy).
    pub(super) fn fold(&self) -> Result<(), StoreError> {
        self.with_db(|db| self.fold_in(db))
    }

    pub(super) fn fold_in(&self, db: &redb::Database) -> Result<(), StoreError> {
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
    pub(super) fn commit_in(
        &self,
        db: &redb::Database,
        batches: &[&CommitBatch],
    ) -> Result<(), StoreError> {
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
    pub(super) fn next_log_key(&self) -> u64 {
        self.last_log_key.map_or(0, |k| k + 1)
    }

    pub(super) fn add(&mut self, r: &EncodedRecord) {
        self.records += 1;
        self.bytes += r.bytes.len();
        self.runs
            .entry(r.run_id.as_u128())
            .or_default()
            .push((r.seq, r.bytes.clone().into_boxed_slice()));
    }
}
