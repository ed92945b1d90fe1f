//! The typed API through a real engine: tasks without registration, application data, run
//! handles, typed gates and errors that compose with `?`.

use std::sync::Mutex;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{ControlAck, HandleError, NoDecision, ResultError};
use serde::{Deserialize, Serialize};

async fn engine(builder: magrathea::EngineBuilder) -> Engine {
    builder
        .in_memory()
        .build()
        .await
        .expect("an in-memory engine")
}

// ---- one registration is enough -------------------------------------------------------------

#[task]
async fn add((a, b): (u32, u32)) -> Result<u32, TaskError> {
    Ok(a + b)
}

#[workflow]
async fn sum(ctx: Context, numbers: Vec<u32>) -> Result<u32, WorkflowError> {
    let mut total = 0;
    for n in numbers {
        total = ctx.task(add, (total, n)).await?;
    }
    Ok(total)
}

#[tokio::test]
async fn a_task_runs_without_being_registered() {
    let engine = engine(Engine::builder().workflow(sum)).await;
    let run = engine.start(sum, vec![1, 2, 3, 4]).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 10);
    assert_eq!(run.status().unwrap(), RunStatus::Done);
}

#[task(name = "add")]
async fn add_registered((a, b): (u32, u32)) -> Result<u32, TaskError> {
    Ok(a + b + 1000)
}

#[tokio::test]
async fn a_registration_under_the_same_name_takes_precedence() {
    let engine = engine(Engine::builder().workflow(sum).task(add_registered)).await;
    let run = engine.start(sum, vec![1]).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 1001);
}

// ---- application data -----------------------------------------------------------------------

/// A stand-in for a connection pool: records what the tasks wrote.
#[derive(Default)]
struct Ledger {
    lines: Mutex<Vec<String>>,
}

#[task]
async fn book(ctx: TaskContext, line: String) -> Result<usize, TaskError> {
    let ledger = ctx
        .data::<std::sync::Arc<Ledger>>()
        .ok_or_else(|| TaskError::terminal("no ledger"))?;
    let mut lines = ledger
        .lines
        .lock()
        .map_err(|_| TaskError::terminal("poisoned"))?;
    lines.push(line);
    Ok(lines.len())
}

#[workflow]
async fn bookkeeping(ctx: Context, lines: Vec<String>) -> Result<usize, WorkflowError> {
    let mut count = 0;
    for line in lines {
        count = ctx.task(book, line).await?;
    }
    Ok(count)
}

#[tokio::test]
async fn tasks_read_application_data() {
    let ledger = std::sync::Arc::new(Ledger::default());
    let engine = engine(Engine::builder().data(ledger.clone()).workflow(bookkeeping)).await;
    let run = engine
        .start(bookkeeping, vec!["tea".into(), "towel".into()])
        .await
        .unwrap();
    assert_eq!(run.result().await.unwrap(), 2);
    assert_eq!(*ledger.lines.lock().unwrap(), ["tea", "towel"]);
}

#[tokio::test]
async fn a_task_without_its_data_fails_the_run() {
    let engine = engine(Engine::builder().workflow(bookkeeping)).await;
    let run = engine.start(bookkeeping, vec!["tea".into()]).await.unwrap();
    match run.result().await {
        Err(ResultError::Unsuccessful { status, reason, .. }) => {
            assert_eq!(status, RunStatus::Failed);
            // Which task failed, at which step, and why.
            assert_eq!(
                reason,
                "task `book` (step 0) failed: technical_error: no ledger"
            );
        }
        other => panic!("expected a failed run, got {other:?}"),
    }
}

// ---- run handles ----------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Nudge {
    by: u32,
}

#[workflow]
async fn counter(ctx: Context, start: u32) -> Result<u32, WorkflowError> {
    let nudge: Nudge = ctx.signal("nudge").await?;
    Ok(start + nudge.by)
}

#[tokio::test]
async fn a_handle_signals_and_reads_its_run() {
    let engine = engine(Engine::builder().workflow(counter).workflow(sum)).await;
    let run = engine.start(counter, 40).await.unwrap();
    run.signal("nudge", Nudge { by: 2 }).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 42);
    assert_eq!(run.run().unwrap().status, RunStatus::Done);

    let again = engine.handle(counter, run.id()).unwrap();
    assert_eq!(again.result().await.unwrap(), 42);
    match engine.handle(sum, run.id()) {
        Err(HandleError::OtherWorkflow { actual, .. }) => assert_eq!(actual, "counter"),
        other => panic!("expected OtherWorkflow, got {other:?}"),
    }
    assert!(matches!(
        engine.handle(counter, RunId::new()),
        Err(HandleError::Run(_))
    ));
}

