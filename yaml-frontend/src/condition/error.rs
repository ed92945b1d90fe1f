//! Errors of parsing and evaluating conditions.

/// Why a condition was rejected when loading the document.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ConditionError {
    /// Syntax error or sandbox violation.
    pub kind: ConditionErrorKind,
    /// Byte offset of the failing character in the expression.
    pub offset: usize,
    /// What was found and what was expected.
    pub message: String,
}

/// The class of a [`ConditionError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConditionErrorKind {
    /// The expression is not well-formed; fix its syntax.
    Syntax,
    /// The expression uses a construct the sandbox forbids (types, constructors, method
    /// calls, bean references, assignment, unknown variables); rewrite it without it.
    Sandbox,
}

impl ConditionError {
    pub(crate) fn syntax(offset: usize, message: String) -> Self {
        Self {
            kind: ConditionErrorKind::Syntax,
            offset,
            message,
        }
    }

    pub(crate) fn sandbox(offset: usize, message: String) -> Self {
        Self {
            kind: ConditionErrorKind::Sandbox,
            offset,
            message,
        }
    }

    /// Number of characters before the failing one in `src` (0-based character offset).
    #[must_use]
    pub fn char_offset(&self, src: &str) -> usize {
        src.get(..self.offset).map_or(0, |s| s.chars().count())
    }
}

/// Why a condition failed at run time. The interpreter maps this to `technical_error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A logical operator or the condition itself met a non-boolean, non-null value.
    #[error("expected a boolean at offset {offset}, found {found}")]
    NotBoolean {
        /// Byte offset of the operand in the expression.
        offset: usize,
        /// Kind of the value found.
        found: &'static str,
    },
    /// An ordering comparison between values of different or unordered kinds.
    #[error("cannot compare {left} with {right} at offset {offset}")]
    Incomparable {
        /// Byte offset of the operator.
        offset: usize,
        /// Kind of the left value.
        left: &'static str,
        /// Kind of the right value.
        right: &'static str,
    },
    /// `matches` applied to an object or array.
    #[error("'matches' expects text at offset {offset}, found {found}")]
    MatchesOperand {
        /// Byte offset of the operator.
        offset: usize,
        /// Kind of the value found.
        found: &'static str,
    },
}
