//! Promises that must hold across an engine restart on the same redb file: durable timers,
//! gate timeouts that win over late answers, and idempotent starts.
//!
//! An engine stops here by the shutdown of the tokio runtime that drives it
//! (`Runtime::shutdown_background`): every driver, task and timer of that engine stops at once,
//! and the next engine sees only what was committed to the file. This is a restart within one
//! process, not a crash: the process lives on and the store is closed by being dropped (the
//! SIGKILL tests are in `crash_recovery.rs`). Each test runs outside any runtime and builds one
//! runtime per engine incarnation.

use std::path::Path;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{AnswerAck, EngineBuilder, Entry, Record, RunFilter, StartOptions};
use magrathea_tests::{build_retrying, runtime};
use serde_json::{Value, json};

#[workflow]
async fn sleeper(ctx: Context, ms: u64) -> Result<u64, WorkflowError> {
    ctx.sleep(Duration::from_millis(ms)).await?;
    Ok(ms)
}

#[workflow]
async fn gate_with_timeout(ctx: Context, timeout_ms: u64) -> Result<String, WorkflowError> {
    let spec = Gate::approval("ship it?").timeout(Duration::from_millis(timeout_ms));
    Ok(match ctx.gate(spec.into_spec()).await {
        GateOutcome::Answered(a) => format!("answered {}", a.value),
        GateOutcome::TimedOut => "timed out".to_string(),
        GateOutcome::Cancelled(r) => format!("cancelled {r}"),
    })
}

