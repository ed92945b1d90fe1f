//! Pausing and resuming runs through the engine: what a paused run holds, what it lets
//! finish, and that the pause survives a reopen of the store.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use magrathea_core::{
    ControlAck, DeliverError, Engine, EngineBuilder, Entry, MemoryStore, Record, RetryPolicy,
    RunId, RunStatus, StartRequest, TaskError, TaskOptions, TaskRegistration, WorkflowRegistration,
};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// A task that waits for a permit of `gate` (one per execution), counting its executions.
fn held_task(gate: Arc<Semaphore>, calls: Arc<AtomicU32>) -> TaskRegistration {
    TaskRegistration::new("held", TaskOptions::default(), move |v, _| {
        let gate = gate.clone();
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, Ordering::SeqCst);
            gate.acquire().await.expect("open").forget();
            Ok(v)
        }
    })
}

/// `two`: two `held` tasks in a row.
fn two_tasks() -> WorkflowRegistration {
    WorkflowRegistration::new("two", "1", |ctx, _| async move {
        let a = ctx.task("held", json!(1)).await?;
        let b = ctx.task("held", json!(2)).await?;
        Ok(json!([a, b]))
    })
}

fn builder(gate: &Arc<Semaphore>, calls: &Arc<AtomicU32>) -> EngineBuilder {
    Engine::builder()
        .task(held_task(gate.clone(), calls.clone()))
        .workflow(two_tasks())
}

