//! Shared pieces of the Magrathea benches (`benches/benches/*.rs`).
//!
//! The workloads themselves (baselines, journal writer, workflows, replay) are in the
//! `magrathea-workloads` crate, which `magrathea bench` runs too; this crate adds what only
//! the benches need (their directory, name filters, printing) and panicking wrappers.
//!
//! The benches compare the engine against baselines measured in the same run: a raw
//! `fdatasync`, a raw redb `Immediate` commit of one record, and raw redb batched commits. The
//! raw redb baselines use the engine's own journal table layout (`(u128 run id, u64 seq) ->
//! bytes`) and a record encoded by the engine's codec, so the only difference left is the
//! engine.
//!
//! Bench files go to a directory on a real disk: `$MAGRATHEA_BENCH_DIR` if set, else the
//! system temp directory (ext4 on the reference machine; check with `df -T`, never tmpfs).

use std::path::{Path, PathBuf};
use std::time::Duration;

use magrathea_core::Engine;

pub use magrathea_workloads::{
    JOURNAL, commit_counts, noop_task, quantile, small_record, steps_then_sleep_workflow,
    steps_workflow,
};

/// A fresh temporary directory for bench files, on a real disk (see the crate docs).
pub fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("MAGRATHEA_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    std::fs::create_dir_all(&base).expect("creating the bench directory");
    magrathea_workloads::fresh_dir(&base).expect("creating a temporary bench directory")
}

/// Opens a raw redb database for the baselines, with the journal table created.
pub fn raw_redb(path: &Path) -> redb::Database {
    magrathea_workloads::raw_redb(path).expect("creating the raw redb database")
}

/// Commits `keys` as journal records in one redb `Immediate` transaction.
pub fn raw_commit(db: &redb::Database, keys: impl IntoIterator<Item = (u128, u64)>, value: &[u8]) {
    magrathea_workloads::raw_commit(db, keys, value).expect("raw redb commit")
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

/// Milliseconds, for printing.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Starts `n` runs of `steps` no-op tasks at once and waits until all have ended.
pub async fn run_concurrently(engine: &Engine, n: usize, steps: u64) {
    magrathea_workloads::workflow::run_concurrently(engine, n, steps)
        .await
        .expect("running workflows concurrently");
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

/// The benches' allocator, as the `magrathea` binary's: mimalloc. Records are allocated on the
/// runs' threads and freed on the journal writer's (and completions the other way), where
/// glibc's malloc contends on its arena locks; `benches/README.md` gives the figures with both.
/// An application embedding the library chooses its own allocator; the `system-allocator`
/// feature measures with the system's.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
