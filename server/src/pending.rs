//! What a run's journal shows it waiting on: the commands that drive runs stop once nothing
//! but people or far-off timers can move a run, and a read that waits for a run to settle
//! answers then (`GET …/runs/{id}?wait=…&until=settled`).

use std::collections::{HashMap, HashSet};

use magrathea_core::{Engine, Entry, Record, RunId, RunStatus, Step};

/// The steps of a run's journal that started and have not completed.
#[derive(Debug, Default)]
pub struct Pending {
    /// Task attempts running (started or restarted, no result yet). A YAML run's timer, gate
    /// and sub-run states are task steps no attempt of which runs: what they wait on is
    /// counted instead.
    pub tasks: HashSet<Step>,
    /// Timers set and not fired (a gate's timeout until the gate is answered), by when due.
    pub timers: HashMap<Step, u64>,
    /// Sub-runs started and not finished.
    pub children: HashMap<Step, RunId>,
    /// Signals awaited and not received.
    pub signals: HashSet<Step>,
    /// Whether the run is a YAML run (its `StartRecord` says so).
    yaml: bool,
}

impl Pending {
    /// What `entries` (a run's journal, in order) leave pending.
    pub fn of(entries: &[Entry]) -> Self {
        let mut p = Self::default();
        p.apply(entries);
        p
    }

    /// Takes in the run's next `entries`, in journal order.
    pub fn apply(&mut self, entries: &[Entry]) {
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
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// How often a `RUNNING` run is looked at for sub-runs that wait on people.
const SUB_RUN_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// How deep sub-runs are looked into.
pub const SUB_RUN_DEPTH: usize = 32;

/// Completes once the `RUNNING` run waits only on sub-runs that themselves wait on people (a
/// gate, an operator's resume, fixed code): the run stays `RUNNING`, as its own status says,
/// but nothing moves until someone answers. A run `WAITING`, `PAUSED` or `BLOCKED` itself
/// settles through its status, which this does not look for.
pub async fn waiting_through_sub_runs(engine: &Engine, run: RunId) {
    // The run's journal is read once, then only its new records at each look.
    let mut pending = Pending::default();
    let mut next = 0;
    loop {
        tokio::time::sleep(SUB_RUN_POLL).await;
        if !matches!(engine.status(run), Ok(RunStatus::Running))
            || !read_on(engine, run, &mut pending, &mut next)
        {
            continue;
        }
        if waits_only_on_people(engine, &pending, SUB_RUN_DEPTH) {
            return;
        }
    }
}

/// Takes the records of `run` from seq `next` on into `pending`; false when they cannot be
/// read now.
fn read_on(engine: &Engine, run: RunId, pending: &mut Pending, next: &mut u64) -> bool {
    loop {
        match engine.journal_page(run, *next, 4096, 1 << 20) {
            Ok(page) if page.is_empty() => return true,
            Ok(page) => {
                *next = page.last().map_or(*next, |e| e.seq + 1);
                pending.apply(&page);
            }
            Err(_) => return false,
        }
    }
}

/// Whether a `RUNNING` run with `pending` steps waits only on people: no task attempt runs,
/// and it waits on sub-runs only, each `WAITING`, `PAUSED` or `BLOCKED` or (down to `depth`)
/// waiting only on people itself.
pub fn waits_only_on_people(engine: &Engine, pending: &Pending, depth: usize) -> bool {
    pending.tasks.is_empty()
        && !pending.children.is_empty()
        && pending
            .children
            .values()
            .all(|child| match engine.status(*child) {
                Ok(RunStatus::Waiting | RunStatus::Paused | RunStatus::Blocked) => true,
                Ok(RunStatus::Running) if depth > 0 => engine
                    .journal(*child)
                    .is_ok_and(|j| waits_only_on_people(engine, &Pending::of(&j), depth - 1)),
                _ => false,
            })
}
