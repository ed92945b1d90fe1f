//! The engine's builder: where the journal lives, what runs, and the defaults.

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Semaphore, broadcast};

use super::timers::Timers;
use super::{Config, Engine, EngineInner, InterpreterFn, WorkflowRegistration};
use crate::error::{OpenError, StoreError};
use crate::store::{Durability, MemoryStore, RedbStore, Store};
use crate::task::{AppData, TaskRegistration};
use crate::writer::JournalWriter;

/// Builds an [`Engine`].
///
/// Defaults: a redb store at `./.magrathea/journal.redb` with a 64 MiB page cache,
/// [`Durability::Immediate`], recovery
/// of every non-terminal run on build, suspended runs evicted from memory when nothing they
/// wait for is due within 2 s, sub-runs nested at most 32 deep, a run's journal at most
/// 256 MiB, a task attempt's output at most 4 MiB of JSON, freed heap returned to the operating
/// system after a run whose journal reached 8 MiB.
pub struct EngineBuilder {
    path: Option<PathBuf>,
    store: Option<Arc<dyn Store>>,
    durability: Durability,
    redb_cache_bytes: usize,
    workflows: Vec<WorkflowRegistration>,
    tasks: Vec<TaskRegistration>,
    interpreters: Vec<(String, InterpreterFn)>,
    recover: bool,
    evict_after: Duration,
    max_child_depth: u32,
    max_runs_per_tree: u32,
    max_active_runs_per_tenant: Option<u32>,
    max_resident_bytes_per_tenant: Option<u64>,
    max_journal_bytes_per_run: u64,
    journal_bytes_limit: Option<super::JournalBytesLimit>,
    max_task_output_bytes: usize,
    heap_trim_threshold: Option<u64>,
    max_claim_attempts: u32,
    data: AppData,
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("path", &self.path)
            .field("durability", &self.durability)
            .field("workflows", &self.workflows)
            .field("tasks", &self.tasks)
            .field("recover", &self.recover)
            .field("max_child_depth", &self.max_child_depth)
            .field("max_runs_per_tree", &self.max_runs_per_tree)
            .field(
                "max_active_runs_per_tenant",
                &self.max_active_runs_per_tenant,
            )
            .field(
                "max_resident_bytes_per_tenant",
                &self.max_resident_bytes_per_tenant,
            )
            .field("max_journal_bytes_per_run", &self.max_journal_bytes_per_run)
            .field("max_task_output_bytes", &self.max_task_output_bytes)
            .field("heap_trim_threshold", &self.heap_trim_threshold)
            .field("max_claim_attempts", &self.max_claim_attempts)
            .finish_non_exhaustive()
    }
}

impl Default for EngineBuilder {
    fn default() -> Self {
        Self {
            path: None,
            store: None,
            durability: Durability::Immediate,
            redb_cache_bytes: crate::store::DEFAULT_CACHE_BYTES,
            workflows: Vec::new(),
            tasks: Vec::new(),
            interpreters: Vec::new(),
            recover: true,
            evict_after: Duration::from_secs(2),
            max_child_depth: super::DEFAULT_MAX_CHILD_DEPTH,
            max_runs_per_tree: super::DEFAULT_MAX_RUNS_PER_TREE,
            max_active_runs_per_tenant: None,
            max_resident_bytes_per_tenant: None,
            max_journal_bytes_per_run: super::DEFAULT_MAX_JOURNAL_BYTES_PER_RUN,
            journal_bytes_limit: None,
            max_task_output_bytes: super::DEFAULT_MAX_TASK_OUTPUT_BYTES,
            heap_trim_threshold: Some(super::DEFAULT_HEAP_TRIM_THRESHOLD),
            max_claim_attempts: super::DEFAULT_MAX_CLAIM_ATTEMPTS,
            data: AppData::default(),
        }
    }
}

