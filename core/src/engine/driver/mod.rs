//! A run's driver: the one task that owns a run while it is in memory.
//!
//! The driver is the run's single journal writer and a loop: poll the workflow code, flush
//! (commit what it and the world produced, then act), wait for the next event. What the
//! journal says about each step lives in the pure [`RunState`]; the code reaches the driver
//! only through the commands its context emits. Nothing that follows from a record — a task
//! execution, a timer, a child start, a reply to an API caller — happens before its commit
//! (invariant 1 of the architecture).

mod attempts;
mod bounds;
mod children;
mod completions;
mod events;
mod leaving;
mod outbox;
mod pause;
mod replay;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskCx, Poll, Wake, Waker};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use super::tenant_runs::TenantSlot;
use super::trees::Place;
use super::{EngineInner, Event, RunUpdate, WorkflowError};
use crate::context::{Command, CommandDetail, Link, Shared, lock};
use crate::error::{DeliverError, StartError};
use crate::id::RunId;
use crate::record::{Entry, Record, RunStatus, StartRecord, Step};
use crate::replay::{Resolved, RunState, resolve_options};
use attempts::Attempts;
use outbox::{Outbox, Reply};
use pause::Held;

pub(crate) enum Init {
    Fresh {
        start: Box<StartRecord>,
        ack: oneshot::Sender<Result<(), StartError>>,
        /// The run's place in its tree of runs, when the starter knows it (a parent does).
        place: Option<Place>,
        /// The run's place in its tenant's count, when tenants are bounded.
        tenant: Option<TenantSlot>,
    },
    /// Replay the run from its journal. `reclaims` counts the times a worker sharing the
    /// store reclaimed it after its lease expired (0 with a store one process owns).
    Recover { reclaims: u32 },
}

pub(crate) use events::reply_error;

pub(crate) fn spawn(
    engine: Arc<EngineInner>,
    run: RunId,
    rx: mpsc::UnboundedReceiver<Event>,
    init: Init,
) {
    tokio::spawn(async move {
        let mut driver = Driver::new(engine.clone(), run, rx);
        driver.run(init).await;
        let journal_bytes = driver.outbox.journal_bytes;
        if driver.state.is_terminal() && !driver.checking {
            engine.timers.forget_run(run);
            engine.trees.leave(run);
        }
        // Everything the run held goes with the driver: its state, outbox and attempts.
        drop(driver);
        if engine
            .config
            .heap_trim_threshold
            .is_some_and(|t| journal_bytes >= t)
        {
            engine.heap.request();
        }
    });
}

/// Replays a journal against the engine's code without acting on it (see
/// [`Engine::check_replay`](crate::Engine::check_replay)).
pub(crate) fn check(
    engine: Arc<EngineInner>,
    entries: Vec<Entry>,
    summary: crate::store::RunSummary,
) -> Option<super::ReplayError> {
    let (_tx, rx) = mpsc::unbounded_channel();
    let mut driver = Driver::new(engine, summary.run_id, rx);
    driver.check(entries, summary)
}

/// The driver's waker: marks the code as woken, and wakes the driver's loop unless the driver
/// is polling the code, when it sees the mark before it stops (replay's steps wake the code
/// once each, from inside its poll).
struct WakeFlag {
    woken: AtomicBool,
    /// Set while the driver polls the code and checks `woken` after each poll.
    polling: AtomicBool,
    notify: Notify,
}

thread_local! {
    /// The wake flag of the driver that polls its code on this thread, while it does.
    static POLLING: std::cell::Cell<*const WakeFlag> = const { std::cell::Cell::new(std::ptr::null()) };
    /// The shared state of the run whose code the driver runs on this thread (making its
    /// future, polling it), while it does.
    static POLLED_RUN: std::cell::Cell<*const Link> = const { std::cell::Cell::new(std::ptr::null()) };
}

/// Marks the driver of `WakeFlag` as polling its code on this thread, until dropped (a
/// panic included).
struct PollingHere(*const WakeFlag);

impl PollingHere {
    fn enter(wake: &Arc<WakeFlag>) -> Self {
        Self(POLLING.with(|p| p.replace(Arc::as_ptr(wake))))
    }
}

impl Drop for PollingHere {
    fn drop(&mut self) {
        POLLING.with(|p| p.set(self.0));
    }
}

