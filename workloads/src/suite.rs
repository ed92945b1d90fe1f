//! All the standard workloads in one go, as the figures `magrathea bench` prints.
//!
//! [`run`] measures, in this order: the raw baselines (`fdatasync`, redb commit of one
//! record); the journal writer with 1, 16, 256 and 1,024 concurrent appenders; one durable
//! step alone (a lone append, p50/p90/p99), alternated sample by sample with one raw
//! `fdatasync` and one raw redb commit; one 10-step workflow alone, alternated likewise with
//! its baselines (11 raw `fdatasync`s, 10 raw redb commits) so that all three see the same
//! disk; 1,000 concurrent workflows of 10 steps; and the replay of a 10,000-record run against
//! reading and decoding it. A [`Plan`] says how much of each.
//!
//! Each [`Figure`] is compared to the baselines of the same run by a ratio `value /
//! baseline value`, in the same unit: for a rate (records/s) above 1 is better than the
//! baseline, for a time (ms) below 1 is. The 1,000 × 10 rate (steps/s) is compared with one
//! raw commit (or `fdatasync`) per step: a journal that made each step durable on its own.

use std::path::Path;
use std::time::Duration;

use crate::appenders::{APPENDERS, append_for, lone_append, open_writer};
use crate::baseline::{FsyncFile, RawRedb};
use crate::common::{quantile, small_record};
use crate::error::{Context, Result};
use crate::replay::{RECORDS, ReplayRun};
use crate::workflow::{CONCURRENT_RUNS, STEPS, engine, lone_run, run_concurrently};

/// How much of each workload [`run`] does.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Raw `fdatasync`s timed for the baseline.
    pub fsyncs: u64,
    /// Raw redb commits of one record timed for the baseline.
    pub redb_commits: u64,
    /// Lone appends, one durable step each (each alternated with one raw `fdatasync` and one
    /// raw redb commit).
    pub lone_appends: usize,
    /// Lone 10-step workflows (each alternated with its two baselines).
    pub lone_runs: usize,
    /// Time spent with each number of concurrent appenders.
    pub appender_time: Duration,
    /// Rounds of 1,000 concurrent × 10-step workflows.
    pub throughput_rounds: usize,
    /// Replays of the 10,000-record run (and as many reads of it).
    pub replays: usize,
    /// The most time a phase of counted samples (the raw baselines, lone steps, lone
    /// workflows) takes once it has [`MIN_SAMPLES`] (lone workflows: [`MIN_RUNS`]): on a disk
    /// whose sync takes milliseconds it takes fewer samples rather than minutes.
    pub sample_time: Duration,
}

/// Samples a phase of counted samples takes before [`Plan::sample_time`] may end it.
pub const MIN_SAMPLES: usize = 20;
/// Lone 10-step workflows timed before [`Plan::sample_time`] may end the phase.
pub const MIN_RUNS: usize = 5;

impl Plan {
    /// A short pass, well under 30 s on a small machine with an SSD.
    pub fn quick() -> Self {
        Self {
            fsyncs: 200,
            redb_commits: 100,
            lone_appends: 200,
            lone_runs: 30,
            appender_time: Duration::from_secs(1),
            throughput_rounds: 1,
            replays: 5,
            sample_time: Duration::from_secs(2),
        }
    }

    /// A few times longer than [`Plan::quick`], for steadier figures.
    pub fn full() -> Self {
        Self {
            fsyncs: 1_000,
            redb_commits: 500,
            lone_appends: 1_000,
            lone_runs: 150,
            appender_time: Duration::from_secs(3),
            throughput_rounds: 4,
            replays: 20,
            sample_time: Duration::from_secs(8),
        }
    }
}

/// One measured figure and how it compares to the baselines.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Stable identifier (`ten_steps_p50`).
    pub name: String,
    /// What it is, for people.
    pub label: String,
    /// The measurement, in `unit`.
    pub value: f64,
    /// `records/s`, `records/commit`, `steps/s` or `ms`.
    pub unit: &'static str,
    /// Ratios to baselines measured in the same run, the main one first.
    pub comparisons: Vec<Comparison>,
}

/// A figure's ratio to a baseline figure of the same unit.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The baseline figure's name.
    pub baseline: String,
    /// The figure's value divided by the baseline's.
    pub ratio: f64,
}

/// The figures under construction; comparisons resolve against figures already pushed.
#[derive(Debug, Default)]
struct Figures(Vec<Figure>);

