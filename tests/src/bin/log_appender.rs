//! The process that `tests/log_crash.rs` kills with SIGKILL while it appends to the journal.
//!
//! `log_appender <journal.redb> <acks-file> <incarnation>` opens the redb store
//! (`Durability::Immediate`) behind a journal writer and appends from 64 concurrent tasks, each
//! to a run of its own (`incarnation << 32 | task`), batches of one to three records whose
//! bytes [`record_bytes`] derives from the run and seq. After each acknowledged append it writes
//! `<run> <last seq>` to the acks file: whatever the store has acknowledged is on that list. It
//! appends until it is killed (or, given a fourth argument, for that many appends per task).

use std::io::Write;
use std::sync::{Arc, Mutex};

use magrathea_core::store::{CommitBatch, EncodedRecord};
use magrathea_core::writer::JournalWriter;
use magrathea_core::{Durability, RedbStore, RunId};
use magrathea_tests::record_bytes;

const TASKS: u64 = 64;

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (Some(db), Some(acks), Some(incarnation)) = (args.next(), args.next(), args.next()) else {
        anyhow::bail!("usage: log_appender <journal.redb> <acks-file> <incarnation> [appends]");
    };
    let incarnation: u128 = incarnation.parse()?;
    let appends: u64 = args.next().map_or(Ok(u64::MAX), |a| a.parse())?;
    let acks = Arc::new(Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(acks)?,
    ));
    let store = Arc::new(RedbStore::open(db, Durability::Immediate)?);
    let writer = JournalWriter::start(store);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (writer, acks) = (writer.clone(), acks.clone());
                tokio::spawn(async move {
                    let run = RunId::from_u128(incarnation << 32 | u128::from(t));
                    let mut seq = 0u64;
                    for i in 0..appends {
                        let n = 1 + (i % 3);
                        let records = (seq..seq + n)
                            .map(|s| EncodedRecord {
                                run_id: run,
                                seq: s,
                                bytes: record_bytes(run, s),
                            })
                            .collect();
                        let batch = CommitBatch {
                            records,
                            ..Default::default()
                        };
                        writer.append(batch).await?;
                        seq += n;
                        let line = format!("{} {}\n", run.as_u128(), seq - 1);
                        acks.lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .write_all(line.as_bytes())?;
                    }
                    anyhow::Ok(())
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        anyhow::Ok(())
    })
}
