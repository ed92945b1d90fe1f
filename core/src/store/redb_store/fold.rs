//! The unfolded set — what the journal log holds and redb's tables do not yet — and the fold
//! that moves it into the tables.
//!
//! The set has two generations: the *current* one, which commits add to, and at most one
//! *folding* generation, frozen when a fold began. A fold runs on a thread of its own while
//! commits go on into the current generation and the log's other segment; readers look in
//! redb's tables, then the folding generation, then the current one.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use redb::ReadableTable;

use super::{ACTIVE, ACTIVE_BY_SCOPE, CHECKPOINT, CHUNKS, Inner, KEYS, LOG, META, RUNS, chunk, io};
use crate::error::StoreError;
use crate::id::RunId;
use crate::store::{EncodedRecord, RunSummary};

/// When the unfolded entries are moved into redb.
#[derive(Debug, Clone, Copy)]
pub(super) struct FoldPolicy {
    /// Fold once this many entries (records, summaries, keys) are unfolded.
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

/// Entries committed to the log and not folded, up to some frame.
#[derive(Debug, Default)]
pub(super) struct Gen {
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
    /// The LSN of the last log frame the generation covers.
    pub(super) last_lsn: Option<u64>,
    /// The last row of the `journal_log` table (written by versions before the journal log)
    /// that the generation covers.
    pub(super) legacy_log_key: Option<u64>,
}

/// What the journal log holds and redb's tables do not yet.
#[derive(Debug, Default)]
pub(super) struct Unfolded {
    /// What commits add to.
    pub(super) current: Gen,
    /// Frozen for the fold in progress (or one that failed, to be tried again).
    pub(super) folding: Option<Arc<Gen>>,
    /// The LSN of the last frame redb's tables hold.
    pub(super) checkpoint: u64,
    /// When the writer last committed.
    pub(super) last_commit: Option<Instant>,
}

impl Unfolded {
    /// Entries held, in both generations.
    pub(super) fn records(&self) -> usize {
        self.current.records + self.folding.as_ref().map_or(0, |f| f.records)
    }
}

impl Gen {
    fn is_empty(&self) -> bool {
        self.last_lsn.is_none() && self.legacy_log_key.is_none()
    }

    pub(super) fn add(&mut self, r: &EncodedRecord) {
        self.records += 1;
        self.bytes += r.bytes.len();
        self.runs
            .entry(r.run_id.as_u128())
            .or_default()
            .push((r.seq, r.bytes.clone().into_boxed_slice()));
    }

    pub(super) fn summary(&mut self, s: RunSummary) {
        self.records += 1;
        self.bytes += 128 + s.workflow_name.len() + s.scope.as_str().len();
        self.summaries.insert(s.run_id.as_u128(), s);
    }

    pub(super) fn key(&mut self, key: String, run: RunId) {
        self.records += 1;
        self.bytes += key.len() + 16;
        self.keys.insert(key, run.as_u128());
    }
}

impl Inner {
    /// Whether the current generation is due for a fold.
    fn fold_due(&self) -> bool {
        let u = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        let c = &u.current;
        c.records >= self.fold.records
            || c.bytes >= self.fold.bytes
            || (!c.is_empty() && u.last_commit.is_some_and(|t| t.elapsed() >= self.fold.idle))
    }

    /// Whether the current generation has grown to four times the fold's thresholds.
    fn fold_behind(&self) -> bool {
        let u = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        u.current.records >= self.fold.records.saturating_mul(4)
            || u.current.bytes >= self.fold.bytes.saturating_mul(4)
    }

    /// Housekeeping between commits (the writer's [`Store::maintain`](crate::Store::maintain)):
    /// starts a fold on a thread of its own when one is due and none is running, or tries a
    /// failed one again. Returns at once, unless commits have outrun a running fold by four
    /// times its thresholds: then it waits for that fold first.
    pub(super) fn maintain(self: &Arc<Self>) -> Result<(), StoreError> {
        if self.released.load(Ordering::Acquire) {
            return Ok(());
        }
        if self.io_failed.load(Ordering::Acquire) {
            // Heal while idle, so that reads need not wait for the next commit.
            self.reopen()?;
        }
        if self.fold_behind() {
            // Commits outrun the fold: wait for it (the writer holds its commit lock, so
            // appends wait too), which bounds the memory and the log the unfolded set takes.
            self.join_fold();
        }
        let mut thread = self
            .fold_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if thread.as_ref().is_some_and(|t| !t.is_finished()) {
            return Ok(());
        }
        let frozen = self
            .unfolded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .folding
            .clone();
        let generation = match frozen {
            Some(generation) => generation, // a fold that failed: try again
            None if self.fold_due() => match self.freeze() {
                Some(generation) => generation,
                None => return Ok(()),
            },
            None => return Ok(()),
        };
        let (inner, epoch) = (self.clone(), self.epoch.load(Ordering::Acquire));
        let spawned = std::thread::Builder::new()
            .name("magrathea-fold".into())
            .spawn(move || {
                let result = inner.fold_frozen(&generation, epoch);
                if let Err(e) = &result
                    && let Some(left_out) = inner.fold_warnings.allow()
                {
                    tracing::warn!(
                        error = %e,
                        left_out,
                        "folding the journal log into redb failed; will retry"
                    );
                }
                *inner
                    .fold_error
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = result.err();
            });
        // A finished thread's handle is dropped: it has nothing left to do.
        *thread = Some(spawned.map_err(StoreError::io)?);
        Ok(())
    }

