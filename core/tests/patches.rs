//! Changing the code under running workflows: patch markers, and runs suspended by the old
//! code (on a timer, at a gate, between retries) that finish on the new code.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use magrathea_core::testing::gate_spec;
use magrathea_core::{
    Engine, EngineBuilder, GateAnswer, GateKind, GateSpec, InboxFilter, MemoryStore, Record,
    RetryPolicy, RunId, RunStatus, StartRequest, TaskError, TaskOptions, TaskRegistration,
    WorkflowContext, WorkflowRegistration,
};
use serde_json::{Value, json};

fn echo(name: &'static str) -> TaskRegistration {
    TaskRegistration::new(name, TaskOptions::default(), move |v, _| async move {
        Ok(json!({ name: v }))
    })
}

fn approval() -> GateSpec {
    gate_spec(GateKind::Approval, "go?")
}

async fn build(store: &Arc<MemoryStore>, wf: WorkflowRegistration) -> Engine {
    build_with(store, wf, |b| b).await
}

async fn build_with(
    store: &Arc<MemoryStore>,
    wf: WorkflowRegistration,
    f: impl FnOnce(EngineBuilder) -> EngineBuilder,
) -> Engine {
    f(Engine::builder()
        .store(store.clone())
        .task(echo("a"))
        .task(echo("b"))
        .task(echo("c"))
        .task(echo("d"))
        .workflow(wf))
    .build()
    .await
    .expect("the engine opens")
}

async fn approve(engine: &Engine, run: RunId) {
    engine.wait_settled(run).await.unwrap();
    let item = engine
        .inbox(InboxFilter::Pending)
        .unwrap()
        .into_iter()
        .find(|i| i.workflow_run_id == run)
        .expect("a pending item");
    engine
        .answer_gate(&item.id, GateAnswer::approve())
        .await
        .unwrap();
}

fn markers(engine: &Engine, run: RunId) -> Vec<String> {
    engine
        .journal(run)
        .unwrap()
        .into_iter()
        .filter_map(|e| match e.record {
            Record::SideEffect { name, .. } if name.starts_with("patch:") => Some(name),
            _ => None,
        })
        .collect()
}

async fn gate(ctx: &WorkflowContext) {
    let _ = ctx.gate(approval()).await;
}

/// The old code: `a`, a gate, then `c`.
fn old_code() -> WorkflowRegistration {
    WorkflowRegistration::new("order", "1", |ctx, _| async move {
        let a = ctx.task("a", json!(1)).await?;
        gate(&ctx).await;
        let c = ctx.task("c", json!(3)).await?;
        Ok(json!([a, c]))
    })
}

/// The new code: `b` instead of `a` behind patch `use-b`, and `d` instead of `c` behind patch
/// `use-d`.
fn patched_code() -> WorkflowRegistration {
    WorkflowRegistration::new("order", "1", |ctx, _| async move {
        let first = if ctx.patched("use-b") {
            ctx.task("b", json!(1)).await?
        } else {
            ctx.task("a", json!(1)).await?
        };
        gate(&ctx).await;
        let last = if ctx.patched("use-d") {
            ctx.task("d", json!(3)).await?
        } else {
            ctx.task("c", json!(3)).await?
        };
        Ok(json!([first, last]))
    })
}

/// Waits until the run has ended or is blocked with nobody driving it (never longer than 10 s).
async fn ended(engine: &Engine, run: RunId) -> magrathea_core::RunView {
    tokio::time::timeout(Duration::from_secs(10), engine.wait(run))
        .await
        .expect("wait returns for an ended or blocked run")
        .expect("the run reads")
}

#[tokio::test]
async fn a_new_run_takes_the_patched_path_and_records_its_markers() {
    let store = Arc::new(MemoryStore::new());
    let engine = build(&store, patched_code()).await;
    let run = engine
        .start(StartRequest::code("order", json!({})))
        .await
        .unwrap();
    approve(&engine, run).await;
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.result, Some(json!([{"b": 1}, {"d": 3}])));
    assert_eq!(markers(&engine, run), vec!["patch:use-b", "patch:use-d"]);
}

#[tokio::test]
async fn a_run_of_the_old_code_keeps_its_path_until_it_reaches_a_patch() {
    let store = Arc::new(MemoryStore::new());
    let run = {
        let engine = build(&store, old_code()).await;
        let run = engine
            .start(StartRequest::code("order", json!({})))
            .await
            .unwrap();
        engine.wait_settled(run).await.unwrap();
        run
    };
    let engine = build(&store, patched_code()).await;
    approve(&engine, run).await;
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    // `a` ran before the change; the gate was passed after it, so the run takes `d`.
    assert_eq!(view.result, Some(json!([{"a": 1}, {"d": 3}])));
    assert_eq!(markers(&engine, run), vec!["patch:use-d"]);
}

