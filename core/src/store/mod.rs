//! Where journals live: the [`Store`] trait, its redb and in-memory implementations.
//!
//! A store holds three things, all written in one atomic commit per [`CommitBatch`] group:
//! the journal (records addressed by `(run_id, seq)`), the run index (one [`RunSummary`] per
//! run, a projection of the journal kept for listing), and the idempotency keys of starts.
//! Beside them, outside the journal, a store may keep a [`Catalog`] of small keyed values.

pub mod catalog;
#[cfg(any(test, feature = "test-util"))]
pub mod contract;
#[cfg(any(test, feature = "test-util"))]
mod faulty;
#[cfg(any(test, feature = "test-util"))]
mod faulty_backend;
mod leases;
mod log_frame;
mod memory;
mod reader;
mod redb_store;
mod slots;
mod wal;

use serde::{Deserialize, Serialize};

pub use catalog::Catalog;
#[cfg(any(test, feature = "test-util"))]
pub use faulty::FaultyStore;
#[cfg(any(test, feature = "test-util"))]
pub use faulty_backend::{DiskFaults, FaultyBackend};
pub use leases::{Claim, LaneSlot, Leases, Mail};
pub use memory::MemoryStore;
pub use reader::StoreReader;
pub(crate) use redb_store::closing_here;
pub use redb_store::{DEFAULT_CACHE_BYTES, Durability, RedbStore};
pub use slots::LaneSlots;

use crate::codec;
use crate::error::StoreError;
use crate::id::RunId;
use crate::record::{Entry, RunStatus};
use crate::vocabulary::{Frontend, RunScope};

/// The indexed summary of a run: what listing needs without reading journals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// The run.
    pub run_id: RunId,
    /// Its workflow.
    pub workflow_name: String,
    /// `code` or `yaml`.
    pub frontend: Frontend,
    /// Current status.
    pub status: RunStatus,
    /// Start time, ms since the epoch.
    pub created_ms: u64,
    /// Time of the last record, ms since the epoch.
    pub updated_ms: u64,
    /// Parent run, for child runs.
    pub parent: Option<RunId>,
    /// `tenant/project` scope, or empty.
    pub scope: RunScope,
}

/// The bounds of a page of records: `limit` records and `max_bytes` of them, with the first
/// always admitted (see [`Store::read_journal_range`]).
#[derive(Debug, Clone, Copy)]
pub struct PageBound {
    left: usize,
    bytes_left: usize,
    first: bool,
}

impl PageBound {
    /// At most `limit` records and `max_bytes` bytes.
    pub fn new(limit: usize, max_bytes: usize) -> Self {
        Self {
            left: limit,
            bytes_left: max_bytes,
            first: true,
        }
    }

    /// No bound: every record.
    pub const ALL: Self = Self {
        left: usize::MAX,
        bytes_left: usize::MAX,
        first: true,
    };

    /// Whether the page is over (nothing more is admitted).
    pub fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// How many more records may be admitted at most.
    pub fn records_left(&self) -> usize {
        self.left
    }

    /// Whether a record of `len` bytes fits; counts it if it does. Once one does not, the
    /// page is over: callers stop at the first refusal.
    pub fn admits(&mut self, len: usize) -> bool {
        if self.left == 0 || (!self.first && len > self.bytes_left) {
            self.left = 0;
            return false;
        }
        self.first = false;
        self.left -= 1;
        self.bytes_left = self.bytes_left.saturating_sub(len);
        true
    }
}

/// One encoded journal record to append.
#[derive(Debug, Clone)]
pub struct EncodedRecord {
    /// The run.
    pub run_id: RunId,
    /// Its position in the run's journal.
    pub seq: u64,
    /// The bytes of [`codec::encode`].
    pub bytes: Vec<u8>,
}

/// Everything one caller appends at once. The writer commits many batches in one transaction.
#[derive(Debug, Clone, Default)]
pub struct CommitBatch {
    /// Journal records, in order.
    pub records: Vec<EncodedRecord>,
    /// Run summaries to insert or replace.
    pub summaries: Vec<RunSummary>,
    /// Idempotency keys of new runs.
    pub idempotency_keys: Vec<(String, RunId)>,
}

impl CommitBatch {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty() && self.summaries.is_empty() && self.idempotency_keys.is_empty()
    }
}

/// A batch a store shared by several workers refused while committing the others of its
/// group: its index in the slice given to [`Store::commit_checked`], and why
/// ([`StoreError::Fenced`], [`StoreError::KeyTaken`]).
#[derive(Debug, Clone)]
pub struct Refusal {
    /// Index of the refused batch.
    pub batch: usize,
    /// Why it was refused.
    pub error: StoreError,
}

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs of this workflow.
    pub workflow: Option<String>,
    /// Only runs of this scope.
    pub scope: Option<String>,
    /// Only runs whose scope begins with this (`acme/`: every project of tenant `acme`).
    pub scope_prefix: Option<String>,
    /// Only runs older than this one (cursor for pagination; the list is newest first).
    pub before: Option<RunId>,
    /// At most this many (0 = no limit).
    pub limit: usize,
}

