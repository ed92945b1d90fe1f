//! Nothing a workflow does can wedge its run: panics, unreadable journals, missing or changed
//! workflows and missing front ends each leave the run visible (or untouched), never stranded.

use std::sync::Arc;
use std::time::Duration;

use magrathea_core::store::{CommitBatch, EncodedRecord};
use magrathea_core::testing::gate_spec;
use magrathea_core::{
    DeliverError, Engine, EngineBuilder, GateKind, GateSpec, InboxFilter, MemoryStore, Record,
    RunId, RunStatus, StartRequest, Store, TaskOptions, TaskRegistration, WorkflowError,
    WorkflowRegistration, codec,
};
use serde_json::{Value, json};

fn echo() -> TaskRegistration {
    TaskRegistration::new("echo", TaskOptions::default(), |v, _| async move { Ok(v) })
}

fn approval() -> GateSpec {
    gate_spec(GateKind::Approval, "go?")
}

/// A workflow `w` (version `version`) that runs a task, waits at a gate, then either panics
/// (`panics`) or returns.
fn gated(version: &str, panics: bool) -> WorkflowRegistration {
    WorkflowRegistration::new("w", version, move |ctx, _| async move {
        ctx.task("echo", json!(1)).await?;
        let _ = ctx.gate(approval()).await;
        if panics {
            panic!("the order has no lines");
        }
        Ok(json!("done"))
    })
}

async fn build(store: &Arc<MemoryStore>, f: impl FnOnce(EngineBuilder) -> EngineBuilder) -> Engine {
    f(Engine::builder().store(store.clone()).task(echo()))
        .build()
        .await
        .expect("the engine opens")
}

async fn answer_the_gate(engine: &Engine, run: RunId) {
    let item = engine
        .inbox(InboxFilter::Pending)
        .expect("the inbox reads")
        .into_iter()
        .find(|i| i.workflow_run_id == run)
        .expect("the run has a pending item");
    engine
        .answer_gate(&item.id, magrathea_core::GateAnswer::approve())
        .await
        .expect("the answer is journaled");
}

fn statuses(engine: &Engine, run: RunId) -> Vec<(RunStatus, Option<String>)> {
    engine
        .journal(run)
        .expect("the journal reads")
        .into_iter()
        .filter_map(|e| match e.record {
            Record::Status { status, reason } => Some((status, reason)),
            _ => None,
        })
        .collect()
}

/// Waits until the run has ended or is blocked with nobody driving it (never longer than 10 s).
async fn ended(engine: &Engine, run: RunId) -> magrathea_core::RunView {
    tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
        .await
        .expect("wait returns for an ended or blocked run")
        .expect("the run reads")
}

#[tokio::test]
async fn a_panic_in_workflow_code_blocks_the_run_and_fixed_code_unblocks_it() {
    let store = Arc::new(MemoryStore::new());
    let run = {
        let engine = build(&store, |b| b.workflow(gated("1", true))).await;
        let run = engine
            .start(StartRequest::code("w", json!({})))
            .await
            .unwrap();
        engine.wait_settled(run).await.unwrap();
        answer_the_gate(&engine, run).await;
        let view = ended(&engine, run).await;
        assert_eq!(view.status, RunStatus::Blocked);
        let reason = view.reason.unwrap_or_default();
        assert!(
            reason.starts_with("[MAG-WF001] workflow code panicked at "),
            "{reason}"
        );
        assert!(reason.contains("core/tests/blocked_runs.rs:"), "{reason}");
        assert!(reason.contains("the order has no lines"), "{reason}");
        // Later deliveries are refused with the reason, not lost in a dead driver.
        let err = engine.signal(run, "poke", json!(1)).await.unwrap_err();
        assert!(matches!(err, DeliverError::Blocked(..)), "{err}");
        run
    };
    // Reopened with the same broken code: still blocked, and the block is journaled once.
    {
        let engine = build(&store, |b| b.workflow(gated("1", true))).await;
        let view = ended(&engine, run).await;
        assert_eq!(view.status, RunStatus::Blocked);
        let blocked = statuses(&engine, run)
            .into_iter()
            .filter(|(s, _)| *s == RunStatus::Blocked)
            .count();
        assert_eq!(blocked, 1, "the same block is journaled once");
    }
    let engine = build(&store, |b| b.workflow(gated("1", false))).await;
    let view = ended(&engine, run).await;
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!("done")));
    let statuses = statuses(&engine, run);
    assert!(statuses.contains(&(RunStatus::Running, Some("unblocked".into()))));
}

