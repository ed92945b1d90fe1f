//! Values of the settings (`_vance/settings.yaml` of the project, then of its tenant) named by
//! a dotted path, as event and webhook documents name their tokens and secrets.

use magrathea_yaml::{DocumentSource, Scope};

/// The settings value at `dotted` (`events.github.token`): the project's, else the tenant's.
fn value(docs: &DocumentSource, scope: &Scope, dotted: &str) -> Option<serde_yaml_ng::Value> {
    let files = [
        docs.project_dir(scope).join("_vance/settings.yaml"),
        docs.tenant_dir(scope).join("_vance/settings.yaml"),
    ];
    files.iter().find_map(|file| {
        let text = docs.read_text(file).ok()?;
        let mut value: serde_yaml_ng::Value = magrathea_exec::yaml_text::from_str(&text).ok()?;
        for key in dotted.split('.') {
            value = value.get(key)?.clone();
        }
        Some(value)
    })
}

fn scalar(v: &serde_yaml_ng::Value) -> Option<String> {
    match v {
        serde_yaml_ng::Value::String(s) => Some(s.clone()),
        serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The setting at `dotted` as text (a string or a number), if set to something other than
/// blanks. A blank value is no value: as a token it would admit a request that presents no
/// token at all, so it refuses like a missing one.
pub(crate) fn text(docs: &DocumentSource, scope: &Scope, dotted: &str) -> Option<String> {
    value(docs, scope, dotted)
        .as_ref()
        .and_then(scalar)
        .filter(|s| !s.trim().is_empty())
}

/// The setting at `dotted` as a list of texts: one value, or a list of them (several active
/// secrets while one is rotated). Empty when unset; empty strings are left out.
pub(crate) fn texts(docs: &DocumentSource, scope: &Scope, dotted: &str) -> Vec<String> {
    let out = match value(docs, scope, dotted) {
        Some(serde_yaml_ng::Value::Sequence(items)) => items.iter().filter_map(scalar).collect(),
        Some(v) => scalar(&v).into_iter().collect(),
        None => Vec::new(),
    };
    out.into_iter().filter(|s: &String| !s.is_empty()).collect()
}