    /// Waits for the fold thread, if there is one, to end.
    pub(super) fn join_fold(&self) {
        let thread = self
            .fold_thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(thread) = thread {
            // A panic in the fold was reported by the thread; the frozen entries stay readable.
            let _ = thread.join();
        }
    }

    /// Moves the log's writer to its other segment and freezes the current generation for a
    /// fold. `None` when the other segment is still busy. The caller holds the writer's commit
    /// lock, so no commit runs meanwhile.
    fn freeze(&self) -> Option<Arc<Gen>> {
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(log) = log.as_mut()
            && !log.switch()
        {
            return None;
        }
        let mut u = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let generation = Arc::new(std::mem::take(&mut u.current));
        u.folding = Some(generation.clone());
        Some(generation)
    }

    /// Writes a frozen generation into redb in one durable transaction that records its
    /// checkpoint, then forgets it and frees its log segment (unless the store was reopened
    /// meanwhile: `epoch` tells, and the reopen recovered from the files instead).
    fn fold_frozen(&self, generation: &Gen, epoch: u64) -> Result<(), StoreError> {
        // The epoch is read under the database lock that a reopen takes exclusively: a fold
        // from before a reopen writes nothing.
        self.with_db(|db| {
            if self.epoch.load(Ordering::Acquire) == epoch {
                write_gen(db, generation)
            } else {
                Ok(())
            }
        })?;
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let mut u = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if self.epoch.load(Ordering::Acquire) != epoch {
            return Ok(());
        }
        u.folding = None;
        if let Some(lsn) = generation.last_lsn {
            u.checkpoint = lsn;
        }
        if let Some(log) = log.as_mut() {
            log.other_folded();
        }
        Ok(())
    }

    /// Folds everything unfolded now, on the caller's thread: at open, after a reopen, and
    /// for tests. The caller holds the writer's commit lock (or owns the store alone).
    pub(super) fn fold_all(&self) -> Result<(), StoreError> {
        // A fold running on its thread finishes first.
        self.join_fold();
        self.with_db(|db| self.fold_all_in(db))
    }

    /// [`Inner::fold_all`] on a database the caller holds (a reopen, which holds it
    /// exclusively: a fold still running on its thread then writes nothing, see its epoch).
    pub(super) fn fold_all_in(&self, db: &redb::Database) -> Result<(), StoreError> {
        let (folding, current_lsn) = {
            let u = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
            (u.folding.clone(), u.current.last_lsn)
        };
        if let Some(generation) = &folding {
            write_gen(db, generation)?;
        }
        {
            let u = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
            if !u.current.is_empty() {
                write_gen(db, &u.current)?;
            }
        }
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let mut u = self
            .unfolded
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let last = current_lsn.or(folding.as_ref().and_then(|g| g.last_lsn));
        *u = Unfolded {
            checkpoint: last.unwrap_or(u.checkpoint),
            last_commit: u.last_commit,
            ..Unfolded::default()
        };
        if let Some(log) = log.as_mut() {
            log.all_folded();
        }
        Ok(())
    }
}

/// One durable transaction: the generation's entries into the tables, the legacy log rows it
/// covers deleted, and its last LSN as the checkpoint.
fn write_gen(db: &redb::Database, generation: &Gen) -> Result<(), StoreError> {
    let mut tx = db.begin_write().map_err(io)?;
    // Always durable: the log's segment is rewound over what this commit covers.
    tx.set_durability(redb::Durability::Immediate).map_err(io)?;
    {
        // A row per run (a run's records of one generation are consecutive seqs), split at
        // `chunk::MAX_BYTES` so that a read of a few records never loads a huge value.
        let mut chunks = tx.open_table(CHUNKS).map_err(io)?;
        let mut value = Vec::new();
        for (run, records) in &generation.runs {
            for part in chunk::split(records) {
                let Some((first, _)) = part.first() else {
                    continue;
                };
                value.clear();
                chunk::encode(part.iter().map(|(seq, b)| (*seq, &b[..])), &mut value);
                chunks
                    .insert((*run, *first), value.as_slice())
                    .map_err(io)?;
            }
        }
        let mut runs = tx.open_table(RUNS).map_err(io)?;
        let mut active = tx.open_table(ACTIVE).map_err(io)?;
        let mut by_scope = tx.open_table(ACTIVE_BY_SCOPE).map_err(io)?;
        for (id, s) in &generation.summaries {
            let bytes = serde_json::to_vec(s).map_err(StoreError::io)?;
            runs.insert(*id, bytes.as_slice()).map_err(io)?;
            // A run's scope never changes.
            let scoped = (s.scope.as_str(), *id);
            if s.status.is_terminal() {
                active.remove(*id).map_err(io)?;
                by_scope.remove(scoped).map_err(io)?;
            } else {
                active.insert(*id, ()).map_err(io)?;
                by_scope.insert(scoped, ()).map_err(io)?;
            }
        }
        let mut keys = tx.open_table(KEYS).map_err(io)?;
        for (key, id) in &generation.keys {
            keys.insert(key.as_str(), *id).map_err(io)?;
        }
        if let Some(last) = generation.legacy_log_key {
            let mut log = tx.open_table(LOG).map_err(io)?;
            log.retain_in(..=last, |_, _| false).map_err(io)?;
        }
        if let Some(lsn) = generation.last_lsn {
            let mut meta = tx.open_table(META).map_err(io)?;
            // Never back: a checkpoint covers every frame below it.
            let folded = meta.get(CHECKPOINT).map_err(io)?.map_or(0, |v| v.value());
            if lsn > folded {
                meta.insert(CHECKPOINT, lsn).map_err(io)?;
            }
        }
    }
    tx.commit().map_err(io)
}
