//! The engine: its shared state (registrations, the runs in memory and the events their drivers
//! take, the journal writer and timers), with the handles users hold in `handle`.

mod builder;
mod closing;
mod control;
mod driver;
pub(crate) use driver::code_runs_here;
mod failed_runs;
mod handle;
mod heap;
mod inbox;
mod key_locks;
mod requests;
mod status_waiters;
mod tenant_runs;
mod timer_queue;
mod timers;
mod trees;
mod worker;
mod workers;
mod workflow;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot};

use crate::context::ChildOutcome;
use crate::error::{DeliverError, StartError, StoreError};
use crate::id::RunId;
use crate::record::{Entry, GateAnswer, StartRecord, Step};
use crate::store::Store;
use crate::task::{AppData, TaskError, TaskRegistration};
use crate::writer::JournalWriter;
use tenant_runs::TenantSlot;

pub use builder::EngineBuilder;
pub use handle::{Engine, WeakEngine};
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
    /// A running attempt waits for a place to run ([`TaskContext::wait_for_admission`]).
    ///
    /// [`TaskContext::wait_for_admission`]: crate::TaskContext::wait_for_admission
    TaskQueued {
        step: Step,
        attempt: u32,
    },
    /// The attempt that waited has its place: `reply` once that is durable.
    TaskAdmitted {
        step: Step,
        attempt: u32,
        reply: oneshot::Sender<()>,
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
    /// The most sub-runs one tree of runs (a root's descendants) may hold.
    pub(crate) max_runs_per_tree: u32,
    /// The most runs one tenant may have active here at once.
    pub(crate) max_active_runs_per_tenant: Option<u32>,
    /// The most journal bytes one tenant's runs may hold in memory at once.
    pub(crate) max_resident_bytes_per_tenant: Option<u64>,
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

/// The default of [`EngineBuilder::max_child_depth`].
pub const DEFAULT_MAX_CHILD_DEPTH: u32 = 32;

/// The default of [`EngineBuilder::max_runs_per_tree`].
pub const DEFAULT_MAX_RUNS_PER_TREE: u32 = 10_000;

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
    /// The child runs of each tree of runs, counted against its bound.
    pub(crate) trees: trees::Trees,
    /// The active runs of each tenant, counted against its bound.
    pub(crate) tenant_runs: Arc<tenant_runs::TenantRuns>,
    pub(crate) status_tx: broadcast::Sender<RunUpdate>,
    /// The callers waiting on one run's status, by run.
    pub(crate) status_waiters: status_waiters::StatusWaiters,
    pub(crate) journal_tx: broadcast::Sender<JournalUpdate>,
    /// The milestone records of each commit ([`Record::is_milestone`]).
    pub(crate) milestones_tx: broadcast::Sender<JournalUpdate>,
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
    /// The runs the build took into memory to recover them.
    pub(crate) recovered_at_build: std::sync::OnceLock<Vec<RunId>>,
    /// Runs taken into memory to be recovered whose code has not yet been replayed up to where
    /// it waits: the status the store holds for them is the last process's, which replay may
    /// change (a run that no longer replays blocks; one whose code was fixed is unblocked).
    replaying: Mutex<std::collections::HashSet<RunId>>,
}

