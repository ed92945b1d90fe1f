//! How a run's driver leaves memory: idle with no event waiting, with a closing engine, after
//! a failed commit, or let go of when its lease was lost; and whether it may leave while it
//! waits.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use tokio::sync::mpsc;

use super::{Driver, Event, RunUpdate, events, outbox};
use crate::error::StoreError;
use crate::id::RunId;
use crate::record::RunStatus;

impl Driver {
    /// Leaves memory unless an event is waiting; the check and the removal happen under the
    /// engine's lock of in-memory runs, so no event can slip in between.
    pub(super) fn try_exit(&mut self) -> Option<Event> {
        let mut active = self.engine.active();
        match self.rx.try_recv() {
            Ok(ev) => Some(ev),
            Err(_) => {
                // A run that only waits keeps its place in its tenant's count, parked under
                // the lock of in-memory runs: a driver that takes it up again comes after.
                if !self.state.is_terminal()
                    && self.blocked.is_none()
                    && !self.rx.is_closed()
                    && let Some(slot) = self.tenant.take()
                {
                    slot.park(self.run_id);
                }
                self.leave(&mut active);
                drop(active);
                if self.blocked.is_some() {
                    // Waiters learn that nobody drives the run any more.
                    self.engine.announce(RunUpdate {
                        run_id: self.run_id,
                        status: RunStatus::Blocked,
                    });
                }
                None
            }
        }
    }

    /// Leaves a closing engine with what is durable: the running attempts are aborted (the
    /// journal shows them started, so they run again on the next open, as after a crash). On
    /// a clean stop of the process each execution this interrupts is journaled as such first,
    /// so that it does not count against `maxClaimAttempts` as a crash does; should that
    /// commit fail, the executions count: the run is left as after a crash.
    pub(super) async fn leave_closing_engine(&mut self) {
        let replaying = self.replay.is_some();
        let clean = self.engine.closing.is_clean_stop();
        let interrupts =
            if !clean || replaying || self.blocked.is_some() || self.state.is_terminal() {
                Vec::new()
            } else {
                self.state.interrupts(crate::engine::worker::worker_name())
            };
        if !interrupts.is_empty() {
            for record in interrupts {
                self.append_apply(record);
            }
            if let Err(e) = self.flush().await {
                tracing::warn!(run = %self.run_id, error = %e, "could not journal the interrupted executions");
            }
        }
        self.attempts.abort_all();
        self.exit_now();
    }

    pub(super) fn exit_now(&mut self) {
        self.leave(&mut self.engine.active());
        while let Ok(ev) = self.rx.try_recv() {
            events::refuse(ev, self.run_id);
        }
    }

    /// A commit failed: nothing of it is durable. Drop all in-memory state, tell waiting
    /// callers, and recover the run from its journal once the store commits again.
    pub(super) fn fail_stop(&mut self, error: StoreError) {
        self.attempts.abort_all();
        self.leave(&mut self.engine.active());
        while let Ok(ev) = self.rx.try_recv() {
            events::reply_error(ev, &error);
        }
        // Callers waiting on the failed commit learn why; nothing of it was written.
        for reply in std::mem::take(&mut self.outbox.replies) {
            reply.fail(&error);
        }
        // A worker that lost the run's lease leaves it to the new owner.
        let fenced = matches!(error, StoreError::Fenced(_));
        let existed =
            !fenced && self.start.is_some() && self.outbox.next_seq > 0 && !self.is_fresh_failure();
        if existed {
            // It is taken up again once the store has room for what this commit held.
            let failed = self.outbox.journal_bytes - self.outbox.committed_bytes;
            self.engine.recover_when_healthy(self.run_id, failed);
        }
    }

    /// Takes this driver's run out of the engine's in-memory runs. A driver that was let go
    /// of (its lease lost: the engine dropped its channel) may still be finishing a turn after
    /// the run was taken into memory again, by a driver of its own: that entry is not this
    /// driver's to remove.
    pub(super) fn leave(&self, active: &mut HashMap<RunId, mpsc::UnboundedSender<Event>>) {
        if !self.rx.is_closed() {
            active.remove(&self.run_id);
        }
    }

    pub(super) fn is_fresh_failure(&self) -> bool {
        // A fresh run whose StartRecord never committed does not exist.
        matches!(self.engine.store.run_summary(self.run_id), Ok(None))
    }

    pub(super) fn can_evict(&self) -> bool {
        if self.future.is_none() || !self.attempts.is_empty() || !self.outbox.effects.is_empty() {
            return false;
        }
        if self.wake.woken.load(Ordering::Acquire) {
            return false;
        }
        let evict_ms =
            u64::try_from(self.engine.config.evict_after.as_millis()).unwrap_or(u64::MAX);
        let horizon = outbox::now_ms().saturating_add(evict_ms);
        self.state.waits_beyond(horizon)
    }
}
