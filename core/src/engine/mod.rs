//! The engine: runs, their drivers, and the API to start, answer, signal, cancel and read them.

mod builder;
mod closing;
mod control;
mod driver;
pub(crate) use driver::code_runs_here;
mod failed_runs;
mod heap;
mod inbox;
mod key_locks;
mod requests;
mod status_waiters;
mod timer_queue;
mod timers;
mod worker;
mod workers;
mod workflow;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot};

use crate::context::ChildOutcome;
use crate::error::{DeliverError, RunError, StartError, StoreError};
use crate::id::RunId;
use crate::record::{Entry, GateAnswer, Record, RunStatus, StartRecord, Step};
use crate::store::{RunFilter, RunSummary, Store, StoreReader};
use crate::task::{AppData, TaskError, TaskRegistration};
use crate::view::{RunView, parse_inbox_item_id};
use crate::writer::{JournalHealth, JournalWriter, WriterStats};

pub use builder::EngineBuilder;
pub use inbox::{InboxPage, InboxPageError, InboxPageRequest};
pub(crate) use requests::Control;
pub use requests::{
    AnswerAck, CancelAck, ControlAck, InboxFilter, JournalUpdate, ReplayError, RunUpdate,
    StartRequest,
};
pub(crate) use timers::TimerPurpose;
use timers::Timers;
pub use workflow::{InterpreterFn, WorkflowError, WorkflowFn, WorkflowRegistration};

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
    Control {
        control: Control,
        reply: oneshot::Sender<Result<ControlAck, DeliverError>>,
    },
    /// The engine is closing: the driver leaves memory (it sees the engine's mark; this only
    /// wakes it).
    Close,
}

pub(crate) struct Config {
    pub(crate) evict_after: Duration,
    /// The deepest a sub-run may be nested (root = 0) unless its request says otherwise.
    pub(crate) max_child_depth: u32,
    /// The most bytes one run's journal may hold before the run fails.
    pub(crate) max_journal_bytes_per_run: u64,
    /// Lower journal limits for runs of some scopes.
    pub(crate) journal_bytes_limit: Option<JournalBytesLimit>,
    /// The most bytes of JSON one task attempt's output may take.
    pub(crate) max_task_output_bytes: usize,
    /// The journal size from which a run leaving memory asks for a heap trim.
    pub(crate) heap_trim_threshold: Option<u64>,
    /// How often a task attempt whose process stopped before its result is run again, on a
    /// store without leases (a shared store counts reclaims of the run instead).
    pub(crate) max_claim_attempts: u32,
}

/// How often [`Engine::wait_until`] looks at the store when the run may be driven by another
/// worker.
const SHARED_STORE_POLL: Duration = Duration::from_millis(250);

/// The default of [`EngineBuilder::max_child_depth`].
pub const DEFAULT_MAX_CHILD_DEPTH: u32 = 32;

/// The default of [`EngineBuilder::max_journal_bytes_per_run`]: 256 MiB.
pub const DEFAULT_MAX_JOURNAL_BYTES_PER_RUN: u64 = 256 << 20;

/// The default of [`EngineBuilder::max_task_output_bytes`]: 4 MiB.
pub const DEFAULT_MAX_TASK_OUTPUT_BYTES: usize = 4 << 20;

/// The default of [`EngineBuilder::max_claim_attempts`]: 3, as the reference's
/// `maxClaimAttempts`.
pub const DEFAULT_MAX_CLAIM_ATTEMPTS: u32 = 3;

/// The default of [`EngineBuilder::heap_trim_threshold`]: 8 MiB of journal.
pub const DEFAULT_HEAP_TRIM_THRESHOLD: u64 = 8 << 20;

/// A run's journal limit by its scope, below the engine's (see
/// [`EngineBuilder::journal_bytes_limit`]); `None` leaves the engine's.
pub type JournalBytesLimit = Arc<dyn Fn(&crate::RunScope) -> Option<u64> + Send + Sync>;

/// Registrations by name (workflows, tasks, interpreters), fixed when the engine is built and
/// looked up on every start and task attempt. Only the application's registrations are ever
/// inserted (a caller's name is looked up, never added), so no caller can fill the map with
/// colliding keys and the hash need not be keyed: FxHash costs a fraction of the default
/// SipHash.
pub(crate) type Registry<V> = rustc_hash::FxHashMap<String, V>;