/// A durable home for journals.
///
/// Contracts every implementation keeps (the engine relies on them; tests check them):
/// 1. **Atomic, durable commits.** [`Store::commit`] applies every batch it is given, or none;
///    when it returns `Ok`, all of it survives a crash (subject to the configured durability;
///    the default is durable). When it returns `Err`, nothing of it is visible. (The one
///    exception no store can rule out: when the final fsync fails, the disk may have kept the
///    commit anyway, and it becomes visible once the store is reopened. Its records are then
///    replayed like any others; a caller told of the failure that retries is deduplicated by
///    first-completion-wins and idempotency keys.)
/// 2. **Read your commits.** After `commit` returns `Ok`, every read sees the batch.
/// 3. **Order.** [`Store::read_journal`] returns a run's records in `seq` order, and
///    [`Store::read_journal_range`] a contiguous slice of that same sequence.
/// 4. **Single writer.** `commit` is called by one thread at a time (the journal writer);
///    reads may run concurrently with it.
pub trait Store: Send + Sync + 'static {
    /// Commits the batches atomically, in one transaction.
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError>;

    /// The engine on this store is closing: the store is let go of once the engine's last
    /// part drops it. A store that locks a file says so to a new engine of this process on
    /// the same file, which then waits instead of failing. Nothing by default.
    fn closing(&self) {}

    /// The engine on this store was stopped ([`Engine::stop`](crate::Engine::stop)) and a new
    /// engine of this process wants its file while a handle of the stopped one lives: the
    /// store closes its files now (every commit is durable already; what its log holds
    /// unfolded, the next open folds) and answers every later read or commit with
    /// [`StoreError::Closed`]. Nothing by default.
    fn close_files(&self) {}

    /// Whether the store still holds its files: `false` once [`Store::close_files`] closed
    /// them (another engine may hold them now). `true` by default.
    fn holds_files(&self) -> bool {
        true
    }

    /// Commits the batches it accepts atomically, in one transaction, and names the ones it
    /// refused (none of whose rows were written). Only a store shared by several workers
    /// refuses batches: one with records of a run whose lease this worker lost
    /// ([`StoreError::Fenced`]), or a start whose idempotency key another worker took
    /// ([`StoreError::KeyTaken`]). The journal writer calls this; the default commits
    /// everything with [`Store::commit`] and refuses nothing.
    fn commit_checked(&self, batches: &[&CommitBatch]) -> Result<Vec<Refusal>, StoreError> {
        self.commit(batches).map(|()| Vec::new())
    }

    /// The leases of a store several worker processes share; `None` (the default) for a store
    /// one process owns, whose engine drives every run in it.
    fn leases(&self) -> Option<&dyn Leases> {
        None
    }

    /// The store's [`Catalog`] (trigger registrations, cursors, delivery records); `None`
    /// (the default) for a store that keeps none.
    fn catalog(&self) -> Option<&dyn Catalog> {
        None
    }

    /// Housekeeping, called by the journal writer between commits (after acknowledging the
    /// last one) and when it has been idle for a while. It may write (it runs on the writer's
    /// thread, so the single-writer contract holds) and must leave every read unchanged. It
    /// may also hand work to a thread of its own and return, if commits and reads stay correct
    /// while that work runs (the redb store folds its journal log that way). The default does
    /// nothing.
    fn maintain(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Whether the store's disk has room now for a commit of about `bytes` bytes of records.
    /// A run whose commit failed (a full disk) is taken up again only once there is room for
    /// what it had to journal (its task's result, say): a store that takes an empty commit
    /// again may still refuse those records, and taking the run up would only run its task
    /// again for nothing. The default says yes; the redb store writes and removes a scratch
    /// file of that size beside its file.
    fn has_room(&self, bytes: u64) -> Result<(), StoreError> {
        let _ = bytes;
        Ok(())
    }

    /// Whether an I/O failure (a full disk) has left the store unable to answer reads until it
    /// recovers, though commits may still succeed: the redb store's folded tables, which its
    /// next operation or [`Store::maintain`] reopens. A server answers 503 rather than 500
    /// meanwhile. The default is `false`.
    fn failing(&self) -> bool {
        false
    }

    /// The raw records of a run, in `seq` order, as `(seq, bytes)`.
    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;

    /// At most `limit` raw records of a run whose `seq` is `from_seq` or later, in `seq` order,
    /// as `(seq, bytes)`: the same records [`Store::read_journal_raw`] returns from that point
    /// on, including those committed but not yet in a store's final table. Empty for an unknown
    /// run, a `from_seq` past the end or a `limit` of 0.
    ///
    /// The records also stop before the one that would take their bytes past `max_bytes`; the
    /// first is returned whatever its size, so that a page always moves on.
    ///
    /// A reader that pages through a journal with it holds at most one page in memory. The
    /// default reads the whole journal and keeps the slice; stores that can seek override it.
    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut all = self.read_journal_raw(run_id)?;
        all.retain(|(seq, _)| *seq >= from_seq);
        let mut page = PageBound::new(limit, max_bytes);
        let kept = all
            .iter()
            .take_while(|(_, bytes)| page.admits(bytes.len()))
            .count();
        all.truncate(kept);
        Ok(all)
    }

    /// The run's summary, if the run exists.
    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError>;

    /// Runs matching the filter, newest first.
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError>;

    /// Runs that are not terminal (RUNNING, WAITING, BLOCKED), oldest first.
    fn active_runs(&self) -> Result<Vec<RunId>, StoreError>;

    /// The summaries of the active runs `filter` selects by workflow, scope and scope prefix
    /// (its cursor and limit do not apply), in run id order. A store with an index by scope
    /// reads only the selected runs, so that one tenant's request costs nothing per run of
    /// another; the default reads each active run's summary and filters them.
    fn active_summaries(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let mut out = Vec::new();
        for run in self.active_runs()? {
            if let Some(summary) = self.run_summary(run)?
                && summary_matches(&summary, filter)
            {
                out.push(summary);
            }
        }
        Ok(out)
    }

    /// The run started with this idempotency key.
    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError>;

    /// The journal of a run as replay reads it, and the bytes its encoded records take (what
    /// the engine counts against
    /// [`EngineBuilder::max_journal_bytes_per_run`](crate::EngineBuilder::max_journal_bytes_per_run)
    /// when it recovers a run). Records are decoded with [`codec::decode_for_replay`]: a
    /// `TaskStartedRecord`'s input is left `null` (replay compares its hash), every other
    /// field is as [`Store::read_journal`] reads it.
    fn read_journal_for_replay(&self, run_id: RunId) -> Result<(Vec<Entry>, u64), StoreError> {
        let mut bytes = 0u64;
        let entries = self
            .read_journal_raw(run_id)?
            .into_iter()
            .map(|(seq, raw)| {
                bytes += raw.len() as u64;
                let (record, at_ms) = codec::decode_for_replay(&raw)?;
                Ok(Entry { seq, at_ms, record })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok((entries, bytes))
    }

    /// The decoded journal of a run.
    fn read_journal(&self, run_id: RunId) -> Result<Vec<Entry>, StoreError> {
        self.read_journal_raw(run_id)?
            .into_iter()
            .map(|(seq, bytes)| {
                let (record, at_ms) = codec::decode(&bytes)?;
                Ok(Entry { seq, at_ms, record })
            })
            .collect()
    }
}

/// The first string, in bytewise order, past every string that begins with `prefix`: the
/// prefix with its last character raised by one (a last character with no successor gives way
/// to the one before it). `None` when there is none: every string from `prefix` on begins with
/// it. A store with an index by scope reads a scope prefix as the range `prefix..end`.
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

pub(crate) fn summary_matches(s: &RunSummary, filter: &RunFilter) -> bool {
    filter
        .workflow
        .as_ref()
        .is_none_or(|w| *w == s.workflow_name)
        && filter.scope.as_ref().is_none_or(|sc| s.scope == *sc)
        && filter
            .scope_prefix
            .as_ref()
            .is_none_or(|p| s.scope.as_str().starts_with(p.as_str()))
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn a_prefix_and_its_end_hold_exactly_the_strings_that_begin_with_it() {
        let end = prefix_end("acme/").unwrap();
        assert_eq!(end, "acme0");
        let within = |s: &str| s >= "acme/" && s < end.as_str();
        for s in ["acme/", "acme/shop", "acme/\u{10FFFF}"] {
            assert!(within(s), "{s}");
        }
        for s in [
            "acme",
            "acme0",
            "acmex/shop",
            "acm",
            "globex/shop",
            "acme.shop",
        ] {
            assert!(!within(s), "{s}");
        }
        // Past the surrogates, and past a character with no successor.
        assert_eq!(prefix_end("a\u{D7FF}").as_deref(), Some("a\u{E000}"));
        assert_eq!(prefix_end("a\u{10FFFF}").as_deref(), Some("b"));
        assert_eq!(prefix_end("\u{10FFFF}"), None);
        assert_eq!(prefix_end(""), None);
    }
}
