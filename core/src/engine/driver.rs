//! A run's driver: the one task that owns a run while it is in memory.
//!
//! The driver is the run's single journal writer. It polls the workflow future, turns the
//! steps the code creates into records (or, on replay, matches them to the journal), and turns
//! completions from the world into records that it feeds back to the code, one at a time and
//! in journal order. Records are committed in groups; nothing that follows from a record —
//! a task execution, a timer, a child start, a reply to an API caller — happens before its
//! commit (invariant 1 of the architecture).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskCx, Poll, Wake, Waker};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{Notify, mpsc, oneshot};

use super::timers::{Registration, TimerPurpose, now_ms};
use super::{AnswerAck, CancelAck, EngineInner, Event, JournalUpdate, RunUpdate, WorkflowError};
use crate::codec::{self, input_hash};
use crate::context::{
    ChildOutcome, ChildRequest, Command, CommandDetail, GateOutcome, Resolution, Shared, StepMap,
    WorkflowContext, lock,
};
use crate::error::{DeliverError, StartError, StoreError};
use crate::id::RunId;
use crate::record::{
    AnswerOutcome, Entry, GateAnswer, GateKind, GateSpec, ParentRef, Record, RunStatus,
    StartRecord, Step, StepKind,
};
use crate::store::{CommitBatch, EncodedRecord, RunSummary};
use crate::task::{TaskContext, TaskError, TaskOptions, TaskRegistration};

pub(crate) enum Init {
    Fresh {
        start: Box<StartRecord>,
        ack: oneshot::Sender<Result<(), StartError>>,
    },
    Recover,
}

pub(crate) fn spawn(
    engine: Arc<EngineInner>,
    run: RunId,
    rx: mpsc::UnboundedReceiver<Event>,
    init: Init,
) {
    tokio::spawn(async move {
        let mut driver = Driver::new(engine, run, rx);
        driver.run(init).await;
    });
}

/// Where a task attempt runs.
enum Running {
    /// In its own tokio task.
    Spawned(tokio::task::AbortHandle),
    /// Polled by the driver itself ([`Driver::local`]).
    Local,
}

/// The result of a task attempt.
type AttemptFuture = Pin<Box<dyn Future<Output = Result<Value, TaskError>> + Send>>;

/// An attempt the driver polls itself: step, attempt number, the attempt.
struct LocalAttempt {
    step: Step,
    attempt: u32,
    future: AttemptFuture,
}

/// The local attempt's result, once it has one.
async fn poll_local(local: &mut Option<LocalAttempt>) -> Result<Value, TaskError> {
    match local {
        Some(l) => l.future.as_mut().await,
        None => std::future::pending().await,
    }
}

struct WakeFlag {
    woken: AtomicBool,
    notify: Notify,
}

impl Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        self.notify.notify_one();
    }
}

/// What the driver knows of one step.
struct StepState {
    kind: StepKind,
    name: String,
    resolved: bool,
    /// Boxed, like `gate`: a long run keeps a state per step, most of them resolved, so the
    /// inline part stays small.
    task: Option<Box<TaskState>>,
    /// Due time of the step's timer (sleep, gate timeout).
    timer_at: Option<u64>,
    gate: Option<Box<GateSpec>>,
    timed_out: bool,
    child: Option<(RunId, Box<ChildRequest>)>,
}

struct TaskState {
    task: String,
    /// The body the call carried, used when no task of that name is registered.
    registration: Option<TaskRegistration>,
    input: Value,
    options: TaskOptions,
    attempt: u32,
    /// The current attempt's start is journaled and its result is not.
    open: bool,
    retry_at: Option<u64>,
}

enum Effect {
    Execute(Step),
    Timer(Step, u64, TimerPurpose),
    StartChild(Step),
    CheckChild(Step),
}

enum Reply {
    Answer(oneshot::Sender<Result<AnswerAck, DeliverError>>, AnswerAck),
    Signal(oneshot::Sender<Result<(), DeliverError>>),
    Cancel(oneshot::Sender<Result<CancelAck, DeliverError>>, CancelAck),
    Start(oneshot::Sender<Result<(), StartError>>),
}

struct Driver {
    engine: Arc<EngineInner>,
    run_id: RunId,
    rx: mpsc::UnboundedReceiver<Event>,
    shared: Arc<Mutex<Shared>>,
    wake: Arc<WakeFlag>,
    waker: Waker,
    future: Option<BoxFuture<'static, Result<Value, WorkflowError>>>,
    start: Option<StartRecord>,
    steps: StepMap<StepState>,
    next_seq: u64,
    batch: CommitBatch,
    new_entries: Vec<Entry>,
    effects: Vec<Effect>,
    replies: Vec<Reply>,
    summary: Option<RunSummary>,
    summary_dirty: bool,
    terminal: bool,
    blocked: Option<String>,
    last_status_record: Option<(RunStatus, Option<String>)>,
    cancel_requested: bool,
    signals: VecDeque<(u64, String, Value)>,
    executing: StepMap<Running>,
    /// The attempt that runs inside this driver's own task (see [`Driver::execute`]).
    local: Option<LocalAttempt>,
    replaying: bool,
    deferred: Vec<Command>,
    /// The journal being replayed, while some of its steps were not requested again.
    journal: Option<Arc<Vec<Entry>>>,
    /// The emptied command list, kept for its allocation.
    command_buf: Vec<Command>,
    /// Gates created and not yet resolved: the run is WAITING while there are any.
    open_gates: usize,
    /// The code's result when it finished during replay, before the journal's end.
    replayed_result: Option<Result<Value, WorkflowError>>,
    /// Steps that wait for a completion from the world (tasks, timers, gates, signals,
    /// children) and have none yet. Kept so per-event checks do not walk every step.
    pending: std::collections::BTreeSet<Step>,
}

fn step_of(r: &Record) -> Option<Step> {
    match r {
        Record::StateEntered { step, .. }
        | Record::TaskStarted { step, .. }
        | Record::TaskResult { step, .. }
        | Record::Var { step, .. }
        | Record::TimerSet { step, .. }
        | Record::TimerFired { step }
        | Record::GateOpened { step, .. }
        | Record::GateAnswered { step, .. }
        | Record::SignalAwaited { step, .. }
        | Record::SignalDelivered { step, .. }
        | Record::ChildStarted { step, .. }
        | Record::ChildFinished { step, .. }
        | Record::SideEffect { step, .. }
        | Record::Ignored { step, .. } => Some(*step),
        Record::SignalReceived { step, .. } => *step,
        _ => None,
    }
}

