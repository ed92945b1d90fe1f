//! Validation of caller parameters against a document's `parameters:` schema.
//!
//! Permissive pass-through (reference §2.1): parameters outside the schema are forwarded
//! unchanged. Declared parameters must have their type (and enum value when restricted);
//! required ones must be present; absent optional ones get their default.

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::ast::{ParamSchema, ParamType};

/// One problem with the caller's parameters.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// The parameters are not a JSON object; pass a map of name to value.
    #[error("parameters are {found}: expected an object of name to value")]
    NotAnObject {
        /// Kind of the value passed.
        found: &'static str,
    },
    /// A required parameter is absent (or null); pass it.
    #[error("missing required parameter '{name}' (type {expected})")]
    Missing {
        /// Parameter name.
        name: String,
        /// Its declared type.
        expected: &'static str,
    },
    /// A parameter has the wrong type; pass a value of the declared type.
    #[error("parameter '{name}' is {found}: expected {expected}")]
    WrongType {
        /// Parameter name.
        name: String,
        /// Declared type.
        expected: &'static str,
        /// Kind of the value passed.
        found: &'static str,
    },
    /// A parameter is not one of its enum values; pass one of them.
    #[error("parameter '{name}' is {value}: expected one of {allowed}")]
    NotInEnum {
        /// Parameter name.
        name: String,
        /// The value passed.
        value: Value,
        /// The allowed values, as a JSON array.
        allowed: Value,
    },
}

impl ParamError {
    /// The declared parameter the problem is about (`None` when the parameters as a whole are
    /// not an object).
    #[must_use]
    pub fn name(&self) -> Option<&str> {
        match self {
            Self::NotAnObject { .. } => None,
            Self::Missing { name, .. }
            | Self::WrongType { name, .. }
            | Self::NotInEnum { name, .. } => Some(name),
        }
    }
}

/// Every problem found, in schema order.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid workflow parameters: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
pub struct ParamErrors(pub Vec<ParamError>);

pub(crate) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `v` as its declared type holds it: an `integer` given as a whole number written with a
/// fraction (`3.0`, `1e1`) is that integer, so that `${params.n}` reads `3`, not `3.0`.
pub(crate) fn as_declared(ty: ParamType, v: Value) -> Value {
    integral(ty, &v).unwrap_or(v)
}

/// The integer a whole float `v` of an `integer` parameter stands for; `None` when `v` needs
/// no change.
fn integral(ty: ParamType, v: &Value) -> Option<Value> {
    match v.as_f64() {
        Some(f) if ty == ParamType::Integer && !v.is_i64() && !v.is_u64() && ty.matches(v) => {
            // `matches` allows only whole numbers within f64's exact range.
            Some(Value::from(f as i64))
        }
        _ => None,
    }
}

/// Checks `given` against `schema`; returns the effective parameters (defaults applied,
/// unknown parameters passed through). `null` for `given` means "no parameters".
pub fn validate_params(
    schema: &IndexMap<String, ParamSchema>,
    given: &Value,
) -> Result<Value, ParamErrors> {
    let mut out = match given {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(ParamErrors(vec![ParamError::NotAnObject {
                found: kind(other),
            }]));
        }
    };
    let mut errs = Vec::new();
    for (name, p) in schema {
        match out.get(name).filter(|v| !v.is_null()) {
            None => {
                if let Some(d) = &p.default {
                    out.insert(name.clone(), as_declared(p.ty, d.clone()));
                } else if p.required {
                    errs.push(ParamError::Missing {
                        name: name.clone(),
                        expected: p.ty.as_str(),
                    });
                }
            }
            Some(v) if !p.ty.matches(v) => errs.push(ParamError::WrongType {
                name: name.clone(),
                expected: p.ty.as_str(),
                found: kind(v),
            }),
            Some(v) => {
                if let Some(whole) = integral(p.ty, v) {
                    out.insert(name.clone(), whole);
                }
                let v = &out[name.as_str()];
                if let Some(allowed) = p.enum_values.as_ref().filter(|a| !a.contains(v)) {
                    errs.push(ParamError::NotInEnum {
                        name: name.clone(),
                        value: v.clone(),
                        allowed: Value::Array(allowed.clone()),
                    });
                }
            }
        }
    }
    if errs.is_empty() {
        Ok(Value::Object(out))
    } else {
        Err(ParamErrors(errs))
    }
}
