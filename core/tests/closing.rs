//! An engine whose last handle was dropped goes on with its runs in memory until they are
//! idle; an engine built on the same file in the same process closes it (its runs leave memory,
//! a running task is aborted), waits for the file, and carries the runs on.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use magrathea_core::{
    Durability, Engine, EngineBuilder, Record, RedbStore, RunId, RunStatus, StartRequest,
    TaskOptions, TaskRegistration, WorkflowError, WorkflowRegistration,
};
use serde_json::json;

/// An engine on `path` running `sleepy`: `first`, a 500 ms durable sleep, then `second`; each
/// task counts its executions.
fn sleepy(path: &Path, first: &Arc<AtomicU32>, second: &Arc<AtomicU32>) -> EngineBuilder {
    Engine::builder()
        .path(path)
        .workflow(WorkflowRegistration::new(
            "sleepy",
            "",
            |ctx, _| async move {
                let a = ctx.task("first", json!(1)).await?;
                ctx.sleep(Duration::from_millis(500)).await?;
                let b = ctx.task("second", json!(2)).await?;
                Ok::<_, WorkflowError>(json!([a, b]))
            },
        ))
        .task(counting("first", first.clone(), Duration::ZERO))
        .task(counting("second", second.clone(), Duration::ZERO))
}

/// An engine of [`sleepy`] with one run of it started.
async fn start_sleepy(
    path: &Path,
    first: &Arc<AtomicU32>,
    second: &Arc<AtomicU32>,
) -> (Engine, RunId) {
    let engine = sleepy(path, first, second).build().await.unwrap();
    let run = engine
        .start(StartRequest::code("sleepy", json!(null)))
        .await
        .unwrap();
    (engine, run)
}

/// A task that counts its executions; the first one takes `first_takes`.
fn counting(name: &str, runs: Arc<AtomicU32>, first_takes: Duration) -> TaskRegistration {
    TaskRegistration::new(name, TaskOptions::default(), move |v, _| {
        let runs = runs.clone();
        async move {
            if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                tokio::time::sleep(first_takes).await;
            }
            Ok(v)
        }
    })
}

/// Waits until the run finishes on `engine`; its view, which says `DONE`.
async fn done_on(engine: &Engine, run: RunId) -> magrathea_core::RunView {
    let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
        .await
        .expect("the run finishes within 10 s")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    view
}

/// Waits until the run's journal holds a record `is` accepts.
async fn until_journaled(engine: &Engine, run: RunId, is: impl Fn(&Record) -> bool) {
    tokio::time::timeout(Duration::from_secs(10), async {
        while !engine.journal(run).unwrap().iter().any(|e| is(&e.record)) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the record is journaled within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_engine_opens_the_file_at_once_after_the_last_handle_of_a_sleeping_run_drops() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let (first, second) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (engine, run) = start_sleepy(&path, &first, &second).await;
    until_journaled(&engine, run, |r| matches!(r, Record::TimerSet { .. })).await;
    let weak = engine.downgrade();
    drop(engine);
    // What the engine's own parts hold (a tool of a run) still reaches it while it runs.
    let reached = weak.upgrade().expect("the engine still drives the run");
    drop(reached);

    // No retrying: the build itself waits for the closing engine to let go of the file.
    let engine = sleepy(&path, &first, &second)
        .build()
        .await
        .expect("the file of a dropped engine opens again");
    let view = done_on(&engine, run).await;
    assert_eq!(view.result, Some(json!([1, 2])));
    assert_eq!(
        first.load(Ordering::SeqCst),
        1,
        "a finished task never runs again"
    );
    assert_eq!(second.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_running_when_the_last_handle_drops_runs_again_on_the_next_engine() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let runs = Arc::new(AtomicU32::new(0));
    // The first execution would take a minute: the dropped engine must not wait for it.
    let builder = || {
        Engine::builder()
            .path(&path)
            .workflow(WorkflowRegistration::new("slow", "", |ctx, _| async move {
                let out = ctx.task("slow", json!("done")).await?;
                Ok::<_, WorkflowError>(out)
            }))
            .task(counting("slow", runs.clone(), Duration::from_secs(60)))
    };

    let engine = builder().build().await.unwrap();
    let run = engine
        .start(StartRequest::code("slow", json!(null)))
        .await
        .unwrap();
    until_journaled(&engine, run, |r| matches!(r, Record::TaskStarted { .. })).await;
    while runs.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(engine);

    let engine = builder()
        .build()
        .await
        .expect("the file opens while the aborted attempt's minute is not over");
    let view = done_on(&engine, run).await;
    assert_eq!(view.result, Some(json!("done")));
    assert_eq!(
        runs.load(Ordering::SeqCst),
        2,
        "the aborted attempt ran again, once"
    );
    // As after a crash, the second execution is journaled before it runs.
    let restarted = engine
        .journal(run)
        .unwrap()
        .iter()
        .filter(|e| matches!(e.record, Record::TaskRestarted { .. }))
        .count();
    assert_eq!(restarted, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_new_engine_the_runs_of_a_dropped_one_go_on_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let (first, second) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
    let (engine, run) = start_sleepy(&path, &first, &second).await;
    drop(engine);
    // The sleep ends, the last task runs and the run ends with nobody holding the engine,
    // which then lets go of the file (a plain open of the store closes no engine).
    tokio::time::timeout(Duration::from_secs(10), async {
        while RedbStore::open(&path, Durability::Immediate).is_err() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the run goes on to its end, and the engine lets go of the file");
    let engine = sleepy(&path, &first, &second).build().await.unwrap();
    done_on(&engine, run).await;
    assert_eq!(
        (first.load(Ordering::SeqCst), second.load(Ordering::SeqCst)),
        (1, 1)
    );
}

#[tokio::test]
async fn a_second_engine_on_a_file_an_open_engine_holds_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let engine = Engine::builder().path(&path).build().await.unwrap();
    let second = Engine::builder().path(&path).build().await;
    let err = second.expect_err("the file is in use").to_string();
    assert!(err.contains("[MAG-ST002]"), "{err}");
    // A clone is another handle: dropping it closes nothing.
    let clone = engine.clone();
    drop(clone);
    let err = Engine::builder()
        .path(&path)
        .build()
        .await
        .expect_err("the first engine is still open")
        .to_string();
    assert!(err.contains("[MAG-ST002]"), "{err}");
    drop(engine);
    Engine::builder()
        .path(&path)
        .build()
        .await
        .expect("open once the last handle is gone");
}