#[tokio::test]
async fn a_workflow_that_panics_before_its_first_step_is_blocked_not_lost() {
    let store = Arc::new(MemoryStore::new());
    let wf = WorkflowRegistration::new("w", "1", |_ctx, input: Value| {
        if input.get("bad").is_some() {
            panic!("cannot even begin");
        }
        async move { Ok::<_, WorkflowError>(input) }
    });
    let engine = build(&store, |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("w", json!({"bad": true})))
        .await
        .expect("the run is journaled, blocked");
    let view = ended(&engine, run).await;
    assert_eq!(view.status, RunStatus::Blocked);
    assert!(
        view.reason
            .unwrap_or_default()
            .contains("cannot even begin")
    );
    // The engine goes on running other runs.
    let ok = engine
        .start(StartRequest::code("w", json!({})))
        .await
        .unwrap();
    assert_eq!(engine.wait(ok).await.unwrap().status, RunStatus::Done);
}

#[tokio::test]
async fn an_unreadable_journal_blocks_its_run_and_spares_the_others() {
    let store = Arc::new(MemoryStore::new());
    let (good, bad) = {
        let engine = build(&store, |b| b.workflow(gated("1", false))).await;
        let good = engine
            .start(StartRequest::code("w", json!({})))
            .await
            .unwrap();
        let bad = engine
            .start(StartRequest::code("w", json!({})))
            .await
            .unwrap();
        engine.wait_settled(good).await.unwrap();
        engine.wait_settled(bad).await.unwrap();
        (good, bad)
    };
    let next = store.read_journal_raw(bad).unwrap().len() as u64;
    store
        .commit(&[&CommitBatch {
            records: vec![EncodedRecord {
                run_id: bad,
                seq: next,
                bytes: vec![0xEE, 0x01, 0x02],
            }],
            ..CommitBatch::default()
        }])
        .expect("the corrupt record is written");

    let engine = build(&store, |b| b.workflow(gated("1", false))).await;
    let view = ended(&engine, bad).await;
    assert_eq!(view.status, RunStatus::Blocked);
    let reason = view.reason.unwrap_or_default();
    assert!(reason.starts_with("[MAG-RC001]"), "{reason}");
    // The inbox still lists the other run's item, and that run finishes.
    answer_the_gate(&engine, good).await;
    assert_eq!(engine.wait(good).await.unwrap().status, RunStatus::Done);
    // A cancellation ends the unreadable run.
    engine.cancel(bad, "restored elsewhere").await.unwrap();
    assert_eq!(engine.status(bad).unwrap(), RunStatus::Cancelled);
}

#[tokio::test]
async fn a_journal_without_its_start_record_blocks_its_run() {
    let store = Arc::new(MemoryStore::new());
    let run = RunId::new();
    let mut bytes = Vec::new();
    codec::encode(
        &Record::Status {
            status: RunStatus::Running,
            reason: None,
        },
        1,
        &mut bytes,
    );
    store
        .commit(&[&CommitBatch {
            records: vec![EncodedRecord {
                run_id: run,
                seq: 0,
                bytes,
            }],
            summaries: vec![magrathea_core::RunSummary {
                run_id: run,
                workflow_name: "w".into(),
                frontend: "code".into(),
                status: RunStatus::Running,
                created_ms: 1,
                updated_ms: 1,
                parent: None,
                scope: Default::default(),
            }],
            ..CommitBatch::default()
        }])
        .unwrap();
    let engine = build(&store, |b| b.workflow(gated("1", false))).await;
    let view = ended(&engine, run).await;
    assert_eq!(view.status, RunStatus::Blocked);
    assert!(view.reason.unwrap_or_default().contains("[MAG-RC001]"));
    drop(engine);
    // Reopened: still blocked, and the block is not journaled a second time.
    let engine = build(&store, |b| b.workflow(gated("1", false))).await;
    assert_eq!(ended(&engine, run).await.status, RunStatus::Blocked);
    let blocks = statuses(&engine, run)
        .into_iter()
        .filter(|(s, _)| *s == RunStatus::Blocked)
        .count();
    assert_eq!(blocks, 1, "the block is journaled once");
}

#[tokio::test]
async fn recovery_blocks_runs_of_another_version_or_an_unregistered_workflow() {
    let store = Arc::new(MemoryStore::new());
    let run = {
        let engine = build(&store, |b| b.workflow(gated("1", false))).await;
        let run = engine
            .start(StartRequest::code("w", json!({})))
            .await
            .unwrap();
        engine.wait_settled(run).await.unwrap();
        run
    };
    {
        let engine = build(&store, |b| b.workflow(gated("2", false))).await;
        let view = ended(&engine, run).await;
        assert_eq!(view.status, RunStatus::Blocked);
        assert!(view.reason.unwrap_or_default().starts_with("[MAG-ND003]"));
        // Its open gate takes no answer while it is blocked: not pending for anyone, still
        // listed among all items.
        let of_run = |filter| {
            engine
                .inbox(filter)
                .unwrap()
                .into_iter()
                .filter(|i| i.workflow_run_id == run)
                .count()
        };
        assert_eq!(of_run(InboxFilter::Pending), 0);
        assert_eq!(of_run(InboxFilter::All), 1);
    }
    {
        let other = WorkflowRegistration::new("other", "1", |_, v| async move { Ok(v) });
        let engine = build(&store, |b| b.workflow(other)).await;
        let view = ended(&engine, run).await;
        assert_eq!(view.status, RunStatus::Blocked);
        assert!(view.reason.unwrap_or_default().starts_with("[MAG-ND004]"));
    }
    // The right code again: the run goes on (once its replay has unblocked it, its gate is
    // pending again).
    let engine = build(&store, |b| b.workflow(gated("1", false))).await;
    engine
        .wait_until(run, |s| s == RunStatus::Waiting)
        .await
        .unwrap();
    answer_the_gate(&engine, run).await;
    assert_eq!(engine.wait(run).await.unwrap().status, RunStatus::Done);
}