/// The kind, name and (where journaled) input hash of a step's first record.
fn identity(r: &Record) -> Option<(StepKind, &str, Option<u64>)> {
    Some(match r {
        Record::TaskStarted {
            name, input_hash, ..
        } => (StepKind::Task, name.as_str(), Some(*input_hash)),
        Record::TimerSet { purpose, .. } => (StepKind::Timer, purpose.as_str(), None),
        Record::GateOpened { gate, .. } => (
            StepKind::Gate,
            gate.title.as_str(),
            Some(input_hash(
                &serde_json::to_value(gate).unwrap_or(Value::Null),
            )),
        ),
        Record::SignalAwaited { name, .. } => (StepKind::Signal, name.as_str(), None),
        Record::ChildStarted {
            workflow,
            input_hash,
            ..
        } => (StepKind::Child, workflow.as_str(), Some(*input_hash)),
        Record::SideEffect { name, .. } => (StepKind::SideEffect, name.as_str(), None),
        Record::StateEntered { state, .. } => (StepKind::State, state.as_str(), None),
        Record::Var { key, value, .. } => (StepKind::Var, key.as_str(), Some(input_hash(value))),
        _ => return None,
    })
}

fn kind_name(k: StepKind) -> &'static str {
    match k {
        StepKind::Task => "task",
        StepKind::Timer => "timer",
        StepKind::Gate => "gate",
        StepKind::Signal => "signal wait",
        StepKind::Child => "child workflow",
        StepKind::SideEffect => "side effect",
        StepKind::State => "state",
        StepKind::Var => "variable",
    }
}

fn task_error_from_record(outcome: &str, output: &Value, error: &Option<String>) -> TaskError {
    TaskError {
        kind: outcome.to_string(),
        message: error.clone().unwrap_or_else(|| outcome.to_string()),
        output: output.clone(),
        retryable: false,
    }
}

fn check_answer(gate: &GateSpec, answer: &GateAnswer) -> Result<(), DeliverError> {
    if answer.outcome != AnswerOutcome::Decided {
        return Ok(());
    }
    let bad = |m: String| Err(DeliverError::InvalidAnswer(m));
    match gate.kind {
        GateKind::Approval => match answer.value.get("approved") {
            Some(Value::Bool(_)) => Ok(()),
            _ => bad("an APPROVAL answer needs `approved: true|false`".into()),
        },
        GateKind::Decision => match answer.value.get("chosen").and_then(Value::as_str) {
            Some(c) if gate.options.iter().any(|o| o == c) => Ok(()),
            Some(c) => bad(format!(
                "`{c}` is not one of the options {:?}",
                gate.options
            )),
            None => bad(format!(
                "a DECISION answer needs `chosen`, one of {:?}",
                gate.options
            )),
        },
        GateKind::Feedback => match answer.value.get("text") {
            Some(Value::String(_)) => Ok(()),
            _ => bad("a FEEDBACK answer needs `text`".into()),
        },
    }
}

impl Driver {
    fn new(engine: Arc<EngineInner>, run_id: RunId, rx: mpsc::UnboundedReceiver<Event>) -> Self {
        let task_names = engine.task_names.clone();
        let wake = Arc::new(WakeFlag {
            woken: AtomicBool::new(true),
            notify: Notify::new(),
        });
        Self {
            engine,
            run_id,
            rx,
            shared: Arc::new(Mutex::new(Shared::new(run_id, task_names))),
            waker: Waker::from(wake.clone()),
            wake,
            future: None,
            start: None,
            steps: StepMap::default(),
            next_seq: 0,
            batch: CommitBatch::default(),
            new_entries: Vec::new(),
            effects: Vec::new(),
            replies: Vec::new(),
            summary: None,
            summary_dirty: false,
            terminal: false,
            blocked: None,
            last_status_record: None,
            cancel_requested: false,
            signals: VecDeque::new(),
            executing: StepMap::default(),
            local: None,
            replaying: false,
            deferred: Vec::new(),
            command_buf: Vec::new(),
            journal: None,
            open_gates: 0,
            replayed_result: None,
            pending: std::collections::BTreeSet::new(),
        }
    }

    async fn run(&mut self, init: Init) {
        let ok = match init {
            Init::Fresh { start, ack } => self.begin_fresh(*start, ack),
            Init::Recover => self.recover().await,
        };
        if !ok {
            self.exit_now();
            return;
        }
        self.main_loop().await;
    }

    // ---- starting ------------------------------------------------------------------------

    fn instantiate(&mut self, start: &StartRecord) -> Result<(), String> {
        let ctx = WorkflowContext::new(self.shared.clone());
        let fut = if start.frontend == "code" {
            let reg = self
                .engine
                .workflows
                .get(&start.workflow_name)
                .ok_or_else(|| {
                    format!(
                        "[MAG-ND004] workflow `{}` is not registered with this engine; register it \
                     and reopen the engine",
                        start.workflow_name
                    )
                })?;
            if reg.version != start.workflow_version {
                return Err(format!(
                    "[MAG-ND003] run started on version `{}` of workflow `{}`, but version `{}` \
                     is registered; run the old version or cancel the run",
                    start.workflow_version, start.workflow_name, reg.version
                ));
            }
            (reg.body)(ctx, start.params.clone())
        } else {
            let interp = self
                .engine
                .interpreters
                .get(&start.frontend)
                .ok_or_else(|| {
                    format!(
                        "[MAG-ND004] no interpreter for front end `{}`",
                        start.frontend
                    )
                })?;
            interp(ctx, start)?
        };
        self.future = Some(fut);
        Ok(())
    }

    fn begin_fresh(
        &mut self,
        start: StartRecord,
        ack: oneshot::Sender<Result<(), StartError>>,
    ) -> bool {
        let now = now_ms();
        self.summary = Some(RunSummary {
            run_id: self.run_id,
            workflow_name: start.workflow_name.clone(),
            frontend: start.frontend.clone(),
            status: RunStatus::Running,
            created_ms: now,
            updated_ms: now,
            parent: start.parent.as_ref().map(|p| p.run_id),
            scope: start.scope.clone(),
        });
        self.summary_dirty = true;
        if let Some(key) = &start.idempotency_key {
            self.batch.idempotency_keys.push((key.clone(), self.run_id));
        }
        self.append(Record::Start(Box::new(start.clone())));
        if let Err(reason) = self.instantiate(&start) {
            let _ = ack.send(Err(StartError::UnknownWorkflow(reason)));
            return false;
        }
        self.start = Some(start);
        self.replies.push(Reply::Start(ack));
        true
    }

