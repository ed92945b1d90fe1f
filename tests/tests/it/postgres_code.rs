//! Code workflows on a PostgreSQL store (`EngineBuilder::postgres`): tasks, a durable timer that
//! fires after the engine restarts, a gate answered by the next engine, idempotent starts, and
//! a worker cut off from the database by the network.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use magrathea::prelude::*;
use magrathea::{EngineBuilder, StartOptions};
use magrathea_postgres::testing::{Relay, TestCluster};
use magrathea_postgres::{PgOptions, PgStore};
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

static HANGING_CALLS: AtomicU32 = AtomicU32::new(0);
static HANGING_RUNNING: AtomicBool = AtomicBool::new(false);
static HANGING_DROPPED: AtomicBool = AtomicBool::new(false);

/// Sets its flag when dropped: a task future dropped mid-way was stopped.
struct SetOnDrop(&'static AtomicBool);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Its first call never ends (until it is stopped); the next ones add one.
#[task]
async fn hangs_the_first_time(_ctx: TaskContext, n: u64) -> Result<u64, TaskError> {
    if HANGING_CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
        let _stopped = SetOnDrop(&HANGING_DROPPED);
        HANGING_RUNNING.store(true, Ordering::SeqCst);
        std::future::pending::<()>().await;
    }
    Ok(n + 1)
}

#[workflow]
async fn hangs_once(ctx: Context, n: u64) -> Result<u64, WorkflowError> {
    Ok(ctx.task(hangs_the_first_time, n).await?)
}

fn worker_on(url: &str) -> EngineBuilder {
    let store = PgStore::connect_with(
        url,
        PgOptions {
            lease_grace: Duration::from_millis(600),
            ..Default::default()
        },
    )
    .unwrap();
    Engine::builder()
        .store(Arc::new(store))
        .task(hangs_the_first_time)
        .workflow(hangs_once)
}

/// Waits up to 20 s for `flag`; before failing, lets the relay through (an engine dropped
/// while its database does not answer waits on it).
async fn until(flag: &AtomicBool, what: &str, relay: &Relay) {
    for _ in 0..1000 {
        if flag.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    relay.thaw();
    panic!("never: {what}");
}

#[test]
fn a_worker_cut_off_from_the_database_stops_its_runs_and_another_finishes_them() {
    let url = cluster().create_database();
    let relay = Relay::start(cluster().port());
    runtime().block_on(async {
        let cut_off = worker_on(&relay.url(&url)).build().await.unwrap();
        let run = cut_off.start(hangs_once, 1).await.unwrap();
        until(&HANGING_RUNNING, "the first worker runs the task", &relay).await;

        relay.freeze();
        // Its leases cannot be renewed: before another worker may take the run over, the cut-off
        // worker stops driving it, and so stops the task it was running.
        until(
            &HANGING_DROPPED,
            "the cut-off worker stops the task",
            &relay,
        )
        .await;
        let other = worker_on(&url).build().await.unwrap();
        let view = tokio::time::timeout(Duration::from_secs(30), other.wait(run.id())).await;
        relay.thaw();
        let view = view.expect("the other worker takes the run over").unwrap();
        assert_eq!(view.status, RunStatus::Done);
        assert_eq!(view.result, Some(serde_json::json!(2)));
        assert_eq!(HANGING_CALLS.load(Ordering::SeqCst), 2);
        drop(cut_off);
    });
}
