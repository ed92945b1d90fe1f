//! Driving a run until it settles while showing its progress on stderr.
//!
//! Progress comes from the run's [`Follower`]: each committed record of the run and its
//! sub-runs, whichever process drives them, becomes at most one line, e.g.
//!
//! ```text
//! → state run_checks
//!   shell_task run_checks: success (1.2 s)
//! ```

use std::collections::HashMap;

use magrathea_core::{Entry, JournalUpdate, Record, RunId, RunView, Step};

use super::backend::{FollowEvent, Follower};
use super::output::{compact, duration, errln, timestamp};

/// How driving a run ended.
#[derive(Debug)]
pub(crate) enum Driven {
    /// The run is terminal, waiting on a gate or blocked.
    Settled(Box<RunView>),
    /// Ctrl-C: the run stays as journaled and carries on with `magrathea resume`.
    Interrupted,
}

/// Follows `run` until it settles, printing progress from `follower` (which saw every record
/// since the run was started or answered, so none is missed).
pub(crate) async fn drive(
    run: RunId,
    mut follower: Follower,
    journaled: &[Entry],
) -> anyhow::Result<Driven> {
    let mut progress = Progress::new(run);
    progress.seed(run, journaled);
    // A run the store's owner drives goes on there; one this process drives stops with it.
    let goes_on = match &follower {
        Follower::Remote(_) => "it goes on in the process that owns the store",
        Follower::Local(_) => "`magrathea resume` carries it on",
    };
    let mut interrupts = Interrupts::install()?;
    let interrupt = interrupts.recv();
    tokio::pin!(interrupt);
    loop {
        tokio::select! {
            event = follower.next() => match event? {
                FollowEvent::Update(u) => progress.show(&u),
                FollowEvent::Skipped(n) => errln!("  … {n} progress updates skipped"),
                FollowEvent::Settled(view) => return Ok(Driven::Settled(view)),
            },
            _ = &mut interrupt => {
                errln!("interrupted: run {run} stays as journaled; {goes_on}");
                return Ok(Driven::Interrupted);
            }
        }
    }
}

/// Ctrl-C (SIGINT), SIGTERM or SIGHUP (the terminal closed, an SSH session dropped): each
/// stops a command that drives runs, which stay as journaled for `magrathea resume` (a task
/// in flight is journaled as interrupted, not counted as a crash). The handlers are installed on creation, before any
/// progress is printed: `ctrl_c()` would only install one when first polled, and a signal right
/// after the first line would kill the process instead of interrupting it.
pub(crate) struct Interrupts {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

/// Handlers a command installed before it follows its run ([`Interrupts::keep`]).
static KEPT: std::sync::Mutex<Option<Interrupts>> = std::sync::Mutex::new(None);

impl Interrupts {
    /// The handlers [`Interrupts::keep`] kept, with any signal that came since, else new ones.
    /// A command that starts or changes a run installs them before it does, so that a Ctrl-C
    /// or SIGTERM from then on interrupts it (exit 130, the run as journaled) instead of
    /// killing the process, and keeps them for the follower of its run.
    pub(crate) fn install() -> anyhow::Result<Self> {
        let kept = KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        match kept {
            Some(kept) => Ok(kept),
            None => Self::new(),
        }
    }

    /// Keeps the handlers for the next [`Interrupts::install`] of this process.
    pub(crate) fn keep(self) {
        *KEPT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(self);
    }

    fn new() -> anyhow::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self {
                int: signal(SignalKind::interrupt())
                    .map_err(|e| anyhow::anyhow!("cannot handle Ctrl-C: {e}"))?,
                term: signal(SignalKind::terminate())
                    .map_err(|e| anyhow::anyhow!("cannot handle SIGTERM: {e}"))?,
                hup: signal(SignalKind::hangup())
                    .map_err(|e| anyhow::anyhow!("cannot handle SIGHUP: {e}"))?,
            })
        }
        #[cfg(not(unix))]
        Ok(Self {})
    }

    /// Completes at the next Ctrl-C, SIGTERM or SIGHUP.
    pub(crate) async fn recv(&mut self) {
        #[cfg(unix)]
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
            _ = self.hup.recv() => {}
        }
        #[cfg(not(unix))]
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Turns journal records into progress lines.
#[derive(Debug)]
struct Progress {
    main: RunId,
    names: HashMap<RunId, String>,
    /// Start time, task kind and name of each task attempt in flight.
    started: HashMap<(RunId, Step), (u64, String, String)>,
}

impl Progress {
    fn new(main: RunId) -> Self {
        Self {
            main,
            names: HashMap::new(),
            started: HashMap::new(),
        }
    }

    /// Learns the attempts `entries` (the run's journal, read once the follower was in place)
    /// show started, so that their results and re-executions are named. A result the journal
    /// holds already may still come as an update (it was journaled while the journal was
    /// read): its start is kept for it.
    fn seed(&mut self, run: RunId, entries: &[Entry]) {
        for e in entries {
            if let Record::TaskStarted {
                step, task, name, ..
            } = &e.record
            {
                self.started
                    .insert((run, *step), (e.at_ms, task.clone(), name.clone()));
            }
        }
    }

