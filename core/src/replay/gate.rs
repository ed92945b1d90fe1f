//! A gate step: an inbox item that an answer, its timeout or cancellation completes — whichever
//! is journaled first.
//!
//! ```text
//! GateOpened ──▶ Open{timeout_at} ──GateAnswered──▶ Answered
//!                       ├──TimerFired────▶ TimedOut
//!                       ├──CancelRequested──▶ Cancelled
//!                       └──GateWithdrawn────▶ Withdrawn
//! ```

use serde_json::Value;

use crate::error::DeliverError;
use crate::record::{AnswerOutcome, GateAnswer, GateKind, GateSpec};

/// The longest comment an answer may carry, in bytes: it is journaled with the answer.
pub const MAX_ANSWER_COMMENT_BYTES: usize = 16 * 1024;

/// Whether `answer` fits the question: an APPROVAL needs `approved`, a DECISION one of its
/// options, a FEEDBACK its text. Answers that decide nothing (insufficient info, undecidable)
/// always fit. A comment holds at most [`MAX_ANSWER_COMMENT_BYTES`].
pub(crate) fn check_answer(gate: &GateSpec, answer: &GateAnswer) -> Result<(), DeliverError> {
    let bad = |m: String| Err(DeliverError::InvalidAnswer(m));
    if let Some(comment) = &answer.comment
        && comment.len() > MAX_ANSWER_COMMENT_BYTES
    {
        return bad(format!(
            "the comment holds {} bytes, more than the {MAX_ANSWER_COMMENT_BYTES} an answer \
             may carry",
            comment.len()
        ));
    }
    if answer.outcome != AnswerOutcome::Decided {
        return Ok(());
    }
    match gate.kind {
        GateKind::Approval => match answer.value.get("approved") {
            Some(Value::Bool(_)) => Ok(()),
            _ => bad("an APPROVAL answer needs `approved: true|false`".into()),
        },
        GateKind::Decision => match answer.value.get("chosen").and_then(Value::as_str) {
            Some(c) if gate.options.iter().any(|o| o == c) => Ok(()),
            Some(c) => bad(format!(
                "`{c}` is not one of the options {:?}",
                gate.options
            )),
            None => bad(format!(
                "a DECISION answer needs `chosen`, one of {:?}",
                gate.options
            )),
        },
        GateKind::Feedback => match answer.value.get("text") {
            Some(Value::String(_)) => Ok(()),
            _ => bad("a FEEDBACK answer needs `text`".into()),
        },
    }
}

/// What replay compares of a gate the code asks for with the one its journal opened: the kind
/// of question, its title and its options, the parts that decide which answers the code may
/// get. Its text, assignee, criticality, tags, timeout and UI data are not compared (as a
/// timer's duration is not): an open gate keeps what its journal holds, and a change to them
/// applies to gates opened from then on.
pub(crate) fn gate_identity(gate: &GateSpec) -> Value {
    serde_json::json!({
        "kind": gate.kind,
        "title": gate.title,
        "options": gate.options,
    })
}

/// A gate step: what it asks, and its phase.
#[derive(Debug)]
pub(crate) struct GateStep {
    pub(crate) spec: Box<GateSpec>,
    pub(crate) phase: GatePhase,
}

/// A gate's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GatePhase {
    /// Waiting for an answer; the timeout is due at `timeout_at` once journaled.
    Open { timeout_at: Option<u64> },
    /// A person answered first.
    Answered,
    /// The timeout fired first.
    TimedOut,
    /// Cancellation ended it.
    Cancelled,
    /// Nothing awaits it any more: the code dropped its future (a select's loser).
    Withdrawn,
    /// The run had ended when this process loaded it; only the question is known.
    Closed,
}

impl GateStep {
    pub(crate) fn open(spec: Box<GateSpec>) -> Self {
        Self {
            spec,
            phase: GatePhase::Open { timeout_at: None },
        }
    }

    pub(crate) fn is_resolved(&self) -> bool {
        !matches!(self.phase, GatePhase::Open { .. })
    }

    pub(crate) fn timeout_at(&self) -> Option<u64> {
        match self.phase {
            GatePhase::Open { timeout_at } => timeout_at,
            _ => None,
        }
    }

    /// The timeout's `TimerSetRecord`.
    pub(crate) fn timeout_set(&mut self, at: u64) {
        if let GatePhase::Open { timeout_at } = &mut self.phase {
            *timeout_at = Some(at);
        }
    }

    /// Moves an open gate to `to`; returns whether it was open.
    pub(crate) fn close(&mut self, to: GatePhase) -> bool {
        if self.is_resolved() {
            return false;
        }
        self.phase = to;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> GateStep {
        GateStep::open(Box::new(GateSpec {
            kind: GateKind::Approval,
            title: "ship?".into(),
            body: String::new(),
            options: vec![],
            assigned_to: String::new(),
            criticality: "NORMAL".into(),
            tags: vec![],
            timeout_ms: Some(10),
            meta: Value::Null,
        }))
    }

    #[test]
    fn the_first_completion_wins() {
        let mut g = gate();
        g.timeout_set(100);
        assert_eq!(g.timeout_at(), Some(100));
        assert!(g.close(GatePhase::Answered));
        assert!(
            !g.close(GatePhase::TimedOut),
            "a late timeout changes nothing"
        );
        assert_eq!(g.phase, GatePhase::Answered);
        assert_eq!(g.timeout_at(), None);
    }

    #[test]
    fn answers_must_fit_the_question() {
        let g = gate();
        assert!(check_answer(&g.spec, &GateAnswer::approve()).is_ok());
        assert!(check_answer(&g.spec, &GateAnswer::choose("a")).is_err());
        assert!(check_answer(&g.spec, &GateAnswer::undecidable()).is_ok());
        let mut decision = (*g.spec).clone();
        decision.kind = GateKind::Decision;
        decision.options = vec!["a".into()];
        assert!(check_answer(&decision, &GateAnswer::choose("a")).is_ok());
        assert!(check_answer(&decision, &GateAnswer::choose("b")).is_err());
    }

    #[test]
    fn a_timeout_before_any_answer() {
        let mut g = gate();
        g.timeout_set(100);
        assert!(g.close(GatePhase::TimedOut));
        assert!(!g.close(GatePhase::Answered));
        assert_eq!(g.phase, GatePhase::TimedOut);
    }
}
