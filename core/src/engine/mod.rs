//! The engine: runs, their drivers, and the API to start, answer, signal, cancel and read them.

mod driver;
mod key_locks;
mod timers;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot};

use crate::context::{ChildOutcome, WorkflowContext};
use crate::error::{DeliverError, OpenError, RunError, StartError, StoreError};
use crate::id::RunId;
use crate::record::{Entry, GateAnswer, ParentRef, Record, RunStatus, StartRecord, Step};
use crate::store::{Durability, MemoryStore, RedbStore, RunFilter, RunSummary, Store, StoreReader};
use crate::task::{AppData, TaskError, TaskRegistration};
use crate::view::{InboxItem, InboxStatus, RunView, inbox_items, parse_inbox_item_id};
use crate::writer::{JournalWriter, WriterStats};

pub(crate) use timers::TimerPurpose;
use timers::Timers;

/// Why a workflow ended without a result.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowError {
    /// A message for people; journaled as the run's `reason`.
    pub message: String,
    /// Whether the run ends `CANCELLED` rather than `FAILED`.
    pub cancelled: bool,
    /// A result to journal even though the run failed (a YAML failure terminal's `result:`).
    pub result: Option<Value>,
}

impl WorkflowError {
    /// A failure with a message.
    pub fn failed(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cancelled: false,
            result: None,
        }
    }
    /// Ends the run as cancelled.
    pub fn cancelled(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            cancelled: true,
            result: None,
        }
    }
    /// Journals a result with the failure.
    pub fn with_result(mut self, result: Value) -> Self {
        self.result = Some(result);
        self
    }
}

impl fmt::Display for WorkflowError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for WorkflowError {}

impl From<TaskError> for WorkflowError {
    /// A task failure fails the workflow; a cancelled step cancels it.
    fn from(e: TaskError) -> Self {
        Self {
            cancelled: e.is_cancelled(),
            message: e.to_string(),
            result: None,
        }
    }
}

/// The type-erased body of a code workflow.
pub type WorkflowFn = Arc<
    dyn Fn(WorkflowContext, Value) -> BoxFuture<'static, Result<Value, WorkflowError>>
        + Send
        + Sync,
>;

/// Runs definitions of a front end (e.g. YAML): given the context and the run's `StartRecord`
/// (with its frozen definition), returns the workflow future, or why it cannot run.
pub type InterpreterFn = Arc<
    dyn Fn(
            WorkflowContext,
            &StartRecord,
        ) -> Result<BoxFuture<'static, Result<Value, WorkflowError>>, String>
        + Send
        + Sync,
>;

/// A code workflow registered with the engine.
#[derive(Clone)]
pub struct WorkflowRegistration {
    /// Its name.
    pub name: String,
    /// Its version, journaled in each run's `StartRecord`.
    pub version: String,
    /// Its body.
    pub body: WorkflowFn,
}

