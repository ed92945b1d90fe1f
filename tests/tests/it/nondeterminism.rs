//! Changed workflow code meets an old journal: the run is BLOCKED with both sides named, never
//! failed or re-executed, and restoring the original code un-blocks it.
//!
//! Each scenario runs the original `nd` workflow on a redb file until it waits on a gate,
//! stops the engine by shutting its tokio runtime down (in-process, not a killed process: the
//! SIGKILL tests are in `crash_recovery.rs`), and reopens the file with changed code registered
//! under the same name and version.

use std::path::Path;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{AnswerAck, Criticality, EngineBuilder, GateSpec, Record, RunView};
use magrathea_tests::{build_retrying, runtime, wait_for};

#[task]
async fn nd_first(n: u64) -> Result<u64, TaskError> {
    Ok(n + 1)
}

#[task]
async fn nd_other(n: u64) -> Result<u64, TaskError> {
    Ok(n * 100)
}

/// Waits on the gate `spec`: `Ok` once it is answered, the run's failure otherwise.
async fn answered(ctx: &Context, spec: GateSpec) -> Result<(), WorkflowError> {
    match ctx.gate(spec).await {
        GateOutcome::Answered(_) => Ok(()),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

/// The original: task `nd_first` (step 0), an approval gate (step 1), task `nd_other` (step 2).
#[workflow(name = "nd", version = "1")]
async fn nd_original(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(nd_first, n).await?;
    answered(&ctx, Gate::approval("continue?").into_spec()).await?;
    Ok(ctx.task(nd_other, a).await?)
}

/// Changed: calls `nd_other` at step 0 where the journal has `nd_first`.
#[workflow(name = "nd", version = "1")]
async fn nd_swapped(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(nd_other, n).await?;
    answered(&ctx, Gate::approval("continue?").into_spec()).await?;
    Ok(ctx.task(nd_first, a).await?)
}

/// Changed: step 0 asks `nd_first` for another input than the journal holds.
#[workflow(name = "nd", version = "1")]
async fn nd_other_input(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(nd_first, n + 41).await?;
    answered(&ctx, Gate::approval("continue?").into_spec()).await?;
    Ok(ctx.task(nd_other, a).await?)
}

/// Changed: the gate's text, assignee, criticality, tags and timeout, which replay does not
/// compare (its kind, title and options stay).
#[workflow(name = "nd", version = "1")]
async fn nd_gate_reworded(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(nd_first, n).await?;
    let gate = Gate::approval("continue?")
        .body("Now with a longer explanation")
        .assigned_to("@ops")
        .criticality(Criticality::Critical)
        .tag("reworded")
        .timeout(Duration::from_secs(3_600));
    answered(&ctx, gate.into_spec()).await?;
    Ok(ctx.task(nd_other, a).await?)
}

/// Changed: the gate under the same title is now a decision between two options.
#[workflow(name = "nd", version = "1")]
async fn nd_gate_decision(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(nd_first, n).await?;
    answered(&ctx, Gate::decision("continue?", ["yes", "no"]).into_spec()).await?;
    Ok(ctx.task(nd_other, a).await?)
}

/// Changed: the gate (journaled at step 1) was removed; the code ends after step 0.
#[workflow(name = "nd", version = "1")]
async fn nd_gate_removed(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    Ok(ctx.task(nd_first, n).await?)
}

/// Changed: the input is now a text, so the journaled input (a number) no longer decodes.
#[workflow(name = "nd", version = "1")]
async fn nd_input_retyped(ctx: Context, n: String) -> Result<u64, WorkflowError> {
    Ok(ctx.task(nd_first, n.len() as u64).await?)
}

/// Version 2 of `nd`: another first task. Registered beside version 1, it takes new starts
/// while runs of version 1 replay on version 1.
#[workflow(name = "nd", version = "2")]
async fn nd_v2(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    Ok(ctx.task(nd_other, n).await?)
}

fn builder(db: &Path) -> EngineBuilder {
    Engine::builder().path(db).task(nd_first).task(nd_other)
}

/// Runs `nd_original` until it waits on its gate, then shuts the engine's runtime down;
/// returns the run.
fn run_until_gate_then_drop_runtime(db: &Path) -> RunId {
    let rt = runtime();
    let run = rt.block_on(async {
        let engine = builder(db).workflow(nd_original).build().await.unwrap();
        let run = engine.start(nd_original, 1).await.unwrap().id();
        let view = engine.wait_settled(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Waiting);
        run
    });
    rt.shutdown_background();
    run
}

/// A new store with a run of `nd_original` waiting on its gate: the directory (removed when
/// dropped), the store's file and the run.
async fn waiting_run_in_a_new_store() -> (tempfile::TempDir, std::path::PathBuf, RunId) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let run = waiting_run(&db).await;
    (dir, db, run)
}

/// [`run_until_gate_then_drop_runtime`] off the async runtime.
async fn waiting_run(db: &Path) -> RunId {
    let db = db.to_path_buf();
    tokio::task::spawn_blocking(move || run_until_gate_then_drop_runtime(&db))
        .await
        .unwrap()
}

/// Opens the engine `builder` makes (again on the run's store) and waits until the run has
/// settled: the engine and the run's view.
async fn reopened(run: RunId, builder: impl Fn() -> EngineBuilder) -> (Engine, RunView) {
    let engine = build_retrying(builder).await.unwrap();
    let view = engine
        .wait_until(run, |s| s != RunStatus::Waiting && s != RunStatus::Running)
        .await
        .unwrap();
    (engine, view)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_different_task_at_a_journaled_step_blocks_with_nd001_until_the_code_is_restored() {
    let (_dir, db, run) = waiting_run_in_a_new_store().await;

    let engine = build_retrying(|| builder(&db).workflow(nd_swapped))
        .await
        .unwrap();
    let view = engine
        .wait_until(run, |s| s == RunStatus::Blocked)
        .await
        .unwrap();
    let reason = view.reason.unwrap_or_default();
    assert!(reason.contains("[MAG-ND001]"), "{reason}");
    assert!(
        reason.contains("nd_first") && reason.contains("nd_other"),
        "the reason names the journaled and the requested step: {reason}"
    );
    assert!(reason.contains("step 0"), "{reason}");

    let err = engine
        .answer_gate(&format!("{run}-1"), GateAnswer::approve())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("[MAG-GT003]"), "{err}");
    let journal = engine.journal(run).unwrap();
    assert!(
        !journal.iter().any(|e| matches!(
            e.record,
            Record::GateAnswered { .. } | Record::Result { .. }
        )),
        "a blocked run takes no answer and writes no result"
    );
    let nd_other_started = journal
        .iter()
        .any(|e| matches!(&e.record, Record::TaskStarted { task, .. } if task == "nd_other"));
    assert!(!nd_other_started, "the changed code must not execute tasks");
    drop(engine);

    reopen_with_original_and_finish(&db, run).await;
}

/// Replay reads no task input from the journal (it compares hashes), yet the report of a
/// changed input shows the journaled one beside the code's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_task_input_blocks_with_nd001_naming_both_inputs() {
    blocks_with_nd001_naming(
        |b| b.workflow(nd_other_input),
        "with a different input (journaled: 1; now: 42)",
    )
    .await;
}