impl Figures {
    fn push(&mut self, name: &str, label: &str, value: f64, unit: &'static str, vs: &[&str]) {
        let comparisons = vs
            .iter()
            .map(|b| {
                let base = self
                    .0
                    .iter()
                    .find(|f| f.name == *b)
                    .expect("a baseline is measured before what is compared to it");
                // A rate of steps is compared with one commit per step.
                debug_assert!(
                    base.unit == unit || (unit == "steps/s" && base.unit == "records/s"),
                    "a baseline has the figure's unit"
                );
                Comparison {
                    baseline: base.name.clone(),
                    ratio: value / base.value,
                }
            })
            .collect();
        self.0.push(Figure {
            name: name.into(),
            label: label.into(),
            value,
            unit,
            comparisons,
        });
    }
}

/// Times up to `count` samples in batches of 10 with `time` (which times `n` and returns how
/// long they took), stopping early once [`MIN_SAMPLES`] are taken and `cap` has passed:
/// the samples taken and their time.
fn in_batches(
    count: u64,
    cap: Duration,
    mut time: impl FnMut(u64) -> Result<Duration>,
) -> Result<(u64, Duration)> {
    let (mut done, mut took) = (0, Duration::ZERO);
    while done < count {
        if done >= MIN_SAMPLES as u64 && took > cap {
            break;
        }
        let n = (count - done).min(10);
        took += time(n)?;
        done += n;
    }
    Ok((done, took))
}

