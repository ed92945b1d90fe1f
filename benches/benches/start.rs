//! Start benches: many concurrent `Engine::start` calls, durable (`Durability::Immediate`),
//! against a raw redb commit measured in the same run.
//!
//! Run: `cargo bench -p magrathea-benches --bench start`
//!
//! - `start/raw_redb_commit_1`: one raw redb `Immediate` commit of one record, the cost of a
//!   start that shares its commit with nobody;
//! - `start/1000_keyed`: 1,000 concurrent starts, each with its own idempotency key, from the
//!   first call to the last one returning (each returns once its `StartRecord` is durable);
//! - `start/1000_unkeyed`: the same without keys, the ceiling for keyed starts: a keyed start
//!   only adds a key lookup and the key's index entry to the same commit.
//!
//! The workflow sleeps for an hour after its start, so that the start and the timer are the
//! only records a run commits and the measurement is of starts alone. Throughput is in starts
//! per second; each `1000_*` bench prints its starts per commit.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use magrathea_benches::{
    bench_dir, noop_task, raw_commit, raw_redb, small_record, steps_then_sleep_workflow,
};
use magrathea_core::{Engine, StartRequest};
use serde_json::json;
use uuid::Uuid;

const STARTS: u64 = 1_000;

/// Starts [`STARTS`] runs at once, keyed `<prefix>-<i>` when `prefix` is given; returns when
/// every start has returned.
async fn start_concurrently(engine: &Engine, prefix: Option<u64>) {
    let starts: Vec<_> = (0..STARTS)
        .map(|i| {
            let engine = engine.clone();
            tokio::spawn(async move {
                let mut req = StartRequest::code(
                    "steps_then_sleep",
                    json!({ "tasks": 0, "sleep_ms": 3_600_000 }),
                );
                if let Some(p) = prefix {
                    req = req.idempotency_key(format!("bench-{p}-{i}"));
                }
                engine.start(req).await.expect("start")
            })
        })
        .collect();
    for s in starts {
        s.await.expect("start task");
    }
}

fn starts(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = bench_dir();
    let mut g = c.benchmark_group("start");

    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(1));
    let db = raw_redb(&dir.path().join("raw.redb"));
    let run = Uuid::now_v7().as_u128();
    let value = small_record(1);
    let mut seq = 0u64;
    g.bench_function("raw_redb_commit_1", |b| {
        b.iter(|| {
            raw_commit(&db, [(run, seq)], &value);
            seq += 1;
        })
    });

    let engine = rt.block_on(async {
        Engine::builder()
            .path(dir.path().join("journal.redb"))
            .workflow(steps_then_sleep_workflow())
            .task(noop_task())
            // Every run sleeps an hour: evict at once, as a real server would.
            .evict_after(Duration::from_millis(100))
            .build()
            .await
            .expect("building the engine")
    });
    let stats = engine.writer_stats();
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(STARTS));
    let round = AtomicU64::new(0);
    for (name, keyed) in [("1000_keyed", true), ("1000_unkeyed", false)] {
        let commits = stats.commits.load(Ordering::Relaxed);
        let rounds = round.load(Ordering::Relaxed);
        g.bench_function(name, |b| {
            b.to_async(&rt).iter(|| {
                let r = round.fetch_add(1, Ordering::Relaxed);
                let engine = engine.clone();
                async move { start_concurrently(&engine, keyed.then_some(r)).await }
            })
        });
        let commits = stats.commits.load(Ordering::Relaxed) - commits;
        let rounds = round.load(Ordering::Relaxed) - rounds;
        if commits > 0 {
            println!(
                "start/{name}: {rounds} rounds, {commits} commits: {:.1} starts/commit",
                (rounds * STARTS) as f64 / commits as f64
            );
        }
    }
    g.finish();
}

criterion_group!(benches, starts);
criterion_main!(benches);