/// Reopens a run of `nd_original` waiting on its gate with the code `changed` registers: the
/// run is BLOCKED with `[MAG-ND001]` and `expected` in its reason; then the original code
/// finishes it.
async fn blocks_with_nd001_naming(
    changed: impl Fn(EngineBuilder) -> EngineBuilder,
    expected: &str,
) {
    let (_dir, db, run) = waiting_run_in_a_new_store().await;

    let (engine, view) = reopened(run, || changed(builder(&db))).await;
    assert_eq!(view.status, RunStatus::Blocked);
    let reason = view.reason.unwrap_or_default();
    assert!(reason.contains("[MAG-ND001]"), "{reason}");
    assert!(reason.contains(expected), "{reason}");
    drop(engine);

    reopen_with_original_and_finish(&db, run).await;
}

/// A gate's text, assignee, criticality, tags and timeout are not compared on replay: a run
/// waiting on it goes on waiting under the changed code, keeps the gate its journal opened (no
/// timeout armed for it), and finishes when it is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reworded_gate_replays_and_keeps_what_its_journal_opened() {
    let (_dir, db, run) = waiting_run_in_a_new_store().await;

    let engine = build_retrying(|| builder(&db).workflow(nd_gate_reworded))
        .await
        .unwrap();
    let settled = tokio::time::timeout(Duration::from_secs(10), engine.wait_settled(run));
    let view = settled.await.expect("the run settles").unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "{:?}", view.reason);
    let journal = engine.journal(run).unwrap();
    assert!(
        !journal
            .iter()
            .any(|e| matches!(e.record, Record::TimerSet { .. })),
        "the open gate gets no timeout its journal did not set"
    );
    approve_and_finish(&engine, nd_gate_reworded, run).await;
}

/// Approves the gate (step 1) of a run of `nd` waiting on it, and waits for the run's result:
/// 200 when it started with 1.
async fn approve_and_finish<W: Workflow<Output = u64>>(engine: &Engine, workflow: W, run: RunId) {
    assert_eq!(
        engine
            .answer_gate(&format!("{run}-1"), GateAnswer::approve())
            .await
            .unwrap(),
        AnswerAck::Applied
    );
    let handle = engine.handle(workflow, run).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), handle.result());
    assert_eq!(result.await.expect("the run finishes").unwrap(), 200);
}