pub(crate) struct EngineInner {
    pub(crate) store: Arc<dyn Store>,
    pub(crate) writer: JournalWriter,
    /// Code workflows by name: the version new starts take (the one registered last).
    pub(crate) workflows: Registry<WorkflowRegistration>,
    /// Every registered version of each code workflow: by name, then by version.
    pub(crate) workflow_versions: Registry<Registry<WorkflowRegistration>>,
    pub(crate) tasks: Registry<TaskRegistration>,
    pub(crate) task_names: Arc<rustc_hash::FxHashSet<String>>,
    pub(crate) interpreters: Registry<InterpreterFn>,
    pub(crate) active: Mutex<HashMap<RunId, mpsc::UnboundedSender<Event>>>,
    pub(crate) timers: Timers,
    pub(crate) status_tx: broadcast::Sender<RunUpdate>,
    /// The callers waiting on one run's status, by run.
    pub(crate) status_waiters: status_waiters::StatusWaiters,
    pub(crate) journal_tx: broadcast::Sender<JournalUpdate>,
    pub(crate) replay_permits: Semaphore,
    pub(crate) data: AppData,
    /// Serialises starts per idempotency key (never across keys, so that distinct keys share
    /// group commits).
    start_locks: Arc<key_locks::KeyLocks>,
    pub(crate) config: Config,
    /// Returns freed memory to the operating system after large runs.
    pub(crate) heap: Arc<heap::HeapTrimmer>,
    /// Runs whose commit failed, recovered once the store works again.
    pub(crate) failed_runs: failed_runs::FailedRuns,
    /// Set once the engine closes (a new engine wants its file): the runs in memory leave it.
    pub(crate) closing: closing::Closing,
    /// The store file the builder opened (none for a store it was given).
    pub(crate) file: Option<std::path::PathBuf>,
}

impl EngineInner {
    /// Tells the run's status change to the subscribers of all runs and to the callers
    /// waiting on this one.
    pub(crate) fn announce(&self, update: RunUpdate) {
        let run = update.run_id;
        let _ = self.status_tx.send(update);
        self.status_waiters.notify(run);
    }

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

    /// Sends an event to a run, starting (replaying) its driver if it is not in memory. On a
    /// store several workers share, a run another worker holds gets the event through the
    /// mailbox instead (see [`workers`]).
    pub(crate) fn deliver(self: &Arc<Self>, run: RunId, event: Event) {
        let event = match self.send_in_memory(run, event) {
            Ok(()) => return,
            Err(event) => event,
        };
        let reclaims = match workers::claim(self, run) {
            Ok(Some(reclaims)) => reclaims,
            Ok(None) => return workers::forward(self, run, event),
            Err(e) => return driver::reply_error(event, &e),
        };
        let mut active = self.active();
        // Another delivery may have started the driver meanwhile.
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
        driver::spawn(self.clone(), run, rx, driver::Init::Recover { reclaims });
    }

    /// Sends `event` to the driver of `run` if it is in memory; else hands it back.
    fn send_in_memory(&self, run: RunId, event: Event) -> Result<(), Event> {
        match self.active().get(&run) {
            Some(tx) => tx.send(event).map_err(|mpsc::error::SendError(e)| e),
            None => Err(event),
        }
    }

    /// Starts a run's driver for recovery unless it is already in memory, or (on a store
    /// several workers share) another worker holds it.
    pub(crate) fn recover(self: &Arc<Self>, run: RunId) {
        if self.active().contains_key(&run) {
            return;
        }
        match workers::claim(self, run) {
            Ok(Some(reclaims)) => self.recover_claimed(run, reclaims),
            Ok(None) => {}
            Err(e) => tracing::warn!(%run, error = %e, "cannot claim the run to recover it"),
        }
    }

