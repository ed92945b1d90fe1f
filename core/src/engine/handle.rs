//! The engine's handles: [`Engine`], the API to start, answer, signal, cancel and read runs,
//! and [`WeakEngine`], which does not keep the engine alive.

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{broadcast, oneshot};

use super::{
    AnswerAck, CancelAck, EngineBuilder, EngineInner, Event, JournalUpdate, ReplayError, RunUpdate,
    StartRequest, closing, driver,
};
use crate::error::{DeliverError, RunError, StartError, StoreError};
use crate::id::RunId;
use crate::record::{Entry, GateAnswer, Record, RunStatus};
use crate::store::{RunFilter, RunSummary, StoreReader};
use crate::view::{RunView, parse_inbox_item_id};
use crate::writer::{JournalHealth, WriterStats};

/// How often [`Engine::wait_until`] looks at the store when the run may be driven by another
/// worker.
const SHARED_STORE_POLL: Duration = Duration::from_millis(250);

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

    /// The runs that building this engine took up to recover them, in the order it took
    /// them: every non-terminal run of a store this process owns, or on a shared store the
    /// runs this worker claimed. Some may have finished since (read their status); a caller
    /// that reads the store's active runs after the build would miss those.
    pub fn recovered_at_build(&self) -> &[RunId] {
        self.inner
            .recovered_at_build
            .get()
            .map_or(&[], Vec::as_slice)
    }

    /// Recovers (replays and drives) one run, e.g. after its timers came due while no engine
    /// was running. Does nothing if the run is already in memory. Whether this engine drives
    /// the run: `false` on a shared store when another worker holds it (or it cannot be
    /// claimed now).
    pub fn resume(&self, run: RunId) -> bool {
        self.inner.recover(run)
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

    /// Waits until the run settles: terminal, `WAITING` on a gate, or `BLOCKED`. A run whose
    /// child run waits on a gate is `RUNNING` and does not settle by it: its gates are in
    /// [`Engine::inbox`], each item naming its run. A run this
    /// engine is recovering settles once its code has been replayed up to where it waits: until
    /// then its stored status is the last process's (code that no longer replays blocks it,
    /// fixed code unblocks it).
    pub async fn wait_settled(&self, run: RunId) -> Result<RunView, RunError> {
        let inner = self.inner.clone();
        self.wait_until(run, move |s| {
            s != RunStatus::Running && !inner.is_replaying(run)
        })
        .await
    }

    /// Waits until the run's status satisfies `pred`. It is woken by the run's own status
    /// changes only, so any number of callers can each wait on their own run. Once the
    /// engine is stopped ([`Engine::stop`]), a wait its run has not satisfied ends with
    /// [`StoreError::Closed`].
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
                // The view is read after the status: a change in between (a recovered run
                // that replays cleanly until a step blocks it) is waited out, never returned.
                let view = self.run(run)?;
                if pred(view.status) {
                    return Ok(view);
                }
            }
            // A stopped engine drives nothing more: waiting on would wait for ever.
            if self.inner.closing.is_closed() {
                return Err(RunError::Store(StoreError::Closed));
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

    /// Stops the engine cleanly, as a process does before it exits (a shutdown, Ctrl-C): no
    /// run comes into memory any more, and the runs in memory leave it where their journal
    /// stands. Each running task attempt is aborted once its interruption is journaled (a
    /// `TaskInterruptedRecord`): it runs again when the store is next opened, and a clean stop
    /// does not count against
    /// [`EngineBuilder::max_claim_attempts`](crate::EngineBuilder::max_claim_attempts) as a
    /// crash does. Waits up to `wait` for the runs to leave memory. The engine drives no run
    /// afterwards: a start is refused and a wait for a run's status ends, both with
    /// [`StoreError::Closed`]; the next engine on the store carries the runs on. Its handles
    /// still read the store (a run's journal, its status) until a new engine of this process
    /// is built on the same file: that one takes the file over once the runs have left
    /// memory, and the stopped engine's reads end with [`StoreError::Closed`] from then on.
    pub async fn stop(&self, wait: std::time::Duration) {
        super::closing::note_stopped(&self.inner);
        self.inner.stop();
        let deadline = tokio::time::Instant::now() + wait;
        while !self.inner.active().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
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
            return Err(ReplayError::other(
                "[MAG-RC001] the journal does not begin with its StartRecord",
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
            Some(e) => Err(e),
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

    /// The milestone records of each commit ([`Record::is_milestone`]: starts, statuses,
    /// pauses, gates, timers), for every run; a commit without one sends nothing. A reader
    /// that needs only these does not fall behind runs that only take steps, however many
    /// steps they take.
    pub fn subscribe_milestones(&self) -> broadcast::Receiver<JournalUpdate> {
        self.inner.milestones_tx.subscribe()
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
