//! The approval gates the hub has seen open, so that a gate's answer or a timer's firing is
//! told apart from the other steps without reading the run's journal.
//!
//! Every `TimerFired` is a milestone (a gate's timeout is one), and so is every
//! `GateAnswered`; which of them concern an approval only the `GateOpened` record of their
//! step says. Reading the run's journal for each would cost a whole journal per timer: a run
//! that sleeps in a loop, or retries with backoff, would have its journal read at every tick
//! while any tenant subscribes to events. The hub notes the approval gates as they open, for
//! the runs whose start it saw (their every milestone passed through it since), and reads a
//! journal only for the other runs: those recovered at the engine's start, or seen before the
//! hub fell behind, or any run on a store several workers share (a run may move between
//! them).

use std::collections::HashMap;

use magrathea_core::{GateSpec, Record, RunId, RunStatus};

/// The most runs whose gates are followed; beyond it, runs are left to journal reads.
const MAX_RUNS: usize = 100_000;

/// What the hub knows of the runs' approval gates (see the module docs).
#[derive(Debug, Default)]
pub(super) struct OpenGates {
    /// The runs whose every milestone the hub saw since their start, each with its open
    /// approval gates by step.
    followed: HashMap<RunId, HashMap<u32, GateSpec>>,
    /// Off on a store several workers share.
    enabled: bool,
}

/// Whether the step of a gate answer or a timer is an approval gate.
#[derive(Debug)]
pub(super) enum Known {
    /// It is: the gate as it opened.
    Approval(GateSpec),
    /// It is not.
    Other,
    /// The hub cannot tell: read the journal.
    Unknown,
}

impl OpenGates {
    /// Gates followed when `enabled` (a store this process owns alone).
    pub(super) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            ..Self::default()
        }
    }

    /// Notes what `record` of `run` says of its gates. `is_approval` tells the gates the hub
    /// reports.
    pub(super) fn note(&mut self, run: RunId, record: &Record, is_approval: fn(&GateSpec) -> bool) {
        match record {
            Record::Start(_) => self.started(run),
            Record::GateOpened { step, gate } if is_approval(gate) => self.opened(run, *step, gate),
            Record::Status { status, .. } if is_terminal(*status) => self.ended(run),
            _ => {}
        }
    }

    /// `run` started: its milestones pass through the hub from now on.
    fn started(&mut self, run: RunId) {
        if self.enabled && self.followed.len() < MAX_RUNS {
            self.followed.entry(run).or_default();
        }
    }

    /// An approval gate opened at `step` of `run`.
    fn opened(&mut self, run: RunId, step: u32, gate: &GateSpec) {
        if let Some(gates) = self.followed.get_mut(&run) {
            gates.insert(step, gate.clone());
        }
    }

    /// `run` ended: nothing of it is kept.
    fn ended(&mut self, run: RunId) {
        self.followed.remove(&run);
    }

    /// Whether `step` of `run` is an open approval gate, taken out of the notes (its answer or
    /// its timeout closes it).
    pub(super) fn close(&mut self, run: RunId, step: u32) -> Known {
        match self.followed.get_mut(&run) {
            Some(gates) => gates.remove(&step).map_or(Known::Other, Known::Approval),
            None => Known::Unknown,
        }
    }

    /// The hub missed milestones: nothing it noted can be relied on any more.
    pub(super) fn forget_all(&mut self) {
        self.followed.clear();
    }
}

fn is_terminal(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Done | RunStatus::Failed | RunStatus::Cancelled
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use magrathea_core::GateKind;

    fn gate(kind: GateKind) -> GateSpec {
        GateSpec {
            kind,
            title: "ship?".into(),
            body: String::new(),
            options: Vec::new(),
            assigned_to: String::new(),
            criticality: String::new(),
            tags: Vec::new(),
            timeout_ms: None,
            meta: serde_json::Value::Null,
        }
    }

    fn approval(gate: &GateSpec) -> bool {
        gate.kind == GateKind::Approval
    }

    fn opened(open: &mut OpenGates, run: RunId, kind: GateKind) {
        let record = Record::GateOpened {
            step: 3,
            gate: Box::new(gate(kind)),
        };
        open.note(run, &record, approval);
    }

    #[test]
    fn a_followed_runs_gates_are_known_and_other_runs_are_left_to_a_read() {
        let mut open = OpenGates::new(true);
        let (followed, other) = (RunId::new(), RunId::new());
        open.started(followed);
        opened(&mut open, followed, GateKind::Approval);
        opened(&mut open, other, GateKind::Approval);
        assert!(matches!(open.close(followed, 3), Known::Approval(_)));
        // Closed once: a second record of the step is no approval's.
        assert!(matches!(open.close(followed, 3), Known::Other));
        assert!(matches!(open.close(followed, 7), Known::Other));
        assert!(matches!(open.close(other, 3), Known::Unknown));
        let done = Record::Status {
            status: RunStatus::Done,
            reason: None,
        };
        open.note(followed, &done, approval);
        assert!(matches!(open.close(followed, 7), Known::Unknown));
    }

    #[test]
    fn a_decision_gate_is_no_approval_and_a_shared_store_follows_nothing() {
        let mut open = OpenGates::new(true);
        let run = RunId::new();
        open.started(run);
        opened(&mut open, run, GateKind::Decision);
        assert!(matches!(open.close(run, 3), Known::Other));
        open.forget_all();
        assert!(matches!(open.close(run, 3), Known::Unknown));

        let mut shared = OpenGates::new(false);
        shared.started(run);
        opened(&mut shared, run, GateKind::Approval);
        assert!(matches!(shared.close(run, 3), Known::Unknown));
    }
}
