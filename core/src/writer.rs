//! The group-commit journal writer.
//!
//! One thread serves the store's write side. It takes every append waiting in its queue,
//! commits them in one transaction, and only then acknowledges each waiter. Under load one
//! commit carries hundreds of appends.
//!
//! A lone append skips the thread: when nothing is queued, no commit is in progress, the last
//! commit carried a single append and that append was the same run's (a run going on alone) or
//! the journal has been quiet for [`QUIET`] since, the caller commits its own batch on its own
//! thread, like the leader of a leader/follower group commit. A lone workflow then pays one
//! commit per step and no thread hand-offs (handing a batch to a sleeping thread and waking the
//! caller back costs tens of microseconds each way on a virtual machine, a quarter of an
//! fsync). The caller blocks for the commit, about one fsync; the cost to an async runtime is
//! bounded by the condition: as soon as appends overlap, they go through the queue and are
//! grouped again, and appends of many runs arriving one at a time (a server's starts) do not
//! take turns blocking the runtime's threads.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use crate::error::StoreError;
use crate::store::{CommitBatch, Refusal, Store};

/// Called after every successful commit with the number of records and the commit's duration
/// in microseconds (for histograms in metrics exporters). Runs on the thread that committed
/// (the writer thread, or a lone appender's) before the commit is acknowledged: keep it cheap.
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

/// Whether the journal accepts commits, as far as the last one tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JournalHealth {
    /// The last commit succeeded (or none was made yet).
    Healthy,
    /// The last commit failed, e.g. with a full disk. Appends fail until the store works
    /// again; [`JournalWriter::probe`] tells when it does.
    CommitFailed,
}

struct Request {
    batch: CommitBatch,
    ack: oneshot::Sender<Result<(), StoreError>>,
}

/// What the writer thread and lone appenders share.
/// The least time between two warnings of a failure that lasts (a full disk).
const WARN_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

struct Shared {
    store: Arc<dyn Store>,
    stats: Arc<WriterStats>,
    /// Held for every commit and every [`Store::maintain`]: the store's single-writer contract.
    commit_lock: Mutex<()>,
    /// Appends sent to the thread and not yet taken from its queue.
    queued: AtomicUsize,
    /// Appends in the last commit.
    last_group: AtomicUsize,
    /// The run of the last commit's append when it carried one (see [`run_key`]), else 0.
    last_run: AtomicU64,
    /// When the last commit ended, in nanoseconds since `epoch` ([`NEVER`] before the first).
    last_end: AtomicU64,
    /// What `last_end` counts from.
    epoch: Instant,
    /// Whether the last commit (or [`JournalWriter::probe`]) failed: one store per commit, so
    /// that reporting health costs the hot path nothing more.
    failed: AtomicBool,
    /// The warnings of failed housekeeping, which a full disk repeats between every commit.
    maintenance_warnings: crate::LogThrottle,
    /// The warnings of failed probes, which a full disk repeats at every health check.
    probe_warnings: crate::LogThrottle,
}

