//! What a command reads and drives runs through: the engine of a store this process owns, or
//! the process that owns it (over its control socket, see [`super::control`]).
//!
//! The commands are written once against [`Backend`]; both sides give the same values, so a
//! command prints the same bytes and exits with the same code whichever process owns the
//! store. The owner answers its clients by calling [`Backend::Local`] itself.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use magrathea_core::{
    AnswerAck, CancelAck, DeliverError, Engine, Entry, GateAnswer, InboxFilter, InboxItem,
    JournalUpdate, Record, RunError, RunFilter, RunId, RunStatus, RunView, StartRequest,
};
use magrathea_server::http::runs::RunDto;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};

use super::control::client::{OwnerClient, RemoteFollower};
use super::pending::Pending;
use super::store_wait::{Unread, store_failing};

/// The store a command works on.
#[derive(Debug)]
pub(crate) enum Backend {
    /// This process owns the store.
    Local(Engine),
    /// Another process owns it; this one is its client.
    Remote(OwnerClient),
}

/// How a gate answer was taken, as `inbox answer` reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub(crate) enum Answered {
    /// The answer was journaled.
    Applied,
    /// The gate had already completed; the answer is journaled as ignored.
    Ignored,
    /// The answer does not fit the gate; nothing was recorded.
    Invalid {
        /// Why.
        message: String,
    },
    /// No such item.
    NotFound,
    /// The run is blocked; nothing was recorded.
    Blocked {
        /// The error as the engine words it.
        message: String,
    },
}

/// How a cancellation was taken, as `cancel` reports it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Cancelled {
    /// The cancellation was journaled and delivered to the run.
    Requested,
    /// Cancellation had been requested before.
    AlreadyRequested,
    /// The run had already ended.
    AlreadyFinished,
}

/// How a pause or resume was taken, as `runs pause|resume` report it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub(crate) enum Controlled {
    /// The run is paused now.
    Paused,
    /// The run was paused already.
    AlreadyPaused,
    /// The run is resumed.
    Resumed,
    /// The run's state does not allow it (ended, not paused, blocked); nothing was recorded.
    Refused {
        /// The error as the engine words it.
        message: String,
    },
}

/// A pause or a resume.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub(crate) enum ControlOp {
    /// Pause, with an optional reason.
    Pause {
        /// Why.
        reason: Option<String>,
    },
    /// Resume.
    Resume,
}

impl Backend {
    /// Pauses or resumes `run` on behalf of `by`.
    ///
    /// This process drives a run it resumes: a local resume hands back a follower of it, for
    /// the command to drive it until it settles (through an owner, the owner drives it).
    pub(crate) async fn control(
        &self,
        run: RunId,
        op: ControlOp,
        by: &str,
    ) -> anyhow::Result<(Controlled, Option<Follower>)> {
        match self {
            Self::Local(engine) => {
                let updates = engine.subscribe_journal();
                let since = (next_seq(engine, run), super::pending::now_ms());
                let done = match op {
                    ControlOp::Pause { reason } => engine.pause(run, by, reason.as_deref()).await,
                    ControlOp::Resume => engine.unpause(run, by).await,
                };
                Ok(match done {
                    Ok(magrathea_core::ControlAck::Paused) => (Controlled::Paused, None),
                    Ok(magrathea_core::ControlAck::AlreadyPaused) => {
                        (Controlled::AlreadyPaused, None)
                    }
                    Ok(magrathea_core::ControlAck::Resumed) => (
                        Controlled::Resumed,
                        Some(Follower::local(engine, run, updates, since)),
                    ),
                    Err(
                        e @ (DeliverError::NotPausable(..)
                        | DeliverError::NotPaused(..)
                        | DeliverError::Blocked(..)
                        | DeliverError::RunNotFound(_)),
                    ) => (
                        Controlled::Refused {
                            message: e.to_string(),
                        },
                        None,
                    ),
                    Err(e) => return Err(e.into()),
                })
            }
            Self::Remote(owner) => Ok((owner.control(run, op, by).await?, None)),
        }
    }

