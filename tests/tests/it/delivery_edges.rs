//! Cancellations, signals, task results and gate timeouts that arrive when the run has moved
//! on: each gets the answer the engine documents, late completions are journaled as ignored
//! (never applied), and none of them changes how the run ends.
//!
//! The documented rules: `CancelAck` (a second cancellation is `AlreadyRequested`, one after the
//! end `AlreadyFinished`); `Engine::answer_gate` and invariant 2 of the architecture (the first
//! completion wins, a late one is journaled as ignored); `WorkflowContext::select` (a dropped
//! step's late completion is journaled as ignored); `Engine::cancel` (pending steps fail with
//! a `cancelled` error).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use magrathea::core::Step;
use magrathea::prelude::*;
use magrathea::{CancelAck, Entry, Record, RunView};
use magrathea_tests::wait_for;
use serde_json::json;
use tokio::sync::Semaphore;

const WEEK: Duration = Duration::from_secs(7 * 24 * 3600);
const WAIT: Duration = Duration::from_secs(10);

async fn engine() -> Engine {
    Engine::builder()
        .in_memory()
        .workflow(confirm_cancel)
        .workflow(quick)
        .workflow(signal_or_slow_task)
        .workflow(hold_until_cancelled)
        .workflow(late_result_after_cancel)
        .workflow(answered_gate_with_timeout)
        .task(slow_loser)
        .task(hold_forever)
        .task(hold_async)
        .task(hold_blocking)
        .build()
        .await
        .unwrap()
}

fn count(journal: &[Entry], pred: impl Fn(&Record) -> bool) -> usize {
    journal.iter().filter(|e| pred(&e.record)).count()
}

/// Asserts that `after` is `before` plus, at most, records of arrivals journaled as ignored:
/// whatever arrives too late may be recorded (invariant 2), never applied.
#[track_caller]
fn only_ignored_appended(before: &[Entry], after: &[Entry], what: &str) {
    assert_eq!(
        &after[..before.len()],
        before,
        "{what}: the journal was rewritten"
    );
    let appended = &after[before.len()..];
    assert!(
        appended
            .iter()
            .all(|e| matches!(e.record, Record::Ignored { .. })),
        "{what} appended more than ignored records: {appended:#?}"
    );
}

fn ignored(journal: &[Entry], at: Step, what: &str) -> usize {
    count(
        journal,
        |r| matches!(r, Record::Ignored { step, what: w, .. } if *step == at && w == what),
    )
}

fn task_results(journal: &[Entry], at: Step) -> usize {
    count(
        journal,
        |r| matches!(r, Record::TaskResult { step, .. } if *step == at),
    )
}

/// The outcomes of the step's task results, in journal order.
fn result_outcomes(journal: &[Entry], at: Step) -> Vec<String> {
    journal
        .iter()
        .filter_map(|e| match &e.record {
            Record::TaskResult { step, outcome, .. } if *step == at => Some(outcome.to_string()),
            _ => None,
        })
        .collect()
}

async fn journal_has(engine: &Engine, run: RunId, what: &str, pred: impl Fn(&[Entry]) -> bool) {
    wait_for(what, WAIT, || engine.journal(run).is_ok_and(|j| pred(&j))).await;
}

async fn ended(engine: &Engine, run: RunId) -> RunView {
    tokio::time::timeout(WAIT, engine.wait(run))
        .await
        .expect("the run ends")
        .unwrap()
}

// ---- cancellation -----------------------------------------------------------------------------

