//! The project a command works on, and opening its store as an [`Engine`].

use std::path::PathBuf;

use anyhow::{Context, anyhow};
use magrathea_core::{Engine, OpenError, RunId, StoreError};
use magrathea_server::StoreLocation;
use magrathea_server::http::runs::RunDto;

use super::Location;
use super::backend::Backend;
use super::control::{self, client::OwnerClient};
use super::output::errln;
use super::runtime::{DocumentSource, Scope, YamlRuntime, scope_string};

/// The project directory, its scope and its store.
#[derive(Debug)]
pub(crate) struct Project {
    /// The directory as the user gave it (`.` by default), for paths shown to the user.
    pub(crate) dir: PathBuf,
    /// Its tenant and project names.
    pub(crate) scope: Scope,
    docs: DocumentSource,
    store: StoreLocation,
    /// How long this process's leases of runs last without a heartbeat (a PostgreSQL store).
    lease_grace: std::time::Duration,
    /// The store of the tree the project lies in, as `magrathea serve --root` keeps it
    /// (`<root>/.magrathea/`, the root two levels up), when `--store` was not given.
    tree_store: Option<PathBuf>,
}

impl Project {
    /// Resolves `--project` (default: the current directory) and `--store` (a directory,
    /// default `<project>/.magrathea/`, or a PostgreSQL URL).
    pub(crate) fn locate(loc: &Location) -> anyhow::Result<Self> {
        let dir = loc.project.clone().unwrap_or_else(|| PathBuf::from("."));
        let canonical = dir.canonicalize().with_context(|| {
            format!(
                "the project directory {} does not exist; pass --project DIR",
                dir.display()
            )
        })?;
        if !canonical.is_dir() {
            anyhow::bail!("{} is not a directory; pass --project DIR", dir.display());
        }
        let store = StoreLocation::from_arg(
            &loc.store
                .clone()
                .unwrap_or_else(|| canonical.join(".magrathea")),
        );
        let tree_store = loc
            .store
            .is_none()
            .then(|| canonical.ancestors().nth(2).map(|r| r.join(".magrathea")))
            .flatten();
        let (mut docs, scope) = DocumentSource::for_project_dir(&canonical);
        if store.is_served() {
            // A served store's runs keep the served tree's rules when this command drives
            // them, and its control key stays out of their steps' reach, as the server keeps
            // it.
            docs = docs.served();
            if let StoreLocation::Redb(dir) = &store {
                let real =
                    |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
                if !real(dir).starts_with(real(docs.root())) {
                    docs = docs.protect(dir.clone());
                }
            }
        }
        Ok(Self {
            dir,
            scope,
            docs,
            store,
            lease_grace: std::time::Duration::from_secs_f64(loc.lease_grace),
            tree_store,
        })
    }

    /// The document source of the project (and its tenant).
    pub(crate) fn docs(&self) -> &DocumentSource {
        &self.docs
    }

    /// A YAML runtime reading this project's documents.
    pub(crate) fn runtime(&self) -> YamlRuntime {
        YamlRuntime::new(self.docs.clone())
    }

    /// `tenant/project`.
    pub(crate) fn scope_string(&self) -> String {
        scope_string(&self.scope)
    }

    /// Whether the store may hold runs (see [`StoreLocation::may_exist`]); an error when that
    /// cannot be told.
    pub(crate) fn store_may_exist(&self) -> anyhow::Result<bool> {
        self.store.may_exist().map_err(|e| anyhow!("{e}"))
    }

    /// The store, as messages name it (the redb file, or the URL without its password).
    pub(crate) fn store_name(&self) -> String {
        self.store.describe()
    }

