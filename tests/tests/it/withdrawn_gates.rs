//! A gate the code stops waiting for (the loser of a select: a timer won) is withdrawn: its
//! inbox item closes, the run no longer reads `WAITING` for it, and an answer that comes later
//! is kept on the item but not applied — live, and across a restart of the engine.

use std::path::Path;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{AnswerAck, EngineBuilder, Entry, InboxFilter, InboxStatus, Record};
use magrathea_tests::wait_for;
use serde_json::json;

/// Waits for an approval or `ms`, whichever comes first, then for the signal `next`.
#[workflow]
async fn approval_or_timer(ctx: Context, ms: u64) -> Result<String, WorkflowError> {
    let gate = ctx
        .gate(Gate::approval("ship it?").into_spec())
        .map(|o| format!("gate {o:?}"));
    let timer = ctx
        .sleep(Duration::from_millis(ms))
        .map(|_| "timer".to_string());
    let (_, won) = ctx.select(vec![gate, timer]).await;
    let next: String = ctx.signal("next").await?;
    Ok(format!("{won} then {next}"))
}

/// Sets a timer, waits for the signal `ask`, then races an approval against that timer and
/// waits for the signal `next`: paused before `ask`, the gate is made while the run is paused.
#[workflow]
async fn ask_late(ctx: Context, ms: u64) -> Result<String, WorkflowError> {
    let timer = ctx
        .sleep(Duration::from_millis(ms))
        .map(|_| "timer".to_string());
    let _: String = ctx.signal("ask").await?;
    let gate = ctx
        .gate(Gate::approval("ship it?").into_spec())
        .map(|o| format!("gate {o:?}"));
    let (_, won) = ctx.select(vec![gate, timer]).await;
    let next: String = ctx.signal("next").await?;
    Ok(format!("{won} then {next}"))
}

fn builder(db: &Path) -> EngineBuilder {
    Engine::builder()
        .path(db)
        .workflow(approval_or_timer)
        .workflow(ask_late)
}

/// Runs `f` with a fresh engine in its own runtime, then shuts that runtime down.
fn incarnation<T>(db: &Path, f: impl AsyncFnOnce(Engine) -> T) -> T {
    magrathea_tests::incarnation(|| builder(db), f)
}

fn withdrawn(journal: &[Entry]) -> Vec<u32> {
    journal
        .iter()
        .filter_map(|e| match e.record {
            Record::GateWithdrawn { step, .. } => Some(step),
            _ => None,
        })
        .collect()
}

/// The item of a withdrawn gate reads CLOSED, and `answer` to it is ignored.
async fn closed_and_ignoring(engine: &Engine, item: &str, answer: GateAnswer) {
    assert_eq!(engine.inbox_item(item).unwrap().status, InboxStatus::Closed);
    let ack = engine.answer_gate(item, answer).await.unwrap();
    assert_eq!(ack, AnswerAck::Ignored, "nobody awaits the gate");
    assert_eq!(engine.inbox_item(item).unwrap().status, InboxStatus::Closed);
}

/// Starts `approval_or_timer` with a timer of 1.5 s and waits until it waits on its gate.
async fn waiting_on_its_gate(engine: &Engine) -> RunId {
    let run = engine.start(approval_or_timer, 1_500).await.unwrap().id();
    let view = engine.wait_settled(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "the gate is open first");
    run
}

/// Sends `next` and waits for the run to end DONE with the timer's win.
async fn ends_after_the_timer(engine: &Engine, run: RunId) {
    engine.signal(run, "next", json!("go")).await.unwrap();
    let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
        .await
        .expect("the run ends after the signal")
        .unwrap();
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!("timer then go")));
}