    /// Runs of `scope` and runs of no scope (a Rust application's, which belong to no
    /// project), optionally of one workflow, newest first, at most `limit` (0: all).
    pub(crate) async fn list_runs(
        &self,
        workflow: Option<String>,
        scope: String,
        limit: usize,
        statuses: &[RunStatus],
    ) -> anyhow::Result<Vec<RunDto>> {
        let unscoped = if scope.is_empty() {
            Vec::new()
        } else {
            self.runs_of(workflow.clone(), String::new(), limit, statuses)
                .await?
        };
        let mut views = self.runs_of(workflow, scope, limit, statuses).await?;
        if !unscoped.is_empty() {
            views.extend(unscoped);
            views.sort_by(|a, b| {
                (b.run.created_at, b.run.workflow_run_id)
                    .cmp(&(a.run.created_at, a.run.workflow_run_id))
            });
            if limit > 0 {
                views.truncate(limit);
            }
        }
        Ok(views)
    }

    /// Runs of exactly `scope`, as [`Self::list_runs`] lists them (and an owner answers its
    /// clients, which merge them themselves).
    pub(crate) async fn runs_of(
        &self,
        workflow: Option<String>,
        scope: String,
        limit: usize,
        statuses: &[RunStatus],
    ) -> anyhow::Result<Vec<RunDto>> {
        match self {
            Self::Local(engine) => {
                // With a status filter the store's limit would count runs filtered out.
                let filter = RunFilter {
                    workflow,
                    scope: Some(scope),
                    limit: if statuses.is_empty() { limit } else { 0 },
                    ..RunFilter::default()
                };
                let mut views = Vec::new();
                for summary in engine.list_runs(&filter)? {
                    if !statuses.is_empty() && !statuses.contains(&summary.status) {
                        continue;
                    }
                    views.push(RunDto::load(engine, summary.run_id)?);
                    if views.len() == limit {
                        break;
                    }
                }
                Ok(views)
            }
            Self::Remote(owner) => {
                owner
                    .list_runs(workflow, scope, limit, statuses.to_vec())
                    .await
            }
        }
    }

    /// The run, or `None` when the store has no such run.
    pub(crate) async fn run(&self, run: RunId) -> anyhow::Result<Option<RunDto>> {
        match self {
            Self::Local(engine) => match RunDto::load(engine, run) {
                Ok(dto) => Ok(Some(dto)),
                Err(RunError::NotFound(_)) => Ok(None),
                Err(e) => Err(e.into()),
            },
            Self::Remote(owner) => owner.run(run).await,
        }
    }

    /// The pending inbox items, oldest first; with `scope`, only those of its runs.
    pub(crate) async fn pending(&self, scope: Option<String>) -> anyhow::Result<Vec<InboxItem>> {
        match self {
            Self::Local(engine) => {
                let mut items = engine.inbox(InboxFilter::Pending)?;
                if let Some(scope) = scope {
                    // With the runs of no scope, which a Rust application starts.
                    items.retain(|item| {
                        engine
                            .summary(item.workflow_run_id)
                            .is_ok_and(|s| s.scope.as_str() == scope || s.scope.as_str().is_empty())
                    });
                }
                Ok(items)
            }
            Self::Remote(owner) => owner.pending(scope).await,
        }
    }

    /// The run's journal.
    pub(crate) async fn journal(&self, run: RunId) -> anyhow::Result<Vec<Entry>> {
        match self {
            Self::Local(engine) => Ok(engine.journal(run)?),
            Self::Remote(owner) => owner.journal(run).await,
        }
    }

    /// The inbox item `id` and the scope of its run, or `None` when there is no such item.
    pub(crate) async fn inbox_item(
        &self,
        id: &str,
    ) -> anyhow::Result<Option<(InboxItem, Option<String>)>> {
        match self {
            Self::Local(engine) => match engine.inbox_item(id) {
                Ok(item) => {
                    let scope = engine
                        .summary(item.workflow_run_id)
                        .ok()
                        .map(|s| s.scope.into_string());
                    Ok(Some((item, scope)))
                }
                Err(DeliverError::ItemNotFound(_)) => Ok(None),
                Err(e) => Err(e.into()),
            },
            Self::Remote(owner) => owner.inbox_item(id).await,
        }
    }

    /// Starts the run `request` describes and follows it from its first record.
    pub(crate) async fn start(&self, request: StartRequest) -> anyhow::Result<(RunId, Follower)> {
        match self {
            Self::Local(engine) => {
                // Subscribed before the start, so that no record is missed.
                let updates = engine.subscribe_journal();
                let run = engine.start(request).await?;
                Ok((run, Follower::local(engine, run, updates, (0, 0))))
            }
            Self::Remote(owner) => owner.start(request).await,
        }
    }

