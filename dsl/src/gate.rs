//! Questions for people: a typed [`Gate`] builder and the typed answers a workflow gets back.
//!
//! A gate opens an inbox item and waits for its answer, its timeout or the run's
//! cancellation, whichever is journaled first. [`Context::approval`], [`Context::decision`]
//! and [`Context::feedback`] turn the journaled outcome into [`Approval`], [`Decision`] or
//! [`Feedback`], so the workflow matches on what happened instead of reading JSON.
//!
//! [`Context::approval`]: crate::Context::approval
//! [`Context::decision`]: crate::Context::decision
//! [`Context::feedback`]: crate::Context::feedback

use std::marker::PhantomData;
use std::time::Duration;

use magrathea_core::{AnswerOutcome, GateAnswer, GateKind, GateOutcome, GateSpec};
use serde_json::Value;

/// How urgent a gate is; shown with its inbox item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Criticality {
    /// Can wait.
    Low,
    /// The default.
    #[default]
    Normal,
    /// Needs attention now.
    Critical,
}

impl Criticality {
    /// The journaled name: `LOW`, `NORMAL` or `CRITICAL`.
    pub fn as_str(self) -> &'static str {
        match self {
            Criticality::Low => "LOW",
            Criticality::Normal => "NORMAL",
            Criticality::Critical => "CRITICAL",
        }
    }
}

/// A question for a person, answered through the inbox. `A` is the answer the workflow gets:
/// [`Approval`], [`Decision`] or [`Feedback`].
///
/// ```
/// use std::time::Duration;
/// use magrathea::{Approval, Criticality, Gate};
///
/// let gate: Gate<Approval> = Gate::approval("Ship order A-1042?")
///     .body("3 lines, 154.47 EUR")
///     .assigned_to("@ops")
///     .criticality(Criticality::Critical)
///     .tag("orders")
///     .timeout(Duration::from_secs(24 * 3600));
/// assert_eq!(gate.spec().timeout_ms, Some(86_400_000));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Gate<A> {
    spec: GateSpec,
    answer: PhantomData<fn() -> A>,
}

impl<A> Gate<A> {
    fn new(kind: GateKind, title: &str) -> Self {
        Self {
            spec: GateSpec {
                kind,
                title: title.into(),
                body: String::new(),
                options: Vec::new(),
                assigned_to: String::new(),
                criticality: Criticality::Normal.as_str().into(),
                tags: Vec::new(),
                timeout_ms: None,
                meta: Value::Null,
            },
            answer: PhantomData,
        }
    }

    /// Longer text under the title.
    pub fn body(mut self, body: impl Into<String>) -> Self {
        self.spec.body = body.into();
        self
    }

    /// Who should answer: a user name, `@group` or tag.
    pub fn assigned_to(mut self, who: impl Into<String>) -> Self {
        self.spec.assigned_to = who.into();
        self
    }

    /// How urgent it is (default [`Criticality::Normal`]).
    pub fn criticality(mut self, criticality: Criticality) -> Self {
        self.spec.criticality = criticality.as_str().into();
        self
    }

    /// Adds a label.
    pub fn tag(mut self, tag: impl Into<String>) -> Self {
        self.spec.tags.push(tag.into());
        self
    }

    /// Gives up waiting after `timeout` (default: waits for ever). The timeout is a durable
    /// timer that races the answer: whichever is journaled first wins, also across restarts.
    /// Saturates at `u64::MAX` milliseconds.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec.timeout_ms = Some(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Extra data for the inbox UI.
    pub fn meta(mut self, meta: Value) -> Self {
        self.spec.meta = meta;
        self
    }

    /// The inbox item's content as journaled.
    pub fn spec(&self) -> &GateSpec {
        &self.spec
    }

    /// The inbox item's content as journaled.
    pub fn into_spec(self) -> GateSpec {
        self.spec
    }
}

impl Gate<Approval> {
    /// An APPROVAL gate: approve or reject.
    pub fn approval(title: &str) -> Self {
        Self::new(GateKind::Approval, title)
    }
}

impl Gate<Decision> {
    /// A DECISION gate: choose one of `options` (an answer naming another option is refused).
    ///
    /// # Panics
    ///
    /// When `options` is empty: nobody could ever answer the gate. In workflow code the panic
    /// blocks the run (`MAG-WF001`, naming this call's place) until the code is fixed.
    #[track_caller]
    pub fn decision<S: Into<String>>(title: &str, options: impl IntoIterator<Item = S>) -> Self {
        let mut gate = Self::new(GateKind::Decision, title);
        gate.spec.options = options.into_iter().map(Into::into).collect();
        assert!(
            !gate.spec.options.is_empty(),
            "the decision gate `{title}` offers no options: nobody could answer it; pass at \
             least one option"
        );
        gate
    }
}

