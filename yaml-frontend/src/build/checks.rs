//! Checks of embedded languages: `${...}` templates and condition expressions, reported at
//! the exact character in the file when the scalar is written verbatim on one line.

use crate::condition::{Condition, ConditionErrorKind};
use crate::diagnostic::Code;
use crate::node::{YamlKind, YamlNode};
use crate::template::likely_typos;

use super::Ctx;

/// Warns about every `${…}` below `node` that is left as text but looks like a misspelt
/// placeholder (keys are not templates). Such text is not an error: only `${params.…}` and
/// `${state.…}` are placeholders, so `${HOME}` or a JavaScript template literal is fine.
/// A `condition_task`'s `transitions:` are left to the condition parser, whose error for a
/// `${` that is no placeholder says it once.
pub(crate) fn check_templates(ctx: &mut Ctx<'_>, node: &YamlNode) {
    match &node.kind {
        YamlKind::Str(s) => {
            for w in likely_typos(s) {
                let chars = s.get(..w.offset).map_or(0, |p| p.chars().count());
                ctx.warn(node.span_at(chars), Code::Template, w.message);
            }
        }
        YamlKind::Seq(items) => items.iter().for_each(|n| check_templates(ctx, n)),
        YamlKind::Map(entries) => entries
            .iter()
            .filter(|(k, _)| k.key_text().as_deref() != Some("transitions"))
            .for_each(|(_, v)| check_templates(ctx, v)),
        _ => {}
    }
}

/// Warns about `${item}`, `${item.<path>}` and `${index}` below a state's `node` where they
/// have no value: they name the current item in a `foreach_task`'s own `params:` only
/// (`foreach` says whether this state is one). Elsewhere they stay text, or (in a parallel
/// branch's `params:`) resolve to nothing. Inline `states:` are checked where they are built.
pub(crate) fn check_item_placeholders(ctx: &mut Ctx<'_>, node: &YamlNode, foreach: bool) {
    fn walk(ctx: &mut Ctx<'_>, node: &YamlNode) {
        match &node.kind {
            YamlKind::Str(s) => {
                let mut from = 0;
                while let Some(rel) = s[from..].find("${") {
                    let at = from + rel;
                    from = at + 2;
                    let Some(word) = crate::plan::item_word(&s[at + 2..]) else {
                        continue;
                    };
                    let chars = s[..at].chars().count();
                    ctx.warn(
                        node.span_at(chars),
                        Code::Template,
                        format_args!(
                            "'${{{word}}}' has a value only in a foreach_task's own 'params:': \
                             pass it to the branch there (params: {{ it: \"${{{word}}}\" }}) \
                             and read '${{params.it}}'"
                        ),
                    );
                }
            }
            YamlKind::Seq(items) => items.iter().for_each(|n| walk(ctx, n)),
            YamlKind::Map(entries) => {
                for (k, v) in entries {
                    if k.key_text().as_deref() != Some("states") {
                        walk(ctx, v);
                    }
                }
            }
            _ => {}
        }
    }
    let Some(entries) = node.as_map() else {
        return;
    };
    for (k, v) in entries {
        match k.key_text().as_deref() {
            Some("params") if foreach => {}
            Some("states") => {}
            _ => walk(ctx, v),
        }
    }
}

/// Parses a condition, reporting a syntax or sandbox error at the failing character.
pub(crate) fn parse_condition(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> Option<Condition> {
    let Some(src) = node.as_str() else {
        ctx.wrong_type(node, what, "a condition expression string");
        return None;
    };
    match Condition::parse(src) {
        Ok(c) => Some(c),
        Err(e) => {
            let code = match e.kind {
                ConditionErrorKind::Sandbox => Code::ConditionSandbox,
                _ => Code::ConditionSyntax,
            };
            // An error at the end of the expression is said right after its last character,
            // not past a block scalar's closing line break (on the next key's line).
            let end = src.trim_end().chars().count();
            let at = node.span_at(e.char_offset(src).min(end));
            ctx.error(
                at,
                code,
                format_args!("invalid condition in {what}: {}", e.message),
            );
            None
        }
    }
}