    /// Answers the inbox item `id` of `run` and follows the run from the answer on.
    pub(crate) async fn answer(
        &self,
        run: RunId,
        id: &str,
        answer: GateAnswer,
    ) -> anyhow::Result<(Answered, Follower)> {
        match self {
            Self::Local(engine) => {
                let updates = engine.subscribe_journal();
                let since = (next_seq(engine, run), super::pending::now_ms());
                let answered = match engine.answer_gate(id, answer).await {
                    Ok(AnswerAck::Applied) => Answered::Applied,
                    Ok(AnswerAck::Ignored) => Answered::Ignored,
                    Err(DeliverError::InvalidAnswer(message)) => Answered::Invalid { message },
                    Err(DeliverError::ItemNotFound(_)) => Answered::NotFound,
                    Err(e @ DeliverError::Blocked(..)) => Answered::Blocked {
                        message: e.to_string(),
                    },
                    Err(e) => return Err(e.into()),
                };
                Ok((answered, Follower::local(engine, run, updates, since)))
            }
            Self::Remote(owner) => owner.answer(run, id, answer).await,
        }
    }
}

impl Backend {
    /// Requests the cancellation of `run` with `reason` and follows the run from there.
    pub(crate) async fn cancel(
        &self,
        run: RunId,
        reason: &str,
    ) -> anyhow::Result<(Cancelled, Follower)> {
        match self {
            Self::Local(engine) => {
                let updates = engine.subscribe_journal();
                let since = (next_seq(engine, run), super::pending::now_ms());
                let cancelled = match engine.cancel(run, reason).await? {
                    CancelAck::Requested => Cancelled::Requested,
                    CancelAck::AlreadyRequested => Cancelled::AlreadyRequested,
                    CancelAck::AlreadyFinished => Cancelled::AlreadyFinished,
                };
                Ok((cancelled, Follower::local(engine, run, updates, since)))
            }
            Self::Remote(owner) => owner.cancel(run, reason).await,
        }
    }
}

/// What following a run yields, in journal order.
#[derive(Debug)]
pub(crate) enum FollowEvent {
    /// Records committed to the run or one of its sub-runs.
    Update(JournalUpdate),
    /// This many updates went by too fast to be shown.
    Skipped(u64),
    /// The run is terminal, waiting on a gate or blocked; every update came before this.
    Settled(Box<RunView>),
}

/// Follows one run until it settles.
#[derive(Debug)]
pub(crate) enum Follower {
    /// Driven by this process's engine.
    Local(Box<LocalFollower>),
    /// Driven by the store's owner, which streams the events.
    Remote(RemoteFollower),
}

impl Follower {
    /// Follows `run` on this process's engine; `since` is the run's next seq and the time
    /// (ms since the epoch) when this process began to act on it (`(0, 0)` for a run it
    /// starts): the task attempts the run journaled from that seq, and its sub-runs from that
    /// time, are this process's to finish.
    fn local(
        engine: &Engine,
        run: RunId,
        updates: broadcast::Receiver<JournalUpdate>,
        since: (u64, u64),
    ) -> Self {
        Self::Local(Box::new(LocalFollower::new(engine, run, updates, since)))
    }

    /// The next event; after [`FollowEvent::Settled`] there is none.
    pub(crate) async fn next(&mut self) -> anyhow::Result<FollowEvent> {
        match self {
            Self::Local(f) => f.next().await,
            Self::Remote(f) => f.next().await,
        }
    }
}

type Settling = Pin<Box<dyn Future<Output = Result<RunView, RunError>> + Send>>;

/// Follows a run this process drives: the journal broadcast, restricted to the run and the
/// sub-runs it starts (an owner drives other processes' runs too), until the run settles, its
/// parents have acted on that, and the sub-runs they cancelled have ended.
pub(crate) struct LocalFollower {
    updates: broadcast::Receiver<JournalUpdate>,
    settled: Settling,
    /// The run and its sub-runs, as their `ChildStarted` records name them.
    followed: HashSet<RunId>,
    /// Where following stands.
    phase: Phase,
    open: bool,
}

/// The phases of following a run.
#[derive(Debug)]
enum Phase {
    /// The run has not settled yet.
    Following,
    /// The run settled with this view; the updates still queued are delivered first.
    Draining(Box<RunView>),
    /// [`FollowEvent::Settled`] was delivered.
    Done,
}

