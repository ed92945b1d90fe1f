//! Shared pieces of the Magrathea benches (`benches/benches/*.rs`).
//!
//! The benches compare the engine against baselines measured in the same run: a raw
//! `fdatasync`, a raw redb `Immediate` commit of one record, and raw redb batched commits. The
//! raw redb baselines use the engine's own journal table layout (`(u128 run id, u64 seq) ->
//! bytes`) and a record encoded by the engine's codec, so the only difference left is the
//! engine.
//!
//! Bench files go to a directory on a real disk: `$MAGRATHEA_BENCH_DIR` if set, else the
//! system temp directory (ext4 on the reference machine; check with `df -T`, never tmpfs).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use magrathea_core::Record;
use magrathea_core::codec;
use magrathea_core::{
    Engine, RunId, StartRequest, Step, TaskOptions, TaskRegistration, WorkflowError,
    WorkflowRegistration,
};
use redb::TableDefinition;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

/// The engine's journal table layout, for the raw redb baselines.
pub const JOURNAL: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal");

/// A fresh temporary directory for bench files, on a real disk (see the crate docs).
pub fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("MAGRATHEA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).expect("creating the bench directory");
    tempfile::Builder::new()
        .prefix("magrathea-bench-")
        .tempdir_in(base)
        .expect("creating a temporary bench directory")
}

/// The bytes of a typical small journal record: a no-op task's successful result, as the
/// engine's codec encodes it (a few dozen bytes).
pub fn small_record(step: Step) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(64);
    codec::encode(
        &Record::TaskResult {
            step,
            attempt: 1,
            outcome: "success".into(),
            output: json!(step),
            error: None,
            is_final: true,
        },
        1_750_000_000_000,
        &mut bytes,
    );
    bytes
}

/// Opens a raw redb database for the baselines, with the journal table created.
pub fn raw_redb(path: &Path) -> redb::Database {
    let db = redb::Database::create(path).expect("creating the raw redb database");
    let tx = db.begin_write().expect("begin_write");
    tx.open_table(JOURNAL).expect("open_table");
    tx.commit().expect("commit");
    db
}

/// Commits `keys` as journal records in one redb `Immediate` transaction.
pub fn raw_commit(db: &redb::Database, keys: impl IntoIterator<Item = (u128, u64)>, value: &[u8]) {
    let mut tx = db.begin_write().expect("begin_write");
    tx.set_durability(redb::Durability::Immediate)
        .expect("set_durability");
    {
        let mut table = tx.open_table(JOURNAL).expect("open_table");
        for key in keys {
            table.insert(key, value).expect("insert");
        }
    }
    tx.commit().expect("commit");
}

/// The registration of the no-op task `noop`, which returns its input.
pub fn noop_task() -> TaskRegistration {
    TaskRegistration::new("noop", TaskOptions::default(), |v, _| async move { Ok(v) })
}

/// The workflow `steps`: runs `input` (a number) sequential `noop` tasks, returns `null`.
pub fn steps_workflow() -> WorkflowRegistration {
    WorkflowRegistration::new("steps", "", |ctx, input| async move {
        let n = input.as_u64().unwrap_or(0);
        for i in 0..n {
            ctx.task("noop", json!(i)).await?;
        }
        Ok::<_, WorkflowError>(Value::Null)
    })
}

/// The workflow `steps_then_sleep`: runs `input.tasks` sequential `noop` tasks, then sleeps on
/// a durable timer of `input.sleep_ms`.
pub fn steps_then_sleep_workflow() -> WorkflowRegistration {
    WorkflowRegistration::new("steps_then_sleep", "", |ctx, input| async move {
        let tasks = input["tasks"].as_u64().unwrap_or(0);
        let sleep_ms = input["sleep_ms"].as_u64().unwrap_or(0);
        for i in 0..tasks {
            ctx.task("noop", json!(i)).await?;
        }
        ctx.sleep(Duration::from_millis(sleep_ms)).await?;
        Ok::<_, WorkflowError>(Value::Null)
    })
}

