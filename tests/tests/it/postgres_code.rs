//! Code workflows on a PostgreSQL store (`EngineBuilder::postgres`): tasks, a durable timer that
//! fires after the engine restarts, a gate answered by the next engine, and idempotent starts.

use std::sync::OnceLock;
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{EngineBuilder, StartOptions};
use magrathea_postgres::testing::TestCluster;
use magrathea_tests::runtime;

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

#[task]
async fn double(_ctx: TaskContext, n: u64) -> Result<u64, TaskError> {
    Ok(n * 2)
}

#[workflow]
async fn pipeline(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    let a = ctx.task(double, n).await?;
    ctx.sleep(Duration::from_millis(300)).await?;
    let b = ctx.task(double, a).await?;
    Ok(b)
}

#[workflow]
async fn approve_then_double(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    match ctx.gate(Gate::approval("double it?").into_spec()).await {
        GateOutcome::Answered(_) => Ok(ctx.task(double, n).await?),
        other => Err(WorkflowError::failed(format!("{other:?}"))),
    }
}

fn builder(url: &str) -> EngineBuilder {
    Engine::builder()
        .postgres(url)
        .unwrap()
        .task(double)
        .workflow(pipeline)
        .workflow(approve_then_double)
}

#[test]
fn a_code_workflow_runs_to_its_result_on_postgres() {
    let url = cluster().create_database();
    runtime().block_on(async {
        let engine = builder(&url).build().await.unwrap();
        let run = engine.start(pipeline, 5).await.unwrap();
        assert_eq!(run.result().await.unwrap(), 20);
    });
}

#[test]
fn a_timer_set_before_a_restart_fires_after_it_and_the_run_finishes() {
    let url = cluster().create_database();
    let rt = runtime();
    let id = rt.block_on(async {
        let engine = builder(&url).build().await.unwrap();
        let run = engine.start(pipeline, 1).await.unwrap();
        // Wait until the timer is journaled, then stop this engine.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !engine
            .journal(run.id())
            .unwrap()
            .iter()
            .any(|e| matches!(e.record, magrathea::Record::TimerSet { .. }))
        {
            assert!(std::time::Instant::now() < deadline, "no timer was set");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        run.id()
    });
    rt.shutdown_background();

    let rt = runtime();
    rt.block_on(async {
        let engine = builder(&url).build().await.unwrap();
        let view = tokio::time::timeout(Duration::from_secs(20), engine.wait(id))
            .await
            .expect("the run ends after the restart")
            .unwrap();
        assert_eq!(view.status, RunStatus::Done, "{view:?}");
        assert_eq!(view.result, Some(serde_json::json!(4)));
    });
}

#[test]
fn a_gate_opened_by_one_engine_is_answered_through_the_next() {
    let url = cluster().create_database();
    let rt = runtime();
    let id = rt.block_on(async {
        let engine = builder(&url).build().await.unwrap();
        let run = engine.start(approve_then_double, 21).await.unwrap();
        engine
            .wait_until(run.id(), |s| s == RunStatus::Waiting)
            .await
            .unwrap();
        run.id()
    });
    rt.shutdown_background();

    let rt = runtime();
    rt.block_on(async {
        let engine = builder(&url).build().await.unwrap();
        let inbox = engine.inbox(magrathea::InboxFilter::Pending).unwrap();
        assert_eq!(inbox.len(), 1, "{inbox:?}");
        engine
            .answer_gate(&inbox[0].id, GateAnswer::approve())
            .await
            .unwrap();
        let view = engine.wait(id).await.unwrap();
        assert_eq!(view.result, Some(serde_json::json!(42)));
    });
}

#[test]
fn an_idempotency_key_returns_the_same_run_across_engines() {
    let url = cluster().create_database();
    let key = StartOptions {
        idempotency_key: Some("order-7".into()),
        ..Default::default()
    };
    let first = runtime().block_on(async {
        let engine = builder(&url).build().await.unwrap();
        engine
            .start_with(pipeline, 3, key.clone())
            .await
            .unwrap()
            .id()
    });
    let second = runtime().block_on(async {
        let engine = builder(&url).build().await.unwrap();
        engine.start_with(pipeline, 3, key).await.unwrap().id()
    });
    assert_eq!(first, second);
}

#[test]
fn a_run_driven_by_one_worker_is_awaited_through_another() {
    let url = cluster().create_database();
    runtime().block_on(async {
        let driving = builder(&url).build().await.unwrap();
        let waiting = builder(&url).build().await.unwrap();
        let run = driving.start(pipeline, 7).await.unwrap();
        let view = tokio::time::timeout(Duration::from_secs(20), waiting.wait(run.id()))
            .await
            .expect("the other worker's progress is seen through the store")
            .unwrap();
        assert_eq!(view.status, RunStatus::Done);
        assert_eq!(view.result, Some(serde_json::json!(28)));
    });
}
