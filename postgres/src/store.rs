//! [`PgStore`]: the [`Store`] contract on PostgreSQL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use magrathea_core::store::{
    CommitBatch, Leases, Refusal, RunFilter, RunSummary, Store, prefix_end,
};
use magrathea_core::{RunId, StoreError};
use tokio_postgres::NoTls;
use uuid::Uuid;

use crate::bridge::Bridge;

/// Connections the store keeps open: the journal writer, the heartbeat, the mailbox and
/// readers.
const POOL_SIZE: usize = 8;

/// A PostgreSQL error (or a pool's) as a [`StoreError::Io`].
pub(crate) fn pg(e: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::io(Chain(Box::new(e)))
}

/// A driver or pool error shown with its causes: the pool says only "Error occurred while
/// creating a new object: db error", its source says "password authentication failed for user
/// …" or "Connection refused". The error itself stays the source, for callers that look.
#[derive(Debug)]
struct Chain(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let text = c.to_string();
            // Wrappers often repeat their source's text: each part once.
            if !text.is_empty() && !shown.contains(&text) {
                shown.push_str(": ");
                shown.push_str(&text);
            }
            cause = c.source();
        }
        f.write_str(&shown)
    }
}

impl std::error::Error for Chain {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.0.as_ref())
    }
}

/// How a worker holds runs on a shared database (see [`PgStore::connect_with`]).
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// How long a lease lasts without a heartbeat: after it, another worker reclaims the run.
    /// The reference's default is 5 minutes.
    pub lease_grace: Duration,
    /// How often the worker renews its leases (default: a tenth of the grace period).
    pub heartbeat: Option<Duration>,
    /// How many reclaims a run survives (the reference's `maxClaimAttempts`, default 3).
    pub max_claim_attempts: u32,
    /// The worker's name in leases and records (default: host, process id and a random part).
    pub worker: Option<String>,
    /// How long opening a connection may take, the server's handshake included (default 15
    /// s): a server that accepts the connection and never answers fails the connect, and a
    /// later connection of the pool, instead of hanging. A URL's own `connect_timeout`
    /// bounds the socket's connect within it.
    pub connect_timeout: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self {
            lease_grace: Duration::from_secs(300),
            heartbeat: None,
            max_claim_attempts: 3,
            worker: None,
            connect_timeout: Duration::from_secs(15),
        }
    }
}

/// A run this worker holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Held {
    /// The lease's epoch (`None`: an ended run, which has no lease).
    pub(crate) epoch: Option<i64>,
    /// When this worker claimed it: a heartbeat judges only leases claimed before it read
    /// the lease table.
    pub(crate) since: std::time::Instant,
}

impl Held {
    pub(crate) fn now(epoch: Option<i64>) -> Self {
        Self {
            epoch,
            since: std::time::Instant::now(),
        }
    }
}

/// What the store and its heartbeat share.
pub(crate) struct Inner {
    pub(crate) pool: Pool,
    pub(crate) worker: String,
    pub(crate) options: PgOptions,
    /// Runs this worker holds.
    pub(crate) held: Mutex<HashMap<RunId, Held>>,
    /// Runs whose leases were found lost, not yet reported.
    pub(crate) lost: Mutex<Vec<RunId>>,
    /// Leases given up because no heartbeat renewed them in time (the database did not
    /// answer), with their epochs: released at the first heartbeat that reaches the database,
    /// and not claimed again before (see [`crate::leases::heartbeat`]).
    pub(crate) abandoned: Mutex<HashMap<RunId, i64>>,
    /// When the last heartbeat that renewed this worker's leases read the clock (before it
    /// asked, so every lease it renewed lasts at least the grace from then).
    pub(crate) renewed_at: Mutex<std::time::Instant>,
    /// Lane slots whose step ended while the database did not answer its release: released
    /// by the next heartbeat that reaches it, and never renewed meanwhile (see
    /// [`crate::lanes`]).
    pub(crate) unreleased_slots: Mutex<Vec<crate::lanes::SlotKey>>,
    /// Set once this worker gave up every lease (it is leaving): it claims and reclaims
    /// nothing more, so that a round of its engine still running as it stops cannot take back
    /// the runs it just released.
    pub(crate) leaving: std::sync::atomic::AtomicBool,
}

/// A [`Store`] on a PostgreSQL database (see the [crate] docs).
pub struct PgStore {
    pub(crate) inner: Arc<Inner>,
    pub(crate) bridge: Bridge,
    /// The URL without its password, for messages.
    url: String,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("url", &self.url)
            .field("worker", &self.inner.worker)
            .finish_non_exhaustive()
    }
}

