//! A run's child workflows: starting them (within the nesting depth limit), cancelling them,
//! and finding them again after a restart.
//!
//! Children live and die with their parent (the parent-close policy of Temporal's default,
//! "request cancel"). The parent asks a child to cancel when the parent is cancelled, when it
//! ends while the child runs, and when nothing awaits the child's step any more (a dropped
//! future: the loser of a select, e.g. a timeout). Each time it journals a
//! `ChildCancelRequestedRecord` on the child's step first and tells the child only once that
//! is durable; the child journals its own `CancelRequestedRecord`. A crash in between is
//! finished by recovery, from either side:
//! - a parent that is still running tells every child it asked to cancel again when it is
//!   replayed ([`RunState::rearm`](crate::replay::RunState::rearm)); a child that ended, or
//!   was told before, ignores it;
//! - a child whose parent has ended (or is blocked, so it is not replayed) looks for the
//!   parent's record about it when the child is recovered
//!   ([`cancel_if_parent_did`](Driver::cancel_if_parent_did)).

use serde_json::Value;
use tokio::sync::oneshot;

use super::Driver;
use crate::context::ChildOutcome;
use crate::engine::trees::Place;
use crate::engine::{Event, StartRequest};
use crate::id::RunId;
use crate::record::{ParentRef, Record, RunStatus, Step};

/// How far up a chain of parents is walked (a guard against a store whose runs name each other
/// as parents).
const MAX_LINEAGE: usize = 10_000;

impl Driver {
    fn child_start_request(&self, step: Step) -> Option<StartRequest> {
        let (child_id, req) = self.state.child(step)?;
        let start = self.start.as_ref()?;
        Some(StartRequest {
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
            requested_by: start.requested_by.clone(),
            bounds: req.bounds.clone(),
            entry: None,
            scope: req.scope.clone().unwrap_or_else(|| start.scope.clone()),
            parent: Some(ParentRef {
                run_id: self.run_id,
                step,
                state: req.parent_state.clone(),
            }),
            run_id: Some(child_id),
        })
    }

    /// Ends the child step as failed (or cancelled) without a child run.
    fn child_not_started(&self, step: Step, child: RunId, status: RunStatus, reason: String) {
        let outcome = ChildOutcome {
            run_id: child,
            status,
            result: Value::Null,
            reason: Some(reason),
        };
        self.engine
            .deliver(self.run_id, Event::ChildDone { step, outcome });
    }

    /// Starts the child of `step`; a child that cannot start, would be nested deeper than the
    /// limit, or would grow its tree past the bound, ends the step as failed.
    pub(super) fn start_child(&mut self, step: Step) {
        let Some(req) = self.child_start_request(step) else {
            return;
        };
        let child_id = req.run_id.unwrap_or_default();
        let limit = self
            .state
            .child(step)
            .and_then(|(_, r)| r.max_depth)
            .unwrap_or(self.engine.config.max_child_depth);
        let here = self.place();
        let depth = here.depth.saturating_add(1);
        if depth > limit {
            let reason = self.depth_limit_reason(limit, &req.workflow);
            tracing::warn!(run = %self.run_id, step, %reason, "child not started");
            self.child_not_started(step, child_id, RunStatus::Failed, reason);
            return;
        }
        let bound = self.engine.config.max_runs_per_tree;
        if let Err(held) = self.engine.trees.admit(here.root, child_id, bound) {
            let reason = format!(
                "[MAG-CH003] the tree of runs under root run {root} holds {held} sub-runs, \
                 the most one tree may hold ({bound}): run {run} cannot start a child \
                 `{workflow}`; a workflow that starts itself more than once needs a condition \
                 that ends the recursion, or raise the bound (EngineBuilder::max_runs_per_tree, \
                 or `magrathea serve --max-runs-per-tree`)",
                root = here.root,
                run = self.run_id,
                workflow = req.workflow,
            );
            tracing::warn!(run = %self.run_id, step, %reason, "child not started");
            self.child_not_started(step, child_id, RunStatus::Failed, reason);
            return;
        }
        let place = Place {
            depth,
            root: here.root,
        };
        // Synchronous up to the point where the child is known to the engine: a cancellation
        // that follows reaches the child's driver after its start.
        match self.engine.start_child(req, place) {
            Err(e) => {
                self.engine.trees.leave(child_id);
                self.child_not_started(step, child_id, RunStatus::Failed, e.to_string());
            }
            Ok(None) => {}
            Ok(Some(done)) => {
                let engine = self.engine.clone();
                let run = self.run_id;
                tokio::spawn(async move {
                    let error = match done.await {
                        Ok(Ok(())) => return,
                        Ok(Err(e)) => e.to_string(),
                        Err(_) => crate::error::StoreError::Closed.to_string(),
                    };
                    engine.trees.leave(child_id);
                    let outcome = ChildOutcome {
                        run_id: child_id,
                        status: RunStatus::Failed,
                        result: Value::Null,
                        reason: Some(error),
                    };
                    engine.deliver(run, Event::ChildDone { step, outcome });
                });
            }
        }
    }

