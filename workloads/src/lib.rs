//! The standard Magrathea performance workloads, with the raw baselines they are compared to.
//!
//! One body of code for two front ends: the criterion benches (`benches/benches/*.rs`) time
//! these functions with `iter_custom`, and `magrathea bench` runs them through [`suite`] on the
//! user's own disk. The two cannot drift apart.
//!
//! Everything here is durable: the engine and the journal writer run on a
//! [`magrathea_core::RedbStore`] with [`Durability::Immediate`](magrathea_core::Durability)
//! (an fsync per commit), and the baselines sync too.
//!
//! | module | workload |
//! |---|---|
//! | [`baseline`] | raw `fdatasync` of a 64-byte overwrite; raw redb `Immediate` commit of one record |
//! | [`appenders`] | N concurrent appenders on the engine's [`JournalWriter`](magrathea_core::writer::JournalWriter) |
//! | [`workflow`] | one 10-step workflow alone (start → result); 1,000 concurrent × 10 steps |
//! | [`replay`] | replay of a 10,000-record run; reading and decoding the same records |
//! | [`suite`] | all of the above in order, as figures with their ratios to the baselines |
//!
//! Each workload takes a directory (or what was opened in one) and a budget — a number of
//! iterations or a duration — and returns what it measured. Failures (a full disk, a
//! directory that cannot be written) are [`Error`]s, not panics.

mod common;
mod error;

pub mod appenders;
pub mod baseline;
pub mod replay;
pub mod suite;
pub mod workflow;

pub use common::{
    JOURNAL, commit_counts, fresh_dir, noop_task, quantile, raw_commit, raw_redb, small_record,
    steps_then_sleep_workflow, steps_workflow,
};
pub use error::{Error, Result};
