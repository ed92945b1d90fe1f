//! The PostgreSQL store, durable (the server's defaults: `fsync = on`, `synchronous_commit =
//! on`), against raw PostgreSQL commits measured in the same run, on a throwaway cluster
//! (`initdb` + `postgres` from the system's packages, on a loopback port).
//!
//! Run: `cargo bench -p magrathea-benches --bench postgres`
//!
//! - `pg_latency/raw_1_commit`: one raw tokio-postgres transaction (`BEGIN`, an `INSERT` of one
//!   row into a table shaped like the journal's, `COMMIT`);
//! - `pg_latency/raw_10_commits`: ten of them in sequence, the floor of a 10-step workflow;
//! - `pg_latency/ten_steps`: one workflow of 10 sequential no-op tasks, alone, from
//!   `Engine::start` to `Engine::wait` returning its result, on a `PgStore` engine;
//! - `pg_latency/paired` (printed): the two above alternated pair by pair, 100 times, with the
//!   median of each and of the per-pair ratios;
//! - `pg_throughput/1000x10/{1,2,4}_workers` (printed): 1,000 concurrent workflows of 10 no-op
//!   tasks, started round-robin on 1, 2 or 4 workers, from the first start to the last
//!   completion, in steps per second (the median of three rounds). A worker is an engine with
//!   its own `PgStore` (its own connections, journal writer, heartbeat and lease owner name), all
//!   in this process: the database sees separate workers, the CPU is shared as it would be by
//!   worker processes on one machine.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use magrathea_benches::{
    commit_counts, noop_task, paired, print_commits_per_run, run_concurrently, selected,
    small_record, steps_workflow,
};
use magrathea_core::{Engine, StartRequest};
use magrathea_postgres::testing::TestCluster;
use magrathea_postgres::{PgOptions, PgStore};
use serde_json::json;
use tokio_postgres::{Client, NoTls};
use uuid::Uuid;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("tokio runtime")
}

/// A raw client on `url` and a table shaped like the journal's.
async fn raw_client(url: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .expect("connecting");
    tokio::spawn(connection);
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS raw_journal (
                 run_id UUID NOT NULL, seq BIGINT NOT NULL, bytes BYTEA NOT NULL,
                 PRIMARY KEY (run_id, seq))",
        )
        .await
        .expect("the raw table");
    client
}

/// One transaction of one row.
async fn raw_commit(client: &mut Client, run: Uuid, seq: i64, bytes: &[u8]) {
    let tx = client.transaction().await.expect("begin");
    tx.execute(
        "INSERT INTO raw_journal (run_id, seq, bytes) VALUES ($1, $2, $3)",
        &[&run, &seq, &bytes],
    )
    .await
    .expect("insert");
    tx.commit().await.expect("commit");
}

async fn raw_ten_commits(client: &mut Client, bytes: &[u8]) {
    let run = Uuid::now_v7();
    for seq in 0..10 {
        raw_commit(client, run, seq, bytes).await;
    }
}

/// A worker: an engine on its own `PgStore` named `name`.
async fn worker(url: &str, name: &str) -> Engine {
    let store = PgStore::connect_with(
        url,
        PgOptions {
            worker: Some(name.into()),
            ..Default::default()
        },
    )
    .expect("connecting the store");
    Engine::builder()
        .store(Arc::new(store))
        .workflow(steps_workflow())
        .task(noop_task())
        .build()
        .await
        .expect("building the engine")
}

async fn ten_steps(engine: &Engine) {
    let run = engine
        .start(StartRequest::code("steps", json!(10)))
        .await
        .expect("start");
    engine.wait(run).await.expect("wait");
}

/// `(commits, records, µs inside commits)` so far.
fn cluster() -> &'static TestCluster {
    static CLUSTER: std::sync::OnceLock<TestCluster> = std::sync::OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

