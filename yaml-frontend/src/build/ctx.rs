//! Shared helpers for turning YAML nodes into typed values while collecting diagnostics.

use std::fmt::Display;

use crate::diagnostic::{Code, Diagnostic, Diagnostics, Span};
use crate::duration::MAX_DURATION_SECS;
use crate::node::{YamlKind, YamlNode};
use crate::suggest;

/// The diagnostics sink of one document.
pub(crate) struct Ctx<'p> {
    pub(crate) path: &'p str,
    /// The document's text, for hints that read what was written around a value.
    pub(crate) text: &'p str,
    pub(crate) diags: Diagnostics,
    /// Every key under `states:`, including states dropped for a bad type, so that one bad
    /// state does not also make every transition to it an error.
    pub(crate) declared_states: Vec<String>,
    /// Transition targets of rules dropped for another error (a condition that does not
    /// parse), still checked against the states so that one pass reports both.
    pub(crate) dropped_targets: Vec<(String, Span)>,
}

impl<'p> Ctx<'p> {
    pub(crate) fn new(path: &'p str, text: &'p str) -> Self {
        Self {
            path,
            text,
            diags: Diagnostics::new(),
            declared_states: Vec::new(),
            dropped_targets: Vec::new(),
        }
    }

    pub(crate) fn error(&mut self, span: Span, code: Code, msg: impl Display) {
        self.diags
            .push(Diagnostic::error(self.path, span, code, msg));
    }

    pub(crate) fn warn(&mut self, span: Span, code: Code, msg: impl Display) {
        self.diags
            .push(Diagnostic::warning(self.path, span, code, msg));
    }

    /// Reports every key of `map` not in `allowed`, with a did-you-mean.
    pub(crate) fn check_fields(&mut self, map: &YamlNode, allowed: &[&str], what: &str) {
        self.check_fields_except(map, allowed, &[], what);
    }

    /// [`Self::check_fields`], leaving out `reported` (keys refused by a check of their own,
    /// so neither reported again nor offered as expected).
    pub(crate) fn check_fields_except(
        &mut self,
        map: &YamlNode,
        allowed: &[&str],
        reported: &[&str],
        what: &str,
    ) {
        for (k, _) in map.as_map().unwrap_or_default() {
            let Some(key) = k.key_text() else { continue };
            if !allowed.contains(&key.as_str()) && !reported.contains(&key.as_str()) {
                let hint = suggest::hint(&key, allowed.iter().copied());
                let (shown, note) = shown_name(&key);
                self.error(
                    k.span,
                    Code::UnknownField,
                    format_args!(
                        "unknown field '{shown}'{note} in {what}: expected one of {}{hint}",
                        suggest::list(allowed.iter().copied())
                    ),
                );
            }
        }
    }

    /// The node as a mapping, or a `WrongType` error.
    pub(crate) fn map<'n>(&mut self, node: &'n YamlNode, what: &str) -> Option<&'n YamlNode> {
        if node.as_map().is_some() {
            return Some(node);
        }
        self.wrong_type(node, what, "a mapping");
        None
    }

    pub(crate) fn wrong_type(&mut self, node: &YamlNode, what: &str, expected: &str) {
        if matches!(node.kind, crate::node::YamlKind::Null)
            && let Some((span, hint)) = comment_as_value(self.text, node.span)
        {
            self.error(
                span,
                Code::WrongType,
                format_args!("{what} is empty: expected {expected}; {hint}"),
            );
            return;
        }
        let hint = match &node.kind {
            YamlKind::Str(s) if expected == "a mapping" => squeezed_key(s)
                .map(|(k, v)| {
                    format!("; a key needs a space after its ':' (`{k}: {v}`), or it is a string")
                })
                .unwrap_or_default(),
            _ => String::new(),
        };
        self.error(
            node.span,
            Code::WrongType,
            format_args!("{what} is {}: expected {expected}{hint}", found(node)),
        );
    }

    /// A required string field; reports `MissingField` at `owner` or `WrongType` at the value.
    pub(crate) fn required_str(&mut self, map: &YamlNode, key: &str, what: &str) -> Option<String> {
        if map.get(key).is_none() {
            self.error(
                map.span,
                Code::MissingField,
                format_args!("{what} has no '{key}': expected a '{key}:' string field"),
            );
            return None;
        }
        let value = self.opt_str(map, key, what)?;
        if value.trim().is_empty() {
            if let Some(v) = map.get(key) {
                self.error(
                    v.span,
                    Code::WrongType,
                    format_args!("'{key}' of {what} is empty: expected a non-empty string"),
                );
            }
            return None;
        }
        Some(value)
    }

    /// An optional string field.
    pub(crate) fn opt_str(&mut self, map: &YamlNode, key: &str, what: &str) -> Option<String> {
        let v = map.get(key)?;
        match v.as_str() {
            Some(s) => Some(s.to_owned()),
            None => {
                self.wrong_type(v, &format!("'{key}' of {what}"), "a string");
                None
            }
        }
    }

    /// A list of strings (a single string is not accepted).
    pub(crate) fn str_list(&mut self, node: &YamlNode, what: &str) -> Option<Vec<String>> {
        let Some(items) = node.as_seq() else {
            self.wrong_type(node, what, "a list of strings");
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            match it.as_str() {
                Some(s) => out.push(s.to_owned()),
                None => self.wrong_type(it, &format!("an item of {what}"), "a string"),
            }
        }
        Some(out)
    }
}

