//! Pieces every workload uses: the sample record, raw redb in the engine's journal layout, the
//! bench workflows, a fresh directory, quantiles.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use magrathea_core::codec;
use magrathea_core::writer::WriterStats;
use magrathea_core::{
    Record, Step, TaskOptions, TaskRegistration, WorkflowError, WorkflowRegistration,
};
use redb::TableDefinition;
use serde_json::{Value, json};

use crate::error::{Context, Result};

/// The engine's journal table layout (`(u128 run id, u64 seq) -> bytes`), for the raw redb
/// baselines: what a journal kept in redb alone would pay per record, with the engine's own
/// records and keys.
pub const JOURNAL: TableDefinition<(u128, u64), &[u8]> = TableDefinition::new("journal");

/// A fresh directory for a workload's files under `base` (named `magrathea-bench-*`), removed
/// with everything in it when the returned value is dropped.
pub fn fresh_dir(base: &Path) -> std::io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("magrathea-bench-")
        .tempdir_in(base)
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

/// Creates a raw redb database at `path` for the baselines, with the journal table created.
pub fn raw_redb(path: &Path) -> Result<redb::Database> {
    let what = "creating the raw redb database";
    let db = redb::Database::create(path).context(what)?;
    let tx = db.begin_write().context(what)?;
    tx.open_table(JOURNAL).context(what)?;
    tx.commit().context(what)?;
    Ok(db)
}

/// Commits `keys` as journal records of bytes `value` in one redb `Immediate` transaction.
pub fn raw_commit(
    db: &redb::Database,
    keys: impl IntoIterator<Item = (u128, u64)>,
    value: &[u8],
) -> Result<()> {
    let what = "committing to the raw redb database";
    let mut tx = db.begin_write().context(what)?;
    tx.set_durability(redb::Durability::Immediate)
        .context(what)?;
    {
        let mut table = tx.open_table(JOURNAL).context(what)?;
        for key in keys {
            table.insert(key, value).context(what)?;
        }
    }
    tx.commit().context(what)
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

/// The journal writer's counters: commits, records, microseconds spent committing.
pub fn commit_counts(stats: &WriterStats) -> (u64, u64, u64) {
    (
        stats.commits.load(Ordering::Relaxed),
        stats.records.load(Ordering::Relaxed),
        stats.commit_micros.load(Ordering::Relaxed),
    )
}

/// The `q`-quantile (0.0..=1.0) of `samples`, which it sorts; zero for no samples.
pub fn quantile(samples: &mut [Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort_unstable();
    let i = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[i]
}
