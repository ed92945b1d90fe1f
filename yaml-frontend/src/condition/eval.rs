//! Evaluation of conditions over JSON values.
//!
//! Semantics (SpEL-like, made total where SpEL would throw on null):
//! - A missing key, an index out of range, or indexing a non-collection yields `null`.
//! - `#tasks` is reserved and always `null`.
//! - `==`/`!=`/`in`: JSON equality, numbers compared numerically (`1 == 1.0`); `null == null`.
//! - `<`/`<=`/`>`/`>=`: numbers numerically, strings lexicographically (by code point),
//!   booleans `false < true`; `null` orders before every other value (as in SpEL). Any other
//!   pair is an [`EvalError::Incomparable`].
//! - `&&`, `||`, `!`, the ternary condition and the overall result: booleans as they are,
//!   `null` is false, any other value is an [`EvalError::NotBoolean`].
//! - `matches`: whole-string match (like Java's `String.matches`); numbers and booleans are
//!   matched by their text, `null` never matches, objects/arrays are an error.
//! - Elvis `a ?: b`: `b` when `a` is `null` or the empty string (as in SpEL), else `a`.

use std::cmp::Ordering;

use serde_json::Value;

use super::ast::{CompareOp, Expr, ExprKind, Variable};
use super::error::EvalError;

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// The environment of one evaluation.
pub(crate) struct Env<'v> {
    pub(crate) state: &'v Value,
    pub(crate) params: &'v Value,
    pub(crate) event: &'v Value,
}

pub(crate) fn truthy(v: &Value, offset: usize) -> Result<bool, EvalError> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::Null => Ok(false),
        other => Err(EvalError::NotBoolean {
            offset,
            found: kind_name(other),
        }),
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        _ => a == b,
    }
}

fn order(a: &Value, b: &Value, offset: usize) -> Result<Ordering, EvalError> {
    let incomparable = || EvalError::Incomparable {
        offset,
        left: kind_name(a),
        right: kind_name(b),
    };
    match (a, b) {
        (Value::Null, Value::Null) => Ok(Ordering::Equal),
        (Value::Null, _) => Ok(Ordering::Less),
        (_, Value::Null) => Ok(Ordering::Greater),
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => Ok(i.cmp(&j)),
            _ => {
                let (Some(x), Some(y)) = (x.as_f64(), y.as_f64()) else {
                    return Err(incomparable());
                };
                x.partial_cmp(&y).ok_or_else(incomparable)
            }
        },
        (Value::String(x), Value::String(y)) => Ok(x.cmp(y)),
        (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
        _ => Err(incomparable()),
    }
}

fn index(target: Value, key: &Value) -> Value {
    match (target, key) {
        (Value::Object(mut m), Value::String(k)) => m.remove(k).unwrap_or(Value::Null),
        (Value::Array(mut a), Value::Number(n)) => match n.as_u64() {
            Some(i) if (i as usize) < a.len() => a.swap_remove(i as usize),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

pub(crate) fn eval(e: &Expr, env: &Env<'_>) -> Result<Value, EvalError> {
    Ok(match &e.kind {
        ExprKind::Literal(v) => v.clone(),
        ExprKind::Placeholder(p) => p
            .lookup(env.params, env.state)
            .cloned()
            .unwrap_or_else(|| Value::String(String::new())),
        ExprKind::Template(t) => Value::String(t.render(env.params, env.state)),
        ExprKind::Var(Variable::State) => env.state.clone(),
        ExprKind::Var(Variable::Params) => env.params.clone(),
        ExprKind::Var(Variable::Tasks) => Value::Null,
        ExprKind::Var(Variable::Event) => env.event.clone(),
        ExprKind::Index(t, i) => {
            let key = eval(i, env)?;
            index(eval(t, env)?, &key)
        }
        ExprKind::Property(t, name) => index(eval(t, env)?, &Value::String(name.clone())),
        ExprKind::Not(x) => Value::Bool(!truthy(&eval(x, env)?, x.offset)?),
        ExprKind::And(terms) => {
            for t in terms {
                if !truthy(&eval(t, env)?, t.offset)? {
                    return Ok(Value::Bool(false));
                }
            }
            Value::Bool(true)
        }
        ExprKind::Or(terms) => {
            for t in terms {
                if truthy(&eval(t, env)?, t.offset)? {
                    return Ok(Value::Bool(true));
                }
            }
            Value::Bool(false)
        }
        ExprKind::Compare(op, l, r) => {
            let (a, b) = (eval(l, env)?, eval(r, env)?);
            Value::Bool(match op {
                CompareOp::Eq => equal(&a, &b),
                CompareOp::Ne => !equal(&a, &b),
                CompareOp::Lt => order(&a, &b, e.offset)?.is_lt(),
                CompareOp::Le => order(&a, &b, e.offset)?.is_le(),
                CompareOp::Gt => order(&a, &b, e.offset)?.is_gt(),
                CompareOp::Ge => order(&a, &b, e.offset)?.is_ge(),
            })
        }
        ExprKind::In(x, items) => {
            let v = eval(x, env)?;
            let mut found = false;
            for it in items {
                if equal(&v, &eval(it, env)?) {
                    found = true;
                    break;
                }
            }
            Value::Bool(found)
        }
        ExprKind::Matches(x, re) => Value::Bool(match eval(x, env)? {
            Value::Null => false,
            Value::String(s) => re.is_match(&s),
            v @ (Value::Number(_) | Value::Bool(_)) => re.is_match(&v.to_string()),
            other => {
                return Err(EvalError::MatchesOperand {
                    offset: e.offset,
                    found: kind_name(&other),
                });
            }
        }),
        ExprKind::Ternary(c, a, b) => {
            if truthy(&eval(c, env)?, c.offset)? {
                eval(a, env)?
            } else {
                eval(b, env)?
            }
        }
        ExprKind::Elvis(a, b) => match eval(a, env)? {
            Value::Null => eval(b, env)?,
            Value::String(s) if s.is_empty() => eval(b, env)?,
            v => v,
        },
    })
}