#[test]
fn a_gate_that_lost_a_select_is_withdrawn_and_a_later_answer_is_not_applied() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = incarnation(&db, async |engine: Engine| {
        let run = waiting_on_its_gate(&engine).await;
        let item = format!("{run}-0");
        assert_eq!(
            engine.inbox_item(&item).unwrap().status,
            InboxStatus::Pending
        );

        wait_for("the gate's withdrawal", Duration::from_secs(10), || {
            engine.journal(run).is_ok_and(|j| withdrawn(&j) == vec![0])
        })
        .await;
        wait_for("the run to leave WAITING", Duration::from_secs(10), || {
            engine.status(run).is_ok_and(|s| s == RunStatus::Running)
        })
        .await;
        assert_eq!(
            engine.inbox_item(&item).unwrap().status,
            InboxStatus::Closed
        );
        let pending = engine.inbox(InboxFilter::Pending).unwrap();
        assert!(
            pending.iter().all(|i| i.workflow_run_id != run),
            "a withdrawn gate is not pending: {pending:?}"
        );

        let ack = engine
            .answer_gate(&item, GateAnswer::approve())
            .await
            .unwrap();
        assert_eq!(ack, AnswerAck::Ignored, "nobody awaits the gate");
        let shown = engine.inbox_item(&item).unwrap();
        assert_eq!(shown.status, InboxStatus::Closed);
        assert_eq!(
            shown.answer.map(|a| a.value),
            Some(json!({"approved": true})),
            "the late answer is kept on the item"
        );
        run
    });

    // A restart replays the select: the gate is not withdrawn a second time, and the run
    // goes on from where it stopped.
    let journal = incarnation(&db, async move |engine: Engine| {
        let item = format!("{run}-0");
        closed_and_ignoring(&engine, &item, GateAnswer::reject()).await;
        ends_after_the_timer(&engine, run).await;
        engine.journal(run).unwrap()
    });
    assert_eq!(withdrawn(&journal), vec![0], "{journal:#?}");
    assert!(
        !journal
            .iter()
            .any(|e| matches!(e.record, Record::GateAnswered { .. })),
        "no answer was applied: {journal:#?}"
    );
}

#[test]
fn an_answer_that_comes_once_the_timer_was_due_finds_the_gate_withdrawn() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = incarnation(&db, async |engine: Engine| {
        waiting_on_its_gate(&engine).await
    });
    // The timer comes due while no engine runs; the answer is the first thing the next one
    // hears of the run.
    std::thread::sleep(Duration::from_millis(1_600));
    let journal = incarnation(&db, async move |engine: Engine| {
        let item = format!("{run}-0");
        let ack = engine
            .answer_gate(&item, GateAnswer::approve())
            .await
            .unwrap();
        assert_eq!(ack, AnswerAck::Ignored, "the timer won the select first");
        assert_eq!(
            engine.inbox_item(&item).unwrap().status,
            InboxStatus::Closed
        );
        ends_after_the_timer(&engine, run).await;
        engine.journal(run).unwrap()
    });
    let order: Vec<&str> = journal
        .iter()
        .map(|e| e.record.type_name())
        .filter(|t| {
            [
                "TimerFiredRecord",
                "GateWithdrawnRecord",
                "GateAnsweredRecord",
                "IgnoredRecord",
            ]
            .contains(t)
        })
        .collect();
    assert_eq!(
        order,
        ["TimerFiredRecord", "GateWithdrawnRecord", "IgnoredRecord"],
        "{journal:#?}"
    );
}

#[test]
fn a_gate_made_and_dropped_while_the_run_was_paused_is_withdrawn_on_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    incarnation(&db, async |engine: Engine| {
        let ten = Duration::from_secs(10);
        let run = engine.start(ask_late, 300).await.unwrap().id();
        wait_for("the wait for `ask`", ten, || {
            engine.journal(run).is_ok_and(|j| {
                j.iter().any(
                    |e| matches!(e.record, Record::SignalAwaited { ref name, .. } if name == "ask"),
                )
            })
        })
        .await;
        tokio::time::timeout(ten, engine.pause(run, "ops", None))
            .await
            .expect("pause did not answer")
            .unwrap();
        // Made while paused: held, as the gate the code makes next.
        tokio::time::timeout(ten, engine.signal(run, "ask", json!("now")))
            .await
            .expect("signal did not answer")
            .unwrap();
        // The timer comes due meanwhile.
        tokio::time::sleep(Duration::from_millis(500)).await;
        tokio::time::timeout(ten, engine.unpause(run, "ops"))
            .await
            .expect("unpause did not answer")
            .unwrap();
        wait_for("the run to leave WAITING", Duration::from_secs(10), || {
            engine.status(run).is_ok_and(|s| s == RunStatus::Running)
                && engine.journal(run).is_ok_and(|j| {
                    j.iter()
                        .any(|e| matches!(e.record, Record::SignalAwaited { ref name, .. } if name == "next"))
                })
        })
        .await;
        let journal = engine.journal(run).unwrap();
        let gate = journal
            .iter()
            .find_map(|e| match &e.record {
                Record::GateOpened { step, .. } => Some(*step),
                _ => None,
            })
            .expect("the gate was opened on the resume");
        assert_eq!(withdrawn(&journal), vec![gate], "{journal:#?}");
        let item = format!("{run}-{gate}");
        closed_and_ignoring(&engine, &item, GateAnswer::approve()).await;
        ends_after_the_timer(&engine, run).await;
    });
}