    /// After a restart: starts the child of `step` if its start was never committed, delivers
    /// its outcome if it ended, and recovers it otherwise (it reports to this run when done).
    /// A child this run asked to cancel before its start was committed is not started.
    pub(super) fn check_child(&mut self, step: Step) {
        let Some((child_id, _)) = self.state.child(step) else {
            return;
        };
        match self.engine.store.run_summary(child_id) {
            Ok(None) => match self.state.child_cancel(step) {
                Some((_, reason)) if !self.engine.active().contains_key(&child_id) => {
                    let reason = format!("the child run was never started: {reason}");
                    self.child_not_started(step, child_id, RunStatus::Cancelled, reason);
                }
                _ => self.start_child(step),
            },
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
            Ok(Some(_)) => {
                self.engine.recover(child_id);
            }
            Err(e) => tracing::error!(run = %self.run_id, error = %e, "cannot read child run"),
        }
    }

    /// Tells the child of `step` to cancel, with the reason journaled in this run's
    /// `ChildCancelRequestedRecord` (durable by now). A child that ended or never started is
    /// left alone; one that was told before answers that it was.
    pub(super) fn cancel_child(&mut self, step: Step) {
        let Some((child, reason)) = self.state.child_cancel(step) else {
            return;
        };
        let known = self.engine.active().contains_key(&child)
            || match self.engine.store.run_summary(child) {
                Ok(Some(s)) => !s.status.is_terminal(),
                Ok(None) => false,
                Err(e) => {
                    tracing::error!(run = %self.run_id, %child, error = %e, "cannot read child run");
                    false
                }
            };
        if !known {
            return;
        }
        tracing::debug!(run = %self.run_id, step, %child, %reason, "cancelling child run");
        // Nobody waits for the child's acknowledgement: the record here is the promise.
        let (reply, _) = oneshot::channel();
        self.engine.deliver(
            child,
            Event::Cancel {
                reason: reason.to_string(),
                reply,
            },
        );
    }

    /// Lets go of the steps whose futures the code dropped since the last look (nothing
    /// awaits them any more): cancels the children of child steps and withdraws open gates.
    /// Not while replaying: the journal says what happened then, and what it lacks is made up
    /// once replay is over.
    pub(super) fn let_go_of_dropped_steps(&mut self) {
        if self.replay.is_some() || self.blocked.is_some() {
            return;
        }
        let mut dropped = std::mem::take(&mut self.dropped_buf);
        for step in dropped.drain(..) {
            let run = self.run_id;
            let actions = self.state.cancel_child(step, || {
                format!(
                    "parent run {run} stopped waiting for it: its step {step} was dropped \
                     before the child ended (e.g. a timeout won a select)"
                )
            });
            self.perform(actions);
            let actions = self.state.withdraw_gate(step, || {
                format!(
                    "the run stopped waiting for it: its step {step} was dropped before an \
                     answer (e.g. a timer won a select)"
                )
            });
            self.perform(actions);
        }
        // Kept for its allocation.
        if self.dropped_buf.is_empty() {
            self.dropped_buf = dropped;
        }
    }

