//! The typed non-determinism report: what the journal holds and what the code asked for.

use std::fmt;

use crate::id::RunId;
use crate::record::{Record, Step, StepKind};

/// A step as one side knows it: its kind and name (for a record that opens no step, its type).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepIdentity {
    /// The step's kind; `None` for a record that is not the first record of a step.
    pub kind: Option<StepKind>,
    /// The step's name (task label, timer purpose, gate title, …) or the record's type name.
    pub name: String,
}

impl StepIdentity {
    pub(crate) fn new(kind: StepKind, name: impl Into<String>) -> Self {
        Self {
            kind: Some(kind),
            name: name.into(),
        }
    }

    pub(crate) fn of_record(record: &Record) -> Self {
        match super::identity(record) {
            Some((kind, name, _)) => Self::new(kind, name),
            None => Self {
                kind: None,
                name: record.type_name().to_string(),
            },
        }
    }
}

impl fmt::Display for StepIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            Some(kind) => write!(f, "{} `{}`", kind_name(kind), self.name),
            None => write!(f, "record `{}`", self.name),
        }
    }
}

/// How the code and the journal disagree.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Divergence {
    /// `[MAG-ND001]`: the code asks for another step than the journal holds at this number.
    Mismatch {
        /// What the journal holds.
        journal: StepIdentity,
        /// What the code asks for.
        code: StepIdentity,
        /// Same kind and name, but the input's hash differs.
        different_input: bool,
        /// For a task whose input differs: the journaled input and the code's, in that order;
        /// for a gate, what replay compares of each (its kind, title and options); for a child,
        /// the parameters its run started with and the code's input.
        inputs: Option<Box<(serde_json::Value, serde_json::Value)>>,
    },
    /// `[MAG-ND002]`: the journal holds a step that the code no longer asks for.
    Missing {
        /// What the journal holds.
        journal: StepIdentity,
    },
    /// `[MAG-ND005]`: the journal holds a patch marker of another patch at this step.
    Patch {
        /// The patch the journal holds.
        journal: String,
        /// The patch the code asks about.
        code: String,
    },
}

/// The code of a run no longer matches its journal: the run is blocked, with both sides shown.
///
/// Raised during replay, never silently: the run stays `BLOCKED` until the engine is reopened
/// with code that matches the journal (or the run is cancelled).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonDeterminism {
    /// The run.
    pub run_id: RunId,
    /// The step number where the two sides part.
    pub step: Step,
    /// How they differ.
    pub divergence: Divergence,
}

impl NonDeterminism {
    /// The stable code (`MAG-ND001`, `MAG-ND002`, `MAG-ND005`).
    pub fn code(&self) -> &'static str {
        match self.divergence {
            Divergence::Mismatch { .. } => "MAG-ND001",
            Divergence::Missing { .. } => "MAG-ND002",
            Divergence::Patch { .. } => "MAG-ND005",
        }
    }
}

const REMEDY: &str = "The workflow code changed since the run started: restore the code the run \
                      started with, guard the change with a patch marker (`ctx.patched`), or \
                      cancel the run";

/// What a report of a journaled step the code no longer asks for says about it: the code
/// changed, or it waited on something replay does not reproduce (then it worked live).
const MISSING_REMEDY: &str = "Either the workflow code changed since the run started (restore the \
                              code the run started with, guard the change with a patch marker \
                              (`ctx.patched`), or cancel the run), or it waits on something other \
                              than its context, which replay does not reproduce: a `tokio::time` \
                              sleep or timeout, a channel, a lock (wait with `ctx.sleep`, and race \
                              it with `ctx.select`)";

/// What a report of a step asked for with another input says about it.
const INPUT_REMEDY: &str = "The code now builds this step's input differently: from changed code \
                            or types, or in an order that changes between processes (a list \
                            made from a HashMap or HashSet, a HashSet itself: use a BTreeMap, a \
                            BTreeSet or a sorted Vec). Restore the code the run started with, \
                            guard the change with a patch marker (`ctx.patched`), or cancel the \
                            run";

impl fmt::Display for NonDeterminism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (run, step) = (self.run_id, self.step);
        match &self.divergence {
            Divergence::Mismatch {
                journal,
                code,
                different_input,
                inputs,
            } => {
                let note = match (different_input, inputs) {
                    (true, Some(inputs)) => format!(
                        " with a different input (journaled: {}; now: {})",
                        shown(&inputs.0),
                        shown(&inputs.1)
                    ),
                    (true, None) => " with a different input".to_string(),
                    (false, _) => String::new(),
                };
                let remedy = if *different_input {
                    INPUT_REMEDY
                } else {
                    REMEDY
                };
                write!(
                    f,
                    "[MAG-ND001] non-determinism in run {run} at step {step}: the journal has \
                     {journal} but the code now requests {code}{note}. {remedy}"
                )
            }
            Divergence::Missing { journal } => write!(
                f,
                "[MAG-ND002] non-determinism in run {run}: the journal has step {step} \
                 ({journal}) but the code no longer requests it. {MISSING_REMEDY}"
            ),
            Divergence::Patch { journal, code } => write!(
                f,
                "[MAG-ND005] non-determinism in run {run} at step {step}: the journal has patch \
                 marker `{journal}` but the code asks for patch `{code}`. Keep the patch calls in \
                 the order the run recorded them (a patch whose old path is gone stays as \
                 `ctx.deprecate_patch(\"{journal}\")` while runs that recorded it are in flight), \
                 or cancel the run"
            ),
        }
    }
}

impl std::error::Error for NonDeterminism {}

/// Most characters of an input a report shows.
const SHOWN_INPUT: usize = 200;

/// An input as a report shows it: compact JSON, cut after [`SHOWN_INPUT`] characters.
fn shown(input: &serde_json::Value) -> String {
    let text = input.to_string();
    match text.char_indices().nth(SHOWN_INPUT) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

pub(crate) fn kind_name(k: StepKind) -> &'static str {
    match k {
        StepKind::Task => "task",
        StepKind::Timer => "timer",
        StepKind::Gate => "gate",
        StepKind::Signal => "signal wait",
        StepKind::Child => "child workflow",
        StepKind::SideEffect => "side effect",
        StepKind::State => "state",
        StepKind::Var => "variable",
    }
}
