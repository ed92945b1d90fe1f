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
use super::settle::{next_seq, parents_of, parents_settled, settled_with_tasks_ended};

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

/// Resumes `run` on behalf of `by`. A run that waits on the DECISION of `onFailure:
/// pause_for_approval` is Friday's paused run awaiting approval: its resume answers that
/// decision `retry`, as the HTTP routes' does.
async fn resume(
    engine: &Engine,
    run: RunId,
    by: &str,
) -> Result<magrathea_core::ControlAck, DeliverError> {
    let refused = match engine.unpause(run, by).await {
        Err(e @ DeliverError::NotPaused(..)) => e,
        done => return done,
    };
    let waiting = engine
        .summary(run)
        .is_ok_and(|s| s.status == RunStatus::Waiting);
    let decision = if waiting {
        engine
            .inbox_of(InboxFilter::Pending, &RunFilter::default(), |s| {
                s.run_id == run
            })
            .map_err(DeliverError::Store)?
            .into_iter()
            .find(|i| {
                i.workflow_run_id == run && magrathea_server::http::approvals::is_failure_pause(i)
            })
    } else {
        None
    };
    let Some(decision) = decision else {
        return Err(refused);
    };
    match engine
        .answer_gate(&decision.id, GateAnswer::choose("retry").by(by))
        .await?
    {
        AnswerAck::Applied => Ok(magrathea_core::ControlAck::Resumed),
        // Answered meanwhile: the run was not paused after all.
        AnswerAck::Ignored => Err(refused),
    }
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
                    ControlOp::Resume => resume(engine, run, by).await,
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
                    let view = RunDto::load(engine, summary.run_id)?;
                    // A run that moved on since its summary was listed is not what was asked.
                    if !statuses.is_empty() && !statuses.contains(&view.run.status) {
                        continue;
                    }
                    views.push(view);
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

/// A journal update as a follower yields it, from records received on the control socket.
pub(crate) fn update(run_id: RunId, entries: Vec<Entry>) -> JournalUpdate {
    JournalUpdate {
        run_id,
        entries: Arc::new(entries),
    }
}