impl fmt::Debug for WorkflowRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkflowRegistration")
            .field("name", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl WorkflowRegistration {
    /// Registers a closure as a workflow.
    pub fn new<F, Fut>(name: impl Into<String>, version: impl Into<String>, f: F) -> Self
    where
        F: Fn(WorkflowContext, Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, WorkflowError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            version: version.into(),
            body: Arc::new(move |c, v| Box::pin(f(c, v))),
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct StartRequest {
    /// The workflow's name.
    pub workflow: String,
    /// The front end: `code` (registered workflows) or an interpreter's name (`yaml`).
    pub frontend: String,
    /// The version; `None` takes the registration's.
    pub version: Option<String>,
    /// The frozen definition, for interpreted front ends.
    pub definition: Option<String>,
    /// The input (parameters).
    pub input: Value,
    /// Starting twice with the same key returns the first run.
    pub idempotency_key: Option<String>,
    /// Who starts it.
    pub started_by: String,
    /// `tenant/project`, or empty.
    pub scope: String,
    /// The parent, for child runs.
    pub parent: Option<ParentRef>,
    /// A chosen run id (children use the id journaled by their parent).
    pub run_id: Option<RunId>,
}

impl StartRequest {
    /// Starts the registered code workflow `workflow` with `input`.
    pub fn code(workflow: impl Into<String>, input: Value) -> Self {
        Self {
            workflow: workflow.into(),
            frontend: "code".into(),
            version: None,
            definition: None,
            input,
            idempotency_key: None,
            started_by: String::new(),
            scope: String::new(),
            parent: None,
            run_id: None,
        }
    }

    /// Sets the idempotency key.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Sets who starts the run.
    pub fn started_by(mut self, who: impl Into<String>) -> Self {
        self.started_by = who.into();
        self
    }

    /// Sets the scope.
    pub fn scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }
}

/// Which inbox items [`Engine::inbox`] lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InboxFilter {
    /// Items still awaiting an answer.
    Pending,
    /// Every item of the runs that have not ended, answered or not.
    All,
}

/// Why a journal does not replay against the current code: the reason the run would block,
/// with its `[MAG-…]` code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReplayError(pub String);

/// Whether a gate answer was applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerAck {
    /// The answer was journaled and drives the run on.
    Applied,
    /// The gate had already completed (answered, timed out, cancelled or the run ended): the
    /// answer was journaled as ignored and changes nothing.
    Ignored,
}

/// Whether a cancellation took effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelAck {
    /// The cancellation was journaled and delivered to the run.
    Requested,
    /// Cancellation had been requested before.
    AlreadyRequested,
    /// The run had already ended.
    AlreadyFinished,
}

/// A committed status change of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunUpdate {
    /// The run.
    pub run_id: RunId,
    /// Its new status.
    pub status: RunStatus,
}

/// Records committed to a run's journal.
#[derive(Debug, Clone)]
pub struct JournalUpdate {
    /// The run.
    pub run_id: RunId,
    /// The records, in order.
    pub entries: Arc<Vec<Entry>>,
}

pub(crate) enum Event {
    TaskDone {
        step: Step,
        attempt: u32,
        result: Result<Value, TaskError>,
    },
    TimerFired {
        step: Step,
        purpose: TimerPurpose,
    },
    Answer {
        step: Step,
        answer: GateAnswer,
        reply: oneshot::Sender<Result<AnswerAck, DeliverError>>,
    },
    Signal {
        name: String,
        payload: Value,
        reply: oneshot::Sender<Result<(), DeliverError>>,
    },
    ChildDone {
        step: Step,
        outcome: ChildOutcome,
    },
    Cancel {
        reason: String,
        reply: oneshot::Sender<Result<CancelAck, DeliverError>>,
    },
}

pub(crate) struct Config {
    pub(crate) evict_after: Duration,
}

pub(crate) struct EngineInner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) writer: JournalWriter,
    pub(crate) workflows: HashMap<String, WorkflowRegistration>,
    pub(crate) tasks: HashMap<String, TaskRegistration>,
    pub(crate) task_names: Arc<std::collections::HashSet<String>>,
    pub(crate) interpreters: HashMap<String, InterpreterFn>,
    pub(crate) active: Mutex<HashMap<RunId, mpsc::UnboundedSender<Event>>>,
    pub(crate) timers: Timers,
    pub(crate) status_tx: broadcast::Sender<RunUpdate>,
    pub(crate) journal_tx: broadcast::Sender<JournalUpdate>,
    pub(crate) replay_permits: Semaphore,
    pub(crate) data: AppData,
    /// Serialises starts per idempotency key (never across keys, so that distinct keys share
    /// group commits).
    start_locks: Arc<key_locks::KeyLocks>,
    pub(crate) config: Config,
}