impl Shared {
    /// Commits `batches` (the caller holds `commit_lock`) and counts it; returns the batches
    /// a shared store refused (see [`Store::commit_checked`]).
    fn commit(&self, batches: &[&CommitBatch]) -> Result<Vec<Refusal>, StoreError> {
        let started = Instant::now();
        let result = self.store.commit_checked(batches);
        let micros = started.elapsed().as_micros() as u64;
        self.last_group.store(batches.len(), Ordering::Relaxed);
        let lone_run = match batches {
            [batch] => run_key(batch),
            _ => 0,
        };
        self.last_run.store(lone_run, Ordering::Relaxed);
        self.last_end.store(self.now(), Ordering::Relaxed);
        self.failed.store(result.is_err(), Ordering::Relaxed);
        match &result {
            Ok(refused) => {
                let records: usize = batches
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !refused.iter().any(|r| r.batch == *i))
                    .map(|(_, b)| b.records.len())
                    .sum();
                let stats = &self.stats;
                stats.commits.fetch_add(1, Ordering::Relaxed);
                stats
                    .batches
                    .fetch_add(batches.len() as u64, Ordering::Relaxed);
                stats.records.fetch_add(records as u64, Ordering::Relaxed);
                stats.commit_micros.fetch_add(micros, Ordering::Relaxed);
                if let Some(observe) = stats.observer.get() {
                    observe(records, micros);
                }
            }
            Err(e) => tracing::error!(error = %e, appends = batches.len(), "journal commit failed"),
        }
        result
    }

    /// Whether an append of the run `key` arriving at `now` may commit on its caller's thread
    /// (see the module documentation); the commit lock is still to be taken.
    fn may_commit_alone(&self, key: u64, now: u64) -> bool {
        if self.queued.load(Ordering::SeqCst) != 0 || self.last_group.load(Ordering::Relaxed) > 1 {
            return false;
        }
        let same_run = self.last_run.load(Ordering::Relaxed) == key;
        let last_end = self.last_end.load(Ordering::Relaxed);
        let quiet = last_end == NEVER || now.saturating_sub(last_end) >= QUIET.as_nanos() as u64;
        same_run || quiet
    }

    /// Nanoseconds since `epoch`.
    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn maintain(&self) {
        let _guard = self
            .commit_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // A failed housekeeping step leaves the store as it was; the next one retries.
        if let Err(e) = self.store.maintain()
            && let Some(left_out) = self.maintenance_warnings.allow()
        {
            tracing::warn!(error = %e, left_out, "journal store maintenance failed");
        }
    }
}

/// A handle to the writer thread. Cloning shares the thread.
#[derive(Clone)]
pub struct JournalWriter {
    tx: mpsc::Sender<Request>,
    shared: Arc<Shared>,
    thread: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl std::fmt::Debug for JournalWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JournalWriter")
            .field("stats", &self.shared.stats)
            .finish_non_exhaustive()
    }
}

/// Most appends merged into one commit; bounds a commit's latency under extreme load.
const MAX_GROUP: usize = 4096;

/// How long the journal must have been without commits for another run's append to commit
/// alone on its caller's thread (see the module documentation).
pub const QUIET: Duration = Duration::from_millis(1);

/// `last_end` before the first commit.
const NEVER: u64 = u64::MAX;

/// A key for the run of an append (the low bits of its id; never 0 for an append of a run),
/// 0 for an append of no run.
fn run_key(batch: &CommitBatch) -> u64 {
    let run = batch
        .records
        .first()
        .map(|r| r.run_id)
        .or_else(|| batch.summaries.first().map(|s| s.run_id));
    run.map_or(0, |r| (r.as_u128() as u64) | 1)
}

impl JournalWriter {
    /// Starts the writer thread over `store`.
    pub fn start(store: Arc<dyn Store>) -> Self {
        let (tx, rx) = mpsc::channel::<Request>();
        let shared = Arc::new(Shared {
            store,
            stats: Arc::new(WriterStats::default()),
            commit_lock: Mutex::new(()),
            queued: AtomicUsize::new(0),
            last_group: AtomicUsize::new(0),
            last_run: AtomicU64::new(0),
            last_end: AtomicU64::new(NEVER),
            epoch: Instant::now(),
            failed: AtomicBool::new(false),
            maintenance_warnings: crate::LogThrottle::new(WARN_EVERY),
            probe_warnings: crate::LogThrottle::new(WARN_EVERY),
        });
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("magrathea-journal".into())
            .spawn(move || run(&sh, &rx))
            .expect("spawning the journal writer thread");
        Self {
            tx,
            shared,
            thread: Arc::new(Mutex::new(Some(thread))),
        }
    }