/// An operator's pause and resume are on the engine a developer holds: a paused run ends
/// nothing until it is resumed.
#[tokio::test]
async fn a_run_paused_through_the_engine_goes_on_when_unpaused() {
    let engine = engine(Engine::builder().workflow(counter)).await;
    let run = engine.start(counter, 40).await.unwrap();
    assert_eq!(
        engine
            .pause(run.id(), "ops", Some("maintenance"))
            .await
            .unwrap(),
        ControlAck::Paused
    );
    assert_eq!(engine.status(run.id()).unwrap(), RunStatus::Paused);
    run.signal("nudge", Nudge { by: 2 }).await.unwrap();
    assert_eq!(engine.status(run.id()).unwrap(), RunStatus::Paused);
    assert_eq!(
        engine.unpause(run.id(), "ops").await.unwrap(),
        ControlAck::Resumed
    );
    assert_eq!(run.result().await.unwrap(), 42);
}

/// Version 2 of `counter`, whose result is text: a handle of it on a run of version 1 would
/// read the run's number as text.
#[workflow(name = "counter", version = "2")]
async fn counter_v2(ctx: Context, start: u32) -> Result<String, WorkflowError> {
    let nudge: Nudge = ctx.signal("nudge").await?;
    Ok(format!("{}", start + nudge.by))
}

#[tokio::test]
async fn a_handle_of_another_version_of_the_workflow_is_refused() {
    let engine = engine(Engine::builder().workflow(counter).workflow(counter_v2)).await;
    let v1 = engine.start(counter, 1).await.unwrap();
    match engine.handle(counter_v2, v1.id()) {
        Err(e @ HandleError::OtherVersion { .. }) => {
            assert!(e.to_string().contains("version `` of `counter`"), "{e}");
        }
        other => panic!("expected OtherVersion, got {other:?}"),
    }
    let v2 = engine.start(counter_v2, 1).await.unwrap();
    v2.signal("nudge", Nudge { by: 2 }).await.unwrap();
    assert_eq!(
        engine
            .handle(counter_v2, v2.id())
            .unwrap()
            .result()
            .await
            .unwrap(),
        "3"
    );
    v1.signal("nudge", Nudge { by: 2 }).await.unwrap();
    assert_eq!(
        engine
            .handle(counter, v1.id())
            .unwrap()
            .result()
            .await
            .unwrap(),
        3
    );
}

#[workflow]
async fn greeter(ctx: Context) -> Result<String, WorkflowError> {
    let who: String = ctx.signal("who").await?;
    Ok(format!("hello {who}"))
}

#[tokio::test]
async fn a_signal_payload_may_be_borrowed() {
    let engine = engine(Engine::builder().workflow(greeter)).await;
    let run = engine.start(greeter, ()).await.unwrap();
    let name = String::from("ada");
    run.signal("who", name.as_str()).await.unwrap();
    assert_eq!(run.result().await.unwrap(), "hello ada");
}

/// Waits on a gate; its cancellation ends the run `CANCELLED`.
#[workflow]
async fn hold(ctx: Context) -> Result<(), magrathea::Error> {
    let what = "Hold";
    // A title made with `format!` is taken as it is, owned or borrowed.
    match ctx.approval(format!("{what}?")).await {
        Approval::Cancelled(reason) => Err(magrathea::Error::cancelled(reason)),
        _ => Ok(()),
    }
}

#[tokio::test]
async fn a_handle_cancels_its_run() {
    let engine = engine(Engine::builder().workflow(hold)).await;
    let run = engine.start(hold, ()).await.unwrap();
    assert_eq!(run.wait_settled().await.unwrap().status, RunStatus::Waiting);
    run.cancel("no longer needed").await.unwrap();
    match run.result().await {
        Err(ResultError::Unsuccessful { status, reason, .. }) => {
            assert_eq!(status, RunStatus::Cancelled);
            assert!(reason.contains("no longer needed"), "{reason}");
        }
        other => panic!("expected a cancelled run, got {other:?}"),
    }
}

// ---- typed gates ----------------------------------------------------------------------------