impl EngineInner {
    pub(crate) fn active(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<RunId, mpsc::UnboundedSender<Event>>> {
        self.active.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The records of a run's journal that can be decoded.
    pub(crate) fn readable_journal(&self, run: RunId) -> Result<Vec<Entry>, StoreError> {
        match self.store.read_journal(run) {
            Ok(entries) => Ok(entries),
            Err(StoreError::Decode(_)) => Ok(self
                .store
                .read_journal_raw(run)?
                .into_iter()
                .filter_map(|(seq, bytes)| {
                    let (record, at_ms) = crate::codec::decode(&bytes).ok()?;
                    Some(Entry { seq, at_ms, record })
                })
                .collect()),
            Err(e) => Err(e),
        }
    }

    /// Sends an event to a run, starting (replaying) its driver if it is not in memory.
    pub(crate) fn deliver(self: &Arc<Self>, run: RunId, event: Event) {
        let mut active = self.active();
        let event = match active.get(&run) {
            Some(tx) => match tx.send(event) {
                Ok(()) => return,
                Err(mpsc::error::SendError(e)) => e,
            },
            None => event,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(event);
        active.insert(run, tx);
        drop(active);
        driver::spawn(self.clone(), run, rx, driver::Init::Recover);
    }

    /// Starts a run's driver for recovery unless it is already in memory.
    pub(crate) fn recover(self: &Arc<Self>, run: RunId) {
        let mut active = self.active();
        if active.contains_key(&run) {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        active.insert(run, tx);
        drop(active);
        driver::spawn(self.clone(), run, rx, driver::Init::Recover);
    }

    pub(crate) fn can_run(&self, start: &StartRecord) -> Result<(), StartError> {
        if start.frontend == "code" {
            if !self.workflows.contains_key(&start.workflow_name) {
                return Err(StartError::UnknownWorkflow(start.workflow_name.clone()));
            }
        } else if !self.interpreters.contains_key(&start.frontend) {
            return Err(StartError::UnknownFrontend(start.frontend.clone()));
        }
        Ok(())
    }

    pub(crate) async fn start(self: &Arc<Self>, req: StartRequest) -> Result<RunId, StartError> {
        let version = match (&req.version, req.frontend.as_str()) {
            (Some(v), _) => v.clone(),
            (None, "code") => self
                .workflows
                .get(&req.workflow)
                .map(|w| w.version.clone())
                .unwrap_or_default(),
            (None, _) => String::new(),
        };
        let start = StartRecord {
            workflow_name: req.workflow,
            workflow_version: version,
            frontend: req.frontend,
            params: req.input,
            definition: req.definition,
            parent: req.parent,
            started_by: req.started_by,
            idempotency_key: req.idempotency_key.clone(),
            scope: req.scope,
        };
        self.can_run(&start)?;
        // Held until the StartRecord and its key are durable, so that a concurrent start with
        // the same key finds the key; starts with other keys go on and share the commit.
        let guard = match &req.idempotency_key {
            Some(key) => {
                let guard = self.start_locks.lock(key).await;
                if let Some(existing) = self.store.find_idempotency_key(key)? {
                    return Ok(existing);
                }
                Some(guard)
            }
            None => None,
        };
        let run_id = req.run_id.unwrap_or_default();
        if req.run_id.is_some() && self.store.run_summary(run_id)?.is_some() {
            return Ok(run_id);
        }
        let (ack, done) = oneshot::channel();
        {
            let mut active = self.active();
            if active.contains_key(&run_id) {
                return Ok(run_id);
            }
            let (tx, rx) = mpsc::unbounded_channel();
            active.insert(run_id, tx);
            drop(active);
            driver::spawn(
                self.clone(),
                run_id,
                rx,
                driver::Init::Fresh {
                    start: Box::new(start),
                    ack,
                },
            );
        }
        let done = match guard {
            None => done,
            // The driver commits the start whether or not this caller still waits: a caller
            // that goes away (an HTTP client that hung up) must not release the key before the
            // commit, or a retry with the same key would find no run and start a second one.
            Some(guard) => {
                let (forward, forwarded) = oneshot::channel();
                tokio::spawn(async move {
                    let result = done.await;
                    drop(guard);
                    let _ =
                        forward.send(result.unwrap_or(Err(StartError::Store(StoreError::Closed))));
                });
                forwarded
            }
        };
        done.await
            .map_err(|_| StartError::Store(StoreError::Closed))??;
        Ok(run_id)
    }
}

/// Builds an [`Engine`].
///
/// Defaults: a redb store at `./.magrathea/journal.redb`, [`Durability::Immediate`], recovery
/// of every non-terminal run on build, suspended runs evicted from memory when nothing they
/// wait for is due within 2 s.
pub struct EngineBuilder {
    path: Option<PathBuf>,
    store: Option<Arc<dyn Store>>,
    durability: Durability,
    workflows: Vec<WorkflowRegistration>,
    tasks: Vec<TaskRegistration>,
    interpreters: Vec<(String, InterpreterFn)>,
    recover: bool,
    evict_after: Duration,
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
            .finish_non_exhaustive()
    }
}

impl Default for EngineBuilder {
    fn default() -> Self {
        Self {
            path: None,
            store: None,
            durability: Durability::Immediate,
            workflows: Vec::new(),
            tasks: Vec::new(),
            interpreters: Vec::new(),
            recover: true,
            evict_after: Duration::from_secs(2),
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

    /// Registers a code workflow.
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

    /// Opens the store, starts the journal writer and timer service and, unless disabled,
    /// recovers every non-terminal run. Must be called within a tokio runtime.
    pub async fn build(self) -> Result<Engine, OpenError> {
        let store: Arc<dyn Store> = match self.store {
            Some(s) => s,
            None => {
                let path = self
                    .path
                    .unwrap_or_else(|| PathBuf::from(".magrathea/journal.redb"));
                Arc::new(RedbStore::open(path, self.durability)?)
            }
        };
        let mut workflows = HashMap::new();
        for w in self.workflows {
            if workflows.insert(w.name.clone(), w.clone()).is_some() {
                return Err(OpenError::DuplicateRegistration(w.name));
            }
        }
        let mut tasks = HashMap::new();
        for t in self.tasks {
            if tasks.insert(t.name.clone(), t.clone()).is_some() {
                return Err(OpenError::DuplicateRegistration(t.name));
            }
        }
        let writer = JournalWriter::start(store.clone());
        let inner = Arc::new_cyclic(|weak| EngineInner {
            store: store.clone(),
            writer,
            workflows,
            task_names: Arc::new(tasks.keys().cloned().collect()),
            tasks,
            interpreters: self.interpreters.into_iter().collect(),
            active: Mutex::new(HashMap::new()),
            timers: Timers::start(weak.clone()),
            status_tx: broadcast::channel(4096).0,
            journal_tx: broadcast::channel(4096).0,
            replay_permits: Semaphore::new(64),
            data: self.data,
            start_locks: Arc::default(),
            config: Config {
                evict_after: self.evict_after,
            },
        });
        if self.recover {
            for run in store.active_runs()? {
                inner.recover(run);
            }
        }
        Ok(Engine { inner })
    }
}

/// The durable-execution engine. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Engine {
    pub(crate) inner: Arc<EngineInner>,
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine").finish_non_exhaustive()
    }
}

impl Engine {
    /// A builder with the defaults described on [`EngineBuilder`].
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Starts a run. Returns once its `StartRecord` is durable. With an idempotency key that
    /// was used before, returns the run started then and starts nothing.
    pub async fn start(&self, request: StartRequest) -> Result<RunId, StartError> {
        self.inner.start(request).await
    }

    /// Recovers (replays and drives) one run, e.g. after its timers came due while no engine
    /// was running. Does nothing if the run is already in memory.
    pub fn resume(&self, run: RunId) {
        self.inner.recover(run);
    }

    /// The run's indexed summary.
    pub fn summary(&self, run: RunId) -> Result<RunSummary, RunError> {
        self.inner
            .store
            .run_summary(run)?
            .ok_or(RunError::NotFound(run))
    }

    /// The run's status.
    pub fn status(&self, run: RunId) -> Result<RunStatus, RunError> {
        Ok(self.summary(run)?.status)
    }

    /// The run as a projection of its journal. A journal with records that cannot be decoded
    /// is shown from the records that can (its run is `BLOCKED` with `[MAG-RC001]` once the
    /// engine has tried to load it).
    pub fn run(&self, run: RunId) -> Result<RunView, RunError> {
        let summary = self.summary(run)?;
        let entries = self.inner.readable_journal(run)?;
        Ok(RunView::project(&entries, &summary))
    }

    /// Waits until the run is `DONE`, `FAILED` or `CANCELLED` — or `BLOCKED` with nobody
    /// driving it (non-determinism, a panic, an unreadable journal: it needs fixed code or a
    /// restored store, and a reopened engine).
    pub async fn wait(&self, run: RunId) -> Result<RunView, RunError> {
        let inner = self.inner.clone();
        self.wait_until(run, move |s| {
            s.is_terminal() || (s == RunStatus::Blocked && !inner.active().contains_key(&run))
        })
        .await
    }

    /// Waits until the run settles: terminal, `WAITING` on a gate, or `BLOCKED`.
    pub async fn wait_settled(&self, run: RunId) -> Result<RunView, RunError> {
        self.wait_until(run, |s| s != RunStatus::Running).await
    }

    /// Waits until the run's status satisfies `pred`.
    pub async fn wait_until(
        &self,
        run: RunId,
        pred: impl Fn(RunStatus) -> bool,
    ) -> Result<RunView, RunError> {
        let mut updates = self.inner.status_tx.subscribe();
        loop {
            if pred(self.status(run)?) {
                return self.run(run);
            }
            loop {
                match updates.recv().await {
                    Ok(u) if u.run_id == run => break,
                    Ok(_) => continue,
                    Err(broadcast::error::RecvError::Lagged(_)) => break,
                    Err(broadcast::error::RecvError::Closed) => {
                        return Err(RunError::Store(StoreError::Closed));
                    }
                }
            }
        }
    }

    /// Runs, newest first.
    pub fn list_runs(&self, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
        self.inner.store.list_runs(filter)
    }

    /// The run's journal as typed records.
    pub fn journal(&self, run: RunId) -> Result<Vec<Entry>, RunError> {
        let entries = self.inner.store.read_journal(run)?;
        if entries.is_empty() {
            return Err(RunError::NotFound(run));
        }
        Ok(entries)
    }

    /// Inbox items of non-terminal runs, oldest first, as `filter` says.
    pub fn inbox(&self, filter: InboxFilter) -> Result<Vec<InboxItem>, StoreError> {
        let pending_only = filter == InboxFilter::Pending;
        let mut items = Vec::new();
        for run in self.inner.store.active_runs()? {
            let Some(summary) = self.inner.store.run_summary(run)? else {
                continue;
            };
            // One unreadable run must not hide every other run's items.
            let entries = match self.inner.store.read_journal(run) {
                Ok(entries) => entries,
                Err(e) => {
                    tracing::warn!(%run, error = %e, "inbox: skipping a run whose journal cannot be read");
                    continue;
                }
            };
            items.extend(
                inbox_items(&entries, &summary)
                    .into_iter()
                    .filter(|i| !pending_only || i.status == InboxStatus::Pending),
            );
        }
        items.sort_by_key(|i| i.created_at);
        Ok(items)
    }

    /// One inbox item, pending or not.
    pub fn inbox_item(&self, id: &str) -> Result<InboxItem, DeliverError> {
        let (run, _) =
            parse_inbox_item_id(id).ok_or_else(|| DeliverError::ItemNotFound(id.into()))?;
        let summary = self
            .inner
            .store
            .run_summary(run)?
            .ok_or_else(|| DeliverError::ItemNotFound(id.into()))?;
        let entries = self.inner.store.read_journal(run)?;
        inbox_items(&entries, &summary)
            .into_iter()
            .find(|i| i.id == id)
            .ok_or_else(|| DeliverError::ItemNotFound(id.into()))
    }

    /// Answers a gate's inbox item. The first completion journaled wins: an answer after the
    /// gate's timeout fired (or after another answer) is journaled as ignored.
    pub async fn answer_gate(
        &self,
        item_id: &str,
        answer: GateAnswer,
    ) -> Result<AnswerAck, DeliverError> {
        let (run, step) = parse_inbox_item_id(item_id)
            .ok_or_else(|| DeliverError::ItemNotFound(item_id.into()))?;
        if self.inner.store.run_summary(run)?.is_none() {
            return Err(DeliverError::ItemNotFound(item_id.into()));
        }
        let (reply, done) = oneshot::channel();
        self.inner.deliver(
            run,
            Event::Answer {
                step,
                answer,
                reply,
            },
        );
        done.await
            .map_err(|_| DeliverError::Store(StoreError::Closed))?
    }

    /// Sends a named signal to a run.
    pub async fn signal(&self, run: RunId, name: &str, payload: Value) -> Result<(), DeliverError> {
        if self.inner.store.run_summary(run)?.is_none() {
            return Err(DeliverError::RunNotFound(run));
        }
        let (reply, done) = oneshot::channel();
        self.inner.deliver(
            run,
            Event::Signal {
                name: name.into(),
                payload,
                reply,
            },
        );
        done.await
            .map_err(|_| DeliverError::Store(StoreError::Closed))?
    }

    /// Requests cancellation of a run. The workflow sees its pending steps fail with a
    /// `cancelled` error and may clean up; a run that returns that error ends `CANCELLED`.
    pub async fn cancel(&self, run: RunId, reason: &str) -> Result<CancelAck, DeliverError> {
        if self.inner.store.run_summary(run)?.is_none() {
            return Err(DeliverError::RunNotFound(run));
        }
        let (reply, done) = oneshot::channel();
        self.inner.deliver(
            run,
            Event::Cancel {
                reason: reason.into(),
                reply,
            },
        );
        done.await
            .map_err(|_| DeliverError::Store(StoreError::Closed))?
    }

    /// Replays a run's journal (e.g. one exported with `magrathea journal RUN --export`)
    /// against this engine's workflows, without running tasks, starting children or writing
    /// anything. `Ok` when the code still agrees with the journal; otherwise the reason the run
    /// would block — a non-determinism report (`[MAG-ND…]`) with both sides, a panic
    /// (`[MAG-WF001]`), a missing or changed workflow.
    ///
    /// For tests that keep journals of runs in flight and prove that a change of the code can
    /// replay them (see `magrathea::testing`).
    pub fn check_replay(&self, entries: Vec<Entry>) -> Result<(), ReplayError> {
        let Some(Entry {
            record: Record::Start(start),
            ..
        }) = entries.first()
        else {
            return Err(ReplayError(
                "[MAG-RC001] the journal does not begin with its StartRecord".into(),
            ));
        };
        let run_id = RunId::new();
        let summary = RunSummary {
            run_id,
            workflow_name: start.workflow_name.clone(),
            frontend: start.frontend.clone(),
            status: RunStatus::Running,
            created_ms: entries[0].at_ms,
            updated_ms: entries[0].at_ms,
            parent: start.parent.as_ref().map(|p| p.run_id),
            scope: start.scope.clone(),
        };
        match driver::check(self.inner.clone(), entries, summary) {
            None => Ok(()),
            Some(reason) => Err(ReplayError(reason)),
        }
    }

    /// Committed status changes of every run.
    pub fn subscribe_status(&self) -> broadcast::Receiver<RunUpdate> {
        self.inner.status_tx.subscribe()
    }

    /// Records as they are committed, for every run.
    pub fn subscribe_journal(&self) -> broadcast::Receiver<JournalUpdate> {
        self.inner.journal_tx.subscribe()
    }

    /// The journal writer's counters.
    pub fn writer_stats(&self) -> Arc<WriterStats> {
        self.inner.writer.stats().clone()
    }

    /// The store, for reading (writes go through the engine only).
    pub fn store(&self) -> StoreReader {
        StoreReader::new(self.inner.store.clone())
    }

    /// Number of runs held in memory (not evicted).
    pub fn runs_in_memory(&self) -> usize {
        self.inner.active().len()
    }
}
