//! Replay bench: recovering a run whose journal holds 10,000 records.
//!
//! Run: `cargo bench -p magrathea-benches --bench replay`
//!
//! Setup (once, not timed): a durable engine runs `steps_then_sleep` with 4,999 sequential no-op
//! tasks, then a 1-hour durable sleep. Its journal is `StartRecord`, 4,999 ×
//! (`TaskStartedRecord`, `TaskResultRecord`), `TimerSetRecord`: exactly 10,000 records. The run
//! is then suspended and evicted from memory.
//!
//! - `replay/resume_until_suspended`: from `Engine::resume(run)` until the run has left memory
//!   again. That covers reading the 10,000 records from redb, decoding them, re-running the
//!   workflow code against them (4,999 task steps matched and fed back), re-arming the timer,
//!   and the eviction check. Replay writes nothing (the run's state is unchanged), so every
//!   iteration replays the same journal. The redb file is in the OS page cache and redb's own
//!   cache after the first iteration: this is a warm replay.
//! - `replay/read_journal`: only reading and decoding the 10,000 records
//!   (`Store::read_journal`), to split the figure above.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use magrathea_benches::{
    bench_dir, noop_task, steps_then_sleep_workflow, wait_until_no_run_in_memory,
};
use magrathea_core::{Engine, StartRequest};
use serde_json::json;

const TASKS: u64 = 4_999;
const RECORDS: u64 = 1 + 2 * TASKS + 1;

fn replay(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = bench_dir();
    let (engine, run) = rt.block_on(async {
        let engine = Engine::builder()
            .path(dir.path().join("journal.redb"))
            .workflow(steps_then_sleep_workflow())
            .task(noop_task())
            .build()
            .await
            .expect("building the engine");
        let started = Instant::now();
        let run = engine
            .start(StartRequest::code(
                "steps_then_sleep",
                json!({"tasks": TASKS, "sleep_ms": 3_600_000}),
            ))
            .await
            .expect("start");
        wait_until_no_run_in_memory(&engine).await;
        let records = engine.journal(run).expect("journal").len() as u64;
        assert_eq!(
            records, RECORDS,
            "the run's journal has the expected length"
        );
        println!(
            "replay: built a {records}-record journal in {:.2} s",
            started.elapsed().as_secs_f64()
        );
        (engine, run)
    });

    let mut g = c.benchmark_group("replay");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(RECORDS));
    g.bench_function("resume_until_suspended", |b| {
        let _rt = rt.enter();
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                engine.resume(run);
                // `resume` registers the run in memory before it returns; it leaves once it
                // is suspended again. Yield rather than sleep: tokio's timer is too coarse.
                while engine.runs_in_memory() > 0 {
                    std::thread::yield_now();
                }
                total += started.elapsed();
            }
            total
        })
    });
    let store = engine.store();
    g.bench_function("read_journal", |b| {
        b.iter(|| store.read_journal(run).expect("read_journal"))
    });
    g.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
