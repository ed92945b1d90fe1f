//! The HTTP server: runs, inbox, approvals, events, live updates, documents and operations
//! over one axum router.
//!
//! [`serve`] opens the engine (redb at `<store>/journal.redb`, recovering every unfinished
//! run), binds, and serves until [`ServerHandle::shutdown`]. [`Server`] does the same over an
//! engine the application builds, so its code workflows and tasks are served next to the
//! YAML documents. The routes are listed in
//! [`routes::routes`] and at `GET /openapi.json`; authentication is described in [`auth`].
//!
//! Connections are served within [`ConnectionLimits`] (a header read timeout, an idle
//! timeout, a cap on concurrent connections; see [`connections`]). A server without
//! authentication binds only loopback addresses and checks `Host` and `Origin` (see
//! [`loopback`]). `GET /healthz` turns 503 while the journal store fails (see [`health`]).

pub mod approvals;
pub(crate) mod approvers;
pub mod auth;
pub(crate) mod automated;
pub mod body;
pub mod connections;
mod doc_etag;
mod doc_paths;
pub mod doc_quota;
mod document_warnings;
pub mod documents;
pub mod error;
pub mod events;
pub mod follow;
pub(crate) mod graph;
pub mod health;
pub mod inbox;
pub mod journal;
pub mod journal_reads;
pub(crate) mod live_events;
pub(crate) mod live_socket;
pub mod loopback;
pub mod me;
pub mod metrics;
pub mod openapi;
pub mod pause;
pub mod rerun;
pub mod retry;
pub mod routes;
pub(crate) mod run_filter;
pub mod run_wait;
pub mod runs;
pub mod schemas;
mod server;
pub(crate) mod setting;
pub mod sse;
pub mod state;
pub mod sub_runs;
mod token_file_mode;
pub mod trigger_rebuilds;
pub mod triggers;
pub mod ui;
pub mod versions;
pub mod visible;
pub(crate) mod webhooks;
pub mod workflows;
pub mod ws;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Extension;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use magrathea_core::{Engine, EngineBuilder, OpenError};

use crate::StoreLocation;
use magrathea_yaml::{DocumentSource, YamlRuntime};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tower_http::trace::TraceLayer;

pub use auth::{ApiScope, Auth, AuthFileError, Principal};
pub use connections::{
    ConnectionLimits, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_TIMEOUT,
};
pub use error::ApiError;
pub use server::{Access, Server};
pub use state::{AppParts, AppState};

/// The default address: loopback only, port 7878.
pub const DEFAULT_ADDR: &str = "127.0.0.1:7878";

/// Largest request body: 1 MiB (413 past it).
pub const BODY_LIMIT: usize = 1024 * 1024;

/// How long [`ServerHandle::shutdown`] lets in-flight requests finish (streams and
/// WebSockets never do on their own) before it closes the remaining connections.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// What to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    root: PathBuf,
    addr: SocketAddr,
    store: Option<PathBuf>,
    postgres: magrathea_postgres::PgOptions,
    insecure_no_auth: bool,
    limits: ConnectionLimits,
    max_followers_per_subject: usize,
    max_subscriptions_per_connection: usize,
    document_quota: doc_quota::DocumentQuota,
    triggers: crate::triggers::TriggerConfig,
    max_runs_per_tree: u32,
    max_runs_per_tenant: u32,
    max_resident_bytes_per_tenant: u64,
}

/// The default of [`ServeConfig::max_runs_per_tenant`].
pub const DEFAULT_MAX_RUNS_PER_TENANT: u32 = 10_000;

/// The default of [`ServeConfig::max_resident_bytes_per_tenant`]: 1 GiB.
pub const DEFAULT_MAX_RESIDENT_BYTES_PER_TENANT: u64 = 1 << 30;

