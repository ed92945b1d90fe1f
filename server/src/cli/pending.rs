//! What a run's journal shows it waiting on: the commands that drive runs stop once nothing
//! but people or far-off timers can move a run.

use std::collections::{HashMap, HashSet};

use magrathea_core::{Entry, Record, RunId, Step};

/// The steps of a run's journal that started and have not completed.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// Task attempts running (started or restarted, no result yet). A YAML run's timer, gate
    /// and sub-run states are task steps no attempt of which runs: what they wait on is
    /// counted instead.
    pub(crate) tasks: HashSet<Step>,
    /// Timers set and not fired (a gate's timeout until the gate is answered), by when due.
    pub(crate) timers: HashMap<Step, u64>,
    /// Sub-runs started and not finished.
    pub(crate) children: HashMap<Step, RunId>,
    /// Signals awaited and not received.
    pub(crate) signals: HashSet<Step>,
    /// Whether the run is a YAML run (its `StartRecord` says so).
    yaml: bool,
}

impl Pending {
    /// What `entries` (a run's journal, in order) leave pending.
    pub(crate) fn of(entries: &[Entry]) -> Self {
        let mut p = Self::default();
        p.apply(entries);
        p
    }

    /// Takes in the run's next `entries`, in journal order.
    pub(crate) fn apply(&mut self, entries: &[Entry]) {
        let p = self;
        for e in entries {
            match &e.record {
                Record::Start(start) => p.yaml = start.frontend.as_str() == "yaml",
                Record::TaskStarted { task, .. }
                    if p.yaml && magrathea_yaml::is_held_task(task) => {}
                Record::TaskStarted { step, .. } | Record::TaskRestarted { step, .. } => {
                    p.tasks.insert(*step);
                }
                Record::TaskResult { step, .. } => {
                    p.tasks.remove(step);
                }
                Record::TimerSet {
                    step, fire_at_ms, ..
                } => {
                    p.timers.insert(*step, *fire_at_ms);
                }
                Record::TimerFired { step }
                | Record::GateAnswered { step, .. }
                | Record::GateWithdrawn { step, .. } => {
                    p.timers.remove(step);
                }
                Record::ChildStarted {
                    step, child_run_id, ..
                } => {
                    p.children.insert(*step, *child_run_id);
                }
                Record::ChildFinished { step, .. } => {
                    p.children.remove(step);
                }
                Record::SignalAwaited { step, .. } => {
                    p.signals.insert(*step);
                }
                Record::SignalReceived {
                    step: Some(step), ..
                }
                | Record::SignalDelivered { step, .. } => {
                    p.signals.remove(step);
                }
                _ => {}
            }
        }
    }
}

/// Milliseconds since the Unix epoch now, as the journal's times are written.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}