impl std::fmt::Debug for LocalFollower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalFollower")
            .field("followed", &self.followed)
            .finish_non_exhaustive()
    }
}

impl LocalFollower {
    fn new(
        engine: &Engine,
        run: RunId,
        updates: broadcast::Receiver<JournalUpdate>,
        (since, since_ms): (u64, u64),
    ) -> Self {
        let engine = engine.clone();
        let parents = parents_of(&engine, run);
        Self {
            updates,
            settled: Box::pin(async move {
                let view = settled_with_tasks_ended(&engine, run, since, since_ms).await?;
                parents_settled(&engine, &parents, since_ms).await;
                let mut runs = vec![run];
                runs.extend(parents.iter().map(|&(parent, _)| parent));
                if super::cancelled_sub_runs::ended(&engine, &runs).await {
                    // The view shows the sub-runs as they ended.
                    return engine.run(run);
                }
                Ok(view)
            }),
            followed: HashSet::from([run]),
            phase: Phase::Following,
            open: true,
        }
    }

    /// Whether `update` belongs to the followed runs; learns the sub-runs it starts.
    fn follows(&mut self, update: &JournalUpdate) -> bool {
        if !self.followed.contains(&update.run_id) {
            return false;
        }
        for entry in update.entries.iter() {
            if let Record::ChildStarted { child_run_id, .. } = &entry.record {
                self.followed.insert(*child_run_id);
            }
        }
        true
    }

    async fn next(&mut self) -> anyhow::Result<FollowEvent> {
        loop {
            match &self.phase {
                Phase::Following => {}
                Phase::Draining(_) => {
                    // Records are broadcast before the status change that settles the run.
                    match self.updates.try_recv() {
                        Ok(u) if self.follows(&u) => return Ok(FollowEvent::Update(u)),
                        Ok(_) | Err(TryRecvError::Lagged(_)) => continue,
                        Err(_) => {
                            let phase = std::mem::replace(&mut self.phase, Phase::Done);
                            if let Phase::Draining(view) = phase {
                                return Ok(FollowEvent::Settled(view));
                            }
                        }
                    }
                }
                Phase::Done => {
                    anyhow::bail!("the run has settled; there is nothing more to follow")
                }
            }
            tokio::select! {
                view = &mut self.settled => self.phase = Phase::Draining(Box::new(view?)),
                update = self.updates.recv(), if self.open => match update {
                    Ok(u) if self.follows(&u) => return Ok(FollowEvent::Update(u)),
                    Ok(_) => {}
                    Err(RecvError::Lagged(n)) => return Ok(FollowEvent::Skipped(n)),
                    Err(RecvError::Closed) => self.open = false,
                },
            }
        }
    }
}

/// The parents of `run`, nearest first (at most [`SUB_RUN_DEPTH`] of them), each with its
/// next seq now: the task attempts a parent journals from there on are this process's.
fn parents_of(engine: &Engine, run: RunId) -> Vec<(RunId, u64)> {
    let mut parents = Vec::new();
    let mut child = run;
    while parents.len() < SUB_RUN_DEPTH {
        let Some(parent) = engine.summary(child).ok().and_then(|s| s.parent) else {
            break;
        };
        parents.push((parent, next_seq(engine, parent)));
        child = parent;
    }
    parents
}

/// Waits until each of `parents` settles in turn, nearest first. A sub-run's end (or its wait
/// on a gate) is news its parent acts on in this process's engine: a command that answered,
/// cancelled or resumed a sub-run, and stopped as soon as the sub-run settled, would leave the
/// parent in memory half-way (a task it had just started killed with the process), for
/// `magrathea resume` to carry on. A parent that cannot be read is not waited on.
async fn parents_settled(engine: &Engine, parents: &[(RunId, u64)], since_ms: u64) {
    for &(parent, since) in parents {
        if settled_with_tasks_ended(engine, parent, since, since_ms)
            .await
            .is_err()
        {
            return;
        }
    }
}