#[workflow]
async fn approval_echo(ctx: Context, input: String) -> Result<String, WorkflowError> {
    match ctx.gate(Gate::approval("approve?").into_spec()).await {
        GateOutcome::Answered(_) => Ok(input),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

/// Executions of `counted`, across incarnations (this file's tests run `many_shapes` once).
static COUNTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[task]
async fn counted(n: u64) -> Result<u64, TaskError> {
    COUNTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    if n == 999 {
        return Err(TaskError::terminal("999 is refused"));
    }
    Ok(n * 2)
}

/// Steps of several shapes before an approval: sequential tasks, a task that fails and whose
/// error the code keeps, mapped steps (one failing), a select whose timer was made before the task that wins it, and
/// tasks joined.
#[workflow]
async fn many_shapes(ctx: Context, n: u64) -> Result<Vec<Value>, WorkflowError> {
    let mut out = Vec::new();
    for i in 0..n {
        out.push(json!(ctx.task(counted, i).await?));
    }
    let refused = ctx.task(counted, 999).await;
    out.push(json!(refused.map_err(|e| e.message().to_string())));
    // Mapped steps: on replay they complete straight from the journal, through their map.
    let mapped = ctx.task(counted, 20).map(|r| r.map(|v| v + 1)).await?;
    out.push(json!(mapped));
    let mapped_err = ctx
        .task(counted, 999)
        .map(|r| r.map_err(|e| format!("mapped: {}", e.message())))
        .await;
    out.push(json!(mapped_err));
    let hour = ctx
        .sleep(Duration::from_secs(3600))
        .map(|r| r.map(|()| None));
    let task = ctx.task(counted, 7).map(|r| r.map(Some));
    let (winner, value) = ctx.select(vec![hour, task]).await;
    out.push(json!([winner, value?]));
    let joined = futures::future::join_all((0..3).map(|i| ctx.task(counted, 100 + i))).await;
    for r in joined {
        out.push(json!(r?));
    }
    match ctx.gate(Gate::approval("go on?").into_spec()).await {
        GateOutcome::Answered(_) => Ok(out),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

#[task]
async fn plain(n: u64) -> Result<u64, TaskError> {
    Ok(n + 1)
}

/// Two branches joined: one awaits a task, the other only notes that it ran. Live, the task
/// completes in a later poll than the one that made it, so the second branch notes first.
#[workflow]
async fn join_order(ctx: Context, n: u64) -> Result<Vec<String>, WorkflowError> {
    let log = std::sync::Mutex::new(Vec::new());
    let note = |what: String| log.lock().unwrap_or_else(|p| p.into_inner()).push(what);
    let waits = async {
        let v = ctx.task(plain, n).await;
        note(format!("task {v:?}"));
    };
    let notes = async { note("other branch".to_string()) };
    futures::join!(waits, notes);
    let log = log.into_inner().unwrap_or_else(|p| p.into_inner());
    // The order reaches the journal: a replay in another order would not match it.
    ctx.task(
        plain,
        log.len() as u64 * 10 + u64::from(log[0] == "other branch"),
    )
    .await?;
    match ctx.gate(Gate::approval("go on?").into_spec()).await {
        GateOutcome::Answered(_) => Ok(log),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

/// Makes steps from a clone of its context in a task of its own, on whatever thread the
/// runtime picks, between steps of the workflow's own future: a mistake, since replay cannot
/// place such steps in order.
#[workflow]
async fn steps_elsewhere(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let first = ctx.task(plain, 0).await?;
    let elsewhere = ctx.clone();
    let spawned = tokio::spawn(async move {
        let mut sum = 0;
        for i in 0..n {
            sum += elsewhere.task(plain, i).await?;
        }
        Ok::<_, StepError>(sum)
    });
    let sum = spawned
        .await
        .map_err(|e| WorkflowError::failed(e.to_string()))??;
    let last = ctx.task(plain, sum).await?;
    match ctx.gate(Gate::approval("go on?").into_spec()).await {
        GateOutcome::Answered(_) => Ok(first + last),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

/// Executions of `hangs`, across incarnations.
static HANGS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A task that never ends by itself: each incarnation stops while it runs.
#[task]
async fn hangs(_n: u64) -> Result<u64, TaskError> {
    HANGS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(0)
}

/// Runs `hangs` and returns how it ended.
#[workflow]
async fn hangs_then_reports(ctx: Context, n: u64) -> Result<String, WorkflowError> {
    Ok(match ctx.task(hangs, n).await {
        Ok(_) => "ran".into(),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    })
}

/// Executions of `runs_fifth_time`, across incarnations.
static INTERRUPTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A task that runs until its process stops, four times; the fifth execution ends.
#[task]
async fn runs_fifth_time(n: u64) -> Result<u64, TaskError> {
    if INTERRUPTED.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < 4 {
        tokio::time::sleep(Duration::from_secs(3600)).await;
    }
    Ok(n)
}

#[workflow]
async fn interrupted_then_reports(ctx: Context, n: u64) -> Result<String, WorkflowError> {
    Ok(match ctx.task(runs_fifth_time, n).await {
        Ok(v) => format!("ran {v}"),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    })
}

/// Executions of `always_hangs`, across incarnations.
static MIXED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

#[task]
async fn always_hangs(_n: u64) -> Result<u64, TaskError> {
    MIXED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(3600)).await;
    Ok(0)
}

#[workflow]
async fn stopped_and_crashed(ctx: Context, n: u64) -> Result<String, WorkflowError> {
    Ok(match ctx.task(always_hangs, n).await {
        Ok(_) => "ran".into(),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    })
}

static ADMITTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static PLACE_FREE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A task that waits for a place to run (free once `PLACE_FREE` is set), as a step waits for
/// its project's lane, then counts that it began.
#[task]
async fn waits_its_turn(ctx: TaskContext, n: u64) -> Result<u64, TaskError> {
    use std::sync::atomic::Ordering;
    let place = async {
        while !PLACE_FREE.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    ctx.wait_for_admission(place).await?;
    ADMITTED.fetch_add(1, Ordering::SeqCst);
    Ok(n)
}

#[workflow]
async fn queued_then_reports(ctx: Context, n: u64) -> Result<String, WorkflowError> {
    Ok(match ctx.task(waits_its_turn, n).await {
        Ok(v) => format!("ran {v}"),
        Err(e) => format!("{}: {}", e.kind(), e.message()),
    })
}

fn builder(db: &Path) -> EngineBuilder {
    Engine::builder()
        .path(db)
        .workflow(hangs_then_reports)
        .workflow(queued_then_reports)
        .workflow(interrupted_then_reports)
        .workflow(stopped_and_crashed)
        .workflow(steps_elsewhere)
        .workflow(many_shapes)
        .workflow(join_order)
        .workflow(sleeper)
        .workflow(gate_with_timeout)
        .workflow(approval_echo)
}

fn count(journal: &[Entry], pred: impl Fn(&Record) -> bool) -> usize {
    journal.iter().filter(|e| pred(&e.record)).count()
}

fn timer_set_at(journal: &[Entry]) -> u64 {
    journal
        .iter()
        .find_map(|e| match e.record {
            Record::TimerSet { fire_at_ms, .. } => Some(fire_at_ms),
            _ => None,
        })
        .expect("a TimerSetRecord")
}

/// The run's view once it ends in a fresh engine (`why` it should end), and its journal.
fn ended(db: &Path, run: RunId, why: &'static str) -> (magrathea::RunView, Vec<Entry>) {
    incarnation(db, async move |engine: Engine| {
        let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
            .await
            .expect(why)
            .unwrap();
        (view, engine.journal(run).unwrap())
    })
}

/// The execution numbers of the journal's `TaskRestartedRecord`s, in order.
fn re_executions(journal: &[Entry]) -> Vec<u32> {
    journal
        .iter()
        .filter_map(|e| match e.record {
            Record::TaskRestarted { execution, .. } => Some(execution),
            _ => None,
        })
        .collect()
}

/// Runs `f` with a fresh engine in its own runtime, then shuts that runtime down.
fn incarnation<T>(db: &Path, f: impl AsyncFnOnce(Engine) -> T) -> T {
    magrathea_tests::incarnation(|| builder(db), f)
}

#[test]
fn durable_timers_fire_once_after_a_restart_before_or_after_their_due_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    // `long` is due after the restart, `short` before it.
    let (long, short) = incarnation(&db, async |engine: Engine| {
        let long = engine.start(sleeper, 1500).await.unwrap().id();
        let short = engine.start(sleeper, 300).await.unwrap().id();
        for run in [long, short] {
            wait_for_async(&engine, run, |j| {
                count(j, |r| matches!(r, Record::TimerSet { .. })) == 1
            })
            .await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        (long, short)
    });
    // Let `short` come due while no engine runs.
    std::thread::sleep(Duration::from_millis(300));

    let rt = runtime();
    rt.block_on(async {
        let engine = build_retrying(|| builder(&db)).await.unwrap();
        for (run, ms) in [(long, 1500), (short, 300)] {
            let handle = engine.handle(sleeper, run).unwrap();
            let done = tokio::time::timeout(Duration::from_secs(10), handle.result());
            assert_eq!(done.await.expect("the timer fires").unwrap(), ms);
            let journal = engine.journal(run).unwrap();
            assert_eq!(
                count(&journal, |r| matches!(r, Record::TimerFired { .. })),
                1,
                "exactly one TimerFiredRecord: {journal:#?}"
            );
            assert_eq!(
                count(&journal, |r| matches!(r, Record::TimerSet { .. })),
                1,
                "the timer is not set again on replay"
            );
            let due = timer_set_at(&journal);
            let fired = journal
                .iter()
                .find(|e| matches!(e.record, Record::TimerFired { .. }))
                .unwrap();
            assert!(
                fired.at_ms >= due,
                "run {run}: fired at {} before its due time {due}",
                fired.at_ms
            );
        }
    });
    rt.shutdown_background();
}

async fn wait_for_async(engine: &Engine, run: RunId, pred: impl Fn(&[Entry]) -> bool) {
    magrathea_tests::wait_for("a journal condition", Duration::from_secs(10), || {
        engine.journal(run).is_ok_and(|j| pred(&j))
    })
    .await;
}

#[test]
fn a_gate_answered_after_its_timeout_fired_is_ignored_and_recorded_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = incarnation(&db, async |engine: Engine| {
        let run = engine.start(gate_with_timeout, 300).await.unwrap().id();
        let view = engine.wait_settled(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Waiting);
        run
    });
    // The timeout comes due while no engine runs.
    std::thread::sleep(Duration::from_millis(400));
    let item = format!("{run}-0");

    let item2 = item.clone();
    incarnation(&db, async move |engine: Engine| {
        let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
            .await
            .expect("the gate's timeout fires after the restart")
            .unwrap();
        assert_eq!(view.status, RunStatus::Done);
        assert_eq!(view.result, Some(json!("timed out")));
        let ack = engine
            .answer_gate(&item2, GateAnswer::approve())
            .await
            .unwrap();
        assert_eq!(ack, AnswerAck::Ignored);
    });

    // Once more, on a fresh engine that has the run only on disk.
    let journal = incarnation(&db, async move |engine: Engine| {
        let ack = engine
            .answer_gate(&item, GateAnswer::reject())
            .await
            .unwrap();
        assert_eq!(ack, AnswerAck::Ignored);
        // The first late answer landed on the item (reference §3.4); the second does not
        // replace it, and the item stays timed out.
        let shown = engine.inbox_item(&item).unwrap();
        assert_eq!(shown.status, magrathea::InboxStatus::TimedOut);
        assert_eq!(
            shown.answer.map(|a| a.value),
            Some(json!({"approved": true}))
        );
        engine.journal(run).unwrap()
    });
    assert_eq!(
        count(&journal, |r| matches!(r, Record::GateAnswered { .. })),
        0,
        "a late answer is never applied"
    );
    assert_eq!(
        count(
            &journal,
            |r| matches!(r, Record::Ignored { what, .. } if what == "gate answer")
        ),
        2,
        "each late answer is journaled as ignored: {journal:#?}"
    );
    assert_eq!(
        count(&journal, |r| matches!(r, Record::TimerFired { .. })),
        1
    );
}

#[test]
fn an_idempotent_start_after_a_restart_returns_the_first_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let key = || StartOptions {
        idempotency_key: Some("order-42".into()),
        started_by: None,
    };
    let first = incarnation(&db, async move |engine: Engine| {
        let run = engine
            .start_with(approval_echo, "first".into(), key())
            .await
            .unwrap()
            .id();
        engine.wait_settled(run).await.unwrap();
        run
    });
    let (second, journal, runs) = incarnation(&db, async move |engine: Engine| {
        let second = engine
            .start_with(approval_echo, "second".into(), key())
            .await
            .unwrap()
            .id();
        engine
            .answer_gate(&format!("{second}-0"), GateAnswer::approve())
            .await
            .unwrap();
        let out = engine
            .handle(approval_echo, second)
            .unwrap()
            .result()
            .await
            .unwrap();
        assert_eq!(out, "first", "the first run's input, not the second's");
        let again = engine
            .start_with(approval_echo, "third".into(), key())
            .await
            .unwrap()
            .id();
        assert_eq!(again, second, "a finished run is found by its key too");
        (
            second,
            engine.journal(second).unwrap(),
            engine.list_runs(&RunFilter::default()).unwrap(),
        )
    });
    assert_eq!(first, second);
    assert_eq!(runs.len(), 1, "no second run: {runs:?}");
    assert_eq!(
        count(&journal, |r| matches!(r, Record::Start(_))),
        1,
        "one StartRecord"
    );
}

#[test]
fn a_run_restarted_after_many_finished_steps_runs_none_of_them_again() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let (run, before) = incarnation(&db, async |engine: Engine| {
        let run = engine.start(many_shapes, 40).await.unwrap().id();
        let view = engine.wait_settled(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Waiting, "at the approval");
        (run, engine.journal(run).unwrap())
    });
    let executed = COUNTED.load(Ordering::SeqCst);
    assert_eq!(executed, 40 + 1 + 2 + 1 + 3, "each task ran once");

    let (view, after) = incarnation(&db, async move |engine: Engine| {
        let ack = engine
            .answer_gate(&format!("{run}-48"), GateAnswer::approve())
            .await
            .unwrap();
        assert_eq!(ack, AnswerAck::Applied);
        let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
            .await
            .expect("the run ends once approved")
            .unwrap();
        (view, engine.journal(run).unwrap())
    });
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(
        COUNTED.load(Ordering::SeqCst),
        executed,
        "replay fed every finished step its journaled result"
    );
    let mut expected: Vec<Value> = (0..40).map(|i| json!(i * 2)).collect();
    expected.push(json!({ "Err": "999 is refused" }));
    expected.push(json!(41));
    expected.push(json!({ "Err": "mapped: 999 is refused" }));
    expected.push(json!([1, 14]));
    expected.extend([json!(200), json!(202), json!(204)]);
    assert_eq!(view.result, Some(Value::Array(expected)));
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "the journal before the restart is kept as it was"
    );
}

#[test]
fn a_replayed_step_completes_in_a_later_poll_than_the_one_that_made_it_as_live() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = incarnation(&db, async |engine: Engine| {
        let run = engine.start(join_order, 4).await.unwrap().id();
        let view = engine.wait_settled(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Waiting, "at the approval");
        run
    });
    let view = incarnation(&db, async move |engine: Engine| {
        let ack = engine
            .answer_gate(&format!("{run}-2"), GateAnswer::approve())
            .await
            .unwrap();
        assert_eq!(ack, AnswerAck::Applied);
        tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
            .await
            .expect("the run ends once approved")
            .unwrap()
    });
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(
        view.result,
        Some(json!(["other branch", "task Ok(5)"])),
        "the replayed run saw its branches in the order the live run did"
    );
}

#[test]
fn a_step_made_from_a_context_clone_in_a_spawned_task_blocks_the_run_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let blocked = |view: &magrathea::RunView| {
        assert_eq!(view.status, RunStatus::Blocked, "{view:?}");
        let reason = view.reason.as_deref().unwrap_or_default();
        assert!(
            reason.contains("[MAG-WF002]") && reason.contains("step 1"),
            "{reason}"
        );
    };
    let (run, before) = incarnation(&db, async |engine: Engine| {
        let run = engine.start(steps_elsewhere, 5).await.unwrap().id();
        let view = tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
            .await
            .expect("the run stops instead of waiting forever for the spawned task's step")
            .unwrap();
        blocked(&view);
        (run, engine.journal(run).unwrap())
    });
    assert_eq!(
        count(&before, |r| matches!(
            r,
            Record::TaskStarted { step: 1, .. }
        )),
        0,
        "the step made elsewhere is not journaled"
    );
    assert_eq!(
        count(&before, |r| matches!(r, Record::TaskResult { .. })),
        1
    );
    // Replayed by the next engine, the same code stops at the same step.
    let view = incarnation(&db, async move |engine: Engine| {
        tokio::time::timeout(Duration::from_secs(10), engine.wait_settled(run))
            .await
            .expect("the replayed run settles")
            .unwrap()
    });
    blocked(&view);
}

/// Reference §12: a task whose process stops every time it runs it runs at most
/// `maxClaimAttempts` (3) times in all; the next recovery ends the attempt as a terminal
/// `technical_error` (`[MAG-EN007]`), which the code handles, instead of running it for ever.
#[test]
fn a_task_whose_process_stops_each_time_ends_after_max_claim_attempts_executions() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = incarnation(&db, async |engine: Engine| {
        let run = engine.start(hangs_then_reports, 1).await.unwrap().id();
        wait_for_async(&engine, run, |j| {
            count(j, |r| matches!(r, Record::TaskStarted { .. })) == 1
        })
        .await;
        // The start record is journaled before the task's body runs; shut down only once it
        // has run, or this incarnation's execution would not have happened.
        magrathea_tests::wait_for("the task running", Duration::from_secs(10), || {
            HANGS.load(Ordering::SeqCst) == 1
        })
        .await;
        run
    });
    let restarts = |j: &[Entry]| count(j, |r| matches!(r, Record::TaskRestarted { .. }));
    for k in 1..=2 {
        incarnation(&db, async move |engine: Engine| {
            wait_for_async(&engine, run, |j| restarts(j) == k).await;
            magrathea_tests::wait_for("the task running again", Duration::from_secs(10), || {
                HANGS.load(Ordering::SeqCst) == 1 + k as u64
            })
            .await;
        });
    }
    let (view, journal) = ended(&db, run, "the run ends once the attempt is given up");
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    let result = view.result.unwrap();
    let result = result.as_str().unwrap();
    assert!(
        result.starts_with("technical_error: [MAG-EN007]"),
        "{result}"
    );
    assert!(result.contains("started 3 times"), "{result}");
    assert!(
        result.contains("max_claim_attempts"),
        "says how to raise the limit: {result}"
    );
    assert_eq!(HANGS.load(Ordering::SeqCst), 3, "run once and re-run twice");
    let executions = re_executions(&journal);
    assert_eq!(executions, vec![2, 3]);
    let shown: Vec<u32> = view.re_executions.iter().map(|r| r.execution).collect();
    assert_eq!(
        shown,
        vec![2, 3],
        "each execution that began again is shown"
    );
}

/// A process that stops cleanly (`Engine::stop`: a shutdown, Ctrl-C) journals the execution
/// it interrupts: the attempt runs again on the next open, and such stops do not count
/// against `maxClaimAttempts` as crashes do. Four clean stops while the task runs, more than
/// the three executions a crashing task gets, and its fifth execution still runs and ends.
#[test]
fn clean_stops_while_a_task_runs_are_not_counted_against_max_claim_attempts() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let interrupted = |j: &[Entry]| count(j, |r| matches!(r, Record::TaskInterrupted { .. }));
    let mut run = None;
    for k in 1..=4u64 {
        run = Some(incarnation(&db, async move |engine: Engine| {
            let run = match run {
                Some(run) => run,
                None => engine
                    .start(interrupted_then_reports, 5)
                    .await
                    .unwrap()
                    .id(),
            };
            magrathea_tests::wait_for("the task running", Duration::from_secs(10), || {
                INTERRUPTED.load(Ordering::SeqCst) == k
            })
            .await;
            engine.stop(Duration::from_secs(5)).await;
            let journal = engine.journal(run).unwrap();
            assert_eq!(interrupted(&journal), k as usize, "each stop is journaled");
            run
        }));
    }
    let run = run.unwrap();
    let (view, journal) = ended(&db, run, "the fifth execution ends");
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(json!("ran 5")), "no [MAG-EN007]");
    assert_eq!(INTERRUPTED.load(Ordering::SeqCst), 5);
    assert_eq!(re_executions(&journal), vec![2, 3, 4, 5]);
    let stopped: Vec<u32> = journal
        .iter()
        .filter_map(|e| match e.record {
            Record::TaskInterrupted { execution, .. } => Some(execution),
            _ => None,
        })
        .collect();
    assert_eq!(stopped, vec![1, 2, 3, 4]);
}