/// Milliseconds of a duration.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs every workload of `plan` in files under `dir` (which it leaves behind: pass a fresh
/// directory), telling `progress` what it starts, and returns the figures. Builds a tokio
/// runtime of its own: call it from a plain thread, not an async task.
pub fn run(dir: &Path, plan: &Plan, progress: &mut dyn FnMut(&str)) -> Result<Vec<Figure>> {
    let rt = tokio::runtime::Runtime::new().context("starting a tokio runtime")?;
    let mut figures = Figures::default();

    progress("raw baselines: fdatasync, redb commit of 1 record");
    let mut fsync = FsyncFile::create(dir)?;
    let mut raw = RawRedb::create(&dir.join("raw.redb"))?;
    fsync.time(plan.fsyncs.min(10))?;
    raw.time(plan.redb_commits.min(10))?;
    let (done, took) = in_batches(plan.fsyncs, plan.sample_time, |n| fsync.time(n))?;
    figures.push(
        "raw_fdatasync",
        "raw fdatasync of a 64-byte overwrite, one record per sync",
        done as f64 / took.as_secs_f64(),
        "records/s",
        &[],
    );
    let (done, took) = in_batches(plan.redb_commits, plan.sample_time, |n| raw.time(n))?;
    figures.push(
        "raw_redb_commit_1",
        "raw redb Immediate commit of 1 record",
        done as f64 / took.as_secs_f64(),
        "records/s",
        &[],
    );

    let writer = open_writer(&dir.join("writer.redb"))?;
    for n in APPENDERS {
        progress(&if n == 1 {
            "journal writer, 1 appender".to_string()
        } else {
            format!("journal writer, {n} concurrent appenders")
        });
        let appended = rt.block_on(append_for(&writer, n, plan.appender_time))?;
        let (label, vs): (String, &[&str]) = if n == 1 {
            (
                "journal writer, 1 appender (lone append)".into(),
                &["raw_fdatasync", "raw_redb_commit_1"],
            )
        } else {
            (
                format!("journal writer, {n} concurrent appenders"),
                &["raw_redb_commit_1", "raw_fdatasync"],
            )
        };
        let name = format!("appenders_{n}");
        figures.push(&name, &label, appended.records_per_sec(), "records/s", vs);
        figures.push(
            &format!("{name}_records_per_commit"),
            &format!("journal writer, {n} appenders: records per commit"),
            appended.records_per_commit(),
            "records/commit",
            &[],
        );
    }
    progress("lone durable step, alternated with one fdatasync and one redb commit");
    let record = small_record(1);
    let (mut appends, mut syncs, mut commits) = (Vec::new(), Vec::new(), Vec::new());
    // One loop inside the runtime: each append is awaited where it is made, as a driver
    // awaits its step's commit (entering the runtime per sample would time thread wake-ups).
    rt.block_on(async {
        let run = magrathea_core::RunId::new();
        let started = std::time::Instant::now();
        for seq in 0..plan.lone_appends as u64 {
            if appends.len() >= MIN_SAMPLES && started.elapsed() > plan.sample_time {
                break;
            }
            syncs.push(fsync.time(1)?);
            commits.push(raw.time(1)?);
            appends.push(lone_append(&writer, run, seq, &record).await?);
        }
        Ok::<_, crate::error::Error>(())
    })?;
    for (q, p) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
        let sync_name = format!("raw_fdatasync_{p}");
        let commit_name = format!("raw_redb_commit_1_{p}");
        figures.push(
            &sync_name,
            &format!("one raw fdatasync, {p}"),
            ms(quantile(&mut syncs, q)),
            "ms",
            &[],
        );
        figures.push(
            &commit_name,
            &format!("one raw redb commit of 1 record, {p}"),
            ms(quantile(&mut commits, q)),
            "ms",
            &[],
        );
        figures.push(
            &format!("lone_step_{p}"),
            &format!("one durable step alone (a journal append, acknowledged once durable), {p}"),
            ms(quantile(&mut appends, q)),
            "ms",
            &[sync_name.as_str(), commit_name.as_str()],
        );
    }
    drop(writer);

    progress("one 10-step workflow alone, alternated with 11 fdatasyncs and 10 redb commits");
    let engine = rt.block_on(engine(dir))?;
    let (mut wf, mut syncs, mut commits) = (Vec::new(), Vec::new(), Vec::new());
    // One untimed round first: the engine's first run pays for its caches.
    rt.block_on(lone_run(&engine, STEPS))?;
    let started = std::time::Instant::now();
    for _ in 0..plan.lone_runs {
        if wf.len() >= MIN_RUNS && started.elapsed() > plan.sample_time {
            break;
        }
        syncs.push(fsync.time(STEPS + 1)?);
        commits.push(raw.time_run(STEPS)?);
        wf.push(rt.block_on(lone_run(&engine, STEPS))?);
    }
    for (q, p) in [(0.5, "p50"), (0.9, "p90"), (0.99, "p99")] {
        let sync_name = format!("raw_fdatasync_x11_{p}");
        let commit_name = format!("raw_redb_commit_x10_{p}");
        figures.push(
            &sync_name,
            &format!("11 raw fdatasyncs in sequence, {p}"),
            ms(quantile(&mut syncs, q)),
            "ms",
            &[],
        );
        figures.push(
            &commit_name,
            &format!("10 raw redb commits in sequence, {p}"),
            ms(quantile(&mut commits, q)),
            "ms",
            &[],
        );
        figures.push(
            &format!("ten_steps_{p}"),
            &format!("one 10-step workflow alone, start to result, {p}"),
            ms(quantile(&mut wf, q)),
            "ms",
            &[commit_name.as_str(), sync_name.as_str()],
        );
    }

    progress("1,000 concurrent workflows of 10 steps");
    let mut took = Duration::ZERO;
    for _ in 0..plan.throughput_rounds.max(1) {
        took += rt.block_on(run_concurrently(&engine, CONCURRENT_RUNS, STEPS))?;
    }
    let steps = (plan.throughput_rounds.max(1) * CONCURRENT_RUNS) as f64 * STEPS as f64;
    figures.push(
        "throughput_1000x10",
        "1,000 concurrent workflows × 10 steps, first start to last end",
        steps / took.as_secs_f64(),
        "steps/s",
        // Against a journal that made each step durable with a commit of its own.
        &["raw_redb_commit_1", "raw_fdatasync"],
    );
    drop(engine);

    progress("replay of a 10,000-record run (building its journal takes a few seconds)");
    let replay_dir = dir.join("replay");
    std::fs::create_dir(&replay_dir).context("creating the replay directory")?;
    let replay = rt.block_on(ReplayRun::build(&replay_dir))?;
    let _rt = rt.enter();
    replay.resume_until_suspended();
    let (mut replays, mut reads) = (Vec::new(), Vec::new());
    for _ in 0..plan.replays.max(1) {
        reads.push(replay.read_decode()?);
        replays.push(replay.resume_until_suspended());
    }
    figures.push(
        "read_decode_10000",
        &format!("read and decode a run's {RECORDS} records, p50"),
        ms(quantile(&mut reads, 0.5)),
        "ms",
        &[],
    );
    figures.push(
        "replay_10000",
        &format!("replay a {RECORDS}-record run until suspended again, p50"),
        ms(quantile(&mut replays, 0.5)),
        "ms",
        &["read_decode_10000"],
    );
    Ok(figures.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A phase of counted samples on a slow disk stops at its time once it has its minimum,
    /// and on a fast one takes every sample.
    #[test]
    fn a_counted_phase_is_bounded_in_time_past_its_minimum() {
        // Each sample "takes" 50 ms: the cap of 0.5 s is passed after 20 samples (1 s).
        let slow = |n: u64| Ok(Duration::from_millis(50) * n as u32);
        let (done, took) = in_batches(200, Duration::from_millis(500), slow).unwrap();
        assert_eq!(done, MIN_SAMPLES as u64);
        assert_eq!(took, Duration::from_millis(50) * MIN_SAMPLES as u32);
        let fast = |n: u64| Ok(Duration::from_micros(10) * n as u32);
        let (done, _) = in_batches(200, Duration::from_millis(500), fast).unwrap();
        assert_eq!(done, 200);
    }
}
