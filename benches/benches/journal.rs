//! Journal benches: the baselines and the group-commit journal writer.
//!
//! Run: `cargo bench -p magrathea-benches --bench journal`
//!
//! - `baseline/fdatasync`: a 64-byte `pwrite` into a preallocated file + `fdatasync`;
//! - `baseline/redb_commit_1`: a raw redb `Immediate` commit of one record;
//! - `key_order/v7` and `key_order/v4`: raw redb, 100 commits of 1,000 records each into a
//!   fresh file, keyed by time-ordered (UUIDv7) or random (UUIDv4) run ids; prints the file
//!   size of each;
//! - `writer/N`: the engine's `JournalWriter` over a `RedbStore` (`Immediate`), with `N`
//!   concurrent appenders each appending one record per append; prints records per commit.
//!
//! Throughputs are in records (elements) per second. The baselines and the writer workload
//! are `magrathea_workloads::{baseline, appenders}`, which `magrathea bench` runs too.

use std::time::{Duration, Instant};

use criterion::{
    BenchmarkId, Criterion, SamplingMode, Throughput, criterion_group, criterion_main,
};
use magrathea_benches::{bench_dir, commit_counts, raw_commit, raw_redb, small_record};
use magrathea_workloads::appenders::{APPENDERS, append_concurrently, open_writer};
use magrathea_workloads::baseline::{FsyncFile, RawRedb};
use uuid::Uuid;

fn baselines(c: &mut Criterion) {
    let dir = bench_dir();
    let mut g = c.benchmark_group("baseline");
    g.sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .throughput(Throughput::Elements(1));

    // The same workloads as `magrathea bench` (magrathea_workloads::baseline).
    let mut fsync = FsyncFile::create(dir.path()).expect("creating the fsync file");
    g.bench_function("fdatasync", |b| {
        b.iter_custom(|iters| fsync.time(iters).expect("fdatasync"))
    });

    let mut raw = RawRedb::create(&dir.path().join("one.redb")).expect("creating raw redb");
    g.bench_function("redb_commit_1", |b| {
        b.iter_custom(|iters| raw.time(iters).expect("raw redb commit"))
    });
    g.finish();
}

/// Commits per file and records per commit of the key-order bench.
const KEY_ORDER_COMMITS: u64 = 100;
const KEY_ORDER_BATCH: u64 = 1_000;

fn key_order(c: &mut Criterion) {
    let mut g = c.benchmark_group("key_order");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(8))
        .throughput(Throughput::Elements(KEY_ORDER_COMMITS * KEY_ORDER_BATCH));
    let value = small_record(1);
    for (name, new_id) in [
        ("v7", Uuid::now_v7 as fn() -> Uuid),
        ("v4", Uuid::new_v4 as fn() -> Uuid),
    ] {
        let mut file_size = 0u64;
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = bench_dir();
                    let path = dir.path().join("keys.redb");
                    let db = raw_redb(&path);
                    // Each record is the first of a new run, as when many runs start at once:
                    // the key order is the run-id order.
                    let started = Instant::now();
                    for _ in 0..KEY_ORDER_COMMITS {
                        let keys: Vec<(u128, u64)> = (0..KEY_ORDER_BATCH)
                            .map(|_| (new_id().as_u128(), 0))
                            .collect();
                        raw_commit(&db, keys, &value);
                    }
                    total += started.elapsed();
                    drop(db);
                    file_size = std::fs::metadata(&path).map_or(0, |m| m.len());
                }
                total
            })
        });
        if file_size > 0 {
            println!(
                "key_order/{name}: file size after {} records in {} commits: {:.1} MiB \
                 ({:.0} bytes/record)",
                KEY_ORDER_COMMITS * KEY_ORDER_BATCH,
                KEY_ORDER_COMMITS,
                file_size as f64 / (1024.0 * 1024.0),
                file_size as f64 / (KEY_ORDER_COMMITS * KEY_ORDER_BATCH) as f64
            );
        }
    }
    g.finish();
}

fn writer(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = bench_dir();
    let writer = open_writer(&dir.path().join("writer.redb")).expect("opening the writer");
    let value = small_record(1);

    let mut g = c.benchmark_group("writer");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    for appenders in APPENDERS {
        g.throughput(Throughput::Elements(appenders));
        let stats = writer.stats().clone();
        let (commits0, records0, micros0) = commit_counts(&stats);
        // One iteration: every appender appends one record. Appenders run freely (no barrier
        // between iterations), as runs do.
        g.bench_with_input(
            BenchmarkId::from_parameter(appenders),
            &appenders,
            |b, &n| {
                b.to_async(&rt).iter_custom(|iters| {
                    let (writer, value) = (&writer, &value);
                    async move {
                        append_concurrently(writer, n, iters, value)
                            .await
                            .expect("appending")
                    }
                })
            },
        );
        let (commits1, records1, micros1) = commit_counts(&stats);
        let (commits, records, micros) =
            (commits1 - commits0, records1 - records0, micros1 - micros0);
        if commits > 0 {
            println!(
                "writer/{appenders}: {records} records in {commits} commits: {:.1} records/commit, \
                 {:.0} us/commit",
                records as f64 / commits as f64,
                micros as f64 / commits as f64
            );
        }
    }
    g.finish();
}

criterion_group!(benches, baselines, key_order, writer);
criterion_main!(benches);
