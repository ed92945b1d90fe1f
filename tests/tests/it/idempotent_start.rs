//! Concurrent starts with idempotency keys: one key starts exactly one run however many callers
//! race for it, and distinct keys neither wait for each other nor stop sharing group commits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use magrathea::core::store::CommitBatch;
use magrathea::core::{RedbStore, RunSummary, Store, StoreError};
use magrathea::prelude::*;
use magrathea::{Durability, Record, RunFilter, StartOptions};

/// Waits on an approval gate, so that a run appends nothing after its start until answered.
#[workflow]
async fn parked(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    match ctx.approval("go on?").await {
        Approval::Approved { .. } => Ok(n),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

fn keyed(key: String) -> StartOptions {
    StartOptions {
        idempotency_key: Some(key),
        started_by: Some("idempotent_start".into()),
    }
}

/// Starts `parked` once per key, all at once; returns the ids in the keys' order.
async fn start_all(engine: &Engine, keys: Vec<String>) -> Vec<RunId> {
    let starts: Vec<_> = keys
        .into_iter()
        .enumerate()
        .map(|(n, key)| {
            let engine = engine.clone();
            tokio::spawn(async move { engine.start_with(parked, n as u64, keyed(key)).await })
        })
        .collect();
    let mut ids = Vec::new();
    for s in starts {
        ids.push(s.await.expect("start task").expect("start").id());
    }
    ids
}

fn start_records(engine: &Engine, run: RunId) -> usize {
    engine
        .journal(run)
        .unwrap()
        .iter()
        .filter(|e| matches!(e.record, Record::Start(_)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_concurrent_starts_with_one_key_start_one_run_and_all_get_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder()
        .path(dir.path().join("journal.redb"))
        .workflow(parked)
        .build()
        .await
        .unwrap();
    let ids = start_all(&engine, vec!["order-7".to_string(); 50]).await;

    let first = ids[0];
    assert!(
        ids.iter().all(|id| *id == first),
        "every caller gets the one run's id: {ids:?}"
    );
    let runs = engine.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1, "one run in the store: {runs:?}");
    assert_eq!(runs[0].run_id, first);
    assert_eq!(start_records(&engine, first), 1);
    let journal = engine.journal(first).unwrap();
    let Record::Start(start) = &journal[0].record else {
        panic!("the journal begins with its StartRecord");
    };
    assert_eq!(start.idempotency_key.as_deref(), Some("order-7"));
    let input = start.params.as_u64().expect("numeric input");

    // The run is a real one: answering its gate finishes it with the winner's input.
    engine
        .answer_gate(&format!("{first}-0"), GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(
        engine
            .handle(parked, first)
            .unwrap()
            .result()
            .await
            .unwrap(),
        input
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_concurrent_starts_with_distinct_keys_start_two_hundred_runs() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder()
        .path(dir.path().join("journal.redb"))
        .workflow(parked)
        .build()
        .await
        .unwrap();
    let keys: Vec<String> = (0..200).map(|i| format!("key-{i}")).collect();
    let ids = start_all(&engine, keys.clone()).await;

    let distinct: std::collections::HashSet<RunId> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), 200, "one run per key");
    let runs = engine.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 200);
    for (key, run) in keys.iter().zip(&ids) {
        let journal = engine.journal(*run).unwrap();
        let Record::Start(start) = &journal[0].record else {
            panic!("run {run} begins with its StartRecord");
        };
        assert_eq!(start.idempotency_key.as_ref(), Some(key), "run {run}");
        assert_eq!(start_records(&engine, *run), 1);
    }
    // Starting every key again starts nothing and returns the same runs.
    let again = start_all(&engine, keys).await;
    assert_eq!(again, ids);
    assert_eq!(engine.list_runs(&RunFilter::default()).unwrap().len(), 200);
}

/// A redb store whose first commit waits until `lookups` idempotency keys were looked up (or a
/// deadline passed), and that counts lookups made while that commit was held.
struct HeldFirstCommit {
    inner: RedbStore,
    lookups: usize,
    seen: Mutex<usize>,
    changed: Condvar,
    commits: AtomicUsize,
    /// Lookups counted when the first commit was let go.
    seen_when_released: AtomicUsize,
}

impl HeldFirstCommit {
    const DEADLINE: Duration = Duration::from_secs(10);
}

impl Store for HeldFirstCommit {
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        if self.commits.fetch_add(1, Ordering::SeqCst) == 0 {
            let deadline = Instant::now() + Self::DEADLINE;
            let mut seen = self.seen.lock().unwrap();
            while *seen < self.lookups && Instant::now() < deadline {
                seen = self
                    .changed
                    .wait_timeout(seen, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
            self.seen_when_released.store(*seen, Ordering::SeqCst);
        }
        self.inner.commit(batches)
    }
    fn maintain(&self) -> Result<(), StoreError> {
        self.inner.maintain()
    }
    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.inner.read_journal_raw(run_id)
    }
    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        self.inner.run_summary(run_id)
    }
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs(filter)
    }
    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.inner.active_runs()
    }
    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        let found = self.inner.find_idempotency_key(key);
        *self.seen.lock().unwrap() += 1;
        self.changed.notify_all();
        found
    }
}