    /// Starts the driver of a run this worker may drive, unless it is in memory already.
    pub(crate) fn recover_claimed(self: &Arc<Self>, run: RunId, reclaims: u32) {
        let mut active = self.active();
        // A closing engine takes no run into memory (a timer that comes due meanwhile fires
        // when the store is next opened).
        if active.contains_key(&run) || self.closing.is_closed() {
            return;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        active.insert(run, tx);
        drop(active);
        driver::spawn(self.clone(), run, rx, driver::Init::Recover { reclaims });
    }

    pub(crate) fn can_run(&self, start: &StartRecord) -> Result<(), StartError> {
        if start.frontend == "code" {
            if !self.workflows.contains_key(&start.workflow_name) {
                return Err(StartError::UnknownWorkflow(start.workflow_name.clone()));
            }
            let registered = self
                .workflow_versions
                .get(start.workflow_name.as_str())
                .is_some_and(|v| v.contains_key(start.workflow_version.as_str()));
            if !registered {
                return Err(StartError::UnknownWorkflow(format!(
                    "{} (version {})",
                    start.workflow_name, start.workflow_version
                )));
            }
        } else if !self.interpreters.contains_key(start.frontend.as_str()) {
            return Err(StartError::UnknownFrontend(start.frontend.to_string()));
        }
        Ok(())
    }

    /// The `StartRecord` a request journals (the version defaults to the registration's).
    fn start_record(&self, req: StartRequest) -> StartRecord {
        let version = match (&req.version, req.frontend.as_str()) {
            (Some(v), _) => v.clone(),
            (None, "code") => self
                .workflows
                .get(&req.workflow)
                .map(|w| w.version.clone())
                .unwrap_or_default(),
            (None, _) => String::new(),
        };
        StartRecord {
            workflow_name: req.workflow,
            workflow_version: version,
            frontend: req.frontend,
            params: req.input,
            definition: req.definition,
            parent: req.parent,
            started_by: req.started_by,
            idempotency_key: req.idempotency_key,
            scope: req.scope,
            requested_by: req.requested_by,
            bounds: req.bounds,
            entry: req.entry,
        }
    }

    /// Hands a new run to its driver, which commits its `StartRecord`; returns the receiver
    /// of that commit's outcome, or `None` when a run with this id is in memory or (with
    /// `stored_check`) in the store already. Synchronous: once it returns, the run is known to
    /// the engine (a delivery reaches the new driver after its start).
    fn spawn_start(
        self: &Arc<Self>,
        start: StartRecord,
        run_id: RunId,
        stored_check: bool,
        depth: Option<u32>,
    ) -> Result<Option<oneshot::Receiver<Result<(), StartError>>>, StartError> {
        if stored_check && self.store.run_summary(run_id)?.is_some() {
            return Ok(None);
        }
        let (ack, done) = oneshot::channel();
        let mut active = self.active();
        if active.contains_key(&run_id) {
            return Ok(None);
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
                depth,
            },
        );
        Ok(Some(done))
    }

    /// Starts a child run (a request with its run id and parent, no idempotency key) at
    /// nesting depth `depth`; see [`spawn_start`](Self::spawn_start).
    pub(crate) fn start_child(
        self: &Arc<Self>,
        req: StartRequest,
        depth: u32,
    ) -> Result<Option<oneshot::Receiver<Result<(), StartError>>>, StartError> {
        let run_id = req.run_id.unwrap_or_default();
        let start = self.start_record(req);
        self.can_run(&start)?;
        self.spawn_start(start, run_id, true, Some(depth))
    }

    pub(crate) async fn start(self: &Arc<Self>, req: StartRequest) -> Result<RunId, StartError> {
        let chosen_id = req.run_id;
        let start = self.start_record(req);
        self.can_run(&start)?;
        // Held until the StartRecord and its key are durable, so that a concurrent start with
        // the same key finds the key; starts with other keys go on and share the commit.
        let guard = match &start.idempotency_key {
            Some(key) => {
                let guard = self.start_locks.lock(key).await;
                if let Some(existing) = self.store.find_idempotency_key(key)? {
                    return self.keyed_run(existing, key, &start.workflow_name);
                }
                Some(guard)
            }
            None => None,
        };
        let run_id = chosen_id.unwrap_or_default();
        let keyed = start
            .idempotency_key
            .clone()
            .map(|key| (key, start.workflow_name.to_string()));
        let Some(done) = self.spawn_start(start, run_id, chosen_id.is_some(), None)? else {
            return Ok(run_id);
        };
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
        match done
            .await
            .map_err(|_| StartError::Store(StoreError::Closed))?
        {
            // Another worker sharing the store started a run with this key first.
            Err(StartError::Store(StoreError::KeyTaken(existing))) => match keyed {
                Some((key, workflow)) => self.keyed_run(existing, &key, &workflow),
                None => Ok(existing),
            },
            Err(e) => Err(e),
            Ok(()) => Ok(run_id),
        }
    }

    /// The run an idempotency key already started, when a start of `workflow` names the key
    /// again: the same run if it is a run of `workflow`, else an error (the key is taken by a
    /// run of another workflow, whose handle or result would be of another type).
    fn keyed_run(&self, existing: RunId, key: &str, workflow: &str) -> Result<RunId, StartError> {
        match self.store.run_summary(existing)? {
            Some(summary) if summary.workflow_name != workflow => Err(StartError::KeyOfOtherRun {
                key: key.to_owned(),
                run: existing,
                workflow: summary.workflow_name.to_string(),
            }),
            _ => Ok(existing),
        }
    }
}

