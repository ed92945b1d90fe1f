//! Bringing a run back into memory: instantiate its code and replay it against the journal.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use super::{Driver, ReplayCursor};
use crate::context::{WorkflowContext, lock};
use crate::id::RunId;
use crate::panic::Panic;
use crate::record::{Entry, Record, RunStatus, StartRecord};
use crate::replay::{Divergence, FirstRecords, NonDeterminism};
use crate::store::RunSummary;

/// Why a run's code cannot be made to run.
pub(super) enum Unrunnable {
    /// The workflow or its version is not what the run started with: the run is blocked.
    Refused(String),
    /// The code panicked while being set up: the run is blocked.
    Panicked(Panic),
    /// This process has no front end for the run at all (e.g. a YAML-only server meeting a
    /// code workflow's run in a shared store): the run is left as it is.
    NoFrontend(String),
}

/// Front ends this process already said it lacks, so it says so once.
fn warned() -> &'static Mutex<HashSet<String>> {
    static WARNED: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    WARNED.get_or_init(|| Mutex::new(HashSet::new()))
}

impl Driver {
    pub(super) fn instantiate(&mut self, start: &StartRecord) -> Result<(), Unrunnable> {
        let ctx = WorkflowContext::new(self.shared.clone());
        // Making the future runs code (a registration's closure) that may make steps.
        let _code = super::CodeHere::enter(&self.shared);
        let fut = if start.frontend == "code" {
            if self.engine.workflows.is_empty() {
                return Err(Unrunnable::NoFrontend(start.frontend.to_string()));
            }
            let Some(versions) = self
                .engine
                .workflow_versions
                .get(start.workflow_name.as_str())
            else {
                return Err(Unrunnable::Refused(format!(
                    "[MAG-ND004] workflow `{}` is not registered with this engine; register it \
                     and reopen the engine",
                    start.workflow_name
                )));
            };
            let Some(reg) = versions.get(start.workflow_version.as_str()) else {
                let shown = |v: &str| match v {
                    "" => "the unversioned one".to_string(),
                    v => format!("version `{v}`"),
                };
                let mut registered: Vec<String> = versions.keys().map(|v| shown(v)).collect();
                registered.sort();
                return Err(Unrunnable::Refused(format!(
                    "[MAG-ND003] run started on {} of workflow `{}`, but this engine registers \
                     {}; register the old version beside the new one, or cancel the run",
                    shown(&start.workflow_version),
                    start.workflow_name,
                    registered.join(" and ")
                )));
            };
            let body = reg.body.clone();
            let params = start.params.clone();
            crate::panic::catch(move || body(ctx, params)).map_err(Unrunnable::Panicked)?
        } else {
            let Some(interp) = self
                .engine
                .interpreters
                .get(start.frontend.as_str())
                .cloned()
            else {
                return Err(Unrunnable::NoFrontend(start.frontend.to_string()));
            };
            crate::panic::catch(|| interp(ctx, start))
                .map_err(Unrunnable::Panicked)?
                .map_err(Unrunnable::Refused)?
        };
        self.future = Some(fut);
        Ok(())
    }

    /// Reads the run's journal and replays it. Returns whether the driver stays (it leaves
    /// when the run cannot be loaded at all or this process has no front end for it).
    pub(super) async fn recover(&mut self) -> bool {
        let engine = self.engine.clone();
        let permit = engine.replay_permits.acquire().await;
        let summary = match self.engine.store.run_summary(self.run_id) {
            Ok(Some(s)) => s,
            Ok(None) => return false,
            Err(e) => {
                tracing::error!(run = %self.run_id, error = %e, "cannot read run summary");
                if self.store_failing() {
                    self.engine.recover_when_healthy(self.run_id, 0);
                }
                return false;
            }
        };
        let stays = match self.engine.store.read_journal_for_replay(self.run_id) {
            Ok((entries, bytes)) => {
                self.outbox.journal_bytes = bytes;
                self.outbox.committed_bytes = bytes;
                self.replay(entries, summary)
            }
            // A store that failed a commit (a full disk) and cannot be read now says nothing
            // about the journal: the run is loaded again once the store works. Otherwise the
            // journal is damaged, and the run is blocked.
            Err(e) if self.store_failing() => {
                tracing::error!(run = %self.run_id, error = %e, "cannot read the journal");
                self.engine.recover_when_healthy(self.run_id, 0);
                false
            }
            Err(e) => self.unreadable(summary, &e.to_string()),
        };
        drop(permit);
        stays
    }

