//! The typed engine and its builder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use magrathea_core as core;
use magrathea_core::{
    AnswerAck, CancelAck, ControlAck, DeliverError, Durability, Entry, GateAnswer, InboxFilter,
    InboxItem, InboxPage, InboxPageError, InboxPageRequest, InterpreterFn, OpenError, RunError,
    RunFilter, RunId, RunStatus, RunSummary, RunUpdate, RunView, StartError, StartRequest, Store,
    StoreError, TaskRegistration, WorkflowRegistration,
};
use serde_json::Value;
use tokio::sync::broadcast;

use crate::handle::{HandleError, RunHandle};
use crate::registration;
use crate::traits::{Task, Workflow};

/// Whether building the engine picks up the runs a previous process left unfinished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Recovery {
    /// Every non-terminal run is replayed and driven on as soon as the engine is built.
    #[default]
    OnBuild,
    /// Nothing is recovered until [`Engine::resume`] names a run (for tools that inspect a
    /// journal without driving it).
    Manual,
}

/// Builds an [`Engine`]: where the journal lives, which workflows and tasks it exposes by
/// name, and what tasks get from the application.
///
/// Defaults: a redb file at `./.magrathea/journal.redb`, [`Durability::Immediate`],
/// [`Recovery::OnBuild`], suspended runs evicted after 2 s.
///
/// ```
/// use magrathea::prelude::*;
///
/// /// What the application hands its tasks: here a greeting; in life a database pool.
/// struct Greeter {
///     greeting: &'static str,
/// }
///
/// #[task]
/// async fn greet(ctx: TaskContext, name: String) -> Result<String, TaskError> {
///     let greeter = ctx
///         .data::<Greeter>()
///         .ok_or_else(|| TaskError::terminal("no Greeter: add one with EngineBuilder::data"))?;
///     Ok(format!("{}, {name}", greeter.greeting))
/// }
///
/// #[workflow]
/// async fn hello(ctx: Context, name: String) -> Result<String, WorkflowError> {
///     Ok(ctx.task(greet, name).await?)
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let engine = Engine::builder()
///     .in_memory()
///     .data(Greeter { greeting: "so long" })
///     .workflow(hello)
///     .build()
///     .await?;
/// let run = engine.start(hello, "and thanks for all the fish".into()).await?;
/// assert_eq!(run.result().await?, "so long, and thanks for all the fish");
/// # Ok(()) }
/// ```
#[derive(Debug, Default)]
pub struct EngineBuilder {
    inner: core::EngineBuilder,
    /// Executors to attach to the engine once it is built.
    #[cfg(feature = "exec-base")]
    executors: Vec<magrathea_exec::Executors>,
}

impl EngineBuilder {
    /// The redb journal file (created if missing).
    pub fn path(self, path: impl Into<PathBuf>) -> Self {
        self.map(|b| b.path(path))
    }

    /// Uses a store of your own.
    pub fn store(self, store: Arc<dyn Store>) -> Self {
        self.map(|b| b.store(store))
    }

    /// The journal on the PostgreSQL database at `url` (`postgres://user@host:port/database`),
    /// which several worker processes may share; its schema is created or migrated now.
    /// Fails when the database cannot be reached or was migrated by a newer version.
    #[cfg(feature = "postgres")]
    pub fn postgres(self, url: &str) -> Result<Self, StoreError> {
        let store = magrathea_postgres::PgStore::connect(url)?;
        Ok(self.store(Arc::new(store)))
    }

    /// An in-memory store: nothing survives the process. For tests and examples.
    pub fn in_memory(self) -> Self {
        self.map(core::EngineBuilder::in_memory)
    }

    /// Commit durability of the redb file.
    pub fn durability(self, durability: Durability) -> Self {
        self.map(|b| b.durability(durability))
    }

    /// The most memory the redb file's page cache takes (default 64 MiB).
    pub fn redb_cache_bytes(self, bytes: usize) -> Self {
        self.map(|b| b.redb_cache_bytes(bytes))
    }

    /// Whether building recovers every unfinished run (default [`Recovery::OnBuild`]).
    pub fn recovery(self, recovery: Recovery) -> Self {
        self.map(|b| b.recover(recovery == Recovery::OnBuild))
    }

    /// Evicts suspended runs whose next wake-up is further away than this (default 2 s).
    pub fn evict_after(self, d: Duration) -> Self {
        self.map(|b| b.evict_after(d))
    }

    /// The deepest child workflows may be nested (default 32; a root run is at depth 0): a
    /// child that would run deeper is not started, and its step fails with `[MAG-CH002]` and
    /// the chain of runs, so that a workflow that starts itself stops instead of recursing
    /// without end.
    pub fn max_child_depth(self, depth: u32) -> Self {
        self.map(|b| b.max_child_depth(depth))
    }

