//! Pausing and resuming a run: what a paused run holds back, and letting go of it.
//!
//! A pause changes nothing the code sees: the code is polled as before and its commands are
//! made in the same order, so replay is the same with or without the pause. Only dispatch is
//! held: a command made while the run is paused is kept here, unjournaled, and asked for
//! (journaled and acted on) when the run is resumed — live, in the order the code made them,
//! or after a replay that ended paused, from the replay's steps past the journal's end.

use serde_json::Value;
use tokio::sync::oneshot;

use super::Driver;
use super::outbox::{Reply, now_ms};
use crate::context::{Command, CommandDetail, lock};
use crate::engine::{Control, ControlAck, WorkflowError};
use crate::error::DeliverError;
use crate::record::{Record, RunStatus, Step, StepKind};
use crate::vocabulary::TimerPurpose;

/// What a paused run holds back until it is resumed.
#[derive(Default)]
pub(super) struct Held {
    /// Commands the code made while the run was paused, in order, each with when it was
    /// held (ms since the Unix epoch).
    pub(super) commands: Vec<(Command, u64)>,
    /// Tasks whose retry backoff ended while the run was paused: their next attempt waits.
    pub(super) retries: Vec<Step>,
    /// The code's result, when it finished while the run was paused.
    pub(super) result: Option<Result<Value, WorkflowError>>,
    /// The run was replayed paused: the attempts, timers and children its journal shows
    /// pending were not acted on again and are, on the resume.
    pub(super) rearm: bool,
}

impl Driver {
    /// The status a refusal names: the journaled end, or the live status.
    fn status_now(&self) -> RunStatus {
        match self.state.last_status() {
            Some((s, _)) if s.is_terminal() => *s,
            _ => self.state.live_status(),
        }
    }

    /// Handles an operator's pause or resume; the reply goes out once its record is durable.
    pub(super) fn control(
        &mut self,
        control: Control,
        reply: oneshot::Sender<Result<ControlAck, DeliverError>>,
    ) {
        match control {
            Control::Pause { by, reason } => {
                if self.state.is_terminal() || self.state.cancel_requested() {
                    let _ = reply.send(Err(DeliverError::NotPausable(
                        self.run_id,
                        self.status_now(),
                    )));
                    return;
                }
                if self.state.is_paused() {
                    // Answered after the next commit, so after the pause that made it paused.
                    self.outbox
                        .replies
                        .push(Reply::Control(reply, ControlAck::AlreadyPaused));
                    return;
                }
                self.append_apply(Record::PauseRequested { by, reason });
                self.outbox
                    .replies
                    .push(Reply::Control(reply, ControlAck::Paused));
            }
            Control::Unpause { by } => {
                if !self.state.is_paused() {
                    let _ =
                        reply.send(Err(DeliverError::NotPaused(self.run_id, self.status_now())));
                    return;
                }
                // A deadline that came due while the run was paused (its timer not yet fired,
                // as when no process ran) ends the pause first, as it would have.
                let deadline = lock(&self.shared).deadline.as_ref().map(|(step, _)| *step);
                if let Some(step) = deadline.filter(|&step| {
                    self.state
                        .timer_pending_at(step)
                        .is_some_and(|at| at <= now_ms())
                }) {
                    self.timer_fired(step, TimerPurpose::Sleep);
                    self.outbox
                        .replies
                        .push(Reply::Control(reply, ControlAck::Resumed));
                    return;
                }
                self.append_apply(Record::ResumeRequested { by });
                self.release_held();
                self.outbox
                    .replies
                    .push(Reply::Control(reply, ControlAck::Resumed));
            }
        }
    }

    /// Asks for what the run held while it was paused, in the order it was held: the
    /// journal's pending steps of a replay, the code's commands, then due retries — or, when
    /// the code finished meanwhile, its last commands (a YAML terminal state's entry) and its
    /// end, as a run that was never paused journals them.
    pub(super) fn release_held(&mut self) {
        let held = std::mem::take(&mut self.held);
        if held.rearm && held.result.is_none() {
            for restart in self.state.restarts(crate::engine::worker::worker_name()) {
                self.append_apply(restart);
            }
            let effects = self.state.rearm();
            self.outbox.effects.extend(effects);
        }
        let mut released = Vec::with_capacity(held.commands.len());
        for (mut c, held_at) in held.commands {
            if self.blocked.is_some() {
                return;
            }
            released.push(c.step);
            let now = now_ms();
            // A sleep of a duration counts from its release, not from when the paused code
            // asked for it (the code never sees the instant; a sleep until an instant keeps
            // it): moved on by the time since the code read the clock for it.
            if c.kind == StepKind::Timer
                && c.name == "sleep"
                && let CommandDetail::Timer {
                    fire_at_ms,
                    asked_at_ms,
                } = &mut c.detail
            {
                let asked = if *asked_at_ms == 0 {
                    held_at
                } else {
                    (*asked_at_ms).min(held_at)
                };
                *fire_at_ms = fire_at_ms.saturating_add(now.saturating_sub(asked));
            }
            let actions = self.state.request_live(c, now);
            self.perform(actions);
        }
        // Steps the code dropped while they were held (a select's loser made while the run
        // was paused) are steps now: let go of them, as of any dropped step.
        {
            let s = lock(&self.shared);
            self.dropped_buf
                .extend(released.into_iter().filter(|step| s.dropped.contains(step)));
        }
        self.let_go_of_dropped_steps();
        if let Some(result) = held.result {
            self.finish(result);
            return;
        }
        for step in held.retries {
            let actions = self.state.timer_due(step, TimerPurpose::Retry);
            self.perform(actions);
        }
    }
}