impl EngineBuilder {
    /// The redb file to use (created if missing).
    pub fn path(mut self, path: impl Into<PathBuf>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The redb file the engine will open: the one [`EngineBuilder::path`] named, or the
    /// default; `None` when it is given a store instead ([`EngineBuilder::store`],
    /// [`EngineBuilder::in_memory`]).
    pub fn file(&self) -> Option<PathBuf> {
        match &self.store {
            Some(_) => None,
            None => Some(
                self.path
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_FILE)),
            ),
        }
    }

    /// Uses this store instead of a redb file.
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Uses a fresh in-memory store (nothing survives the process).
    pub fn in_memory(self) -> Self {
        self.store(Arc::new(MemoryStore::new()))
    }

    /// Commit durability of the redb store.
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// The most memory redb's page cache of the redb store takes (default
    /// [`DEFAULT_CACHE_BYTES`](crate::store::DEFAULT_CACHE_BYTES), 64 MiB); see
    /// [`RedbStore::open_with_cache`].
    pub fn redb_cache_bytes(mut self, bytes: usize) -> Self {
        self.redb_cache_bytes = bytes;
        self
    }

    /// Registers a code workflow.
    ///
    /// Several versions of one workflow may be registered (each name and version once): runs
    /// replay on the version they started with, and new starts that name no version take the
    /// one registered last. So a process can run old runs to their end on the old code while
    /// it starts new runs on the new (see `docs/changing-code.md`).
    pub fn workflow(mut self, registration: WorkflowRegistration) -> Self {
        self.workflows.push(registration);
        self
    }

    /// Registers a task.
    pub fn task(mut self, registration: TaskRegistration) -> Self {
        self.tasks.push(registration);
        self
    }

    /// Hands `value` to every task attempt, readable with [`TaskContext::data`] by its type
    /// (one value per type; a later one replaces an earlier). For an application's own
    /// resources — a database pool, an HTTP client — without statics.
    ///
    /// [`TaskContext::data`]: crate::TaskContext::data
    pub fn data<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.data.insert(value);
        self
    }

    /// Registers the interpreter of a front end (e.g. `yaml`).
    pub fn interpreter(mut self, frontend: impl Into<String>, f: InterpreterFn) -> Self {
        self.interpreters.push((frontend.into(), f));
        self
    }

    /// Whether building the engine recovers every non-terminal run (default `true`).
    pub fn recover(mut self, recover: bool) -> Self {
        self.recover = recover;
        self
    }

    /// A suspended run is evicted from memory when nothing it waits for is due sooner than
    /// this (default 2 s).
    pub fn evict_after(mut self, d: Duration) -> Self {
        self.evict_after = d;
        self
    }

    /// The deepest sub-runs may be nested (default 32): a root run is at depth 0, the children
    /// it starts at 1, theirs at 2, and so on. A step that would start a child deeper than this
    /// does not start it: the step ends `FAILED` with `[MAG-CH002]` and the chain of runs, so
    /// that a workflow that starts itself stops instead of recursing without end. A child
    /// request can carry its own limit ([`ChildRequest::max_depth`]; the YAML front end sets it
    /// from `subRuns.maxDepth` in a project's `_vance/settings.yaml`).
    ///
    /// [`ChildRequest::max_depth`]: crate::ChildRequest::max_depth
    pub fn max_child_depth(mut self, depth: u32) -> Self {
        self.max_child_depth = depth;
        self
    }

    /// The most sub-runs one tree of runs may hold: the descendants of its root started while
    /// the root is active, ended ones included, the root not counted (default
    /// [`DEFAULT_MAX_RUNS_PER_TREE`](super::DEFAULT_MAX_RUNS_PER_TREE), 10,000). A parent
    /// whose tree holds that many does not start another child: the child's step fails with
    /// `[MAG-CH003]`. It bounds what one start can grow into when a workflow starts itself
    /// more than once per level, which the depth limit alone does not (four children a level,
    /// 32 levels deep, is 4^32 runs). On a store several workers share, each worker counts
    /// the runs it started or recovered; after a restart, a tree's count begins with its runs
    /// still active.
    pub fn max_runs_per_tree(mut self, runs: u32) -> Self {
        self.max_runs_per_tree = runs;
        self
    }

    /// The most runs one tenant may have active in this engine at once, top-level runs and
    /// sub-runs alike (default: no bound). A run's tenant is its scope's first part (`acme`
    /// of `acme/shop`); runs of no scope are not counted. A start beyond the bound is refused
    /// with [`StartError::TenantFull`](crate::StartError::TenantFull) (`[MAG-EN008]`), and a
    /// sub-run beyond it is not started: its step fails with that error. A run counts from
    /// its start until it ends, also while it waits out of memory (on a gate, a long timer);
    /// runs recovered after a restart count whatever their number. On a store several
    /// workers share, each worker counts the runs it holds.
    pub fn max_active_runs_per_tenant(mut self, runs: Option<u32>) -> Self {
        self.max_active_runs_per_tenant = runs;
        self
    }

    /// The most journal bytes one tenant's runs may hold in memory at once (default: no
    /// bound), counted as encoded records of each run in memory: a run asleep on a timer or a
    /// gate (out of memory) counts nothing until it wakes. A start (or a sub-run) that would
    /// take the tenant past it is refused with
    /// [`StartError::TenantMemoryFull`](crate::StartError::TenantMemoryFull) (`[MAG-EN008]`);
    /// runs in memory go on (each bounded by
    /// [`max_journal_bytes_per_run`](Self::max_journal_bytes_per_run)), and recovered runs
    /// count whatever they hold. With 1 MiB parameters, ten thousand runs whose steps run or
    /// wait for their lane would otherwise hold gigabytes.
    pub fn max_resident_bytes_per_tenant(mut self, bytes: Option<u64>) -> Self {
        self.max_resident_bytes_per_tenant = bytes;
        self
    }

    /// The most bytes one run's journal may hold (default
    /// [`DEFAULT_MAX_JOURNAL_BYTES_PER_RUN`](super::DEFAULT_MAX_JOURNAL_BYTES_PER_RUN),
    /// 256 MiB), counted as encoded records. A run whose journal grows past it ends `FAILED`
    /// with `[MAG-BD001] bounds exhausted: …` in the commit that crossed it, its running tasks
    /// stopped and its children cancelled, as a run whose code failed; the engine goes on with
    /// every other run. The decision is journaled (the `StatusRecord`), so replay sees it; a
    /// run recovered before that commit recounts its journal and decides again.
    pub fn max_journal_bytes_per_run(mut self, bytes: u64) -> Self {
        self.max_journal_bytes_per_run = bytes;
        self
    }

    /// A lower journal limit for the runs of some scopes (e.g. from a tenant's settings):
    /// `limit` is asked once each time a run is loaded (started or recovered) with the run's
    /// scope, and the lower of its answer and
    /// [`max_journal_bytes_per_run`](Self::max_journal_bytes_per_run) applies.
    pub fn journal_bytes_limit(
        mut self,
        limit: impl Fn(&crate::RunScope) -> Option<u64> + Send + Sync + 'static,
    ) -> Self {
        self.journal_bytes_limit = Some(Arc::new(limit));
        self
    }

    /// The most bytes of JSON one task attempt's output may take (default
    /// [`DEFAULT_MAX_TASK_OUTPUT_BYTES`](super::DEFAULT_MAX_TASK_OUTPUT_BYTES), 4 MiB). An
    /// attempt whose output is larger fails with kind `technical_error`, not retried, and
    /// `[MAG-BD002]` naming the limit and the size; the output is not journaled. So does an
    /// output holding more objects and arrays than one per 64 bytes of the limit (a small
    /// object costs far more memory as a value than as text). Executors
    /// that read outputs from outside (HTTP bodies, processes) should stop reading at this
    /// size: tasks find it as [`TaskOutputLimit`](crate::TaskOutputLimit) in their
    /// [`TaskContext::data`](crate::TaskContext::data).
    pub fn max_task_output_bytes(mut self, bytes: usize) -> Self {
        self.max_task_output_bytes = bytes;
        self
    }

    /// When a run's memory is returned to the operating system: after the driver of a run whose
    /// journal holds at least this many bytes leaves memory (default
    /// [`DEFAULT_HEAP_TRIM_THRESHOLD`](super::DEFAULT_HEAP_TRIM_THRESHOLD), 8 MiB), the engine
    /// asks the allocator to release its free pages (glibc's `malloc_trim`), on a blocking
    /// thread and at most once every 5 s; without it, glibc keeps a large run's peak memory
    /// in the process for good. `None` never asks. Does nothing on targets without glibc, nor
    /// for memory of another global allocator (mimalloc, the `magrathea` binary's, returns
    /// freed pages itself).
    pub fn heap_trim_threshold(mut self, journal_bytes: Option<u64>) -> Self {
        self.heap_trim_threshold = journal_bytes;
        self
    }

    /// How often a task attempt is run again after the process running it stopped before its
    /// result (a crash, a kill), on a store of this process's own (default
    /// [`DEFAULT_MAX_CLAIM_ATTEMPTS`](super::DEFAULT_MAX_CLAIM_ATTEMPTS), 3): each re-execution
    /// is journaled as a `TaskRestartedRecord`, and when the attempt would run more than this
    /// many times again it ends instead, terminally, as a `technical_error` with
    /// `[MAG-EN007]`, which `catch:` (or the code) handles like any other. A task that crashes
    /// its process every time so stops going round. A shared store (PostgreSQL) applies its
    /// own limit to the reclaims of a run (`[MAG-LS001]`) instead.
    pub fn max_claim_attempts(mut self, times: u32) -> Self {
        self.max_claim_attempts = times;
        self
    }

    /// Opens the store, starts the journal writer and timer service and, unless disabled,
    /// recovers every non-terminal run. Must be called within a tokio runtime.
    ///
    /// An engine of this process whose handles were all dropped and that still holds the store
    /// file is closed first (see [`Engine`]); the build waits up to 30 s for it to let go.
    pub async fn build(self) -> Result<Engine, OpenError> {
        let (store, file): (Arc<dyn Store>, _) = match self.store {
            Some(s) => (s, None),
            None => {
                let path = self.path.unwrap_or_else(|| PathBuf::from(DEFAULT_FILE));
                let store =
                    open_closing_an_orphan(&path, self.durability, self.redb_cache_bytes).await?;
                (Arc::new(store), Some(path))
            }
        };
        let mut workflows = super::Registry::default();
        let mut workflow_versions = super::Registry::default();
        for w in self.workflows {
            let versions: &mut super::Registry<WorkflowRegistration> =
                workflow_versions.entry(w.name.clone()).or_default();
            if versions.insert(w.version.clone(), w.clone()).is_some() {
                let what = match w.version.as_str() {
                    "" => w.name,
                    v => format!("{} (version {v})", w.name),
                };
                return Err(OpenError::DuplicateRegistration(what));
            }
            // The version registered last takes new starts.
            workflows.insert(w.name.clone(), w);
        }
        let mut tasks = super::Registry::default();
        for t in self.tasks {
            if tasks.insert(t.name.clone(), t.clone()).is_some() {
                return Err(OpenError::DuplicateRegistration(t.name));
            }
        }
        let writer = JournalWriter::start(store.clone());
        let mut data = self.data;
        data.insert(crate::TaskOutputLimit(self.max_task_output_bytes));
        let inner = Arc::new_cyclic(|weak| EngineInner {
            store: store.clone(),
            writer,
            workflows,
            workflow_versions,
            task_names: Arc::new(tasks.keys().cloned().collect()),
            tasks,
            interpreters: self.interpreters.into_iter().collect(),
            active: Mutex::new(HashMap::new()),
            timers: Timers::start(weak.clone()),
            trees: Default::default(),
            tenant_runs: Default::default(),
            status_tx: broadcast::channel(4096).0,
            status_waiters: Default::default(),
            journal_tx: broadcast::channel(4096).0,
            milestones_tx: broadcast::channel(4096).0,
            replay_permits: Semaphore::new(64),
            data,
            start_locks: Arc::default(),
            config: Config {
                evict_after: self.evict_after,
                max_child_depth: self.max_child_depth,
                max_runs_per_tree: self.max_runs_per_tree,
                max_active_runs_per_tenant: self.max_active_runs_per_tenant,
                max_resident_bytes_per_tenant: self.max_resident_bytes_per_tenant,
                max_journal_bytes_per_run: self.max_journal_bytes_per_run,
                journal_bytes_limit: self.journal_bytes_limit,
                max_task_output_bytes: self.max_task_output_bytes,
                heap_trim_threshold: self.heap_trim_threshold,
                max_claim_attempts: self.max_claim_attempts,
            },
            heap: Arc::default(),
            failed_runs: Default::default(),
            closing: Default::default(),
            file,
            recovered_at_build: Default::default(),
            replaying: Default::default(),
        });
        let mut recovered = Vec::new();
        if self.recover {
            match store.leases() {
                // On a shared store, only the runs no other worker holds, claimed by one
                // statement: a start costs neither a claim per run of the whole store nor a
                // round trip per run it takes.
                Some(leases) => {
                    for (run, reclaims) in leases.claim_claimable()? {
                        inner.recover_claimed(run, reclaims);
                        recovered.push(run);
                    }
                }
                None => {
                    for run in store.active_runs()? {
                        inner.recover(run);
                        recovered.push(run);
                    }
                }
            }
        }
        let _ = inner.recovered_at_build.set(recovered);
        super::workers::start(&inner, self.recover);
        Ok(Engine::first_handle(inner))
    }
}

/// The redb file of a builder given no path and no store.
const DEFAULT_FILE: &str = ".magrathea/journal.redb";

/// How long a build waits for a closing engine of this process to let go of the store file.
const CLOSING_WAIT: Duration = Duration::from_secs(30);

/// Opens the store file at `path`. An engine of this process without handles that still holds
/// the file is closed, a stopped one ([`Engine::stop`](super::Engine::stop)) lets go of it once
/// its runs have left memory, and the open waits for either, up to [`CLOSING_WAIT`].
async fn open_closing_an_orphan(
    path: &std::path::Path,
    durability: Durability,
    cache_bytes: usize,
) -> Result<RedbStore, StoreError> {
    let give_up = tokio::time::Instant::now() + CLOSING_WAIT;
    loop {
        match RedbStore::open_with_cache(path, durability, cache_bytes) {
            Err(StoreError::Locked(_))
                if tokio::time::Instant::now() < give_up
                    && (super::closing::close_orphan(path)
                        || super::closing::release_stopped(path)
                        || crate::store::closing_here(path)) =>
            {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            opened => return opened,
        }
    }
}
