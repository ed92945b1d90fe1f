//! The process that `tests/crash_recovery.rs` kills with SIGKILL.
//!
//! `crash_worker <journal.redb> <side-file> <runs>` opens an engine on the redb file
//! (`Durability::Immediate`; building it recovers every unfinished run), starts runs
//! `0..runs` of `crash_flow` idempotently (keys `w-0`, `w-1`, …, so a restart finds the runs
//! of the killed process instead of starting new ones), waits for all of them and exits 0 if
//! every result is the expected one, 1 otherwise.

use std::path::PathBuf;

use magrathea::prelude::*;
use magrathea::{Durability, StartOptions};
use magrathea_tests::{crash_expected, crash_flow, crash_step, set_side_file};

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(db), Some(side), Some(runs)) = (args.next(), args.next(), args.next()) else {
        anyhow::bail!("usage: crash_worker <journal.redb> <side-file> <runs>");
    };
    let runs: u64 = runs.parse()?;
    set_side_file(&PathBuf::from(side))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let engine = Engine::builder()
            .path(db)
            .durability(Durability::Immediate)
            .workflow(crash_flow)
            .task(crash_step)
            .build()
            .await?;
        let mut ids = Vec::new();
        for i in 0..runs {
            let options = StartOptions {
                idempotency_key: Some(format!("w-{i}")),
                started_by: Some("crash_worker".into()),
            };
            ids.push((i, engine.start_with(crash_flow, i, options).await?.id()));
        }
        let mut wrong = 0;
        for (i, run) in ids {
            let out = engine.handle(crash_flow, run).unwrap().result().await?;
            if out != crash_expected(i) {
                eprintln!(
                    "run {run} (input {i}) ended with {out}, expected {}",
                    crash_expected(i)
                );
                wrong += 1;
            }
        }
        anyhow::ensure!(wrong == 0, "{wrong} runs ended with a wrong result");
        Ok(())
    })
}