    async fn recover(&mut self) -> bool {
        let engine = self.engine.clone();
        let permit = engine.replay_permits.acquire().await;
        let entries = match self.engine.store.read_journal(self.run_id) {
            Ok(e) => e,
            Err(e) => {
                tracing::error!(run = %self.run_id, error = %e, "cannot read journal");
                return false;
            }
        };
        let summary = match self.engine.store.run_summary(self.run_id) {
            Ok(Some(s)) => s,
            _ => return false,
        };
        let ok = self.replay(entries, summary);
        drop(permit);
        ok
    }

    /// Re-runs the code against the journal. See the module docs for the order.
    fn replay(&mut self, entries: Vec<Entry>, summary: RunSummary) -> bool {
        let Some(Entry {
            record: Record::Start(start),
            ..
        }) = entries.first()
        else {
            return false;
        };
        let start = start.clone();
        self.summary = Some(summary);
        // Most steps have two or three records; sizing the maps once avoids rehashing
        // thousands of entries in long runs.
        let mut journaled =
            StepMap::with_capacity_and_hasher(entries.len() / 2, Default::default());
        self.steps.reserve(entries.len() / 2);
        for (i, e) in entries.iter().enumerate() {
            if let Some(step) = step_of(&e.record) {
                journaled.entry(step).or_insert(i);
            }
            if let Record::Status { status, reason } = &e.record {
                self.last_status_record = Some((*status, reason.clone()));
                if status.is_terminal() {
                    self.terminal = true;
                }
            }
        }
        self.next_seq = entries.last().map_or(0, |e| e.seq + 1);
        let entries = Arc::new(entries);
        self.journal = Some(entries.clone());
        {
            let mut s = lock(&self.shared);
            s.journal = Some(entries.clone());
            s.journaled = journaled;
            s.replaying = true;
        }
        self.replaying = true;
        if !self.terminal
            && let Err(reason) = self.instantiate(&start)
        {
            self.start = Some(*start);
            self.block(reason);
            return true;
        }
        self.start = Some(*start);
        if self.terminal {
            // The code is not run again; late deliveries only need to know the steps.
            let journaled = std::mem::take(&mut lock(&self.shared).journaled);
            lock(&self.shared).journal = None;
            self.journal = None;
            for (step, i) in journaled {
                let record = &entries[i].record;
                let Some((kind, name, _)) = identity(record) else {
                    continue;
                };
                let name = name.to_string();
                let gate = match record {
                    Record::GateOpened { gate, .. } => Some(gate.clone()),
                    _ => None,
                };
                self.steps.insert(
                    step,
                    StepState {
                        kind,
                        name,
                        resolved: true,
                        task: None,
                        timer_at: None,
                        gate,
                        timed_out: false,
                        child: None,
                    },
                );
            }
        } else {
            self.poll_workflow();
            for e in &entries[1..] {
                if self.blocked.is_some() {
                    break;
                }
                self.apply(e.seq, &e.record);
                self.poll_workflow();
            }
        }
        self.replaying = false;
        lock(&self.shared).replaying = false;
        if let Some(result) = self.replayed_result.take()
            && !self.terminal
            && self.blocked.is_none()
        {
            self.finish(result);
        }
        if self.terminal || self.blocked.is_some() {
            return true;
        }
        // A run blocked before and now replaying cleanly is running again.
        if matches!(self.last_status_record, Some((RunStatus::Blocked, _))) {
            self.append(Record::Status {
                status: RunStatus::Running,
                reason: Some("unblocked".into()),
            });
            self.last_status_record = Some((RunStatus::Running, None));
        }
        let deferred = std::mem::take(&mut self.deferred);
        for c in deferred {
            self.command_live(c);
        }
        self.rearm();
        self.refresh_status();
        true
    }

    /// After replay: act again on every step that is still pending.
    fn rearm(&mut self) {
        let mut steps: Vec<Step> = self.steps.keys().copied().collect();
        steps.sort_unstable();
        for step in steps {
            let st = &self.steps[&step];
            if st.resolved {
                continue;
            }
            match st.kind {
                StepKind::Task => {
                    if let Some(t) = &st.task {
                        if t.open {
                            self.effects.push(Effect::Execute(step));
                        } else if let Some(at) = t.retry_at {
                            self.effects
                                .push(Effect::Timer(step, at, TimerPurpose::Retry));
                        }
                    }
                }
                StepKind::Timer => {
                    if let Some(at) = st.timer_at {
                        self.effects
                            .push(Effect::Timer(step, at, TimerPurpose::Sleep));
                    }
                }
                StepKind::Gate => {
                    if let Some(at) = st.timer_at {
                        self.effects
                            .push(Effect::Timer(step, at, TimerPurpose::GateTimeout));
                    }
                }
                StepKind::Child => self.effects.push(Effect::CheckChild(step)),
                _ => {}
            }
        }
    }

    // ---- the loop --------------------------------------------------------------------------

