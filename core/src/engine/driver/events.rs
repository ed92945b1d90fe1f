//! Events from the world (task results, timers, answers, signals, children, cancellation),
//! turned into records by the run state and answered once they are durable.

use super::Driver;
use super::outbox::{Reply, now_ms};
use crate::context::lock;
use crate::engine::{CancelAck, Event};
use crate::error::{DeliverError, StoreError};
use crate::id::RunId;
use crate::record::{Record, RunStatus};
use crate::vocabulary::TimerPurpose;

/// The most late answers and signals an ended run journals (as `IgnoredRecord`s).
pub(crate) const MAX_LATE_RECORDS: u32 = 100;

/// Answers an event's caller with a store failure.
pub(crate) fn reply_error(ev: Event, error: &StoreError) {
    match ev {
        Event::Answer { reply, .. } => drop(reply.send(Err(DeliverError::Store(error.clone())))),
        Event::Signal { reply, .. } => drop(reply.send(Err(DeliverError::Store(error.clone())))),
        Event::Cancel { reply, .. } => drop(reply.send(Err(DeliverError::Store(error.clone())))),
        Event::Control { reply, .. } => drop(reply.send(Err(DeliverError::Store(error.clone())))),
        _ => {}
    }
}

/// Answers an event's caller: this process cannot drive the run.
pub(super) fn refuse(ev: Event, run: RunId) {
    match ev {
        Event::Answer { reply, .. } => drop(reply.send(Err(super::unsupported(run)))),
        Event::Signal { reply, .. } => drop(reply.send(Err(super::unsupported(run)))),
        Event::Cancel { reply, .. } => drop(reply.send(Err(super::unsupported(run)))),
        Event::Control { reply, .. } => drop(reply.send(Err(super::unsupported(run)))),
        _ => {}
    }
}

impl Driver {
    pub(super) fn handle_event(&mut self, ev: Event) {
        if self.blocked.is_some() {
            self.handle_event_blocked(ev);
            return;
        }
        if matches!(
            ev,
            Event::Answer { .. } | Event::Signal { .. } | Event::ChildDone { .. }
        ) {
            // Timers that came due while no process ran the run (or whose firing is still
            // queued) fire before what arrived after them, and the code sees them first: a
            // timer that wins a select lets go of its losers (a gate is withdrawn, a signal
            // wait dropped) before the answer or signal is matched to them.
            let due = self.state.due_timers(now_ms());
            if !due.is_empty() {
                for (step, purpose) in due {
                    self.timer_fired(step, purpose);
                }
                self.poll_workflow();
            }
        }
        match ev {
            Event::TaskDone {
                step,
                attempt,
                result,
            } => {
                self.attempts.finished(step);
                // Nobody awaits a dropped step (a select's loser): it is not retried.
                let (deadline, dropped) = {
                    let s = lock(&self.shared);
                    (
                        s.deadline.as_ref().map(|(at, _)| *at),
                        s.dropped.contains(&step),
                    )
                };
                // A run's deadline that came due before this result arrived fires first, as
                // it would have had its timer's wake-up come a moment sooner: the bound is
                // checked at each completion (reference §9), not only when the timer wakes.
                // The attempt then ends cancelled with the run and its result is ignored —
                // the journal's order a late wake-up already gives, so replay is unchanged.
                if let Some(at) = deadline
                    && self.state.timer_is_due(at, now_ms())
                {
                    // A timer step's wake-up (a deadline is one) comes as a sleep's.
                    self.timer_fired(at, TimerPurpose::Sleep);
                }
                let actions = self
                    .state
                    .task_done(step, attempt, result, dropped, now_ms());
                self.perform(actions);
            }
            Event::TimerFired { step, purpose } => {
                if self.state.is_paused() && purpose == TimerPurpose::Retry {
                    // A retry's backoff ended: its next attempt waits for the resume.
                    self.held.retries.push(step);
                } else {
                    self.timer_fired(step, purpose);
                }
            }
            Event::TaskQueued { step, attempt } => {
                if self.attempt_runs(step, attempt) {
                    self.append_apply(Record::TaskQueued { step, attempt });
                }
            }
            Event::TaskAdmitted {
                step,
                attempt,
                reply,
            } => {
                // An attempt that no longer runs (the run ended, or was cancelled) is not
                // admitted: its reply is dropped and it does not begin.
                if self.attempt_runs(step, attempt) {
                    self.append_apply(Record::TaskAdmitted { step, attempt });
                    self.outbox.replies.push(Reply::Admitted(reply));
                }
            }
            Event::Answer {
                step,
                answer,
                reply,
            } => match self.state.answer(step, answer) {
                // A run that has ended on a store several workers share has no lease, so
                // nobody may append to it; and an ended run journals a bounded number of late
                // answers and signals: past that, the answer is told it was ignored,
                // unjournaled.
                Ok((_, ack)) if !self.journals_late_records() => {
                    drop(reply.send(Ok(ack)));
                }
                Ok((record, ack)) => {
                    self.append_apply(record);
                    self.outbox.replies.push(Reply::Answer(reply, ack));
                }
                Err(e) => drop(reply.send(Err(e))),
            },
            Event::Signal {
                name,
                payload,
                reply,
            } => {
                let dropped = lock(&self.shared).dropped.clone();
                let record = self.state.signal(name, payload, &dropped);
                if !self.journals_late_records() {
                    // As a late gate answer: accepted and not journaled.
                    drop(reply.send(Ok(())));
                } else {
                    self.append_apply(record);
                    self.outbox.replies.push(Reply::Signal(reply));
                }
            }
            Event::ChildDone { step, outcome } => {
                if let Some(record) = self.state.child_done(step, outcome) {
                    self.append_apply(record);
                }
            }
            Event::Cancel { reason, reply } => {
                if self.state.is_paused() {
                    // The cancellation ends the pause: what the run held is asked for first
                    // (journaled, not yet acted on), so that it ends cancelled with the rest.
                    self.state.lift_pause();
                    self.release_held();
                }
                let ack = self.request_cancel(reason, super::children::parent_cancelled);
                self.outbox.replies.push(Reply::Cancel(reply, ack));
            }
            Event::Control { control, reply } => self.control(control, reply),
            // The main loop sees the engine's mark and leaves.
            Event::Close => {}
        }
        self.refresh_status();
    }

