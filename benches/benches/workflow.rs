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

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use magrathea_benches::{
    bench_dir, ms, noop_task, quantile, raw_commit, raw_redb, run_concurrently, selected,
    small_record, steps_workflow,
};
use magrathea_core::{Engine, StartRequest, writer::WriterStats};
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
fn counts(stats: &WriterStats) -> (u64, u64, u64) {
    (
        stats.commits.load(Ordering::Relaxed),
        stats.records.load(Ordering::Relaxed),
        stats.commit_micros.load(Ordering::Relaxed),
    )
}

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
    let before = counts(&stats);
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
    let after = counts(&stats);
    if runs > 0 {
        let commits = (after.0 - before.0) as f64;
        println!(
            "latency/ten_steps: {:.1} commits and {:.1} records per run, {:.0} us per commit",
            commits / runs as f64,
            (after.1 - before.1) as f64 / runs as f64,
            (after.2 - before.2) as f64 / commits
        );
    }
    g.finish();

    if selected("latency/paired") {
        const PAIRS: usize = 200;
        let (mut raw, mut wf, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..PAIRS {
            let started = Instant::now();
            let run = Uuid::now_v7().as_u128();
            for seq in 0..10 {
                raw_commit(&db, [(run, seq)], &value);
            }
            let r = started.elapsed();
            let started = Instant::now();
            rt.block_on(async {
                let run = engine
                    .start(StartRequest::code("steps", json!(10)))
                    .await
                    .expect("start");
                engine.wait(run).await.expect("wait")
            });
            let w = started.elapsed();
            raw.push(r);
            wf.push(w);
            ratios.push(w.as_secs_f64() / r.as_secs_f64());
        }
        ratios.sort_by(f64::total_cmp);
        println!(
            "latency/paired: {PAIRS} pairs: raw_redb_10_commits p50 {:.2} ms p90 {:.2} ms; \
             ten_steps p50 {:.2} ms p90 {:.2} ms; ratio ten_steps/raw p50 {:.2} (p10 {:.2}, \
             p90 {:.2})",
            ms(quantile(&mut raw, 0.5)),
            ms(quantile(&mut raw, 0.9)),
            ms(quantile(&mut wf, 0.5)),
            ms(quantile(&mut wf, 0.9)),
            ratios[PAIRS / 2],
            ratios[PAIRS / 10],
            ratios[PAIRS * 9 / 10]
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
    let before = counts(&stats);
    let mut batches = 0u64;
    g.bench_function("1000x10", |b| {
        b.to_async(&rt).iter(|| {
            batches += 1;
            let engine = engine.clone();
            async move { run_concurrently(&engine, RUNS, STEPS).await }
        })
    });
    let after = counts(&stats);
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