    /// The most sub-runs one tree of runs may hold: every child started under a root run
    /// while the root is active, the root not counted (default 10,000): a child beyond it is not started, and its step
    /// fails with `[MAG-CH003]`, so that a workflow that starts itself several times per level
    /// cannot multiply into millions of runs within the depth limit (see
    /// [`core::EngineBuilder::max_runs_per_tree`]).
    pub fn max_runs_per_tree(self, runs: u32) -> Self {
        self.map(|b| b.max_runs_per_tree(runs))
    }

    /// The most runs one tenant (a run scope's first part) may have in progress at once,
    /// waiting ones and sub-runs included (default: no bound): a start beyond it is refused
    /// with `[MAG-EN008]` (see [`core::EngineBuilder::max_active_runs_per_tenant`]).
    pub fn max_active_runs_per_tenant(self, runs: u32) -> Self {
        self.map(|b| b.max_active_runs_per_tenant(Some(runs)))
    }

    /// The most journal bytes one tenant's runs in memory may hold at once (default: no
    /// bound): a start that would take the tenant past it is refused with `[MAG-EN008]` (see
    /// [`core::EngineBuilder::max_resident_bytes_per_tenant`]).
    pub fn max_resident_bytes_per_tenant(self, bytes: u64) -> Self {
        self.map(|b| b.max_resident_bytes_per_tenant(Some(bytes)))
    }

    /// The most bytes one run's journal may hold (default 256 MiB): a run whose journal grows
    /// past it ends `FAILED` with `[MAG-BD001] bounds exhausted: …` (see
    /// [`core::EngineBuilder::max_journal_bytes_per_run`]).
    pub fn max_journal_bytes_per_run(self, bytes: u64) -> Self {
        self.map(|b| b.max_journal_bytes_per_run(bytes))
    }

    /// The most bytes of JSON one task attempt's output may take (default 4 MiB): a larger
    /// output fails the attempt with `technical_error` and `[MAG-BD002]`, not retried (see
    /// [`core::EngineBuilder::max_task_output_bytes`]).
    pub fn max_task_output_bytes(self, bytes: usize) -> Self {
        self.map(|b| b.max_task_output_bytes(bytes))
    }

    /// How often a task attempt runs again after the process running it stopped before its
    /// result (default 3, the reference's `maxClaimAttempts`): after that it fails,
    /// terminally, as a `technical_error` with `[MAG-EN007]` (see
    /// [`core::EngineBuilder::max_claim_attempts`]).
    pub fn max_claim_attempts(self, times: u32) -> Self {
        self.map(|b| b.max_claim_attempts(times))
    }

    /// Hands `value` to every task attempt, read with
    /// [`TaskContext::data`](crate::TaskContext::data) by its type: a database pool, an HTTP
    /// client, configuration. One value per type; a later one replaces an earlier. Share a
    /// value that is not cheap to clone by wrapping it in an `Arc`.
    pub fn data<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.map(|b| b.data(value))
    }

    /// Registers a `#[workflow]` so that runs of it can be started and recovered.
    pub fn workflow<W: Workflow>(self, _workflow: W) -> Self {
        self.map(|b| b.workflow(registration::workflow::<W>()))
    }

    /// Exposes a `#[task]` by its name: YAML workflows can call it as a `tool_task`, and tools
    /// list it. Code workflows do not need this: [`Context::task`](crate::Context::task)
    /// carries the task's body.
    pub fn task<T: Task>(self, _task: T) -> Self {
        self.map(|b| b.task(registration::task::<T>()))
    }

    /// Registers an untyped task.
    pub fn task_registration(self, registration: TaskRegistration) -> Self {
        self.map(|b| b.task(registration))
    }

    /// Registers an untyped workflow.
    pub fn workflow_registration(self, registration: WorkflowRegistration) -> Self {
        self.map(|b| b.workflow(registration))
    }

    /// Applies `f` to the untyped builder, e.g. to install a front end:
    /// `.with_core(|b| yaml_runtime.install(b))`.
    pub fn with_core(self, f: impl FnOnce(core::EngineBuilder) -> core::EngineBuilder) -> Self {
        self.map(f)
    }

    /// Gives [`Context::exec`](crate::Context::exec) calls these executors (they go into the
    /// engine's data), and gives the executors the engine once it is built (for the tools
    /// that reach it).
    #[cfg(feature = "exec-base")]
    pub fn executors(mut self, executors: &magrathea_exec::Executors) -> Self {
        self.executors.push(executors.clone());
        self.map(|b| executors.install(b))
    }

    /// Registers a front end's interpreter.
    pub fn interpreter(self, frontend: impl Into<String>, f: InterpreterFn) -> Self {
        self.map(|b| b.interpreter(frontend, f))
    }

    /// The untyped builder, for what builds the engine itself (e.g. the server's
    /// `Server::new`); wrap the engine it builds with [`Engine::from_core`].
    pub fn into_core(self) -> core::EngineBuilder {
        self.inner
    }

    /// Opens the journal and starts the engine. Must run inside a tokio runtime.
    pub async fn build(self) -> Result<Engine, OpenError> {
        let engine = self.inner.build().await?;
        #[cfg(feature = "exec-base")]
        for executors in &self.executors {
            executors.attach(&engine);
        }
        Ok(Engine::from_core(engine))
    }

    fn map(mut self, f: impl FnOnce(core::EngineBuilder) -> core::EngineBuilder) -> Self {
        self.inner = f(std::mem::take(&mut self.inner));
        self
    }
}