/// Clean stops and crashes mixed: only the crashes count, and the `[MAG-EN007]` that ends the
/// task once they are used up says how often it was started in all.
#[test]
fn only_crashes_count_and_the_message_names_the_clean_stops_too() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let mut run = None;
    // Stopped cleanly, crashed, stopped cleanly, crashed, crashed.
    for (k, clean) in [(1u64, true), (2, false), (3, true), (4, false), (5, false)] {
        run = Some(incarnation(&db, async move |engine: Engine| {
            let run = match run {
                Some(run) => run,
                None => engine.start(stopped_and_crashed, 1).await.unwrap().id(),
            };
            magrathea_tests::wait_for("the task running", Duration::from_secs(10), || {
                MIXED.load(Ordering::SeqCst) == k
            })
            .await;
            if clean {
                engine.stop(Duration::from_secs(5)).await;
            }
            run
        }));
    }
    let (view, _) = ended(&db, run.unwrap(), "the sixth execution is not run");
    let result = view.result.unwrap();
    let result = result.as_str().unwrap();
    assert!(
        result.starts_with("technical_error: [MAG-EN007]"),
        "{result}"
    );
    assert!(
        result.contains("started 3 times (and 2 more times, stopped cleanly"),
        "{result}"
    );
    assert_eq!(MIXED.load(Ordering::SeqCst), 5);
}

