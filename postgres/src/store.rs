//! [`PgStore`]: the [`Store`] contract on PostgreSQL.

use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use magrathea_core::store::{CommitBatch, RunFilter, RunSummary, Store};
use magrathea_core::{RunId, StoreError};
use tokio_postgres::NoTls;
use uuid::Uuid;

use crate::bridge::Bridge;

/// Connections the store keeps open: one for the journal writer, the rest for readers.
const POOL_SIZE: usize = 8;

/// A PostgreSQL error (or a pool's) as a [`StoreError::Io`].
pub(crate) fn pg(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::io(e)
}

/// A [`Store`] on a PostgreSQL database (see the [crate] docs).
pub struct PgStore {
    bridge: Bridge,
    pool: Pool,
    /// The URL without its password, for messages.
    url: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`,
    /// or any form `tokio_postgres::Config` parses) and applies the migrations it lacks.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        let config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::io(format!(
                "not a PostgreSQL URL ({e}); expected postgres://user@host:port/database"
            ))
        })?;
        let shown = redact(url);
        let bridge = Bridge::new()?;
        let manager = Manager::from_config(
            config,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(pg)?;
        let migrating = pool.clone();
        bridge
            .run(async move { crate::schema::migrate(&migrating).await })
            .map_err(|e| StoreError::io(format!("PostgreSQL at {shown}: {e}")))?;
        Ok(Self {
            bridge,
            pool,
            url: shown,
        })
    }

    /// The database's URL, without its password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `f` with a pooled connection on the store's runtime.
    fn with_client<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send,
        T: Send + 'static,
    {
        let pool = self.pool.clone();
        self.bridge.run(async move {
            let client = pool.get().await.map_err(pg)?;
            f(client).await
        })
    }
}

/// `url` with the password, if any, replaced by `***` (for messages and logs).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let Some((auth, host)) = rest.split_once('@') else {
        return url.to_owned();
    };
    match auth.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => url.to_owned(),
    }
}

fn uuid(run: RunId) -> Uuid {
    Uuid::from_u128(run.as_u128())
}

fn run_id(id: Uuid) -> RunId {
    RunId::from_u128(id.as_u128())
}

fn seq(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::io(format!("seq {seq} is out of range")))
}

fn decode_summary(bytes: &[u8]) -> Result<RunSummary, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::CorruptIndex(e.to_string()))
}

/// One commit's rows, as the arrays its statements take.
#[derive(Default)]
struct Rows {
    record_runs: Vec<Uuid>,
    record_seqs: Vec<i64>,
    record_bytes: Vec<Vec<u8>>,
    summary_runs: Vec<Uuid>,
    workflows: Vec<String>,
    scopes: Vec<String>,
    active: Vec<bool>,
    summaries: Vec<Vec<u8>>,
    keys: Vec<String>,
    key_runs: Vec<Uuid>,
}

impl Rows {
    fn of(batches: &[&CommitBatch]) -> Result<Self, StoreError> {
        let mut rows = Rows::default();
        for r in batches.iter().flat_map(|b| &b.records) {
            rows.record_runs.push(uuid(r.run_id));
            rows.record_seqs.push(seq(r.seq)?);
            rows.record_bytes.push(r.bytes.clone());
        }
        // One row per run and per key: an upsert may not touch a row twice, and the last
        // summary of a run in the commit is its newest.
        let mut summaries = std::collections::HashMap::new();
        for s in batches.iter().flat_map(|b| &b.summaries) {
            summaries.insert(s.run_id, s);
        }
        for s in summaries.into_values() {
            rows.summary_runs.push(uuid(s.run_id));
            rows.workflows.push(s.workflow_name.clone());
            rows.scopes.push(s.scope.as_str().to_owned());
            rows.active.push(!s.status.is_terminal());
            rows.summaries
                .push(serde_json::to_vec(s).map_err(|e| StoreError::io(e.to_string()))?);
        }
        let mut keys = std::collections::HashMap::new();
        for (key, run) in batches.iter().flat_map(|b| &b.idempotency_keys) {
            keys.insert(key.as_str(), *run);
        }
        for (key, run) in keys {
            rows.keys.push(key.to_owned());
            rows.key_runs.push(uuid(run));
        }
        Ok(rows)
    }
}

async fn commit(mut client: deadpool_postgres::Object, rows: Rows) -> Result<(), StoreError> {
    let tx = client.transaction().await.map_err(pg)?;
    let (journal, runs, keys) = futures::try_join!(
        tx.prepare_cached(
            "INSERT INTO magrathea_journal (run_id, seq, bytes)
             SELECT * FROM UNNEST($1::uuid[], $2::int8[], $3::bytea[])",
        ),
        tx.prepare_cached(
            "INSERT INTO magrathea_runs (run_id, workflow, scope, active, summary)
             SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::text[], $4::bool[], $5::bytea[])
             ON CONFLICT (run_id) DO UPDATE SET workflow = EXCLUDED.workflow,
                 scope = EXCLUDED.scope, active = EXCLUDED.active, summary = EXCLUDED.summary",
        ),
        tx.prepare_cached(
            "INSERT INTO magrathea_idempotency_keys (key, run_id)
             SELECT * FROM UNNEST($1::text[], $2::uuid[])
             ON CONFLICT (key) DO UPDATE SET run_id = EXCLUDED.run_id",
        ),
    )
    .map_err(pg)?;
    // Pipelined on the one connection: the statements travel together.
    let records = async {
        if rows.record_runs.is_empty() {
            return Ok(0);
        }
        tx.execute(
            &journal,
            &[&rows.record_runs, &rows.record_seqs, &rows.record_bytes],
        )
        .await
    };
    let summaries = async {
        if rows.summary_runs.is_empty() {
            return Ok(0);
        }
        tx.execute(
            &runs,
            &[
                &rows.summary_runs,
                &rows.workflows,
                &rows.scopes,
                &rows.active,
                &rows.summaries,
            ],
        )
        .await
    };
    let idempotency = async {
        if rows.keys.is_empty() {
            return Ok(0);
        }
        tx.execute(&keys, &[&rows.keys, &rows.key_runs]).await
    };
    futures::try_join!(records, summaries, idempotency).map_err(pg)?;
    tx.commit().await.map_err(pg)
}

impl Store for PgStore {
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        let rows = Rows::of(batches)?;
        if rows.record_runs.is_empty() && rows.summary_runs.is_empty() && rows.keys.is_empty() {
            return Ok(());
        }
        self.with_client(move |client| commit(client, rows))
    }

    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read_journal_range(run_id, 0, usize::MAX)
    }

    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let from = seq(from_seq.min(i64::MAX as u64))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let id = uuid(run_id);
        self.with_client(move |client| async move {
            let statement = client
                .prepare_cached(
                    "SELECT seq, bytes FROM magrathea_journal
                     WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
                )
                .await
                .map_err(pg)?;
            let rows = client
                .query(&statement, &[&id, &from, &limit])
                .await
                .map_err(pg)?;
            rows.into_iter()
                .map(|row| {
                    let seq: i64 = row.try_get(0).map_err(pg)?;
                    let bytes: Vec<u8> = row.try_get(1).map_err(pg)?;
                    Ok((seq as u64, bytes))
                })
                .collect()
        })
    }

    fn run_summary(&self, run_id: RunId) -> Result<Option<RunSummary>, StoreError> {
        let id = uuid(run_id);
        self.with_client(move |client| async move {
            let row = client
                .query_opt(
                    "SELECT summary FROM magrathea_runs WHERE run_id = $1",
                    &[&id],
                )
                .await
                .map_err(pg)?;
            row.map(|row| decode_summary(row.get::<_, &[u8]>(0)))
                .transpose()
        })
    }

    fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let workflow = filter.workflow.clone();
        let scope = filter.scope.clone();
        let before = filter.before.map(uuid);
        let limit = (filter.limit > 0).then(|| i64::try_from(filter.limit).unwrap_or(i64::MAX));
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "SELECT summary FROM magrathea_runs
                     WHERE ($1::text IS NULL OR workflow = $1)
                       AND ($2::text IS NULL OR scope = $2)
                       AND ($3::uuid IS NULL OR run_id < $3)
                     ORDER BY run_id DESC LIMIT $4",
                    &[&workflow, &scope, &before, &limit],
                )
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|row| decode_summary(row.get::<_, &[u8]>(0)))
                .collect()
        })
    }

    fn active_runs(&self) -> Result<Vec<RunId>, StoreError> {
        self.with_client(|client| async move {
            let rows = client
                .query(
                    "SELECT run_id FROM magrathea_runs WHERE active ORDER BY run_id",
                    &[],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(|row| run_id(row.get(0))).collect())
        })
    }

    fn find_idempotency_key(&self, key: &str) -> Result<Option<RunId>, StoreError> {
        let key = key.to_owned();
        self.with_client(move |client| async move {
            let row = client
                .query_opt(
                    "SELECT run_id FROM magrathea_idempotency_keys WHERE key = $1",
                    &[&key],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|row| run_id(row.get(0))))
        })
    }
}

/// The store behind an `Arc`, as [`EngineBuilder::store`](magrathea_core::EngineBuilder::store)
/// takes it.
impl From<PgStore> for Arc<dyn Store> {
    fn from(store: PgStore) -> Self {
        Arc::new(store)
    }
}