/// A gate of another kind, or with other options, under the same title blocks the run, and
/// the report shows what replay compares of both gates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_of_another_kind_blocks_with_nd001_naming_both() {
    blocks_with_nd001_naming(
        |b| b.workflow(nd_gate_decision),
        r#"with a different input (journaled: {"kind":"APPROVAL","options":[],"title":"continue?"}; now: {"kind":"DECISION","options":["yes","no"],"title":"continue?"})"#,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_journaled_step_blocks_with_nd002_until_the_code_is_restored() {
    let (_dir, db, run) = waiting_run_in_a_new_store().await;

    let (engine, view) = reopened(run, || builder(&db).workflow(nd_gate_removed)).await;
    let reason = view.reason.clone().unwrap_or_default();
    assert_eq!(view.status, RunStatus::Blocked, "{view:?}");
    assert!(reason.contains("[MAG-ND002]"), "{reason}");
    assert!(
        reason.contains("continue?"),
        "names the removed gate: {reason}"
    );
    let journal = engine.journal(run).unwrap();
    let finished: Vec<&Record> = journal
        .iter()
        .map(|e| &e.record)
        .filter(|r| {
            matches!(r, Record::Result { .. })
                || matches!(r, Record::Status { status, .. } if status.is_terminal())
        })
        .collect();
    assert!(
        finished.is_empty(),
        "a run whose code no longer matches its journal must not be finished: {finished:?}"
    );
    drop(engine);

    reopen_with_original_and_finish(&db, run).await;
}

/// A changed input type makes the code fail before its first step: the report says why,
/// not only that the journaled step is no longer requested.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_input_that_no_longer_decodes_is_named_in_the_report() {
    let (_dir, db, run) = waiting_run_in_a_new_store().await;
    let (engine, view) = reopened(run, || builder(&db).workflow(nd_input_retyped)).await;
    let reason = view.reason.clone().unwrap_or_default();
    assert_eq!(view.status, RunStatus::Blocked, "{view:?}");
    assert!(reason.contains("[MAG-ND002]"), "{reason}");
    assert!(
        reason.contains("the code ended before this step") && reason.contains("invalid input"),
        "{reason}"
    );
    drop(engine);
    reopen_with_original_and_finish(&db, run).await;
}

/// A rolling change in one process: with versions 1 and 2 registered, the run of version 1
/// replays on version 1 and finishes there, new starts take version 2 (registered last), and
/// a typed start of version 1 still starts version 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_runs_finish_on_their_version_while_new_starts_take_the_new_one() {
    let (dir, db, run) = waiting_run_in_a_new_store().await;
    let engine = build_retrying(|| builder(&db).workflow(nd_original).workflow(nd_v2))
        .await
        .unwrap();
    let view = engine.wait_settled(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "{:?}", view.reason);
    engine
        .answer_gate(&format!("{run}-1"), GateAnswer::approve())
        .await
        .unwrap();
    let old = engine.handle(nd_original, run).unwrap();
    let result = tokio::time::timeout(Duration::from_secs(10), old.result()).await;
    assert_eq!(result.unwrap().unwrap(), 200);

    let new = engine
        .core()
        .start(magrathea::core::StartRequest::code(
            "nd",
            serde_json::json!(3),
        ))
        .await
        .unwrap();
    let view = engine.wait(new).await.unwrap();
    assert_eq!(view.workflow_version, "2");
    assert_eq!(view.result, Some(serde_json::json!(300)));
    let typed = engine.start(nd_original, 4).await.unwrap();
    let view = engine.wait_settled(typed.id()).await.unwrap();
    assert_eq!(view.workflow_version, "1");
    assert_eq!(
        view.status,
        RunStatus::Waiting,
        "version 1 waits on its gate"
    );

    // A key that started a run of version 1 is no start of version 2: its typed handle
    // would decode version 1's result as version 2's.
    let keyed = |key: &str| magrathea::StartOptions {
        idempotency_key: Some(key.into()),
        started_by: None,
    };
    let first = engine.start_with(nd_original, 5, keyed("k")).await.unwrap();
    let again = engine.start_with(nd_original, 5, keyed("k")).await.unwrap();
    assert_eq!(again.id(), first.id(), "the same version: the same run");
    let error = engine
        .start_with(nd_v2, 5, keyed("k"))
        .await
        .map(|h| h.id())
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("[MAG-EN006]") && error.contains("version `1`"),
        "{error}"
    );

    // The same version twice is still a mistake.
    let twice = builder(&dir.path().join("other.redb"))
        .workflow(nd_v2)
        .workflow(nd_v2)
        .build()
        .await
        .unwrap_err();
    assert!(twice.to_string().contains("nd (version 2)"), "{twice}");
}

