//! Replay tests: prove in `cargo test` that today's code still replays the journals of runs
//! that earlier code started.
//!
//! Export the journal of a run in flight (or of a finished one) with
//! `magrathea journal RUN --export FILE`, keep the file with your tests, and replay it against
//! an engine that registers your current workflows:
//!
//! ```no_run
//! # use magrathea::prelude::*;
//! # #[workflow] async fn order(ctx: Context, n: u32) -> Result<u32, WorkflowError> { Ok(n) }
//! # #[tokio::main] async fn main() {
//! let engine = Engine::builder().in_memory().workflow(order).build().await.unwrap();
//! magrathea::testing::assert_replays(&engine, "tests/journals/order.jsonl");
//! # }
//! ```
//!
//! A change that would block such a run fails the test with the non-determinism report —
//! the journal's step and the code's side by side — instead of blocking the run in production.
//! Nothing runs: no task executes, no child starts, nothing is written.
//!
//! A journal can also be written by hand, record by record, with
//! `magrathea::core::testing::JournalBuilder`: enable this crate's `test-util` feature in
//! your `[dev-dependencies]` for it.

use std::path::{Path, PathBuf};

use magrathea_core::export::JournalExport;
use magrathea_core::{Entry, ReplayError};

use crate::Engine;

/// Why a journal file could not be replayed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayFileError {
    /// The file could not be read.
    #[error("[MAG-RP001] cannot read the journal file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not a journal entry as `magrathea journal --export` writes them.
    #[error("[MAG-RP002] {path}:{line}: not a journal entry: {source}")]
    Format {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The code does not replay the journal: the reason the run would block.
    #[error("{path}: {source}")]
    Diverged {
        /// The file.
        path: PathBuf,
        /// The reason; for code that asks for other steps than the journal holds, the typed
        /// non-determinism report too ([`ReplayError::nondeterminism`]).
        #[source]
        source: ReplayError,
    },
}

/// Reads a journal exported with `magrathea journal RUN --export FILE` (one JSON entry per
/// line; blank lines are skipped).
pub fn read_journal(path: impl AsRef<Path>) -> Result<Vec<Entry>, ReplayFileError> {
    read_export(path.as_ref()).map(|export| export.entries)
}

fn read_export(path: &Path) -> Result<JournalExport, ReplayFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReplayFileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    magrathea_core::export::read_export(&text).map_err(|e| ReplayFileError::Format {
        path: path.to_path_buf(),
        line: e.line,
        source: e.source,
    })
}

/// Replays the exported journal at `path` against `engine`'s workflows (see
/// [`magrathea_core::Engine::check_replay`]), as the run that wrote it when the file holds
/// its id (as exports do), so that code using its run's id asks for the same steps.
pub fn replay_file(engine: &Engine, path: impl AsRef<Path>) -> Result<(), ReplayFileError> {
    let path = path.as_ref();
    let JournalExport { run_id, entries } = read_export(path)?;
    let core = engine.core();
    match run_id {
        Some(run_id) => core.check_replay_as(run_id, entries),
        None => core.check_replay(entries),
    }
    .map_err(|source| ReplayFileError::Diverged {
        path: path.to_path_buf(),
        source,
    })
}

/// Like [`replay_file`], failing the test with the report.
///
/// # Panics
///
/// When the file cannot be read or the code does not replay it.
#[track_caller]
pub fn assert_replays(engine: &Engine, path: impl AsRef<Path>) {
    if let Err(e) = replay_file(engine, path) {
        panic!("{e}");
    }
}