/// Marks the driver as running the code of the run of `Link` on this thread (making its
/// future, polling it), until dropped (a panic included). See [`code_runs_here`].
pub(super) struct CodeHere(*const Link);

impl CodeHere {
    pub(super) fn enter(link: &Arc<Link>) -> Self {
        Self(POLLED_RUN.with(|p| p.replace(Arc::as_ptr(link))))
    }
}

impl Drop for CodeHere {
    fn drop(&mut self) {
        POLLED_RUN.with(|p| p.set(self.0));
    }
}

/// Whether the driver runs the code of the run of `link` on this thread: it is making the
/// workflow's future or polling it. Steps are made only there: a step made from a clone of the
/// context elsewhere (a spawned task, another thread) has no place in the order replay
/// follows, and blocks the run (`MAG-WF002`).
pub(crate) fn code_runs_here(link: &Arc<Link>) -> bool {
    POLLED_RUN.with(std::cell::Cell::get) == Arc::as_ptr(link)
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        // The commonest wake: the code, from inside the poll of the driver on this thread
        // (a replayed step shows its completion from the next poll). That driver reads the
        // mark on this thread before it stops polling.
        if POLLING.with(std::cell::Cell::get) == Arc::as_ptr(self) {
            self.woken.store(true, Ordering::Relaxed);
            return;
        }
        // Sequentially consistent with the driver's `polling` store and `woken` load after its
        // loop (`Driver::poll_workflow`): the waker sees the loop over, or the driver sees
        // the mark; one of them wakes the loop.
        self.woken.store(true, Ordering::SeqCst);
        if !self.polling.load(Ordering::SeqCst) {
            self.notify.notify_one();
        }
    }
}

/// Where a replay stands while the code catches up with the journal.
#[derive(Default)]
struct ReplayCursor {
    /// The journal, while some of its steps were not requested again.
    journal: Option<Arc<Vec<Entry>>>,
    /// Commands for steps past the journal's end, made live once replay is over.
    deferred: Vec<Command>,
    /// The code's result when it finished before the journal's end.
    result: Option<Result<Value, WorkflowError>>,
    /// The status the journal ended with.
    journaled_status: Option<(RunStatus, Option<String>)>,
    /// The index of the next record to apply (the code may complete steps straight from
    /// the journal while it is polled, and the driver skips their records).
    next: usize,
    /// The code completed steps straight from the journal since the driver last recorded
    /// them in the run state.
    replayed: bool,
}

struct Driver {
    engine: Arc<EngineInner>,
    run_id: RunId,
    rx: mpsc::UnboundedReceiver<Event>,
    /// What the code and the driver share: commands one way, completions the other.
    shared: Arc<Link>,
    wake: Arc<WakeFlag>,
    waker: Waker,
    future: Option<BoxFuture<'static, Result<Value, WorkflowError>>>,
    start: Option<StartRecord>,
    state: RunState,
    outbox: Outbox,
    attempts: Attempts,
    /// Why the run is blocked (non-determinism, a panic, an unreadable journal).
    blocked: Option<String>,
    /// Set while the code is replayed against the journal.
    replay: Option<ReplayCursor>,
    /// The emptied command list, kept for its allocation.
    command_buf: Vec<Command>,
    /// The emptied list of completions a record caused, kept for its allocation (a replay
    /// applies one record per step that completes).
    resolved_buf: Vec<Resolved>,
    /// While replaying: each command's index in the journal and whether it was the last
    /// journaled step (see `process_commands`), kept for its allocation.
    journaled_buf: Vec<(Option<usize>, bool)>,
    /// Task steps the code completed straight from the journal, taken from the shared state
    /// before the driver applies another record or processes a command (kept for its
    /// allocation).
    replayed_buf: Vec<Step>,
    /// Steps the code dropped before they completed, taken from the shared state with its
    /// commands and not yet looked at: their children are cancelled after the poll, or once
    /// replay is over (kept for its allocation).
    dropped_buf: Vec<Step>,
    /// Replaying to check the code against a journal, ended runs included; nothing is acted on.
    checking: bool,
    /// While checking: the report of the step where the code parted from the journal.
    diverged: Option<crate::replay::NonDeterminism>,
    /// The run's place in its tree of runs (its nesting depth and root), once known.
    place: Option<Place>,
    /// The most bytes the run's journal may hold ([`Driver::journal_limit`], set when the run
    /// is loaded).
    journal_cap: u64,
    /// What the run holds back while it is paused.
    held: Held,
    /// Set when the run was reclaimed more often than the shared store allows: the attempts
    /// its journal shows running end with this `technical_error` instead of running again.
    claims_exhausted: Option<String>,
    /// Recovered, and the code not yet replayed up to where it waits (see
    /// `EngineInner::is_replaying`).
    replaying: bool,
    /// The run's place in its tenant's count of runs in progress: given back with the driver,
    /// or parked while the run waits out of memory.
    tenant: Option<TenantSlot>,
}

