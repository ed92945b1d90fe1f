//! What each task type can end with: the one table of outcomes (reference §3.x, §4) that
//! static analysis reads, and that says how the resolver routes an outcome through `catch:`.
//!
//! The table follows what the interpreter and the executors produce:
//!
//! | type | outcomes |
//! |---|---|
//! | `shell_task` | `success`, `business_error` (exit ≠ 0), `technical_error`, `timeout` (only with `timeoutSeconds`) |
//! | `script_task` | `success`, `technical_error`, `timeout` (default limit 60 s) |
//! | `tool_task` | `success`, `permission_error`, `technical_error`; `timeout` and any other error kind from a registered `#[task]` |
//! | `agent_task` | `success`, `agent_error`, `technical_error`, `timeout` (default limit 600 s) |
//! | `gate_task` APPROVAL | `approved`, `rejected`, `insufficient_info`, `undecidable`, `timeout` (only with `timeoutSeconds`) |
//! | `gate_task` DECISION | each option, `insufficient_info`, `undecidable`, `timeout` (only with `timeoutSeconds`); `technical_error` when `${…}` options resolve to none |
//! | `gate_task` FEEDBACK | `success`, `insufficient_info`, `undecidable`, `timeout` (only with `timeoutSeconds`) |
//! | `timer_task` | `fired`; `technical_error` only when a `${…}` duration resolves to no duration |
//! | `condition_task` | `success` when no rule matches (a matching rule or `else` routes by itself); `technical_error` when a rule fails to evaluate |
//! | `workflow_task` | `success`, `failure`, `timeout` (only with `timeoutSeconds`) |
//! | `parallel_task`, `foreach_task` | `success` (failures within `toleratedFailures`), `failure`, `timeout` (only with `timeoutSeconds`) |
//! | `terminal` | none: it ends the run |
//!
//! Every task can also end `cancelled`, but only while its run is being cancelled.
//!
//! A `timeout` of a `script_task` or `tool_task` that nothing routes goes where
//! `technical_error` goes, and one of a `workflow_task` where `failure` goes
//! ([`TaskType::timeout_stands_for`]).

use std::fmt;

use crate::ast::{Defaults, InboxKind, InboxSpec, StateSpec, TaskSpec, TaskType};
use crate::error_kind::ErrorKind;

/// An outcome a task can end with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Outcome {
    /// The task did what it was asked.
    Success,
    /// A sub-workflow ended FAILED.
    Failure,
    /// A timer fired.
    Fired,
    /// An APPROVAL gate was approved.
    Approved,
    /// An APPROVAL gate was rejected (caught as `human_rejected`).
    Rejected,
    /// A gate was answered "insufficient information".
    InsufficientInfo,
    /// A gate was answered "undecidable".
    Undecidable,
    /// A DECISION gate's chosen option.
    Chosen(String),
    /// An error kind (`technical_error`, `timeout`, …).
    Error(ErrorKind),
}

impl Outcome {
    /// The outcome string the resolver matches against `on:`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Success => "success",
            Self::Failure => "failure",
            Self::Fired => "fired",
            Self::Approved => "approved",
            Self::Rejected => "rejected",
            Self::InsufficientInfo => "insufficient_info",
            Self::Undecidable => "undecidable",
            Self::Chosen(option) => option,
            Self::Error(kind) => kind.as_str(),
        }
    }

    /// The error kind `catch:` reads this outcome as, if any.
    #[must_use]
    pub fn catch_kind(&self) -> Option<ErrorKind> {
        catch_kind(self.as_str())
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error kind `catch:` reads an outcome string as (reference §4.1: case-insensitive,
/// dashes read as underscores; a gate's `rejected` is `human_rejected`).
#[must_use]
pub fn catch_kind(outcome: &str) -> Option<ErrorKind> {
    ErrorKind::parse(outcome).or_else(|| {
        outcome
            .eq_ignore_ascii_case("rejected")
            .then_some(ErrorKind::HumanRejected)
    })
}

/// Whether a possible outcome is one a document should route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Routing {
    /// The task ends this way in normal operation: when nothing routes it, the run fails.
    Expected,
    /// Possible, but only through a mistake elsewhere (a condition comparing values of
    /// different types, a host's task reporting its own kind) or a cancellation: routing it
    /// is allowed, not asked for.
    Optional,
}

/// One outcome a state's task can end with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PossibleOutcome {
    /// The outcome.
    pub outcome: Outcome,
    /// Whether the document should route it.
    pub routing: Routing,
}

