//! `magrathea serve`: the HTTP server over a document tree.

use std::io::IsTerminal as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use magrathea_server::{
    DEFAULT_ADDR, DEFAULT_BODY_READ_TIMEOUT, DEFAULT_HEADER_READ_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS, DEFAULT_SEND_TIMEOUT, ServeConfig, StoreLocation,
    serve as start_server,
};

use super::control;
use super::output::{errln, outln};
use super::{EXIT_OK, Location};

/// Arguments of `magrathea serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Serves the REST, SSE and WebSocket API (GET /openapi.json lists every route). Prints
`listening on http://ADDR` on stdout once bound (with port 0, the port picked). API tokens are
read from <root>/_auth/tokens.yaml, at start and again within 2 s of each edit (an edit that
leaves it invalid is refused in the log, and the tokens read before stay):

  tokens:
    - tokenSha256: <hex SHA-256 of the token>   # or `token: <plain>`
      tenant: acme
      subject: alice
      scopes: [workflow.read, workflow.write, workflow.run]

With no token configured every API route answers 401 (health, metrics and event routes
excepted), unless --insecure-no-auth is given. --insecure-no-auth binds only loopback
addresses (127.0.0.1, [::1]; others fail with MAG-SV010) and answers only requests whose
Host (and Origin, when sent) is 127.0.0.1:PORT, localhost:PORT or [::1]:PORT, so that web
pages of other sites cannot reach it.

Connections: a request's head must arrive within --header-read-timeout of its first byte
(or of the connection; else the connection is closed without an answer) and its body within
--body-read-timeout of its head (else 408 and the connection closed), a keep-alive connection with no request in flight is closed after
--idle-timeout (streams such as SSE are in flight), a client that stops reading an answer
is disconnected after --send-timeout, and at most --max-connections are served at once;
more wait in the listen backlog until one closes.

GET /healthz answers 503 {\"status\":\"unhealthy\"} after the journal failed to commit
(e.g. a full disk) and 200 again once the store works, without a restart.

Triggers run inside the server: schedules (_vance/scheduler/), webhooks
(POST /v1/workflow-webhooks/{pathToken}), internal events and hooks; each delivery is recorded
and kept --delivery-retention-days days, at most --deliveries-per-trigger per trigger.

The server's directory store defaults to <root>/.magrathea/ (one store for the whole tree,
not a project's <project>/.magrathea/). Other `magrathea` commands on that store (`runs`,
`journal`, `inbox`, `run`, `cancel`, `schedules`, `deliveries`; from a project directory of the
tree, pass `--store <root>/.magrathea`) work while the server runs: they reach it over the
store's control socket, <store>/control.sock (mode 0600), each connection beginning with the
store's control key, <store>/control.key (mode 0600: whoever may read the store directory may
drive its runs).

