//! `magrathea serve`: the HTTP server over a document tree.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use magrathea_server::{DEFAULT_ADDR, ServeConfig, serve as start_server};

use super::output::{errln, outln};
use super::{EXIT_OK, Location};

/// Arguments of `magrathea serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Serves the REST, SSE and WebSocket API (GET /openapi.json lists every route). Prints
`listening on http://ADDR` on stdout once bound (with port 0, the port picked). API tokens are
read from <root>/_auth/tokens.yaml:

  tokens:
    - tokenSha256: <hex SHA-256 of the token>   # or `token: <plain>`
      tenant: acme
      subject: alice
      scopes: [workflow.read, workflow.write, workflow.run]

With no token configured every API route answers 401 (health, metrics and event routes
excepted), unless --insecure-no-auth is given. Stops gracefully on SIGTERM or Ctrl-C;
unfinished runs resume on the next start.")]
pub(crate) struct ServeArgs {
    /// The document tree: `<root>/<tenant>/<project>/_vance/…` [default: the current directory].
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    /// The address to listen on; keep it on loopback unless a proxy with TLS is in front.
    #[arg(long, value_name = "ADDR", default_value = DEFAULT_ADDR)]
    addr: SocketAddr,
    /// Accept every request without a token (every scope, every tenant). Trusted machines only.
    #[arg(long)]
    insecure_no_auth: bool,
}

pub(crate) async fn serve(loc: &Location, args: ServeArgs) -> anyhow::Result<u8> {
    init_tracing();
    let root = args.root.unwrap_or_else(|| PathBuf::from("."));
    let root = root
        .canonicalize()
        .with_context(|| format!("the root directory {} does not exist", root.display()))?;
    let mut config = ServeConfig::new(&root)
        .addr(args.addr)
        .insecure_no_auth(args.insecure_no_auth);
    if let Some(store) = &loc.store {
        config = config.store(store);
    }
    if args.insecure_no_auth {
        errln!(
            "WARNING: --insecure-no-auth: every request is accepted without a token, with every \
             scope on every tenant. Do not expose this server."
        );
    }
    let signal = shutdown_signal()?;
    let (addr, handle) = start_server(config).await?;
    outln!("listening on http://{addr}")?;
    handle.run_until(signal).await?;
    errln!("stopped");
    Ok(EXIT_OK)
}

fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Waits for SIGTERM or Ctrl-C. The handlers are installed before this returns, so a signal
/// sent as soon as the address is printed is not missed.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    #[cfg(unix)]
    let (mut term, mut int) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::terminate()).context("cannot handle SIGTERM")?,
            signal(SignalKind::interrupt()).context("cannot handle SIGINT")?,
        )
    };
    Ok(async move {
        #[cfg(unix)]
        futures::future::select(Box::pin(term.recv()), Box::pin(int.recv())).await;
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
        errln!("shutting down: finishing in-flight requests");
    })
}