#[workflow]
async fn approve(ctx: Context, timeout_ms: Option<u64>) -> Result<String, WorkflowError> {
    let mut gate = Gate::approval("Ship it?")
        .body("3 parcels")
        .assigned_to("@ops");
    if let Some(ms) = timeout_ms {
        gate = gate.timeout(Duration::from_millis(ms));
    }
    Ok(match ctx.approval(gate).await {
        Approval::Approved { by, comment } => format!("approved by {by}: {comment:?}"),
        Approval::Rejected { by, comment } => format!("rejected by {by}: {comment:?}"),
        Approval::Undecided { why, by, .. } => format!("undecided by {by}: {why:?}"),
        Approval::TimedOut => "timed out".into(),
        Approval::Cancelled(reason) => format!("cancelled: {reason}"),
    })
}

#[workflow]
async fn choose(ctx: Context) -> Result<String, WorkflowError> {
    let gate = Gate::decision("Carrier?", ["dhl", "ups"]);
    Ok(match ctx.decision(gate).await {
        Decision::Chosen { option, by, .. } => format!("{by} chose {option}"),
        other => format!("{other:?}"),
    })
}

#[workflow]
async fn ask(ctx: Context) -> Result<String, WorkflowError> {
    Ok(match ctx.feedback("What went wrong?").await {
        Feedback::Given { text, .. } => text,
        other => format!("{other:?}"),
    })
}

/// Waits for the run to reach its gate and answers it.
async fn answer<W: Workflow>(engine: &Engine, run: &RunHandle<W>, answer: GateAnswer) {
    assert_eq!(run.wait_settled().await.unwrap().status, RunStatus::Waiting);
    let item = engine
        .inbox(InboxFilter::Pending)
        .unwrap()
        .into_iter()
        .find(|i| i.workflow_run_id == run.id())
        .expect("the run's inbox item");
    engine.answer_gate(&item.id, answer).await.unwrap();
}

#[tokio::test]
async fn gates_answer_with_typed_outcomes() {
    let engine = engine(
        Engine::builder()
            .workflow(approve)
            .workflow(choose)
            .workflow(ask),
    )
    .await;

    let run = engine.start(approve, None).await.unwrap();
    let item = {
        run.wait_settled().await.unwrap();
        engine.inbox(InboxFilter::Pending).unwrap().remove(0)
    };
    assert_eq!(
        (item.title.as_str(), item.body.as_str()),
        ("Ship it?", "3 parcels")
    );
    answer(
        &engine,
        &run,
        GateAnswer::approve().by("ann").with_comment("go"),
    )
    .await;
    assert_eq!(
        run.result().await.unwrap(),
        r#"approved by ann: Some("go")"#
    );

    let run = engine.start(approve, None).await.unwrap();
    answer(&engine, &run, GateAnswer::reject().by("bob")).await;
    assert_eq!(run.result().await.unwrap(), "rejected by bob: None");

    let run = engine.start(approve, None).await.unwrap();
    answer(&engine, &run, GateAnswer::undecidable().by("cy")).await;
    assert_eq!(
        run.result().await.unwrap(),
        format!("undecided by cy: {:?}", NoDecision::Undecidable)
    );

    let run = engine.start(choose, ()).await.unwrap();
    answer(&engine, &run, GateAnswer::choose("ups").by("dee")).await;
    assert_eq!(run.result().await.unwrap(), "dee chose ups");

    let run = engine.start(ask, ()).await.unwrap();
    answer(&engine, &run, GateAnswer::text("the towel")).await;
    assert_eq!(run.result().await.unwrap(), "the towel");
}

#[tokio::test]
async fn a_gate_times_out_or_is_cancelled() {
    let engine = engine(Engine::builder().workflow(approve)).await;

    let run = engine.start(approve, Some(20)).await.unwrap();
    assert_eq!(run.result().await.unwrap(), "timed out");

    let run = engine.start(approve, None).await.unwrap();
    run.wait_settled().await.unwrap();
    run.cancel("closing the shop").await.unwrap();
    let out = run.result().await.unwrap();
    assert!(
        out.starts_with("cancelled: ") && out.contains("closing the shop"),
        "{out}"
    );
}

// ---- errors that compose ----------------------------------------------------------------------

#[workflow]
async fn parse_number(_ctx: Context, text: String) -> Result<u32, magrathea::Error> {
    Ok(text.parse::<u32>()?)
}