impl PgStore {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/database`,
    /// or any form `tokio_postgres::Config` parses) with the default [`PgOptions`], and
    /// applies the migrations it lacks.
    pub fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, PgOptions::default())
    }

    /// [`PgStore::connect`] with options for the leases.
    pub fn connect_with(url: &str, options: PgOptions) -> Result<Self, StoreError> {
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| {
            StoreError::io(format!(
                "not a PostgreSQL URL ({e}); expected postgres://user@host:port/database"
            ))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
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
            .create_timeout(Some(options.connect_timeout))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .build()
            .map_err(pg)?;
        let migrating = pool.clone();
        bridge
            .run(async move { crate::schema::migrate(&migrating).await })
            .map_err(|e| {
                // The store error's code is the outer one's: its text alone here.
                let mut why = match &e {
                    StoreError::Io(source) => source.to_string(),
                    other => other.to_string(),
                };
                if why.contains("Timeout") {
                    why.push_str(&format!(
                        " (no answer within {:?}: is the server up, and listening there?)",
                        options.connect_timeout
                    ));
                }
                StoreError::io(format!("PostgreSQL at {shown}: {why}"))
            })?;
        let worker = options.worker.clone().unwrap_or_else(worker_name);
        let inner = Arc::new(Inner {
            pool,
            worker,
            options,
            held: Mutex::default(),
            lost: Mutex::default(),
            abandoned: Mutex::default(),
            renewed_at: Mutex::new(std::time::Instant::now()),
            unreleased_slots: Mutex::default(),
            leaving: std::sync::atomic::AtomicBool::new(false),
        });
        bridge.spawn(crate::leases::heartbeat(Arc::downgrade(&inner)))?;
        Ok(Self {
            inner,
            bridge,
            url: shown,
        })
    }

    /// The database's URL, without its password.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Runs `f` with a pooled connection on the store's runtime.
    pub(crate) fn with_client<T, F, Fut>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(deadpool_postgres::Object) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send,
        T: Send + 'static,
    {
        let pool = self.inner.pool.clone();
        self.bridge.run(async move {
            let client = pool.get().await.map_err(pg)?;
            f(client).await
        })
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        // Other workers take this worker's runs at once instead of after the grace period.
        if let Err(e) = crate::leases::release_all(self) {
            tracing::warn!(error = %e, "could not release the leases at shutdown");
        }
    }
}

/// `host:pid:random`: unique per process (a restarted process is a new worker), readable in a
/// lease table, and beginning like the `host:pid` of re-execution records.
fn worker_name() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into());
    let random = Uuid::new_v4().simple().to_string();
    format!("{host}:{}:{}", std::process::id(), &random[..8])
}

/// `url` with the password, if any, replaced by `***` (for messages and logs): the one in the
/// user info (up to the last `@`, since a password may hold `@`, `/` or `?` as written) and a
/// `password=` query parameter.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let rest = match rest.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => rest.to_owned(),
        },
        None => rest.to_owned(),
    };
    let rest = match rest.split_once('?') {
        Some((path, query)) => {
            let params: Vec<String> = query
                .split('&')
                .map(|p| match p.split_once('=') {
                    Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                    _ => p.to_owned(),
                })
                .collect();
            format!("{path}?{}", params.join("&"))
        }
        None => rest,
    };
    format!("{scheme}://{rest}")
}

pub(crate) fn uuid(run: RunId) -> Uuid {
    Uuid::from_u128(run.as_u128())
}

pub(crate) fn run_id(id: Uuid) -> RunId {
    RunId::from_u128(id.as_u128())
}

pub(crate) fn seq(seq: u64) -> Result<i64, StoreError> {
    i64::try_from(seq).map_err(|_| StoreError::io(format!("seq {seq} is out of range")))
}

fn decode_summary(bytes: &[u8]) -> Result<RunSummary, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::CorruptIndex(format!("a run summary of the run index: {e}")))
}

impl Store for PgStore {
    fn commit(&self, batches: &[&CommitBatch]) -> Result<(), StoreError> {
        match self.commit_checked(batches)?.into_iter().next() {
            Some(refusal) => Err(refusal.error),
            None => Ok(()),
        }
    }

    fn commit_checked(&self, batches: &[&CommitBatch]) -> Result<Vec<Refusal>, StoreError> {
        crate::commit::commit(self, batches)
    }

    fn leases(&self) -> Option<&dyn Leases> {
        Some(self)
    }

    fn catalog(&self) -> Option<&dyn magrathea_core::Catalog> {
        Some(self)
    }

    fn read_journal_raw(&self, run_id: RunId) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        self.read_journal_range(run_id, 0, usize::MAX, usize::MAX)
    }

    fn read_journal_range(
        &self,
        run_id: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<(u64, Vec<u8>)>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let from = seq(from_seq.min(i64::MAX as u64))?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let id = uuid(run_id);
        // `None`: every record up to the limit.
        let budget =
            (max_bytes != usize::MAX).then(|| i64::try_from(max_bytes).unwrap_or(i64::MAX));
        self.with_client(move |client| async move {
            let rows = match budget {
                None => {
                    let statement = client
                        .prepare_cached(
                            "SELECT seq, bytes FROM magrathea_journal
                             WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3",
                        )
                        .await
                        .map_err(pg)?;
                    client.query(&statement, &[&id, &from, &limit]).await
                }
                Some(max_bytes) => {
                    // The bytes up to each record, summed in seq order: the server sends only
                    // the records that fit (and the first, whatever its size).
                    let statement = client
                        .prepare_cached(
                            "SELECT seq, bytes FROM (
                                 SELECT seq, bytes,
                                        row_number() OVER (ORDER BY seq) AS n,
                                        sum(octet_length(bytes)) OVER (ORDER BY seq) AS upto
                                 FROM magrathea_journal
                                 WHERE run_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3
                             ) page
                             WHERE n = 1 OR upto <= $4
                             ORDER BY seq",
                        )
                        .await
                        .map_err(pg)?;
                    client
                        .query(&statement, &[&id, &from, &limit, &max_bytes])
                        .await
                }
            }
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
        let (from, to) = prefix_bounds(filter.scope_prefix.as_deref());
        let before = filter.before.map(uuid);
        let limit = (filter.limit > 0).then(|| i64::try_from(filter.limit).unwrap_or(i64::MAX));
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "SELECT summary FROM magrathea_runs
                     WHERE ($1::text IS NULL OR workflow = $1)
                       AND ($2::text IS NULL OR scope = $2)
                       AND ($3::text IS NULL OR scope COLLATE \"C\" >= $3)
                       AND ($4::text IS NULL OR scope COLLATE \"C\" < $4)
                       AND ($5::uuid IS NULL OR run_id < $5)
                     ORDER BY run_id DESC LIMIT $6",
                    &[&workflow, &scope, &from, &to, &before, &limit],
                )
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|row| decode_summary(row.get::<_, &[u8]>(0)))
                .collect()
        })
    }

    fn active_summaries(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        let workflow = filter.workflow.clone();
        let scope = filter.scope.clone();
        let (from, to) = prefix_bounds(filter.scope_prefix.as_deref());
        // One query over the index of active runs by scope, rather than a summary read per
        // active run of the whole store.
        self.with_client(move |client| async move {
            let rows = client
                .query(
                    "SELECT summary FROM magrathea_runs
                     WHERE active
                       AND ($1::text IS NULL OR workflow = $1)
                       AND ($2::text IS NULL OR scope = $2)
                       AND ($3::text IS NULL OR scope COLLATE \"C\" >= $3)
                       AND ($4::text IS NULL OR scope COLLATE \"C\" < $4)
                     ORDER BY run_id",
                    &[&workflow, &scope, &from, &to],
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

/// The bounds of a scope prefix for a bytewise (`COLLATE "C"`) comparison: the prefix itself,
/// and the first string past every string that begins with it ([`prefix_end`]).
fn prefix_bounds(prefix: Option<&str>) -> (Option<String>, Option<String>) {
    match prefix.filter(|p| !p.is_empty()) {
        Some(p) => (Some(p.to_owned()), prefix_end(p)),
        None => (None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::{pg, redact};

    /// A pool error whose text says nothing without its cause.
    #[derive(Debug)]
    struct Pool(std::io::Error);

    impl std::fmt::Display for Pool {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Error occurred while creating a new object: error connecting to server")
        }
    }

    impl std::error::Error for Pool {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_driver_error_is_shown_with_its_cause() {
        let refused =
            std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        let shown = pg(Pool(refused)).to_string();
        assert!(
            shown.ends_with("error connecting to server: Connection refused"),
            "{shown}"
        );
        assert_eq!(shown.matches("[MAG-ST001]").count(), 1, "{shown}");
    }

    /// A server that accepts the connection and never answers (a hung host, a wrong port
    /// behind a proxy) fails the connect after the connect timeout instead of hanging.
    #[test]
    fn a_server_that_never_answers_fails_the_connect_after_its_timeout() {
        // The kernel completes the handshake into the backlog; nothing ever reads or answers.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("postgres://mag@{}/mag", silent.local_addr().unwrap());
        let options = super::PgOptions {
            connect_timeout: std::time::Duration::from_millis(300),
            ..Default::default()
        };
        let err = super::PgStore::connect_with(&url, options)
            .expect_err("a silent server cannot be connected to")
            .to_string();
        assert!(
            err.contains(&format!("PostgreSQL at {url}")) && err.contains("imeout"),
            "{err}"
        );
        assert!(err.contains("no answer within 300ms"), "{err}");
    }

    #[test]
    fn a_redacted_url_holds_no_part_of_its_password() {
        for (url, shown) in [
            (
                "postgres://mag:s3cret@db:5432/mag",
                "postgres://mag:***@db:5432/mag",
            ),
            // A password with `@` (or `/`) as written: all of it goes.
            (
                "postgres://mag:Wr@ng@PW@127.0.0.1:5433/mag",
                "postgres://mag:***@127.0.0.1:5433/mag",
            ),
            ("postgres://mag:a/b@db/mag", "postgres://mag:***@db/mag"),
            (
                "postgres://mag@db/mag?sslmode=disable&password=WrongPW123",
                "postgres://mag@db/mag?sslmode=disable&password=***",
            ),
            ("postgres://db/mag", "postgres://db/mag"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }
}