/// Waits until the engine holds no run in memory (every run finished or was evicted), polling.
pub async fn wait_until_no_run_in_memory(engine: &Engine) {
    while engine.runs_in_memory() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A line of `/proc/self/status` (e.g. `VmRSS`) in KiB, on Linux.
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().trim_end_matches("kB").trim().parse().ok()
    })
}

/// Whether the bench `name` is selected by the command line's name filters (`cargo bench --
/// <filter>`), for measurements made outside criterion: selected when no filter is given or a
/// filter is a substring of `name`.
pub fn selected(name: &str) -> bool {
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
}

/// The `q`-quantile (0.0..=1.0) of `samples`, which it sorts.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    samples.sort_unstable();
    let i = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[i]
}

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts `n` runs of `steps` no-op tasks at once and waits until all have ended.
pub async fn run_concurrently(engine: &Engine, n: usize, steps: u64) {
    // One subscriber for all runs: `Engine::wait` per run would have each of the n waiters
    // read every status update of every run (n² receives), which measures the harness.
    let mut updates = engine.subscribe_status();
    let starts: Vec<_> = (0..n)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                engine
                    .start(StartRequest::code("steps", json!(steps)))
                    .await
                    .expect("start")
            })
        })
        .collect();
    let mut pending: HashSet<RunId> = HashSet::with_capacity(n);
    for s in starts {
        pending.insert(s.await.expect("start task"));
    }
    while !pending.is_empty() {
        match updates.recv().await {
            Ok(u) if u.status.is_terminal() => {
                pending.remove(&u.run_id);
            }
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => {
                pending.retain(|run| !engine.status(*run).expect("status").is_terminal());
            }
            Err(RecvError::Closed) => panic!("the engine closed"),
        }
    }
}

/// The journal writer's counters: commits, records, microseconds spent committing.
pub fn commit_counts(stats: &magrathea_core::writer::WriterStats) -> (u64, u64, u64) {
    use std::sync::atomic::Ordering;
    (
        stats.commits.load(Ordering::Relaxed),
        stats.records.load(Ordering::Relaxed),
        stats.commit_micros.load(Ordering::Relaxed),
    )
}

/// Prints `name: C commits and R records per run, U us per commit` for `runs` runs between two
/// [`commit_counts`].
pub fn print_commits_per_run(
    name: &str,
    before: (u64, u64, u64),
    after: (u64, u64, u64),
    runs: u64,
) {
    if runs == 0 {
        return;
    }
    let commits = (after.0 - before.0) as f64;
    println!(
        "{name}: {:.1} commits and {:.1} records per run, {:.0} us per commit",
        commits / runs as f64,
        (after.1 - before.1) as f64 / runs as f64,
        (after.2 - before.2) as f64 / commits
    );
}

/// Times `baseline` and then `ten_steps` `pairs` times in turn, so that both see the same disk,
/// and prints `name: P pairs: BASE p50 … p90 …; ten_steps p50 … p90 …; ratio ten_steps/raw p50 …
/// (p10 …, p90 …)`.
pub fn paired(
    name: &str,
    baseline_name: &str,
    pairs: usize,
    mut baseline: impl FnMut(),
    mut ten_steps: impl FnMut(),
) {
    let (mut raw, mut wf, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..pairs {
        let started = std::time::Instant::now();
        baseline();
        let r = started.elapsed();
        let started = std::time::Instant::now();
        ten_steps();
        let w = started.elapsed();
        raw.push(r);
        wf.push(w);
        ratios.push(w.as_secs_f64() / r.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "{name}: {pairs} pairs: {baseline_name} p50 {:.2} ms p90 {:.2} ms; \
         ten_steps p50 {:.2} ms p90 {:.2} ms; ratio ten_steps/raw p50 {:.2} (p10 {:.2}, \
         p90 {:.2})",
        ms(quantile(&mut raw, 0.5)),
        ms(quantile(&mut raw, 0.9)),
        ms(quantile(&mut wf, 0.5)),
        ms(quantile(&mut wf, 0.9)),
        ratios[pairs / 2],
        ratios[pairs / 10],
        ratios[pairs * 9 / 10]
    );
}