/// Waits (polling the journal) until `pred` holds for it; a run that never gets there fails
/// the test after a minute rather than hanging it.
async fn until_journal(engine: &Engine, run: RunId, pred: impl Fn(&[Entry]) -> bool) {
    for _ in 0..6000 {
        if pred(&engine.journal(run).unwrap()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the journal never got there: {:#?}",
        engine.journal(run).unwrap()
    );
}

fn count(entries: &[Entry], type_name: &str) -> usize {
    entries
        .iter()
        .filter(|e| e.record.type_name() == type_name)
        .count()
}

#[tokio::test]
async fn a_running_task_finishes_while_paused_and_the_next_waits_for_the_resume() {
    let gate = Arc::new(Semaphore::new(0));
    let calls = Arc::new(AtomicU32::new(0));
    let engine = builder(&gate, &calls)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .await
        .unwrap();
    let run = engine
        .start(StartRequest::code("two", json!(null)))
        .await
        .unwrap();
    until_journal(&engine, run, |j| count(j, "TaskStartedRecord") == 1).await;
    let ack = engine
        .pause(run, "zaphod", Some("maintenance"))
        .await
        .unwrap();
    assert_eq!(ack, ControlAck::Paused);
    assert_eq!(engine.status(run).unwrap(), RunStatus::Paused);
    // Pausing again changes nothing.
    assert_eq!(
        engine.pause(run, "zaphod", None).await.unwrap(),
        ControlAck::AlreadyPaused
    );

    // The running task finishes and its result is journaled; the next one is not started.
    gate.add_permits(1);
    until_journal(&engine, run, |j| count(j, "TaskResultRecord") == 1).await;
    // Give a wrongly dispatched second task every chance to show up.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let journal = engine.journal(run).unwrap();
    assert_eq!(count(&journal, "TaskStartedRecord"), 1, "{journal:#?}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(engine.status(run).unwrap(), RunStatus::Paused);
    assert!(journal.iter().any(|e| e.record
        == Record::PauseRequested {
            by: "zaphod".into(),
            reason: Some("maintenance".into())
        }));

    assert_eq!(
        engine.unpause(run, "ford").await.unwrap(),
        ControlAck::Resumed
    );
    gate.add_permits(1);
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!([1, 2])));
    let journal = engine.journal(run).unwrap();
    let resumed = journal
        .iter()
        .position(|e| matches!(&e.record, Record::ResumeRequested { by } if by == "ford"))
        .expect("the resume is journaled");
    let second = journal
        .iter()
        .rposition(|e| e.record.type_name() == "TaskStartedRecord")
        .unwrap();
    assert!(resumed < second, "the second task starts after the resume");
}

#[tokio::test]
async fn wrong_states_are_refused_and_cancel_ends_a_paused_run_without_starting_what_it_held() {
    let gate = Arc::new(Semaphore::new(0));
    let calls = Arc::new(AtomicU32::new(0));
    let engine = builder(&gate, &calls)
        .store(Arc::new(MemoryStore::new()))
        .build()
        .await
        .unwrap();
    let run = engine
        .start(StartRequest::code("two", json!(null)))
        .await
        .unwrap();
    until_journal(&engine, run, |j| count(j, "TaskStartedRecord") == 1).await;
    // A run that is not paused cannot be resumed.
    let err = engine.unpause(run, "ford").await.unwrap_err();
    assert!(
        matches!(err, DeliverError::NotPaused(r, RunStatus::Running) if r == run),
        "{err}"
    );
    assert!(err.to_string().starts_with("[MAG-PS002]"), "{err}");

    engine.pause(run, "zaphod", None).await.unwrap();
    gate.add_permits(1);
    until_journal(&engine, run, |j| count(j, "TaskResultRecord") == 1).await;
    engine.cancel(run, "no longer needed").await.unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    // The task the run held never ran.
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // An ended run cannot be paused.
    let err = engine.pause(run, "zaphod", None).await.unwrap_err();
    assert!(
        matches!(err, DeliverError::NotPausable(r, RunStatus::Cancelled) if r == run),
        "{err}"
    );
    assert!(err.to_string().starts_with("[MAG-PS001]"), "{err}");
    // An unknown run is not found.
    let err = engine
        .pause(RunId::new(), "zaphod", None)
        .await
        .unwrap_err();
    assert!(matches!(err, DeliverError::RunNotFound(_)), "{err}");
}

#[tokio::test]
async fn a_timer_that_comes_due_while_paused_takes_effect_on_the_resume() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let engine = Engine::builder()
        .store(Arc::new(MemoryStore::new()))
        .task(TaskRegistration::new(
            "count",
            TaskOptions::default(),
            move |v, _| {
                let counted = counted.clone();
                async move {
                    counted.fetch_add(1, Ordering::SeqCst);
                    Ok(v)
                }
            },
        ))
        .workflow(WorkflowRegistration::new("nap", "1", |ctx, _| async move {
            ctx.sleep(Duration::from_millis(300)).await?;
            Ok(ctx.task("count", json!("after")).await?)
        }))
        .build()
        .await
        .unwrap();
    let run = engine
        .start(StartRequest::code("nap", json!(null)))
        .await
        .unwrap();
    engine.pause(run, "zaphod", None).await.unwrap();
    // The timer fires (journaled) while the run is paused; nothing follows it.
    until_journal(&engine, run, |j| count(j, "TimerFiredRecord") == 1).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let journal = engine.journal(run).unwrap();
    assert_eq!(count(&journal, "TaskStartedRecord"), 0, "{journal:#?}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    assert_eq!(engine.status(run).unwrap(), RunStatus::Paused);

    engine.unpause(run, "ford").await.unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!("after")));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_retry_whose_backoff_ends_while_paused_waits_for_the_resume() {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = calls.clone();
    let engine = Engine::builder()
        .store(Arc::new(MemoryStore::new()))
        .task(TaskRegistration::new(
            "flaky",
            TaskOptions::default().retry(RetryPolicy::fixed(2, Duration::from_millis(300))),
            move |_, _| {
                let counted = counted.clone();
                async move {
                    if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                        Err::<Value, _>(TaskError::retryable("first try fails"))
                    } else {
                        Ok(json!("ok"))
                    }
                }
            },
        ))
        .workflow(WorkflowRegistration::new(
            "retry",
            "1",
            |ctx, _| async move { Ok(ctx.task("flaky", json!(null)).await?) },
        ))
        .build()
        .await
        .unwrap();
    let run = engine
        .start(StartRequest::code("retry", json!(null)))
        .await
        .unwrap();
    until_journal(&engine, run, |j| count(j, "TaskResultRecord") == 1).await;
    engine.pause(run, "zaphod", None).await.unwrap();
    // Well past the backoff: the second attempt has not started.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(count(&engine.journal(run).unwrap(), "TaskStartedRecord"), 1);
    engine.unpause(run, "ford").await.unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_run_paused_with_a_task_in_flight_stays_paused_after_a_crash_and_resumes_after() {
    let store: Arc<dyn magrathea_core::Store> = Arc::new(MemoryStore::new());
    let gate = Arc::new(Semaphore::new(0));
    let calls = Arc::new(AtomicU32::new(0));

    // The process dies while the paused run's first task still runs.
    let first = runtime();
    let run = first.block_on({
        let (store, gate, calls) = (store.clone(), gate.clone(), calls.clone());
        async move {
            let engine = builder(&gate, &calls).store(store).build().await.unwrap();
            let run = engine
                .start(StartRequest::code("two", json!(null)))
                .await
                .unwrap();
            until_journal(&engine, run, |j| count(j, "TaskStartedRecord") == 1).await;
            // The attempt is journaled before its body runs: wait until it runs.
            for _ in 0..2000 {
                if calls.load(Ordering::SeqCst) > 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            engine.pause(run, "zaphod", None).await.unwrap();
            run
        }
    });
    first.shutdown_background();
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    let second = runtime();
    second.block_on(async move {
        let engine = builder(&gate, &calls).store(store).build().await.unwrap();
        // Recovery replays the run and leaves it paused: the interrupted attempt waits too.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(engine.status(run).unwrap(), RunStatus::Paused);
        let listed = engine
            .list_runs(&magrathea_core::RunFilter::default())
            .unwrap();
        assert_eq!(listed[0].status, RunStatus::Paused);
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            count(&engine.journal(run).unwrap(), "TaskRestartedRecord"),
            0
        );

        engine.unpause(run, "ford").await.unwrap();
        gate.add_permits(2);
        let view = engine.wait(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Done);
        assert_eq!(view.result, Some(json!([1, 2])));
        // The interrupted attempt ran again (on record), then the second task.
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(
            count(&engine.journal(run).unwrap(), "TaskRestartedRecord"),
            1
        );
    });
    second.shutdown_background();
}