    /// A blocked run is cancelled outright (its code cannot run): the task attempts its
    /// journal shows started and not ended get a final `cancelled` result, and its children
    /// that have not ended are cancelled with it.
    pub(super) fn cancel_steps_of_blocked(&mut self, why: &str) {
        let entries = match self.engine.readable_journal(self.run_id) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::error!(run = %self.run_id, error = %e, "cannot read the journal to cancel children");
                return;
            }
        };
        for (step, attempt) in crate::replay::unfinished_attempts(&entries) {
            self.outbox.append(Record::TaskResult {
                step,
                attempt,
                outcome: crate::task::TaskError::CANCELLED.into(),
                output: serde_json::Value::Null,
                error: Some(why.to_string()),
                is_final: true,
            });
        }
        let reason = parent_cancelled(self.run_id, why);
        for (step, child) in crate::replay::unfinished_children(&entries) {
            if self.state.child_cancel(step).is_some() {
                continue;
            }
            self.outbox.append(Record::ChildCancelRequested {
                step,
                child_run_id: child,
                reason: reason.clone(),
            });
            self.state.note_child_cancel(step, child, reason.clone());
            self.outbox
                .effects
                .push(crate::replay::Effect::CancelChild(step));
        }
    }

    /// After recovery: a child whose parent asked it to cancel (journaled) but whose
    /// cancellation the child never journaled — the process died in between — cancels now.
    /// Only a parent that has ended or is blocked is asked here; a running parent tells its
    /// children again itself when it is replayed.
    pub(super) fn cancel_if_parent_did(&mut self) {
        if self.checking || self.state.is_terminal() || self.state.cancel_requested() {
            return;
        }
        let Some(parent) = self.start.as_ref().and_then(|s| s.parent.clone()) else {
            return;
        };
        let status = match self.engine.store.run_summary(parent.run_id) {
            Ok(Some(s)) => s.status,
            _ => return,
        };
        if !status.is_terminal() && status != RunStatus::Blocked {
            return;
        }
        let Ok(entries) = self.engine.readable_journal(parent.run_id) else {
            return;
        };
        let reason = entries.iter().rev().find_map(|e| match &e.record {
            Record::ChildCancelRequested {
                step,
                child_run_id,
                reason,
            } if *step == parent.step && *child_run_id == self.run_id => Some(reason.clone()),
            _ => None,
        });
        if let Some(reason) = reason {
            tracing::info!(run = %self.run_id, parent = %parent.run_id, %reason, "cancelling: the parent asked for it while the run was out of memory");
            let (reply, _) = oneshot::channel();
            self.handle_event(Event::Cancel { reason, reply });
        }
    }

    /// The run's place in its tree: its nesting depth (0 for a root run, its parent's plus one
    /// for a child) and its root. Walks the chain of parents in the store once, unless the
    /// starter said.
    pub(super) fn place(&mut self) -> Place {
        if let Some(p) = self.place {
            return p;
        }
        let chain = self.lineage();
        let place = Place {
            depth: u32::try_from(chain.len().saturating_sub(1)).unwrap_or(u32::MAX),
            root: chain.first().map_or(self.run_id, |(run, _)| *run),
        };
        self.place = Some(place);
        place
    }

    /// A child run taken into memory to be recovered counts in its tree again (after a
    /// restart, the tree's count begins with the runs recovered).
    pub(super) fn join_tree(&mut self) {
        let is_child = self.start.as_ref().is_some_and(|s| s.parent.is_some());
        if is_child && !self.state.is_terminal() && !self.checking {
            let root = self.place().root;
            self.engine.trees.join(root, self.run_id);
        }
    }

    /// This run and its ancestors, root first: run id and workflow name.
    fn lineage(&self) -> Vec<(RunId, String)> {
        let name = self
            .start
            .as_ref()
            .map(|s| s.workflow_name.clone())
            .unwrap_or_default();
        let mut chain = vec![(self.run_id, name)];
        let mut next = self
            .start
            .as_ref()
            .and_then(|s| s.parent.as_ref().map(|p| p.run_id));
        while let Some(run) = next {
            if chain.len() >= MAX_LINEAGE {
                break;
            }
            match self.engine.store.run_summary(run) {
                Ok(Some(s)) => {
                    chain.push((run, s.workflow_name));
                    next = s.parent;
                }
                // A parent that is not (or no longer) in the store still counts.
                _ => {
                    chain.push((run, String::from("?")));
                    next = None;
                }
            }
        }
        chain.reverse();
        chain
    }

    /// The reason a child of `workflow` is not started: `[MAG-CH002]`, the limit and the chain
    /// of runs from the root (runs of one workflow in a row are counted, not repeated).
    fn depth_limit_reason(&self, limit: u32, workflow: &str) -> String {
        let chain = self.lineage();
        let mut names: Vec<(String, usize)> = Vec::new();
        for (_, name) in &chain {
            match names.last_mut() {
                Some((last, n)) if last == name => *n += 1,
                _ => names.push((name.clone(), 1)),
            }
        }
        let rendered: Vec<String> = names
            .into_iter()
            .map(|(name, n)| {
                if n == 1 {
                    format!("`{name}`")
                } else {
                    format!("`{name}` ×{n}")
                }
            })
            .collect();
        format!(
            "[MAG-CH002] sub-run nesting depth limit {limit} reached: run {} at depth {} cannot \
             start a child `{workflow}` (chain from the root: {}); a workflow that starts \
             itself needs a condition that ends the recursion, or raise the limit \
             (EngineBuilder::max_child_depth, or subRuns.maxDepth in _vance/settings.yaml)",
            self.run_id,
            chain.len().saturating_sub(1),
            rendered.join(" → ")
        )
    }
}

/// The reason a child is given when its parent is cancelled.
pub(super) fn parent_cancelled(parent: RunId, reason: &str) -> String {
    format!("parent run {parent} was cancelled: {reason}")
}

/// The reason a child is cancelled with when its parent's deadline fires.
pub(super) fn parent_deadline(parent: RunId, reason: &str) -> String {
    format!("parent run {parent} passed its deadline: {reason}")
}