    /// Appends a batch; resolves once it is durable (or the commit failed, in which case
    /// nothing of it was written). A lone append commits on the caller's thread (see the
    /// module documentation).
    pub async fn append(&self, batch: CommitBatch) -> Result<(), StoreError> {
        if let Some(result) = self.try_commit_alone(&batch) {
            return result;
        }
        let (ack, done) = oneshot::channel();
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(Request { batch, ack }).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
            return Err(StoreError::Closed);
        }
        done.await.map_err(|_| StoreError::Closed)?
    }

    fn try_commit_alone(&self, batch: &CommitBatch) -> Option<Result<(), StoreError>> {
        let shared = &*self.shared;
        if !shared.may_commit_alone(run_key(batch), shared.now()) {
            return None;
        }
        let _guard = shared.commit_lock.try_lock().ok()?;
        Some(
            shared
                .commit(&[batch])
                .and_then(|refused| match refused.into_iter().next() {
                    Some(refusal) => Err(refusal.error),
                    None => Ok(()),
                }),
        )
    }

    /// Whether the journal accepted its last commit. Reading it costs one atomic load; it
    /// changes with every commit, and with every [`JournalWriter::probe`].
    pub fn health(&self) -> JournalHealth {
        if self.shared.failed.load(Ordering::Relaxed) {
            JournalHealth::CommitFailed
        } else {
            JournalHealth::Healthy
        }
    }

    /// Commits an empty transaction, waiting for any commit in progress, and records the
    /// outcome as [`JournalWriter::health`] does. A store that failed reopens itself first
    /// (see [`RedbStore`](crate::RedbStore)), so a probe notices that the disk recovered
    /// without waiting for the next append. It costs one commit (one fsync): callers rate-limit
    /// it.
    pub fn probe(&self) -> Result<(), StoreError> {
        let shared = &*self.shared;
        let _guard = shared
            .commit_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let result = shared.store.commit(&[]);
        shared.failed.store(result.is_err(), Ordering::Relaxed);
        if let Err(e) = &result
            && let Some(left_out) = shared.probe_warnings.allow()
        {
            tracing::warn!(error = %e, left_out, "journal health probe failed");
        }
        result
    }

    /// The writer's counters.
    pub fn stats(&self) -> &Arc<WriterStats> {
        &self.shared.stats
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

fn run(shared: &Shared, rx: &mpsc::Receiver<Request>) {
    let mut group: Vec<Request> = Vec::new();
    loop {
        let first = match rx.recv_timeout(IDLE_TICK) {
            Ok(r) => r,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                shared.maintain();
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let guard = shared
            .commit_lock
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        group.push(first);
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(r) => group.push(r),
                Err(_) => break,
            }
        }
        shared.queued.fetch_sub(group.len(), Ordering::SeqCst);
        let batches: Vec<&CommitBatch> = group.iter().map(|r| &r.batch).collect();
        let result = shared.commit(&batches);
        drop(guard);
        for (i, r) in group.drain(..).enumerate() {
            let outcome = match &result {
                Err(e) => Err(e.clone()),
                Ok(refused) => match refused.iter().find(|f| f.batch == i) {
                    Some(refusal) => Err(refusal.error.clone()),
                    None => Ok(()),
                },
            };
            let _ = r.ack.send(outcome);
        }
        shared.maintain();
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

    /// The names of the threads that made each commit.
    type CommitThreads = Arc<Mutex<Vec<Option<String>>>>;

    /// A memory store whose commits take `delay` (like an fsync), behind a writer that notes
    /// which thread made each commit.
    fn slow_writer(
        delay: Duration,
    ) -> (Arc<FaultyStore<MemoryStore>>, JournalWriter, CommitThreads) {
        let store = Arc::new(FaultyStore::new(MemoryStore::new()));
        store.delay_commits(delay);
        let w = JournalWriter::start(store.clone());
        let threads = Arc::new(Mutex::new(Vec::new()));
        let seen = threads.clone();
        w.stats().observe_commits(Box::new(move |_, _| {
            let name = std::thread::current().name().map(str::to_owned);
            seen.lock().unwrap().push(name);
        }));
        (store, w, threads)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_appends_share_commits_and_are_all_durable() {
        let (store, w, _) = slow_writer(Duration::from_millis(5));
        let runs: Vec<RunId> = (0..500).map(|_| RunId::new()).collect();
        let tasks: Vec<_> = runs
            .iter()
            .map(|&run| {
                let w = w.clone();
                tokio::spawn(async move { w.append(batch(run, 0)).await })
            })
            .collect();
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        for run in &runs {
            assert_eq!(store.read_journal_raw(*run).unwrap().len(), 1);
        }
        let commits = w.stats().commits.load(Ordering::Relaxed);
        assert!(
            commits <= 25,
            "500 overlapping appends took {commits} commits of 5 ms"
        );
        assert_eq!(w.stats().records.load(Ordering::Relaxed), 500);
        assert_eq!(w.stats().batches.load(Ordering::Relaxed), 500);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_lone_append_commits_on_the_callers_thread() {
        let (store, w, threads) = slow_writer(Duration::ZERO);
        let run = RunId::new();
        for seq in 0..3 {
            w.append(batch(run, seq)).await.unwrap();
        }
        let me = std::thread::current().name().map(str::to_owned);
        assert_ne!(me.as_deref(), Some("magrathea-journal"));
        assert_eq!(*threads.lock().unwrap(), vec![me; 3]);
        assert_eq!(store.read_journal_raw(run).unwrap().len(), 3);
    }

    #[test]
    fn a_run_going_on_alone_or_a_quiet_journal_commits_alone_and_other_runs_queue() {
        let store = Arc::new(MemoryStore::new());
        let w = JournalWriter::start(store);
        let sh = &*w.shared;
        let (a, b) = (RunId::new(), RunId::new());
        let (ka, kb) = (run_key(&batch(a, 0)), run_key(&batch(b, 0)));
        assert!(
            sh.may_commit_alone(ka, 0),
            "before any commit the journal is quiet"
        );
        let _guard = sh.commit_lock.lock().unwrap();
        sh.commit(&[&batch(a, 0)]).unwrap();
        let end = sh.last_end.load(Ordering::Relaxed);
        let soon = end + 10_000;
        assert!(sh.may_commit_alone(ka, soon), "the same run goes on alone");
        assert!(
            !sh.may_commit_alone(kb, soon),
            "another run right after a commit queues"
        );
        let later = end + QUIET.as_nanos() as u64;
        assert!(
            sh.may_commit_alone(kb, later),
            "after a quiet while it commits alone"
        );
        sh.commit(&[&batch(a, 1), &batch(b, 1)]).unwrap();
        let end = sh.last_end.load(Ordering::Relaxed);
        assert!(
            !sh.may_commit_alone(ka, end + 2 * QUIET.as_nanos() as u64),
            "after a group of appends every append queues"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_append_that_overlaps_a_commit_goes_through_the_writer_thread() {
        let (store, w, threads) = slow_writer(Duration::ZERO);
        let run = RunId::new();
        let append = {
            // A commit in progress: the append cannot commit alone and must queue.
            let _in_progress = w.shared.commit_lock.lock().unwrap();
            let append = tokio::spawn({
                let w = w.clone();
                async move { w.append(batch(run, 0)).await }
            });
            while w.shared.queued.load(Ordering::SeqCst) == 0 {
                std::thread::yield_now();
            }
            append
        };
        append.await.unwrap().unwrap();
        assert_eq!(
            *threads.lock().unwrap(),
            vec![Some("magrathea-journal".to_owned())]
        );
        assert_eq!(store.read_journal_raw(run).unwrap().len(), 1);
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

    #[tokio::test]
    async fn health_follows_the_last_commit_and_a_probe_notices_the_disk_recovering() {
        use crate::store::{DiskFaults, Durability, FaultyBackend};
        let dir = tempfile::tempdir().unwrap();
        let faults = DiskFaults::new();
        let store =
            FaultyBackend::open_store(dir.path().join("j.redb"), Durability::Immediate, &faults)
                .unwrap();
        let w = JournalWriter::start(Arc::new(store));
        let run = RunId::new();
        w.append(batch(run, 0)).await.unwrap();
        assert_eq!(w.health(), JournalHealth::Healthy);

        faults.fail_next_writes(u32::MAX);
        w.append(batch(run, 1)).await.unwrap_err();
        assert_eq!(w.health(), JournalHealth::CommitFailed);
        w.probe().unwrap_err();
        assert_eq!(
            w.health(),
            JournalHealth::CommitFailed,
            "the disk still fails"
        );

        faults.clear();
        w.probe().unwrap();
        assert_eq!(w.health(), JournalHealth::Healthy);
        w.append(batch(run, 1)).await.unwrap();
    }
}