impl ServeConfig {
    /// Serves the document tree `root` (`<root>/<tenant>/<project>/_vance/…`). Defaults: address
    /// [`DEFAULT_ADDR`], store `<root>/.magrathea/`, tokens required, the
    /// [default connection limits](ConnectionLimits::default).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            addr: DEFAULT_ADDR.parse().expect("a valid address"),
            store: None,
            postgres: magrathea_postgres::PgOptions::default(),
            insecure_no_auth: false,
            limits: ConnectionLimits::default(),
            max_followers_per_subject: follow::DEFAULT_MAX_FOLLOWERS_PER_SUBJECT,
            max_subscriptions_per_connection: follow::DEFAULT_MAX_SUBSCRIPTIONS_PER_CONNECTION,
            document_quota: doc_quota::DocumentQuota::default(),
            triggers: crate::triggers::TriggerConfig::default(),
            max_runs_per_tree: magrathea_core::DEFAULT_MAX_RUNS_PER_TREE,
            max_runs_per_tenant: DEFAULT_MAX_RUNS_PER_TENANT,
            max_resident_bytes_per_tenant: DEFAULT_MAX_RESIDENT_BYTES_PER_TENANT,
        }
    }

    /// How the triggers run: their clock, the retention of delivery records, whether they run
    /// at all (default: the system clock, seven days and 10,000 deliveries per trigger, on).
    pub fn triggers(mut self, triggers: crate::triggers::TriggerConfig) -> Self {
        self.triggers = triggers;
        self
    }

    /// The address to bind; port 0 picks a free port (see the address [`serve`] returns).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.addr = addr;
        self
    }

    /// The store: a directory (the journal is `<store>/journal.redb`), or a PostgreSQL URL
    /// (`postgres://user@host:port/database`) that several servers share.
    pub fn store(mut self, store: impl Into<PathBuf>) -> Self {
        self.store = Some(store.into());
        self
    }

    /// How this server holds runs as one of several workers on a PostgreSQL store (lease
    /// grace period, `maxClaimAttempts`). With a directory store only `maxClaimAttempts`
    /// applies: how often a task whose process stopped before its result runs again
    /// (`EngineBuilder::max_claim_attempts`).
    pub fn postgres_options(mut self, options: magrathea_postgres::PgOptions) -> Self {
        self.postgres = options;
        self
    }

    /// The most sub-runs one tree of runs may hold: every run started under a root run while
    /// the root is active, the root not counted (default 10,000; see `EngineBuilder::max_runs_per_tree`). A child
    /// beyond it is not started (`[MAG-CH003]`).
    pub fn max_runs_per_tree(mut self, runs: u32) -> Self {
        self.max_runs_per_tree = runs;
        self
    }

    /// The most runs one tenant may have in progress in this server at once, top-level runs
    /// and sub-runs alike, whoever started them (default [`DEFAULT_MAX_RUNS_PER_TENANT`]; see
    /// `EngineBuilder::max_active_runs_per_tenant`). A start beyond it is answered 429
    /// `MAG-EN008` and a sub-run beyond it fails its step. A run counts until it ends, also
    /// while it waits on a gate or a timer.
    pub fn max_runs_per_tenant(mut self, runs: u32) -> Self {
        self.max_runs_per_tenant = runs;
        self
    }

    /// The most journal bytes one tenant's runs in memory may hold at once (default
    /// [`DEFAULT_MAX_RESIDENT_BYTES_PER_TENANT`]; see
    /// `EngineBuilder::max_resident_bytes_per_tenant`): a start that would pass it is answered
    /// 429 `MAG-EN008` and a sub-run that would fails its step. Runs asleep on a timer or a
    /// gate are out of memory and count nothing.
    pub fn max_resident_bytes_per_tenant(mut self, bytes: u64) -> Self {
        self.max_resident_bytes_per_tenant = bytes;
        self
    }

    /// Lets every request through without a token, as subject `anonymous` with every scope.
    /// For trusted machines only: the address must then be a loopback address (serving fails
    /// with [`ServeError::InsecureNotLoopback`] otherwise), and requests must name it in
    /// `Host` and `Origin` (see [`loopback`]).
    pub fn insecure_no_auth(mut self, yes: bool) -> Self {
        self.insecure_no_auth = yes;
        self
    }

    /// How long a request's head may take to arrive, from its first byte (or from the
    /// accept); the connection is closed past it. Default [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.header_read_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive in full, from its head: past it the
    /// request fails with 408 and the connection closes. Default
    /// [`DEFAULT_BODY_READ_TIMEOUT`].
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.limits.body_read_timeout = timeout;
        self
    }

    /// How long a keep-alive connection may wait, with no request in flight, for its next
    /// request; streaming responses are in flight. Default [`DEFAULT_IDLE_TIMEOUT`].
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.limits.idle_timeout = timeout;
        self
    }

    /// How long a write to a client may wait for the client to read it; past it the
    /// connection is closed (a client that stops reading holds no answer longer). Default
    /// [`DEFAULT_SEND_TIMEOUT`].
    pub fn send_timeout(mut self, timeout: Duration) -> Self {
        self.limits.send_timeout = timeout;
        self
    }

    /// How many connections are served at once (WebSockets included); more wait in the
    /// listen backlog until one closes. Default [`DEFAULT_MAX_CONNECTIONS`]; 0 counts as 1.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.limits.max_connections = max.max(1);
        self
    }

    /// All connection limits at once.
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.limits = limits;
        self.limits.max_connections = self.limits.max_connections.max(1);
        self
    }

    /// The connection limits in effect.
    pub fn limits(&self) -> ConnectionLimits {
        self.limits
    }

    /// How many runs one token subject may follow at once, over SSE and WebSocket
    /// subscriptions together (default
    /// [`DEFAULT_MAX_FOLLOWERS_PER_SUBJECT`](follow::DEFAULT_MAX_FOLLOWERS_PER_SUBJECT)). One
    /// more SSE stream is answered 429, one more subscription an `error` message.
    pub fn max_followers_per_subject(mut self, n: usize) -> Self {
        self.max_followers_per_subject = n;
        self
    }

    /// How many subscriptions one WebSocket connection may hold at once (default
    /// [`DEFAULT_MAX_SUBSCRIPTIONS_PER_CONNECTION`](follow::DEFAULT_MAX_SUBSCRIPTIONS_PER_CONNECTION));
    /// one more is answered with an `error` message on the socket.
    pub fn max_subscriptions_per_connection(mut self, n: usize) -> Self {
        self.max_subscriptions_per_connection = n;
        self
    }

    /// How many documents, and how many bytes of them, one project may hold under `_vance/`
    /// (default [`DEFAULT_MAX_DOCUMENTS`](doc_quota::DEFAULT_MAX_DOCUMENTS) and
    /// [`DEFAULT_MAX_DOCUMENT_BYTES`](doc_quota::DEFAULT_MAX_DOCUMENT_BYTES)). A document
    /// write past either is answered 507 `MAG-HTTP-QUOTA`.
    pub fn document_quota(mut self, quota: doc_quota::DocumentQuota) -> Self {
        self.document_quota = quota;
        self
    }

    /// The store directory in effect.
    pub fn store_dir(&self) -> PathBuf {
        self.store
            .clone()
            .unwrap_or_else(|| self.root.join(".magrathea"))
    }

    /// The store, as [`ServeConfig::store`] named it.
    pub fn store_location(&self) -> StoreLocation {
        StoreLocation::from_arg(&self.store_dir())
    }
}

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The store directory cannot be created: check the path and its permissions.
    #[error("[MAG-SV001] cannot create the store directory {path}: {source}")]
    StoreDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The engine could not open the store (e.g. another process holds it).
    #[error("[MAG-SV002] cannot open the store: {0}")]
    Open(#[from] OpenError),
    /// The store at `store` could not be opened (a full disk, another process holds it, a
    /// database that refuses connections).
    #[error("[MAG-SV002] cannot open the store {store}: {source}")]
    OpenStore {
        /// The store: the redb file, or the database's URL without its password.
        store: String,
        /// Why.
        source: magrathea_core::StoreError,
    },
    /// The token file is unreadable or invalid.
    #[error(transparent)]
    Auth(#[from] AuthFileError),
    /// The address cannot be bound (in use, or not local).
    #[error("[MAG-SV003] cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The metrics registry refused a metric (a bug).
    #[error("[MAG-SV004] metrics: {0}")]
    Metrics(#[from] prometheus::Error),
    /// A server without authentication was asked to bind an address other machines can
    /// reach: bind a loopback address (`127.0.0.1`, `::1`), or configure tokens.
    #[error(
        "[MAG-SV010] refusing to serve without authentication on {addr}, which is not a \
         loopback address: use 127.0.0.1 or [::1], or configure tokens in _auth/tokens.yaml \
         instead of --insecure-no-auth"
    )]
    InsecureNotLoopback {
        /// The address asked for.
        addr: SocketAddr,
    },
}

