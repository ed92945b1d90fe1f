//! The end-to-end tests across crates, built as one binary: each module was a test binary of its
//! own, every one linking the engine and its dependencies. Run one module with
//! `cargo test -p magrathea-tests --test it <module>::`.

mod cancellation;
mod crash_recovery;
mod delivery_edges;
mod eviction;
mod exec_tasks;
mod faulty_store;
mod idempotent_start;
mod inbox_pages;
mod log_crash;
mod nondeterminism;
mod postgres_code;
mod replay_exported;
mod replay_identity;
mod restart;
mod run_bounds;
mod run_deadline;
mod run_trees;
mod sub_run_crash;
mod sub_runs;
mod tenant_runs;
mod withdrawn_gates;
mod yaml_interop;