/// An attempt that waits for a place to run when its process stops has not begun: it runs
/// again on recovery under the same execution number, however often that happens, and once
/// admitted it runs once (where a begun attempt would end `[MAG-EN007]` after three).
#[test]
fn an_attempt_stopped_while_it_waits_for_admission_is_not_counted_as_an_execution() {
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let queued = |j: &[Entry]| count(j, |r| matches!(r, Record::TaskQueued { .. }));
    let run = incarnation(&db, async |engine: Engine| {
        let run = engine.start(queued_then_reports, 7).await.unwrap().id();
        wait_for_async(&engine, run, |j| queued(j) == 1).await;
        run
    });
    // More stops than `maxClaimAttempts` (3) allows executions.
    for k in 2..=5 {
        incarnation(&db, async move |engine: Engine| {
            wait_for_async(&engine, run, |j| queued(j) == k).await;
        });
    }
    PLACE_FREE.store(true, Ordering::SeqCst);
    let (view, journal) = ended(&db, run, "the run ends once its attempt is admitted");
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(view.result, Some(json!("ran 7")));
    assert_eq!(ADMITTED.load(Ordering::SeqCst), 1, "it began once");
    let executions = re_executions(&journal);
    assert_eq!(executions, vec![1; 5], "no execution began before");
    // The run's view (`runs show`, the run API) lists no re-execution: nothing ran twice.
    assert_eq!(view.re_executions, vec![], "{:?}", view.re_executions);
    let at = |pred: &dyn Fn(&Record) -> bool| journal.iter().rposition(|e| pred(&e.record));
    let admitted = at(&|r| matches!(r, Record::TaskAdmitted { .. })).expect("admitted");
    assert_eq!(
        count(&journal, |r| matches!(r, Record::TaskAdmitted { .. })),
        1
    );
    assert!(at(&|r| matches!(r, Record::TaskQueued { .. })).unwrap() < admitted);
    assert!(admitted < at(&|r| matches!(r, Record::TaskResult { .. })).unwrap());
}

