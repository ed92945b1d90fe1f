//! `${params.X}` / `${state.X}` templates (reference §2.4).
//!
//! A placeholder is exactly `${` root (`.` segment)+ `}` with root `params` or `state`; a
//! segment is a map key, or an array index when it is all digits (`${state.items.0}`), and
//! holds no space, `.`, `{`, `}` or `$`. Nothing else is a placeholder: `${HOME}`,
//! `${VAR:-default}`, a JavaScript template literal, `${ params.x }` with spaces or an
//! unterminated `${params.x` are text and stay as written. As in the reference, there is no
//! escape: every placeholder is resolved, so `$${params.amount}` is a `$` before the amount.
//!
//! Resolution follows what the reference's authors meant by "substitutes text" while keeping
//! typed data typed, as Step Functions and GitHub Actions do:
//! - a string that is **one placeholder and nothing else** (`n: "${params.n}"`) takes the
//!   value's JSON type — number, boolean, object, array or null — so typed parameters and
//!   stored results flow into tool parameters, sub-workflows and results unchanged;
//! - a placeholder **inside text** is replaced by text: strings as themselves, numbers and
//!   booleans as their plain text, objects and arrays as compact JSON, `null` as nothing;
//! - a **missing** key resolves to the empty string in both cases (the reference: "A missing
//!   key resolves to an empty string (no crash)").
//!
//! Documents are parsed once into [`Template`]s and [`TemplateValue`]s by the plan; at run
//! time only lookups happen.

use serde_json::{Map, Value};

/// Which variable map a placeholder reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TemplateRoot {
    /// `${params.X}`: run parameters.
    Params,
    /// `${state.X}`: variables written by `storeAs`.
    State,
}

/// One parsed placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placeholder {
    /// Byte offset of the `$` in the text.
    pub offset: usize,
    /// Byte length of the whole `${...}`.
    pub len: usize,
    /// The variable map.
    pub root: TemplateRoot,
    /// The access path below the root (at least one segment).
    pub path: Vec<String>,
}

impl Placeholder {
    /// The text the placeholder gives inside other text: a string as itself, a number or
    /// boolean as its plain text, an object or array as compact JSON, `null` or a missing
    /// key as nothing.
    #[must_use]
    pub fn text<'v>(&self, params: &'v Value, state: &'v Value) -> std::borrow::Cow<'v, str> {
        match self.lookup(params, state) {
            None | Some(Value::Null) => "".into(),
            Some(Value::String(s)) => s.as_str().into(),
            Some(other) => other.to_string().into(),
        }
    }

    /// Reads the placeholder's value; `None` when a key is missing.
    #[must_use]
    pub fn lookup<'v>(&self, params: &'v Value, state: &'v Value) -> Option<&'v Value> {
        let root = match self.root {
            TemplateRoot::Params => params,
            TemplateRoot::State => state,
        };
        lookup(root, &self.path)
    }
}

/// A `${…}` that is text but looks like a placeholder with a typo (`${param.x}`,
/// `${states.x}`, `${ params.x }`): worth a warning, never an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateWarning {
    /// Byte offset of the `$` in the text.
    pub offset: usize,
    /// What looks wrong and what was probably meant.
    pub message: String,
}

/// A piece of a parsed template string.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Var(Placeholder),
}