    /// Opens (creating if needed) the store. With `recover`, every unfinished run is
    /// recovered and driven; without, only runs the command touches are.
    pub(crate) async fn engine(
        &self,
        runtime: &YamlRuntime,
        recover: bool,
    ) -> anyhow::Result<Engine> {
        if let StoreLocation::Redb(dir) = &self.store {
            if dir.is_file() {
                anyhow::bail!(
                    "[MAG-SV001] the store {} is a file: pass the store's directory (the one \
                     holding journal.redb), not a file",
                    dir.display()
                );
            }
            // The runs' parameters, variables and outputs: for the store's owner alone.
            std::os::unix::fs::DirBuilderExt::mode(
                std::fs::DirBuilder::new().recursive(true),
                0o700,
            )
            .create(dir)
            .with_context(|| {
                format!(
                    "[MAG-SV001] could not create the store directory {}",
                    dir.display()
                )
            })?;
        }
        let builder = self
            .store
            .install_with(
                Engine::builder().recover(recover),
                &magrathea_postgres::PgOptions {
                    lease_grace: self.lease_grace,
                    ..Default::default()
                },
            )
            .map_err(|e| open_error(OpenError::Store(e), &self.store_name()))?;
        let engine = runtime
            .install(builder)
            .build()
            .await
            .map_err(|e| open_error(e, &self.store_name()))?;
        // Tools that start runs or read the inbox (workflow_start, inbox_read) use the engine.
        runtime.attach(&engine);
        if let StoreLocation::Redb(dir) = &self.store {
            // Without the socket this process still works; only its would-be clients fail.
            if let Err(e) = control::owner::serve(&engine, dir, None, recover) {
                errln!("warning: {}", super::output::chain(&e));
            }
        }
        opened()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(engine.clone());
        Ok(engine)
    }

    /// The store to read and drive runs through: opened by this process (creating it if
    /// needed), or, while another process owns it, that owner over its control socket. An
    /// owner is told by the store's lock; it may still be binding its socket, or just closing
    /// the store, so both are tried again for a while before the lock's error is reported.
    pub(crate) async fn backend(&self, runtime: &YamlRuntime) -> anyhow::Result<Backend> {
        let StoreLocation::Redb(dir) = &self.store else {
            return self.engine(runtime, false).await.map(Backend::Local);
        };
        let deadline = tokio::time::Instant::now() + OWNER_WAIT;
        loop {
            let locked = match self.engine(runtime, false).await {
                Ok(engine) => return Ok(Backend::Local(engine)),
                Err(e) if e.downcast_ref::<Locked>().is_some() => e,
                Err(e) => return Err(e),
            };
            if let Ok(owner) = OwnerClient::connect(dir).await {
                return Ok(Backend::Remote(owner));
            }
            if tokio::time::Instant::now() >= deadline {
                if !control::socket_path(dir).exists() {
                    return Err(locked.context(format!(
                        "the store is open in a process that takes no commands (no {} in {}): \
                         a Rust application's engine holds its store file while it runs; stop \
                         it to use this command, or read the run from the application \
                         (Engine::journal, magrathea::core::export)",
                        control::SOCKET_NAME,
                        dir.display()
                    )));
                }
                return Err(locked.context(format!(
                    "no owner answered on the store's control socket within {} s",
                    OWNER_WAIT.as_secs()
                )));
            }
            tokio::time::sleep(OWNER_RETRY).await;
        }
    }

    /// The store for reading, or `None` when it does not exist yet (no run was ever started
    /// here), so that reading commands create nothing.
    pub(crate) async fn existing_backend(&self) -> anyhow::Result<Option<Backend>> {
        self.existing_backend_with(&self.runtime()).await
    }

    /// [`Self::existing_backend`] driving runs with `runtime`: for commands that act on a
    /// run or an item that must exist already (cancel, answer, rerun, retry), so that a
    /// mistyped project creates no store.
    pub(crate) async fn existing_backend_with(
        &self,
        runtime: &YamlRuntime,
    ) -> anyhow::Result<Option<Backend>> {
        if !self.store_may_exist()? {
            self.point_to_tree_store();
            return Ok(None);
        }
        self.backend(runtime).await.map(Some)
    }

    /// An empty listing of a directory that is no project (it has no `_vance/`), such as the
    /// root of a served tree: says so, and names the projects below it (`<tenant>/<project>`,
    /// a few), rather than leaving "no runs" to read as the store's answer.
    pub(crate) fn note_if_no_project(&self) {
        if self.dir.join("_vance").is_dir() {
            return;
        }
        let mut below: Vec<String> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|t| t.path().is_dir())
            .flat_map(|t| {
                std::fs::read_dir(t.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .filter(|p| p.path().join("_vance").is_dir())
                    .map(move |p| {
                        format!(
                            "{}/{}",
                            t.file_name().to_string_lossy(),
                            p.file_name().to_string_lossy()
                        )
                    })
            })
            .take(100)
            .collect();
        below.sort();
        let listed = if below.is_empty() {
            String::new()
        } else {
            let more = if below.len() > 5 { ", …" } else { "" };
            below.truncate(5);
            format!(" (below it: {}{more})", below.join(", "))
        };
        errln!(
            "note: {} is no project (it has no _vance/): commands read one project's runs; \
             pass --project DIR{listed}",
            self.dir.display()
        );
    }

