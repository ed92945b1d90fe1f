//! Cancellation of a run waiting on a week-long durable sleep: the workflow sees the
//! cancellation as an error, cleans up with a task, and ends CANCELLED.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{CancelAck, Record};

static CLEANUPS: AtomicU32 = AtomicU32::new(0);

#[task]
async fn cleanup(what: String) -> Result<String, TaskError> {
    CLEANUPS.fetch_add(1, Ordering::SeqCst);
    Ok(format!("cleaned {what}"))
}

#[workflow]
async fn week_sleeper(ctx: Context, name: String) -> Result<String, WorkflowError> {
    match ctx.sleep(Duration::from_secs(7 * 24 * 3600)).await {
        Ok(()) => Ok("slept a week".into()),
        Err(e) if e.is_cancelled() => {
            let done = ctx.task(cleanup, name).await?;
            Err(WorkflowError::cancelled(format!("{done} after: {e}")))
        }
        Err(e) => Err(e.into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_week_long_sleep_runs_its_cleanup_and_ends_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder()
        .path(dir.path().join("journal.redb"))
        .workflow(week_sleeper)
        .task(cleanup)
        .build()
        .await
        .unwrap();
    let run = engine.start(week_sleeper, "tmp".into()).await.unwrap().id();
    magrathea_tests::wait_for("the sleep to be journaled", Duration::from_secs(5), || {
        engine.journal(run).is_ok_and(|j| {
            j.iter()
                .any(|e| matches!(e.record, Record::TimerSet { .. }))
        })
    })
    .await;
    let before = CLEANUPS.load(Ordering::SeqCst);
    assert_eq!(
        engine.cancel(run, "user changed their mind").await.unwrap(),
        CancelAck::Requested
    );
    let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(view.status, RunStatus::Cancelled);
    let reason = view.reason.unwrap_or_default();
    assert!(reason.contains("cleaned tmp"), "{reason}");
    assert!(reason.contains("user changed their mind"), "{reason}");
    assert_eq!(CLEANUPS.load(Ordering::SeqCst), before + 1);

    let journal = engine.journal(run).unwrap();
    let cancel_at = journal
        .iter()
        .position(|e| matches!(&e.record, Record::CancelRequested { reason } if reason == "user changed their mind"))
        .expect("a CancelRequestedRecord");
    let cleanup_at = journal
        .iter()
        .position(|e| matches!(&e.record, Record::TaskStarted { task, .. } if task == "cleanup"))
        .expect("the cleanup task was journaled");
    assert!(
        cancel_at < cleanup_at,
        "cleanup runs after the cancellation"
    );
    assert!(
        !journal
            .iter()
            .any(|e| matches!(e.record, Record::TimerFired { .. })),
        "the week-long timer never fired"
    );
    assert!(matches!(
        journal.last().unwrap().record,
        Record::Status {
            status: RunStatus::Cancelled,
            ..
        }
    ));
    assert_eq!(
        engine.cancel(run, "again").await.unwrap(),
        CancelAck::AlreadyFinished
    );

    let unknown = RunId::new();
    let err = engine.cancel(unknown, "who?").await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains(&unknown.to_string()), "names the run: {msg}");
    assert!(msg.contains("[MAG-RN001]"), "{msg}");
}