/// Everything a task can end with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcomes {
    items: Vec<PossibleOutcome>,
    /// A registered `#[task]` called as a `tool_task` may report any error kind.
    any_error_kind: bool,
    /// A DECISION gate with a `${…}` option may end with any word: the option is known only
    /// when the gate opens.
    any_choice: bool,
}

impl Outcomes {
    fn new(expected: &[Outcome], optional: &[Outcome]) -> Self {
        let mut items: Vec<PossibleOutcome> = expected
            .iter()
            .map(|o| PossibleOutcome {
                outcome: o.clone(),
                routing: Routing::Expected,
            })
            .collect();
        items.extend(optional.iter().map(|o| PossibleOutcome {
            outcome: o.clone(),
            routing: Routing::Optional,
        }));
        Self {
            items,
            any_error_kind: false,
            any_choice: false,
        }
    }

    fn none() -> Self {
        Self::new(&[], &[])
    }

    fn push(&mut self, outcome: Outcome, routing: Routing) {
        if !self.items.iter().any(|p| p.outcome == outcome) {
            self.items.push(PossibleOutcome { outcome, routing });
        }
    }

    /// The outcomes, the expected ones first.
    pub fn iter(&self) -> std::slice::Iter<'_, PossibleOutcome> {
        self.items.iter()
    }

    /// True when no outcome is possible (a terminal state).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && !self.any_error_kind
    }

    /// True when `outcome` (an `on:` key, matched exactly) can happen.
    #[must_use]
    pub fn can_end_with(&self, outcome: &str) -> bool {
        self.any_choice
            || self.items.iter().any(|p| p.outcome.as_str() == outcome)
            || (self.any_error_kind && ErrorKind::parse(outcome).is_some())
    }

    /// True when some possible outcome is caught by `catch: {kind: …}`.
    #[must_use]
    pub fn can_be_caught_as(&self, kind: ErrorKind) -> bool {
        self.any_error_kind
            || self
                .items
                .iter()
                .any(|p| p.outcome.catch_kind() == Some(kind))
    }
}

impl<'a> IntoIterator for &'a Outcomes {
    type Item = &'a PossibleOutcome;
    type IntoIter = std::slice::Iter<'a, PossibleOutcome>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

const TECHNICAL: Outcome = Outcome::Error(ErrorKind::TechnicalError);
const TIMEOUT: Outcome = Outcome::Error(ErrorKind::Timeout);
const CANCELLED: Outcome = Outcome::Error(ErrorKind::Cancelled);
const PERMISSION: Outcome = Outcome::Error(ErrorKind::PermissionError);

impl TaskType {
    /// The outcome a `timeout` of this task type also counts as, for routing and retries,
    /// when the state routes that outcome and not `timeout` itself: the reference lists
    /// `script_task`'s and `tool_task`'s outcomes as success / `technical_error` (and
    /// `permission_error`), and `workflow_task`'s as success / `failure`, so a document that
    /// routes those catches every way the task can fail. A route for `timeout` wins.
    #[must_use]
    pub fn timeout_stands_for(self) -> Option<ErrorKind> {
        match self {
            Self::ScriptTask | Self::ToolTask => Some(ErrorKind::TechnicalError),
            Self::WorkflowTask => Some(ErrorKind::Failure),
            _ => None,
        }
    }

