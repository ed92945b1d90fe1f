//! The runs one tenant has in progress are bounded
//! (`EngineBuilder::max_active_runs_per_tenant`): a top-level start beyond the bound is
//! refused with `[MAG-EN008]` and starts nothing, and a sub-run beyond it is not started (its
//! step fails with that error). Other tenants, and runs of no scope, are not held back. Runs
//! that wait out of memory count until they end, and give their place back when they do.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use magrathea::core::{StartError, StartRequest};
use magrathea::prelude::*;
use serde_json::json;

/// The keys whose `hold` tasks may return.
static RELEASED: Mutex<Option<HashSet<String>>> = Mutex::new(None);

fn release(key: &str) {
    RELEASED
        .lock()
        .unwrap()
        .get_or_insert_with(HashSet::new)
        .insert(key.to_owned());
}

fn released(key: &str) -> bool {
    RELEASED
        .lock()
        .unwrap()
        .as_ref()
        .is_some_and(|keys| keys.contains(key))
}

/// Busy (a running task keeps the run in memory) until `key` is released.
#[task]
async fn hold(key: String) -> Result<(), TaskError> {
    while !released(&key) {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

#[workflow]
async fn busy(ctx: Context, key: String) -> Result<(), WorkflowError> {
    ctx.task(hold, key).await?;
    Ok(())
}

/// Starts a `busy` child and returns how it ended.
#[workflow]
async fn parent(ctx: Context, key: String) -> Result<String, WorkflowError> {
    match ctx.child(busy, key).await {
        Ok(()) => Ok("child done".into()),
        Err(e) => Ok(format!("child failed: {e}")),
    }
}

/// Sleeps `ms` milliseconds on a durable timer.
#[workflow]
async fn nap(ctx: Context, ms: u64) -> Result<(), WorkflowError> {
    ctx.sleep(Duration::from_millis(ms)).await?;
    Ok(())
}

fn builder(limit: u32) -> magrathea::EngineBuilder {
    Engine::builder()
        .workflow(busy)
        .workflow(parent)
        .workflow(nap)
        .task(hold)
        .max_active_runs_per_tenant(limit)
        // Runs that wait leave memory as soon as they wait.
        .with_core(|b| b.evict_after(Duration::from_millis(1)))
}

async fn engine(limit: u32) -> Engine {
    builder(limit).in_memory().build().await.unwrap()
}

/// Starts `busy` with `key` in acme/shop as soon as the tenant has a place: the driver of a
/// run that ended leaves memory just after its status is durable.
async fn start_once_free(engine: &Engine, key: &str) -> RunId {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match start(engine, "busy", "acme/shop", key).await {
            Ok(run) => return run,
            Err(StartError::TenantFull { .. }) => {
                assert!(std::time::Instant::now() < deadline, "no place was freed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// Asserts that a start in acme/shop is refused for the tenant's two runs in progress.
async fn refused_for_two(engine: &Engine, key: &str) {
    let refused = start(engine, "busy", "acme/shop", key).await.unwrap_err();
    assert!(
        matches!(refused, StartError::TenantFull { held: 2, .. }),
        "{refused:?}"
    );
}

/// Waits until no run is in memory: each waits out of it, or ended.
async fn none_in_memory(engine: &Engine) {
    magrathea_tests::wait_for("no run in memory", Duration::from_secs(30), || {
        engine.core().runs_in_memory() == 0
    })
    .await;
}

async fn start(
    engine: &Engine,
    workflow: &str,
    scope: &str,
    key: &str,
) -> Result<RunId, StartError> {
    engine
        .core()
        .start(StartRequest::code(workflow, json!(key)).scope(scope))
        .await
}

/// Starts a `nap` of `ms` milliseconds in acme/shop.
async fn nap_in_acme(engine: &Engine, ms: u64) -> RunId {
    engine
        .core()
        .start(StartRequest::code("nap", json!(ms)).scope("acme/shop"))
        .await
        .unwrap()
}

async fn ended(engine: &Engine, run: RunId) -> magrathea::RunView {
    tokio::time::timeout(Duration::from_secs(30), engine.core().wait(run))
        .await
        .unwrap_or_else(|_| panic!("run {run} did not end"))
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_has_at_most_its_bound_of_runs_in_progress() {
    let engine = engine(2).await;
    let a = start(&engine, "busy", "acme/shop", "t1-a").await.unwrap();
    let _b = start(&engine, "busy", "acme/blog", "t1-b").await.unwrap();
    let before = engine.list_runs(&Default::default()).unwrap().len();

    // The tenant's two projects share its bound; the refusal names it and starts nothing.
    let refused = start(&engine, "busy", "acme/shop", "t1-c")
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StartError::TenantFull { ref tenant, held: 2, limit: 2 } if tenant == "acme"),
        "{refused:?}"
    );
    assert!(refused.to_string().starts_with("[MAG-EN008]"), "{refused}");
    assert_eq!(engine.list_runs(&Default::default()).unwrap().len(), before);

    // Another tenant, and a run of no scope, start as before.
    let other = start(&engine, "busy", "globex/shop", "t1-d").await.unwrap();
    let unscoped = start(&engine, "busy", "", "t1-e").await.unwrap();

    // A run that ends frees its place.
    release("t1-a");
    assert_eq!(ended(&engine, a).await.status, RunStatus::Done);
    start_once_free(&engine, "t1-f").await;
    for key in ["t1-b", "t1-d", "t1-e", "t1-f"] {
        release(key);
    }
    assert_eq!(ended(&engine, other).await.status, RunStatus::Done);
    assert_eq!(ended(&engine, unscoped).await.status, RunStatus::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_run_beyond_the_tenants_bound_is_not_started_and_its_step_fails() {
    let engine = engine(2).await;
    let held = start(&engine, "busy", "acme/shop", "t2-a").await.unwrap();
    // The parent is the tenant's second run: its child would be the third.
    let run = start(&engine, "parent", "acme/shop", "t2-b").await.unwrap();
    let view = ended(&engine, run).await;
    assert_eq!(view.status, RunStatus::Done);
    let result = view.result.unwrap().to_string();
    assert!(
        result.contains("child failed") && result.contains("[MAG-EN008] tenant `acme` has 2 runs"),
        "{result}"
    );
    release("t2-a");
    ended(&engine, held).await;

    // Once the busy run has left memory (just after its status is durable), the same
    // parent's child runs.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for attempt in 0.. {
        let key = format!("t2-c{attempt}");
        release(&key);
        let run = start(&engine, "parent", "acme/shop", &key).await.unwrap();
        let result = ended(&engine, run).await.result.unwrap();
        if result == json!("child done") {
            break;
        }
        assert!(
            result.to_string().contains("[MAG-EN008]") && std::time::Instant::now() < deadline,
            "{result}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_waiting_out_of_memory_count_until_they_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.redb");
    let engine = builder(2).path(&path).build().await.unwrap();
    let week = 7 * 24 * 3600 * 1000u64;
    let a = nap_in_acme(&engine, week).await;
    nap_in_acme(&engine, week).await;
    none_in_memory(&engine).await;
    refused_for_two(&engine, "t3-a").await;

    // After a restart the waiting runs are recovered, wait out of memory again, and count.
    engine.core().stop(Duration::from_secs(5)).await;
    drop(engine);
    let engine = builder(2).path(&path).build().await.unwrap();
    none_in_memory(&engine).await;
    refused_for_two(&engine, "t3-b").await;

    // A waiting run that is cancelled is taken into memory, ends, and frees its place.
    engine.core().cancel(a, "done waiting").await.unwrap();
    assert_eq!(ended(&engine, a).await.status, RunStatus::Cancelled);
    let run = start_once_free(&engine, "t3-c").await;
    release("t3-c");
    assert_eq!(ended(&engine, run).await.status, RunStatus::Done);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_wakes_and_ends_gives_its_place_back() {
    let engine = engine(1).await;
    // Many short naps, one after another: each waits out of memory, wakes and ends.
    for _ in 0..5 {
        let run = nap_in_acme(&engine, 50).await;
        assert_eq!(ended(&engine, run).await.status, RunStatus::Done);
        // The place is free once the ended run's driver has left memory.
        none_in_memory(&engine).await;
    }
    let run = start(&engine, "busy", "acme/shop", "t4-a").await.unwrap();
    release("t4-a");
    assert_eq!(ended(&engine, run).await.status, RunStatus::Done);
}

/// `busy` with a large parameter that only its start record holds (the task gets the key).
#[workflow]
async fn laden(ctx: Context, load: (String, String)) -> Result<(), WorkflowError> {
    ctx.task(hold, load.0).await?;
    Ok(())
}

/// Starts `laden` with `key` and 20,000 bytes of padding in `scope`.
async fn start_laden(engine: &Engine, scope: &str, key: &str) -> Result<RunId, StartError> {
    engine
        .core()
        .start(StartRequest::code("laden", json!([key, "x".repeat(20_000)])).scope(scope))
        .await
}

/// Starts a laden run with `key` in acme/shop once the tenant's runs in memory leave room.
async fn start_once_room(engine: &Engine, key: &str) -> RunId {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        match start_laden(engine, "acme/shop", key).await {
            Ok(run) => return run,
            Err(StartError::TenantMemoryFull { .. }) => {
                assert!(std::time::Instant::now() < deadline, "no room was freed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

/// The journal bytes a tenant's runs hold in memory are bounded as well
/// (`EngineBuilder::max_resident_bytes_per_tenant`): runs with large parameters whose steps
/// run keep them resident, and a start that would pass the bound is refused with
/// `[MAG-EN008]`, starts nothing, and holds back no other tenant; a run that ends makes room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_runs_in_memory_hold_at_most_its_bytes() {
    let engine = builder(100)
        .workflow(laden)
        .with_core(|b| b.max_resident_bytes_per_tenant(Some(50_000)))
        .in_memory()
        .build()
        .await
        .unwrap();
    // Two runs of about 20 KB each fit; a third would pass 50,000 bytes.
    let a = start_laden(&engine, "acme/shop", "t5-a").await.unwrap();
    let b = start_laden(&engine, "acme/blog", "t5-b").await.unwrap();
    let before = engine.list_runs(&Default::default()).unwrap().len();
    let refused = start_laden(&engine, "acme/shop", "t5-c").await.unwrap_err();
    assert!(
        matches!(refused, StartError::TenantMemoryFull { ref tenant, limit: 50_000, .. } if tenant == "acme"),
        "{refused:?}"
    );
    assert!(refused.to_string().starts_with("[MAG-EN008]"), "{refused}");
    assert_eq!(engine.list_runs(&Default::default()).unwrap().len(), before);
    // Another tenant has room of its own.
    let other = start_laden(&engine, "globex/shop", "t5-d").await.unwrap();
    // A run that ends makes room.
    release("t5-a");
    assert_eq!(ended(&engine, a).await.status, RunStatus::Done);
    let c = start_once_room(&engine, "t5-c").await;
    for key in ["t5-b", "t5-c", "t5-d"] {
        release(key);
    }
    for run in [b, c, other] {
        assert_eq!(ended(&engine, run).await.status, RunStatus::Done);
    }
}