/// Options of a start.
#[derive(Debug, Clone, Default)]
pub struct StartOptions {
    /// Starting twice with the same key returns the first run.
    pub idempotency_key: Option<String>,
    /// Who starts the run.
    pub started_by: Option<String>,
}

/// The engine, typed: start `#[workflow]`s and get [`RunHandle`]s, answer gates, signal and
/// cancel runs, read journals and the inbox. Cheap to clone; clones share everything.
///
/// What is not here (writer statistics, the store, journal subscriptions) is on the core
/// engine, reached with [`Engine::core`].
#[derive(Debug, Clone)]
pub struct Engine {
    inner: core::Engine,
}

impl Engine {
    /// A builder.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Wraps an engine built from [`EngineBuilder::into_core`] (or by a front end).
    pub fn from_core(engine: core::Engine) -> Self {
        Self { inner: engine }
    }

    /// The untyped engine.
    pub fn core(&self) -> &core::Engine {
        &self.inner
    }

    /// Starts a run of `W`; returns once its start is durable.
    pub async fn start<W: Workflow>(
        &self,
        workflow: W,
        input: W::Input,
    ) -> Result<RunHandle<W>, StartError> {
        self.start_with(workflow, input, StartOptions::default())
            .await
    }

    /// Starts a run of `W` with options (e.g. an idempotency key).
    pub async fn start_with<W: Workflow>(
        &self,
        _workflow: W,
        input: W::Input,
        options: StartOptions,
    ) -> Result<RunHandle<W>, StartError> {
        let input =
            serde_json::to_value(input).map_err(|e| StartError::InvalidInput(e.to_string()))?;
        let mut req = StartRequest::code(W::NAME, input);
        // The version of the type named: with several versions registered, a typed start
        // starts the one whose input and output its handle knows.
        req.version = Some(W::VERSION.to_string());
        req.idempotency_key = options.idempotency_key;
        req.started_by = options.started_by.unwrap_or_default();
        let id = self.inner.start(req).await?;
        Ok(RunHandle::new(self.clone(), id))
    }

    /// A handle on an existing run of `W`, e.g. from an id kept across a restart. Fails when
    /// the run does not exist or belongs to another workflow or another version of it (whose
    /// result may have another type).
    pub fn handle<W: Workflow>(
        &self,
        _workflow: W,
        id: RunId,
    ) -> Result<RunHandle<W>, HandleError> {
        let summary = self.inner.summary(id)?;
        if summary.workflow_name != W::NAME {
            return Err(HandleError::OtherWorkflow {
                run_id: id,
                expected: W::NAME,
                actual: summary.workflow_name,
            });
        }
        let version = self.inner.run(id)?.workflow_version;
        if version != W::VERSION {
            return Err(HandleError::OtherVersion {
                run_id: id,
                workflow: W::NAME,
                expected: W::VERSION,
                actual: version,
            });
        }
        Ok(RunHandle::new(self.clone(), id))
    }

    /// The run's status.
    pub fn status(&self, run: RunId) -> Result<RunStatus, RunError> {
        self.inner.status(run)
    }

    /// The run as a projection of its journal.
    pub fn run(&self, run: RunId) -> Result<RunView, RunError> {
        self.inner.run(run)
    }

    /// The run's indexed summary.
    pub fn summary(&self, run: RunId) -> Result<RunSummary, RunError> {
        self.inner.summary(run)
    }

    /// Waits until the run is `DONE`, `FAILED` or `CANCELLED` — or `BLOCKED` (non-determinism,
    /// a panic, an unreadable journal: it goes on only with fixed code or a restored store, and
    /// a reopened engine).
    pub async fn wait(&self, run: RunId) -> Result<RunView, RunError> {
        self.inner.wait(run).await
    }

