//! Serving an engine the application builds: its code workflows and tasks next to the YAML
//! runtime, over the same HTTP API as `magrathea serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use magrathea_core::EngineBuilder;

use super::auth::{self, Auth};
use super::{ConnectionLimits, ServeConfig, ServeError, ServerHandle, start};

/// Whether requests need a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Access {
    /// Every request presents a token of `<root>/_auth/tokens.yaml` (see [`Auth`]).
    #[default]
    Tokens,
    /// Every request passes as subject `anonymous` with every scope. For trusted machines only.
    InsecureNoAuth,
}

/// An HTTP server over an engine the application builds.
///
/// The server installs the YAML runtime of the document tree `root` into the engine builder
/// before building it (an interpreter cannot be added to a built engine), so the builder is
/// what it takes, with the application's code workflows, tasks and
/// [data](EngineBuilder::data) already registered. Then:
///
/// * `POST /brain/{tenant}/project/{project}/workflows/{name}/start` starts the YAML workflow
///   `name` of the project, or, when the project has no such document, the registered code
///   workflow `name` with `params` as its input, in the project's scope. A document of the
///   same name takes precedence. Every tenant's tokens with the `workflow.run` scope can start
///   the code workflows: register only those the server should offer.
/// * YAML `tool_task`s call registered tasks by name; code workflows call any task.
/// * Runs, the inbox, approvals, events and live updates cover both kinds of run.
///
/// The journal lives wherever the builder says (`EngineBuilder::path`); there is no store
/// directory to configure. The directory of the builder's redb file is the server's store:
/// no served step may reach it (as the tree itself), and it is marked as served; unless it
/// holds the tree: then keep the journal elsewhere, or out of the tenants' `shell` settings.
///
/// With the `magrathea` crate, pass `magrathea::EngineBuilder::into_core()` and wrap
/// [`ServerHandle::engine`] with `magrathea::Engine::from_core` for typed handles; the
/// example `code_and_yaml_server` in the `magrathea` crate shows the whole round trip.
#[derive(Debug)]
pub struct Server {
    engine: EngineBuilder,
    config: ServeConfig,
    access: Access,
}

impl Server {
    /// Serves `engine` and the documents and tokens under `root`
    /// (`<root>/<tenant>/<project>/_vance/…`, `<root>/_auth/tokens.yaml`) on
    /// [`DEFAULT_ADDR`](super::DEFAULT_ADDR), tokens required.
    pub fn new(engine: EngineBuilder, root: impl Into<PathBuf>) -> Self {
        Self {
            engine,
            config: ServeConfig::new(root),
            access: Access::Tokens,
        }
    }

    /// The address to bind; port 0 picks a free port (see the address [`Server::serve`]
    /// returns).
    pub fn addr(mut self, addr: SocketAddr) -> Self {
        self.config = self.config.addr(addr);
        self
    }

    /// The connection limits (default [`ConnectionLimits::default`]); see
    /// [`ServeConfig::header_read_timeout`] and the methods next to it.
    pub fn connection_limits(mut self, limits: ConnectionLimits) -> Self {
        self.config = self.config.connection_limits(limits);
        self
    }

    /// How long a request's head may take to arrive (see [`ServeConfig::header_read_timeout`]).
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.config = self.config.header_read_timeout(timeout);
        self
    }

    /// How long a request's body may take to arrive (see [`ServeConfig::body_read_timeout`]).
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.config = self.config.body_read_timeout(timeout);
        self
    }

    /// How long an idle keep-alive connection is kept (see [`ServeConfig::idle_timeout`]).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.config = self.config.idle_timeout(timeout);
        self
    }

    /// How many connections are served at once (see [`ServeConfig::max_connections`]).
    pub fn max_connections(mut self, max: usize) -> Self {
        self.config = self.config.max_connections(max);
        self
    }

    /// How the triggers run (see [`ServeConfig::triggers`]).
    pub fn triggers(mut self, triggers: crate::triggers::TriggerConfig) -> Self {
        self.config = self.config.triggers(triggers);
        self
    }

    /// Whether requests need a token (default [`Access::Tokens`]). Without
    /// ([`Access::InsecureNoAuth`]) the address must be a loopback address, and requests
    /// must name it in `Host` and `Origin` (see [`loopback`](super::loopback)).
    pub fn access(mut self, access: Access) -> Self {
        self.access = access;
        self
    }

    /// Builds the engine (recovering what its builder says), binds and serves in the
    /// background. Returns the bound address and the handle that stops the server and holds
    /// the engine.
    pub async fn serve(self) -> Result<(SocketAddr, ServerHandle), ServeError> {
        let insecure = self.access == Access::InsecureNoAuth;
        let auth = Auth::load(auth::token_file(&self.config.root), insecure)?;
        let mut config = self.config;
        // The store is the builder's: its file's directory, not the tree's default. One that
        // holds the tree (the journal beside the tree's directory) is not: protecting it would
        // refuse every tenant's paths in its own projects. A step cannot reach above the tree
        // through its own places; only a tenant's `shell` settings naming the journal could.
        let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        if let Some(file) = self.engine.file() {
            let file = std::path::absolute(&file).unwrap_or(file);
            if let Some(dir) = file.parent()
                && !real(&config.root).starts_with(real(dir))
            {
                config = config.store(dir);
            }
        }
        start(self.engine, &config, auth, None).await
    }
}