    fn show(&mut self, update: &JournalUpdate) {
        for entry in update.entries.iter() {
            if let Some(line) = self.line(update.run_id, entry) {
                if update.run_id == self.main {
                    errln!("{line}");
                } else {
                    let name = self
                        .names
                        .get(&update.run_id)
                        .map_or("child", String::as_str);
                    errln!("  [{name} {}] {line}", short(update.run_id));
                }
            }
        }
    }

    fn line(&mut self, run: RunId, e: &Entry) -> Option<String> {
        Some(match &e.record {
            Record::Start(s) => {
                self.names.insert(run, s.workflow_name.clone());
                format!(
                    "▶ {} started (run {run}) at {}",
                    s.workflow_name,
                    timestamp(e.at_ms)
                )
            }
            Record::StateEntered { state, .. } => format!("→ state {state}"),
            Record::TaskStarted {
                step, task, name, ..
            } => {
                self.started
                    .insert((run, *step), (e.at_ms, task.clone(), name.clone()));
                return None;
            }
            Record::TaskResult {
                step,
                attempt,
                outcome,
                error,
                is_final,
                ..
            } => {
                let (t0, task, name) = self.started.remove(&(run, *step)).unwrap_or((
                    e.at_ms,
                    "task".into(),
                    format!("#{step}"),
                ));
                let took = duration(e.at_ms.saturating_sub(t0));
                let attempt = if *attempt > 1 {
                    format!("attempt {attempt}, ")
                } else {
                    String::new()
                };
                let error = error
                    .as_deref()
                    .map(|m| format!(" — {m}"))
                    .unwrap_or_default();
                let retry = if *is_final { "" } else { "; will retry" };
                format!("  {task} {name}: {outcome} ({attempt}{took}){error}{retry}")
            }
            Record::TaskRestarted {
                step,
                attempt,
                execution,
                ..
            } => {
                // The execution's duration counts from its restart.
                let name = match self.started.get_mut(&(run, *step)) {
                    Some((t0, _, name)) => {
                        *t0 = e.at_ms;
                        name.clone()
                    }
                    None => format!("#{step}"),
                };
                format!(
                    "  ↻ {name}: attempt {attempt} runs again after recovery (execution {execution})"
                )
            }
            Record::TaskQueued { step, .. } => {
                let name = self
                    .started
                    .get(&(run, *step))
                    .map_or_else(|| format!("#{step}"), |(_, _, name)| name.clone());
                format!("  … {name}: waits for a place in its project's lane")
            }
            Record::TaskAdmitted { step, .. } => {
                // The step's duration counts from its admission.
                match self.started.get_mut(&(run, *step)) {
                    Some((t0, _, name)) => {
                        *t0 = e.at_ms;
                        format!("  … {name}: its turn, it begins")
                    }
                    None => format!("  … #{step}: its turn, it begins"),
                }
            }
            Record::Var { key, value, .. } => format!("  storeAs {key} = {}", compact(value)),
            Record::TimerSet {
                fire_at_ms,
                purpose,
                ..
            } => format!(
                "  ⏲ {purpose} timer: fires in {}",
                duration(fire_at_ms.saturating_sub(e.at_ms))
            ),
            Record::TimerFired { .. } => "  ⏲ timer fired".to_string(),
            Record::GateOpened { step, gate } => format!(
                "  ⏸ {} gate: {} (inbox item {run}-{step})",
                gate.kind.as_str(),
                super::output::one_line(&gate.title)
            ),
            Record::GateAnswered { answer, .. } => match answer.outcome {
                magrathea_core::AnswerOutcome::Decided => {
                    format!("  ✔ gate answered: {}", compact(&answer.value))
                }
                magrathea_core::AnswerOutcome::InsufficientInfo => {
                    "  ✔ gate answered: insufficient information".to_string()
                }
                magrathea_core::AnswerOutcome::Undecidable => {
                    "  ✔ gate answered: undecidable".to_string()
                }
            },
            Record::GateWithdrawn { step, .. } => {
                format!("  ⏹ gate withdrawn: nothing waits for it (inbox item {run}-{step})")
            }
            Record::ChildStarted {
                workflow,
                child_run_id,
                ..
            } => {
                self.names.insert(*child_run_id, workflow.clone());
                format!("  ↳ sub-run {workflow} ({child_run_id})")
            }
            Record::ChildFinished { status, .. } => format!("  ↲ sub-run {status}"),
            Record::Status { status, reason } => match reason {
                Some(r) => format!("■ {status}: {r}"),
                None => format!("■ {status}"),
            },
            Record::CancelRequested { reason } => format!("  cancel requested: {reason}"),
            Record::Ignored { what, .. } => format!("  ignored a late {what}"),
            // A step the run works out itself (a condition, a templated duration) that failed:
            // its error, which the run's reason (`no transition for outcome …`) does not carry.
            Record::SideEffect { name, value, .. } => {
                if value.get("allowed") == Some(&serde_json::Value::Bool(false)) {
                    let why = value.get("reason").and_then(serde_json::Value::as_str);
                    format!("  {name}: denied — {}", why.unwrap_or("not allowed"))
                } else {
                    let error = value.get("error").and_then(serde_json::Value::as_str)?;
                    format!("  {name} failed — {error}")
                }
            }
            _ => return None,
        })
    }
}

fn short(run: RunId) -> String {
    run.to_string()[..8].to_string()
}
