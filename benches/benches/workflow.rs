//! End-to-end workflow benches, durable (`Durability::Immediate`), against raw redb commits
//! measured in the same run.
//!
//! Run: `cargo bench -p magrathea-benches --bench workflow`
//!
//! - `latency/raw_redb_10_commits`: 10 sequential raw redb `Immediate` commits of one record
//!   each, the floor of a 10-step workflow (one commit per step on the critical path);
//! - `latency/ten_steps`: one workflow of 10 sequential no-op tasks, alone, from
//!   `Engine::start` to `Engine::wait` returning its result;
//! - `latency/paired` (printed, not a criterion bench): the two above alternated pair by pair,
//!   200 times, with the median of each and the median of the per-pair ratios; on a shared,
//!   noisy machine this ratio is steadier than the ratio of two criterion estimates taken
//!   seconds apart;
//! - `throughput/1000x10`: 1,000 concurrent workflows of 10 no-op tasks each, from the first
//!   start to the last completion; throughput in steps (tasks) per second;
//! - `throughput/1000x10_128_in_flight`: the same 1,000 workflows from 128 clients, each of
//!   which starts a workflow, waits for its result (`Engine::wait`) and starts the next: the
//!   protocol of the peer benchmarks (Restate, DBOS), for the side-by-side table in
//!   `benches/README.md`.
//!
//! The workloads are `magrathea_workloads::{baseline, workflow}`, which `magrathea bench` runs
//! too.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use magrathea_benches::{bench_dir, commit_counts, paired, print_commits_per_run, selected};
use magrathea_workloads::baseline::RawRedb;
use magrathea_workloads::workflow::{
    CONCURRENT_RUNS, STEPS, engine, lone_run, run_concurrently, run_in_flight,
};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

fn latency(c: &mut Criterion) {
    let rt = runtime();
    let dir = bench_dir();
    let mut g = c.benchmark_group("latency");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));

    let mut raw = RawRedb::create(&dir.path().join("raw.redb")).expect("creating raw redb");
    g.bench_function("raw_redb_10_commits", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += raw.time_run(STEPS).expect("raw redb commits");
            }
            total
        })
    });

    let engine = rt
        .block_on(engine(dir.path()))
        .expect("building the engine");
    let stats = engine.writer_stats();
    let before = commit_counts(&stats);
    let mut runs = 0u64;
    g.bench_function("ten_steps", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            runs += iters;
            let engine = &engine;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += lone_run(engine, STEPS).await.expect("a lone run");
                }
                total
            }
        })
    });
    let after = commit_counts(&stats);
    print_commits_per_run("latency/ten_steps", before, after, runs);
    g.finish();

    if selected("latency/paired") {
        const PAIRS: usize = 200;
        paired(
            "latency/paired",
            "raw_redb_10_commits",
            PAIRS,
            || {
                raw.time_run(STEPS).expect("raw redb commits");
            },
            || {
                rt.block_on(lone_run(&engine, STEPS)).expect("a lone run");
            },
        );
    }
}

fn throughput(c: &mut Criterion) {
    let rt = runtime();
    let dir = bench_dir();
    let engine = rt
        .block_on(engine(dir.path()))
        .expect("building the engine");
    let stats = engine.writer_stats();

    let mut g = c.benchmark_group("throughput");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(CONCURRENT_RUNS as u64 * STEPS));
    let before = commit_counts(&stats);
    let mut batches = 0u64;
    g.bench_function("1000x10", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            batches += iters;
            let engine = &engine;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += run_concurrently(engine, CONCURRENT_RUNS, STEPS)
                        .await
                        .expect("running workflows concurrently");
                }
                total
            }
        })
    });
    let after = commit_counts(&stats);
    if batches > 0 {
        let (commits, records) = (after.0 - before.0, after.1 - before.1);
        println!(
            "throughput/1000x10: {batches} rounds, {commits} commits, {records} records: \
             {:.0} records/commit, {:.1} records/step",
            records as f64 / commits as f64,
            records as f64 / (batches * CONCURRENT_RUNS as u64 * STEPS) as f64
        );
    }
    g.bench_function("1000x10_128_in_flight", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let engine = &engine;
            async move {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += run_in_flight(engine, CONCURRENT_RUNS, STEPS, 128)
                        .await
                        .expect("running workflows 128 at a time");
                }
                total
            }
        })
    });
    g.finish();
}

criterion_group!(benches, latency, throughput);
criterion_main!(benches);
