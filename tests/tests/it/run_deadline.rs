//! A run's deadline (`WorkflowContext::deadline`): a durable timer whose firing cancels the
//! run's pending steps with a kind the code can tell from an operator's cancel, journaled
//! before anything reacts to it; steps created afterwards still run.

use std::time::Duration;

use magrathea::core::TimerPurpose;
use magrathea::prelude::*;
use magrathea::{CancelAck, Record};

#[task]
async fn tidy(what: String) -> Result<String, TaskError> {
    Ok(format!("tidied {what}"))
}

#[workflow]
async fn slow(ctx: Context, deadline_ms: u64) -> Result<String, WorkflowError> {
    ctx.deadline(Duration::from_millis(deadline_ms), "too slow");
    match ctx.sleep(Duration::from_secs(7 * 24 * 3600)).await {
        Ok(()) => Ok("slept a week".into()),
        Err(e) if ctx.deadline_exceeded() => {
            // A step made after the deadline runs normally.
            let done = ctx.task(tidy, "desk".into()).await?;
            Err(WorkflowError::failed(format!("deadline ({e}); {done}")))
        }
        Err(e) => Err(WorkflowError::cancelled(format!("operator: {e}"))),
    }
}

async fn engine(dir: &tempfile::TempDir) -> Engine {
    Engine::builder()
        .path(dir.path().join("journal.redb"))
        .workflow(slow)
        .task(tidy)
        .build()
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_preempts_a_wait_and_the_code_sees_it_as_a_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir).await;
    let run = engine.start(slow, 100).await.unwrap().id();
    let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(view.status, RunStatus::Failed, "{view:?}");
    let reason = view.reason.unwrap_or_default();
    assert!(reason.contains("too slow"), "{reason}");
    assert!(reason.contains("tidied desk"), "{reason}");
    let journal = engine.journal(run).unwrap();
    let kinds: Vec<&str> = journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TimerSet {
                purpose: TimerPurpose::Deadline,
                ..
            } => Some("deadline set"),
            Record::TimerFired { step: 0 } => Some("deadline fired"),
            Record::CancelRequested { .. } => Some("cancel"),
            Record::TaskStarted { .. } => Some("tidy"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["deadline set", "deadline fired", "cancel", "tidy"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operators_cancel_is_not_a_deadline() {
    let dir = tempfile::tempdir().unwrap();
    let engine = engine(&dir).await;
    let run = engine.start(slow, 3_600_000).await.unwrap().id();
    magrathea_tests::wait_for("the sleep to be journaled", Duration::from_secs(5), || {
        engine.journal(run).is_ok_and(|j| {
            j.iter().any(|e| {
                matches!(
                    e.record,
                    Record::TimerSet {
                        purpose: TimerPurpose::Sleep,
                        ..
                    }
                )
            })
        })
    })
    .await;
    assert_eq!(
        engine.cancel(run, "changed my mind").await.unwrap(),
        CancelAck::Requested
    );
    let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
        .await
        .expect("the run ends")
        .unwrap();
    assert_eq!(view.status, RunStatus::Cancelled, "{view:?}");
    assert!(view.reason.unwrap_or_default().starts_with("operator:"));
}