#[tokio::test]
async fn a_process_without_the_code_front_end_leaves_code_runs_untouched() {
    let store = Arc::new(MemoryStore::new());
    let run = {
        let engine = build(&store, |b| b.workflow(gated("1", false))).await;
        let run = engine
            .start(StartRequest::code("w", json!({})))
            .await
            .unwrap();
        engine.wait_settled(run).await.unwrap();
        run
    };
    let before = store.read_journal(run).unwrap();
    let engine = build(&store, |b| b).await;
    let err = engine.cancel(run, "from a server").await.unwrap_err();
    assert!(
        matches!(err, DeliverError::Unsupported(r) if r == run),
        "{err}"
    );
    assert_eq!(engine.status(run).unwrap(), RunStatus::Waiting);
    assert_eq!(
        store.read_journal(run).unwrap(),
        before,
        "nothing was journaled"
    );
}

#[tokio::test]
async fn a_sleep_of_duration_max_saturates_instead_of_firing_at_once() {
    let store = Arc::new(MemoryStore::new());
    let wf = WorkflowRegistration::new("sleepy", "1", |ctx, _| async move {
        ctx.sleep(Duration::MAX).await?;
        Ok(json!("woke"))
    });
    let engine = build(&store, |b| b.workflow(wf)).await;
    let run = engine
        .start(StartRequest::code("sleepy", json!({})))
        .await
        .unwrap();
    let fire_at = loop {
        let set = engine
            .journal(run)
            .unwrap()
            .into_iter()
            .find_map(|e| match e.record {
                Record::TimerSet { fire_at_ms, .. } => Some(fire_at_ms),
                _ => None,
            });
        if let Some(at) = set {
            break at;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert_eq!(fire_at, u64::MAX);
    engine.cancel(run, "enough").await.unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled, "the timer never fired");
    let fired = engine
        .journal(run)
        .unwrap()
        .iter()
        .any(|e| matches!(e.record, Record::TimerFired { .. }));
    assert!(!fired);
}

/// A blocked run cancelled outright (its code cannot run) ends the task attempt its journal
/// shows in flight with a final `cancelled` result, as a cancel of a running run does: the
/// journal holds no started attempt without an end.
#[tokio::test]
async fn cancelling_a_blocked_run_ends_the_attempt_its_journal_shows_in_flight() {
    let store = Arc::new(MemoryStore::new());
    let run = {
        // An attempt that never ends in this engine: its process is gone when the next opens.
        let hangs = TaskRegistration::new("hangs", TaskOptions::default(), |_, _| async move {
            std::future::pending::<()>().await;
            Ok(Value::Null)
        });
        let w = WorkflowRegistration::new("w", "1", |ctx, _| async move {
            ctx.task("hangs", json!(1)).await?;
            Ok(json!("done"))
        });
        let engine = build(&store, |b| b.workflow(w).task(hangs)).await;
        let run = engine
            .start(StartRequest::code("w", json!({})))
            .await
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !engine
            .journal(run)
            .unwrap()
            .iter()
            .any(|e| matches!(e.record, Record::TaskStarted { .. }))
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the attempt never started"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        run
    };
    // Reopened without the workflow: the run is blocked, its attempt still open.
    let other = WorkflowRegistration::new("other", "1", |_, v| async move { Ok(v) });
    let engine = build(&store, |b| b.workflow(other)).await;
    assert_eq!(ended(&engine, run).await.status, RunStatus::Blocked);
    engine.cancel(run, "give up").await.unwrap();
    assert_eq!(ended(&engine, run).await.status, RunStatus::Cancelled);
    let tail: Vec<Record> = engine
        .journal(run)
        .unwrap()
        .into_iter()
        .map(|e| e.record)
        .skip_while(|r| !matches!(r, Record::CancelRequested { .. }))
        .collect();
    assert!(
        matches!(
            &tail[..],
            [
                Record::CancelRequested { .. },
                Record::TaskResult { step: 0, attempt: 1, outcome, error: Some(why), is_final: true, .. },
                Record::Status { status: RunStatus::Cancelled, .. },
            ] if outcome.as_str() == "cancelled" && why == "give up"
        ),
        "{tail:#?}"
    );
}
