//! End-to-end tests of Magrathea: shared workflows and helpers.
//!
//! The crash-recovery workflows live here because two programs need them: the `crash_worker`
//! binary, which runs them and is killed with SIGKILL, and the tests that check its journal.
//! The helpers stop an engine inside one process by shutting down the tokio runtime that drives
//! it (a restart, not a crash: only `crash_worker` is killed), and reopen redb files once the
//! stopped engine has let go of them.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use magrathea::core::StoreError;
use magrathea::prelude::*;
use magrathea::{ChildError, EngineBuilder, OpenError};
use serde::{Deserialize, Serialize};

/// Task steps of [`crash_flow`] (the durable sleep is one more step, between them).
pub const CRASH_TASKS: u32 = 6;
/// Index of the task (0-based, in call order) before which [`crash_flow`] sleeps.
pub const CRASH_SLEEP_BEFORE: u32 = 3;
/// Index of the task whose first attempt fails for every fifth input (a planned retry).
pub const CRASH_FLAKY_TASK: u32 = 2;

static SIDE_FILE: OnceLock<File> = OnceLock::new();

/// Opens the side file that [`crash_step`] appends one line to per execution (`O_APPEND`).
pub fn set_side_file(path: &Path) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let _ = SIDE_FILE.set(file);
    Ok(())
}

/// The input of one [`crash_step`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CrashStepIn {
    /// The run's input.
    pub run_input: u64,
    /// Which task of the run (0-based, in call order).
    pub k: u32,
    /// The previous task's output.
    pub acc: u64,
}

/// The value a [`crash_step`] returns: a pure function of its input.
pub fn crash_step_value(run_input: u64, k: u32, acc: u64) -> u64 {
    (acc * 31 + run_input * 7 + u64::from(k) + 1) % 1_000_000_007
}

/// The result a run of [`crash_flow`] with `input` must end with.
pub fn crash_expected(input: u64) -> u64 {
    (0..CRASH_TASKS).fold(0, |acc, k| crash_step_value(input, k, acc))
}

/// A task with a side effect: appends `run step attempt key` to the side file, in a single
/// `write` call, before it returns; then takes a little time, so that kills land mid-task.
#[task(retry(max_attempts = 3, backoff_ms = 10))]
pub async fn crash_step(ctx: TaskContext, input: CrashStepIn) -> Result<u64, TaskError> {
    let line = format!(
        "{} {} {} {}\n",
        ctx.run_id,
        ctx.step,
        ctx.attempt,
        ctx.idempotency_key()
    );
    let file = SIDE_FILE
        .get()
        .ok_or_else(|| TaskError::terminal("side file not set"))?;
    let written = (&*file).write(line.as_bytes())?;
    if written != line.len() {
        return Err(TaskError::terminal(format!(
            "short write to the side file: {written} of {} bytes",
            line.len()
        )));
    }
    let pause = 10 + (input.run_input * 7 + u64::from(input.k) * 13) % 30;
    tokio::time::sleep(Duration::from_millis(pause)).await;
    if input.k == CRASH_FLAKY_TASK && input.run_input.is_multiple_of(5) && ctx.attempt == 1 {
        return Err(TaskError::retryable("planned failure of the first attempt"));
    }
    Ok(crash_step_value(input.run_input, input.k, input.acc))
}

/// [`CRASH_TASKS`] chained tasks with a durable sleep of a few ms before task
/// [`CRASH_SLEEP_BEFORE`]; returns the last task's output ([`crash_expected`]).
#[workflow]
pub async fn crash_flow(ctx: Context, input: u64) -> Result<u64, WorkflowError> {
    let mut acc = 0;
    for k in 0..CRASH_TASKS {
        if k == CRASH_SLEEP_BEFORE {
            ctx.sleep(Duration::from_millis(3 + input % 5)).await?;
        }
        acc = ctx
            .task(
                crash_step,
                CrashStepIn {
                    run_input: input,
                    k,
                    acc,
                },
            )
            .await?;
    }
    Ok(acc)
}

/// Children that each run of [`crash_parent`] starts.
pub const CRASH_CHILDREN: u64 = 3;

/// The input of child `j` of the [`crash_parent`] run with input `parent`.
pub fn crash_child_input(parent: u64, j: u64) -> u64 {
    1_000 + parent * CRASH_CHILDREN + j
}

/// The result a run of [`crash_parent`] with `input` must end with: the sum of its children's.
pub fn crash_parent_expected(input: u64) -> u64 {
    (0..CRASH_CHILDREN)
        .map(|j| crash_expected(crash_child_input(input, j)))
        .sum()
}

/// Starts [`CRASH_CHILDREN`] runs of [`crash_flow`] as its children: the first alone, then the
/// others at once, so that kills land before, between and during child starts. Returns the sum
/// of their results ([`crash_parent_expected`]).
#[workflow]
pub async fn crash_parent(ctx: Context, input: u64) -> Result<u64, WorkflowError> {
    let child_failed = |e: ChildError| WorkflowError::failed(e.to_string());
    let first = ctx
        .child(crash_flow, crash_child_input(input, 0))
        .await
        .map_err(child_failed)?;
    let rest = (1..CRASH_CHILDREN).map(|j| ctx.child(crash_flow, crash_child_input(input, j)));
    let mut sum = first;
    for out in futures::future::join_all(rest).await {
        sum += out.map_err(child_failed)?;
    }
    Ok(sum)
}

/// A multi-threaded runtime of 2 workers, to run (and shut down) one engine.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("building a tokio runtime")
}

/// Builds an engine, retrying for up to 10 s while the store is still held by an engine whose
/// runtime was just shut down (`[MAG-ST002]`): its tasks are dropped in the background.
pub async fn build_retrying(
    make: impl Fn() -> EngineBuilder,
) -> Result<magrathea::Engine, OpenError> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match make().build().await {
            Err(OpenError::Store(StoreError::Locked(_))) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            other => return other,
        }
    }
}

/// Runs `f` with an engine that `make` builds, in a runtime of its own, then shuts that runtime
/// down: every driver, task and timer of the engine stops at once, and the next engine on the
/// same file sees only what was committed — a restart within one process, not a crash.
pub fn incarnation<T>(make: impl Fn() -> EngineBuilder, f: impl AsyncFnOnce(Engine) -> T) -> T {
    let rt = runtime();
    let out = rt.block_on(async move {
        let engine = build_retrying(make).await.unwrap();
        f(engine).await
    });
    rt.shutdown_background();
    out
}

/// Polls `cond` every 10 ms until it holds; panics with `what` after `timeout`.
pub async fn wait_for(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// [`wait_for`] for blocking code (outside any runtime).
pub fn wait_for_blocking(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {timeout:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The bytes `log_appender` writes as record `seq` of `run` (and `tests/log_crash.rs` expects):
/// up to about 4 KiB, so that a few thousand of them pass the size at which the store folds.
pub fn record_bytes(run: magrathea::RunId, seq: u64) -> Vec<u8> {
    let len = ((run.as_u128() as u64)
        .wrapping_mul(31)
        .wrapping_add(seq * 977)
        % 4000) as usize;
    (0..len)
        .map(|i| (seq as usize).wrapping_add(i) as u8)
        .collect()
}