impl Gate<Feedback> {
    /// A FEEDBACK gate: free text.
    pub fn feedback(title: &str) -> Self {
        Self::new(GateKind::Feedback, title)
    }
}

impl From<&str> for Gate<Approval> {
    /// An approval gate with only a title.
    fn from(title: &str) -> Self {
        Self::approval(title)
    }
}

impl From<&str> for Gate<Feedback> {
    /// A feedback gate with only a title.
    fn from(title: &str) -> Self {
        Self::feedback(title)
    }
}

impl From<String> for Gate<Approval> {
    /// An approval gate with only a title (e.g. from `format!`).
    fn from(title: String) -> Self {
        Self::approval(&title)
    }
}

impl From<&String> for Gate<Approval> {
    /// An approval gate with only a title.
    fn from(title: &String) -> Self {
        Self::approval(title)
    }
}

impl From<String> for Gate<Feedback> {
    /// A feedback gate with only a title (e.g. from `format!`).
    fn from(title: String) -> Self {
        Self::feedback(&title)
    }
}

impl From<&String> for Gate<Feedback> {
    /// A feedback gate with only a title.
    fn from(title: &String) -> Self {
        Self::feedback(title)
    }
}

/// Why a person answered without deciding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NoDecision {
    /// They need more information.
    InsufficientInfo,
    /// It cannot be decided.
    Undecidable,
}

