//! A store whose commits fail on demand ([`FaultyStore`]): a failed commit surfaces as a clean
//! `[MAG-ST001]` error, applies nothing, and loses nothing that was acknowledged before it;
//! runs caught mid-flight re-read their journal and still finish with the right result.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use magrathea::core::store::FaultyStore;
use magrathea::core::{MemoryStore, Store};
use magrathea::prelude::*;
use magrathea::{Entry, InboxStatus, RunFilter};

#[task(retry(max_attempts = 3, backoff_ms = 5))]
async fn slow_add(input: (u64, u64)) -> Result<u64, TaskError> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    Ok(input.0 * 2 + input.1)
}

#[workflow]
async fn five_steps(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let mut sum = 0;
    for k in 0..5 {
        sum += ctx.task(slow_add, (n, k)).await?;
    }
    Ok(sum)
}

fn five_expected(n: u64) -> u64 {
    (0..5).map(|k| n * 2 + k).sum()
}

#[workflow]
async fn approve_then_add(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    match ctx.gate(Gate::approval("go?").into_spec()).await {
        GateOutcome::Answered(_) => Ok(ctx.task(slow_add, (n, 1)).await?),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

async fn engine_on_faulty() -> (Engine, Arc<AtomicU32>, Arc<dyn Store>) {
    let faulty = FaultyStore::new(MemoryStore::new());
    let trigger = faulty.trigger();
    let store: Arc<dyn Store> = Arc::new(faulty);
    let engine = Engine::builder()
        .store(store.clone())
        .workflow(five_steps)
        .workflow(approve_then_add)
        .task(slow_add)
        .build()
        .await
        .unwrap();
    (engine, trigger, store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_whose_commit_fails_is_an_error_and_no_run_exists() {
    let (engine, trigger, _) = engine_on_faulty().await;
    trigger.store(1, Ordering::SeqCst);
    let err = engine.start(five_steps, 1).await.unwrap_err().to_string();
    assert_eq!(trigger.load(Ordering::SeqCst), 0, "the failure was used");
    assert!(engine.list_runs(&RunFilter::default()).unwrap().is_empty());
    // The engine still works afterwards.
    let run = engine.start(five_steps, 1).await.unwrap().id();
    assert_eq!(
        engine
            .handle(five_steps, run)
            .unwrap()
            .result()
            .await
            .unwrap(),
        five_expected(1)
    );
    assert_eq!(engine.list_runs(&RunFilter::default()).unwrap().len(), 1);
    // Checked last, so that the checks above run even while this one fails.
    assert!(
        err.contains("[MAG-ST001]"),
        "a failed commit is reported as the store failure it is, got: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_answer_whose_commit_fails_leaves_the_gate_pending_and_a_later_answer_works() {
    let (engine, trigger, _) = engine_on_faulty().await;
    let run = engine.start(approve_then_add, 10).await.unwrap().id();
    assert_eq!(
        engine.wait_settled(run).await.unwrap().status,
        RunStatus::Waiting
    );
    let item = format!("{run}-0");
    trigger.store(1, Ordering::SeqCst);
    let err = engine
        .answer_gate(&item, GateAnswer::approve())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        engine.inbox_item(&item).unwrap().status,
        InboxStatus::Pending
    );
    assert!(
        !engine
            .journal(run)
            .unwrap()
            .iter()
            .any(|e| matches!(e.record, magrathea::Record::GateAnswered { .. })),
        "the failed answer left no trace"
    );
    let ack = engine
        .answer_gate(&item, GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(ack, magrathea::AnswerAck::Applied);
    let handle = engine.handle(approve_then_add, run).unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), handle.result());
    assert_eq!(out.await.expect("the run finishes").unwrap(), 21);
    // Checked last, so that the checks above run even while this one fails.
    assert!(
        err.contains("[MAG-ST001]"),
        "a failed commit is reported as the store failure it is, got: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_caught_by_failed_commits_finish_and_nothing_acknowledged_is_lost() {
    let (engine, trigger, store) = engine_on_faulty().await;
    let mut committed = engine.core().subscribe_journal();
    let mut runs = Vec::new();
    for n in 0..20 {
        runs.push((n, engine.start(five_steps, n).await.unwrap().id()));
    }
    let mut snapshots: Vec<HashMap<RunId, Vec<Entry>>> = Vec::new();
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(15)).await;
        snapshots.push(
            runs.iter()
                .map(|(_, r)| (*r, store.read_journal(*r).unwrap()))
                .collect(),
        );
        trigger.store(2, Ordering::SeqCst);
    }
    for (n, run) in &runs {
        let handle = engine.handle(five_steps, *run).unwrap();
        let out = tokio::time::timeout(Duration::from_secs(20), handle.result());
        assert_eq!(
            out.await.expect("every run finishes").unwrap(),
            five_expected(*n),
            "run {run}"
        );
    }
    assert_eq!(
        trigger.load(Ordering::SeqCst),
        0,
        "every armed failure was hit"
    );

    let finals: HashMap<RunId, Vec<Entry>> = runs
        .iter()
        .map(|(_, r)| (*r, store.read_journal(*r).unwrap()))
        .collect();
    for snapshot in &snapshots {
        for (run, before) in snapshot {
            let after = &finals[run];
            assert!(
                after.len() >= before.len() && after[..before.len()] == before[..],
                "run {run}: the journal before a failed commit is not a prefix of the final one"
            );
        }
    }
    let mut acknowledged = 0;
    while let Ok(update) = committed.try_recv() {
        for entry in update.entries.iter() {
            acknowledged += 1;
            let after = &finals[&update.run_id];
            assert_eq!(
                after.get(entry.seq as usize),
                Some(entry),
                "run {}: acknowledged record {} lost or rewritten",
                update.run_id,
                entry.seq
            );
        }
    }
    assert!(acknowledged > 0, "records were acknowledged");
    for journal in finals.values() {
        assert!(journal.windows(2).all(|w| w[0].seq + 1 == w[1].seq));
    }
}

/// Executions of [`big_output`].
static BIG_OUTPUT_CALLS: AtomicU32 = AtomicU32::new(0);

/// Returns 64 KiB of text: a result a nearly full disk cannot take.
#[task]
async fn big_output(_input: ()) -> Result<String, TaskError> {
    BIG_OUTPUT_CALLS.fetch_add(1, Ordering::SeqCst);
    Ok("a".repeat(64 << 10))
}

#[workflow]
async fn one_big_step(ctx: Context, _input: ()) -> Result<usize, WorkflowError> {
    Ok(ctx.task(big_output, ()).await?.len())
}

/// A disk with room for an empty commit but not for the result of the task in flight: the
/// engine does not take the run up again (running the task again each time and counting the
/// executions against `max_claim_attempts`, which would end it `[MAG-EN007]`) until a commit
/// of that size fits, whatever other runs commit meanwhile; then the task runs once more and
/// the run finishes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waits_for_room_for_its_result_not_only_for_an_empty_commit() {
    let faulty = FaultyStore::new(MemoryStore::new());
    let room = faulty.room();
    let engine = Engine::builder()
        .store(Arc::new(faulty))
        .workflow(one_big_step)
        .workflow(five_steps)
        .task(big_output)
        .task(slow_add)
        .build()
        .await
        .unwrap();
    room.store(4 << 10, Ordering::SeqCst);
    let run = engine.start(one_big_step, ()).await.unwrap().id();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    // The result's commit failed once the run has left memory (handed back to wait).
    while BIG_OUTPUT_CALLS.load(Ordering::SeqCst) == 0 || engine.core().runs_in_memory() > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the result never failed to commit"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Another run commits small records meanwhile: the store works, but not for this result.
    let other = engine.start(five_steps, 3).await.unwrap().id();
    let done = engine
        .handle(five_steps, other)
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(done, five_expected(3));
    // Long enough for several probes (every 200 ms at first, doubling).
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        BIG_OUTPUT_CALLS.load(Ordering::SeqCst),
        1,
        "the run was taken up again while its result could not fit"
    );
    assert_eq!(engine.status(run).unwrap(), RunStatus::Running);
    room.store(u64::MAX, Ordering::SeqCst);
    let view = tokio::time::timeout(Duration::from_secs(60), engine.wait(run))
        .await
        .expect("the run goes on once there is room")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(serde_json::json!(64 << 10)));
    assert_eq!(BIG_OUTPUT_CALLS.load(Ordering::SeqCst), 2);
}
