//! Whole workflows on a durable engine: one 10-step workflow alone (its latency, start to
//! result), and 1,000 concurrent workflows of 10 steps (throughput in steps per second).

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use magrathea_core::{Durability, Engine, RunId, StartRequest};
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;

use crate::common::{noop_task, steps_workflow};
use crate::error::{Context, Error, Result};

/// Steps of the standard workflow.
pub const STEPS: u64 = 10;
/// Concurrent runs of the throughput workload.
pub const CONCURRENT_RUNS: usize = 1_000;

/// A durable engine (`Immediate`) on `dir/journal.redb` with the `steps` workflow and the
/// `noop` task. Call it inside a tokio runtime.
pub async fn engine(dir: &Path) -> Result<Engine> {
    Engine::builder()
        .path(dir.join("journal.redb"))
        .durability(Durability::Immediate)
        .workflow(steps_workflow())
        .task(noop_task())
        .build()
        .await
        .context("opening the engine")
}

/// One run of `steps` sequential no-op tasks, alone: the time from [`Engine::start`] to
/// [`Engine::wait`] returning its result.
pub async fn lone_run(engine: &Engine, steps: u64) -> Result<Duration> {
    let started = Instant::now();
    let run = engine
        .start(StartRequest::code("steps", json!(steps)))
        .await
        .context("starting a run")?;
    engine.wait(run).await.context("waiting for a run")?;
    Ok(started.elapsed())
}

/// Starts `runs` runs of `steps` no-op tasks at once and waits until all have ended; the time
/// from the first start to the last end. The ends are read from the status updates of all runs
/// ([`Engine::subscribe_status`]): this measures the engine, not the reading of each run's
/// result that [`run_in_flight`]'s clients do.
pub async fn run_concurrently(engine: &Engine, runs: usize, steps: u64) -> Result<Duration> {
    let started = Instant::now();
    let mut updates = engine.subscribe_status();
    let starts: Vec<_> = (0..runs)
        .map(|_| {
            let engine = engine.clone();
            tokio::spawn(async move {
                engine
                    .start(StartRequest::code("steps", json!(steps)))
                    .await
            })
        })
        .collect();
    let mut pending: HashSet<RunId> = HashSet::with_capacity(runs);
    for s in starts {
        pending.insert(s.await.context("a start task")?.context("starting a run")?);
    }
    while !pending.is_empty() {
        match updates.recv().await {
            Ok(u) if u.status.is_terminal() => {
                pending.remove(&u.run_id);
            }
            Ok(_) => {}
            Err(RecvError::Lagged(_)) => {
                let mut still = HashSet::with_capacity(pending.len());
                for run in pending {
                    if !engine
                        .status(run)
                        .context("reading a run's status")?
                        .is_terminal()
                    {
                        still.insert(run);
                    }
                }
                pending = still;
            }
            Err(RecvError::Closed) => {
                return Err(Error::new("waiting for the runs", "the engine closed"));
            }
        }
    }
    Ok(started.elapsed())
}

/// Runs `runs` runs of `steps` no-op tasks from `in_flight` concurrent clients, each of which
/// starts a run, waits for it to end ([`Engine::wait`]) and starts the next: the peers'
/// throughput protocol (at most `in_flight` runs unfinished at a time). The time from the first
/// start to the last end.
pub async fn run_in_flight(
    engine: &Engine,
    runs: usize,
    steps: u64,
    in_flight: usize,
) -> Result<Duration> {
    let started = Instant::now();
    let clients = in_flight.clamp(1, runs.max(1));
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let engine = engine.clone();
            let mine = runs / clients + usize::from(c < runs % clients);
            tokio::spawn(async move {
                for _ in 0..mine {
                    let run = engine
                        .start(StartRequest::code("steps", json!(steps)))
                        .await
                        .context("starting a run")?;
                    let view = engine.wait(run).await.context("waiting for a run")?;
                    if !view.status.is_terminal() {
                        return Err(Error::new(
                            "waiting for a run",
                            format!("run {run} settled as {}", view.status.as_str()),
                        ));
                    }
                }
                Ok::<(), Error>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.context("a client task")??;
    }
    Ok(started.elapsed())
}
