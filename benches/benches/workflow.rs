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
//!   start to the last completion; throughput in steps (tasks) per second.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use magrathea_benches::{
    bench_dir, commit_counts, noop_task, paired, print_commits_per_run, raw_commit, raw_redb,
    run_concurrently, selected, small_record, steps_workflow,
};
use magrathea_core::{Engine, StartRequest};
use serde_json::json;
use uuid::Uuid;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

async fn engine(dir: &std::path::Path) -> Engine {
    Engine::builder()
        .path(dir.join("journal.redb"))
        .workflow(steps_workflow())
        .task(noop_task())
        .build()
        .await
        .expect("building the engine")
}

/// `(commits, records, µs inside commits)` so far.
fn latency(c: &mut Criterion) {
    let rt = runtime();
    let dir = bench_dir();
    let mut g = c.benchmark_group("latency");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));

    let db = raw_redb(&dir.path().join("raw.redb"));
    let value = small_record(1);
    g.bench_function("raw_redb_10_commits", |b| {
        b.iter(|| {
            let run = Uuid::now_v7().as_u128();
            for seq in 0..10 {
                raw_commit(&db, [(run, seq)], &value);
            }
        })
    });

    let engine = rt.block_on(engine(dir.path()));
    let stats = engine.writer_stats();
    let before = commit_counts(&stats);
    let mut runs = 0u64;
    g.bench_function("ten_steps", |b| {
        b.to_async(&rt).iter(|| {
            runs += 1;
            let engine = engine.clone();
            async move {
                let run = engine
                    .start(StartRequest::code("steps", json!(10)))
                    .await
                    .expect("start");
                engine.wait(run).await.expect("wait")
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
                let run = Uuid::now_v7().as_u128();
                for seq in 0..10 {
                    raw_commit(&db, [(run, seq)], &value);
                }
            },
            || {
                rt.block_on(async {
                    let run = engine
                        .start(StartRequest::code("steps", json!(10)))
                        .await
                        .expect("start");
                    engine.wait(run).await.expect("wait")
                });
            },
        );
    }
}

fn throughput(c: &mut Criterion) {
    const RUNS: usize = 1_000;
    const STEPS: u64 = 10;
    let rt = runtime();
    let dir = bench_dir();
    let engine = rt.block_on(engine(dir.path()));
    let stats = engine.writer_stats();

    let mut g = c.benchmark_group("throughput");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(RUNS as u64 * STEPS));
    let before = commit_counts(&stats);
    let mut batches = 0u64;
    g.bench_function("1000x10", |b| {
        b.to_async(&rt).iter(|| {
            batches += 1;
            let engine = engine.clone();
            async move { run_concurrently(&engine, RUNS, STEPS).await }
        })
    });
    let after = commit_counts(&stats);
    if batches > 0 {
        let (commits, records) = (after.0 - before.0, after.1 - before.1);
        println!(
            "throughput/1000x10: {batches} rounds, {commits} commits, {records} records: \
             {:.0} records/commit, {:.1} records/step",
            records as f64 / commits as f64,
            records as f64 / (batches * RUNS as u64 * STEPS) as f64
        );
    }
    g.finish();
}

criterion_group!(benches, latency, throughput);
criterion_main!(benches);
