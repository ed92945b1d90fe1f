//! The parsed form of a condition expression.

use regex::Regex;
use serde_json::Value;

/// An expression node with the byte offset where it starts (operators: where the operator is).
#[derive(Debug, Clone)]
pub struct Expr {
    /// Byte offset in the source expression.
    pub offset: usize,
    /// The node.
    pub kind: ExprKind,
}

/// The variables a condition can read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Variable {
    /// `#state`: workflow variables written by `storeAs`.
    State,
    /// `#params`: caller parameters.
    Params,
    /// `#tasks`: reserved by the reference; always evaluates to `null`.
    Tasks,
    /// `#event`: the internal event an event filter is matched against (filters only).
    Event,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompareOp {
    /// `==` / `eq`.
    Eq,
    /// `!=` / `ne`.
    Ne,
    /// `<` / `lt`.
    Lt,
    /// `<=` / `le`.
    Le,
    /// `>` / `gt`.
    Gt,
    /// `>=` / `ge`.
    Ge,
}

/// An expression.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ExprKind {
    /// A string, number, boolean or null literal.
    Literal(Value),
    /// `${params.x}` / `${state.x}` standing alone (reference §2.4): the value, its JSON type
    /// kept; a missing key is the empty string.
    Placeholder(crate::template::Placeholder),
    /// A string literal holding placeholders (`'${params.env}'`): the text with each replaced.
    Template(crate::template::Template),
    /// `#state`, `#params`, `#tasks` (workflow conditions) or `#event` (event filters).
    Var(Variable),
    /// `target[index]`.
    Index(Box<Expr>, Box<Expr>),
    /// `target.name`.
    Property(Box<Expr>, String),
    /// `!e` / `not e`.
    Not(Box<Expr>),
    /// `a && b && …` (short-circuit, left to right; two terms or more). A chain is one
    /// node, however long: it adds nothing to the depth the evaluation recurses to.
    And(Vec<Expr>),
    /// `a || b || …` (short-circuit, left to right; two terms or more).
    Or(Vec<Expr>),
    /// `a <op> b`.
    Compare(CompareOp, Box<Expr>, Box<Expr>),
    /// `a in {x, y}`.
    In(Box<Expr>, Vec<Expr>),
    /// `a matches 'regex'`; the regex is anchored to the whole string.
    Matches(Box<Expr>, Regex),
    /// `c ? a : b`.
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `a ?: b`.
    Elvis(Box<Expr>, Box<Expr>),
}
