//! The condition language of `condition_task` (reference §3.6): a sandboxed SpEL subset.
//!
//! Grammar: `#state['k']`, `#params['k']`, `#tasks['s']['output']` (reserved: always `null`),
//! indexing `[...]` (strings or integers), property access `.name`, literals (single- or
//! double-quoted strings with SpEL's doubled-quote escape, integers (also hexadecimal `0x1F`
//! and with SpEL's `L` suffix), decimals (also with an exponent, `1.5e3`, and a `d`/`f`
//! suffix), `true`, `false`, `null`), comparisons `== != < <= > >=` (and `eq ne lt le gt ge`), logic
//! `&& || !` (and `and or not`), `in {a, b}`, `matches '<regex>'` (the pattern must be a
//! string literal and is compiled at load time), ternary `c ? a : b`, Elvis `a ?: b`,
//! parentheses.
//!
//! Rejected at parse time: `T(...)`, `new ...`, method and function calls, bean references,
//! assignment, arithmetic, selection/projection, bare names and any variable other than
//! `#state`, `#params`, `#tasks`. Evaluation semantics are documented in `eval.rs` and on
//! [`Condition::evaluate`].
//!
//! Event filters ([`Condition::parse_filter`]) are the same language over one variable,
//! `#event` (the event's JSON: `#event['workflowName'] == 'deploy'`, `#event.status`); they
//! refuse the workflow's variables, and a workflow's conditions refuse `#event`.

mod ast;
mod error;
mod eval;
mod lexer;
mod parser;

use serde_json::Value;

use parser::Dialect;

pub use ast::{CompareOp, Expr, ExprKind, Variable};
pub use error::{ConditionError, ConditionErrorKind, EvalError};

/// A parsed, sandbox-checked condition expression.
#[derive(Debug, Clone)]
pub struct Condition {
    source: String,
    expr: Expr,
}

impl Condition {
    /// Parses and sandbox-checks `source` as a workflow condition (`#state`, `#params`,
    /// `#tasks`; `#event` is refused).
    pub fn parse(source: &str) -> Result<Self, ConditionError> {
        Ok(Self {
            source: source.to_owned(),
            expr: parser::parse(source, Dialect::Workflow)?,
        })
    }

    /// Parses and sandbox-checks `source` as an event filter: it reads `#event` only, and
    /// `#state`, `#params` and `#tasks` are refused with an error saying so. Match it with
    /// [`Condition::matches_event`].
    pub fn parse_filter(source: &str) -> Result<Self, ConditionError> {
        Ok(Self {
            source: source.to_owned(),
            expr: parser::parse(source, Dialect::Filter)?,
        })
    }

    /// The source text.
    #[must_use]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The parsed expression.
    #[must_use]
    pub fn expr(&self) -> &Expr {
        &self.expr
    }

    /// Evaluates to a value (no boolean coercion of the result).
    pub fn evaluate_value(&self, state: &Value, params: &Value) -> Result<Value, EvalError> {
        let event = &Value::Null;
        eval::eval(
            &self.expr,
            &eval::Env {
                state,
                params,
                event,
            },
        )
    }

    /// Evaluates as a branch condition: `true`/`false` as they are, `null` is false, a string
    /// as SpEL converts it (`true`/`on`/`yes`/`1`, `false`/`off`/`no`/`0`, any case), any
    /// other result is [`EvalError::NotBoolean`]. Missing keys read as `null`; incompatible
    /// orderings (`'a' < 1`) are [`EvalError::Incomparable`]. The interpreter treats any
    /// `EvalError` as a `technical_error` outcome.
    pub fn evaluate(&self, state: &Value, params: &Value) -> Result<bool, EvalError> {
        eval::truthy(&self.evaluate_value(state, params)?, 0)
    }

    /// Whether `event` passes this filter (parsed with [`Condition::parse_filter`]), with the
    /// truthiness rules of [`Condition::evaluate`]: `true`/`false` as they are, `null` (e.g. a
    /// missing key) is false, a string as SpEL converts it, any other result is
    /// [`EvalError::NotBoolean`].
    pub fn matches_event(&self, event: &Value) -> Result<bool, EvalError> {
        let null = &Value::Null;
        let env = eval::Env {
            state: null,
            params: null,
            event,
        };
        eval::truthy(&eval::eval(&self.expr, &env)?, 0)
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod filter_tests;