    /// Waits until the run settles: ended, `WAITING` on a gate, or `BLOCKED`. A run whose
    /// child run waits on a gate is itself `RUNNING` (it waits on its child, not on a gate),
    /// so this waits on: to see a gate anywhere in a run's tree, watch [`Engine::inbox`]
    /// (each item names its run), or wait on the child run.
    pub async fn wait_settled(&self, run: RunId) -> Result<RunView, RunError> {
        self.inner.wait_settled(run).await
    }

    /// Waits until the run's status satisfies `pred`.
    pub async fn wait_until(
        &self,
        run: RunId,
        pred: impl Fn(RunStatus) -> bool,
    ) -> Result<RunView, RunError> {
        self.inner.wait_until(run, pred).await
    }

    /// Runs, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.list_runs(filter)
    }

    /// The run's journal as typed records.
    pub fn journal(&self, run: RunId) -> Result<Vec<Entry>, RunError> {
        self.inner.journal(run)
    }

    /// Stops the engine cleanly before the process exits (a shutdown, Ctrl-C): running task
    /// steps are journaled as interrupted and run again when the store is next opened,
    /// without the stop counting against
    /// [`EngineBuilder::max_claim_attempts`](crate::EngineBuilder) as a crash does. Waits up
    /// to `wait` for the runs to leave memory. Afterwards a start is refused and a wait (a
    /// [`RunHandle::result`](crate::RunHandle::result) too) ends with `[MAG-ST003]`. Its
    /// handles (clones, [`RunHandle`](crate::RunHandle)s) still read the journal until a new
    /// engine is built on the same file, which takes the file over once the runs have left
    /// memory (the old handles' reads fail from then on). See [`core::Engine::stop`].
    pub async fn stop(&self, wait: std::time::Duration) {
        self.inner.stop(wait).await;
    }

    /// Inbox items of unfinished runs, oldest first: pending ones, or all. A `BLOCKED` run's
    /// items are listed only under [`InboxFilter::All`]: until its code replays again, an
    /// answer is refused (`[MAG-GT003]`).
    pub fn inbox(&self, filter: InboxFilter) -> Result<Vec<InboxItem>, StoreError> {
        self.inner.inbox(filter)
    }

    /// A page of the inbox, oldest first, within an item limit and a byte budget: see
    /// [`core::Engine::inbox_page`]. Every run and item is listed; the core's method takes
    /// filters.
    pub fn inbox_page(&self, request: &InboxPageRequest) -> Result<InboxPage, InboxPageError> {
        self.inner.inbox_page(request, |_| true, |_| true)
    }

    /// One inbox item, pending or not.
    pub fn inbox_item(&self, id: &str) -> Result<InboxItem, DeliverError> {
        self.inner.inbox_item(id)
    }

    /// Answers a gate's inbox item. The first completion journaled wins: an answer after the
    /// gate's timeout fired (or after another answer) is journaled as ignored.
    pub async fn answer_gate(
        &self,
        item_id: &str,
        answer: GateAnswer,
    ) -> Result<AnswerAck, DeliverError> {
        self.inner.answer_gate(item_id, answer).await
    }

    /// Sends signal `name` to a run (untyped; [`RunHandle::signal`] takes a typed payload).
    pub async fn signal(&self, run: RunId, name: &str, payload: Value) -> Result<(), DeliverError> {
        self.inner.signal(run, name, payload).await
    }

    /// Requests cancellation of a run; see [`RunHandle::cancel`].
    pub async fn cancel(&self, run: RunId, reason: &str) -> Result<CancelAck, DeliverError> {
        self.inner.cancel(run, reason).await
    }

    /// Pauses a run, as an operator does: it starts nothing new until [`Engine::unpause`]; a
    /// running task finishes and is journaled; timers that come due meanwhile act on the
    /// resume. `by` and `reason` are journaled. See [`core::Engine::pause`].
    pub async fn pause(
        &self,
        run: RunId,
        by: &str,
        reason: Option<&str>,
    ) -> Result<ControlAck, DeliverError> {
        self.inner.pause(run, by, reason).await
    }

    /// Resumes a paused run (see [`Engine::pause`]; named so because [`Engine::resume`]
    /// recovers a run).
    pub async fn unpause(&self, run: RunId, by: &str) -> Result<ControlAck, DeliverError> {
        self.inner.unpause(run, by).await
    }

    /// Replays and drives one run that is not in memory (after [`Recovery::Manual`]).
    pub fn resume(&self, run: RunId) {
        self.inner.resume(run);
    }

    /// Committed status changes of every run.
    pub fn subscribe_status(&self) -> broadcast::Receiver<RunUpdate> {
        self.inner.subscribe_status()
    }
}

impl From<core::Engine> for Engine {
    fn from(engine: core::Engine) -> Self {
        Self::from_core(engine)
    }
}
