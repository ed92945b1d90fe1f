//! Commits that fail inside redb, on the real file: I/O errors injected below redb by a
//! [`FaultyBackend`]. A failed group commit answers every waiter with the error and applies
//! nothing; once the disk works again the store heals itself (redb refuses a database that saw
//! an I/O error until it is reopened); a failed fold of the journal log loses nothing.

use std::error::Error as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use magrathea_core::store::{CommitBatch, DiskFaults, EncodedRecord, FaultyBackend};
use magrathea_core::writer::JournalWriter;
use magrathea_core::{
    Durability, Engine, RedbStore, RunId, RunStatus, StartRequest, Store, StoreError, TaskOptions,
    TaskRegistration, WorkflowRegistration,
};
use serde_json::json;
use tokio::sync::Notify;

fn batch(run: RunId, seq: u64) -> CommitBatch {
    CommitBatch {
        records: vec![EncodedRecord {
            run_id: run,
            seq,
            bytes: vec![seq as u8; 4],
        }],
        ..Default::default()
    }
}

fn seqs(store: &dyn Store, run: RunId) -> Vec<u64> {
    let rows = store.read_journal_raw(run).unwrap();
    rows.into_iter().map(|(seq, _)| seq).collect()
}

/// The error is the store failure it is, and its source is the injected `std::io::Error`.
fn assert_injected_io_failure(err: &StoreError) {
    assert!(err.to_string().starts_with("[MAG-ST001]"), "{err}");
    let io = err
        .source()
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .unwrap_or_else(|| panic!("the source of {err} is a std::io::Error"));
    assert!(io.to_string().starts_with("injected"), "{io}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_commit_failing_inside_redb_answers_every_waiter_and_applies_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let faults = DiskFaults::new();
    let store = Arc::new(FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap());
    let writer = JournalWriter::start(store.clone());

    // A lone append that stays in its commit (in redb's fsync) while the others queue behind it.
    faults.hold_next_sync();
    let first = RunId::new();
    let first_append = tokio::spawn({
        let writer = writer.clone();
        async move { writer.append(batch(first, 0)).await }
    });
    while !faults.is_holding() {
        tokio::task::yield_now().await;
    }
    // Polled once each, so each is queued for the writer thread before the commit ends: they
    // form one group.
    let group: Vec<RunId> = (0..64).map(|_| RunId::new()).collect();
    let mut waiters: Vec<_> = group
        .iter()
        .map(|&run| Box::pin(writer.append(batch(run, 0))))
        .collect();
    for waiter in &mut waiters {
        assert!(
            futures::poll!(waiter.as_mut()).is_pending(),
            "queued behind the commit in progress"
        );
    }
    // The held commit has written everything; only its fsync is left. The group's commit then
    // fails at its first write, inside redb.
    faults.fail_next_writes(u32::MAX);
    faults.release();
    first_append.await.unwrap().unwrap();
    let mut results = Vec::new();
    for waiter in waiters {
        results.push(waiter.await);
    }
    assert!(faults.injected() > 0, "the fault was hit");
    for result in &results {
        match result {
            Ok(()) => panic!("an append was acknowledged although its commit failed"),
            Err(e) => assert_injected_io_failure(e),
        }
    }

    faults.clear();
    let later = RunId::new();
    writer.append(batch(later, 0)).await.unwrap();
    assert_eq!(seqs(&*store, first), [0], "acknowledged before the failure");
    assert_eq!(seqs(&*store, later), [0], "committed after the disk healed");
    for run in &group {
        assert!(
            seqs(&*store, *run).is_empty(),
            "the failed commit left {run}"
        );
    }
    writer.join();
    drop(store);

    // The file agrees after a reopen.
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(seqs(&store, first), [0]);
    assert_eq!(seqs(&store, later), [0]);
    assert!(group.iter().all(|run| seqs(&store, *run).is_empty()));
}

/// Enough records in one commit that the next [`Store::maintain`] folds them.
const FOLD_THRESHOLD: u64 = 32 * 1024;

fn many(run: RunId, seqs: std::ops::Range<u64>) -> CommitBatch {
    CommitBatch {
        records: seqs
            .map(|seq| EncodedRecord {
                run_id: run,
                seq,
                bytes: seq.to_le_bytes().to_vec(),
            })
            .collect(),
        ..Default::default()
    }
}

fn assert_whole(store: &dyn Store, run: RunId, n: u64) {
    let rows = store.read_journal_raw(run).unwrap();
    assert_eq!(rows.len() as u64, n, "every record is readable");
    for (i, (seq, bytes)) in rows.iter().enumerate() {
        assert_eq!(*seq, i as u64);
        assert_eq!(bytes, &seq.to_le_bytes().to_vec(), "record {seq}");
    }
}

#[test]
fn a_fold_failing_in_its_fsync_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let faults = DiskFaults::new();
    let run = RunId::new();
    {
        let store = FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap();
        store.commit(&[&many(run, 0..FOLD_THRESHOLD)]).unwrap();
        assert_eq!(store.unfolded_records() as u64, FOLD_THRESHOLD);
        faults.fail_next_syncs(1);
        store.maintain().unwrap();
        let err = store.settle_fold().expect_err("the fold's commit fails");
        assert_injected_io_failure(&err);
        // The disk works again; the next read reopens the database and sees everything.
        assert_whole(&store, run, FOLD_THRESHOLD);
        store
            .commit(&[&many(run, FOLD_THRESHOLD..FOLD_THRESHOLD + 1)])
            .unwrap();
        assert_whole(&store, run, FOLD_THRESHOLD + 1);
    }
    let store = RedbStore::open(&path, Durability::Immediate).unwrap();
    assert_eq!(store.unfolded_records(), 0, "the open folded the log");
    assert_whole(&store, run, FOLD_THRESHOLD + 1);
}