    /// Whether a late answer or signal is journaled: always while the run goes on; once it
    /// ended, only on a store of this process alone (an ended run on a shared store is leased
    /// to nobody) and for the first [`MAX_LATE_RECORDS`] of them, so that answers sent to an
    /// ended run cannot grow its journal without bound.
    fn journals_late_records(&self) -> bool {
        !self.state.is_terminal()
            || (self.engine.store.leases().is_none()
                && self.state.late_records() < MAX_LATE_RECORDS)
    }

    /// A timer of `step` is due: its firing, journaled unless the step completed already.
    pub(super) fn timer_fired(&mut self, step: crate::record::Step, purpose: TimerPurpose) {
        let actions = self.state.timer_due(step, purpose);
        let fired = !actions.records.is_empty();
        self.perform(actions);
        // The run's deadline: its cancellation is journaled in the same commit as the firing,
        // so a replay finds both and never asks the clock. It ends a pause as an operator's
        // cancel does: what the run held is asked for first (journaled, not acted on), so that
        // it ends cancelled with the rest instead of waiting for a resume that the ended
        // pause no longer allows.
        let deadline = lock(&self.shared).deadline.clone();
        if let Some((at, reason)) = deadline
            && fired
            && at == step
        {
            // Code that finished while paused has not ended the run (its end was held): the
            // deadline comes first, and the run fails with its reason.
            let mut ended_paused = None;
            if self.state.is_paused() {
                self.state.lift_pause();
                ended_paused = self.held.result.take();
                self.release_held();
            }
            self.request_cancel(reason.clone(), super::children::parent_deadline);
            if ended_paused.is_some() {
                self.finish(Err(crate::WorkflowError::failed(reason)));
            }
        }
    }

    /// Cancels the run (an operator's cancel or its deadline): the run's
    /// CancelRequestedRecord, then one ChildCancelRequestedRecord per child still running;
    /// the children are told after the commit, running attempts are stopped now.
    fn request_cancel(&mut self, reason: String, child: fn(RunId, &str) -> String) -> CancelAck {
        let run = self.run_id;
        let (actions, ack) = self.state.cancel(reason, |why| child(run, why));
        if !actions.records.is_empty() {
            self.attempts.abort_all();
            self.perform(actions);
        }
        ack
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
            Event::Control { reply, .. } => {
                let _ = reply.send(Err(DeliverError::Blocked(self.run_id, reason)));
            }
            Event::Cancel { reason: why, reply } => {
                // A blocked run cannot run its code, so it cannot clean up: cancel it outright.
                self.outbox.append(Record::CancelRequested {
                    reason: why.clone(),
                });
                self.cancel_steps_of_blocked(&why);
                self.append_apply(Record::Status {
                    status: RunStatus::Cancelled,
                    reason: Some(why),
                });
                self.blocked = None;
                self.outbox.set_status(RunStatus::Cancelled);
                self.outbox
                    .replies
                    .push(Reply::Cancel(reply, CancelAck::Requested));
            }
            Event::TaskDone { step, .. } => {
                self.attempts.finished(step);
                self.outbox.append(Record::Ignored {
                    step,
                    what: "task result".into(),
                    answer: None,
                });
            }
            Event::TimerFired { .. }
            | Event::ChildDone { .. }
            | Event::TaskQueued { .. }
            | Event::TaskAdmitted { .. }
            | Event::Close => {}
        }
    }

    /// Whether `attempt` of `step` is the step's running attempt and this driver runs it.
    fn attempt_runs(&self, step: crate::record::Step, attempt: u32) -> bool {
        !self.state.is_terminal()
            && self.attempts.runs(step)
            && self
                .state
                .attempt(step)
                .is_some_and(|(_, _, a)| a == attempt)
    }
}
