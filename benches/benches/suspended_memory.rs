//! Resident memory with 1,000,000 runs suspended on durable timers.
//!
//! Run: `cargo bench -p magrathea-benches --bench suspended_memory`
//! (`MAGRATHEA_SUSPENDED_RUNS=100000` for a smaller count, e.g. under a heap profiler).
//!
//! Criterion does not measure memory, so this is a plain program (`harness = false`). A durable
//! engine (`Durability::Immediate`) starts 1,000,000 runs of `steps_then_sleep` with no task and
//! a 1-hour sleep, from 1,000 concurrent starters. Each run commits its `StartRecord` and
//! `TimerSetRecord` and, its wake-up being further away than `evict_after`, leaves memory; the
//! timer service keeps its due time. Once no run is in memory, the program prints `VmRSS`
//! (resident memory now), `VmHWM` (peak) from `/proc/self/status`, and the resident memory
//! above the idle engine's per suspended run; then it exits without tearing the engine down.
//!
//! The figure includes redb's page cache (1 GiB cap by default), which holds the pages of the
//! journal file written here: with a million runs that cache, not the engine, is most of it.
//!
//! Like the criterion benches it honours a name filter: `cargo bench -- journal` skips it.

use std::time::{Duration, Instant};

use magrathea_benches::{
    bench_dir, noop_task, proc_status_kib, selected, steps_then_sleep_workflow,
    wait_until_no_run_in_memory,
};
use magrathea_core::{Engine, StartRequest};
use serde_json::json;

/// Runs started, unless `MAGRATHEA_SUSPENDED_RUNS` says otherwise (a smaller count is handy
/// under a heap profiler).
const RUNS: usize = 1_000_000;
const STARTERS: usize = 1_000;

/// The number of runs to start: [`RUNS`], or `MAGRATHEA_SUSPENDED_RUNS`.
fn runs() -> usize {
    std::env::var("MAGRATHEA_SUSPENDED_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(RUNS)
}
const NAME: &str = "suspended_memory";

fn mib(kib: Option<u64>) -> String {
    kib.map_or("n/a".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

fn main() {
    if !selected(NAME) {
        return;
    }
    let runs = runs();
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = bench_dir();
    rt.block_on(async {
        let engine = Engine::builder()
            .path(dir.path().join("journal.redb"))
            .workflow(steps_then_sleep_workflow())
            .task(noop_task())
            .build()
            .await
            .expect("building the engine");
        let idle_kib = proc_status_kib("VmRSS");
        let started = Instant::now();
        let starters: Vec<_> = (0..STARTERS)
            .map(|_| {
                let engine = engine.clone();
                tokio::spawn(async move {
                    for _ in 0..runs / STARTERS {
                        engine
                            .start(StartRequest::code(
                                "steps_then_sleep",
                                json!({"tasks": 0, "sleep_ms": 3_600_000}),
                            ))
                            .await
                            .expect("start");
                    }
                })
            })
            .collect();
        for s in starters {
            s.await.expect("starter task");
        }
        let all_started = started.elapsed();
        wait_until_no_run_in_memory(&engine).await;
        let suspended = started.elapsed();
        // Let the timer service drain its registration queue.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let stats = engine.writer_stats();
        let commits = stats.commits.load(std::sync::atomic::Ordering::Relaxed);
        let records = stats.records.load(std::sync::atomic::Ordering::Relaxed);
        let file = std::fs::metadata(dir.path().join("journal.redb")).map_or(0, |m| m.len());
        let (rss, hwm) = (proc_status_kib("VmRSS"), proc_status_kib("VmHWM"));
        println!("{NAME}: {runs} runs suspended on 1-hour durable timers (Immediate)");
        println!(
            "{NAME}: started in {:.2} s ({:.0} runs/s), all evicted after {:.2} s; \
             {records} records in {commits} commits; journal file {:.1} MiB",
            all_started.as_secs_f64(),
            runs as f64 / all_started.as_secs_f64(),
            suspended.as_secs_f64(),
            file as f64 / (1024.0 * 1024.0)
        );
        let per_run = match (rss, idle_kib) {
            (Some(now), Some(idle)) => format!(
                "{:.0} bytes",
                now.saturating_sub(idle) as f64 * 1024.0 / runs as f64
            ),
            _ => "n/a".into(),
        };
        println!(
            "{NAME}: runs in memory {}; VmRSS idle engine {}, VmRSS now {}, VmHWM (peak) {}; \
             VmRSS above idle per suspended run {per_run}",
            engine.runs_in_memory(),
            mib(idle_kib),
            mib(rss),
            mib(hwm)
        );
        // Everything is measured: exit without tearing down a million runs' worth of engine
        // state. (It also makes a heap profiler's "leaked at exit" the memory measured here.)
        let _ = std::fs::remove_dir_all(dir.path());
        std::process::exit(0);
    });
}
