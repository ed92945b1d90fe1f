//! The versioned migrations in `migrations/`, applied at connect.

use deadpool_postgres::Pool;
use magrathea_core::StoreError;

use crate::store::pg;

/// `(version, SQL)`, in order. A new migration is appended with the next version; an applied
/// one is never edited.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_journal.sql")),
    (2, include_str!("../migrations/0002_leases.sql")),
    (3, include_str!("../migrations/0003_lanes.sql")),
    (4, include_str!("../migrations/0004_catalog.sql")),
    (5, include_str!("../migrations/0005_active_scope.sql")),
    (6, include_str!("../migrations/0006_lease_renewals.sql")),
];

/// The advisory lock that serialises migrations across workers ("magrathea" in ASCII).
const MIGRATION_LOCK: i64 = 0x6d61_6772_6174_6865;

/// Applies the migrations the database lacks.
pub(crate) async fn migrate(pool: &Pool) -> Result<(), StoreError> {
    let mut client = pool.get().await.map_err(pg)?;
    // One transaction under the lock: workers starting together wait for the first.
    let tx = client.transaction().await.map_err(pg)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(pg)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS magrathea_schema_migrations (
             version INT PRIMARY KEY,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .await
    .map_err(pg)?;
    let applied: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM magrathea_schema_migrations",
            &[],
        )
        .await
        .map_err(pg)?
        .get(0);
    let known = MIGRATIONS.last().map_or(0, |(v, _)| *v);
    if applied > known {
        return Err(StoreError::io(format!(
            "the database's schema is at version {applied}, newer than this build's {known}: \
             run a newer magrathea against it"
        )));
    }
    for (version, sql) in MIGRATIONS.iter().filter(|(v, _)| *v > applied) {
        tx.batch_execute(sql).await.map_err(pg)?;
        tx.execute(
            "INSERT INTO magrathea_schema_migrations (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(pg)?;
        tracing::info!(version, "applied a PostgreSQL schema migration");
    }
    tx.commit().await.map_err(pg)
}