    /// Without a store of its own, a project of a served tree would read as one without
    /// runs while the server keeps them in the tree's store: says where they are.
    fn point_to_tree_store(&self) {
        let Some(tree) = &self.tree_store else { return };
        if StoreLocation::Redb(tree.clone()).may_exist() == Ok(true) {
            errln!(
                "note: this project has no store of its own; the runs of the tree it lies in \
                 (as `magrathea serve --root` keeps them) are in {}: pass --store {}",
                tree.display(),
                tree.display()
            );
        }
    }

    /// Whether a run of `scope` is this project's to show and drive: a run of its scope, or a
    /// run with no scope at all, which a Rust application's engine starts (it belongs to no
    /// project, and whoever opens the store may read it).
    pub(crate) fn owns(&self, scope: &str) -> bool {
        scope.is_empty() || scope == self.scope_string()
    }

    /// The run, if it exists in this store and belongs to this project (see [`Self::owns`]).
    pub(crate) async fn run(&self, backend: Option<&Backend>, id: &str) -> anyhow::Result<RunDto> {
        let run = parse_run_id(id)?;
        let Some(backend) = backend else {
            return Err(self.not_found(run));
        };
        match backend.run(run).await? {
            Some(dto) if self.owns(dto.run.scope.as_str()) => Ok(dto),
            _ => Err(self.not_found(run)),
        }
    }

    /// The error for a run that is not in this project.
    pub(crate) fn not_found(&self, run: RunId) -> anyhow::Error {
        anyhow!(
            "[MAG-RN001] run {run} not found in project {} (store {}); `magrathea runs list` shows its runs",
            self.scope_string(),
            self.store_name()
        )
    }
}

/// The engines this command opened.
fn opened() -> &'static std::sync::Mutex<Vec<Engine>> {
    static OPENED: std::sync::OnceLock<std::sync::Mutex<Vec<Engine>>> = std::sync::OnceLock::new();
    OPENED.get_or_init(Default::default)
}

/// Before the command exits: stops the engines it opened (a task still running, after a
/// Ctrl-C, is journaled as interrupted, so that the next `resume` runs it again without
/// counting the stop as a crash) and, on a store several workers share, gives up the leases
/// of the runs this command drove, so that `magrathea serve` workers (or the next command)
/// take them on at once.
pub(crate) async fn release_leases() {
    let engines = std::mem::take(
        &mut *opened()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    for engine in engines {
        engine.stop(super::serve::STOP_WAIT).await;
        if let Err(e) = engine.release_leases() {
            tracing::warn!(error = %e, "could not release the run leases");
        }
    }
}

/// Parses a 32-hex run id.
pub(crate) fn parse_run_id(id: &str) -> anyhow::Result<RunId> {
    id.trim().parse::<RunId>().map_err(|e| anyhow!("{e}"))
}

/// How long a command looks for the owner of a locked store.
const OWNER_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How often it looks.
const OWNER_RETRY: std::time::Duration = std::time::Duration::from_millis(50);

/// The store is open in another process (its message is the error's).
#[derive(Debug)]
struct Locked(String);

/// Whether `e` says the store is open in another process.
pub(crate) fn is_locked(e: &anyhow::Error) -> bool {
    e.downcast_ref::<Locked>().is_some()
}

impl std::fmt::Display for Locked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Locked {}

fn open_error(e: OpenError, store: &str) -> anyhow::Error {
    match e {
        OpenError::Store(StoreError::Locked(_)) => anyhow::Error::new(Locked(format!(
            "{e}\nhint: another magrathea process (a `magrathea run`, `resume`, `inbox answer` or \
             `serve`) has this store open; wait for it to finish or stop it, or pass --store \
             to use another store"
        ))),
        e => anyhow!("could not open the store {store}: {e}"),
    }
}