    /// Everything a task of this type can end with, whatever the state's settings: a
    /// transition on anything else can never be taken. A DECISION gate's options are not
    /// known here (see [`StateSpec::outcomes`]); every gate kind's answers are included.
    #[must_use]
    pub fn outcomes(self) -> Outcomes {
        let mut all = match self {
            Self::GateTask => {
                let mut all = Outcomes::none();
                for kind in [
                    InboxKind::Approval,
                    InboxKind::Decision,
                    InboxKind::Feedback,
                ] {
                    for o in kind.answers(&[]) {
                        all.push(o, Routing::Expected);
                    }
                }
                all.push(TIMEOUT, Routing::Expected);
                all
            }
            // The most a state of the type can end with: with `timeoutSeconds`, and (for a
            // timer) a `${…}` duration that may resolve to no duration.
            Self::TimerTask => {
                let mut o = self.outcomes_as_configured(true);
                o.push(TECHNICAL, Routing::Optional);
                o
            }
            _ => self.outcomes_as_configured(true),
        };
        if self != Self::Terminal {
            all.push(CANCELLED, Routing::Optional);
        }
        all
    }

    /// The outcomes of a state of this type (not a gate), `with_timeout` telling whether it
    /// has `timeoutSeconds`.
    fn outcomes_as_configured(self, with_timeout: bool) -> Outcomes {
        let mut out = match self {
            // Both end with `permission_error` when the tenant's `execution:` settings refuse
            // the task type: a route for it is allowed, its absence is not worth a warning.
            Self::ShellTask => Outcomes::new(
                &[
                    Outcome::Success,
                    Outcome::Error(ErrorKind::BusinessError),
                    TECHNICAL,
                ],
                &[PERMISSION],
            ),
            Self::ScriptTask => {
                Outcomes::new(&[Outcome::Success, TECHNICAL, TIMEOUT], &[PERMISSION])
            }
            Self::ToolTask => {
                let mut o = Outcomes::new(
                    &[
                        Outcome::Success,
                        Outcome::Error(ErrorKind::PermissionError),
                        TECHNICAL,
                    ],
                    &[TIMEOUT],
                );
                o.any_error_kind = true;
                o
            }
            Self::AgentTask => Outcomes::new(
                &[
                    Outcome::Success,
                    Outcome::Error(ErrorKind::AgentError),
                    TECHNICAL,
                    TIMEOUT,
                ],
                &[],
            ),
            Self::TimerTask => Outcomes::new(&[Outcome::Fired], &[]),
            Self::ConditionTask => Outcomes::new(&[Outcome::Success], &[TECHNICAL]),
            Self::WorkflowTask => Outcomes::new(&[Outcome::Success, Outcome::Failure], &[]),
            // A fan-out whose sub-runs' inputs or collected results pass their bounds
            // (MAG-PR005, MAG-BD003) ends `technical_error`: a route for it may be taken.
            Self::ParallelTask | Self::ForeachTask => {
                Outcomes::new(&[Outcome::Success, Outcome::Failure], &[TECHNICAL])
            }
            Self::GateTask | Self::Terminal => Outcomes::none(),
        };
        // Only these enforce the state's `timeoutSeconds` themselves; script and agent tasks
        // always have a limit, a timer's wait is its duration.
        if with_timeout
            && matches!(
                self,
                Self::ShellTask | Self::WorkflowTask | Self::ParallelTask | Self::ForeachTask
            )
        {
            out.push(TIMEOUT, Routing::Expected);
        } else if self == Self::ShellTask {
            // Without one, the settings' default shell timeout (an hour unless set) still
            // stops it, with the outcome `timeout`.
            out.push(TIMEOUT, Routing::Expected);
        }
        out
    }
}

impl InboxKind {
    /// The outcomes of an answer to a gate of this kind; `options` are a DECISION's.
    #[must_use]
    pub fn answers(self, options: &[String]) -> Vec<Outcome> {
        let mut out = match self {
            Self::Approval => vec![Outcome::Approved, Outcome::Rejected],
            // A templated option is known only when the gate opens (see `InboxSpec::outcomes`).
            Self::Decision => options
                .iter()
                .filter(|o| !is_templated(o))
                .cloned()
                .map(Outcome::Chosen)
                .collect(),
            Self::Feedback => vec![Outcome::Success],
        };
        out.extend([Outcome::InsufficientInfo, Outcome::Undecidable]);
        out
    }
}

impl InboxSpec {
    /// Everything a gate of this kind and these options can end with, whether or not it has
    /// `timeoutSeconds`.
    #[must_use]
    pub fn outcomes(&self) -> Outcomes {
        let mut o = self.answers();
        o.push(TIMEOUT, Routing::Expected);
        o.push(CANCELLED, Routing::Optional);
        o
    }