/// Sleeps a week; when cancelled, waits for an approval of the cancellation (step 1) before it
/// ends CANCELLED, so that the run is still going when the second cancellation arrives.
#[workflow]
async fn confirm_cancel(ctx: Context, _n: u64) -> Result<String, WorkflowError> {
    match ctx.sleep(WEEK).await {
        Ok(()) => Ok("slept".into()),
        Err(e) if e.is_cancelled() => match ctx.approval("confirm the cancellation").await {
            Approval::Approved { .. } => Err(WorkflowError::cancelled(format!("confirmed: {e}"))),
            other => Err(WorkflowError::failed(format!("{other:?}"))),
        },
        Err(e) => Err(e.into()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_cancellation_is_already_requested_and_applies_nothing() {
    let engine = engine().await;
    let run = engine.start(confirm_cancel, 1).await.unwrap().id();
    journal_has(&engine, run, "the sleep", |j| {
        count(j, |r| matches!(r, Record::TimerSet { .. })) == 1
    })
    .await;
    let first = engine.cancel(run, "first").await.unwrap();
    let view = engine.wait_settled(run).await.unwrap();
    assert_eq!(
        view.status,
        RunStatus::Waiting,
        "waits for the confirmation"
    );
    let settled = engine.journal(run).unwrap();
    let second = engine.cancel(run, "second").await.unwrap();
    let after_second = engine.journal(run).unwrap();

    engine
        .answer_gate(&format!("{run}-1"), GateAnswer::approve())
        .await
        .unwrap();
    let view = ended(&engine, run).await;
    let third = engine.cancel(run, "third").await.unwrap();
    let journal = engine.journal(run).unwrap();

    assert_eq!(first, CancelAck::Requested);
    assert_eq!(second, CancelAck::AlreadyRequested);
    assert_eq!(third, CancelAck::AlreadyFinished);
    assert_eq!(view.status, RunStatus::Cancelled);
    let reason = view.reason.unwrap_or_default();
    assert!(
        reason.contains("confirmed") && reason.contains("first"),
        "{reason}"
    );
    assert!(!reason.contains("second"), "{reason}");
    assert_eq!(
        count(&journal, |r| matches!(r, Record::CancelRequested { .. })),
        1,
        "one CancelRequestedRecord: {journal:#?}"
    );
    only_ignored_appended(&settled, &after_second, "the second cancellation");
    assert!(matches!(
        journal.last().unwrap().record,
        Record::Status {
            status: RunStatus::Cancelled,
            ..
        }
    ));
}

#[workflow]
async fn quick(_ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    Ok(n * 2)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_or_signal_to_a_finished_run_changes_nothing() {
    let engine = engine().await;
    let run = engine.start(quick, 21).await.unwrap().id();
    let done = ended(&engine, run).await;
    let before = engine.journal(run).unwrap();

    let cancel = engine.cancel(run, "too late").await.unwrap();
    // A signal after the end is accepted and journaled as ignored, as a late answer is.
    engine
        .signal(run, "wake", json!("too late"))
        .await
        .expect("a signal to a finished run is accepted");
    let cancel_again = engine.cancel(run, "still too late").await.unwrap();
    let after = engine.journal(run).unwrap();
    let view = engine.run(run).unwrap();

    assert_eq!(done.status, RunStatus::Done);
    assert_eq!(cancel, CancelAck::AlreadyFinished);
    assert_eq!(cancel_again, CancelAck::AlreadyFinished);
    only_ignored_appended(&before, &after, "a cancellation or signal after the end");
    assert!(
        after[before.len()..].iter().any(|e| matches!(
            &e.record,
            Record::Ignored { what, .. } if what == "signal `wake`"
        )),
        "the late signal is journaled as ignored: {:?}",
        &after[before.len()..]
    );
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!(42)));
}

// ---- task results after the run moved on ------------------------------------------------------

static LOSER_RELEASE: Semaphore = Semaphore::const_new(0);

/// Waits until the test releases it, then succeeds.
#[task(retry(max_attempts = 1))]
async fn slow_loser(n: u64) -> Result<u64, TaskError> {
    LOSER_RELEASE
        .acquire()
        .await
        .map_err(|e| TaskError::terminal(e.to_string()))?
        .forget();
    Ok(n)
}

/// A select of a slow task (step 0) and a signal (step 1); then an approval (step 2), so that
/// the run is still going when the losing task's result arrives.
#[workflow]
async fn signal_or_slow_task(ctx: Context, n: u64) -> Result<String, WorkflowError> {
    let slow = ctx
        .task(slow_loser, n)
        .map(|r| r.map(|v| format!("task {v}")));
    let signal = ctx
        .signal::<String>("go")
        .map(|r| r.map(|p| format!("signal {p}")));
    let (_, won) = ctx.select(vec![slow, signal]).await;
    let won = won?;
    match ctx.approval("finish?").await {
        Approval::Approved { .. } => Ok(won),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_losers_late_task_result_is_journaled_once_and_changes_nothing() {
    let engine = engine().await;
    let run = engine.start(signal_or_slow_task, 5).await.unwrap().id();
    journal_has(&engine, run, "the slow task's start", |j| {
        count(j, |r| matches!(r, Record::TaskStarted { step: 0, .. })) == 1
    })
    .await;
    engine.signal(run, "go", json!("first")).await.unwrap();
    let view = engine.wait_settled(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "the signal won");

    LOSER_RELEASE.add_permits(1);
    journal_has(&engine, run, "the loser's late result", |j| {
        ignored(j, 0, "task result") + task_results(j, 0) > 0
    })
    .await;
    engine
        .answer_gate(&format!("{run}-2"), GateAnswer::approve())
        .await
        .unwrap();
    let view = ended(&engine, run).await;
    let journal = engine.journal(run).unwrap();

    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!("signal first")));
    // The loser's result is journaled once, as final (so that a restart neither delivers it
    // nor runs the dropped task again), and is delivered to nobody: the run's result is the
    // signal's (context docs of `select`).
    assert_eq!(
        task_results(&journal, 0),
        1,
        "the losing task's result is journaled once: {journal:#?}"
    );
    assert!(
        journal.iter().any(|e| matches!(
            e.record,
            Record::TaskResult {
                step: 0,
                is_final: true,
                ..
            }
        )),
        "as final, not retried: {journal:#?}"
    );
}

static HOLD_STARTED: AtomicBool = AtomicBool::new(false);
static HOLD_DROPPED: AtomicBool = AtomicBool::new(false);

struct SetOnDrop(&'static AtomicBool);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Never finishes on its own; notes when it runs and when its attempt is dropped.
#[task(retry(max_attempts = 1))]
async fn hold_forever(_n: u64) -> Result<u64, TaskError> {
    let _dropped = SetOnDrop(&HOLD_DROPPED);
    HOLD_STARTED.store(true, Ordering::SeqCst);
    std::future::pending::<()>().await;
    Ok(0)
}

#[workflow]
async fn hold_until_cancelled(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    Ok(ctx.task(hold_forever, n).await?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_running_when_cancel_arrives_is_stopped_and_its_step_ends_cancelled() {
    let engine = engine().await;
    let run = engine.start(hold_until_cancelled, 1).await.unwrap().id();
    // Running, not only journaled as started: an attempt dropped before its first poll never
    // ran its body.
    wait_for("the task to run", WAIT, || {
        HOLD_STARTED.load(Ordering::SeqCst)
    })
    .await;
    let ack = engine.cancel(run, "stop").await.unwrap();
    let view = ended(&engine, run).await;
    wait_for("the attempt to be dropped", WAIT, || {
        HOLD_DROPPED.load(Ordering::SeqCst)
    })
    .await;
    let journal = engine.journal(run).unwrap();

    assert_eq!(ack, CancelAck::Requested);
    assert_eq!(view.status, RunStatus::Cancelled);
    let reason = view.reason.unwrap_or_default();
    assert!(
        reason.contains("[MAG-CX001]") && reason.contains("stop"),
        "{reason}"
    );
    assert_eq!(
        result_outcomes(&journal, 0),
        ["cancelled"],
        "the stopped attempt's one result says how it ended: {journal:#?}"
    );
}

static ASYNC_RELEASE: Semaphore = Semaphore::const_new(0);
static BLOCKING_STARTED: AtomicBool = AtomicBool::new(false);
static BLOCKING_RELEASE: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

/// Waits (asynchronously) until released.
#[task(retry(max_attempts = 1))]
async fn hold_async(n: u64) -> Result<u64, TaskError> {
    ASYNC_RELEASE
        .acquire()
        .await
        .map_err(|e| TaskError::terminal(e.to_string()))?
        .forget();
    Ok(n)
}

/// Blocks its thread until released, and then returns without another await: a cancellation
/// that arrives meanwhile cannot stop it, so its result reaches the run after the
/// cancellation.
#[task(retry(max_attempts = 1))]
async fn hold_blocking(n: u64) -> Result<u64, TaskError> {
    tokio::task::block_in_place(|| {
        BLOCKING_STARTED.store(true, Ordering::SeqCst);
        let (lock, released) = &BLOCKING_RELEASE;
        let mut go = lock.lock().unwrap();
        while !*go {
            go = released.wait(go).unwrap();
        }
    });
    Ok(n + 100)
}

/// Two tasks at once (steps 0 and 1; the second runs in its own tokio task); when cancelled,
/// an approval (step 2) before ending CANCELLED.
#[workflow]
async fn late_result_after_cancel(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(hold_async, n);
    let b = ctx.task(hold_blocking, n);
    let (a, b) = futures::join!(a, b);
    if let Some(reason) = ctx.cancellation() {
        return match ctx.approval("confirm the cancellation").await {
            Approval::Approved { .. } => Err(WorkflowError::cancelled(reason)),
            other => Err(WorkflowError::failed(format!("{other:?}"))),
        };
    }
    Ok(a? + b?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_task_result_that_arrives_after_cancellation_is_journaled_as_ignored() {
    let engine = engine().await;
    let run = engine
        .start(late_result_after_cancel, 1)
        .await
        .unwrap()
        .id();
    wait_for("the blocking task to start", WAIT, || {
        BLOCKING_STARTED.load(Ordering::SeqCst)
    })
    .await;
    let ack = tokio::time::timeout(WAIT, engine.cancel(run, "enough"))
        .await
        .expect("the driver takes the cancellation while step 1 blocks its thread")
        .unwrap();
    let settled = engine.wait_settled(run).await.unwrap();

    {
        let (lock, released) = &BLOCKING_RELEASE;
        *lock.lock().unwrap() = true;
        released.notify_all();
    }
    journal_has(&engine, run, "the late result of step 1", |j| {
        ignored(j, 1, "task result") > 0 || task_results(j, 1) > 1
    })
    .await;
    engine
        .answer_gate(&format!("{run}-2"), GateAnswer::approve())
        .await
        .unwrap();
    let view = ended(&engine, run).await;
    let journal = engine.journal(run).unwrap();

    assert_eq!(ack, CancelAck::Requested);
    assert_eq!(
        settled.status,
        RunStatus::Waiting,
        "waits for the confirmation"
    );
    assert_eq!(view.status, RunStatus::Cancelled);
    assert_eq!(view.reason.as_deref(), Some("enough"));
    assert_eq!(
        ignored(&journal, 1, "task result"),
        1,
        "the late result is journaled as ignored: {journal:#?}"
    );
    assert_eq!(
        result_outcomes(&journal, 1),
        ["cancelled"],
        "its step ended with the cancel; the late result was never applied"
    );
    assert_eq!(
        result_outcomes(&journal, 0),
        ["cancelled"],
        "the async attempt was stopped"
    );
}

// ---- gate timeouts after the answer -----------------------------------------------------------

/// A gate with a 1.5 s timeout (step 0), answered at once by the test; then an approval
/// without timeout (step 1), so that the run is still going when the first gate's timeout
/// comes due.
#[workflow]
async fn answered_gate_with_timeout(ctx: Context, _n: u64) -> Result<String, WorkflowError> {
    let spec = Gate::approval("ship it?")
        .timeout(Duration::from_millis(1500))
        .spec()
        .clone();
    let first = match ctx.gate(spec).await {
        GateOutcome::Answered(a) => format!("answered {}", a.value["approved"]),
        GateOutcome::TimedOut => "timed out".to_string(),
        GateOutcome::Cancelled(r) => format!("cancelled {r}"),
    };
    match ctx.approval("finish?").await {
        Approval::Approved { .. } => Ok(first),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_timeout_after_the_answer_is_journaled_as_ignored_and_changes_nothing() {
    let engine = engine().await;
    let run = engine
        .start(answered_gate_with_timeout, 1)
        .await
        .unwrap()
        .id();
    assert_eq!(
        engine.wait_settled(run).await.unwrap().status,
        RunStatus::Waiting
    );
    let ack = engine
        .answer_gate(&format!("{run}-0"), GateAnswer::approve())
        .await
        .unwrap();
    journal_has(&engine, run, "the first gate's late timeout", |j| {
        ignored(j, 0, "gate timeout") > 0
            || count(j, |r| matches!(r, Record::TimerFired { step: 0 })) > 0
    })
    .await;
    engine
        .answer_gate(&format!("{run}-1"), GateAnswer::approve())
        .await
        .unwrap();
    let view = ended(&engine, run).await;
    let journal = engine.journal(run).unwrap();

    assert_eq!(ack, magrathea::AnswerAck::Applied);
    assert_eq!(view.status, RunStatus::Done);
    assert_eq!(view.result, Some(json!("answered true")));
    assert_eq!(
        ignored(&journal, 0, "gate timeout"),
        1,
        "the late timeout is journaled as ignored: {journal:#?}"
    );
    assert_eq!(
        count(&journal, |r| matches!(r, Record::TimerFired { step: 0 })),
        0,
        "and never applied"
    );
}