/// Reopens with the original code: the run replays cleanly, waits on its gate again, and
/// finishes DONE once the gate is answered.
async fn reopen_with_original_and_finish(db: &Path, run: RunId) {
    let engine = build_retrying(|| builder(db).workflow(nd_original))
        .await
        .unwrap();
    let settled = engine.wait_until(run, |s| s != RunStatus::Blocked && s != RunStatus::Running);
    let view = tokio::time::timeout(Duration::from_secs(10), settled)
        .await
        .expect("restoring the original code un-blocks the run within 10 s")
        .unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "{:?}", view.reason);
    approve_and_finish(&engine, nd_original, run).await;
    let journal = engine.journal(run).unwrap();
    assert!(
        journal.iter().any(|e| matches!(
            &e.record,
            Record::Status { status: RunStatus::Running, reason: Some(r) } if r == "unblocked"
        )),
        "un-blocking is journaled"
    );
    wait_for("the run to leave memory", Duration::from_secs(5), || {
        engine.core().runs_in_memory() == 0
    })
    .await;
}

/// `wait_settled` right after an engine is built answers the status replay gives the run, not
/// the one the last process stored: a waiting run whose code changed settles BLOCKED, and a
/// blocked run whose code was fixed settles WAITING at its gate again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_settled_after_a_reopen_answers_the_status_replay_gives() {
    let (_dir, db, run) = waiting_run_in_a_new_store().await;

    let engine = build_retrying(|| builder(&db).workflow(nd_swapped))
        .await
        .unwrap();
    let view = tokio::time::timeout(Duration::from_secs(10), engine.wait_settled(run))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.status, RunStatus::Blocked, "{view:?}");
    assert!(
        view.reason
            .as_deref()
            .unwrap_or_default()
            .contains("[MAG-ND001]"),
        "{view:?}"
    );
    drop(engine);

    let engine = build_retrying(|| builder(&db).workflow(nd_original))
        .await
        .unwrap();
    let view = tokio::time::timeout(Duration::from_secs(10), engine.wait_settled(run))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(view.status, RunStatus::Waiting, "{view:?}");
    assert_eq!(
        engine
            .answer_gate(&format!("{run}-1"), GateAnswer::approve())
            .await
            .unwrap(),
        AnswerAck::Applied
    );
}

/// The child of `nd_parent`: doubles its input.
#[workflow(name = "nd_kid")]
async fn nd_kid(_ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    Ok(n * 2)
}

/// A parent that runs a child with input 1, then waits on a gate.
#[workflow(name = "nd_parent", version = "1")]
async fn nd_parent(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let doubled = ctx
        .child(nd_kid, n)
        .await
        .map_err(|e| WorkflowError::failed(e.reason))?;
    answered(&ctx, Gate::approval("continue?").into_spec()).await?;
    Ok(doubled)
}

/// Changed: the child is now asked with another input.
#[workflow(name = "nd_parent", version = "1")]
async fn nd_parent_other_input(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let doubled = ctx
        .child(nd_kid, n + 1)
        .await
        .map_err(|e| WorkflowError::failed(e.reason))?;
    answered(&ctx, Gate::approval("continue?").into_spec()).await?;
    Ok(doubled)
}

/// A child asked for with another input blocks its parent, and the report shows the input the
/// child ran with (read from the child's journal) beside the code's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_child_input_blocks_with_nd001_naming_both_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("journal.redb");
    let parent = {
        let db = db.clone();
        tokio::task::spawn_blocking(move || {
            let rt = runtime();
            let run = rt.block_on(async {
                let engine = Engine::builder()
                    .path(&db)
                    .workflow(nd_kid)
                    .workflow(nd_parent)
                    .build()
                    .await
                    .unwrap();
                let run = engine.start(nd_parent, 1).await.unwrap().id();
                let view = engine.wait_settled(run).await.unwrap();
                assert_eq!(view.status, RunStatus::Waiting, "{:?}", view.reason);
                run
            });
            rt.shutdown_background();
            run
        })
        .await
        .unwrap()
    };
    let (engine, view) = reopened(parent, || {
        Engine::builder()
            .path(&db)
            .workflow(nd_kid)
            .workflow(nd_parent_other_input)
    })
    .await;
    assert_eq!(view.status, RunStatus::Blocked);
    let reason = view.reason.unwrap_or_default();
    assert!(reason.contains("[MAG-ND001]"), "{reason}");
    assert!(
        reason.contains("child workflow `nd_kid` with a different input (journaled: 1; now: 2)"),
        "{reason}"
    );
    drop(engine);
}
