//! PostgreSQL as Magrathea's journal store: the same [`Store`](magrathea_core::Store)
//! contract as the embedded redb file, on a database several worker processes share.
//!
//! ```no_run
//! # fn main() -> Result<(), magrathea_core::StoreError> {
//! let store = magrathea_postgres::PgStore::connect("postgres://app@db.internal/magrathea")?;
//! let engine = magrathea_core::Engine::builder().store(std::sync::Arc::new(store));
//! # Ok(()) }
//! ```
//!
//! **Schema.** [`PgStore::connect`] applies the migrations under `migrations/` that the
//! database lacks, in order, each in its own transaction, under an advisory lock so that
//! workers starting together apply each once. Applied versions are kept in
//! `magrathea_schema_migrations`; a database migrated by a newer version is refused.
//!
//! **Group commit.** The journal writer hands [`Store::commit`](magrathea_core::Store::commit)
//! every batch waiting in its queue; they go to PostgreSQL as one transaction of three
//! statements — one multi-row insert of all records (`UNNEST` of arrays), one upsert of the run
//! summaries, one insert of the idempotency keys — pipelined on one connection, so a commit of
//! a thousand records from a thousand runs costs one WAL flush and a few round trips.
//!
//! **Durability** is the server's: with PostgreSQL's defaults (`fsync = on`,
//! `synchronous_commit = on`) a commit is on disk when it returns.
//!
//! **Threads.** The [`Store`](magrathea_core::Store) trait is synchronous (the journal writer
//! runs on its own thread); the store runs its PostgreSQL client on a small runtime of its own
//! and its methods wait for the answer, so they may be called from any thread, inside an async
//! runtime or not.

mod bridge;
mod catalog;
mod commit;
mod lanes;
mod leases;
mod schema;
mod store;
#[cfg(feature = "test-util")]
pub mod testing;

pub use store::{PgOptions, PgStore, redact};

/// Whether `url` names a PostgreSQL database (`postgres://…` or `postgresql://…`).
pub fn is_postgres_url(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}
