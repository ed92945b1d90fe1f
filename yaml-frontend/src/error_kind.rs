//! The ErrorKind vocabulary of `catch:` and `retry.on` (reference §4.2).

use std::fmt;

/// One of the seven error categories that `catch:` and `retry.on` understand.
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
}

impl ErrorKind {
    /// All seven kinds, in reference order.
    pub const ALL: [ErrorKind; 7] = [
        Self::TechnicalError,
        Self::BusinessError,
        Self::AgentError,
        Self::Timeout,
        Self::PermissionError,
        Self::HumanRejected,
        Self::Cancelled,
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
        }
    }

    /// Parses an outcome or key: case-insensitive, dashes read as underscores
    /// (`Technical-Error` is `technical_error`). `None` for anything else.
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        let norm = text.trim().to_ascii_lowercase().replace('-', "_");
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
        assert_eq!(ErrorKind::parse("rejected"), None);
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::parse(k.as_str()), Some(k));
        }
    }
}
