//! A large run's memory goes back to the operating system once the run has ended.
//!
//! Alone in its test binary, so that nothing else allocates in the process while the resident
//! set is measured. The run's tasks hold 256 MiB of small allocations at once (as tasks that
//! parse or build large data do) and return 16 MiB of output, which the journal keeps; after
//! the run, the process's resident set must come back to within 64 MiB of what it was before.
//! glibc keeps freed memory in its arenas, and what the run left allocated in between (its
//! journal) keeps the arenas from shrinking on their own; the engine's heap trim after a large
//! run is what gives the pages back.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use magrathea_core::{
    Engine, MemoryStore, RunStatus, StartRequest, TaskOptions, TaskRegistration,
    WorkflowRegistration,
};
use serde_json::{Value, json};

/// Tasks of the large run, all running at once.
const TASKS: usize = 32;
/// Bytes of small allocations each task holds at its peak.
const TASK_TRANSIENT: usize = 8 << 20;
/// Bytes of output each task returns (so the journal is 16 MiB, over the trim threshold).
const TASK_OUTPUT: usize = 512 << 10;
/// How far above the baseline the resident set may stay after the run.
const BOUND: u64 = 64 << 20;

/// The process's resident set in bytes (`VmRSS` of /proc/self/status).
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("a VmRSS line");
    let kib: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .expect("VmRSS in kB");
    kib * 1024
}

/// A task that holds `TASK_TRANSIENT` bytes of small allocations until every task holds its
/// own, then drops them and returns `TASK_OUTPUT` bytes of JSON in small strings.
fn big_task(peak: Arc<tokio::sync::Barrier>) -> TaskRegistration {
    TaskRegistration::new("big", TaskOptions::default(), move |input, _| {
        let peak = peak.clone();
        async move {
            let i = input.as_u64().unwrap_or(0);
            let chunks: Vec<Box<[u8]>> = (0..TASK_TRANSIENT / 64)
                .map(|n| vec![(n as u8) ^ (i as u8); 64].into_boxed_slice())
                .collect();
            peak.wait().await;
            let sum: u64 = chunks.iter().map(|c| u64::from(c[0])).sum();
            drop(chunks);
            let items: Vec<Value> = (0..TASK_OUTPUT / 100)
                .map(|n| Value::String(format!("{i:04}-{n:08}-{}", "x".repeat(80))))
                .collect();
            Ok(json!({ "sum": sum, "items": items }))
        }
    })
}

#[test]
fn a_large_runs_memory_returns_to_the_os_after_it_ends() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let peak = Arc::new(tokio::sync::Barrier::new(TASKS));
        let large = WorkflowRegistration::new("large", "1", |ctx, _| async move {
            let calls = (0..TASKS).map(|i| ctx.task("big", json!(i)));
            let mut n = 0;
            for out in futures::future::join_all(calls).await {
                n += out?["items"].as_array().map_or(0, Vec::len);
            }
            Ok(json!(n))
        });
        let small = WorkflowRegistration::new("small", "1", |_, _| async move { Ok(json!(1)) });
        let engine = Engine::builder()
            .store(Arc::new(MemoryStore::new()))
            .task(big_task(peak))
            .workflow(large)
            .workflow(small)
            .build()
            .await
            .unwrap();
        // Warm the runtime and the engine up, so the baseline counts what any run needs.
        let run = engine
            .start(StartRequest::code("small", json!(null)))
            .await
            .unwrap();
        engine.wait(run).await.unwrap();
        let baseline = rss();

        let run = engine
            .start(StartRequest::code("large", json!(null)))
            .await
            .unwrap();
        let peak_rss = Arc::new(AtomicU64::new(0));
        let sampler = tokio::spawn({
            let peak_rss = peak_rss.clone();
            async move {
                loop {
                    peak_rss.fetch_max(rss(), Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        });
        let view = engine.wait(run).await.unwrap();
        assert_eq!(view.status, RunStatus::Done, "{view:?}");
        sampler.abort();
        let peak = peak_rss.load(Ordering::Relaxed);
        assert!(
            peak >= baseline + (200 << 20),
            "the run must hold at least 200 MiB for this test to mean anything: the resident \
             set peaked at {} MiB over a baseline of {} MiB",
            peak >> 20,
            baseline >> 20
        );
        let journal: usize = engine
            .journal(run)
            .unwrap()
            .iter()
            .map(|e| serde_json::to_vec(e).map_or(0, |v| v.len()))
            .sum();
        assert!(journal > 8 << 20, "the run's journal is {journal} bytes");

        let deadline = Instant::now() + Duration::from_secs(60);
        let mut now = rss();
        while now > baseline + BOUND && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(100)).await;
            now = rss();
        }
        assert!(
            now <= baseline + BOUND,
            "after the run the resident set is {} MiB, more than {} MiB above the baseline of \
             {} MiB",
            now >> 20,
            BOUND >> 20,
            baseline >> 20
        );
        drop(engine);
    });
}