/// Uses `?` on a child's error, a std error, a step error and a serde error in one body.
#[workflow]
async fn parse_twice(ctx: Context, text: String) -> Result<u32, magrathea::Error> {
    let n = ctx.child(parse_number, text).await?;
    let m: u32 = serde_json::from_str(&n.to_string())?;
    let k = ctx.task(add, (m, 0)).await?;
    let doubled: u32 = format!("{}", k * 2).parse()?;
    Ok(doubled)
}

/// The same with `WorkflowError`: a child's and a step's errors convert too.
#[workflow]
async fn child_then_task(ctx: Context, text: String) -> Result<u32, WorkflowError> {
    let n = ctx.child(parse_number, text).await?;
    Ok(ctx.task(add, (n, n)).await?)
}

#[tokio::test]
async fn question_mark_works_on_any_error_in_a_workflow() {
    let engine = engine(
        Engine::builder()
            .workflow(parse_number)
            .workflow(parse_twice)
            .workflow(child_then_task),
    )
    .await;
    let run = engine.start(parse_twice, "21".into()).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 42);
    let run = engine.start(child_then_task, "21".into()).await.unwrap();
    assert_eq!(run.result().await.unwrap(), 42);

    for workflow_run in [
        engine.start(parse_twice, "x".into()).await.unwrap().id(),
        engine
            .start(child_then_task, "x".into())
            .await
            .unwrap()
            .id(),
    ] {
        let view = engine.wait(workflow_run).await.unwrap();
        assert_eq!(view.status, RunStatus::Failed);
        let reason = view.reason.unwrap_or_default();
        assert!(
            reason.contains("[MAG-CH001]") && reason.contains("invalid digit"),
            "{reason}"
        );
    }
}

#[workflow]
async fn sleepy(ctx: Context) -> Result<(), magrathea::Error> {
    ctx.sleep(Duration::from_secs(3600)).await?;
    Ok(())
}

#[tokio::test]
async fn a_cancelled_step_through_question_mark_cancels_the_run() {
    let engine = engine(Engine::builder().workflow(sleepy)).await;
    let mut committed = engine.core().subscribe_journal();
    let run = engine.start(sleepy, ()).await.unwrap();
    // Cancellation reaches the steps pending when it is requested: wait for the timer.
    let timer_set = |entries: &[magrathea::Entry]| {
        entries
            .iter()
            .any(|e| matches!(e.record, magrathea::Record::TimerSet { .. }))
    };
    while !timer_set(&engine.journal(run.id()).unwrap_or_default()) {
        let update = committed.recv().await.unwrap();
        if update.run_id == run.id() && timer_set(&update.entries) {
            break;
        }
    }
    run.cancel("enough").await.unwrap();
    assert_eq!(run.wait().await.unwrap().status, RunStatus::Cancelled);
}

// ---- an input its own type cannot serialise ---------------------------------------------------

#[task]
async fn count_pairs(pairs: std::collections::HashMap<(u8, u8), u32>) -> Result<usize, TaskError> {
    Ok(pairs.len())
}

#[workflow]
async fn pairs_task(ctx: Context) -> Result<usize, WorkflowError> {
    let pairs = std::collections::HashMap::from([((1, 2), 3)]);
    Ok(ctx.task(count_pairs, pairs).await?)
}

#[workflow]
async fn pairs_child(
    _ctx: Context,
    pairs: std::collections::HashMap<(u8, u8), u32>,
) -> Result<usize, WorkflowError> {
    Ok(pairs.len())
}

#[workflow]
async fn pairs_parent(ctx: Context) -> Result<usize, WorkflowError> {
    let pairs = std::collections::HashMap::from([((1, 2), 3)]);
    ctx.child(pairs_child, pairs)
        .await
        .map_err(|e| WorkflowError::failed(e.reason))
}

#[tokio::test]
async fn an_input_its_type_cannot_serialise_is_said_so_not_called_a_mismatch() {
    let engine = engine(
        Engine::builder()
            .workflow(pairs_task)
            .workflow(pairs_child)
            .workflow(pairs_parent),
    )
    .await;
    let run = engine.start(pairs_task, ()).await.unwrap();
    let error = run.result().await.unwrap_err().to_string();
    assert!(
        error.contains(
            "[MAG-SE001] the input of task `count_pairs` cannot be serialised: key must be a string"
        ),
        "{error}"
    );
    let run = engine.start(pairs_parent, ()).await.unwrap();
    let error = run.result().await.unwrap_err().to_string();
    assert!(
        error.contains(
            "[MAG-SE001] the input of workflow `pairs_child` cannot be serialised: key must be a string"
        ),
        "{error}"
    );
}
