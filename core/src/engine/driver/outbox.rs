//! What a driver has produced and not yet committed: records, the run's summary, replies to
//! callers and effects — and the flush that commits them and then acts.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::oneshot;

use super::Driver;
use crate::codec;
use crate::context::ChildOutcome;
use crate::engine::{AnswerAck, CancelAck, ControlAck, Event, JournalUpdate, RunUpdate};
use crate::error::{DeliverError, StartError, StoreError};
use crate::id::RunId;
use crate::record::{Entry, ParentRef, Record, RunStatus, StartRecord};
use crate::replay::Effect;
use crate::store::{CommitBatch, EncodedRecord, RunSummary};

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// How long before its start a run's id may have been made for the start to take the id's
/// time (see `Outbox::begin`).
const MADE_AT_WITHIN_MS: u64 = 60_000;

/// A caller waiting for the commit of what it asked for.
pub(super) enum Reply {
    Answer(oneshot::Sender<Result<AnswerAck, DeliverError>>, AnswerAck),
    Signal(oneshot::Sender<Result<(), DeliverError>>),
    Cancel(oneshot::Sender<Result<CancelAck, DeliverError>>, CancelAck),
    Control(
        oneshot::Sender<Result<ControlAck, DeliverError>>,
        ControlAck,
    ),
    Start(oneshot::Sender<Result<(), StartError>>),
    /// A queued task attempt's admission.
    Admitted(oneshot::Sender<()>),
}

impl Reply {
    fn succeed(self) {
        match self {
            Reply::Answer(tx, ack) => drop(tx.send(Ok(ack))),
            Reply::Signal(tx) => drop(tx.send(Ok(()))),
            Reply::Cancel(tx, ack) => drop(tx.send(Ok(ack))),
            Reply::Control(tx, ack) => drop(tx.send(Ok(ack))),
            Reply::Start(tx) => drop(tx.send(Ok(()))),
            Reply::Admitted(tx) => drop(tx.send(())),
        }
    }

    /// The commit failed: nothing of it was written.
    pub(super) fn fail(self, error: &StoreError) {
        match self {
            Reply::Answer(tx, _) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
            Reply::Signal(tx) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
            Reply::Cancel(tx, _) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
            Reply::Control(tx, _) => drop(tx.send(Err(DeliverError::Store(error.clone())))),
            Reply::Start(tx) => drop(tx.send(Err(StartError::Store(error.clone())))),
            // Dropped: the attempt does not begin.
            Reply::Admitted(_) => {}
        }
    }
}

/// The uncommitted output of a driver.
pub(super) struct Outbox {
    run_id: RunId,
    /// The seq of the next record.
    pub(super) next_seq: u64,
    batch: CommitBatch,
    /// The records of `batch`, decoded, published to journal subscribers after the commit.
    new_entries: Vec<Entry>,
    pub(super) effects: Vec<Effect>,
    pub(super) replies: Vec<Reply>,
    pub(super) summary: Option<RunSummary>,
    summary_dirty: bool,
    /// Bytes of the run's journal: those read at recovery and every record appended since.
    pub(super) journal_bytes: u64,
    /// `journal_bytes` as of the last commit: what a failed commit held is the difference.
    pub(super) committed_bytes: u64,
}

impl Outbox {
    pub(super) fn new(run_id: RunId) -> Self {
        Self {
            run_id,
            next_seq: 0,
            batch: CommitBatch::default(),
            new_entries: Vec::new(),
            effects: Vec::new(),
            replies: Vec::new(),
            summary: None,
            summary_dirty: false,
            journal_bytes: 0,
            committed_bytes: 0,
        }
    }

    /// A fresh run: its summary and idempotency key go with its first commit, and its
    /// `StartRecord` is appended. Both carry one instant, so that the run's start time is the
    /// same in its summary (which listings filter by) and in its journal (which views show).
    pub(super) fn begin(&mut self, start: &StartRecord) {
        // The run began when its id was made (listings order runs by id, newest first, and
        // by this time too, without two runs started together trading places); an id made
        // elsewhere, or long before its start (a child's id journaled before a crash), gives
        // way to the clock.
        let clock = now_ms();
        let now = self
            .run_id
            .made_at_ms()
            .filter(|made| *made <= clock && clock - made <= MADE_AT_WITHIN_MS)
            .unwrap_or(clock);
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
        self.append_at(Record::Start(Box::new(start.clone())), now);
    }

    pub(super) fn append(&mut self, record: Record) -> u64 {
        self.append_at(record, now_ms())
    }

    fn append_at(&mut self, record: Record, at_ms: u64) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut bytes = Vec::with_capacity(64);
        codec::encode(&record, at_ms, &mut bytes);
        self.journal_bytes += bytes.len() as u64;
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

    pub(super) fn set_status(&mut self, status: RunStatus) {
        if let Some(s) = self.summary.as_mut()
            && s.status != status
        {
            s.status = status;
            s.updated_ms = now_ms();
            self.summary_dirty = true;
        }
    }
}

impl Driver {
    /// Commits what the run produced, then acts on it: publishes the records and the status,
    /// answers callers, performs effects.
    pub(super) async fn flush(&mut self) -> Result<(), StoreError> {
        self.check_journal_bound();
        self.refresh_status();
        let out = &mut self.outbox;
        if out.summary_dirty
            && let Some(s) = &out.summary
        {
            out.batch.summaries.push(s.clone());
        }
        let status_changed = out.summary_dirty;
        out.summary_dirty = false;
        if !out.batch.is_empty() {
            let batch = std::mem::take(&mut out.batch);
            self.engine.writer.append(batch).await?;
        }
        // Durable from here on: act.
        let out = &mut self.outbox;
        out.committed_bytes = out.journal_bytes;
        if !out.new_entries.is_empty() && self.engine.milestones_tx.receiver_count() > 0 {
            let milestones: Vec<Entry> = out
                .new_entries
                .iter()
                .filter(|e| e.record.is_milestone())
                .cloned()
                .collect();
            if !milestones.is_empty() {
                let _ = self.engine.milestones_tx.send(JournalUpdate {
                    run_id: self.run_id,
                    entries: Arc::new(milestones),
                });
            }
        }
        if self.engine.journal_tx.receiver_count() == 0 {
            out.new_entries.clear();
        } else if !out.new_entries.is_empty() {
            let entries = Arc::new(std::mem::take(&mut out.new_entries));
            let _ = self.engine.journal_tx.send(JournalUpdate {
                run_id: self.run_id,
                entries,
            });
        }
        if status_changed && let Some(s) = &self.outbox.summary {
            let status = s.status;
            self.engine.announce(RunUpdate {
                run_id: self.run_id,
                status,
            });
            if status.is_terminal() {
                self.notify_parent(status);
            }
        }
        for reply in std::mem::take(&mut self.outbox.replies) {
            reply.succeed();
        }
        for effect in std::mem::take(&mut self.outbox.effects) {
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
        let (result, reason) = match (
            self.engine.store.read_journal(self.run_id),
            &self.outbox.summary,
        ) {
            (Ok(entries), Some(s)) => {
                let v = crate::view::RunView::project(&entries, s);
                (v.result.unwrap_or(Value::Null), v.reason)
            }
            _ => (Value::Null, None),
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
                self.engine
                    .timers
                    .register(crate::engine::timers::Registration {
                        run: self.run_id,
                        step,
                        purpose,
                        at_ms,
                    });
            }
            Effect::StartChild(step) => self.start_child(step),
            Effect::CheckChild(step) => self.check_child(step),
            Effect::CancelChild(step) => self.cancel_child(step),
        }
    }
}
