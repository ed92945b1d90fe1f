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
//!
//! A process's environment is bounded by the kernel (on Linux one `NAME=value` holds at most
//! 128 KiB, and all of them together share the argument space with the command): a
//! parameter or variable too large for it — a step's stored output of a megabyte, say —
//! would stop every later shell step from starting. Such a value ([`MAX_VARIABLE_BYTES`], or
//! past [`MAX_RUN_VARIABLES_BYTES`] of them in all, or one holding a NUL byte, which no
//! environment can hold) is written to a file in the step's private temporary directory
//! instead: `MAGRATHEA_<PREFIX>_<KEY>_FILE` holds its path and
//! `MAGRATHEA_<PREFIX>_<KEY>` is not set. A value spliced into `run:` (`MAGRATHEA_SPLICE_<n>`,
//! which the command reads as `${MAGRATHEA_SPLICE_<n>}`) that is too large goes to a file too,
//! and the shell sets the variable from it before the command (`Spilled::prelude`): a shell
//! variable of its own is no part of the environment the kernel bounds, and the command reads
//! the same text.

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

/// The longest `NAME=value` of a run parameter or variable given in the environment; a longer
/// one is given as a file (Linux takes at most 128 KiB for one, its NUL included).
pub const MAX_VARIABLE_BYTES: usize = 96 * 1024;

/// The most bytes the run's parameters and variables take in a step's environment; the ones
/// past it are given as files.
pub const MAX_RUN_VARIABLES_BYTES: usize = 1024 * 1024;

/// Whether `name` carries a run parameter or variable.
fn is_run_variable(name: &str) -> bool {
    name.starts_with("MAGRATHEA_PARAM_") || name.starts_with("MAGRATHEA_VAR_")
}

/// Whether `name` carries a value spliced into the command (`shell_splice`).
fn is_spliced(name: &str) -> bool {
    name.starts_with("MAGRATHEA_SPLICE_")
}

/// A step's environment once the values too large for it are in files.
#[derive(Debug)]
pub(super) struct Spilled {
    /// The variables of the process.
    pub(super) vars: Vec<(String, String)>,
    /// Shell text that sets each spliced value that went to a file from it, to run before the
    /// command (empty when none did).
    pub(super) prelude: String,
}

/// `vars` with each run parameter or variable too large for the environment (see the module
/// docs) written to a file under `dir` and named by `<NAME>_FILE`, and each spliced value too
/// large written to a file the [`Spilled::prelude`] reads.
pub(super) fn spill(vars: Vec<(String, String)>, dir: &Path) -> std::io::Result<Spilled> {
    let size = |k: &str, v: &str| k.len() + v.len() + 2;
    let mut used = 0usize;
    let mut files: Option<std::path::PathBuf> = None;
    let mut out = Vec::with_capacity(vars.len());
    let mut prelude = String::new();
    // Writes a value to its file (the directory made with the first), giving the file's path.
    let mut to_file = |name: &str, value: &str| -> std::io::Result<String> {
        let dir = match &files {
            Some(d) => d,
            None => {
                let d = dir.join("magrathea-env");
                std::fs::create_dir_all(&d)?;
                files.insert(d)
            }
        };
        let path = dir.join(name);
        std::fs::write(&path, value.as_bytes())?;
        Ok(path.to_string_lossy().into_owned())
    };
    for (name, value) in vars {
        let n = size(&name, &value);
        let (spliced, run_variable) = (is_spliced(&name), is_run_variable(&name));
        if !spliced && !run_variable {
            out.push((name, value));
            continue;
        }
        // A NUL byte (a `find -print0` output stored, say) no environment can hold: such a
        // value of the run goes to a file too, or no later shell step would start.
        let fits = n <= MAX_VARIABLE_BYTES && used + n <= MAX_RUN_VARIABLES_BYTES;
        if fits && (spliced || !value.contains('\0')) {
            used += n;
            out.push((name, value));
            continue;
        }
        let path = to_file(&name, &value)?;
        if spliced {
            // `x` kept after the text and taken off again: command substitution would drop
            // the value's trailing newlines. `command -p` finds `cat` on the system's path
            // whatever the step's `PATH` says; a value that cannot be read fails the step
            // rather than reaching the command empty.
            let quoted = path.replace('\'', "'\\''");
            prelude.push_str(&format!(
                "{name}=$(command -p cat -- '{quoted}' && printf x) || {{ echo \
                 'magrathea: cannot read the spliced value {name} from its file' >&2; exit 126; \
                 }}; {name}=${{{name}%x}}; "
            ));
        } else {
            let file_name = format!("{name}_FILE");
            used += size(&file_name, &path);
            out.push((file_name, path));
        }
    }
    Ok(Spilled { vars: out, prelude })
}

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
    fn values_too_large_for_the_environment_become_files_and_the_rest_stay() {
        let dir = tempfile::tempdir().unwrap();
        let big = "x".repeat(MAX_VARIABLE_BYTES);
        let medium = "y".repeat(60 * 1024);
        let mut vars = vec![
            ("PATH".to_string(), "z".repeat(MAX_VARIABLE_BYTES)),
            ("MAGRATHEA_VAR_BIG".to_string(), big.clone()),
            ("MAGRATHEA_VAR_SMALL".to_string(), "1".to_string()),
        ];
        // Twenty values of 60 KiB: the first seventeen fit the 1 MiB, the rest are files.
        for i in 0..20 {
            vars.push((format!("MAGRATHEA_PARAM_M{i}"), medium.clone()));
        }
        let env = spill(vars, dir.path()).unwrap().vars;
        // Only run parameters and variables move; the operator's own stay as they are.
        assert_eq!(get(&env, "PATH").map(|v| v.len()), Some(MAX_VARIABLE_BYTES));
        assert_eq!(get(&env, "MAGRATHEA_VAR_BIG"), None);
        let file = get(&env, "MAGRATHEA_VAR_BIG_FILE").unwrap();
        assert!(file.starts_with(dir.path().to_str().unwrap()), "{file}");
        assert_eq!(std::fs::read_to_string(file).unwrap(), big);
        assert_eq!(get(&env, "MAGRATHEA_VAR_SMALL").as_deref(), Some("1"));
        let kept = (0..20)
            .filter(|i| get(&env, &format!("MAGRATHEA_PARAM_M{i}")).is_some())
            .count();
        let filed = (0..20)
            .filter(|i| get(&env, &format!("MAGRATHEA_PARAM_M{i}_FILE")).is_some())
            .count();
        assert_eq!((kept, filed), (17, 3));
        let run_bytes: usize = env
            .iter()
            .filter(|(k, _)| k.starts_with("MAGRATHEA_"))
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum();
        assert!(run_bytes <= MAX_RUN_VARIABLES_BYTES, "{run_bytes}");
    }

    #[test]
    fn a_value_with_a_nul_byte_becomes_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let vars = vec![
            (
                "MAGRATHEA_VAR_FILES_STDOUT".to_string(),
                "a\0b\0".to_string(),
            ),
            ("MAGRATHEA_VAR_OK".to_string(), "plain".to_string()),
        ];
        let env = spill(vars, dir.path()).unwrap().vars;
        assert_eq!(get(&env, "MAGRATHEA_VAR_FILES_STDOUT"), None);
        let file = get(&env, "MAGRATHEA_VAR_FILES_STDOUT_FILE").unwrap();
        assert_eq!(std::fs::read(file).unwrap(), b"a\0b\0");
        assert_eq!(get(&env, "MAGRATHEA_VAR_OK").as_deref(), Some("plain"));
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
