//! The ErrorKind vocabulary of `catch:` and `retry.on` (reference §4.2).
//!
//! The seven kinds of §4.2, plus `failure`: the outcome of a `workflow_task` whose sub-run
//! failed, which the reference's own §3.7 example catches (`catch: {failure: escalate}`), and
//! the generic word for any failure of a task (§1), which a route of `failure` takes where no
//! route of the failure's own kind does ([`ErrorKind::is_task_failure`]).
//! Both `catch:` keys and outcomes are read by [`ErrorKind::parse`], so a key and the outcome
//! it catches agree on spelling: case-insensitive, dashes read as underscores (§2.2), and a
//! gate's `rejected` read as `human_rejected` (§4.2: "alias for gate-`rejected`").

use std::fmt;

/// One of the error categories that `catch:` and `retry.on` understand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Tool/API/shell infrastructure broken.
    TechnicalError,
    /// Expected business error (exit != 0, validation failure).
    BusinessError,
    /// The LLM produced invalid output.
    AgentError,
    /// Task timeout or gate timeout.
    Timeout,
    /// Tool not allowed for this workflow/caller.
    PermissionError,
    /// Alias for a gate's `rejected`, for uniform catching.
    HumanRejected,
    /// The run was stopped by cancel or bounds exhaustion.
    Cancelled,
    /// A `workflow_task`'s sub-run ended `FAILED` (reference §3.7: outcome `failure`), or
    /// could not be started.
    Failure,
}

impl ErrorKind {
    /// Every kind: the seven of §4.2 in reference order, then `failure` (§3.7).
    pub const ALL: [ErrorKind; 8] = [
        Self::TechnicalError,
        Self::BusinessError,
        Self::AgentError,
        Self::Timeout,
        Self::PermissionError,
        Self::HumanRejected,
        Self::Cancelled,
        Self::Failure,
    ];

    /// The canonical snake_case name.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::TechnicalError => "technical_error",
            Self::BusinessError => "business_error",
            Self::AgentError => "agent_error",
            Self::Timeout => "timeout",
            Self::PermissionError => "permission_error",
            Self::HumanRejected => "human_rejected",
            Self::Cancelled => "cancelled",
            Self::Failure => "failure",
        }
    }

    /// Whether `failure`, the reference's generic word for a task that did not succeed (§1:
    /// "`success`, `failure`, or type-specific"; its `pr-review` example routes an
    /// `agent_task` by `on: failure`), stands for this kind where the state routes `failure`
    /// and not the kind itself: the ways a task's own work goes wrong. A rejection, an answer
    /// and a cancellation are not failures of the task.
    #[must_use]
    pub const fn is_task_failure(self) -> bool {
        matches!(
            self,
            Self::TechnicalError
                | Self::BusinessError
                | Self::AgentError
                | Self::Timeout
                | Self::PermissionError
        )
    }

    /// Parses an outcome, a `catch:` key or a `retry.on` item: case-insensitive, dashes read
    /// as underscores (`Technical-Error` is `technical_error`), and `rejected` — the outcome of
    /// a rejected APPROVAL gate — is [`ErrorKind::HumanRejected`]. `None` for anything else.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let norm = text.trim().to_ascii_lowercase().replace('-', "_");
        if norm == "rejected" {
            return Some(Self::HumanRejected);
        }
        Self::ALL.into_iter().find(|k| k.as_str() == norm)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_case_and_dashes() {
        assert_eq!(
            ErrorKind::parse("Technical-Error"),
            Some(ErrorKind::TechnicalError)
        );
        assert_eq!(ErrorKind::parse("TIMEOUT"), Some(ErrorKind::Timeout));
        assert_eq!(
            ErrorKind::parse("human_rejected"),
            Some(ErrorKind::HumanRejected)
        );
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ErrorKind::parse("approved"), None);
        assert_eq!(ErrorKind::parse("success"), None);
    }

    #[test]
    fn a_gates_rejected_is_human_rejected_in_any_spelling() {
        for text in ["rejected", "Rejected", "REJECTED", " rejected "] {
            assert_eq!(
                ErrorKind::parse(text),
                Some(ErrorKind::HumanRejected),
                "{text}"
            );
        }
        assert_eq!(
            ErrorKind::parse("human-rejected"),
            Some(ErrorKind::HumanRejected)
        );
    }

    #[test]
    fn a_failed_sub_runs_outcome_is_the_failure_kind() {
        assert_eq!(ErrorKind::parse("failure"), Some(ErrorKind::Failure));
        assert_eq!(ErrorKind::parse("FAILURE"), Some(ErrorKind::Failure));
        assert_eq!(ErrorKind::Failure.to_string(), "failure");
    }
}