/// Waits until the run settles. A run paused while a task of it runs is settled once that
/// task has ended: a paused run starts nothing new, but its running task finishes and is
/// journaled, in this process, which must not stop (and so kill it) before. Only attempts
/// journaled from `since` on count: an attempt whose process died before is not running (a
/// paused run does not run it again until it is resumed).
async fn settled_with_tasks_ended(
    engine: &Engine,
    run: RunId,
    since: u64,
    since_ms: u64,
) -> Result<RunView, RunError> {
    let due = std::time::Instant::now();
    let mut unread = Unread::default();
    loop {
        let view = tokio::select! {
            view = engine.wait_settled(run) => match unread.patience(view).await {
                Some(view) => view?,
                None => continue,
            },
            () = waiting_through_sub_runs(engine, run) => return engine.run(run),
            e = store_failing(engine) => return Err(RunError::Store(e)),
        };
        if view.status == RunStatus::Waiting && due.elapsed() < DUE_PATIENCE {
            // A run resumed after a gate's timeout or its deadline fell due reads WAITING
            // until the engine has acted on the due timer, a moment later: not settled yet.
            let Some(journal) = unread.patience(engine.journal(run)).await else {
                continue;
            };
            if has_due_timer(&journal?, super::pending::now_ms()) {
                let _ = tokio::time::timeout(
                    std::time::Duration::from_millis(50),
                    engine.wait_until(run, |s| s != RunStatus::Waiting),
                )
                .await;
                continue;
            }
        }
        if view.status != RunStatus::Paused {
            return Ok(view);
        }
        // A paused run's sub-runs go on (they are paused separately): the attempts they run
        // in this process finish too, before it may stop.
        let Some(journal) = unread.patience(engine.journal(run)).await else {
            continue;
        };
        let journal = journal?;
        if !has_running_task(&journal, |e| e.seq >= since)
            && !sub_runs_running(engine, &journal, since_ms, SUB_RUN_DEPTH)
        {
            return Ok(view);
        }
        // The task's result is journaled without a status change: look again in a moment,
        // or at once if the run is resumed or cancelled meanwhile.
        let _ = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            engine.wait_until(run, |s| s != RunStatus::Paused),
        )
        .await;
    }
}

/// How often a `RUNNING` run is looked at for sub-runs that wait on people.
const SUB_RUN_POLL: std::time::Duration = std::time::Duration::from_millis(100);
/// How deep sub-runs are looked into.
const SUB_RUN_DEPTH: usize = 32;

/// Completes once the `RUNNING` run waits only on sub-runs that themselves wait on people (a
/// gate, an operator's resume, fixed code): the run stays `RUNNING`, as its own status says,
/// but nothing moves until someone answers, so a command driving it stops there.
async fn waiting_through_sub_runs(engine: &Engine, run: RunId) {
    // The run's journal is read once, then only its new records at each look.
    let mut pending = Pending::default();
    let mut next = 0;
    loop {
        tokio::time::sleep(SUB_RUN_POLL).await;
        // A run WAITING, PAUSED or BLOCKED itself settles through its status (a paused run
        // once its running task has ended).
        if !matches!(engine.status(run), Ok(RunStatus::Running))
            || !read_on(engine, run, &mut pending, &mut next)
        {
            continue;
        }
        if waits_only_on_people(engine, &pending, SUB_RUN_DEPTH) {
            return;
        }
    }
}

/// Takes the records of `run` from seq `next` on into `pending`; false when they cannot be
/// read now.
fn read_on(engine: &Engine, run: RunId, pending: &mut Pending, next: &mut u64) -> bool {
    loop {
        match engine.journal_page(run, *next, 4096, 1 << 20) {
            Ok(page) if page.is_empty() => return true,
            Ok(page) => {
                *next = page.last().map_or(*next, |e| e.seq + 1);
                pending.apply(&page);
            }
            Err(_) => return false,
        }
    }
}

/// Whether a `RUNNING` run with `pending` steps waits only on people: no task attempt runs,
/// and it waits on sub-runs only, each `WAITING`, `PAUSED` or `BLOCKED` or (down to `depth`)
/// waiting only on people itself.
fn waits_only_on_people(engine: &Engine, pending: &Pending, depth: usize) -> bool {
    pending.tasks.is_empty()
        && !pending.children.is_empty()
        && pending
            .children
            .values()
            .all(|child| match engine.status(*child) {
                Ok(RunStatus::Waiting | RunStatus::Paused | RunStatus::Blocked) => true,
                Ok(RunStatus::Running) if depth > 0 => engine
                    .journal(*child)
                    .is_ok_and(|j| waits_only_on_people(engine, &Pending::of(&j), depth - 1)),
                _ => false,
            })
}