/// The durable-execution engine. Cheap to clone; clones share everything.
///
/// When the last handle is dropped (each clone is one, and so is each run handle of the
/// typed API), the engine goes on with the runs it has in memory and lets go of its store file
/// once they are idle. An engine built on the same file in the same process meanwhile closes
/// it — its runs leave memory where their journal stands; a task attempt that is running is
/// aborted and runs again on the new engine, as after a crash — and waits (up to 30 s) for the
/// file instead of failing with `[MAG-ST002]`.
#[derive(Clone)]
pub struct Engine {
    /// First, so that it drops before `inner`: the engine is listed while it is still there.
    life: Arc<closing::Lifeline>,
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

    /// Waits until the run's status satisfies `pred`. It is woken by the run's own status
    /// changes only, so any number of callers can each wait on their own run.
    pub async fn wait_until(
        &self,
        run: RunId,
        pred: impl Fn(RunStatus) -> bool,
    ) -> Result<RunView, RunError> {
        let watch = self.inner.status_waiters.watch(run);
        // On a store other workers share, the run may be driven elsewhere, where its status
        // changes are not announced here: look at the store now and then as well.
        let shared = self.is_shared_store();
        loop {
            // Registered before the status is read, so a change in between still wakes it.
            let changed = watch.notify.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if pred(self.status(run)?) {
                return self.run(run);
            }
            if shared {
                let _ = tokio::time::timeout(SHARED_STORE_POLL, changed).await;
            } else {
                changed.await;
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

    /// A page of the run's journal: at most `limit` records whose `seq` is `from_seq` or later,
    /// in `seq` order, decoded; and no more than `max_bytes` of encoded records, but at least
    /// one whatever its size. The next page starts at the last record's `seq + 1`; an empty
    /// page means nothing is journaled from `from_seq` on (yet: a running run grows).
    ///
    /// Unlike [`Engine::journal`], it holds one page in memory however long the journal is,
    /// which is what readers of long runs (the HTTP journal route, live followers) need. An
    /// unknown run reads as an empty page; ask [`Engine::summary`] to tell the two apart.
    pub fn journal_page(
        &self,
        run: RunId,
        from_seq: u64,
        limit: usize,
        max_bytes: usize,
    ) -> Result<Vec<Entry>, StoreError> {
        self.inner
            .store
            .read_journal_range(run, from_seq, limit, max_bytes)?
            .into_iter()
            .map(|(seq, bytes)| {
                let (record, at_ms) = crate::codec::decode(&bytes)?;
                Ok(Entry { seq, at_ms, record })
            })
            .collect()
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

    /// Whether a code workflow of this name is registered with the engine.
    pub fn has_code_workflow(&self, name: &str) -> bool {
        self.inner.workflows.contains_key(name)
    }

    /// Sends a named signal to a run. A signal to a run that has ended is accepted and
    /// journaled as ignored (an `IgnoredRecord`), as a late gate answer is; on a store several
    /// workers share, nothing is journaled for an ended run.
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
    ///
    /// Its child runs that are still running are cancelled too, recursively, with the reason
    /// `parent run <id> was cancelled: <reason>`: the run journals a
    /// `ChildCancelRequestedRecord` on each child's step with its `CancelRequestedRecord`, and
    /// tells each child once that is durable (after a crash in between, recovery tells them).
    /// The reply comes once this run's records are durable, before the children have ended.
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

    /// Whether the engine's store is shared with other worker processes (PostgreSQL), whose
    /// drivers' progress is not announced on this engine's channels
    /// ([`Engine::subscribe_status`], [`Engine::subscribe_journal`]): readers that follow a run
    /// then also read the store now and then.
    pub fn is_shared_store(&self) -> bool {
        self.inner.store.leases().is_some()
    }

    /// On a store several workers share (PostgreSQL): gives up every run lease this engine
    /// holds, so that other workers adopt its runs at once rather than after the lease's grace
    /// period. Call it when the process is about to exit (the `magrathea` commands do); the
    /// engine must not be used to drive runs afterwards. Does nothing on a store one process
    /// owns.
    pub fn release_leases(&self) -> Result<(), StoreError> {
        match self.inner.store.leases() {
            Some(leases) => leases.release_all(),
            None => Ok(()),
        }
    }

    /// Replays a run's journal (e.g. one exported with `magrathea journal RUN --export`)
    /// against this engine's workflows, without running tasks, starting children or writing
    /// anything. `Ok` when the code still agrees with the journal; otherwise the reason the run
    /// would block — a non-determinism report (`[MAG-ND…]`) with both sides, a panic
    /// (`[MAG-WF001]`), a missing or changed workflow.
    ///
    /// For tests that keep journals of runs in flight and prove that a change of the code can
    /// replay them (see `magrathea::testing`).
    ///
    /// The code runs under a fresh run id: code that uses its run's id (in a task's input,
    /// say) asks for other steps than the journal holds; replay such journals with
    /// [`Engine::check_replay_as`].
    pub fn check_replay(&self, entries: Vec<Entry>) -> Result<(), ReplayError> {
        self.check_replay_as(RunId::new(), entries)
    }

    /// [`Engine::check_replay`] with the code running as run `run_id`, the run the journal
    /// was written by (an export holds it: see [`crate::export`]).
    pub fn check_replay_as(&self, run_id: RunId, entries: Vec<Entry>) -> Result<(), ReplayError> {
        let Some(Entry {
            record: Record::Start(start),
            ..
        }) = entries.first()
        else {
            return Err(ReplayError(
                "[MAG-RC001] the journal does not begin with its StartRecord".into(),
            ));
        };
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

    /// Whether the journal accepted its last commit (one atomic load). After a failed commit,
    /// e.g. with a full disk, it stays [`JournalHealth::CommitFailed`] until a commit succeeds:
    /// the next append's, or [`Engine::probe_journal`]'s.
    pub fn health(&self) -> JournalHealth {
        self.inner.writer.health()
    }

    /// Commits an empty transaction to learn whether the store works again, updating
    /// [`Engine::health`]. A store that failed reopens itself first. Costs one commit (an fsync
    /// under `Durability::Immediate`): rate-limit it.
    pub fn probe_journal(&self) -> Result<(), StoreError> {
        self.inner.writer.probe()
    }

    /// The journal writer's counters.
    pub fn writer_stats(&self) -> Arc<WriterStats> {
        self.inner.writer.stats().clone()
    }

    /// The store, for reading (writes go through the engine only).
    pub fn store(&self) -> StoreReader {
        StoreReader::new(self.inner.store.clone())
    }

    /// The store's catalog of keyed values beside the journals (trigger registrations,
    /// cursors, deliveries), if the store keeps one (redb, memory and PostgreSQL do).
    pub fn catalog(&self) -> Option<crate::store::catalog::SharedCatalog> {
        crate::store::catalog::SharedCatalog::of(self.inner.store.clone())
    }

    /// The lane slots of the engine's store when several workers share it (see
    /// [`LaneSlots`](crate::store::LaneSlots)); `None` for a store this process owns.
    pub fn lane_slots(&self) -> Option<crate::store::LaneSlots> {
        crate::store::LaneSlots::of(&self.inner.store)
    }

    /// Number of runs held in memory (not evicted).
    pub fn runs_in_memory(&self) -> usize {
        self.inner.active().len()
    }

    /// A handle that does not keep the engine alive, for what the engine itself holds (task
    /// executors, interpreters) and that needs the engine back: holding an [`Engine`] there
    /// would make a cycle that keeps the store open after every other handle is gone.
    pub fn downgrade(&self) -> WeakEngine {
        WeakEngine {
            inner: Arc::downgrade(&self.inner),
            life: Arc::downgrade(&self.life),
        }
    }

    /// The first handle of the engine `inner`.
    pub(crate) fn first_handle(inner: Arc<EngineInner>) -> Self {
        let life = Arc::new(closing::Lifeline(Arc::downgrade(&inner)));
        Self { inner, life }
    }
}

/// An [`Engine`] handle that does not keep it alive (see [`Engine::downgrade`]).
#[derive(Clone)]
pub struct WeakEngine {
    inner: Weak<EngineInner>,
    life: Weak<closing::Lifeline>,
}

impl fmt::Debug for WeakEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WeakEngine")
            .field("alive", &(self.inner.strong_count() > 0))
            .finish()
    }
}

impl WeakEngine {
    /// The engine, while any [`Engine`] handle to it (or a run it drives) is alive. A handle
    /// made after the last user handle was dropped (by a task of a run still going on) does
    /// not make the engine one a new engine on its file must wait for.
    pub fn upgrade(&self) -> Option<Engine> {
        let inner = self.inner.upgrade()?;
        let life = self
            .life
            .upgrade()
            .unwrap_or_else(|| Arc::new(closing::Lifeline(Arc::downgrade(&inner))));
        Some(Engine { life, inner })
    }
}