impl EngineInner {
    /// Whether the run was taken into memory to be recovered and its code has not yet been
    /// replayed up to where it waits.
    pub(crate) fn is_replaying(&self, run: RunId) -> bool {
        self.replaying
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&run)
    }

    /// The run's code has been replayed (or its driver left memory): its stored status is
    /// this process's now. Wakes the callers waiting on the run.
    pub(crate) fn replayed(&self, run: RunId) {
        let was = self
            .replaying
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&run);
        if was {
            self.status_waiters.notify(run);
        }
    }

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
        // A closing engine takes no run into memory: a timer due meanwhile fires, and an
        // event is refused, as when the store is next opened.
        if self.closing.is_closed() {
            return driver::reply_error(event, &StoreError::Closed);
        }
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
    /// Hands `event` to the run's driver if this process has it in memory.
    pub(crate) fn send_in_memory(&self, run: RunId, event: Event) -> Result<(), Event> {
        match self.active().get(&run) {
            Some(tx) => tx.send(event).map_err(|mpsc::error::SendError(e)| e),
            None => Err(event),
        }
    }

    /// Starts a run's driver for recovery unless it is already in memory, or (on a store
    /// several workers share) another worker holds it. Whether this engine drives the run:
    /// `false` when another worker holds it or it cannot be claimed.
    pub(crate) fn recover(self: &Arc<Self>, run: RunId) -> bool {
        if self.active().contains_key(&run) {
            return true;
        }
        match workers::claim(self, run) {
            Ok(Some(reclaims)) => {
                self.recover_claimed(run, reclaims);
                true
            }
            Ok(None) => false,
            Err(e) => {
                tracing::warn!(%run, error = %e, "cannot claim the run to recover it");
                false
            }
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
        self.replaying
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(run);
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
        place: Option<trees::Place>,
        tenant: Option<TenantSlot>,
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
                place,
                tenant,
            },
        );
        Ok(Some(done))
    }

    /// Starts a child run (a request with its run id and parent, no idempotency key) at
    /// `place` in its tree; see [`spawn_start`](Self::spawn_start).
    pub(crate) fn start_child(
        self: &Arc<Self>,
        req: StartRequest,
        place: trees::Place,
    ) -> Result<Option<oneshot::Receiver<Result<(), StartError>>>, StartError> {
        let run_id = req.run_id.unwrap_or_default();
        let start = self.start_record(req);
        self.can_run(&start)?;
        let tenant = self.admit_tenant(&start)?;
        self.spawn_start(start, run_id, true, Some(place), tenant)
    }

    /// A place in the count of the tenant of `start`'s scope
    /// ([`EngineBuilder::max_active_runs_per_tenant`](crate::EngineBuilder::max_active_runs_per_tenant),
    /// [`EngineBuilder::max_resident_bytes_per_tenant`](crate::EngineBuilder::max_resident_bytes_per_tenant)),
    /// `None` when tenants are not bounded or the run has none; the refusal when the tenant
    /// holds as many runs as it may, or its runs in memory as many bytes.
    fn admit_tenant(
        self: &Arc<Self>,
        start: &crate::record::StartRecord,
    ) -> Result<Option<TenantSlot>, StartError> {
        let (runs, bytes) = (
            self.config.max_active_runs_per_tenant,
            self.config.max_resident_bytes_per_tenant,
        );
        if runs.is_none() && bytes.is_none() {
            return Ok(None);
        }
        let limits = tenant_runs::Limits {
            runs: runs.unwrap_or(u32::MAX),
            bytes: bytes.unwrap_or(u64::MAX),
        };
        // What the start record will hold, its parameters above all (counted only when the
        // bytes are bounded).
        let incoming = if bytes.is_some() {
            crate::json_len::json_len(&start.params) as u64 + start.workflow_name.len() as u64 + 256
        } else {
            0
        };
        let tenant = || {
            tenant_runs::tenant_of(&start.scope)
                .unwrap_or_default()
                .to_owned()
        };
        self.tenant_runs
            .admit(&start.scope, limits, incoming)
            .map_err(|full| match full {
                tenant_runs::Full::Runs(held) => StartError::TenantFull {
                    tenant: tenant(),
                    held,
                    limit: limits.runs,
                },
                tenant_runs::Full::Bytes(held) => StartError::TenantMemoryFull {
                    tenant: tenant(),
                    held,
                    incoming,
                    limit: limits.bytes,
                },
            })
    }

    /// A place in the count of `scope`'s tenant for a run that is active already (recovered),
    /// whatever the tenant holds; `None` when tenants are not bounded.
    pub(crate) fn join_tenant(self: &Arc<Self>, scope: &crate::RunScope) -> Option<TenantSlot> {
        if self.config.max_active_runs_per_tenant.is_none()
            && self.config.max_resident_bytes_per_tenant.is_none()
        {
            return None;
        }
        self.tenant_runs.join(scope)
    }

    pub(crate) async fn start(self: &Arc<Self>, req: StartRequest) -> Result<RunId, StartError> {
        // A stopped engine would journal the start and never drive the run.
        if self.closing.is_closed() {
            return Err(StartError::Store(StoreError::Closed));
        }
        let chosen_id = req.run_id;
        // A start that names its version (a typed start) finds only a run of that version.
        let version = req.version.clone();
        let start = self.start_record(req);
        self.can_run(&start)?;
        // Held until the StartRecord and its key are durable, so that a concurrent start with
        // the same key finds the key; starts with other keys go on and share the commit.
        let guard = match &start.idempotency_key {
            Some(key) => {
                let guard = self.start_locks.lock(key).await;
                if let Some(existing) = self.store.find_idempotency_key(key)? {
                    return self.keyed_run(existing, key, &start.workflow_name, version.as_deref());
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
        let tenant = self.admit_tenant(&start)?;
        let Some(done) = self.spawn_start(start, run_id, chosen_id.is_some(), None, tenant)? else {
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
                Some((key, workflow)) => {
                    self.keyed_run(existing, &key, &workflow, version.as_deref())
                }
                None => Ok(existing),
            },
            Err(e) => Err(e),
            Ok(()) => Ok(run_id),
        }
    }

    /// The run an idempotency key already started, when a start of `workflow` names the key
    /// again: the same run if it is a run of `workflow`, else an error (the key is taken by a
    /// run of another workflow, whose handle or result would be of another type).
    ///
    /// `version`: the version of a code workflow the start names; a run of another version of
    /// it is refused too (a typed handle of this version would decode the other's result).
    fn keyed_run(
        &self,
        existing: RunId,
        key: &str,
        workflow: &str,
        version: Option<&str>,
    ) -> Result<RunId, StartError> {
        let other = |workflow: String, version: Option<String>| StartError::KeyOfOtherRun {
            key: key.to_owned(),
            run: existing,
            workflow,
            version,
        };
        match self.store.run_summary(existing)? {
            Some(summary) if summary.workflow_name != workflow => {
                Err(other(summary.workflow_name.to_string(), None))
            }
            Some(_) if version.is_some() => {
                let first = self.store.read_journal_range(existing, 0, 1, usize::MAX)?;
                let started = first
                    .first()
                    .and_then(|(_, bytes)| crate::codec::decode(bytes).ok());
                match started {
                    Some((crate::Record::Start(s), _))
                        if Some(s.workflow_version.as_str()) != version =>
                    {
                        Err(other(workflow.to_owned(), Some(s.workflow_version)))
                    }
                    _ => Ok(existing),
                }
            }
            _ => Ok(existing),
        }
    }
}