Stops gracefully on SIGTERM, SIGHUP or Ctrl-C; unfinished runs resume on the next start.")]
pub(crate) struct ServeArgs {
    /// The document tree: `<root>/<tenant>/<project>/_vance/…` [default: the current directory].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The address to listen on; keep it on loopback unless a proxy with TLS is in front.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_ADDR)]
    addr: SocketAddr,
    /// Accept every request without a token (every scope, every tenant). Trusted machines only;
    /// loopback addresses only.
    #[arg(long)]
    insecure_no_auth: bool,
    /// Seconds a request's head (request line and headers) may take to arrive.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_HEADER_READ_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    header_read_timeout: u64,
    /// Seconds a request's body may take to arrive in full, from its head.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_BODY_READ_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    body_read_timeout: u64,
    /// Seconds a keep-alive connection may wait, with no request in flight, for the next one.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    idle_timeout: u64,
    /// Seconds a write to a client may wait for the client to read it (a client that stops
    /// reading an answer is disconnected).
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_SEND_TIMEOUT.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    send_timeout: u64,
    /// Connections served at once; more wait until one closes.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS as u64,
          value_parser = clap::value_parser!(u64).range(1..))]
    max_connections: u64,
    /// How many times in all a task may run while the process running it keeps crashing
    /// before its result, its first run counting (3: it runs again twice); then it fails with
    /// a technical_error that catch: may route (MAG-EN007). With a PostgreSQL store: how many
    /// claims of a run are allowed, its first and each reclaim after a lost lease (3: the third
    /// reclaim fails its running task, MAG-LS001), as the reference's maxClaimAttempts. A clean
    /// stop (SIGTERM, SIGHUP, Ctrl-C) hands the run over without counting, so it may run once
    /// more.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_claim_attempts: u32,
    /// The most sub-runs one tree of runs may hold: every run started under a root run while
    /// the root is active, the root not counted. A sub-run beyond it is not started; its step fails (MAG-CH003).
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_runs_per_tree: u32,
    /// The most runs one tenant may have in progress at once (sub-runs included). A start
    /// beyond it is answered 429 (MAG-EN008); a sub-run beyond it fails its step. A run counts
    /// until it ends, also while it waits on a gate or a timer.
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    max_runs_per_tenant: u32,
    /// The most journal bytes one tenant's runs in memory may hold at once (1 GiB by default;
    /// runs asleep on a timer or a gate are out of memory and count nothing). A start that
    /// would pass it is answered 429 (MAG-EN008); a sub-run that would fails its step.
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 30,
          value_parser = clap::value_parser!(u64).range(4096..))]
    max_resident_bytes_per_tenant: u64,
    /// Days a trigger delivery record (schedule tick, webhook request, event) is kept.
    #[arg(long, value_name = "DAYS", default_value_t = 7,
          value_parser = clap::value_parser!(u64).range(1..=3650))]
    delivery_retention_days: u64,
    /// Delivery records kept per trigger at most (the newest).
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    deliveries_per_trigger: u64,
}

/// A lease grace period: positive seconds, at least 0.1.
pub(crate) fn parse_grace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v >= 0.1 && v.is_finite() => Ok(v),
        _ => Err(format!("`{s}` is not a number of seconds of at least 0.1")),
    }
}

/// How often `serve` tries again to serve a control socket it could not serve at start.
const CONTROL_RETRY: Duration = Duration::from_secs(5);

pub(crate) async fn serve(loc: &Location, args: ServeArgs) -> anyhow::Result<u8> {
    init_tracing();
    let root = args.root.unwrap_or_else(|| PathBuf::from("."));
    let root = match root.canonicalize() {
        Ok(root) => root,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            anyhow::bail!("the root directory {} does not exist", root.display())
        }
        Err(e) => anyhow::bail!(
            "the root {} cannot be opened as a directory: {e}",
            root.display()
        ),
    };
    if !root.is_dir() {
        anyhow::bail!(
            "the root {} is not a directory: give `--root` the directory that holds the tenants \
             (and `_auth/tokens.yaml`)",
            root.display()
        );
    }
    let mut config = ServeConfig::new(&root)
        .addr(args.addr)
        .insecure_no_auth(args.insecure_no_auth)
        .header_read_timeout(Duration::from_secs(args.header_read_timeout))
        .body_read_timeout(Duration::from_secs(args.body_read_timeout))
        .idle_timeout(Duration::from_secs(args.idle_timeout))
        .send_timeout(Duration::from_secs(args.send_timeout))
        .max_connections(usize::try_from(args.max_connections).unwrap_or(usize::MAX))
        .max_runs_per_tree(args.max_runs_per_tree)
        .max_runs_per_tenant(args.max_runs_per_tenant)
        .max_resident_bytes_per_tenant(args.max_resident_bytes_per_tenant);
    if let Some(store) = &loc.store {
        config = config.store(store);
    }
    config = config.postgres_options(magrathea_postgres::PgOptions {
        lease_grace: Duration::from_secs_f64(loc.lease_grace),
        max_claim_attempts: args.max_claim_attempts,
        ..Default::default()
    });
    config = config.triggers(magrathea_server::triggers::TriggerConfig {
        retention: magrathea_server::triggers::Retention {
            max_age: Duration::from_secs(args.delivery_retention_days * 86_400),
            max_per_trigger: usize::try_from(args.deliveries_per_trigger).unwrap_or(usize::MAX),
        },
        ..Default::default()
    });
    let location = config.store_location();
    let mut signal = Box::pin(shutdown_signal()?);
    let Some((addr, handle)) = start_waiting_for_the_store(config, &mut signal).await? else {
        errln!("stopped before the store was free: nothing was served");
        return Ok(EXIT_OK);
    };
    // Other `magrathea` commands on this store become clients of this server. A socket that
    // cannot be served now (a full disk) is tried again until it is.
    let control_retry = match &location {
        StoreLocation::Redb(dir) => {
            let (engine, metrics) = (handle.engine().clone(), handle.state().metrics.clone());
            match control::owner::serve(&engine, dir, Some(metrics.clone()), true) {
                Ok(()) => None,
                Err(e) => {
                    errln!(
                        "warning: {}; trying again every {} s",
                        super::output::chain(&e),
                        CONTROL_RETRY.as_secs()
                    );
                    let dir = dir.clone();
                    Some(tokio::spawn(async move {
                        loop {
                            tokio::time::sleep(CONTROL_RETRY).await;
                            if control::owner::serve(&engine, &dir, Some(metrics.clone()), true)
                                .is_ok()
                            {
                                errln!("the control socket is served now");
                                return;
                            }
                        }
                    }))
                }
            }
        }
        _ => None,
    };
    if args.insecure_no_auth {
        errln!(
            "WARNING: --insecure-no-auth: every request is accepted without a token, with every \
             scope on every tenant. Do not expose this server."
        );
    }
    outln!("listening on http://{addr}")?;
    let engine = handle.engine().clone();
    handle
        .run_until(async {
            signal.await;
            errln!("shutting down: finishing in-flight requests");
        })
        .await?;
    if let Some(retry) = control_retry {
        retry.abort();
    }
    // The runs clients follow resume with the next owner.
    control::owner::shutdown(control::owner::Shutdown::Abort).await;
    // Running tasks stop with their interruption journaled: a restart runs them again
    // without counting this stop as a crash.
    engine.stop(STOP_WAIT).await;
    // Other workers on a shared store take this one's runs on at once.
    if let Err(e) = engine.release_leases() {
        errln!("warning: could not release the run leases: {e}");
    }
    errln!("stopped");
    Ok(EXIT_OK)
}

