//! A state's routing: its `on:` and `catch:` transitions and its `retry:` block.

use crate::ast::{CatchTransition, OnTransition, RetrySpec};
use crate::diagnostic::{Code, Span};
use crate::error_kind::ErrorKind;
use crate::node::{YamlKind, YamlNode};
use crate::suggest;

use super::ctx::{self, Ctx};

/// A target state name written as a mapping value.
pub(super) fn target(ctx: &mut Ctx<'_>, v: &YamlNode, what: &str) -> Option<String> {
    match v.as_str() {
        Some(s) => Some(s.to_owned()),
        None => {
            ctx.wrong_type(v, what, &state_name_expected(v));
            None
        }
    }
}

/// What a state name written as another kind of value (`5`, `true`) should have been: a
/// state's key is read as written, so `5:` declares the state `5`, which a target names as
/// `'5'`.
pub(super) fn state_name_expected(v: &YamlNode) -> String {
    match v.text_as_written() {
        Some(t)
            if v.as_map().is_none()
                && v.as_seq().is_none()
                && !matches!(v.kind, YamlKind::Null) =>
        {
            format!("the name of a state (a state named {t} is written in quotes: '{t}')")
        }
        _ => "the name of a state".to_owned(),
    }
}

pub(super) fn on_block(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> Vec<OnTransition> {
    let Some(block) = node.get("on") else {
        return Vec::new();
    };
    let Some(entries) = ctx
        .map(block, &format!("'on' of {what}"))
        .and_then(YamlNode::as_map)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (k, v) in entries {
        let Some(outcome) = k.key_text() else {
            continue;
        };
        if let Some(t) = target(ctx, v, &format!("the target of on.{outcome} in {what}")) {
            out.push(OnTransition {
                outcome,
                target: t,
                span: k.span,
                target_span: v.span,
            });
        }
    }
    out
}

fn error_kind(ctx: &mut Ctx<'_>, text: &str, span: Span, context: &str) -> Option<ErrorKind> {
    let kind = ErrorKind::parse(text);
    if kind.is_none() {
        let names = ErrorKind::ALL.map(ErrorKind::as_str);
        let norm = text.to_ascii_lowercase().replace('-', "_");
        let hint = suggest::hint(&norm, names);
        ctx.error(
            span,
            Code::UnknownErrorKind,
            format_args!(
                "unknown error kind '{text}' in {context}: expected one of {}{hint}",
                suggest::list(names)
            ),
        );
    }
    kind
}

pub(super) fn catch_block(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> Vec<CatchTransition> {
    let Some(block) = node.get("catch") else {
        return Vec::new();
    };
    let Some(entries) = ctx
        .map(block, &format!("'catch' of {what}"))
        .and_then(YamlNode::as_map)
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen: Vec<(ErrorKind, String, Span)> = Vec::new();
    for (k, v) in entries {
        let Some(text) = k.key_text() else { continue };
        let kind = error_kind(ctx, &text, k.span, &format!("'catch' of {what}"));
        let t = target(ctx, v, &format!("the target of catch.{text} in {what}"));
        // Kinds are read in any case and with dashes for underscores: two spellings of one
        // kind would leave the second route unreachable.
        if let Some((first, written, at)) = kind.and_then(|kind| seen.iter().find(|s| s.0 == kind))
        {
            ctx.error(
                k.span,
                Code::DuplicateKey,
                format_args!(
                    "'catch' of {what} names the error kind '{}' twice, as '{written}' (at \
                     {}:{}) and as '{text}': expected each kind once",
                    first.as_str(),
                    at.line,
                    at.column,
                ),
            );
            continue;
        }
        if let Some(kind) = kind {
            seen.push((kind, text.to_string(), k.span));
        }
        if let (Some(kind), Some(t)) = (kind, t) {
            out.push(CatchTransition {
                kind,
                target: t,
                span: k.span,
                target_span: v.span,
            });
        }
    }
    out
}

pub(super) fn retry_block(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> Option<RetrySpec> {
    let block = node.get("retry")?;
    let rw = format!("'retry' of {what}");
    let block = ctx.map(block, &rw)?;
    ctx.check_fields(block, &["maxAttempts", "on", "backoffSeconds"], &rw);
    let max_attempts = match block.get("maxAttempts") {
        None => {
            ctx.error(
                block.span,
                Code::InvalidRetry,
                format_args!("{rw} has no 'maxAttempts': expected an integer >= 1 (attempts including the first)"),
            );
            None
        }
        Some(v) => match v.kind {
            // More attempts than a u32 holds is no limit a run can reach: the most there is.
            YamlKind::Int(i) if i >= 1 => Some(u32::try_from(i).unwrap_or(u32::MAX)),
            // A whole number too large for the reader's integers reads as a float: no more a
            // limit a run can reach than a large integer.
            YamlKind::Float(f) if f.fract() == 0.0 && f >= i64::MAX as f64 => Some(u32::MAX),
            _ => {
                ctx.error(
                    v.span,
                    Code::InvalidRetry,
                    format_args!(
                        "retry.maxAttempts of {what} is {}: expected an integer >= 1",
                        ctx::found(v)
                    ),
                );
                None
            }
        },
    };
    let mut on = Vec::new();
    let mut on_spans = Vec::new();
    match block.get("on") {
        None => ctx.warn(
            block.span,
            Code::InvalidRetry,
            format_args!(
                "{rw} has no 'on': expected a list of error kinds; nothing will be retried"
            ),
        ),
        Some(list) => match list.as_seq() {
            None => ctx.error(
                list.span,
                Code::InvalidRetry,
                format_args!(
                    "retry.on of {what} is {}: expected a list of error kinds",
                    ctx::found(list)
                ),
            ),
            Some([]) => ctx.warn(
                list.span,
                Code::InvalidRetry,
                format_args!(
                    "retry.on of {what} is empty: expected a list of error kinds; nothing will \
                     be retried"
                ),
            ),
            Some(items) => {
                for it in items {
                    match it.key_text().filter(|_| it.as_str().is_some()) {
                        Some(text) => {
                            if let Some(k) =
                                error_kind(ctx, &text, it.span, &format!("retry.on of {what}"))
                            {
                                on.push(k);
                                on_spans.push(it.span);
                            }
                        }
                        None => ctx.wrong_type(
                            it,
                            &format!("an item of retry.on of {what}"),
                            "an error kind",
                        ),
                    }
                }
            }
        },
    }
    let backoff_seconds = match block.get("backoffSeconds") {
        None => 0.0,
        Some(v) => match ctx::seconds(v) {
            Some(n) if n >= 0.0 => {
                let field = format!("retry.backoffSeconds of {what}");
                if ctx::within_duration_limit(ctx, v, Code::InvalidRetry, &field, n) {
                    n
                } else {
                    0.0
                }
            }
            _ => {
                ctx.error(
                    v.span,
                    Code::InvalidRetry,
                    format_args!(
                        "retry.backoffSeconds of {what} is {}: expected a number >= 0",
                        ctx::found(v)
                    ),
                );
                0.0
            }
        },
    };
    Some(RetrySpec {
        max_attempts: max_attempts?,
        on,
        on_spans,
        backoff_seconds,
        span: block.span,
    })
}
