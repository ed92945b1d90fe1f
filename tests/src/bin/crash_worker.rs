//! The process that `tests/crash_recovery.rs` kills with SIGKILL.
//!
//! `crash_worker <journal.redb> <side-file> <runs> [parents]` opens an engine on the redb file
//! (`Durability::Immediate`; building it recovers every unfinished run), starts runs
//! `0..runs` of `crash_flow` idempotently (keys `w-0`, `w-1`, …, so a restart finds the runs
//! of the killed process instead of starting new ones), waits for all of them and exits 0 if
//! every result is the expected one, 1 otherwise. With `parents`, the runs are of
//! `crash_parent` (keys `p-0`, `p-1`, …), each of which starts `crash_flow` children.

use std::path::PathBuf;

use magrathea::prelude::*;
use magrathea::{Durability, StartOptions};
use magrathea_tests::{
    crash_expected, crash_flow, crash_parent, crash_parent_expected, crash_step, set_side_file,
};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(db), Some(side), Some(runs)) = (args.next(), args.next(), args.next()) else {
        anyhow::bail!("usage: crash_worker <journal.redb> <side-file> <runs> [parents]");
    };
    let runs: u64 = runs.parse()?;
    let parents = match args.next().as_deref() {
        None => false,
        Some("parents") => true,
        Some(other) => anyhow::bail!("unknown mode `{other}`: expected `parents` or nothing"),
    };
    set_side_file(&PathBuf::from(side))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let engine = Engine::builder()
            .path(db)
            .durability(Durability::Immediate)
            // The kills come every few hundred milliseconds, so an attempt may be cut short
            // more often than `maxClaimAttempts` allows: these tests are about what recovery
            // keeps, not about that limit (which `restart.rs` and `crash_resume.rs` test).
            .max_claim_attempts(u32::MAX)
            .workflow(crash_flow)
            .workflow(crash_parent)
            .task(crash_step)
            .build()
            .await?;
        let mut ids = Vec::new();
        for i in 0..runs {
            let options = |prefix: &str| StartOptions {
                idempotency_key: Some(format!("{prefix}-{i}")),
                started_by: Some("crash_worker".into()),
            };
            let run = if parents {
                engine.start_with(crash_parent, i, options("p")).await?.id()
            } else {
                engine.start_with(crash_flow, i, options("w")).await?.id()
            };
            ids.push((i, run));
        }
        let mut wrong = 0;
        for (i, run) in ids {
            let (out, expected) = if parents {
                (
                    engine.handle(crash_parent, run)?.result().await?,
                    crash_parent_expected(i),
                )
            } else {
                (
                    engine.handle(crash_flow, run)?.result().await?,
                    crash_expected(i),
                )
            };
            if out != expected {
                eprintln!("run {run} (input {i}) ended with {out}, expected {expected}");
                wrong += 1;
            }
        }
        anyhow::ensure!(wrong == 0, "{wrong} runs ended with a wrong result");
        Ok(())
    })
}
