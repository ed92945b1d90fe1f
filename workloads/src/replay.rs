//! Replay: recovering a run whose journal holds 10,000 records, against reading and decoding
//! the same records.
//!
//! Setup ([`ReplayRun::build`], not timed): an engine runs `steps_then_sleep` with 4,999
//! sequential no-op tasks, then a 1-hour durable sleep (written without syncs: the records are
//! the same), and a durable engine is opened on that store. Its journal is `StartRecord`, 4,999 ×
//! (`TaskStartedRecord`, `TaskResultRecord`), `TimerSetRecord`: exactly 10,000 records. The run
//! is then suspended and evicted from memory.
//!
//! - [`ReplayRun::resume_until_suspended`]: from [`Engine::resume`] until the run has left
//!   memory again: reading the 10,000 records, decoding them, re-running the workflow code
//!   against them, re-arming the timer, the eviction check. Replay writes nothing, so every
//!   time replays the same journal; after the first, the file is in the page cache (a warm
//!   replay).
//! - [`ReplayRun::read_decode`]: only reading and decoding the 10,000 records
//!   ([`Store::read_journal`](magrathea_core::Store::read_journal)), the floor of the above.

use std::path::Path;
use std::time::{Duration, Instant};

use magrathea_core::{Durability, Engine, RunId, StartRequest};
use serde_json::json;

use crate::common::{noop_task, steps_then_sleep_workflow};
use crate::error::{Context, Error, Result};

/// Tasks of the replayed run.
pub const TASKS: u64 = 4_999;
/// Records of the replayed run's journal.
pub const RECORDS: u64 = 1 + 2 * TASKS + 1;

/// A suspended run with a 10,000-record journal, on a durable engine.
#[derive(Debug)]
pub struct ReplayRun {
    engine: Engine,
    run: RunId,
}

impl ReplayRun {
    /// Writes the run's journal with an engine that does not sync (5,000 sequential steps:
    /// on a disk whose sync takes milliseconds, syncing each would take most of a minute,
    /// and replay reads the same records either way), stops it, then opens the engine the
    /// replays run on, on `dir/journal.redb` (`Immediate`), and waits until the run has left
    /// memory. Call it inside a tokio runtime.
    pub async fn build(dir: &Path) -> Result<Self> {
        let open = |durability| {
            Engine::builder()
                .path(dir.join("journal.redb"))
                .durability(durability)
                .workflow(steps_then_sleep_workflow())
                .task(noop_task())
                .build()
        };
        let writing = open(Durability::RelaxedForTests)
            .await
            .context("opening the engine that writes the journal")?;
        let run = writing
            .start(StartRequest::code(
                "steps_then_sleep",
                json!({"tasks": TASKS, "sleep_ms": 3_600_000}),
            ))
            .await
            .context("starting the run to replay")?;
        while writing.runs_in_memory() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        writing.stop(Duration::from_secs(10)).await;
        drop(writing);
        let engine = open(Durability::Immediate)
            .await
            .context("opening the engine")?;
        while engine.runs_in_memory() > 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let records = engine.journal(run).context("reading the journal")?.len() as u64;
        if records != RECORDS {
            return Err(Error::new(
                "building the run to replay",
                format!("its journal has {records} records, not {RECORDS}"),
            ));
        }
        Ok(Self { engine, run })
    }

    /// The engine the run is on.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// Resumes the run and waits until it is suspended and out of memory again; the time
    /// taken. Call it with the engine's runtime entered but outside any async task: it
    /// polls by yielding the thread (tokio's timer is too coarse).
    pub fn resume_until_suspended(&self) -> Duration {
        let started = Instant::now();
        // `resume` registers the run in memory before it returns; it leaves once suspended.
        self.engine.resume(self.run);
        while self.engine.runs_in_memory() > 0 {
            std::thread::yield_now();
        }
        started.elapsed()
    }

    /// Reads and decodes the run's 10,000 records from the store; the time taken.
    pub fn read_decode(&self) -> Result<Duration> {
        let store = self.engine.store();
        let started = Instant::now();
        let entries = store
            .read_journal(self.run)
            .context("reading the journal")?;
        let elapsed = started.elapsed();
        drop(entries);
        Ok(elapsed)
    }
}