/// With one lock for all keys, the second keyed start could not even look its key up before
/// the first start's commit returned, so keyed starts never shared a commit. The store holds
/// the first commit until all 50 keys were looked up: with per-key locks they all are, and
/// their starts then share commits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn starts_with_distinct_keys_do_not_wait_for_each_others_commits_and_share_them() {
    const STARTS: usize = 50;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(HeldFirstCommit {
        inner: RedbStore::open(dir.path().join("journal.redb"), Durability::Immediate).unwrap(),
        lookups: STARTS,
        seen: Mutex::new(0),
        changed: Condvar::new(),
        commits: AtomicUsize::new(0),
        seen_when_released: AtomicUsize::new(0),
    });
    let engine = Engine::builder()
        .store(store.clone())
        .workflow(parked)
        .build()
        .await
        .unwrap();
    let stats = engine.core().writer_stats();
    let (commits_before, batches_before) = (
        stats.commits.load(Ordering::SeqCst),
        stats.batches.load(Ordering::SeqCst),
    );
    let keys: Vec<String> = (0..STARTS).map(|i| format!("distinct-{i}")).collect();
    let ids = start_all(&engine, keys).await;
    let commits = stats.commits.load(Ordering::SeqCst) - commits_before;
    let batches = stats.batches.load(Ordering::SeqCst) - batches_before;

    assert_eq!(
        ids.iter().collect::<std::collections::HashSet<_>>().len(),
        STARTS
    );
    assert_eq!(
        store.seen_when_released.load(Ordering::SeqCst),
        STARTS,
        "every key was looked up while the first start's commit was in flight"
    );
    // Each run appends one batch (its start and its gate) until the gate is answered.
    assert_eq!(batches, STARTS as u64, "one batch per start");
    assert!(
        commits < STARTS as u64,
        "{STARTS} starts with distinct keys took {commits} commits: none was shared"
    );
}

/// A redb store whose first commit waits until the test lets it go, and that counts key
/// lookups.
struct GatedFirstCommit {
    inner: RedbStore,
    commits: AtomicUsize,
    lookups: AtomicUsize,
    /// (first commit entered, first commit released)
    gate: Mutex<(bool, bool)>,
    changed: Condvar,
}

impl GatedFirstCommit {
    fn release(&self) {
        self.gate.lock().unwrap().1 = true;
        self.changed.notify_all();
    }
}

impl Store for GatedFirstCommit {
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        if self.commits.fetch_add(1, Ordering::SeqCst) == 0 {
            let deadline = Instant::now() + Duration::from_secs(10);
            let mut gate = self.gate.lock().unwrap();
            gate.0 = true;
            self.changed.notify_all();
            while !gate.1 && Instant::now() < deadline {
                gate = self
                    .changed
                    .wait_timeout(gate, Duration::from_millis(100))
                    .unwrap()
                    .0;
            }
        }
        self.inner.commit(batches)
    }
    fn maintain(&self) -> Result<(), StoreError> {
        self.inner.maintain()
    }
    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.inner.read_journal_raw(run_id)
    }
    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        self.inner.run_summary(run_id)
    }
    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs(filter)
    }
    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.inner.active_runs()
    }
    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        self.lookups.fetch_add(1, Ordering::SeqCst);
        self.inner.find_idempotency_key(key)
    }
}

/// An HTTP client that hangs up drops its start mid-commit; the start is still committed, and
/// a retry with the same key must find it rather than start a second run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keyed_start_dropped_before_its_commit_still_holds_its_key_until_committed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(GatedFirstCommit {
        inner: RedbStore::open(dir.path().join("journal.redb"), Durability::Immediate).unwrap(),
        commits: AtomicUsize::new(0),
        lookups: AtomicUsize::new(0),
        gate: Mutex::new((false, false)),
        changed: Condvar::new(),
    });
    let engine = Engine::builder()
        .store(store.clone())
        .workflow(parked)
        .build()
        .await
        .unwrap();

    let first = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.start_with(parked, 1, keyed("k".into())).await })
    };
    magrathea_tests::wait_for("the first start's commit", Duration::from_secs(10), || {
        store.gate.lock().unwrap().0
    })
    .await;
    first.abort();
    assert!(first.await.unwrap_err().is_cancelled());

    let retry = {
        let engine = engine.clone();
        tokio::spawn(async move { engine.start_with(parked, 2, keyed("k".into())).await })
    };
    // A retry that does not wait for the key looks it up at once; give it the chance to, then
    // let the first commit go.
    let deadline = Instant::now() + Duration::from_millis(300);
    while store.lookups.load(Ordering::SeqCst) < 2 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    store.release();
    let retried = retry.await.unwrap().unwrap().id();

    let runs = engine.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1, "one run for the key: {runs:?}");
    assert_eq!(
        retried, runs[0].run_id,
        "the retry gets the first start's run"
    );
    let journal = engine.journal(retried).unwrap();
    let Record::Start(start) = &journal[0].record else {
        panic!("the journal begins with its StartRecord");
    };
    assert_eq!(
        start.params,
        serde_json::json!(1),
        "the first start's input"
    );
}
