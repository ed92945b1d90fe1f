//! `${params.X}` / `${state.X}` text templates (reference §2.4).
//!
//! A placeholder is `${` root (`.` segment)+ `}` with root `params` or `state`; a segment is a
//! map key, or an array index when it is all digits (`${state.items.0}`). Resolution
//! substitutes text: a missing key renders as the empty string, `null` as the empty string,
//! strings as themselves, numbers and booleans as their plain text, objects and arrays as
//! compact JSON — even when the placeholder is the whole string. Text without `${` is returned
//! unchanged, and `$` not followed by `{` is literal. At run time a malformed placeholder
//! (unknown root, unterminated `${`) is kept literally; the loader reports it beforehand.

use std::borrow::Cow;

use serde_json::Value;

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

/// A malformed placeholder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// Byte offset of the offending `${` in the text.
    pub offset: usize,
    /// What was found and what was expected.
    pub message: String,
}

/// Every placeholder in `text`, or every malformed one.
pub fn parse_placeholders(text: &str) -> Result<Vec<Placeholder>, Vec<TemplateError>> {
    let mut ok = Vec::new();
    let mut errs = Vec::new();
    let mut i = 0;
    while let Some(rel) = text[i..].find("${") {
        let start = i + rel;
        match parse_one(text, start) {
            Ok(p) => {
                i = start + p.len;
                ok.push(p);
            }
            Err((e, next)) => {
                errs.push(e);
                i = next;
            }
        }
    }
    if errs.is_empty() { Ok(ok) } else { Err(errs) }
}

/// Parses the placeholder at `start` (which holds `${`). On error also returns where to resume.
fn parse_one(text: &str, start: usize) -> Result<Placeholder, (TemplateError, usize)> {
    let body_start = start + 2;
    let Some(close) = text[body_start..].find('}') else {
        let e = TemplateError {
            offset: start,
            message: "unterminated '${': expected '}' closing the placeholder".to_owned(),
        };
        return Err((e, text.len()));
    };
    let body = &text[body_start..body_start + close];
    let end = body_start + close + 1;
    let fail = |message: String| {
        Err((
            TemplateError {
                offset: start,
                message,
            },
            end,
        ))
    };
    let mut parts = body.split('.');
    let root = match parts.next().unwrap_or_default() {
        "params" => TemplateRoot::Params,
        "state" => TemplateRoot::State,
        other => {
            return fail(format!(
                "unknown placeholder root '{other}' in '${{{body}}}': expected '${{params.<key>}}' \
                 or '${{state.<key>}}'"
            ));
        }
    };
    let path: Vec<String> = parts.map(str::to_owned).collect();
    let bad_segment = path
        .iter()
        .any(|s| s.is_empty() || s.contains(['{', '$']) || s.trim() != s);
    if path.is_empty() || bad_segment {
        return fail(format!(
            "malformed placeholder '${{{body}}}': expected '${{params.<key>}}' or \
             '${{state.<key>.<field>}}' with non-empty keys"
        ));
    }
    Ok(Placeholder {
        offset: start,
        len: end - start,
        root,
        path,
    })
}

/// Reads `path` below `root`: keys in objects, digit segments as array indices.
fn lookup<'v>(root: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, seg| match v {
        Value::Object(m) => m.get(seg),
        Value::Array(a) => seg.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

fn render(v: Option<&Value>, out: &mut String) {
    match v {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => out.push_str(s),
        Some(other) => out.push_str(&other.to_string()),
    }
}

/// Substitutes every well-formed placeholder in `text`.
#[must_use]
pub fn resolve_str<'t>(text: &'t str, params: &Value, state: &Value) -> Cow<'t, str> {
    if !text.contains("${") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(rel) = text[i..].find("${") {
        let start = i + rel;
        out.push_str(&text[i..start]);
        match parse_one(text, start) {
            Ok(p) => {
                let root = match p.root {
                    TemplateRoot::Params => params,
                    TemplateRoot::State => state,
                };
                render(lookup(root, &p.path), &mut out);
                i = start + p.len;
            }
            Err((_, next)) => {
                out.push_str(&text[start..next]);
                i = next;
            }
        }
    }
    out.push_str(&text[i..]);
    Cow::Owned(out)
}

/// Resolves every string inside `spec` (recursively through maps and arrays; keys untouched).
#[must_use]
pub fn resolve_value(spec: &Value, params: &Value, state: &Value) -> Value {
    match spec {
        Value::String(s) => Value::String(resolve_str(s, params, state).into_owned()),
        Value::Array(a) => {
            Value::Array(a.iter().map(|v| resolve_value(v, params, state)).collect())
        }
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), resolve_value(v, params, state)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn substitutes_params_and_nested_state() {
        let (p, s) = ctx();
        assert_eq!(
            resolve_str("PR ${params.pr_url} ok", &p, &s),
            "PR https://x/1 ok"
        );
        assert_eq!(resolve_str("${state.review.summary}", &p, &s), "LGTM");
        assert_eq!(resolve_str("${state.items.1}", &p, &s), "one");
        assert_eq!(
            resolve_str("${params.n}/${state.review.score}", &p, &s),
            "3/9.5"
        );
        assert_eq!(resolve_str("${state.review.ok}", &p, &s), "true");
    }

    #[test]
    fn whole_placeholder_still_renders_text_and_json() {
        let (p, s) = ctx();
        assert_eq!(resolve_str("${state.review.tags}", &p, &s), r#"["a","b"]"#);
        assert_eq!(resolve_value(&json!("${params.n}"), &p, &s), json!("3"));
    }

    #[test]
    fn missing_and_null_render_empty() {
        let (p, s) = ctx();
        assert_eq!(resolve_str("[${state.nope.deeper}]", &p, &s), "[]");
        assert_eq!(resolve_str("[${state.nothing}]", &p, &s), "[]");
        assert_eq!(resolve_str("[${state.items.9}]", &p, &s), "[]");
    }

    #[test]
    fn literal_text_is_untouched() {
        let (p, s) = ctx();
        assert!(matches!(
            resolve_str("cost $5 {x}", &p, &s),
            Cow::Borrowed("cost $5 {x}")
        ));
        assert_eq!(
            resolve_str("a $ {params.n} $${params.n}", &p, &s),
            "a $ {params.n} $3"
        );
        assert_eq!(
            resolve_str("${foo.x} ${params.n", &p, &s),
            "${foo.x} ${params.n"
        );
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
    fn reports_malformed_placeholders_with_offsets() {
        let errs = parse_placeholders("ok ${params.a} ${foo.x} ${state.} ${params.b")
            .err()
            .unwrap_or_default();
        let offs: Vec<usize> = errs.iter().map(|e| e.offset).collect();
        assert_eq!(offs, vec![15, 24, 34]);
        assert!(errs[0].message.contains("unknown placeholder root 'foo'"));
        assert!(errs[2].message.contains("unterminated"));
        let ok = parse_placeholders("${state.a.b}").unwrap_or_default();
        assert_eq!(ok[0].path, vec!["a", "b"]);
        assert_eq!(ok[0].root, TemplateRoot::State);
    }
}