#[tokio::test]
async fn a_deprecated_patch_accepts_recorded_markers_and_records_no_new_ones() {
    let deprecated = || {
        WorkflowRegistration::new("order", "1", |ctx, _| async move {
            ctx.deprecate_patch("use-b");
            let first = ctx.task("b", json!(1)).await?;
            gate(&ctx).await;
            ctx.deprecate_patch("use-d");
            let last = ctx.task("d", json!(3)).await?;
            Ok(json!([first, last]))
        })
    };
    let store = Arc::new(MemoryStore::new());
    let run = {
        let engine = build(&store, patched_code()).await;
        let run = engine
            .start(StartRequest::code("order", json!({})))
            .await
            .unwrap();
        engine.wait_settled(run).await.unwrap();
        run
    };
    let engine = build(&store, deprecated()).await;
    approve(&engine, run).await;
    let view = engine.wait(run).await.unwrap();
    assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
    assert_eq!(markers(&engine, run), vec!["patch:use-b"], "no new marker");

    let fresh = engine
        .start(StartRequest::code("order", json!({})))
        .await
        .unwrap();
    approve(&engine, fresh).await;
    assert_eq!(engine.wait(fresh).await.unwrap().status, RunStatus::Done);
    assert!(markers(&engine, fresh).is_empty());
}

#[tokio::test]
async fn a_marker_of_another_patch_is_nd005() {
    let store = Arc::new(MemoryStore::new());
    let run = {
        let engine = build(&store, patched_code()).await;
        let run = engine
            .start(StartRequest::code("order", json!({})))
            .await
            .unwrap();
        engine.wait_settled(run).await.unwrap();
        run
    };
    let renamed = WorkflowRegistration::new("order", "1", |ctx, _| async move {
        if ctx.patched("use-b-v2") {
            ctx.task("b", json!(1)).await?;
        }
        gate(&ctx).await;
        Ok(Value::Null)
    });
    let engine = build(&store, renamed).await;
    let view = ended(&engine, run).await;
    assert_eq!(view.status, RunStatus::Blocked);
    let reason = view.reason.unwrap_or_default();
    assert!(reason.starts_with("[MAG-ND005]"), "{reason}");
    assert!(
        reason.contains("use-b-v2") && reason.contains("`use-b`"),
        "{reason}"
    );
    // The usual cause, a patch removed while runs that recorded it are in flight, is named
    // with its fix.
    assert!(
        reason.contains(r#"`ctx.deprecate_patch("use-b")`"#),
        "{reason}"
    );
}

/// Runs suspended by the old code — on a durable timer, at a gate, and between two attempts of
/// a failing task — all finish on the new code, which adds a step behind a patch.
#[tokio::test]
async fn runs_suspended_by_the_old_code_finish_after_the_change() {
    static FLAKY: AtomicU32 = AtomicU32::new(0);
    let flaky = || {
        TaskRegistration::new(
            "flaky",
            TaskOptions {
                retry: RetryPolicy::exponential(
                    3,
                    Duration::from_millis(300),
                    Duration::from_secs(1),
                ),
                ..TaskOptions::default()
            },
            |v, _| async move {
                if FLAKY.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(TaskError::retryable("first attempt fails"))
                } else {
                    Ok(v)
                }
            },
        )
    };
    let old_code = WorkflowRegistration::new("suspend", "1", |ctx, input| async move {
        match input["kind"].as_str() {
            Some("timer") => ctx.sleep(Duration::from_millis(300)).await?,
            Some("gate") => gate(&ctx).await,
            _ => {
                ctx.task("flaky", json!(1)).await?;
            }
        }
        Ok(json!("old"))
    });
    let new_code = WorkflowRegistration::new("suspend", "1", |ctx, input| async move {
        match input["kind"].as_str() {
            Some("timer") => ctx.sleep(Duration::from_millis(300)).await?,
            Some("gate") => gate(&ctx).await,
            _ => {
                ctx.task("flaky", json!(1)).await?;
            }
        }
        if ctx.patched("audit") {
            ctx.task("a", json!("audited")).await?;
            return Ok(json!("new"));
        }
        Ok(json!("old"))
    });
    let store = Arc::new(MemoryStore::new());
    let runs: Vec<RunId> = {
        // Suspended runs leave memory at once, so that only the new engine drives them.
        let engine = build_with(&store, old_code, |b| {
            b.task(flaky()).evict_after(Duration::ZERO)
        })
        .await;
        let mut runs = Vec::new();
        for kind in ["timer", "gate", "retry"] {
            let run = engine
                .start(StartRequest::code("suspend", json!({ "kind": kind })))
                .await
                .unwrap();
            runs.push(run);
        }
        // Each is suspended: the retry's first attempt failed, the gate is open.
        engine.wait_settled(runs[1]).await.unwrap();
        while FLAKY.load(Ordering::SeqCst) == 0 || engine.runs_in_memory() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        for &run in &runs {
            assert!(!engine.status(run).unwrap().is_terminal());
        }
        runs
    };
    let engine = build_with(&store, new_code, |b| b.task(flaky())).await;
    approve(&engine, runs[1]).await;
    for run in runs {
        let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(run))
            .await
            .expect("no run is stranded")
            .unwrap();
        assert_eq!(view.status, RunStatus::Done, "{:?}", view.reason);
        assert_eq!(view.result, Some(json!("new")));
        assert_eq!(markers(&engine, run), vec!["patch:audit"]);
    }
}