impl Driver {
    fn new(engine: Arc<EngineInner>, run_id: RunId, rx: mpsc::UnboundedReceiver<Event>) -> Self {
        let task_names = engine.task_names.clone();
        let wake = Arc::new(WakeFlag {
            woken: AtomicBool::new(true),
            polling: AtomicBool::new(false),
            notify: Notify::new(),
        });
        let waker = Waker::from(wake.clone());
        let shared = Arc::new(Link::new(Shared::new(run_id, task_names)));
        shared.set_driver(waker.clone());
        Self {
            engine,
            run_id,
            rx,
            shared,
            waker,
            wake,
            future: None,
            start: None,
            state: RunState::new(run_id),
            outbox: Outbox::new(run_id),
            attempts: Attempts::default(),
            blocked: None,
            replay: None,
            command_buf: Vec::new(),
            resolved_buf: Vec::new(),
            journaled_buf: Vec::new(),
            replayed_buf: Vec::new(),
            dropped_buf: Vec::new(),
            checking: false,
            diverged: None,
            place: None,
            journal_cap: u64::MAX,
            held: Held::default(),
            claims_exhausted: None,
            replaying: false,
            tenant: None,
        }
    }

    async fn run(&mut self, init: Init) {
        let ok = match init {
            Init::Fresh {
                start,
                ack,
                place,
                tenant,
            } => {
                self.place = place;
                self.tenant = tenant;
                self.begin_fresh(*start, ack)
            }
            Init::Recover { reclaims } => {
                // A run that waited out of memory takes up the place it kept.
                self.tenant = self.engine.tenant_runs.unpark(self.run_id);
                self.replaying = true;
                self.claims_exhausted = self.claims_exhausted_after(reclaims);
                let ok = self.recover().await;
                if ok {
                    self.join_tree();
                    if self.tenant.is_none()
                        && let Some(start) = &self.start
                    {
                        self.tenant = self.engine.join_tenant(&start.scope);
                    }
                    self.cancel_if_parent_did();
                }
                ok
            }
        };
        if !ok {
            self.exit_now();
            self.done_replaying();
            return;
        }
        self.main_loop().await;
        // However the driver left (a failed commit, a closing engine), its run is no longer
        // being replayed here.
        self.done_replaying();
    }

    /// The recovered run's code has been replayed up to where it waits, and what that
    /// journaled is durable: its stored status is this process's.
    fn done_replaying(&mut self) {
        if self.replaying {
            self.replaying = false;
            self.engine.replayed(self.run_id);
        }
    }

    fn begin_fresh(
        &mut self,
        start: StartRecord,
        ack: oneshot::Sender<Result<(), StartError>>,
    ) -> bool {
        self.outbox.begin(&start);
        self.journal_cap = self.journal_limit(&start.scope);
        match self.instantiate(&start) {
            Ok(()) => {}
            Err(replay::Unrunnable::Panicked(p)) => {
                // The start is journaled with the block, so the run is visible and can be
                // unblocked by fixed code.
                self.start = Some(start);
                self.outbox.replies.push(Reply::Start(ack));
                self.block(p.to_string());
                return true;
            }
            Err(replay::Unrunnable::Refused(reason) | replay::Unrunnable::NoFrontend(reason)) => {
                let _ = ack.send(Err(StartError::UnknownWorkflow(reason)));
                return false;
            }
        }
        self.start = Some(start);
        self.outbox.replies.push(Reply::Start(ack));
        true
    }

    // ---- the loop --------------------------------------------------------------------------