/// The running server.
#[derive(Debug)]
pub struct ServerHandle {
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
    engine: Engine,
    state: AppState,
}

impl ServerHandle {
    /// The engine the server drives.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The server's triggers.
    pub fn triggers(&self) -> &Arc<crate::triggers::Triggers> {
        &self.state.triggers
    }

    /// The state the handlers share (for driving the triggers by hand in tests:
    /// `handle.triggers().tick(handle.state())`).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Stops accepting connections, lets in-flight requests finish for up to
    /// [`SHUTDOWN_GRACE`], then closes what remains. A read waiting for its run answers the
    /// run as it is, and SSE streams and WebSocket sessions end, as soon as the stop begins.
    /// The engine is not stopped: to open its store again in this process, call
    /// `handle.engine().stop(…)` first (a stopped engine lets the next one have the file).
    pub async fn shutdown(mut self) -> std::io::Result<()> {
        self.state.triggers.stop();
        // Waits answer and live streams end now, so that the in-flight requests finish at
        // once rather than at the grace's end.
        self.state.closing.close();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match tokio::time::timeout(SHUTDOWN_GRACE, &mut self.task).await {
            Ok(joined) => joined.unwrap_or(Ok(())),
            Err(_) => {
                self.task.abort();
                Ok(())
            }
        }
    }