/// A number, if the node is one.
pub(crate) fn number(node: &YamlNode) -> Option<f64> {
    match node.kind {
        YamlKind::Int(i) => Some(i as f64),
        YamlKind::Float(f) if f.is_finite() => Some(f),
        _ => None,
    }
}

/// A number of seconds, if the node is a number: like [`number`], but `.inf` is taken (as too
/// long) rather than refused as not a number.
pub(crate) fn seconds(node: &YamlNode) -> Option<f64> {
    match node.kind {
        YamlKind::Float(f) if f == f64::INFINITY => Some(f),
        _ => number(node),
    }
}

/// Reports `secs` seconds if it is longer than [`MAX_DURATION_SECS`]; `field` names the field
/// as the message shows it (`timeoutSeconds of state 'a'`). Returns whether it was in range.
pub(crate) fn within_duration_limit(
    ctx: &mut Ctx<'_>,
    node: &YamlNode,
    code: Code,
    field: &str,
    secs: f64,
) -> bool {
    if secs <= MAX_DURATION_SECS as f64 {
        return true;
    }
    ctx.error(
        node.span,
        code,
        format_args!(
            "{field} is {}: expected at most {MAX_DURATION_SECS} seconds (100 years)",
            found(node)
        ),
    );
    false
}

/// Where a value left empty by a `#` that starts a comment right after its `:` (or `- `)
/// was meant to begin, and what to do: a condition (`#state['k'] == 1`) written unquoted.
impl Ctx<'_> {
    /// The character of the document at `at`.
    pub(crate) fn char_at(&self, at: Span) -> Option<char> {
        let line = self
            .text
            .lines()
            .nth(usize::try_from(at.line).ok()?.checked_sub(1)?)?;
        line.chars()
            .nth(usize::try_from(at.column).ok()?.checked_sub(1)?)
    }
}

fn comment_as_value(text: &str, at: Span) -> Option<(Span, &'static str)> {
    let line = text
        .lines()
        .nth(usize::try_from(at.line).ok()?.checked_sub(1)?)?;
    let from = usize::try_from(at.column).ok()?.saturating_sub(1);
    let rest: String = line.chars().skip(from).collect();
    let hash = rest
        .find(" #")
        .map(|i| i + 1)
        .or_else(|| rest.starts_with('#').then_some(0))?;
    // Only a value after its key's `:` (or a list item's `-`): a line that is all comment
    // is no value written as one.
    let before = rest[..hash].trim_end();
    if !before.ends_with([':', '-']) {
        return None;
    }
    let column = from + rest[..hash].chars().count() + 1;
    Some((
        Span::new(at.line, u32::try_from(column).ok()?),
        "the `#` here starts a YAML comment, which leaves the value empty: quote a value that \
         begins with `#` (e.g. \"#state['k'] == 1\")",
    ))
}

/// A name from the document as a message shows it: a space-like character other than the
/// space (a non-breaking space, a line separator, a tab) as a `\uXXXX` escape, since it looks
/// like a space or like nothing, and with a note saying so when there is one.
pub(crate) fn shown_name(s: &str) -> (std::borrow::Cow<'_, str>, &'static str) {
    if !s.chars().any(|c| c.is_whitespace() && c != ' ') {
        return (std::borrow::Cow::Borrowed(s), "");
    }
    let escaped = s
        .chars()
        .map(|c| {
            if c.is_whitespace() && c != ' ' {
                format!("\\u{:04x}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect();
    (
        std::borrow::Cow::Owned(escaped),
        " (it holds a space-like character that YAML does not read as a space: write plain \
         spaces)",
    )
}

/// `a string 'x'`, `an integer (3)`, ... for messages.
/// A string as a message quotes it: whole when it is one line of at most 120 characters, else
/// the start of its first line and its length (a document whose root is a megabyte of prose
/// makes a diagnostic of one short line).
fn quoted_start(s: &str) -> String {
    const WHOLE: usize = 120;
    let chars = s.chars().count();
    if chars <= WHOLE && !s.contains('\n') {
        return s.to_owned();
    }
    let start: String = s
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(WHOLE / 2)
        .collect();
    format!("{start}… ({chars} characters)")
}

/// `type:terminal`, a key and its value written without the space YAML needs after the colon
/// (so the whole is one string): the two parts, when the text looks like that.
fn squeezed_key(s: &str) -> Option<(&str, &str)> {
    let (key, value) = s.split_once(':')?;
    // A name, as keys are: `12:30` is a time, not a squeezed key.
    let key_like = key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    (key_like && !value.is_empty() && !value.starts_with([' ', '/'])).then_some((key, value))
}

pub(crate) fn found(node: &YamlNode) -> String {
    match &node.kind {
        YamlKind::Str(s) => format!("a string '{}'", quoted_start(s)),
        // As written: `1.0` and `1e3` say what the author wrote, not the `1` and `1000` read
        // (a long one is said shorter below).
        YamlKind::Int(_) | YamlKind::Float(_)
            if node.written.as_deref().is_some_and(|w| w.len() <= 16) =>
        {
            let w = node.written.as_deref().unwrap_or_default();
            if matches!(node.kind, YamlKind::Int(_)) {
                format!("an integer ({w})")
            } else {
                format!("a number ({w})")
            }
        }
        YamlKind::Int(i) => format!("an integer ({i})"),
        // `1e20`, not twenty digits.
        YamlKind::Float(f) if f.is_finite() && f.abs() >= 1e16 => format!("a number ({f:e})"),
        YamlKind::Float(f) => format!("a number ({f})"),
        YamlKind::Bool(b) => format!("a boolean ({b})"),
        _ => node.kind_name().to_owned(),
    }
}