    async fn main_loop(&mut self) {
        loop {
            self.poll_workflow();
            if let Err(e) = self.flush().await {
                self.fail_stop(e);
                return;
            }
            // The tenant's bytes in memory follow the run's journal.
            if let Some(slot) = &mut self.tenant {
                slot.hold(self.outbox.journal_bytes);
            }
            self.done_replaying();
            if self.engine.closing.is_closed() {
                self.leave_closing_engine().await;
                return;
            }
            let idle = self.state.is_terminal() || self.blocked.is_some() || self.can_evict();
            if idle {
                match self.try_exit() {
                    None => return,
                    Some(ev) => {
                        self.handle_event(ev);
                        continue;
                    }
                }
            }
            tokio::select! {
                ev = self.rx.recv() => match ev {
                    Some(ev) => self.handle_event(ev),
                    None => return,
                },
                (step, attempt, result) = self.attempts.poll_local() => {
                    self.handle_event(Event::TaskDone { step, attempt, result });
                }
                () = self.wake.notify.notified() => {}
            }
            while let Ok(ev) = self.rx.try_recv() {
                self.poll_workflow();
                self.handle_event(ev);
            }
        }
    }

    // ---- polling and commands --------------------------------------------------------------

    fn poll_workflow(&mut self) {
        // A plain load first: a replay calls this after every record, and most records wake
        // nothing.
        if !self.wake.woken.load(Ordering::Acquire) {
            return;
        }
        self.wake.polling.store(true, Ordering::SeqCst);
        let code = CodeHere::enter(&self.shared);
        let polling = PollingHere::enter(&self.wake);
        self.poll_while_woken();
        drop(polling);
        drop(code);
        self.wake.polling.store(false, Ordering::SeqCst);
        if self.replay.as_ref().is_some_and(|c| c.replayed) {
            self.take_replayed_tasks();
        }
        // A wake while the loop was ending did not wake the driver's loop: this does.
        if self.wake.woken.load(Ordering::SeqCst) {
            self.wake.notify.notify_one();
        }
    }

    fn poll_while_woken(&mut self) {
        while self.blocked.is_none()
            && self.wake.woken.load(Ordering::Acquire)
            && self.wake.woken.swap(false, Ordering::AcqRel)
        {
            let Some(fut) = self.future.as_mut() else {
                return;
            };
            if let Some(cursor) = &self.replay {
                self.shared
                    .replay_next
                    .store(cursor.next, Ordering::Release);
            }
            crate::step_future::begin_poll();
            let mut cx = TaskCx::from_waker(&self.waker);
            let polled = match crate::panic::catch(|| fut.as_mut().poll(&mut cx)) {
                Ok(polled) => polled,
                Err(panic) => {
                    // Steps the code asked for before it panicked are not journaled: the run
                    // stops here, and fixed code asks again on replay.
                    lock(&self.shared).commands.clear();
                    self.block(panic.to_string());
                    return;
                }
            };
            self.process_commands();
            if polled.is_pending() {
                self.let_go_of_dropped_steps();
            }
            if let Poll::Ready(result) = polled {
                self.future = None;
                if self.blocked.is_some() {
                    return;
                }
                match self.replay.as_mut() {
                    // The rest of the journal must still agree with the code (a record of a
                    // step the code no longer reaches blocks the run); finish after it.
                    Some(cursor) => cursor.result = Some(result),
                    // A paused run ends when it is resumed.
                    None if self.state.is_paused() => self.held.result = Some(result),
                    None => self.finish(result),
                }
                return;
            }
        }
    }

    /// Records the task steps the code completed straight from the journal as complete in
    /// the run state: before the driver applies another record.
    fn take_replayed_tasks(&mut self) {
        let mut replayed = std::mem::take(&mut self.replayed_buf);
        std::mem::swap(&mut lock(&self.shared).replayed_tasks, &mut replayed);
        for step in replayed.drain(..) {
            self.state.insert_replayed_task(step);
        }
        self.replayed_buf = replayed;
        if let Some(cursor) = self.replay.as_mut() {
            cursor.replayed = false;
        }
    }