/// A piece of a [`Template`], as [`Template::pieces`] gives it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Piece<'a> {
    /// Literal text.
    Text(&'a str),
    /// A placeholder.
    Var(&'a Placeholder),
}

/// A parsed template string: literal text and placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Parses `text`. Never fails: whatever is not a placeholder is text.
    #[must_use]
    pub fn parse(text: &str) -> Self {
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut i = 0;
        while let Some(rel) = text[i..].find('$') {
            let at = i + rel;
            lit.push_str(&text[i..at]);
            if let Some(p) = placeholder_at(text, at) {
                if !lit.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut lit)));
                }
                i = at + p.len;
                parts.push(Part::Var(p));
            } else {
                lit.push('$');
                i = at + 1;
            }
        }
        lit.push_str(&text[i..]);
        if !lit.is_empty() {
            parts.push(Part::Text(lit));
        }
        Self { parts }
    }

    /// The placeholder when the template is exactly one placeholder and nothing else.
    #[must_use]
    pub fn whole(&self) -> Option<&Placeholder> {
        match self.parts.as_slice() {
            [Part::Var(p)] => Some(p),
            _ => None,
        }
    }

    /// The text when the template holds no placeholder.
    #[must_use]
    pub fn as_literal(&self) -> Option<&str> {
        match self.parts.as_slice() {
            [] => Some(""),
            [Part::Text(t)] => Some(t),
            _ => None,
        }
    }

    /// The placeholders, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = &Placeholder> {
        self.parts.iter().filter_map(|p| match p {
            Part::Var(v) => Some(v),
            Part::Text(_) => None,
        })
    }

    /// The template's pieces in order: text and placeholders.
    pub(crate) fn pieces(&self) -> impl Iterator<Item = Piece<'_>> {
        self.parts.iter().map(|p| match p {
            Part::Text(t) => Piece::Text(t),
            Part::Var(v) => Piece::Var(v),
        })
    }

    /// Renders the template as text.
    #[must_use]
    pub fn render(&self, params: &Value, state: &Value) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Var(p) => out.push_str(&p.text(params, state)),
            }
        }
        out
    }

    /// Resolves the template as a value: a whole placeholder keeps its JSON type (a missing
    /// key is `""`); anything else is rendered text.
    #[must_use]
    pub fn resolve(&self, params: &Value, state: &Value) -> Value {
        match self.whole() {
            Some(p) => p
                .lookup(params, state)
                .cloned()
                .unwrap_or_else(|| Value::String(String::new())),
            None => Value::String(self.render(params, state)),
        }
    }
}

/// A document value with every string parsed as a [`Template`] (map keys are not templates).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TemplateValue {
    /// A value without any placeholder, used as it is.
    Literal(Value),
    /// A string with at least one placeholder.
    Template(Template),
    /// An array with a placeholder somewhere inside.
    Array(Vec<TemplateValue>),
    /// A map with a placeholder somewhere inside, in document order.
    Object(Vec<(String, TemplateValue)>),
}

impl TemplateValue {
    /// Parses every string below `value`.
    #[must_use]
    pub fn compile(value: &Value) -> Self {
        match value {
            Value::String(s) => {
                let t = Template::parse(s);
                match t.as_literal() {
                    Some(text) => Self::Literal(Value::String(text.to_string())),
                    None => Self::Template(t),
                }
            }
            Value::Array(items) => {
                let items: Vec<Self> = items.iter().map(Self::compile).collect();
                if items.iter().all(|i| matches!(i, Self::Literal(_))) {
                    Self::Literal(Value::Array(
                        items.into_iter().map(Self::into_literal).collect(),
                    ))
                } else {
                    Self::Array(items)
                }
            }
            Value::Object(map) => {
                let entries: Vec<(String, Self)> = map
                    .iter()
                    .map(|(k, v)| (k.clone(), Self::compile(v)))
                    .collect();
                if entries.iter().all(|(_, v)| matches!(v, Self::Literal(_))) {
                    Self::Literal(Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k, v.into_literal()))
                            .collect(),
                    ))
                } else {
                    Self::Object(entries)
                }
            }
            other => Self::Literal(other.clone()),
        }
    }

    fn into_literal(self) -> Value {
        match self {
            Self::Literal(v) => v,
            _ => Value::Null,
        }
    }

    /// Resolves every template below.
    #[must_use]
    pub fn resolve(&self, params: &Value, state: &Value) -> Value {
        match self {
            Self::Literal(v) => v.clone(),
            Self::Template(t) => t.resolve(params, state),
            Self::Array(items) => {
                Value::Array(items.iter().map(|i| i.resolve(params, state)).collect())
            }
            Self::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.clone(), v.resolve(params, state)))
                    .collect::<Map<_, _>>(),
            ),
        }
    }

    /// Every placeholder below, in document order.
    pub fn placeholders(&self) -> Vec<&Placeholder> {
        let mut out = Vec::new();
        self.collect(&mut out);
        out
    }

    fn collect<'a>(&'a self, out: &mut Vec<&'a Placeholder>) {
        match self {
            Self::Literal(_) => {}
            Self::Template(t) => out.extend(t.placeholders()),
            Self::Array(items) => items.iter().for_each(|i| i.collect(out)),
            Self::Object(entries) => entries.iter().for_each(|(_, v)| v.collect(out)),
        }
    }
}