/// The seq the run's next record gets (0 for a run with no journal).
fn next_seq(engine: &Engine, run: RunId) -> u64 {
    engine
        .journal(run)
        .ok()
        .and_then(|j| j.last().map(|e| e.seq + 1))
        .unwrap_or(0)
}

/// How long a `WAITING` run with a due timer is given to act on it before it counts as
/// settled anyway. The engine acts within milliseconds when idle; a loaded machine (many
/// runs, a busy disk) took more than 2 s, and the command then reported a run waiting on a
/// gate that had already timed out. The wait ends as soon as the run moves.
const DUE_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// Whether the journal holds a timer due by `now_ms` that has not fired (a gate's timeout
/// until the gate is answered, the run's deadline).
fn has_due_timer(journal: &[Entry], now_ms: u64) -> bool {
    super::pending::Pending::of(journal)
        .timers
        .values()
        .any(|&at| at <= now_ms)
}

/// Whether a sub-run the journal shows started and not finished (or one of theirs, down to
/// `depth` levels) has a task attempt journaled from `since_ms` on that has not ended.
fn sub_runs_running(engine: &Engine, journal: &[Entry], since_ms: u64, depth: usize) -> bool {
    if depth == 0 {
        return false;
    }
    let open = super::pending::Pending::of(journal).children;
    // A sub-run that ended or is blocked runs nothing (a blocked one's attempt may read as
    // started for good).
    let going = |child: RunId| {
        engine
            .status(child)
            .is_ok_and(|s| !s.is_terminal() && s != RunStatus::Blocked)
    };
    open.values().filter(|&&child| going(child)).any(|&child| {
        engine.journal(child).is_ok_and(|j| {
            has_running_task(&j, |e| e.at_ms >= since_ms)
                || sub_runs_running(engine, &j, since_ms, depth - 1)
        })
    })
}

/// Whether a task attempt journaled by an entry `mine` admits has started (or started again)
/// and not ended. A YAML run's timer, gate and sub-run steps are not attempts that run.
fn has_running_task(journal: &[Entry], mine: impl Fn(&Entry) -> bool) -> bool {
    let mut running = HashSet::new();
    let mut yaml = false;
    for e in journal {
        match &e.record {
            Record::Start(start) => yaml = start.frontend.as_str() == "yaml",
            Record::TaskStarted { task, .. } if yaml && magrathea_yaml::is_held_task(task) => {}
            Record::TaskStarted { step, .. } | Record::TaskRestarted { step, .. } if mine(e) => {
                running.insert(*step);
            }
            Record::TaskResult { step, .. } => {
                running.remove(step);
            }
            _ => {}
        }
    }
    !running.is_empty()
}

/// A journal update as a follower yields it, from records received on the control socket.
pub(crate) fn update(run_id: RunId, entries: Vec<Entry>) -> JournalUpdate {
    JournalUpdate {
        run_id,
        entries: Arc::new(entries),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(seq: u64, record: serde_json::Value) -> Entry {
        let mut v = record;
        v["seq"] = json!(seq);
        v["createdAt"] = json!(0);
        serde_json::from_value(v).expect("an entry")
    }

    fn started(seq: u64, step: u32) -> Entry {
        entry(
            seq,
            json!({"type": "TaskStartedRecord", "step": step, "attempt": 1, "task": "t",
                   "name": "t", "inputHash": 0, "input": null}),
        )
    }

    /// Only the attempts this process journaled are its to wait for: one whose process died
    /// before (its start without a result, from before `since`) is not running.
    #[test]
    fn a_running_task_is_one_journaled_since_and_not_ended() {
        let result = |seq, step| {
            entry(
                seq,
                json!({"type": "TaskResultRecord", "step": step, "attempt": 1,
                       "outcome": "success", "output": null, "final": true}),
            )
        };
        let restarted = entry(
            3,
            json!({"type": "TaskRestartedRecord", "step": 1, "attempt": 1, "execution": 2,
                   "worker": "w"}),
        );
        let since = |since: u64| move |e: &Entry| e.seq >= since;
        let died = vec![started(1, 1)];
        assert!(has_running_task(&died, since(0)));
        assert!(
            !has_running_task(&died, since(2)),
            "an attempt of a process that died"
        );
        let again = vec![started(1, 1), restarted.clone()];
        assert!(
            has_running_task(&again, since(2)),
            "run again by this process"
        );
        let ended = vec![started(1, 1), restarted, result(4, 1)];
        assert!(!has_running_task(&ended, since(0)));
    }
}
