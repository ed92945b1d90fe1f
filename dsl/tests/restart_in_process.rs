//! An engine stopped and built again on the same file in one process while handles of the
//! first one live — a `RunHandle` kept across the restart, as a test or a supervisor keeps it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use magrathea::prelude::*;

static EXECUTED: AtomicUsize = AtomicUsize::new(0);

#[task]
async fn mark(step: u32) -> Result<u32, TaskError> {
    EXECUTED.fetch_add(1, Ordering::SeqCst);
    Ok(step)
}

#[workflow]
async fn nap(ctx: Context, ms: u64) -> Result<u32, WorkflowError> {
    let first = ctx.task(mark, 1).await?;
    ctx.sleep(Duration::from_millis(ms)).await?;
    let second = ctx.task(mark, 2).await?;
    Ok(first + second)
}

#[tokio::test]
async fn a_stopped_engine_hands_its_file_to_the_next_while_its_handles_live() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let first = Engine::builder()
        .path(&path)
        .workflow(nap)
        .build()
        .await
        .unwrap();
    let run = first.start(nap, 1_000).await.unwrap();
    // Asleep: its first step is journaled, and its timer.
    let asleep = |journal: &[magrathea::Entry]| {
        journal
            .iter()
            .any(|e| matches!(e.record, magrathea::Record::TimerSet { .. }))
    };
    while !asleep(&first.journal(run.id()).unwrap()) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.stop(Duration::from_secs(5)).await;
    // Stopped, its handles still read the journal.
    let before = first.journal(run.id()).unwrap();
    assert!(!before.is_empty());

    // `first` and `run` live on: the new engine takes the file over.
    let second = Engine::builder()
        .path(&path)
        .workflow(nap)
        .build()
        .await
        .expect("the stopped engine lets go of its file");
    let err = first.journal(run.id()).unwrap_err();
    assert!(err.to_string().contains("MAG-ST003"), "{err}");
    let again = second.handle(nap, run.id()).unwrap();
    assert_eq!(again.result().await.unwrap(), 3);
    assert_eq!(
        EXECUTED.load(Ordering::SeqCst),
        2,
        "each task step ran once"
    );
    let journal = second.journal(run.id()).unwrap();
    assert_eq!(
        journal[..before.len()],
        before[..],
        "the journal went on from where it was"
    );
}

#[task]
async fn linger(ms: u64) -> Result<u64, TaskError> {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(ms)
}

#[workflow]
async fn slow(ctx: Context, ms: u64) -> Result<u64, WorkflowError> {
    Ok(ctx.task(linger, ms).await?)
}

async fn open(path: &std::path::Path) -> Engine {
    Engine::builder()
        .path(path)
        .workflow(slow)
        .build()
        .await
        .expect("the engine opens its file")
}

/// A second stop of an engine whose file another engine took over (a shutdown path that runs
/// twice) does not make it the file's holder again: the next engine takes the file from the
/// one that has it.
#[tokio::test]
async fn stopping_an_engine_again_after_its_file_was_taken_over_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let a = open(&path).await;
    a.stop(Duration::from_secs(5)).await;
    let b = open(&path).await;
    b.stop(Duration::from_secs(5)).await;
    a.stop(Duration::from_secs(5)).await;
    let c = open(&path).await;
    let run = c.start(slow, 1).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 1);
    drop((a, b));
}

/// The last handle of a stopped engine whose file was taken over goes after the new engine's
/// own last handle: the new engine, without handles, is still the one a build closes.
#[tokio::test]
async fn an_engine_without_handles_is_closed_for_the_next_after_an_older_one_goes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let a = open(&path).await;
    a.stop(Duration::from_secs(5)).await;
    let b = open(&path).await;
    let id = b.start(slow, 300).await.unwrap().id();
    drop(b);
    drop(a);
    let c = open(&path).await;
    let run = c.handle(slow, id).unwrap();
    assert_eq!(run.result().await.unwrap(), 300);
}