/// Every placeholder in `text`.
#[must_use]
pub fn parse_placeholders(text: &str) -> Vec<Placeholder> {
    Template::parse(text).placeholders().cloned().collect()
}

/// The placeholder starting at `start` (which holds `$`), if the text there is one.
pub(crate) fn placeholder_at(text: &str, start: usize) -> Option<Placeholder> {
    let rest = text[start..].strip_prefix("${")?;
    // The body ends at the first character a placeholder cannot hold: a placeholder only if
    // that is its `}`. (Looking for the `}` alone would read on past every `${` of a text
    // made of them, once for each: quadratic in the text's length.)
    let close = rest.find(|c: char| c.is_whitespace() || "{}$".contains(c))?;
    if !rest[close..].starts_with('}') {
        return None;
    }
    let body = &rest[..close];
    let mut segs = body.split('.');
    let root = match segs.next()? {
        "params" => TemplateRoot::Params,
        "state" => TemplateRoot::State,
        _ => return None,
    };
    let path: Vec<String> = segs.map(str::to_owned).collect();
    let bad =
        |s: &String| s.is_empty() || s.contains(|c: char| c.is_whitespace() || "{$".contains(c));
    if path.is_empty() || path.iter().any(bad) {
        return None;
    }
    Some(Placeholder {
        offset: start,
        len: 2 + close + 1,
        root,
        path,
    })
}

/// The most typo warnings one text gets; one more says how many `${` were not looked at.
const MAX_TYPO_WARNINGS: usize = 16;
/// How far after a `${` its `}` is looked for by [`likely_typos`].
const TYPO_REACH: usize = 256;

/// `${…}` in `text` that are not placeholders but probably meant to be: a root misspelt
/// (`param`, `states`, `Params`, `vars`), spaces inside the braces, an empty or unterminated
/// path. Everything else (`${HOME}`, `${VAR:-x}`, JavaScript) is left alone.
#[must_use]
pub fn likely_typos(text: &str) -> Vec<TemplateWarning> {
    const NEAR: [(&str, &str); 8] = [
        ("param", "params"),
        ("parameters", "params"),
        ("Params", "params"),
        ("PARAMS", "params"),
        ("states", "state"),
        ("State", "state"),
        ("vars", "state"),
        ("var", "state"),
    ];
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(rel) = text[i..].find("${") {
        let at = i + rel;
        i = at + 2;
        if placeholder_at(text, at).is_some() {
            continue;
        }
        if out.len() == MAX_TYPO_WARNINGS {
            let more = text[at..].matches("${").count();
            out.push(TemplateWarning {
                offset: at,
                message: format!(
                    "and {more} more '${{' from here on not looked at for typos (left as text)"
                ),
            });
            break;
        }
        let rest = &text[at + 2..];
        // A typo is short: a `}` further than this is not the end of a meant placeholder
        // (and reading on to it from every `${` would be quadratic in the text's length).
        let mut reach = TYPO_REACH.min(rest.len());
        while !rest.is_char_boundary(reach) {
            reach -= 1;
        }
        let near = &rest[..reach];
        let body = near.find('}').map(|c| &rest[..c]);
        let message = match body {
            None if rest.starts_with("params.") || rest.starts_with("state.") => {
                "unterminated placeholder: expected '}' (left as text)".to_string()
            }
            None => continue,
            Some(body) => {
                let trimmed = body.trim();
                let root = trimmed.split('.').next().unwrap_or_default();
                if let Some(inner) = body.find("${")
                    && matches!(root, "params" | "state")
                {
                    // `${state.${params.k}}`: the inner one is resolved, the outer is not.
                    format!(
                        "'${{{}' holds another placeholder: the inner one is resolved, but the \
                         text around it is left as text (a placeholder is not resolved twice); \
                         choose the key with a condition_task or pass the value itself",
                        &body[..inner]
                    )
                } else if trimmed != body && matches!(root, "params" | "state") {
                    format!(
                        "'${{{body}}}' has spaces inside the braces and is left as text; write \
                         '${{{trimmed}}}'"
                    )
                } else if let Some((_, meant)) = NEAR.iter().find(|(typo, _)| *typo == root)
                    && trimmed.contains('.')
                {
                    format!(
                        "'${{{body}}}' is left as text: only '${{params.…}}' and '${{state.…}}' \
                         are placeholders; did you mean '${{{meant}{}}}'?",
                        &trimmed[root.len()..]
                    )
                } else if matches!(root, "params" | "state") {
                    format!(
                        "'${{{body}}}' is left as text: expected '${{{root}.<key>}}' with \
                         non-empty keys"
                    )
                } else {
                    continue;
                }
            }
        };
        out.push(TemplateWarning {
            offset: at,
            message,
        });
    }
    out
}