#[test]
fn a_fold_failing_while_the_disk_is_down_loses_nothing_and_a_reopen_folds_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("j.redb");
    let faults = DiskFaults::new();
    let run = RunId::new();
    {
        let store = FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap();
        store.commit(&[&many(run, 0..FOLD_THRESHOLD)]).unwrap();
        faults.fail_next_writes(u32::MAX);
        store.maintain().unwrap();
        let err = store.settle_fold().expect_err("the fold's commit fails");
        assert_injected_io_failure(&err);
        // While the disk is down a read fails cleanly: an error, never a partial journal.
        let err = store.read_journal_raw(run).expect_err("the disk is down");
        assert!(err.to_string().starts_with("[MAG-ST001]"), "{err}");
        let err = store.commit(&[&many(run, FOLD_THRESHOLD..FOLD_THRESHOLD + 1)]);
        assert!(err.is_err(), "no commit while the disk is down");
        // Dropped with the disk still down, like a process that stops after the failure.
    }
    faults.clear();
    let store = FaultyBackend::open_store(&path, Durability::Immediate, &faults).unwrap();
    assert_eq!(store.unfolded_records(), 0, "the open folded the log");
    assert_whole(&store, run, FOLD_THRESHOLD);
}

/// An engine on a redb file behind `faults` with the workflow `doubler`, whose one task
/// (`double`) waits in its first attempt until released, and the run started with 21.
struct Doubler {
    _dir: tempfile::TempDir,
    engine: Engine,
    run: RunId,
    /// Attempts of the task so far.
    calls: Arc<AtomicU32>,
    /// Released once the first attempt runs.
    running: Arc<Notify>,
    /// Ends the first attempt.
    release: Arc<Notify>,
}

impl Doubler {
    async fn start(faults: &DiskFaults) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store =
            FaultyBackend::open_store(dir.path().join("j.redb"), Durability::Immediate, faults)
                .unwrap();
        let calls = Arc::new(AtomicU32::new(0));
        let (running, release) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
        let task = {
            let (calls, running, release) = (calls.clone(), running.clone(), release.clone());
            TaskRegistration::new("double", TaskOptions::default(), move |v, _| {
                let (calls, running, release) = (calls.clone(), running.clone(), release.clone());
                async move {
                    // The first attempt waits for the test, which breaks the disk meanwhile.
                    if calls.fetch_add(1, Ordering::SeqCst) == 0 {
                        running.notify_one();
                        release.notified().await;
                    }
                    Ok(json!(v.as_u64().unwrap_or(0) * 2))
                }
            })
        };
        let wf = WorkflowRegistration::new("doubler", "1", |ctx, input| async move {
            let doubled = ctx.task("double", input).await?;
            Ok(json!({ "doubled": doubled }))
        });
        let engine = Engine::builder()
            .store(Arc::new(store))
            .task(task)
            .workflow(wf)
            .build()
            .await
            .unwrap();
        let run = engine
            .start(StartRequest::code("doubler", json!(21)))
            .await
            .unwrap();
        Self {
            _dir: dir,
            engine,
            run,
            calls,
            running,
            release,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_commit_fails_inside_redb_is_recovered_and_finishes() {
    let faults = DiskFaults::new();
    let d = Doubler::start(&faults).await;
    d.running.notified().await;
    // The commit of the task's result is the next write: it fails inside redb, once.
    faults.fail_next_writes(1);
    d.release.notify_one();
    let view = d.engine.wait(d.run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!({ "doubled": 42 })));
    assert_eq!(faults.injected(), 1, "the fault was hit");
    assert_eq!(
        d.calls.load(Ordering::SeqCst),
        2,
        "the result's commit failed, so the recovered run ran the task again"
    );
}

/// A full disk for a while: every write fails inside redb until the test frees it. The run in
/// flight cannot journal its task's result, nor its recovery its restart; nothing of it is
/// lost, and once the disk works again the run goes on by itself, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_commits_fail_for_a_while_goes_on_once_the_disk_recovers() {
    let faults = DiskFaults::new();
    let d = Doubler::start(&faults).await;
    d.running.notified().await;
    faults.fail_next_writes(u32::MAX);
    d.release.notify_one();
    // Several recoveries fail while the disk is full (the first retries come within a second).
    while faults.injected() < 3 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    assert_eq!(d.engine.status(d.run).unwrap(), RunStatus::Running);
    faults.clear();
    let view = tokio::time::timeout(std::time::Duration::from_secs(60), d.engine.wait(d.run))
        .await
        .expect("the run goes on once the disk works again")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!({ "doubled": 42 })));
    assert_eq!(d.calls.load(Ordering::SeqCst), 2, "the task ran again once");
}
