//! Where journals live: the [`Store`] trait, its redb and in-memory implementations.
//!
//! A store holds three things, all written in one atomic commit per [`CommitBatch`] group:
//! the journal (records addressed by `(run_id, seq)`), the run index (one [`RunSummary`] per
//! run, a projection of the journal kept for listing), and the idempotency keys of starts.

#[cfg(any(test, feature = "test-util"))]
mod faulty;
#[cfg(any(test, feature = "test-util"))]
mod faulty_backend;
mod log_frame;
mod memory;
mod reader;
mod redb_store;

use serde::{Deserialize, Serialize};

#[cfg(any(test, feature = "test-util"))]
pub use faulty::FaultyStore;
#[cfg(any(test, feature = "test-util"))]
pub use faulty_backend::{DiskFaults, FaultyBackend};
pub use memory::MemoryStore;
pub use reader::StoreReader;
pub use redb_store::{Durability, RedbStore};

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

/// Which runs to list.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs of this workflow.
    pub workflow: Option<String>,
    /// Only runs of this scope.
    pub scope: Option<String>,
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

    /// Housekeeping, called by the journal writer between commits (after acknowledging the
    /// last one) and when it has been idle for a while. It may write (it runs on the writer's
    /// thread, so the single-writer contract holds) and must leave every read unchanged. The
    /// default does nothing.
    fn maintain(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// The raw records of a run, in `seq` order, as `(seq, bytes)`.
    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError>;

    /// At most `limit` raw records of a run whose `seq` is `from_seq` or later, in `seq` order,
    /// as `(seq, bytes)`: the same records [`Store::read_journal_raw`] returns from that point
    /// on, including those committed but not yet in a store's final table. Empty for an unknown
    /// run, a `from_seq` past the end or a `limit` of 0.
    ///
    /// A reader that pages through a journal with it holds at most one page in memory. The
    /// default reads the whole journal and keeps the slice; stores that can seek override it.
    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut all = self.read_journal_raw(run_id)?;
        all.retain(|(seq, _)| *seq >= from_seq);
        all.truncate(limit);
        Ok(all)
    }

    /// The run's summary, if the run exists.
    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError>;

    /// Runs matching the filter, newest first.
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError>;

    /// Runs that are not terminal (RUNNING, WAITING, BLOCKED), oldest first.
    fn active_runs(&self) -> Result<Vec<RunId>, StoreError>;

    /// The run started with this idempotency key.
    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError>;

    /// The decoded journal of a run and the bytes its encoded records take (what the engine
    /// counts against
    /// [`EngineBuilder::max_journal_bytes_per_run`](crate::EngineBuilder::max_journal_bytes_per_run)
    /// when it recovers a run).
    fn read_journal_measured(&self, run_id: RunId) -> Result<(Vec<Entry>, u64), StoreError> {
        let mut bytes = 0u64;
        let entries = self
            .read_journal_raw(run_id)?
            .into_iter()
            .map(|(seq, raw)| {
                bytes += raw.len() as u64;
                let (record, at_ms) = codec::decode(&raw)?;
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

pub(crate) fn summary_matches(s: &RunSummary, filter: &RunFilter) -> bool {
    filter
        .workflow
        .as_ref()
        .is_none_or(|w| *w == s.workflow_name)
        && filter.scope.as_ref().is_none_or(|sc| s.scope == *sc)
}

#[cfg(test)]
pub(crate) mod contract_tests {
    //! The [`Store`] contracts, run against every implementation.
    use super::*;
    use crate::record::{Record, StartRecord};

    fn start(run: RunId, name: &str) -> CommitBatch {
        let mut bytes = Vec::new();
        let rec = Record::Start(Box::new(StartRecord {
            workflow_name: name.into(),
            workflow_version: String::new(),
            frontend: "code".into(),
            params: serde_json::json!({"n": 1}),
            definition: None,
            parent: None,
            started_by: "test".into(),
            idempotency_key: Some(format!("key-{run}")),
            scope: RunScope::default(),
            requested_by: None,
            bounds: None,
        }));
        codec::encode(&rec, 7, &mut bytes);
        CommitBatch {
            records: vec![EncodedRecord {
                run_id: run,
                seq: 0,
                bytes,
            }],
            summaries: vec![RunSummary {
                run_id: run,
                workflow_name: name.into(),
                frontend: "code".into(),
                status: RunStatus::Running,
                created_ms: 7,
                updated_ms: 7,
                parent: None,
                scope: RunScope::default(),
            }],
            idempotency_keys: vec![(format!("key-{run}"), run)],
        }
    }

    pub(crate) fn check_all(store: &dyn Store) {
        let a = RunId::new();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = RunId::new();
        let (ba, bb) = (start(a, "alpha"), start(b, "beta"));
        store.commit(&[&ba, &bb]).unwrap();
        // Housekeeping between commits leaves every read unchanged (checked by all below).
        store.maintain().unwrap();

        let journal = store.read_journal(a).unwrap();
        assert_eq!(journal.len(), 1);
        assert_eq!(journal[0].at_ms, 7);
        assert!(matches!(&journal[0].record, Record::Start(s) if s.workflow_name == "alpha"));

        let all = store.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(
            all.iter().map(|s| s.run_id).collect::<Vec<_>>(),
            vec![b, a],
            "newest first"
        );
        let only = store
            .list_runs(&RunFilter {
                workflow: Some("alpha".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(only.len(), 1);
        let page = store
            .list_runs(&RunFilter {
                before: Some(b),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.iter().map(|s| s.run_id).collect::<Vec<_>>(), vec![a]);

        assert_eq!(
            store.find_idempotency_key(&format!("key-{a}")).unwrap(),
            Some(a)
        );
        assert_eq!(store.find_idempotency_key("nope").unwrap(), None);
        assert_eq!(store.active_runs().unwrap(), vec![a, b]);

        let mut done = store.run_summary(a).unwrap().unwrap();
        done.status = RunStatus::Done;
        store
            .commit(&[&CommitBatch {
                summaries: vec![done],
                ..Default::default()
            }])
            .unwrap();
        assert_eq!(store.active_runs().unwrap(), vec![b]);
        assert_eq!(
            store.run_summary(a).unwrap().unwrap().status,
            RunStatus::Done
        );
        assert!(store.read_journal(RunId::new()).unwrap().is_empty());

        let (entries, bytes) = store.read_journal_measured(b).unwrap();
        let raw = store.read_journal_raw(b).unwrap();
        assert_eq!(entries, store.read_journal(b).unwrap());
        assert_eq!(
            bytes,
            raw.iter().map(|(_, r)| r.len() as u64).sum::<u64>(),
            "the journal's encoded bytes"
        );
    }

    /// `count` records of `run` from seq `first`, each holding its own seq as bytes.
    pub(crate) fn records(run: RunId, first: u64, count: u64) -> CommitBatch {
        CommitBatch {
            records: (first..first + count)
                .map(|seq| EncodedRecord {
                    run_id: run,
                    seq,
                    bytes: seq.to_le_bytes().to_vec(),
                })
                .collect(),
            ..Default::default()
        }
    }

    /// The seqs of a ranged read, each checked against the bytes it carries.
    fn range_seqs(store: &dyn Store, run: RunId, from: u64, limit: usize) -> Vec<u64> {
        store
            .read_journal_range(run, from, limit)
            .unwrap()
            .into_iter()
            .map(|(seq, bytes)| {
                assert_eq!(bytes, seq.to_le_bytes(), "record {seq} reads its own bytes");
                seq
            })
            .collect()
    }

    /// [`Store::read_journal_range`]: slices of the full journal, whatever the store did with
    /// the records between commits (`maintain` may move them; reads must not notice).
    pub(crate) fn check_ranges(store: &dyn Store) {
        let (run, other) = (RunId::new(), RunId::new());
        store
            .commit(&[&records(run, 0, 10), &records(other, 0, 3)])
            .unwrap();
        store.maintain().unwrap();
        store.commit(&[&records(run, 10, 5)]).unwrap();
        assert_eq!(range_seqs(store, run, 0, 100), (0..15).collect::<Vec<_>>());
        assert_eq!(range_seqs(store, run, 3, 4), [3, 4, 5, 6]);
        assert_eq!(
            range_seqs(store, run, 8, 4),
            [8, 9, 10, 11],
            "across two commits"
        );
        assert_eq!(range_seqs(store, run, 13, 100), [13, 14]);
        assert!(range_seqs(store, run, 15, 100).is_empty(), "past the end");
        assert!(range_seqs(store, run, 0, 0).is_empty(), "a limit of 0");
        assert!(
            range_seqs(store, RunId::new(), 0, 10).is_empty(),
            "unknown run"
        );
        assert_eq!(
            range_seqs(store, other, 0, 100),
            [0, 1, 2],
            "runs do not mix"
        );
        // Paging from each page's last seq + 1 reads every record exactly once.
        let mut paged = Vec::new();
        let mut from = 0;
        loop {
            let page = range_seqs(store, run, from, 4);
            let Some(&last) = page.last() else { break };
            paged.extend(page);
            from = last + 1;
        }
        assert_eq!(paged, (0..15).collect::<Vec<_>>());
        assert_eq!(
            store.read_journal_range(run, 2, 3).unwrap(),
            store.read_journal_raw(run).unwrap()[2..5].to_vec(),
            "the same records as the full read"
        );
    }
}
