//! Values of the settings (`_vance/settings.yaml` of the project, then of its tenant) named by
//! a dotted path, as event and webhook documents name their tokens and secrets.

use magrathea_yaml::{DocumentSource, Scope};

/// The settings value at `dotted` (`events.github.token`): the project's, else the tenant's.
/// `Err` says which settings file does not parse and why: its values are unknown, so a value
/// of the tenant's does not stand in for one the project's file may hold.
fn lookup(
    docs: &DocumentSource,
    scope: &Scope,
    dotted: &str,
) -> Result<Option<serde_yaml_ng::Value>, String> {
    let files = [
        (
            docs.project_dir(scope).join("_vance/settings.yaml"),
            format!("{}/{}/_vance/settings.yaml", scope.tenant, scope.project),
        ),
        (
            docs.tenant_dir(scope).join("_vance/settings.yaml"),
            format!("{}/_tenant/_vance/settings.yaml", scope.tenant),
        ),
    ];
    for (file, label) in &files {
        let Ok(text) = docs.read_text(file) else {
            continue;
        };
        let value: serde_yaml_ng::Value =
            magrathea_exec::yaml_text::from_str(&text).map_err(|e| e.located(label, "MAG-Y001"))?;
        let found = dotted
            .split('.')
            .try_fold(&value, |v, key| v.get(key))
            .cloned();
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// [`lookup`], a file that does not parse logged and counted as holding no value.
fn value(docs: &DocumentSource, scope: &Scope, dotted: &str) -> Option<serde_yaml_ng::Value> {
    lookup(docs, scope, dotted).unwrap_or_else(|why| {
        tracing::warn!(setting = dotted, "{why}");
        None
    })
}

/// Why the setting at `dotted` has no value: a settings file that does not parse, if one
/// does not.
pub(crate) fn unreadable(docs: &DocumentSource, scope: &Scope, dotted: &str) -> Option<String> {
    lookup(docs, scope, dotted).err()
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