/// After `Engine::stop` the engine drives nothing: a start is refused rather than journaled
/// for a run nobody would drive, and a caller waiting on a run's result is told the engine
/// stopped rather than left waiting. The next engine on the file finds the waiting run as it
/// was, and no run of the refused start.
#[test]
fn a_stopped_engine_refuses_starts_and_ends_the_waits_on_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = incarnation(&db, async |engine: Engine| {
        let run = engine
            .start(approval_echo, "kept".to_string())
            .await
            .unwrap();
        let id = run.id();
        let settled = engine.wait_settled(id).await.unwrap();
        assert_eq!(settled.status, RunStatus::Waiting);
        let waiting = tokio::spawn(async move { run.result().await });
        tokio::task::yield_now().await;
        engine.stop(Duration::from_secs(5)).await;
        let ended = tokio::time::timeout(Duration::from_secs(30), waiting)
            .await
            .expect("the wait ends once the engine stopped")
            .unwrap();
        let e = ended.expect_err("a stopped engine gives no result");
        assert!(e.to_string().contains("[MAG-ST003]"), "{e}");
        let e = engine
            .start(approval_echo, "refused".to_string())
            .await
            .expect_err("a stopped engine starts nothing");
        assert!(e.to_string().contains("[MAG-ST003]"), "{e}");
        let e = engine.wait(id).await.expect_err("nor waits on a run");
        assert!(e.to_string().contains("[MAG-ST003]"), "{e}");
        id
    });
    incarnation(&db, async |engine: Engine| {
        let runs = engine.list_runs(&RunFilter::default()).unwrap();
        assert_eq!(runs.len(), 1, "the refused start left no run: {runs:?}");
        let view = engine.wait_settled(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Waiting);
    });
}