    /// Serves until `signal` completes, then shuts down as [`ServerHandle::shutdown`].
    pub async fn run_until(self, signal: impl Future<Output = ()>) -> std::io::Result<()> {
        signal.await;
        self.shutdown().await
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        // Nothing fires for a server that is gone.
        self.state.triggers.stop();
    }
}

/// The router over `state`, with tracing, metrics and the body limit.
pub fn router(state: AppState) -> Router {
    let mut router = Router::new();
    for route in routes::routes() {
        router = router.route(route.path, (route.handler)());
    }
    // `/ui/` is the UI's index too (a browser adds the slash); `/ui/{*path}` needs a path.
    router = router.route("/ui/", axum::routing::get(ui::index));
    router
        .fallback(error::no_route)
        .layer(axum::middleware::map_response(error::framework_errors))
        .layer(axum::middleware::map_response_with_state(
            state.clone(),
            health::store_failures,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            metrics::track,
        ))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(Extension(Arc::new(health::HealthProbe::default())))
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// Opens the engine and the tokens, binds `config.addr` and serves in the background.
/// Returns the bound address (useful with port 0) and the handle that stops the server.
///
/// To serve an engine of your own, with code workflows and tasks next to the YAML documents,
/// use [`Server`].
pub async fn serve(config: ServeConfig) -> Result<(SocketAddr, ServerHandle), ServeError> {
    check_insecure_addr(config.insecure_no_auth, config.addr)?;
    let auth = Auth::load(auth::token_file(&config.root), config.insecure_no_auth)?;
    let location = config.store_location();
    if let StoreLocation::Redb(dir) = &location {
        // The runs' parameters, variables and outputs: for the store's owner alone.
        std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .map_err(|source| ServeError::StoreDir {
                path: dir.clone(),
                source,
            })?;
    }
    let engine = location
        .install_with(
            Engine::builder()
                .recover(true)
                .max_runs_per_tree(config.max_runs_per_tree)
                .max_active_runs_per_tenant(Some(config.max_runs_per_tenant))
                .max_resident_bytes_per_tenant(Some(config.max_resident_bytes_per_tenant)),
            &config.postgres,
        )
        .map_err(|source| ServeError::OpenStore {
            store: location.describe(),
            source,
        })?;
    start(engine, &config, auth, Some(location.describe())).await
}

/// Refuses to serve without authentication on an address other machines can reach.
fn check_insecure_addr(insecure: bool, addr: SocketAddr) -> Result<(), ServeError> {
    if insecure && !addr.ip().is_loopback() {
        return Err(ServeError::InsecureNotLoopback { addr });
    }
    Ok(())
}

/// Installs the YAML runtime of `config.root` into `engine`, builds it and serves it. `store`
/// names the engine's store for an error opening it, when known.
async fn start(
    engine: EngineBuilder,
    config: &ServeConfig,
    auth: Auth,
    store: Option<String>,
) -> Result<(SocketAddr, ServerHandle), ServeError> {
    let insecure = auth.insecure();
    check_insecure_addr(insecure, config.addr)?;
    let mut docs = DocumentSource::new(config.root.clone()).served();
    if let StoreLocation::Redb(dir) = config.store_location() {
        // Its control key must stay out of every step's reach, as the tree does. (A store
        // inside the tree is judged with it; one inside a project is that project's steps'
        // to read: the default, `<root>/.magrathea/`, lies in no project.)
        let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if !real(&dir).starts_with(real(&config.root)) {
            docs = docs.protect(dir);
        }
    }
    let runtime = YamlRuntime::new(docs);
    let engine = runtime
        .install(engine)
        .build()
        .await
        .map_err(|e| match (e, store) {
            (OpenError::Store(source), Some(store)) => ServeError::OpenStore { store, source },
            (e, _) => ServeError::Open(e),
        })?;
    // Runs of this store are a served tree's, whoever drives them next. (An application's
    // engine on a store of its own, not a file, has no directory to mark.)
    let location = config.store_location();
    let markable = !matches!(&location, StoreLocation::Redb(dir) if !dir.is_dir());
    if markable && let Err(e) = location.mark_served() {
        tracing::warn!("cannot mark the store as served: {e}");
    }
    // Tools that start runs or read the inbox (workflow_start, inbox_read) use the engine.
    runtime.attach(&engine);
    let metrics = Arc::new(metrics::Metrics::new()?);
    metrics.watch_runs(&engine);
    metrics.watch_journal(&engine);
    let triggers = Arc::new(crate::triggers::Triggers::new(
        engine.catalog(),
        config.triggers.clone(),
    ));
    let auth = Arc::new(auth);
    if !insecure {
        auth::spawn_reload(&auth);
    }
    let state = AppState::new(AppParts {
        triggers: triggers.clone(),
        engine: engine.clone(),
        runtime,
        auth,
        metrics,
        followers: Arc::new(
            follow::Followers::new(
                config.max_followers_per_subject,
                config.max_subscriptions_per_connection,
            )
            .session_idle(config.limits.idle_timeout),
        ),
        document_quota: config.document_quota,
        journal_reads: journal_reads::JournalReads::default(),
        trigger_rebuilds: trigger_rebuilds::TriggerRebuilds::default(),
        closing: state::Closing::default(),
    });
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: config.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind {
        addr: config.addr,
        source,
    })?;
    let (tx, rx) = oneshot::channel::<()>();
    let mut app = router(state.clone());
    if insecure {
        app = app.layer(axum::middleware::from_fn_with_state(
            Arc::new(loopback::LoopbackNames::new(addr.port())),
            loopback::check,
        ));
    }
    triggers.spawn(state.clone());
    let task = tokio::spawn(connections::serve(listener, app, config.limits, rx));
    Ok((
        addr,
        ServerHandle {
            shutdown: Some(tx),
            task,
            engine,
            state,
        },
    ))
}
