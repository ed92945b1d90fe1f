//! Concurrent appenders on the engine's group-commit [`JournalWriter`].
//!
//! N tasks, each a run of its own, append one record per append, every append awaited until
//! durable. The appenders run freely, without a barrier between appends, as runs do; the
//! writer merges what is queued into one commit. One appender is the lone-append latency;
//! 1,024 show how far group commit takes a disk past one commit per record.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use magrathea_core::store::{CommitBatch, EncodedRecord};
use magrathea_core::writer::JournalWriter;
use magrathea_core::{Durability, RedbStore, RunId, Store};

use crate::common::{commit_counts, small_record};
use crate::error::{Context, Result};

/// The appender counts of the standard workload.
pub const APPENDERS: [u64; 4] = [1, 16, 256, 1024];

/// Opens a [`RedbStore`] at `path` (`Immediate`) and starts a journal writer over it.
pub fn open_writer(path: &Path) -> Result<JournalWriter> {
    let store: Arc<dyn Store> =
        Arc::new(RedbStore::open(path, Durability::Immediate).context("opening the redb store")?);
    Ok(JournalWriter::start(store))
}

/// `appenders` concurrent appenders each append `per_appender` records (`record`, one per
/// append); the time from the first append to the last one being durable. Call it inside a
/// tokio runtime.
pub async fn append_concurrently(
    writer: &JournalWriter,
    appenders: u64,
    per_appender: u64,
    record: &[u8],
) -> Result<Duration> {
    let started = Instant::now();
    let tasks: Vec<_> = (0..appenders)
        .map(|_| {
            let writer = writer.clone();
            let record = record.to_vec();
            tokio::spawn(async move {
                let run = RunId::new();
                for seq in 0..per_appender {
                    lone_append(&writer, run, seq, &record).await?;
                }
                Ok::<_, crate::error::Error>(())
            })
        })
        .collect();
    for task in tasks {
        task.await.context("an appender task")??;
    }
    Ok(started.elapsed())
}

/// Appends one record to `run` at `seq` alone and waits until it is durable; the time taken.
/// This is a lone durable step's cost: the caller awaits the writer's commit, as a workflow's
/// driver does, without a hand-off to another task.
pub async fn lone_append(
    writer: &JournalWriter,
    run: RunId,
    seq: u64,
    record: &[u8],
) -> Result<Duration> {
    let batch = CommitBatch {
        records: vec![EncodedRecord {
            run_id: run,
            seq,
            bytes: record.to_vec(),
        }],
        ..Default::default()
    };
    let started = Instant::now();
    writer
        .append(batch)
        .await
        .context("appending to the journal")?;
    Ok(started.elapsed())
}

/// What [`append_for`] measured.
#[derive(Debug, Clone, Copy)]
pub struct Appended {
    /// Records appended (and durable).
    pub records: u64,
    /// Commits the writer made for them.
    pub commits: u64,
    /// Time spent appending.
    pub elapsed: Duration,
}

impl Appended {
    /// Durable records per second.
    pub fn records_per_sec(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64()
    }

    /// Records per commit: how much group commit merged.
    pub fn records_per_commit(&self) -> f64 {
        self.records as f64 / self.commits.max(1) as f64
    }
}

/// Runs rounds of [`append_concurrently`] with `appenders` appenders for about `budget`
/// (at least one round); each round appends more per appender than the last, up to an
/// eighth of the budget per round.
pub async fn append_for(
    writer: &JournalWriter,
    appenders: u64,
    budget: Duration,
) -> Result<Appended> {
    let record = small_record(1);
    let stats = writer.stats().clone();
    let before = commit_counts(&stats);
    let (mut records, mut elapsed, mut per_appender) = (0u64, Duration::ZERO, 1u64);
    loop {
        let round = append_concurrently(writer, appenders, per_appender, &record).await?;
        records += appenders * per_appender;
        elapsed += round;
        if elapsed >= budget {
            break;
        }
        if round < budget / 8 {
            per_appender *= 2;
        }
    }
    let after = commit_counts(&stats);
    Ok(Appended {
        records,
        commits: after.0 - before.0,
        elapsed,
    })
}
