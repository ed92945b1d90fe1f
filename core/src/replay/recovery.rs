//! What a run's state gives the driver after a restart: the executions to put on record
//! again, the effects its pending steps need again, whether it may leave memory, and the steps
//! of a run that had already ended.

use super::{Effect, Machine, RunState, StepEntry, TimerPurpose, identity};
use crate::record::{Entry, Record, Step};

impl RunState {
    /// After replay: the records that put on record each attempt the journal shows started
    /// and unfinished, which [`RunState::rearm`] executes again (side effects at least once;
    /// each execution journaled). To be appended, and durable, before those effects act.
    pub(crate) fn restarts(&self, worker: &str) -> Vec<Record> {
        self.running_tasks()
            .filter_map(|(step, t)| {
                Some(Record::TaskRestarted {
                    step,
                    attempt: t.running()?,
                    execution: t.next_execution()?,
                    worker: worker.to_string(),
                })
            })
            .collect()
    }

    /// The pending task steps with an attempt journaled as started and no result, in step
    /// order; a step the code carries out itself runs nowhere and is left out.
    fn running_tasks(&self) -> impl Iterator<Item = (Step, &super::task::TaskStep)> {
        self.pending
            .iter()
            .filter_map(|&step| match self.steps.get(&step) {
                Some(StepEntry {
                    machine: Machine::Task(t),
                    ..
                }) if !t.is_held() && t.running().is_some() => Some((step, t)),
                _ => None,
            })
    }

    /// When the process stops cleanly: the records that say which executions it interrupts,
    /// each running (begun) attempt's, so that they do not count against `maxClaimAttempts`
    /// when the attempts run again.
    pub(crate) fn interrupts(&self, worker: &str) -> Vec<Record> {
        self.running_tasks()
            .filter_map(|(step, t)| {
                Some(Record::TaskInterrupted {
                    step,
                    attempt: t.running()?,
                    execution: t.current_execution()?,
                    worker: worker.to_string(),
                })
            })
            .collect()
    }

    /// When timer step `step` comes due, while it has not fired.
    pub(crate) fn timer_pending_at(&self, step: Step) -> Option<u64> {
        match self.steps.get(&step) {
            Some(StepEntry {
                machine: Machine::Timer(t),
                ..
            }) => t.due(),
            _ => None,
        }
    }

    /// How many executions of task step `step`'s running attempt a clean stop interrupted.
    pub(crate) fn interruptions(&self, step: Step) -> u32 {
        match self.steps.get(&step) {
            Some(StepEntry {
                machine: Machine::Task(t),
                ..
            }) => t.interruptions(),
            _ => 0,
        }
    }

    /// Whether task step `step` has a running attempt that waits for a place to run (queued
    /// and never admitted): it has not begun, so a lost claim of the run does not count
    /// against it.
    pub(crate) fn waits_for_admission(&self, step: Step) -> bool {
        matches!(
            self.steps.get(&step),
            Some(StepEntry { machine: Machine::Task(t), .. }) if t.is_queued()
        )
    }

    /// After replay: the effects that pending steps need again (attempts to run, timers to
    /// register, children to check), in step order.
    pub(crate) fn rearm(&self) -> Vec<Effect> {
        let mut effects = Vec::new();
        for &step in &self.pending {
            let Some(entry) = self.steps.get(&step) else {
                continue;
            };
            match &entry.machine {
                // The code carries a held step out: nothing of it runs again.
                Machine::Task(t) if t.is_held() => {}
                Machine::Task(t) => {
                    if t.running().is_some() {
                        effects.push(Effect::Execute(step));
                    } else if let Some(at) = t.retry_at() {
                        effects.push(Effect::Timer(step, at, TimerPurpose::Retry));
                    }
                }
                Machine::Timer(t) => {
                    if let Some(at) = t.due() {
                        effects.push(Effect::Timer(step, at, TimerPurpose::Sleep));
                    }
                }
                Machine::Gate(g) => {
                    if let Some(at) = g.timeout_at() {
                        effects.push(Effect::Timer(step, at, TimerPurpose::GateTimeout));
                    }
                }
                Machine::Child(_) => effects.push(Effect::CheckChild(step)),
                Machine::Signal(_) | Machine::Recorded(_) => {}
            }
        }
        // Children this run asked to cancel may not have been told before a crash: tell them
        // again (a child that ended, or had been told, ignores it).
        let mut cancels: Vec<Step> = self.child_cancels.keys().copied().collect();
        cancels.sort_unstable();
        effects.extend(cancels.into_iter().map(Effect::CancelChild));
        effects
    }

    /// Whether the run waits only on things further away than `horizon` (ms since the epoch)
    /// or on people and signals: then it can leave memory and be replayed when woken.
    pub(crate) fn waits_beyond(&self, horizon: u64) -> bool {
        let mut waiting = 0;
        for entry in self.pending.iter().filter_map(|s| self.steps.get(s)) {
            match &entry.machine {
                // What a held step waits on is a step of its own.
                Machine::Task(t) if t.is_held() => continue,
                Machine::Task(t)
                    if t.running().is_some() || t.retry_at().is_none_or(|at| at <= horizon) =>
                {
                    return false;
                }
                Machine::Timer(t) if t.due().is_none_or(|at| at <= horizon) => return false,
                Machine::Gate(g) if g.timeout_at().is_some_and(|at| at <= horizon) => {
                    return false;
                }
                Machine::Recorded(_) => continue,
                _ => {}
            }
            waiting += 1;
        }
        waiting > 0
    }

    /// For a run that had ended when it was loaded: knows its steps (from each step's first
    /// record, `journaled` indexing `entries`) without running its code, so that late
    /// deliveries can be told apart and journaled as ignored.
    pub(crate) fn load_ended(&mut self, entries: &[Entry], journaled: super::FirstRecords) {
        for (step, i) in journaled.iter() {
            let record = &entries[i].record;
            let Some((kind, name, _)) = identity(record) else {
                continue;
            };
            let entry = StepEntry {
                name: name.to_string(),
                machine: Machine::ended(kind, record),
            };
            self.steps.insert(step, entry);
        }
        // The late answers and signals journaled since the run ended.
        let ended_at = entries
            .iter()
            .rposition(|e| matches!(e.record, Record::Status { .. }))
            .map_or(0, |i| i + 1);
        let late = entries[ended_at..]
            .iter()
            .filter(|e| matches!(e.record, Record::Ignored { .. }))
            .count();
        self.late_records = u32::try_from(late).unwrap_or(u32::MAX);
    }
}