/// How long `serve` waits for another `magrathea` command to let the store go.
const STORE_WAIT: Duration = Duration::from_secs(10);

/// Starts the server; while another `magrathea` command holds the directory store (a `runs
/// list` holds it for a moment, a `run` until its run settles), waits up to [`STORE_WAIT`] for
/// it to let go, as the commands themselves do, before the lock's error is reported. `None`:
/// `signal` came first (nothing was opened).
async fn start_waiting_for_the_store(
    config: ServeConfig,
    signal: &mut (impl std::future::Future<Output = ()> + Unpin),
) -> Result<Option<(SocketAddr, magrathea_server::ServerHandle)>, magrathea_server::ServeError> {
    let deadline = tokio::time::Instant::now() + STORE_WAIT;
    let mut said = false;
    loop {
        match start_server(config.clone()).await {
            Err(magrathea_server::ServeError::OpenStore {
                source: magrathea_core::StoreError::Locked(_),
                ..
            }) if tokio::time::Instant::now() < deadline => {
                if !said {
                    errln!(
                        "the store is open in another magrathea process: waiting up to {} s for \
                         it to let go",
                        STORE_WAIT.as_secs()
                    );
                    said = true;
                }
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(100)) => {}
                    () = &mut *signal => return Ok(None),
                }
            }
            started => return started.map(Some),
        }
    }
}

/// How long a stopping process waits for its runs to leave memory.
pub(crate) const STOP_WAIT: Duration = Duration::from_secs(5);

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colours for a person at a terminal; a log file or a collector gets plain text.
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .try_init();
}

/// Waits for SIGTERM, Ctrl-C or SIGHUP (the terminal closed: a server's documents and tokens
/// are followed as they change, so there is nothing for SIGHUP to reload). The handlers are
/// installed before this returns, so a signal sent as soon as the address is printed is not
/// missed.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    let (mut term, mut int, mut hup) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
            signal(SignalKind::hangup()).context("cannot handle SIGHUP")?,
        )
    };
    Ok(async move {
        #[cfg(unix)]
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    })
}
