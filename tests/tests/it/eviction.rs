//! A week-long sleep holds no memory: suspended runs are evicted, and a signal, gate answer or
//! cancellation sent to an evicted run replays it and acts.

use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{AnswerAck, CancelAck, Record};
use magrathea_tests::wait_for;
use serde_json::json;

/// Waits a week, for a `wake` signal, or for an approval, whichever is journaled first.
#[workflow]
async fn dormant(ctx: Context, _n: u64) -> Result<String, WorkflowError> {
    let week = ctx
        .sleep(Duration::from_secs(7 * 24 * 3600))
        .map(|r| r.map(|()| "slept".to_string()));
    let wake = ctx
        .signal::<String>("wake")
        .map(|r| r.map(|p| format!("woken by {p}")));
    let gate = ctx
        .gate(Gate::approval("release?").into_spec())
        .map(|g| match g {
            GateOutcome::Answered(a) => Ok(format!("released {}", a.value["approved"])),
            GateOutcome::TimedOut => Ok("gate timed out".to_string()),
            GateOutcome::Cancelled(r) => Err(WorkflowError::cancelled(r)),
        });
    let week = week.map(|r| r.map_err(WorkflowError::from));
    let wake = wake.map(|r| r.map_err(WorkflowError::from));
    let (_, out) = ctx.select(vec![week, wake, gate]).await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_week_long_sleeps_leave_memory_and_still_answer() {
    let engine = Engine::builder()
        .in_memory()
        .evict_after(Duration::from_millis(50))
        .workflow(dormant)
        .build()
        .await
        .unwrap();
    let mut runs = Vec::new();
    for n in 0..1000 {
        runs.push(engine.start(dormant, n).await.unwrap().id());
    }
    wait_for("every run to be evicted", Duration::from_secs(30), || {
        engine.core().runs_in_memory() == 0
    })
    .await;
    for run in &runs {
        assert_eq!(engine.status(*run).unwrap(), RunStatus::Waiting);
    }

    engine
        .signal(runs[0], "wake", json!("a signal"))
        .await
        .unwrap();
    let ack = engine
        .answer_gate(&format!("{}-2", runs[1]), GateAnswer::approve())
        .await
        .unwrap();
    assert_eq!(ack, AnswerAck::Applied);
    assert_eq!(
        engine.cancel(runs[2], "no longer needed").await.unwrap(),
        CancelAck::Requested
    );
    let within = |run| tokio::time::timeout(Duration::from_secs(10), engine.wait(run));
    let v0 = within(runs[0]).await.expect("run 0 ends").unwrap();
    assert_eq!(v0.result, Some(json!("woken by a signal")));
    let v1 = within(runs[1]).await.expect("run 1 ends").unwrap();
    assert_eq!(v1.result, Some(json!("released true")));
    let v2 = within(runs[2]).await.expect("run 2 ends").unwrap();
    assert_eq!(v2.status, RunStatus::Cancelled);
    assert!(
        engine
            .journal(runs[2])
            .unwrap()
            .iter()
            .any(|e| matches!(e.record, Record::CancelRequested { .. }))
    );

    wait_for(
        "the woken runs to leave memory",
        Duration::from_secs(10),
        || engine.core().runs_in_memory() == 0,
    )
    .await;
    assert_eq!(engine.status(runs[3]).unwrap(), RunStatus::Waiting);
    assert_eq!(
        engine
            .inbox(magrathea_core::InboxFilter::Pending)
            .unwrap()
            .len(),
        997
    );
}