    /// Takes what the code left the driver after a poll: the commands it made (journaled
    /// live, matched against the journal while replaying), a patch conflict, dropped steps.
    /// The lock is taken only when the code left something (`Link::work`).
    fn process_commands(&mut self) {
        if let Some(cursor) = self.replay.as_mut() {
            let next = self.shared.replay_next.load(Ordering::Acquire);
            cursor.replayed |= next != cursor.next;
            cursor.next = next;
        }
        if !self.shared.work.load(Ordering::Acquire) {
            return;
        }
        // Steps the code completed from the journal come before the commands it made after.
        if self.replay.as_ref().is_some_and(|c| c.replayed) {
            self.take_replayed_tasks();
        }
        // Swapped with a kept buffer rather than taken: one allocation per run, not per step.
        let mut commands = std::mem::take(&mut self.command_buf);
        // While replaying, each command's journaled record is looked up under the same lock
        // (one lock per poll rather than one per step).
        let mut journaled = std::mem::take(&mut self.journaled_buf);
        let conflict = {
            let mut s = lock(&self.shared);
            self.shared.work.store(false, Ordering::Release);
            std::mem::swap(&mut s.commands, &mut commands);
            self.dropped_buf.append(&mut s.newly_dropped);
            if self.replay.is_some() {
                for c in &commands {
                    // A held step's result is not a step: it has no record of its own.
                    if matches!(c.detail, CommandDetail::Finish { .. }) {
                        journaled.push((None, false));
                        continue;
                    }
                    let i = s.journaled.take(c.step);
                    let last = i.is_some() && s.journaled.is_empty();
                    if last {
                        // The last journaled step was requested: the journal can go.
                        s.journal = None;
                    }
                    journaled.push((i, last));
                }
            }
            match s.made_elsewhere.take() {
                Some(step) => Err(step),
                None => Ok(s.patch_conflicts.pop()),
            }
        };
        let conflict = match conflict {
            Ok(conflict) => conflict,
            Err(step) => {
                commands.clear();
                self.command_buf = commands;
                journaled.clear();
                self.journaled_buf = journaled;
                self.block(made_elsewhere(step));
                return;
            }
        };
        if let Some((step, journal, code)) = conflict {
            let strip = |m: &str| m.trim_start_matches("patch:").to_string();
            let nd = self
                .state
                .patch_mismatch(step, &strip(&journal), &strip(&code));
            commands.clear();
            self.command_buf = commands;
            journaled.clear();
            self.journaled_buf = journaled;
            self.block_diverged(nd.to_string(), nd);
            return;
        }
        let mut journaled_of = journaled.drain(..);
        for mut c in commands.drain(..) {
            if self.blocked.is_some() {
                break;
            }
            let engine = &self.engine;
            resolve_options(&mut c.detail, |task| {
                engine.tasks.get(task).map(|r| r.options.clone())
            });
            match self.replay.as_mut() {
                // A held step's result made while replaying is journaled after the replay,
                // unless the journal holds it (`RunState::finish_held`).
                Some(cursor) if matches!(c.detail, CommandDetail::Finish { .. }) => {
                    journaled_of.next();
                    cursor.deferred.push(c);
                }
                Some(cursor) => {
                    // Each step is matched once; its journaled first record is not needed after.
                    let (index, last) = journaled_of.next().unwrap_or((None, false));
                    let journal = index.and(cursor.journal.take());
                    match journal.as_ref().zip(index) {
                        Some((journal, i)) => {
                            if let Err(nd) = self.state.request_replayed(c, &journal[i].record) {
                                let nd = self.with_journaled_input(nd, journal[i].seq);
                                self.block_diverged(nd.to_string(), nd);
                            }
                        }
                        None => cursor.deferred.push(c),
                    }
                    if !last
                        && journal.is_some()
                        && let Some(cursor) = self.replay.as_mut()
                    {
                        cursor.journal = journal;
                    }
                }
                // A paused run holds what its code asks for until it is resumed.
                None if self.state.is_paused() => {
                    self.held.commands.push((c, outbox::now_ms()));
                }
                None => {
                    let actions = self.state.request_live(c, outbox::now_ms());
                    self.perform(actions);
                }
            }
        }
        drop(journaled_of);
        self.journaled_buf = journaled;
        self.command_buf = commands;
    }

    /// Appends and applies the records, and keeps the effects for after their commit.
    fn perform(&mut self, actions: crate::replay::Actions) {
        for record in actions.records {
            self.append_apply(record);
        }
        self.outbox.effects.extend(actions.effects);
    }

