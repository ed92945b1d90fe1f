//! The environment of a shell step. It starts empty — never the server's own environment,
//! which may hold API keys and passwords — and holds, later entries winning:
//!
//! 1. `PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin` (fixed, so that a
//!    server started from an odd shell does not leak its own `PATH`; a tenant that wants the
//!    server's lists `PATH` in `shell.passEnv`), `HOME` = the workspace directory, `LANG` (the
//!    server's, else `C.UTF-8`), `TMPDIR` = the step's private temporary directory;
//! 2. the server's variables the tenant names in `shell.passEnv` (those that are set);
//! 3. the tenant's `shell.env`;
//! 4. `MAGRATHEA_RUN_ID`, `MAGRATHEA_STATE`, `MAGRATHEA_WORKFLOW`, and the run's parameters
//!    and variables as `MAGRATHEA_PARAM_<KEY>` / `MAGRATHEA_VAR_<KEY>`;
//! 5. the input's own `env`.
//!
//! A parameter or variable holding an object or array also gets one variable per nested
//! value, its path joined by `_`: `{"payload": {"title": "x"}}` gives
//! `MAGRATHEA_PARAM_PAYLOAD` (compact JSON) and `MAGRATHEA_PARAM_PAYLOAD_TITLE=x`, exactly the
//! name [`env_name`] gives the placeholder `${params.payload.title}`. Nesting is followed
//! [`MAX_DEPTH`] levels deep and at most [`MAX_NESTED`] nested variables are made per prefix;
//! values beyond are skipped (the enclosing value's JSON still holds them). When two paths
//! give one name, the first made wins: top-level keys before nested ones.

use std::collections::HashSet;
use std::path::Path;

use serde_json::Value;

use crate::settings::TenantShellSettings;

/// The `PATH` of a shell step.
pub const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// How deep nested parameters and variables get variables of their own.
pub const MAX_DEPTH: usize = 8;

/// How many nested variables a step gets per prefix (`PARAM`, `VAR`).
pub const MAX_NESTED: usize = 1000;

/// The environment variable that carries a run parameter (`PARAM`) or variable (`VAR`):
/// `MAGRATHEA_<PREFIX>_<KEY>`, the key upper-cased with every character other than `A-Z`,
/// `0-9` and `_` replaced by `_`. For a nested value, `key` is its path joined by `.`
/// (`payload.title` → `MAGRATHEA_PARAM_PAYLOAD_TITLE`).
pub fn env_name(prefix: &str, key: &str) -> String {
    let key: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("MAGRATHEA_{prefix}_{key}")
}

/// Where the step runs, for `HOME` and `TMPDIR`.
pub(super) struct Places<'a> {
    pub(super) workspace: &'a Path,
    pub(super) tmp: &'a Path,
}

/// The base of every shell step's environment: steps 1 to 3 above.
pub(super) fn base(places: &Places<'_>, tenant: &TenantShellSettings) -> Vec<(String, String)> {
    let lang = std::env::var("LANG").unwrap_or_else(|_| "C.UTF-8".into());
    let mut env = vec![
        ("PATH".to_string(), DEFAULT_PATH.to_string()),
        (
            "HOME".to_string(),
            places.workspace.to_string_lossy().into_owned(),
        ),
        ("LANG".to_string(), lang),
        (
            "TMPDIR".to_string(),
            places.tmp.to_string_lossy().into_owned(),
        ),
    ];
    env.extend(
        tenant
            .pass_env
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v))),
    );
    env.extend(tenant.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `MAGRATHEA_<prefix>_*` of `entries`: each top-level entry, then nested values within the
/// bounds.
pub(super) fn flattened<'v>(
    prefix: &str,
    entries: impl Iterator<Item = (&'v String, &'v Value)> + Clone,
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut taken = HashSet::new();
    for (k, v) in entries.clone() {
        let name = env_name(prefix, k);
        if taken.insert(name.clone()) {
            out.push((name, text(v)));
        }
    }
    let mut budget = MAX_NESTED;
    for (k, v) in entries {
        nested(prefix, k, v, 1, &mut budget, &mut taken, &mut out);
    }
    out
}

fn nested(
    prefix: &str,
    path: &str,
    value: &Value,
    depth: usize,
    budget: &mut usize,
    taken: &mut HashSet<String>,
    out: &mut Vec<(String, String)>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return,
    };
    for (key, child) in children {
        if *budget == 0 {
            return;
        }
        let child_path = format!("{path}.{key}");
        let name = env_name(prefix, &child_path);
        if taken.insert(name.clone()) {
            *budget -= 1;
            out.push((name, text(child)));
        }
        nested(prefix, &child_path, child, depth + 1, budget, taken, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn get(env: &[(String, String)], k: &str) -> Option<String> {
        env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn nested_parameters_get_the_variable_their_placeholder_names() {
        let params = json!({"payload": {"title": "x; echo pwned", "tags": ["a", {"b": 1}]}});
        let env = flattened("PARAM", params.as_object().unwrap().iter());
        assert_eq!(
            get(&env, "MAGRATHEA_PARAM_PAYLOAD_TITLE").as_deref(),
            Some("x; echo pwned")
        );
        assert_eq!(
            get(&env, &env_name("PARAM", "payload.tags.1.b")).as_deref(),
            Some("1")
        );
        assert_eq!(
            get(&env, "MAGRATHEA_PARAM_PAYLOAD_TAGS_0").as_deref(),
            Some("a")
        );
        assert!(get(&env, "MAGRATHEA_PARAM_PAYLOAD").is_some());
    }

    #[test]
    fn nesting_is_bounded_in_depth_and_count() {
        let mut deep = json!("bottom");
        for _ in 0..20 {
            deep = json!({ "d": deep });
        }
        let params = json!({ "deep": deep });
        let env = flattened("PARAM", params.as_object().unwrap().iter());
        // The top-level value and MAX_DEPTH nested levels.
        assert_eq!(env.len(), 1 + MAX_DEPTH);
        let wide: serde_json::Map<String, Value> = (0..5000)
            .map(|i| (format!("k{i}"), json!({"v": i})))
            .collect();
        let env = flattened("VAR", wide.iter());
        assert_eq!(env.len(), 5000 + MAX_NESTED);
    }
}
