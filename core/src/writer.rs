//! The group-commit journal writer.
//!
//! One thread owns the store's write side. It takes every append waiting in its queue, commits
//! them in one transaction, and only then acknowledges each waiter. Alone, an append costs one
//! commit; under load one commit carries hundreds of appends.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::StoreError;
use crate::store::{CommitBatch, Store};

/// Called after every successful commit with the number of records and the commit's duration
/// in microseconds (for histograms in metrics exporters). Runs on the writer thread: keep it
/// cheap.
pub type CommitObserver = Box<dyn Fn(usize, u64) + Send + Sync>;

/// Counters of the writer, for metrics and benches.
#[derive(Default)]
pub struct WriterStats {
    /// Commits made.
    pub commits: AtomicU64,
    /// Batches (appends) committed.
    pub batches: AtomicU64,
    /// Records committed.
    pub records: AtomicU64,
    /// Total time spent in commits, in microseconds.
    pub commit_micros: AtomicU64,
    observer: std::sync::OnceLock<CommitObserver>,
}

impl std::fmt::Debug for WriterStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriterStats")
            .field("commits", &self.commits)
            .field("batches", &self.batches)
            .field("records", &self.records)
            .field("commit_micros", &self.commit_micros)
            .finish_non_exhaustive()
    }
}

impl WriterStats {
    /// Installs the commit observer; only the first call takes effect (returns `false` after).
    pub fn observe_commits(&self, observer: CommitObserver) -> bool {
        self.observer.set(observer).is_ok()
    }
}

struct Request {
    batch: CommitBatch,
    ack: oneshot::Sender<Result<(), StoreError>>,
}

/// A handle to the writer thread. Cloning shares the thread.
#[derive(Clone)]
pub struct JournalWriter {
    tx: mpsc::Sender<Request>,
    stats: Arc<WriterStats>,
    thread: Arc<std::sync::Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for JournalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalWriter")
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Most appends merged into one commit; bounds a commit's latency under extreme load.
const MAX_GROUP: usize = 4096;

impl JournalWriter {
    /// Starts the writer thread over `store`.
    pub fn start(store: Arc<dyn Store>) -> Self {
        let (tx, rx) = mpsc::channel::<Request>();
        let stats = Arc::new(WriterStats::default());
        let st = stats.clone();
        let thread = std::thread::Builder::new()
            .name("magrathea-journal".into())
            .spawn(move || run(store, rx, st))
            .expect("spawning the journal writer thread");
        Self {
            tx,
            stats,
            thread: Arc::new(std::sync::Mutex::new(Some(thread))),
        }
    }

    /// Appends a batch; resolves once it is durable (or the commit failed, in which case
    /// nothing of it was written).
    pub async fn append(&self, batch: CommitBatch) -> Result<(), StoreError> {
        let (ack, done) = oneshot::channel();
        self.tx
            .send(Request { batch, ack })
            .map_err(|_| StoreError::Closed)?;
        done.await.map_err(|_| StoreError::Closed)?
    }

    /// The writer's counters.
    pub fn stats(&self) -> &Arc<WriterStats> {
        &self.stats
    }

    /// Waits until the writer has drained its queue and stopped. Appends sent after the last
    /// clone of the handle is dropped are refused.
    pub fn join(self) {
        let handle = self.thread.lock().unwrap_or_else(|p| p.into_inner()).take();
        drop(self.tx);
        if let Some(h) = handle {
            let _ = h.join();
        }
    }
}

/// How long the writer waits for an append before giving the store an idle [`Store::maintain`].
const IDLE_TICK: Duration = Duration::from_millis(250);

fn run(store: Arc<dyn Store>, rx: mpsc::Receiver<Request>, stats: Arc<WriterStats>) {
    let mut group: Vec<Request> = Vec::new();
    loop {
        let first = match rx.recv_timeout(IDLE_TICK) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                maintain(&*store);
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        group.push(first);
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        let batches: Vec<&CommitBatch> = group.iter().map(|r| &r.batch).collect();
        let started = Instant::now();
        let result = store.commit(&batches);
        let micros = started.elapsed().as_micros() as u64;
        if result.is_ok() {
            let records: usize = group.iter().map(|r| r.batch.records.len()).sum();
            stats.commits.fetch_add(1, Ordering::Relaxed);
            stats
                .batches
                .fetch_add(group.len() as u64, Ordering::Relaxed);
            stats.records.fetch_add(records as u64, Ordering::Relaxed);
            stats.commit_micros.fetch_add(micros, Ordering::Relaxed);
            if let Some(observe) = stats.observer.get() {
                observe(records, micros);
            }
        } else if let Err(e) = &result {
            tracing::error!(error = %e, appends = group.len(), "journal commit failed");
        }
        for r in group.drain(..) {
            let _ = r.ack.send(result.clone());
        }
        maintain(&*store);
    }
}

fn maintain(store: &dyn Store) {
    // A failed housekeeping step leaves the store as it was; the next one retries.
    if let Err(e) = store.maintain() {
        tracing::warn!(error = %e, "journal store maintenance failed");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::RunId;
    use crate::store::{EncodedRecord, FaultyStore, MemoryStore};

    fn batch(run: RunId, seq: u64) -> CommitBatch {
        CommitBatch {
            records: vec![EncodedRecord {
                run_id: run,
                seq,
                bytes: vec![1],
            }],
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn concurrent_appends_share_commits_and_are_all_durable() {
        let store = Arc::new(MemoryStore::new());
        let w = JournalWriter::start(store.clone());
        let run = RunId::new();
        let futs = (0..500).map(|i| w.append(batch(run, i)));
        for r in futures::future::join_all(futs).await {
            r.unwrap();
        }
        assert_eq!(store.read_journal_raw(run).unwrap().len(), 500);
        let commits = w.stats().commits.load(Ordering::Relaxed);
        assert!((1..=500).contains(&commits));
        assert_eq!(w.stats().records.load(Ordering::Relaxed), 500);
    }

    #[tokio::test]
    async fn a_failed_commit_is_reported_to_every_waiter_and_writes_nothing() {
        let store = Arc::new(FaultyStore::new(MemoryStore::new()));
        store.fail_next(1);
        let w = JournalWriter::start(store.clone());
        let run = RunId::new();
        let err = w.append(batch(run, 0)).await.unwrap_err();
        assert!(err.to_string().contains("[MAG-ST001]"), "{err}");
        assert!(store.read_journal_raw(run).unwrap().is_empty());
        w.append(batch(run, 0)).await.unwrap();
        assert_eq!(store.read_journal_raw(run).unwrap().len(), 1);
    }
}