/// Reads `path` below `root`: keys in objects, digit segments as array indices.
fn lookup<'v>(root: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// Renders `text` with every placeholder replaced by text (even a whole placeholder).
#[must_use]
pub fn resolve_str(text: &str, params: &Value, state: &Value) -> String {
    Template::parse(text).render(params, state)
}

/// Resolves every string inside `spec` (recursively through maps and arrays; keys untouched);
/// a string that is one whole placeholder takes the value's JSON type.
#[must_use]
pub fn resolve_value(spec: &Value, params: &Value, state: &Value) -> Value {
    TemplateValue::compile(spec).resolve(params, state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placeholder_inside_another_is_said_for_what_it_does() {
        let w = likely_typos("${state.${params.k}}");
        assert_eq!(w.len(), 1, "{w:?}");
        assert_eq!(w[0].offset, 0);
        assert!(
            w[0].message
                .starts_with("'${state.' holds another placeholder: the inner one is resolved"),
            "{}",
            w[0].message
        );
    }
    use serde_json::json;

    fn ctx() -> (Value, Value) {
        let params = json!({"pr_url": "https://x/1", "n": 3});
        let state = json!({
            "review": {"summary": "LGTM", "score": 9.5, "ok": true, "tags": ["a", "b"]},
            "items": ["zero", "one"],
            "nothing": null
        });
        (params, state)
    }

    #[test]
    fn substitutes_params_and_nested_state_inside_text() {
        let (p, s) = ctx();
        assert_eq!(
            resolve_str("PR ${params.pr_url} ok", &p, &s),
            "PR https://x/1 ok"
        );
        assert_eq!(resolve_str("${state.items.1}", &p, &s), "one");
        assert_eq!(
            resolve_str("${params.n}/${state.review.score}", &p, &s),
            "3/9.5"
        );
        assert_eq!(
            resolve_str("tags: ${state.review.tags}", &p, &s),
            r#"tags: ["a","b"]"#
        );
    }

    #[test]
    fn a_whole_placeholder_keeps_the_json_type() {
        let (p, s) = ctx();
        let r = |t: &str| resolve_value(&json!(t), &p, &s);
        assert_eq!(r("${params.n}"), json!(3));
        assert_eq!(r("${state.review.ok}"), json!(true));
        assert_eq!(r("${state.review.tags}"), json!(["a", "b"]));
        assert_eq!(r("${state.review}")["score"], json!(9.5));
        assert_eq!(r("${state.nothing}"), Value::Null);
        assert_eq!(r("${state.missing}"), json!(""));
        assert_eq!(r(" ${params.n}"), json!(" 3"));
    }

    #[test]
    fn missing_and_null_render_empty_in_text() {
        let (p, s) = ctx();
        assert_eq!(resolve_str("[${state.nope.deeper}]", &p, &s), "[]");
        assert_eq!(resolve_str("[${state.nothing}]", &p, &s), "[]");
        assert_eq!(resolve_str("[${state.items.9}]", &p, &s), "[]");
    }

    #[test]
    fn only_params_and_state_are_placeholders() {
        let (p, s) = ctx();
        for text in [
            "cost $5 {x}",
            "${HOME}/bin",
            "${VAR:-default}",
            "`${a + b}`",
            "${ params.n }",
            "${params.}",
            "${params.n",
            "${foo.x}",
            "$",
            "a$",
        ] {
            assert_eq!(resolve_str(text, &p, &s), text, "{text}");
            assert_eq!(resolve_value(&json!(text), &p, &s), json!(text), "{text}");
        }
        assert_eq!(resolve_str("${HOME} ${params.n}", &p, &s), "${HOME} 3");
    }

    /// As in the reference, every placeholder is resolved, also after a `$`: a price is
    /// written `$${params.amount}`.
    #[test]
    fn a_dollar_before_a_placeholder_is_text_before_its_value() {
        let (p, s) = ctx();
        assert_eq!(resolve_str("$${params.n}", &p, &s), "$3");
        assert_eq!(
            resolve_str("refund $${params.n} of ${params.n}", &p, &s),
            "refund $3 of 3"
        );
        assert_eq!(resolve_value(&json!("$${params.n}"), &p, &s), json!("$3"));
        assert_eq!(resolve_str("a $$ b $${HOME}", &p, &s), "a $$ b $${HOME}");
    }

    #[test]
    fn resolves_whole_spec_keys_untouched() {
        let (p, s) = ctx();
        let spec =
            json!({"${params.n}": ["${params.pr_url}", 1, {"t": "${state.review.summary}"}]});
        let out = resolve_value(&spec, &p, &s);
        assert_eq!(
            out,
            json!({"${params.n}": ["https://x/1", 1, {"t": "LGTM"}]})
        );
    }

    #[test]
    fn placeholders_carry_offsets_and_paths() {
        let ok = parse_placeholders("ok ${params.a} ${foo.x} ${state.a.b}");
        assert_eq!(ok.len(), 2);
        assert_eq!(ok[0].offset, 3);
        assert_eq!(ok[1].path, vec!["a", "b"]);
        assert_eq!(ok[1].root, TemplateRoot::State);
    }

    /// A text made of placeholders inside placeholders (a document of a megabyte of `${`):
    /// the innermost is a placeholder and the rest text, as for one level; and the typo
    /// warnings a text earns are bounded, with one saying how many were not looked at.
    #[test]
    fn placeholders_nested_many_levels_deep_parse_and_warn_within_bounds() {
        let (params, state) = ctx();
        let depth = 50_000;
        let text = format!("{}params.n{}", "${".repeat(depth), "}".repeat(depth));
        let t = Template::parse(&text);
        let found: Vec<_> = t.placeholders().collect();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].offset, 2 * (depth - 1));
        let rendered = t.render(&params, &state);
        assert_eq!(
            rendered,
            format!("{}3{}", "${".repeat(depth - 1), "}".repeat(depth - 1))
        );

        assert!(likely_typos(&text).is_empty());

        let unterminated = "${params.x ".repeat(20_000);
        let warnings = likely_typos(&unterminated);
        assert_eq!(warnings.len(), MAX_TYPO_WARNINGS + 1);
        assert!(warnings[0].message.contains("unterminated placeholder"));
        let last = &warnings.last().unwrap().message;
        assert!(
            last.contains(&format!("and {} more", 20_000 - MAX_TYPO_WARNINGS)),
            "{last}"
        );
        assert!(
            warnings.iter().all(|w| w.message.len() < 2 * TYPO_REACH),
            "each warning quotes a bounded part of the text"
        );
    }

    #[test]
    fn likely_typos_are_named_and_the_rest_left_alone() {
        let w = likely_typos("${param.x} ${states.y} ${ params.z } ${HOME} ${VAR:-1} $${param.q}");
        let offs: Vec<usize> = w.iter().map(|w| w.offset).collect();
        assert_eq!(offs, vec![0, 11, 23, 56]);
        assert!(
            w[0].message.contains("did you mean '${params.x}'"),
            "{}",
            w[0].message
        );
        assert!(w[1].message.contains("'${state.y}'"), "{}", w[1].message);
        assert!(w[2].message.contains("spaces"), "{}", w[2].message);
        assert!(likely_typos("${params.ok} `${js}`").is_empty());
        assert_eq!(likely_typos("${params.x")[0].offset, 0);
    }
}