    /// The outcomes of an answer to this gate.
    fn answers(&self) -> Outcomes {
        let templated =
            self.kind == InboxKind::Decision && self.options.iter().any(|o| is_templated(o));
        // Templated options that leave no option when the gate opens end it technical_error
        // (`[MAG-YR003]`).
        let optional: &[Outcome] = if templated { &[TECHNICAL] } else { &[] };
        let mut o = Outcomes::new(&self.kind.answers(&self.options), optional);
        o.any_choice = templated;
        o
    }
}

/// Whether a gate option is a `${…}` template, resolved when the gate opens.
fn is_templated(option: &str) -> bool {
    crate::template::Template::parse(option)
        .as_literal()
        .is_none()
}

impl StateSpec {
    /// Everything this state's task can end with, as configured: a gate's kind and options,
    /// whether it has a timeout (its own `timeoutSeconds`, or the document's `defaults:` for
    /// its kind), whether a timer's duration is a `${…}` template, and whether a condition has
    /// `else` (then a matching rule or `else` always routes, and the task never ends in an
    /// outcome that `on:` would see, short of an evaluation error).
    #[must_use]
    pub fn outcomes(&self, defaults: &Defaults) -> Outcomes {
        let default = match self.task_type {
            TaskType::GateTask => defaults.gate_timeout_seconds,
            TaskType::ShellTask
            | TaskType::ScriptTask
            | TaskType::ToolTask
            | TaskType::AgentTask
            | TaskType::WorkflowTask => defaults.task_timeout_seconds,
            _ => None,
        };
        let with_timeout = self.timeout_seconds.is_some() || default.is_some();
        let mut out = match &self.task {
            TaskSpec::Gate(inbox) => {
                let mut o = inbox.answers();
                if with_timeout {
                    o.push(TIMEOUT, Routing::Expected);
                }
                o
            }
            TaskSpec::Timer { parsed: None, .. } => {
                let mut o = self.task_type.outcomes_as_configured(false);
                o.push(TECHNICAL, Routing::Optional);
                o
            }
            TaskSpec::Condition {
                otherwise: Some(_), ..
            } => Outcomes::new(&[], &[TECHNICAL]),
            _ => self.task_type.outcomes_as_configured(with_timeout),
        };
        if self.task_type != TaskType::Terminal {
            out.push(CANCELLED, Routing::Optional);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(o: &Outcomes) -> Vec<&str> {
        o.iter().map(|p| p.outcome.as_str()).collect()
    }

    #[test]
    fn the_table_follows_the_reference() {
        assert_eq!(
            names(&TaskType::TimerTask.outcomes()),
            ["fired", "technical_error", "cancelled"]
        );
        assert_eq!(
            names(&TaskType::ShellTask.outcomes()),
            [
                "success",
                "business_error",
                "technical_error",
                "permission_error",
                "timeout",
                "cancelled"
            ]
        );
        assert!(TaskType::Terminal.outcomes().is_empty());
        let gate = TaskType::GateTask.outcomes();
        for o in [
            "approved",
            "rejected",
            "success",
            "insufficient_info",
            "timeout",
        ] {
            assert!(gate.can_end_with(o), "{o}");
        }
        assert!(gate.can_be_caught_as(ErrorKind::HumanRejected));
        assert!(!gate.can_be_caught_as(ErrorKind::TechnicalError));
        let tool = TaskType::ToolTask.outcomes();
        assert!(tool.can_be_caught_as(ErrorKind::BusinessError));
        assert!(!tool.can_end_with("fired"));
    }

    #[test]
    fn catch_reads_rejected_as_human_rejected() {
        assert_eq!(catch_kind("rejected"), Some(ErrorKind::HumanRejected));
        assert_eq!(
            catch_kind("Technical-Error"),
            Some(ErrorKind::TechnicalError)
        );
        assert_eq!(catch_kind("approved"), None);
    }
}