    async fn main_loop(&mut self) {
        loop {
            self.poll_workflow();
            if let Err(e) = self.flush().await {
                self.fail_stop(e);
                return;
            }
            let idle = self.terminal || self.blocked.is_some() || self.can_evict();
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
                result = poll_local(&mut self.local), if self.local.is_some() => {
                    if let Some(LocalAttempt { step, attempt, .. }) = self.local.take() {
                        self.handle_event(Event::TaskDone { step, attempt, result });
                    }
                }
                () = self.wake.notify.notified() => {}
            }
            while let Ok(ev) = self.rx.try_recv() {
                self.poll_workflow();
                self.handle_event(ev);
            }
        }
    }

    /// Leaves memory unless an event is waiting; the check and the removal happen under the
    /// engine's lock of in-memory runs, so no event can slip in between.
    fn try_exit(&mut self) -> Option<Event> {
        let mut active = self.engine.active();
        match self.rx.try_recv() {
            Ok(ev) => Some(ev),
            Err(_) => {
                active.remove(&self.run_id);
                None
            }
        }
    }

    fn exit_now(&mut self) {
        self.engine.active().remove(&self.run_id);
    }

    /// A commit failed: nothing of it is durable. Drop all in-memory state, tell waiting
    /// callers, and recover the run from its journal shortly.
    fn fail_stop(&mut self, error: StoreError) {
        self.abort_attempts();
        {
            let mut active = self.engine.active();
            active.remove(&self.run_id);
        }
        while let Ok(ev) = self.rx.try_recv() {
            self.reply_error(ev, &error);
        }
        // Callers waiting on the failed commit learn why; nothing of it was written.
        for reply in std::mem::take(&mut self.replies) {
            match reply {
                Reply::Answer(tx, _) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
                Reply::Signal(tx) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
                Reply::Cancel(tx, _) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
                Reply::Start(tx) => drop(tx.send(Err(StartError::Store(error.clone())))),
            }
        }
        let existed = self.start.is_some() && self.next_seq > 0 && !self.is_fresh_failure();
        if existed {
            let engine = self.engine.clone();
            let run = self.run_id;
            tokio::spawn(async move {
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                engine.recover(run);
            });
        }
    }

    fn is_fresh_failure(&self) -> bool {
        // A fresh run whose StartRecord never committed does not exist.
        matches!(self.engine.store.run_summary(self.run_id), Ok(None))
    }

    fn reply_error(&self, ev: Event, error: &StoreError) {
        match ev {
            Event::Answer { reply, .. } => {
                let _ = reply.send(Err(DeliverError::Store(error.clone())));
            }
            Event::Signal { reply, .. } => {
                let _ = reply.send(Err(DeliverError::Store(error.clone())));
            }
            Event::Cancel { reply, .. } => {
                let _ = reply.send(Err(DeliverError::Store(error.clone())));
            }
            _ => {}
        }
    }

    fn can_evict(&self) -> bool {
        if self.future.is_none() || !self.executing.is_empty() || !self.effects.is_empty() {
            return false;
        }
        if self.wake.woken.load(Ordering::Acquire) {
            return false;
        }
        let horizon = now_ms() + self.engine.config.evict_after.as_millis() as u64;
        let mut pending = 0;
        for st in self.pending.iter().filter_map(|s| self.steps.get(s)) {
            match st.kind {
                StepKind::Task => {
                    let t = st.task.as_ref();
                    if t.is_none_or(|t| t.open || t.retry_at.is_none_or(|at| at <= horizon)) {
                        return false;
                    }
                }
                StepKind::Timer if st.timer_at.is_none_or(|at| at <= horizon) => return false,
                StepKind::Gate if st.timer_at.is_some_and(|at| at <= horizon) => return false,
                StepKind::SideEffect | StepKind::State | StepKind::Var => continue,
                _ => {}
            }
            pending += 1;
        }
        pending > 0
    }

    // ---- polling and commands --------------------------------------------------------------

    fn poll_workflow(&mut self) {
        while self.blocked.is_none() && self.wake.woken.swap(false, Ordering::AcqRel) {
            let Some(fut) = self.future.as_mut() else {
                return;
            };
            let mut cx = TaskCx::from_waker(&self.waker);
            let polled = fut.as_mut().poll(&mut cx);
            self.process_commands();
            if let Poll::Ready(result) = polled {
                self.future = None;
                if self.blocked.is_some() {
                    return;
                }
                if self.replaying {
                    // The rest of the journal must still agree with the code (a record of a
                    // step the code no longer reaches blocks the run); finish after it.
                    self.replayed_result = Some(result);
                } else {
                    self.finish(result);
                }
                return;
            }
        }
    }

    fn process_commands(&mut self) {
        // Swapped with a kept buffer rather than taken: one allocation per run, not per step.
        let mut commands = std::mem::take(&mut self.command_buf);
        std::mem::swap(&mut lock(&self.shared).commands, &mut commands);
        for c in commands.drain(..) {
            if self.blocked.is_some() {
                break;
            }
            // Each step is matched once; its journaled first record is not needed after.
            let (index, last) = {
                let mut s = lock(&self.shared);
                let i = s.journaled.remove(&c.step);
                let last = i.is_some() && s.journaled.is_empty();
                if last {
                    // The last journaled step was requested: the journal can go.
                    s.journal = None;
                }
                (i, last)
            };
            let journal = index.and(self.journal.take());
            match journal.as_ref().zip(index) {
                Some((journal, i)) => self.command_replayed(c, &journal[i].record),
                None if self.replaying => self.deferred.push(c),
                None => self.command_live(c),
            }
            if !last && journal.is_some() {
                self.journal = journal;
            }
        }
        self.command_buf = commands;
    }

    /// The state of a newly requested step; takes the command's details. A step that is one
    /// record (a side effect, a variable, a state) hands that record back.
    fn new_step(&mut self, c: Command) -> (StepState, Option<Record>) {
        let mut own_record = None;
        let mut st = StepState {
            kind: c.kind,
            name: c.name,
            resolved: false,
            task: None,
            timer_at: None,
            gate: None,
            timed_out: false,
            child: None,
        };
        match c.detail {
            CommandDetail::Task {
                task,
                input,
                options,
                registration,
            } => {
                let options = options.unwrap_or_else(|| {
                    self.engine
                        .tasks
                        .get(&task)
                        .or(registration.as_ref())
                        .map(|r| r.options.clone())
                        .unwrap_or_default()
                });
                st.task = Some(Box::new(TaskState {
                    task,
                    registration,
                    input,
                    options,
                    attempt: 0,
                    open: false,
                    retry_at: None,
                }));
            }
            CommandDetail::Timer { fire_at_ms } => st.timer_at = Some(fire_at_ms),
            CommandDetail::Gate { spec } => st.gate = Some(Box::new(spec)),
            CommandDetail::Child {
                request,
                child_run_id,
            } => {
                st.child = Some((child_run_id, request));
            }
            CommandDetail::Signal => st.resolved = true,
            CommandDetail::Record { record } => {
                st.resolved = true;
                own_record = Some(record);
            }
        }
        if c.kind == StepKind::Signal {
            st.resolved = false;
        }
        if c.kind == StepKind::Gate {
            self.open_gates += 1;
        }
        if !st.resolved {
            self.pending.insert(c.step);
        }
        (st, own_record)
    }

    fn command_replayed(&mut self, c: Command, record: &Record) {
        let matches = identity(record).is_some_and(|(kind, name, hash)| {
            kind == c.kind && name == c.name && hash.is_none_or(|h| h == c.hash)
        });
        if !matches {
            let (jk, jn) = identity(record)
                .map(|(k, n, _)| (kind_name(k), n))
                .unwrap_or(("record", record.type_name()));
            let hash_note = match identity(record) {
                Some((k, n, Some(h))) if k == c.kind && n == c.name && h != c.hash => {
                    " with a different input"
                }
                _ => "",
            };
            self.block(format!(
                "[MAG-ND001] non-determinism in run {} at step {}: the journal has {jk} `{jn}` \
                 but the code now requests {} `{}`{hash_note}. The workflow code changed since \
                 the run started: restore the code the run started with, or cancel the run",
                self.run_id,
                c.step,
                kind_name(c.kind),
                c.name
            ));
            return;
        }
        let step = c.step;
        let (st, _) = self.new_step(c);
        self.steps.insert(step, st);
    }

    fn command_live(&mut self, c: Command) {
        let step = c.step;
        // The step's records and effects, taken from the command before the step takes it.
        let mut records = Vec::with_capacity(1);
        let mut effects = Vec::with_capacity(1);
        match &c.detail {
            CommandDetail::Task { task, input, .. } => {
                records.push(Record::TaskStarted {
                    step,
                    attempt: 1,
                    task: task.clone(),
                    name: c.name.clone(),
                    input_hash: c.hash,
                    input: input.clone(),
                });
                effects.push(Effect::Execute(step));
            }
            CommandDetail::Timer { fire_at_ms } => {
                records.push(Record::TimerSet {
                    step,
                    fire_at_ms: *fire_at_ms,
                    purpose: c.name.clone(),
                });
                effects.push(Effect::Timer(step, *fire_at_ms, TimerPurpose::Sleep));
            }
            CommandDetail::Gate { spec } => {
                records.push(Record::GateOpened {
                    step,
                    gate: Box::new(spec.clone()),
                });
                if let Some(t) = spec.timeout_ms {
                    let at = now_ms() + t;
                    records.push(Record::TimerSet {
                        step,
                        fire_at_ms: at,
                        purpose: TimerPurpose::GateTimeout.as_str().into(),
                    });
                    effects.push(Effect::Timer(step, at, TimerPurpose::GateTimeout));
                }
            }
            CommandDetail::Signal => {
                records.push(Record::SignalAwaited {
                    step,
                    name: c.name.clone(),
                });
                if let Some(i) = self.signals.iter().position(|(_, n, _)| *n == c.name) {
                    let signal_seq = self.signals[i].0;
                    records.push(Record::SignalDelivered { step, signal_seq });
                }
            }
            CommandDetail::Child {
                request,
                child_run_id,
            } => {
                records.push(Record::ChildStarted {
                    step,
                    child_run_id: *child_run_id,
                    workflow: request.workflow.clone(),
                    input_hash: c.hash,
                });
                effects.push(Effect::StartChild(step));
            }
            CommandDetail::Record { .. } => {}
        }
        let (st, own_record) = self.new_step(c);
        self.steps.insert(step, st);
        records.extend(own_record);
        for record in records {
            self.append_apply(record);
        }
        self.effects.extend(effects);
    }

    // ---- records ---------------------------------------------------------------------------

    fn append(&mut self, record: Record) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let at_ms = now_ms();
        let mut bytes = Vec::with_capacity(64);
        codec::encode(&record, at_ms, &mut bytes);
        self.batch.records.push(EncodedRecord {
            run_id: self.run_id,
            seq,
            bytes,
        });
        // Kept (not cloned) until the commit, then published if anyone listens by then: a
        // subscriber that joins while the batch is open still sees all of it.
        self.new_entries.push(Entry { seq, at_ms, record });
        seq
    }

    fn append_apply(&mut self, record: Record) {
        let seq = self.next_seq;
        self.apply(seq, &record);
        self.append(record);
    }

    fn resolve(&mut self, step: Step, seq: u64, resolution: Resolution) {
        let Some(st) = self.steps.get_mut(&step) else {
            return;
        };
        if st.resolved {
            return;
        }
        st.resolved = true;
        // A resolved task's input is no longer needed (no more attempts).
        st.task = None;
        self.pending.remove(&step);
        if st.kind == StepKind::Gate {
            self.open_gates = self.open_gates.saturating_sub(1);
        }
        let mut s = lock(&self.shared);
        if s.dropped.contains(&step) {
            return;
        }
        s.resolved.insert(step, (seq, resolution));
        if let Some(w) = s.wakers.remove(&step) {
            drop(s);
            w.wake();
        }
    }

    /// Applies a record to the run's state: the one place where records take effect, for live
    /// appends and for replay alike.
    fn apply(&mut self, seq: u64, record: &Record) {
        if let Some(step) = step_of(record)
            && !self.steps.contains_key(&step)
            && !matches!(record, Record::Ignored { .. })
        {
            let what = identity(record)
                .map(|(k, n, _)| format!("{} `{n}`", kind_name(k)))
                .unwrap_or_else(|| record.type_name().to_string());
            self.block(format!(
                "[MAG-ND002] non-determinism in run {}: the journal has step {step} ({what}) \
                     but the code no longer requests it. The workflow code changed since the run \
                     started: restore the code the run started with, or cancel the run",
                self.run_id
            ));
            return;
        }
        match record {
            Record::TaskStarted { step, attempt, .. } => {
                if let Some(t) = self.steps.get_mut(step).and_then(|s| s.task.as_mut()) {
                    t.attempt = *attempt;
                    t.open = true;
                    t.retry_at = None;
                }
            }
            Record::TaskResult {
                step,
                outcome,
                output,
                error,
                is_final,
                ..
            } => {
                if let Some(t) = self.steps.get_mut(step).and_then(|s| s.task.as_mut()) {
                    t.open = false;
                }
                if *is_final {
                    let result = if outcome == "success" {
                        Ok(output.clone())
                    } else {
                        Err(task_error_from_record(outcome, output, error))
                    };
                    self.resolve(*step, seq, Resolution::Task(result));
                }
            }
            Record::TimerSet {
                step,
                fire_at_ms,
                purpose,
            } => {
                if let Some(st) = self.steps.get_mut(step) {
                    if purpose == TimerPurpose::Retry.as_str() {
                        if let Some(t) = st.task.as_mut() {
                            t.retry_at = Some(*fire_at_ms);
                        }
                    } else {
                        st.timer_at = Some(*fire_at_ms);
                    }
                }
            }
            Record::TimerFired { step } => {
                let Some(st) = self.steps.get_mut(step) else {
                    return;
                };
                match st.kind {
                    StepKind::Timer => self.resolve(*step, seq, Resolution::Timer),
                    StepKind::Gate => {
                        st.timed_out = true;
                        self.resolve(*step, seq, Resolution::Gate(GateOutcome::TimedOut));
                    }
                    StepKind::Task => {
                        if let Some(t) = st.task.as_mut() {
                            t.retry_at = None;
                        }
                    }
                    _ => {}
                }
            }
            Record::GateAnswered { step, answer } => {
                self.resolve(
                    *step,
                    seq,
                    Resolution::Gate(GateOutcome::Answered(answer.clone())),
                );
            }
            Record::SignalReceived {
                name,
                payload,
                step,
            } => match step {
                Some(s) => self.resolve(*s, seq, Resolution::Signal(payload.clone())),
                None => self.signals.push_back((seq, name.clone(), payload.clone())),
            },
            Record::SignalDelivered { step, signal_seq } => {
                if let Some(i) = self.signals.iter().position(|(s, _, _)| s == signal_seq) {
                    let (_, _, payload) = self.signals.remove(i).unwrap_or_default();
                    self.resolve(*step, seq, Resolution::Signal(payload));
                }
            }
            Record::ChildFinished {
                step,
                status,
                result,
                reason,
            } => {
                let run_id = self
                    .steps
                    .get(step)
                    .and_then(|s| s.child.as_ref().map(|c| c.0))
                    .unwrap_or_default();
                let outcome = ChildOutcome {
                    run_id,
                    status: *status,
                    result: result.clone(),
                    reason: reason.clone(),
                };
                self.resolve(*step, seq, Resolution::Child(outcome));
            }
            Record::CancelRequested { reason } => {
                self.cancel_requested = true;
                lock(&self.shared).cancelled = Some(reason.clone());
                let pending: Vec<Step> = self.pending.iter().copied().collect();
                for step in pending {
                    self.resolve(step, seq, Resolution::Cancelled(reason.clone()));
                }
            }
            Record::Status { status, reason } => {
                self.last_status_record = Some((*status, reason.clone()));
            }
            _ => {}
        }
    }

    fn block(&mut self, reason: String) {
        tracing::error!(run = %self.run_id, %reason, "run blocked");
        self.blocked = Some(reason.clone());
        self.future = None;
        self.deferred.clear();
        let already = matches!(&self.last_status_record,
            Some((RunStatus::Blocked, Some(r))) if *r == reason);
        if !already {
            // During replay `next_seq` is already past the journal's end.
            self.append(Record::Status {
                status: RunStatus::Blocked,
                reason: Some(reason.clone()),
            });
        }
        self.last_status_record = Some((RunStatus::Blocked, Some(reason)));
        self.set_status(RunStatus::Blocked);
    }

    fn finish(&mut self, result: Result<Value, WorkflowError>) {
        let result_state = lock(&self.shared).result_state.clone();
        let (status, reason) = match result {
            Ok(v) => {
                // A run that returns nothing from a named state (a YAML terminal without
                // `result:`) writes no ResultRecord, as the reference says.
                if !v.is_null() || result_state.is_none() {
                    self.append(Record::Result {
                        state: result_state,
                        result: v,
                    });
                }
                (RunStatus::Done, None)
            }
            Err(e) => {
                if let Some(r) = e.result {
                    self.append(Record::Result {
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
        self.append(Record::Status { status, reason });
        self.terminal = true;
        self.set_status(status);
        self.abort_attempts();
    }

    fn set_status(&mut self, status: RunStatus) {
        if let Some(s) = self.summary.as_mut()
            && s.status != status
        {
            s.status = status;
            s.updated_ms = now_ms();
            self.summary_dirty = true;
        }
    }

    fn refresh_status(&mut self) {
        if self.terminal || self.blocked.is_some() {
            return;
        }
        self.set_status(if self.open_gates > 0 {
            RunStatus::Waiting
        } else {
            RunStatus::Running
        });
    }

    // ---- events from the world -------------------------------------------------------------

    fn handle_event(&mut self, ev: Event) {
        if self.blocked.is_some() {
            self.handle_event_blocked(ev);
            return;
        }
        match ev {
            Event::TaskDone {
                step,
                attempt,
                result,
            } => {
                self.executing.remove(&step);
                let Some(st) = self.steps.get(&step) else {
                    return;
                };
                let current = !st.resolved
                    && !self.terminal
                    && st
                        .task
                        .as_ref()
                        .is_some_and(|t| t.attempt == attempt && t.open);
                if current {
                    self.task_result(step, attempt, result);
                } else {
                    self.append(Record::Ignored {
                        step,
                        what: "task result".into(),
                    });
                }
            }
            Event::TimerFired { step, purpose } => self.timer_fired(step, purpose),
            Event::Answer {
                step,
                answer,
                reply,
            } => {
                let Some(st) = self.steps.get(&step).filter(|s| s.kind == StepKind::Gate) else {
                    let id = crate::view::inbox_item_id(self.run_id, step);
                    let _ = reply.send(Err(DeliverError::ItemNotFound(id)));
                    return;
                };
                if let Some(gate) = &st.gate
                    && let Err(e) = check_answer(gate, &answer)
                {
                    let _ = reply.send(Err(e));
                    return;
                }
                if st.resolved || self.terminal {
                    self.append(Record::Ignored {
                        step,
                        what: "gate answer".into(),
                    });
                    self.replies.push(Reply::Answer(reply, AnswerAck::Ignored));
                } else {
                    self.append_apply(Record::GateAnswered { step, answer });
                    self.replies.push(Reply::Answer(reply, AnswerAck::Applied));
                }
            }
            Event::Signal {
                name,
                payload,
                reply,
            } => {
                if self.terminal {
                    let _ = reply.send(Ok(()));
                    return;
                }
                let dropped = lock(&self.shared).dropped.clone();
                let waiting = self.pending.iter().copied().find(|k| {
                    !dropped.contains(k)
                        && self
                            .steps
                            .get(k)
                            .is_some_and(|s| s.kind == StepKind::Signal && s.name == name)
                });
                self.append_apply(Record::SignalReceived {
                    name,
                    payload,
                    step: waiting,
                });
                self.replies.push(Reply::Signal(reply));
            }
            Event::ChildDone { step, outcome } => {
                let pending = self.steps.get(&step).is_some_and(|s| !s.resolved);
                if pending && !self.terminal {
                    self.append_apply(Record::ChildFinished {
                        step,
                        status: outcome.status,
                        result: outcome.result,
                        reason: outcome.reason,
                    });
                }
            }
            Event::Cancel { reason, reply } => {
                let ack = if self.terminal {
                    CancelAck::AlreadyFinished
                } else if self.cancel_requested {
                    CancelAck::AlreadyRequested
                } else {
                    self.abort_attempts();
                    self.append_apply(Record::CancelRequested { reason });
                    CancelAck::Requested
                };
                self.replies.push(Reply::Cancel(reply, ack));
            }
        }
        self.refresh_status();
    }

    fn handle_event_blocked(&mut self, ev: Event) {
        let reason = self.blocked.clone().unwrap_or_default();
        match ev {
            Event::Answer { reply, .. } => {
                let _ = reply.send(Err(DeliverError::Blocked(self.run_id, reason)));
            }
            Event::Signal { reply, .. } => {
                let _ = reply.send(Err(DeliverError::Blocked(self.run_id, reason)));
            }
            Event::Cancel { reason: why, reply } => {
                // A blocked run cannot run its code, so it cannot clean up: cancel it outright.
                self.append(Record::CancelRequested {
                    reason: why.clone(),
                });
                self.append(Record::Status {
                    status: RunStatus::Cancelled,
                    reason: Some(why),
                });
                self.terminal = true;
                self.blocked = None;
                self.set_status(RunStatus::Cancelled);
                self.replies
                    .push(Reply::Cancel(reply, CancelAck::Requested));
            }
            _ => {}
        }
    }

    fn task_result(&mut self, step: Step, attempt: u32, result: Result<Value, TaskError>) {
        match result {
            Ok(output) => self.append_apply(Record::TaskResult {
                step,
                attempt,
                outcome: "success".into(),
                output,
                error: None,
                is_final: true,
            }),
            Err(e) => {
                let policy = self
                    .steps
                    .get(&step)
                    .and_then(|s| s.task.as_ref())
                    .map(|t| t.options.retry.clone());
                // Nobody awaits a dropped step (a select's loser): do not retry it.
                let dropped = lock(&self.shared).dropped.contains(&step);
                let retry =
                    !dropped && policy.as_ref().is_some_and(|p| p.should_retry(attempt, &e));
                self.append_apply(Record::TaskResult {
                    step,
                    attempt,
                    outcome: e.kind,
                    output: e.output,
                    error: Some(e.message),
                    is_final: !retry,
                });
                if let (true, Some(p)) = (retry, policy) {
                    let at = now_ms() + p.backoff_after(attempt).as_millis() as u64;
                    self.append_apply(Record::TimerSet {
                        step,
                        fire_at_ms: at,
                        purpose: TimerPurpose::Retry.as_str().into(),
                    });
                    self.effects
                        .push(Effect::Timer(step, at, TimerPurpose::Retry));
                }
            }
        }
    }

    fn timer_fired(&mut self, step: Step, purpose: TimerPurpose) {
        if self.terminal {
            return;
        }
        let Some(st) = self.steps.get(&step) else {
            return;
        };
        match (st.kind, purpose) {
            (StepKind::Timer, TimerPurpose::Sleep) if !st.resolved => {
                self.append_apply(Record::TimerFired { step });
            }
            (StepKind::Gate, TimerPurpose::GateTimeout) => {
                if !st.resolved {
                    self.append_apply(Record::TimerFired { step });
                } else if !st.timed_out {
                    self.append(Record::Ignored {
                        step,
                        what: "gate timeout".into(),
                    });
                }
            }
            (StepKind::Task, TimerPurpose::Retry) => {
                let Some(t) = st.task.as_ref() else { return };
                if st.resolved || t.retry_at.is_none() {
                    return;
                }
                let record = Record::TaskStarted {
                    step,
                    attempt: t.attempt + 1,
                    task: t.task.clone(),
                    name: st.name.clone(),
                    input_hash: self.task_hash(step),
                    input: t.input.clone(),
                };
                self.append_apply(Record::TimerFired { step });
                self.append_apply(record);
                self.effects.push(Effect::Execute(step));
            }
            _ => {}
        }
    }

    fn task_hash(&self, step: Step) -> u64 {
        self.steps
            .get(&step)
            .and_then(|s| s.task.as_ref())
            .map(|t| input_hash(&t.input) ^ input_hash(&Value::String(t.task.clone())))
            .unwrap_or(0)
    }

    // ---- commit and act --------------------------------------------------------------------

    async fn flush(&mut self) -> Result<(), StoreError> {
        self.refresh_status();
        if self.summary_dirty
            && let Some(s) = &self.summary
        {
            self.batch.summaries.push(s.clone());
        }
        let status_changed = self.summary_dirty;
        self.summary_dirty = false;
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.engine.writer.append(batch).await?;
        }
        // Durable from here on: act.
        if self.engine.journal_tx.receiver_count() == 0 {
            self.new_entries.clear();
        } else if !self.new_entries.is_empty() {
            let entries = Arc::new(std::mem::take(&mut self.new_entries));
            let _ = self.engine.journal_tx.send(JournalUpdate {
                run_id: self.run_id,
                entries,
            });
        }
        if status_changed && let Some(s) = &self.summary {
            let _ = self.engine.status_tx.send(RunUpdate {
                run_id: self.run_id,
                status: s.status,
            });
            if s.status.is_terminal() {
                self.notify_parent(s.status);
            }
        }
        for reply in std::mem::take(&mut self.replies) {
            match reply {
                Reply::Answer(tx, ack) => drop(tx.send(Ok(ack))),
                Reply::Signal(tx) => drop(tx.send(Ok(()))),
                Reply::Cancel(tx, ack) => drop(tx.send(Ok(ack))),
                Reply::Start(tx) => drop(tx.send(Ok(()))),
            }
        }
        for effect in std::mem::take(&mut self.effects) {
            self.act(effect);
        }
        Ok(())
    }

    fn notify_parent(&self, status: RunStatus) {
        let Some(ParentRef { run_id, step, .. }) =
            self.start.as_ref().and_then(|s| s.parent.clone())
        else {
            return;
        };
        let (result, reason) = match self.engine.store.read_journal(self.run_id) {
            Ok(entries) => {
                let summary = self.summary.clone();
                match summary {
                    Some(s) => {
                        let v = crate::view::RunView::project(&entries, &s);
                        (v.result.unwrap_or(Value::Null), v.reason)
                    }
                    None => (Value::Null, None),
                }
            }
            Err(_) => (Value::Null, None),
        };
        let outcome = ChildOutcome {
            run_id: self.run_id,
            status,
            result,
            reason,
        };
        self.engine
            .deliver(run_id, Event::ChildDone { step, outcome });
    }

    fn act(&mut self, effect: Effect) {
        match effect {
            Effect::Execute(step) => self.execute(step),
            Effect::Timer(step, at_ms, purpose) => {
                self.engine.timers.register(Registration {
                    run: self.run_id,
                    step,
                    purpose,
                    at_ms,
                });
            }
            Effect::StartChild(step) => self.start_child(step),
            Effect::CheckChild(step) => self.check_child(step),
        }
    }

    fn execute(&mut self, step: Step) {
        if self.executing.contains_key(&step) {
            return;
        }
        let Some(st) = self.steps.get(&step) else {
            return;
        };
        let Some(t) = st.task.as_ref() else { return };
        let registration = self
            .engine
            .tasks
            .get(&t.task)
            .or(t.registration.as_ref())
            .cloned();
        let tctx = TaskContext::new(self.run_id, step, t.attempt, st.name.clone())
            .with_data(self.engine.data.clone());
        let input = t.input.clone();
        let timeout = t.options.timeout;
        let task_name = t.task.clone();
        let attempt = t.attempt;
        let span = tracing::info_span!(
            "task",
            run = %self.run_id,
            step,
            attempt,
            task = %task_name,
            name = %st.name
        );
        let attempt_future = async move {
            let result = match registration {
                None => Err(TaskError::terminal(format!(
                    "[MAG-TK001] unknown task `{task_name}`: register it with EngineBuilder::task"
                ))),
                Some(reg) => {
                    let body = std::panic::AssertUnwindSafe((reg.body)(input, tctx)).catch_unwind();
                    let outcome = match timeout {
                        Some(t) => match tokio::time::timeout(t, body).await {
                            Ok(r) => r,
                            Err(_) => Ok(Err(TaskError::retryable(format!(
                                "attempt timed out after {} ms",
                                t.as_millis()
                            ))
                            .with_kind(TaskError::TIMEOUT))),
                        },
                        None => body.await,
                    };
                    outcome.unwrap_or_else(|panic| {
                        let msg = panic
                            .downcast_ref::<&str>()
                            .map(|s| s.to_string())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_else(|| "panic".into());
                        Err(TaskError::retryable(format!("task panicked: {msg}")))
                    })
                }
            };
            if let Err(e) = &result {
                tracing::debug!(kind = %e.kind, error = %e.message, "task attempt failed");
            }
            result
        };
        let attempt_future = tracing::Instrument::instrument(attempt_future, span);
        // The run's only running attempt is polled by the driver itself: a step then costs no
        // task spawn and no cross-task wake-up, which on a multi-threaded runtime also spares
        // waking a second worker to steal work. Further concurrent attempts (a fan-out) get
        // their own tasks so that they run in parallel.
        if self.local.is_none() && self.executing.is_empty() {
            self.local = Some(LocalAttempt {
                step,
                attempt,
                future: Box::pin(attempt_future),
            });
            self.executing.insert(step, Running::Local);
            return;
        }
        let engine = self.engine.clone();
        let run = self.run_id;
        let handle = tokio::spawn(async move {
            let result = attempt_future.await;
            engine.deliver(
                run,
                Event::TaskDone {
                    step,
                    attempt,
                    result,
                },
            );
        });
        self.executing
            .insert(step, Running::Spawned(handle.abort_handle()));
    }

    /// Stops every running attempt (spawned ones at their next await point).
    fn abort_attempts(&mut self) {
        for running in self.executing.values() {
            if let Running::Spawned(h) = running {
                h.abort();
            }
        }
        self.executing.clear();
        self.local = None;
    }

    fn child_start_request(&self, step: Step) -> Option<super::StartRequest> {
        let (child_id, req) = self.steps.get(&step)?.child.clone()?;
        let start = self.start.as_ref()?;
        Some(super::StartRequest {
            workflow: req.workflow.clone(),
            frontend: req.frontend.clone(),
            version: if req.version.is_empty() && req.frontend == "code" {
                None
            } else {
                Some(req.version.clone())
            },
            definition: req.definition.clone(),
            input: req.input.clone(),
            idempotency_key: None,
            started_by: start.started_by.clone(),
            scope: req.scope.clone().unwrap_or_else(|| start.scope.clone()),
            parent: Some(ParentRef {
                run_id: self.run_id,
                step,
                state: req.parent_state.clone(),
            }),
            run_id: Some(child_id),
        })
    }

    fn start_child(&mut self, step: Step) {
        let Some(req) = self.child_start_request(step) else {
            return;
        };
        let child_id = req.run_id.unwrap_or_default();
        let engine = self.engine.clone();
        let run = self.run_id;
        tokio::spawn(async move {
            if let Err(e) = engine.start(req).await {
                let outcome = ChildOutcome {
                    run_id: child_id,
                    status: RunStatus::Failed,
                    result: Value::Null,
                    reason: Some(e.to_string()),
                };
                engine.deliver(run, Event::ChildDone { step, outcome });
            }
        });
    }

    fn check_child(&mut self, step: Step) {
        let Some((child_id, _)) = self.steps.get(&step).and_then(|s| s.child.clone()) else {
            return;
        };
        match self.engine.store.run_summary(child_id) {
            Ok(None) => self.start_child(step),
            Ok(Some(s)) if s.status.is_terminal() => {
                let (result, reason) = match self.engine.store.read_journal(child_id) {
                    Ok(entries) => {
                        let v = crate::view::RunView::project(&entries, &s);
                        (v.result.unwrap_or(Value::Null), v.reason)
                    }
                    Err(_) => (Value::Null, None),
                };
                let outcome = ChildOutcome {
                    run_id: child_id,
                    status: s.status,
                    result,
                    reason,
                };
                self.engine
                    .deliver(self.run_id, Event::ChildDone { step, outcome });
            }
            Ok(Some(_)) => self.engine.recover(child_id),
            Err(e) => tracing::error!(run = %self.run_id, error = %e, "cannot read child run"),
        }
    }
}
