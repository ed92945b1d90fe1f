//! Structural pass: turns the YAML tree into a [`WorkflowDoc`], reporting every shape error
//! (unknown fields, wrong types, missing required fields, bad values) without stopping.
//!
//! Cross-references (start, transition targets) are checked afterwards by `validate.rs`.

mod checks;
mod ctx;
mod fanout;
pub(crate) mod inbox;
mod on_failure;
pub(crate) mod state;
mod transitions;

use indexmap::IndexMap;
use serde_json::Value;

use crate::ast::{Bounds, ParamSchema, ParamType, Spanned, WorkflowDoc};
use crate::diagnostic::Code;
use crate::node::{YamlKind, YamlNode};
use crate::suggest;

pub(crate) use ctx::{Ctx, found};

pub(crate) const TOP_FIELDS: &[&str] = &[
    "description",
    "version",
    "start",
    "parameters",
    "bounds",
    "allowedTools",
    "tags",
    "defaults",
    "onFailure",
    "states",
];

/// Builds the document; the result is partial (with defaults) where errors were reported.
pub(crate) fn build(ctx: &mut Ctx<'_>, root: &YamlNode) -> Option<WorkflowDoc> {
    if matches!(root.kind, YamlKind::Null) {
        ctx.error(
            root.span,
            Code::WrongType,
            "the document is empty (or only comments): expected a workflow, a mapping with \
             'start:' and 'states:'",
        );
        return None;
    }
    let root = ctx.map(root, "the document root")?;
    ctx.check_fields(root, TOP_FIELDS, "the workflow document");
    let description = ctx.opt_str(root, "description", "the workflow");
    let version = root.get("version").and_then(|v| match &v.kind {
        YamlKind::Str(s) => Some(s.clone()),
        // Free text: `version: 1.10` is "1.10" as written, not the number 1.1.
        YamlKind::Int(_) | YamlKind::Float(_) => v.text_as_written(),
        _ => {
            ctx.wrong_type(v, "'version'", "a string");
            None
        }
    });
    let start = match root.get("start") {
        None => {
            ctx.error(
                root.span,
                Code::MissingField,
                "the workflow has no 'start': expected 'start: <name of the initial state>'",
            );
            Spanned {
                value: String::new(),
                span: root.span,
            }
        }
        Some(v) => match v
            .key_text()
            .filter(|_| v.as_map().is_none() && v.as_seq().is_none())
        {
            Some(s) if v.as_str().is_some() => Spanned {
                value: s,
                span: v.span,
            },
            _ => {
                let expected = transitions::state_name_expected(v);
                ctx.wrong_type(v, "'start'", &expected);
                Spanned {
                    value: String::new(),
                    span: v.span,
                }
            }
        },
    };
    let parameters = root
        .get("parameters")
        .map(|p| parameters(ctx, p))
        .unwrap_or_default();
    let bounds = root.get("bounds").and_then(|b| bounds(ctx, b));
    let allowed_tools = root
        .get("allowedTools")
        .and_then(|t| ctx.str_list(t, "'allowedTools'"));
    let tags = root
        .get("tags")
        .and_then(|t| ctx.str_list(t, "'tags'"))
        .unwrap_or_default();
    let defaults = root
        .get("defaults")
        .map(|d| defaults(ctx, d))
        .unwrap_or_default();
    let on_failure = root
        .get("onFailure")
        .map(|f| on_failure::on_failure(ctx, f))
        .unwrap_or_default();
    let mut states = IndexMap::new();
    match root.get("states") {
        None => ctx.error(
            root.span,
            Code::MissingField,
            "the workflow has no 'states': expected a mapping of state name to state spec",
        ),
        Some(s) => {
            if let Some(entries) = ctx.map(s, "'states'").and_then(YamlNode::as_map) {
                // A block mapping is never empty as written: without entries, the loader
                // refused each of them (a list as a key, a key twice) and said why.
                if entries.is_empty() && ctx.char_at(s.span) == Some('{') {
                    ctx.error(
                        s.span,
                        Code::NoStates,
                        "'states' is empty: expected at least one state",
                    );
                }
                for (k, v) in entries {
                    let Some(name) = state_name(ctx, k) else {
                        continue;
                    };
                    ctx.declared_states.push(name.clone());
                    if let Some(spec) = state::build_state(ctx, &name, k.span, v) {
                        states.insert(name, spec);
                    }
                }
            }
        }
    }
    let mut top_level = match root.to_json() {
        serde_json::Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    top_level.remove("start");
    top_level.remove("states");
    Some(WorkflowDoc {
        top_level,
        description,
        version,
        start,
        parameters,
        bounds,
        allowed_tools,
        tags,
        defaults,
        on_failure,
        states,
    })
}

/// The name a key of `states:` gives its state: its text as written (`2.50` stays `2.50`,
/// which `start:` and `to:` name as a string); `None`, said, for a key that names nothing
/// (`~`, an empty key or `""`).
fn state_name(ctx: &mut Ctx<'_>, k: &YamlNode) -> Option<String> {
    let name = match &k.kind {
        YamlKind::Null => None,
        _ => k.text_as_written().filter(|t| !t.trim().is_empty()),
    };
    if name.is_none() && k.key_text().is_some() {
        ctx.error(
            k.span,
            Code::WrongType,
            format_args!(
                "a state named by {}: expected a state name (a string such as `review`)",
                if matches!(k.kind, YamlKind::Null) {
                    "null (`~`, `null` or no key)"
                } else {
                    "an empty string"
                }
            ),
        );
    }
    name
}

pub(crate) const PARAM_FIELDS: &[&str] = &["type", "required", "default", "description", "enum"];

fn parameters(ctx: &mut Ctx<'_>, node: &YamlNode) -> IndexMap<String, ParamSchema> {
    let mut out = IndexMap::new();
    let Some(entries) = ctx.map(node, "'parameters'").and_then(YamlNode::as_map) else {
        return out;
    };
    for (k, v) in entries {
        let Some(name) = k.key_text() else { continue };
        // `${params.null}` names nothing a caller can give: a key of null (or empty) is no
        // parameter, as it is no state.
        if matches!(k.kind, YamlKind::Null) || name.trim().is_empty() {
            ctx.error(
                k.span,
                Code::WrongType,
                format_args!(
                    "a parameter named by {}: expected a parameter name (a string such as \
                     `pr_url`)",
                    if matches!(k.kind, YamlKind::Null) {
                        "null (`~`, `null` or no key)"
                    } else {
                        "an empty string"
                    }
                ),
            );
            continue;
        }
        let what = format!("parameter '{name}'");
        let Some(v) = ctx.map(v, &what) else { continue };
        ctx.check_fields(v, PARAM_FIELDS, &what);
        let names = ParamType::ALL.iter().map(|(n, _)| *n);
        let ty = match v.get("type") {
            // The reference's parameters are a permissive pass-through: without a type, any
            // value is taken.
            None => Some(ParamType::Any),
            Some(t) => {
                let found = t
                    .as_str()
                    .and_then(|s| ParamType::ALL.iter().find(|(n, _)| *n == s));
                if found.is_none() {
                    // Other languages' names for the types are offered as ours.
                    let hint = t
                        .as_str()
                        .map(|s| match type_alias(s) {
                            Some(ours) => format!(" (did you mean '{ours}'?)"),
                            None => suggest::hint(s, names.clone()),
                        })
                        .unwrap_or_default();
                    ctx.error(
                        t.span,
                        Code::InvalidParameter,
                        format_args!(
                            "the type of {what} is {}: expected one of {}{hint}",
                            ctx::found(t),
                            suggest::list(names)
                        ),
                    );
                }
                found.map(|(_, ty)| *ty)
            }
        };
        let required = match v.get("required") {
            None => false,
            Some(r) => match r.kind {
                YamlKind::Bool(b) => b,
                _ => {
                    ctx.error(
                        r.span,
                        Code::InvalidParameter,
                        format_args!(
                            "'required' of {what} is {}: expected true or false",
                            ctx::found(r)
                        ),
                    );
                    false
                }
            },
        };
        let enum_values = v.get("enum").and_then(|e| match e.as_seq() {
            Some(items) => Some(
                items
                    .iter()
                    .map(|i| declared(ty, i.to_json()))
                    .collect::<Vec<Value>>(),
            ),
            None => {
                ctx.error(
                    e.span,
                    Code::InvalidParameter,
                    format_args!(
                        "'enum' of {what} is {}: expected a list of values",
                        ctx::found(e)
                    ),
                );
                None
            }
        });
        let default = v.get("default").map(|d| {
            let value = declared(ty, d.to_json());
            if let YamlKind::Float(f) = d.kind
                && !f.is_finite()
            {
                // JSON has no such number: it would reach the run as the text `inf`.
                ctx.error(
                    d.span,
                    Code::InvalidParameter,
                    format_args!(
                        "default of {what} is {}: expected a finite value (a run's parameters are JSON, which has no infinite or NaN numbers)",
                        d.text_as_written().unwrap_or_else(|| f.to_string())
                    ),
                );
            } else if let Some(ty) = ty.filter(|t| !value.is_null() && !t.matches(&value)) {
                ctx.error(
                    d.span,
                    Code::InvalidParameter,
                    format_args!(
                        "default of {what} is {}: expected a value of type {}",
                        ctx::found(d),
                        ty.as_str()
                    ),
                );
            }
            if let Some(allowed) = enum_values.as_ref().filter(|a| !a.contains(&value)) {
                ctx.error(
                    d.span,
                    Code::InvalidParameter,
                    format_args!(
                        "default of {what} is {value}: expected one of its enum values {}",
                        Value::Array(allowed.clone())
                    ),
                );
            }
            value
        });
        let description = ctx.opt_str(v, "description", &what);
        out.insert(
            name.clone(),
            ParamSchema {
                name,
                ty: ty.unwrap_or(ParamType::String),
                required,
                default,
                description,
                enum_values,
                span: k.span,
            },
        );
    }
    out
}

pub(crate) const DEFAULTS_FIELDS: &[&str] = &["taskTimeoutSeconds", "gateTimeoutSeconds"];

/// `defaults:`: positive numbers of seconds within the duration limit.
fn defaults(ctx: &mut Ctx<'_>, node: &YamlNode) -> crate::ast::Defaults {
    let mut d = crate::ast::Defaults::default();
    let Some(node) = ctx.map(node, "'defaults'") else {
        return d;
    };
    ctx.check_fields(node, DEFAULTS_FIELDS, "'defaults'");
    let read = |ctx: &mut Ctx<'_>, key: &str| {
        let v = node.get(key)?;
        match ctx::seconds(v) {
            Some(n) if n > 0.0 && n.is_finite() => {
                let field = format!("defaults.{key}");
                ctx::within_duration_limit(ctx, v, Code::InvalidTimeout, &field, n).then_some(n)
            }
            _ => {
                ctx.error(
                    v.span,
                    Code::InvalidTimeout,
                    format_args!(
                        "'defaults.{key}' is {}: expected a positive number of seconds",
                        found(v)
                    ),
                );
                None
            }
        }
    };
    d.task_timeout_seconds = read(ctx, "taskTimeoutSeconds");
    d.gate_timeout_seconds = read(ctx, "gateTimeoutSeconds");
    d
}