    /// A report that a task step's input changed, with the journaled input read back in full:
    /// replay's read leaves task inputs out ([`Store::read_journal_for_replay`]), and the
    /// report shows both (left as it is if the record cannot be read now). A child step's
    /// journaled input is its run's parameters, read from the child's `StartRecord`.
    ///
    /// [`Store::read_journal_for_replay`]: crate::Store::read_journal_for_replay
    pub(super) fn with_journaled_input(&self, mut nd: NonDeterminism, seq: u64) -> NonDeterminism {
        let Divergence::Mismatch { inputs, .. } = &mut nd.divergence else {
            return nd;
        };
        let Some(shown) = inputs.as_mut() else {
            return nd;
        };
        let first = |run: RunId, seq: u64| {
            self.engine
                .store
                .read_journal_range(run, seq, 1, usize::MAX)
                .ok()
                .and_then(|raw| raw.into_iter().next())
                .and_then(|(_, bytes)| crate::codec::decode(&bytes).ok())
                .map(|(record, _)| record)
        };
        match first(self.run_id, seq) {
            Some(Record::TaskStarted { input, .. }) => shown.0 = input,
            Some(Record::ChildStarted { child_run_id, .. }) => match first(child_run_id, 0) {
                Some(Record::Start(start)) => shown.0 = start.params,
                // A child whose journal is not in this store (an exported journal replayed
                // alone): its input is not shown, rather than shown as `null`.
                _ => *inputs = None,
            },
            _ => {}
        }
        nd
    }

    /// Whether the store's last commit failed (a full disk, an I/O error): a read failing now
    /// may pass with it.
    fn store_failing(&self) -> bool {
        self.engine.writer.health() == crate::writer::JournalHealth::CommitFailed
    }

    /// The journal cannot be decoded: the run is blocked (visible, with the reason), with the
    /// status record after the last record that is there.
    fn unreadable(&mut self, summary: RunSummary, error: &str) -> bool {
        let reason = format!(
            "[MAG-RC001] the journal of run {} cannot be read: {error}. Restore the store from a \
             backup, or cancel the run",
            self.run_id
        );
        let last = self.engine.store.read_journal_raw(self.run_id).ok();
        let next_seq = last
            .as_ref()
            .and_then(|raw| raw.last())
            .map_or(0, |(seq, _)| seq + 1);
        self.outbox.next_seq = next_seq;
        self.outbox.summary = Some(summary);
        self.block_unloadable(reason);
        true
    }

    /// Blocks a run whose journal cannot be loaded. Its status records cannot be read, so the
    /// summary says whether the block was journaled before (it is not journaled again).
    fn block_unloadable(&mut self, reason: String) {
        let reported = self
            .outbox
            .summary
            .as_ref()
            .is_some_and(|s| s.status == RunStatus::Blocked);
        if reported {
            tracing::error!(run = %self.run_id, %reason, "run blocked");
            self.blocked = Some(reason);
        } else {
            self.block(reason);
        }
    }