/// Starts `workflow`, pauses it while its first `held` task runs, and lets that task finish:
/// what the code asks for next is held.
async fn paused_after_its_first_task(engine: &Engine, gate: &Semaphore, workflow: &str) -> RunId {
    let run = engine
        .start(StartRequest::code(workflow, json!(null)))
        .await
        .unwrap();
    until_journal(engine, run, |j| count(j, "TaskStartedRecord") == 1).await;
    engine.pause(run, "zaphod", None).await.unwrap();
    gate.add_permits(1);
    until_journal(engine, run, |j| count(j, "TaskResultRecord") == 1).await;
    run
}

/// The run's deadline passing while it is paused ends the pause as a cancel does: the task
/// the run held (asked for while paused) is cancelled without running, and the run ends
/// instead of staying RUNNING with its held step, which no resume could release.
#[tokio::test]
async fn a_deadline_that_passes_while_paused_ends_the_run_without_starting_what_it_held() {
    let gate = Arc::new(Semaphore::new(0));
    let calls = Arc::new(AtomicU32::new(0));
    let engine = Engine::builder()
        .task(held_task(gate.clone(), calls.clone()))
        .workflow(WorkflowRegistration::new(
            "hurried",
            "1",
            |ctx, _| async move {
                ctx.deadline(Duration::from_millis(600), "too slow");
                let a = ctx.task("held", json!(1)).await?;
                let b = ctx.task("held", json!(2)).await?;
                Ok(json!([a, b]))
            },
        ))
        .store(Arc::new(MemoryStore::new()))
        .build()
        .await
        .unwrap();
    let run = paused_after_its_first_task(&engine, &gate, "hurried").await;
    let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
        .await
        .expect("the deadline ends the paused run")
        .unwrap();
    assert!(view.status.is_terminal(), "{view:?}");
    assert_ne!(view.status, RunStatus::Done, "{view:?}");
    // The held task never ran, now or later.
    gate.add_permits(1);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let journal = engine.journal(run).unwrap();
    assert!(
        journal.iter().any(
            |e| matches!(&e.record, Record::CancelRequested { reason } if reason == "too slow")
        ),
        "{journal:#?}"
    );
    // It replays as it ran.
    engine.check_replay(journal).unwrap();
}

/// A sleep the code asks for while the run is paused counts from the resume: the run waits
/// its whole duration after it, not what was left of it from when the paused code asked.
#[tokio::test]
async fn a_sleep_asked_for_while_paused_counts_from_the_resume() {
    let gate = Arc::new(Semaphore::new(0));
    let calls = Arc::new(AtomicU32::new(0));
    let engine = Engine::builder()
        .task(held_task(gate.clone(), calls.clone()))
        .workflow(WorkflowRegistration::new("nap", "1", |ctx, _| async move {
            ctx.task("held", json!(1)).await?;
            ctx.sleep(Duration::from_millis(500)).await?;
            Ok(json!("rested"))
        }))
        .store(Arc::new(MemoryStore::new()))
        .build()
        .await
        .unwrap();
    let run = paused_after_its_first_task(&engine, &gate, "nap").await;
    // Paused for longer than the sleep.
    tokio::time::sleep(Duration::from_millis(800)).await;
    engine.unpause(run, "ford").await.unwrap();
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.result, Some(json!("rested")));
    let journal = engine.journal(run).unwrap();
    let resumed = journal
        .iter()
        .find(|e| matches!(e.record, Record::ResumeRequested { .. }))
        .unwrap()
        .at_ms;
    let fire_at = journal
        .iter()
        .find_map(|e| match e.record {
            Record::TimerSet { fire_at_ms, .. } => Some(fire_at_ms),
            _ => None,
        })
        .unwrap();
    assert!(
        fire_at >= resumed + 500,
        "the sleep fires {} ms after the resume, not 500",
        fire_at.saturating_sub(resumed)
    );
    engine.check_replay(journal).unwrap();
}