/// The end of an [approval gate](Gate::approval).
#[derive(Debug, Clone, PartialEq)]
#[must_use = "an approval gate may end rejected, timed out or cancelled: match on its answer"]
pub enum Approval {
    /// Approved.
    Approved {
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// Rejected.
    Rejected {
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// Answered without a decision.
    Undecided {
        /// Why.
        why: NoDecision,
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// The gate's timeout fired first.
    TimedOut,
    /// The run was cancelled while the gate was open; the reason.
    Cancelled(String),
}

impl Approval {
    /// Whether it was approved.
    pub fn is_approved(&self) -> bool {
        matches!(self, Approval::Approved { .. })
    }
}

/// The end of a [decision gate](Gate::decision).
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// One of the gate's options was chosen.
    Chosen {
        /// The option.
        option: String,
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// Answered without a decision.
    Undecided {
        /// Why.
        why: NoDecision,
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// The gate's timeout fired first.
    TimedOut,
    /// The run was cancelled while the gate was open; the reason.
    Cancelled(String),
}

/// The end of a [feedback gate](Gate::feedback).
#[derive(Debug, Clone, PartialEq)]
pub enum Feedback {
    /// Text was given.
    Given {
        /// The text.
        text: String,
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// Answered without a decision.
    Undecided {
        /// Why.
        why: NoDecision,
        /// Who answered.
        by: String,
        /// Their comment.
        comment: Option<String>,
    },
    /// The gate's timeout fired first.
    TimedOut,
    /// The run was cancelled while the gate was open; the reason.
    Cancelled(String),
}

/// A typed answer, read from a journaled gate outcome.
pub(crate) trait FromOutcome {
    fn from_outcome(outcome: GateOutcome) -> Self;
}

/// The decided answer, or why there was none.
enum Answered {
    Decided(Value, String, Option<String>),
    Undecided(NoDecision, String, Option<String>),
}

fn answered(answer: GateAnswer) -> Answered {
    let why = match answer.outcome {
        AnswerOutcome::Decided => {
            return Answered::Decided(answer.value, answer.answered_by, answer.comment);
        }
        AnswerOutcome::InsufficientInfo => NoDecision::InsufficientInfo,
        AnswerOutcome::Undecidable => NoDecision::Undecidable,
    };
    Answered::Undecided(why, answer.answered_by, answer.comment)
}

fn text_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

// The engine refuses a decided answer that does not fit its gate (`approved` not a boolean,
// an option not offered, no `text`), so the fallbacks below only meet journals written by
// hand: anything but `approved: true` rejects, a missing option or text reads as empty.

impl FromOutcome for Approval {
    fn from_outcome(outcome: GateOutcome) -> Self {
        match outcome {
            GateOutcome::Answered(answer) => match answered(answer) {
                Answered::Decided(value, by, comment) => {
                    if value.get("approved") == Some(&Value::Bool(true)) {
                        Approval::Approved { by, comment }
                    } else {
                        Approval::Rejected { by, comment }
                    }
                }
                Answered::Undecided(why, by, comment) => Approval::Undecided { why, by, comment },
            },
            GateOutcome::TimedOut => Approval::TimedOut,
            GateOutcome::Cancelled(reason) => Approval::Cancelled(reason),
        }
    }
}

impl FromOutcome for Decision {
    fn from_outcome(outcome: GateOutcome) -> Self {
        match outcome {
            GateOutcome::Answered(answer) => match answered(answer) {
                Answered::Decided(value, by, comment) => Decision::Chosen {
                    option: text_field(&value, "chosen"),
                    by,
                    comment,
                },
                Answered::Undecided(why, by, comment) => Decision::Undecided { why, by, comment },
            },
            GateOutcome::TimedOut => Decision::TimedOut,
            GateOutcome::Cancelled(reason) => Decision::Cancelled(reason),
        }
    }
}

impl FromOutcome for Feedback {
    fn from_outcome(outcome: GateOutcome) -> Self {
        match outcome {
            GateOutcome::Answered(answer) => match answered(answer) {
                Answered::Decided(value, by, comment) => Feedback::Given {
                    text: text_field(&value, "text"),
                    by,
                    comment,
                },
                Answered::Undecided(why, by, comment) => Feedback::Undecided { why, by, comment },
            },
            GateOutcome::TimedOut => Feedback::TimedOut,
            GateOutcome::Cancelled(reason) => Feedback::Cancelled(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_of_any_string_kind_makes_a_gate() {
        let order = 7;
        let titled = |g: Gate<Approval>| g.into_spec().title;
        assert_eq!(titled(format!("Ship {order}?").into()), "Ship 7?");
        assert_eq!(titled((&format!("Ship {order}?")).into()), "Ship 7?");
        let asked: Gate<Feedback> = format!("Why {order}?").into();
        assert_eq!(asked.into_spec().title, "Why 7?");
    }

    #[test]
    #[should_panic(expected = "offers no options")]
    fn a_decision_without_options_is_refused_where_it_is_made() {
        let _ = Gate::decision("Pick", Vec::<String>::new());
    }

    #[test]
    fn answers_map_to_their_variants() {
        let approve = GateAnswer::approve().by("ann").with_comment("ok");
        assert_eq!(
            Approval::from_outcome(GateOutcome::Answered(approve)),
            Approval::Approved {
                by: "ann".into(),
                comment: Some("ok".into())
            }
        );
        assert_eq!(
            Approval::from_outcome(GateOutcome::Answered(GateAnswer::reject().by("bob"))),
            Approval::Rejected {
                by: "bob".into(),
                comment: None
            }
        );
        assert_eq!(
            Decision::from_outcome(GateOutcome::Answered(GateAnswer::insufficient_info())),
            Decision::Undecided {
                why: NoDecision::InsufficientInfo,
                by: String::new(),
                comment: None
            }
        );
        assert_eq!(
            Feedback::from_outcome(GateOutcome::Answered(GateAnswer::text("fine"))),
            Feedback::Given {
                text: "fine".into(),
                by: String::new(),
                comment: None
            }
        );
        assert_eq!(
            Feedback::from_outcome(GateOutcome::TimedOut),
            Feedback::TimedOut
        );
        assert_eq!(
            Decision::from_outcome(GateOutcome::Cancelled("stop".into())),
            Decision::Cancelled("stop".into())
        );
    }

    #[test]
    fn the_builder_fills_the_spec() {
        let spec = Gate::decision("Carrier?", ["dhl", "ups"])
            .body("pick one")
            .assigned_to("@ops")
            .criticality(Criticality::Low)
            .tag("shipping")
            .timeout(Duration::from_secs(2))
            .into_spec();
        assert_eq!(spec.kind, GateKind::Decision);
        assert_eq!(spec.options, ["dhl", "ups"]);
        assert_eq!(spec.criticality, "LOW");
        assert_eq!(spec.tags, ["shipping"]);
        assert_eq!(spec.timeout_ms, Some(2000));
        assert_eq!(
            Gate::approval("x").timeout(Duration::MAX).spec().timeout_ms,
            Some(u64::MAX)
        );
    }
}