    /// Replays `entries` against the registered code without acting or writing: returns why
    /// the run would block (non-determinism, a panic, a missing workflow), if it would.
    pub(crate) fn check(
        &mut self,
        entries: Vec<Entry>,
        summary: RunSummary,
    ) -> Option<crate::engine::ReplayError> {
        self.checking = true;
        if !self.replay(entries, summary) {
            return Some(crate::engine::ReplayError::other(format!(
                "[MAG-EN005] run {} cannot be replayed here: this engine has no front end for \
                 it; register its workflow (or interpreter) on the engine's builder",
                self.run_id
            )));
        }
        self.attempts.abort_all();
        let message = self.blocked.take()?;
        Some(crate::engine::ReplayError {
            message,
            nondeterminism: self.diverged.take().map(Box::new),
        })
    }

    /// Re-runs the code against the journal: each record is applied in journal order and the
    /// code is polled after each, so that it sees completions in the order they were journaled.
    /// A task step whose first attempt and final result are the next two records completes
    /// as the code makes it (`Shared::task_from_journal`): the loop skips those records.
    pub(super) fn replay(&mut self, entries: Vec<Entry>, summary: RunSummary) -> bool {
        self.outbox.next_seq = entries.last().map_or(0, |e| e.seq + 1);
        self.outbox.summary = Some(summary);
        let Some(Entry {
            record: Record::Start(start),
            ..
        }) = entries.first()
        else {
            let reason = format!(
                "[MAG-RC001] the journal of run {} does not begin with its StartRecord. Restore \
                 the store from a backup, or cancel the run",
                self.run_id
            );
            self.block_unloadable(reason);
            return true;
        };
        let start = start.clone();
        self.journal_cap = self.journal_limit(&start.scope);
        let journaled = FirstRecords::of(&entries);
        self.state.reserve(entries.len() / 2);
        let last_status = entries
            .iter()
            .rposition(|e| matches!(e.record, Record::Status { .. }));
        let journaled_status = last_status.and_then(|i| match &entries[i].record {
            Record::Status { status, reason } => Some((*status, reason.clone())),
            _ => None,
        });
        let ended = journaled_status
            .as_ref()
            .is_some_and(|(s, _)| s.is_terminal());
        if ended && !self.checking {
            // The code is not run again; late deliveries only need to know the steps.
            if let Some(i) = last_status {
                let _ = self
                    .state
                    .apply(entries[i].seq, &entries[i].record, &mut Vec::new());
            }
            self.state.load_ended(&entries, journaled);
            self.start = Some(*start);
            return true;
        }
        let entries = Arc::new(entries);
        self.replay = Some(ReplayCursor {
            journal: Some(entries.clone()),
            journaled_status: journaled_status.clone(),
            ..ReplayCursor::default()
        });
        {
            let mut s = lock(&self.shared);
            s.journal = Some(entries.clone());
            s.journaled = journaled;
            s.replaying = true;
            // Room for every task step the code may complete from the journal.
            s.replayed_tasks.reserve(entries.len() / 2);
        }
        match self.instantiate(&start) {
            Ok(()) => {}
            Err(Unrunnable::NoFrontend(frontend)) => {
                if warned()
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(frontend.clone())
                {
                    tracing::warn!(
                        frontend = %frontend,
                        "this process has no `{frontend}` front end: runs of it in this store are \
                         left as they are, for a process that has one"
                    );
                }
                return false;
            }
            Err(Unrunnable::Refused(reason)) => {
                self.start = Some(*start);
                self.block(reason);
                return true;
            }
            Err(Unrunnable::Panicked(p)) => {
                self.start = Some(*start);
                self.block(p.to_string());
                return true;
            }
        }
        self.start = Some(*start);
        if let Some(cursor) = self.replay.as_mut() {
            cursor.next = 1;
        }
        self.poll_workflow();
        while self.blocked.is_none() {
            let Some(cursor) = self.replay.as_mut() else {
                break;
            };
            let Some(e) = entries.get(cursor.next) else {
                break;
            };
            cursor.next += 1;
            self.apply(e.seq, &e.record);
            self.poll_workflow();
        }
        {
            let mut s = lock(&self.shared);
            s.replaying = false;
            // Steps the code dropped while replaying: their children are looked at below.
            self.dropped_buf.append(&mut s.newly_dropped);
            // The list of replayed steps was sized for the whole journal: it goes with the
            // replay.
            s.replayed_tasks = Vec::new();
        }
        self.replayed_buf = Vec::new();
        let cursor = self.replay.take().unwrap_or_default();
        if self.blocked.is_some() {
            return true;
        }
        // A run blocked before and now replaying cleanly is running again.
        if matches!(cursor.journaled_status, Some((RunStatus::Blocked, _))) {
            self.append_apply(Record::Status {
                status: RunStatus::Running,
                reason: Some("unblocked".into()),
            });
        }
        if self.state.is_paused() {
            // A paused run acts on nothing until it is resumed: neither on the steps its
            // journal shows pending (attempts the process running them died in included) nor
            // on what its code asks for now.
            self.held.result = cursor.result;
            self.held.rearm = true;
            let now = super::outbox::now_ms();
            self.held.commands = cursor.deferred.into_iter().map(|c| (c, now)).collect();
            // The run's deadline is not held: armed now, it ends the pause when it comes due
            // (a second arming on the resume fires nothing more).
            let deadline = lock(&self.shared).deadline.as_ref().map(|(step, _)| *step);
            if let Some(step) = deadline {
                let armed = self
                    .state
                    .rearm()
                    .into_iter()
                    .find(|e| matches!(e, crate::replay::Effect::Timer(s, _, _) if *s == step));
                self.outbox.effects.extend(armed);
            }
            self.refresh_status();
            return true;
        }
        if let Some(result) = cursor.result {
            self.finish(result);
            return true;
        }
        // A deadline that came due while no process ran the run fires first: nothing it
        // stops runs again before it.
        let deadline = lock(&self.shared).deadline.as_ref().map(|(step, _)| *step);
        if let Some(step) = deadline.filter(|&step| {
            self.state
                .timer_pending_at(step)
                .is_some_and(|at| at <= super::outbox::now_ms())
        }) {
            self.timer_fired(step, crate::replay::TimerPurpose::Sleep);
        }
        // Attempts the journal shows started and unfinished run again: each such execution is
        // journaled first, and the flush that makes it durable comes before the effect acts.
        for restart in self.state.restarts(crate::engine::worker::worker_name()) {
            let exhausted = match &restart {
                // An attempt queued for a place to run never began: the run's lost claims are
                // not counted against it, nor is the execution.
                Record::TaskRestarted { step, .. } if self.state.waits_for_admission(*step) => None,
                // Executions a clean stop interrupted are not the task's doing: not counted.
                Record::TaskRestarted {
                    step, execution, ..
                } => self.claims_exhausted.clone().or_else(|| {
                    self.executions_exhausted(*execution, self.state.interruptions(*step))
                }),
                _ => None,
            };
            let record = match (exhausted, restart) {
                // Claimed or run too often: the attempt ends, terminally, as a technical error.
                (Some(reason), Record::TaskRestarted { step, attempt, .. }) => Record::TaskResult {
                    step,
                    attempt,
                    outcome: crate::task::TaskError::TECHNICAL.into(),
                    output: serde_json::json!({ "error": reason }),
                    error: Some(reason),
                    is_final: true,
                },
                (_, restart) => restart,
            };
            self.append_apply(record);
        }
        // Steps from the journal that still wait act again; new steps act as they are made.
        let effects = self.state.rearm();
        self.outbox.effects.extend(effects);
        for c in cursor.deferred {
            let actions = self.state.request_live(c, super::outbox::now_ms());
            self.perform(actions);
        }
        // Children of steps the code dropped while replaying that the journal does not show
        // cancelled (the process died before that was journaled) are cancelled now, and their
        // open gates withdrawn.
        self.let_go_of_dropped_steps();
        self.refresh_status();
        true
    }
}