    /// Appends a record after applying it to the run state (the one way records take effect
    /// live), and feeds the completions it causes to the code.
    fn append_apply(&mut self, record: Record) {
        let seq = self.outbox.next_seq;
        self.apply(seq, &record);
        self.outbox.append(record);
    }

    /// [`Driver::block`] for code that no longer matches the journal: a replay check
    /// ([`Engine::check_replay`](crate::Engine::check_replay)) reports `nd` typed.
    fn block_diverged(&mut self, reason: String, nd: crate::replay::NonDeterminism) {
        if self.checking {
            self.diverged = Some(nd);
        }
        self.block(reason);
    }

    fn block(&mut self, reason: String) {
        tracing::error!(run = %self.run_id, %reason, "run blocked");
        self.blocked = Some(reason.clone());
        self.future = None;
        self.attempts.abort_all();
        // The same block, already the run's last status (live, or at the end of the journal
        // being replayed), is not journaled again on every reopen.
        let journaled = self
            .replay
            .as_ref()
            .and_then(|c| c.journaled_status.as_ref());
        let already = [self.state.last_status(), journaled]
            .into_iter()
            .flatten()
            .any(|(s, r)| *s == RunStatus::Blocked && r.as_deref() == Some(reason.as_str()));
        if let Some(cursor) = self.replay.as_mut() {
            cursor.deferred.clear();
        }
        if !already {
            // During replay `next_seq` is already past the journal's end.
            self.outbox.append(Record::Status {
                status: RunStatus::Blocked,
                reason: Some(reason),
            });
        }
        self.outbox.set_status(RunStatus::Blocked);
    }

    fn finish(&mut self, result: Result<Value, WorkflowError>) {
        // Children still running do not outlive the run: they are cancelled, each with a
        // record on its step, in the commit that ends the run.
        lock(&self.shared).newly_dropped.clear();
        self.dropped_buf.clear();
        let (ending, why) = match &result {
            Ok(_) => (RunStatus::Done, None),
            Err(e) if e.cancelled => (RunStatus::Cancelled, Some(e.message.as_str())),
            Err(e) => (RunStatus::Failed, Some(e.message.as_str())),
        };
        let reason = match why {
            Some(why) => format!("parent run {} ended {ending}: {why}", self.run_id),
            None => format!("parent run {} ended {ending}", self.run_id),
        };
        let cancels = self.state.cancel_children(|_| reason.clone());
        self.perform(cancels);
        let result_state = lock(&self.shared).result_state.clone();
        let (status, reason) = match result {
            Ok(v) => {
                // A run that returns nothing from a named state (a YAML terminal without
                // `result:`) writes no ResultRecord, as the reference says.
                if !v.is_null() || result_state.is_none() {
                    self.outbox.append(Record::Result {
                        state: result_state,
                        result: v,
                    });
                }
                (RunStatus::Done, None)
            }
            Err(e) => {
                if let Some(r) = e.result {
                    self.outbox.append(Record::Result {
                        state: result_state,
                        result: r,
                    });
                }
                let status = if e.cancelled {
                    RunStatus::Cancelled
                } else {
                    RunStatus::Failed
                };
                (status, Some(e.message))
            }
        };
        self.append_apply(Record::Status { status, reason });
        self.outbox.set_status(status);
        self.attempts.abort_all();
    }

    fn refresh_status(&mut self) {
        if self.state.is_terminal() || self.blocked.is_some() {
            return;
        }
        self.outbox.set_status(self.state.live_status());
    }
}

/// Whether a delivery to a run this process cannot drive is refused with this error.
pub(crate) fn unsupported(run: RunId) -> DeliverError {
    DeliverError::Unsupported(run)
}

/// Why a run whose code made step `step` outside the driver's run of its code is blocked.
fn made_elsewhere(step: Step) -> String {
    format!(
        "[MAG-WF002] the workflow code made step {step} outside the workflow's own future (from \
         a clone of its context in a spawned task or on another thread), where replay cannot \
         place it in order. Make every step from the workflow's body (join or select its \
         futures for concurrency), then reopen the engine: the run resumes from its journal \
         (or cancel the run)"
    )
}
