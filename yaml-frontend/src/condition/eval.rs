//! Evaluation of conditions over JSON values.
//!
//! Semantics (SpEL-like, made total where SpEL would throw on null):
//! - A missing key, an index out of range, or indexing a non-collection yields `null`. A list's
//!   index is converted as SpEL converts it (`['1']`, `['0x1']`, `['#1']`, `[1.0]` and `[1.5]`
//!   are `[1]`), and a string's index gives its UTF-16 unit as Java's `charAt` (`'abc'[1]` is
//!   `'b'`); `.name` reads a map's key `name`, as Spring's map accessor does.
//! - `#tasks` is reserved and always `null`.
//! - `==`/`!=`/`in`: JSON equality, numbers compared numerically (`1 == 1.0`); `null == null`.
//! - `<`/`<=`/`>`/`>=`: numbers numerically, strings lexicographically (by code point),
//!   booleans `false < true`; `null` orders before every other value (as in SpEL). Any other
//!   pair is an [`EvalError::Incomparable`].
//! - `&&`, `||`, `!`, the ternary condition and the overall result: booleans as they are,
//!   `null` is false, a string as Spring's conversion reads it (`true`, `on`, `yes`, `1` are
//!   true, `false`, `off`, `no`, `0` false, any case, spaces around ignored), any other value
//!   is an [`EvalError::NotBoolean`].
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
        Value::String(s) => string_as_bool(s).ok_or(EvalError::NotBoolean {
            offset,
            found: "a string that is none of true/false, on/off, yes/no, 1/0",
        }),
        other => Err(EvalError::NotBoolean {
            offset,
            found: kind_name(other),
        }),
    }
}

/// A string read as a boolean the way Spring's `StringToBooleanConverter` reads it, which SpEL
/// applies where it needs a boolean. The empty string is none: Spring converts it to `null`,
/// which SpEL's operators refuse (and a missing placeholder, which reads as the empty string,
/// stays an error rather than a silent `false`).
fn string_as_bool(s: &str) -> Option<bool> {
    let s = s.trim();
    const TRUE: [&str; 4] = ["true", "on", "yes", "1"];
    const FALSE: [&str; 4] = ["false", "off", "no", "0"];
    if TRUE.iter().any(|t| s.eq_ignore_ascii_case(t)) {
        Some(true)
    } else if FALSE.iter().any(|f| s.eq_ignore_ascii_case(f)) {
        Some(false)
    } else {
        None
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
        (Value::Array(mut a), key) => match position(key) {
            Some(i) if i < a.len() => a.swap_remove(i),
            _ => Value::Null,
        },
        // Java's `charAt`: by UTF-16 unit; half of a character reads as U+FFFD.
        (Value::String(s), key) => {
            position(key)
                .and_then(|i| s.encode_utf16().nth(i))
                .map_or(Value::Null, |unit| {
                    let c = char::decode_utf16([unit])
                        .next()
                        .and_then(Result::ok)
                        .unwrap_or(char::REPLACEMENT_CHARACTER);
                    Value::String(c.to_string())
                })
        }
        _ => Value::Null,
    }
}

/// A list or string index as SpEL converts one to an `Integer`: a number (a fraction cut
/// toward zero, as Java's `intValue`), or text of a whole number, decimal or hexadecimal as
/// Spring reads it (`'1'`, `'0x1'`, `'#1'`); a negative one or any other kind is none.
fn position(key: &Value) -> Option<usize> {
    let cut = |f: f64| (f.is_finite() && f > -1.0 && f < usize::MAX as f64).then_some(f as usize);
    match key {
        Value::Number(n) => match n.as_u64() {
            Some(i) => usize::try_from(i).ok(),
            None => n.as_f64().and_then(cut),
        },
        Value::String(s) => {
            let s = s.trim();
            let hex = ["0x", "0X", "#"].iter().find_map(|p| s.strip_prefix(p));
            match hex {
                Some(hex) => usize::from_str_radix(hex, 16).ok(),
                None => s.parse::<usize>().ok(),
            }
        }
        _ => None,
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