pub(crate) const BOUNDS_FIELDS: &[&str] = &[
    "maxTotalCostUsd",
    "maxWallclockSeconds",
    "runTimeoutMs",
    "maxTaskSpawns",
];

fn bounds(ctx: &mut Ctx<'_>, node: &YamlNode) -> Option<Bounds> {
    let node = ctx.map(node, "'bounds'")?;
    ctx.check_fields(node, BOUNDS_FIELDS, "'bounds'");
    let mut b = Bounds::default();
    let non_negative = |ctx: &mut Ctx<'_>, key: &str| {
        let v = node.get(key)?;
        let limit = |ctx: &mut Ctx<'_>, n: f64| {
            let field = format!("bounds.{key}");
            ctx::within_duration_limit(ctx, v, Code::InvalidBounds, &field, n).then_some(n)
        };
        match ctx::seconds(v) {
            Some(n) if n >= 0.0 && key == "maxWallclockSeconds" => limit(ctx, n),
            Some(n) if n >= 0.0 && n.is_finite() => Some(n),
            _ => {
                ctx.error(
                    v.span,
                    Code::InvalidBounds,
                    format_args!(
                        "bounds.{key} is {}: expected a non-negative number",
                        ctx::found(v)
                    ),
                );
                None
            }
        }
    };
    b.max_total_cost_usd = non_negative(ctx, "maxTotalCostUsd");
    b.max_wallclock_seconds = non_negative(ctx, "maxWallclockSeconds");
    // As `maxTaskSpawns: 0`: allowed, but a run of it can do nothing.
    for key in ["maxWallclockSeconds", "runTimeoutMs"] {
        if let Some(v) = node.get(key)
            && ctx::seconds(v) == Some(0.0)
        {
            ctx.warn(
                v.span,
                Code::InvalidBounds,
                format_args!(
                    "bounds.{key} is 0: the deadline is the run's start, so every run fails \
                     'bounds exhausted' at once; expected a positive number"
                ),
            );
        }
    }
    // Friday's spelling of the deadline, in milliseconds: one of the two, never both.
    if let Some(v) = node.get("runTimeoutMs") {
        if node.get("maxWallclockSeconds").is_some() {
            ctx.error(
                v.span,
                Code::DeadlineTwice,
                "bounds sets both 'maxWallclockSeconds' and 'runTimeoutMs' (the same deadline, \
                 in seconds and in milliseconds): keep one",
            );
        } else {
            match ctx::seconds(v) {
                Some(ms) if ms >= 0.0 && ms.is_finite() => {
                    let n = ms / 1000.0;
                    b.max_wallclock_seconds = ctx::within_duration_limit(
                        ctx,
                        v,
                        Code::InvalidBounds,
                        "bounds.runTimeoutMs",
                        n,
                    )
                    .then_some(n);
                    b.run_timeout_ms = b.max_wallclock_seconds.map(|_| ms);
                }
                _ => ctx.error(
                    v.span,
                    Code::InvalidBounds,
                    format_args!(
                        "bounds.runTimeoutMs is {}: expected a non-negative number of milliseconds",
                        ctx::found(v)
                    ),
                ),
            }
        }
    }
    if let Some(v) = node.get("maxTaskSpawns") {
        match v.kind {
            YamlKind::Int(0) => {
                b.max_task_spawns = Some(0);
                ctx.warn(
                    v.span,
                    Code::InvalidBounds,
                    "bounds.maxTaskSpawns is 0: no task may start, so a run fails \
                     'bounds exhausted' before its first task; expected at least 1",
                );
            }
            YamlKind::Int(i) if i >= 0 => b.max_task_spawns = u64::try_from(i).ok(),
            _ => ctx.error(
                v.span,
                Code::InvalidBounds,
                format_args!(
                    "bounds.maxTaskSpawns is {}: expected a non-negative integer",
                    ctx::found(v)
                ),
            ),
        }
    }
    Some(b)
}

/// `value` as a parameter of type `ty` holds it (a whole float as an `integer`).
fn declared(ty: Option<ParamType>, value: Value) -> Value {
    match ty {
        Some(ty) => crate::params::as_declared(ty, value),
        None => value,
    }
}

/// The parameter type another language calls `word` (`int`, `bool`, `dict`, …).
fn type_alias(word: &str) -> Option<&'static str> {
    Some(match word.to_ascii_lowercase().as_str() {
        "int" | "long" | "int32" | "int64" | "i64" | "u64" => "integer",
        "float" | "double" | "decimal" | "f64" | "numeric" => "number",
        "bool" => "boolean",
        "str" | "text" => "string",
        "list" | "vec" | "sequence" => "array",
        "dict" | "map" | "hash" | "mapping" => "object",
        _ => return None,
    })
}