fn latency(c: &mut Criterion) {
    let rt = runtime();
    let url = cluster().create_database();
    let bytes = small_record(1);
    let mut client = rt.block_on(raw_client(&url));
    let mut g = c.benchmark_group("pg_latency");
    g.sample_size(30)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));

    g.bench_function("raw_1_commit", |b| {
        b.to_async(&rt).iter_custom(|iters| {
            let url = url.clone();
            let bytes = bytes.clone();
            async move {
                let mut client = raw_client(&url).await;
                let run = Uuid::now_v7();
                let started = Instant::now();
                for seq in 0..iters {
                    raw_commit(&mut client, run, seq as i64, &bytes).await;
                }
                started.elapsed()
            }
        })
    });
    g.bench_function("raw_10_commits", |b| {
        b.iter(|| rt.block_on(raw_ten_commits(&mut client, &bytes)))
    });

    let engine = rt.block_on(worker(&url, "lone"));
    let stats = engine.writer_stats();
    let before = commit_counts(&stats);
    let mut runs = 0u64;
    g.bench_function("ten_steps", |b| {
        b.to_async(&rt).iter(|| {
            runs += 1;
            let engine = engine.clone();
            async move { ten_steps(&engine).await }
        })
    });
    let after = commit_counts(&stats);
    print_commits_per_run("pg_latency/ten_steps", before, after, runs);
    g.finish();

    if selected("pg_latency/paired") {
        const PAIRS: usize = 100;
        paired(
            "pg_latency/paired",
            "raw_10_commits",
            PAIRS,
            || rt.block_on(raw_ten_commits(&mut client, &bytes)),
            || rt.block_on(ten_steps(&engine)),
        );
    }
}

/// Starts `n` runs of `steps` no-op tasks spread over the workers, all at once, and waits until
/// all have ended.
async fn run_on_workers(workers: &[Engine], n: usize, steps: u64) {
    let waits: Vec<_> = workers
        .iter()
        .enumerate()
        .map(|(i, engine)| {
            let engine = engine.clone();
            let mine = (i..n).step_by(workers.len()).count();
            tokio::spawn(async move { run_concurrently(&engine, mine, steps).await })
        })
        .collect();
    for w in waits {
        w.await.expect("a worker's runs");
    }
}

fn throughput(_c: &mut Criterion) {
    const RUNS: usize = 1_000;
    const STEPS: u64 = 10;
    const ROUNDS: usize = 3;
    let rt = runtime();
    for n in [1usize, 2, 4] {
        let name = format!("pg_throughput/1000x10/{n}_workers");
        if !selected(&name) {
            continue;
        }
        let url = cluster().create_database();
        let workers: Vec<Engine> = (0..n)
            .map(|i| rt.block_on(worker(&url, &format!("bench-{n}-{i}"))))
            .collect();
        let before: Vec<_> = workers
            .iter()
            .map(|w| commit_counts(&w.writer_stats()))
            .collect();
        // One warm-up round, not counted.
        rt.block_on(run_on_workers(&workers, RUNS, STEPS));
        let mut rates = Vec::new();
        for _ in 0..ROUNDS {
            let started = Instant::now();
            rt.block_on(run_on_workers(&workers, RUNS, STEPS));
            rates.push((RUNS as u64 * STEPS) as f64 / started.elapsed().as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        let (mut commits, mut records, mut micros) = (0, 0, 0);
        for (w, b) in workers.iter().zip(&before) {
            let a = commit_counts(&w.writer_stats());
            commits += a.0 - b.0;
            records += a.1 - b.1;
            micros += a.2 - b.2;
        }
        println!(
            "{name}: median {:.0} steps/s (rounds: {}); {:.0} records/commit, {:.0} us per \
             commit",
            rates[ROUNDS / 2],
            rates
                .iter()
                .map(|r| format!("{r:.0}"))
                .collect::<Vec<_>>()
                .join(", "),
            records as f64 / commits.max(1) as f64,
            micros as f64 / commits.max(1) as f64
        );
        drop(workers);
    }
}

criterion_group!(benches, latency, throughput);
criterion_main!(benches);
