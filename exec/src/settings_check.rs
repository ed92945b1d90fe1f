//! Checking a settings file as a user writes it: `magrathea validate` and the documents API
//! say what is wrong with `_vance/settings.yaml` (a project's) or `_tenant/_vance/settings.yaml`
//! (a tenant's) before a run finds out. At run time an invalid file counts as absent (the
//! defaults apply, and the server logs it); a value out of range counts as unset.

use serde::de::DeserializeOwned;

use crate::settings::{ProjectSettings, TenantSettings, TimeoutDefaults};
use crate::yaml_text::YamlError;

/// Every problem of a settings file's `text`, each as `label:line:column: [code] why`
/// (`label: …` where no place is known): YAML that does not parse (`MAG-Y001`), a section this
/// engine reads with a field it does not know (`MAG-Y005`) or a value of the wrong kind
/// (`MAG-Y007`), and values out of range
/// (`MAG-Y026`): `defaults.taskTimeoutSeconds`, `defaults.gateTimeoutSeconds`,
/// `shell.defaultTimeoutSeconds` and a tenant's `bounds.maxTaskTimeoutSeconds` must be positive
/// numbers of seconds, `lanes.maxConcurrentTasks`
/// and `shell.maxOutputBytes` at least 1. `tenant` says whose file it is (a tenant's takes
/// other sections).
#[must_use]
pub fn check_settings(label: &str, text: &str, tenant: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut task_timeout_bound = None;
    let (defaults, shell_timeout) = if tenant {
        match crate::yaml_text::from_str::<Option<TenantSettings>>(text) {
            Ok(s) => {
                let s = s.unwrap_or_default();
                task_timeout_bound = s.bounds.max_task_timeout_seconds;
                (s.defaults, Some(s.shell.default_timeout_seconds))
            }
            Err(e) => return every_error::<TenantSettings>(label, text, &e),
        }
    } else {
        match crate::yaml_text::from_str::<Option<ProjectSettings>>(text) {
            Ok(s) => {
                let s = s.unwrap_or_default();
                for (path, key, value) in [
                    (
                        "lanes.maxConcurrentTasks",
                        "maxConcurrentTasks",
                        s.lanes.max_concurrent_tasks,
                    ),
                    (
                        "shell.maxOutputBytes",
                        "maxOutputBytes",
                        s.shell.max_output_bytes,
                    ),
                ] {
                    if value == 0 {
                        out.push(format!(
                            "{}[MAG-Y026] `{path}` is 0: expected at least 1",
                            at(label, text, key)
                        ));
                    }
                }
                (s.defaults, s.shell.default_timeout_seconds)
            }
            Err(e) => return every_error::<ProjectSettings>(label, text, &e),
        }
    };
    // Trigger settings (tokens, secrets) are read from the file as a whole: text that parses
    // into the sections above but not as a whole (a number past 128 bits anywhere) would make
    // every token and secret of the file unset.
    if let Err(e) = crate::yaml_text::from_str::<serde_yaml_ng::Value>(text) {
        return vec![e.located(label, "MAG-Y001")];
    }
    // A wrong tool section denies every tool of its scope (fail closed): said here instead.
    if let Err(e) = crate::tools::permission::check_tool_sections(text) {
        return vec![e.located(label, "MAG-Y001")];
    }
    positive(
        label,
        text,
        "shell.defaultTimeoutSeconds",
        "defaultTimeoutSeconds",
        shell_timeout,
        &mut out,
    );
    positive(
        label,
        text,
        "bounds.maxTaskTimeoutSeconds",
        "maxTaskTimeoutSeconds",
        task_timeout_bound,
        &mut out,
    );
    let TimeoutDefaults {
        task_timeout_seconds,
        gate_timeout_seconds,
    } = defaults;
    for (path, key, value) in [
        (
            "defaults.taskTimeoutSeconds",
            "taskTimeoutSeconds",
            task_timeout_seconds,
        ),
        (
            "defaults.gateTimeoutSeconds",
            "gateTimeoutSeconds",
            gate_timeout_seconds,
        ),
    ] {
        positive(label, text, path, key, value, &mut out);
    }
    out
}

/// The errors of a settings file's `text` that does not read as `T` (`whole`, the first
/// error the parser met), as many as its sections have: each top-level section of a file that
/// is well-formed YAML is read alone, the other lines blank (so that every place stays where
/// it is written), and each section's first error is said, so that a wrong value in `lanes:`
/// does not hide one in `tools:`. The first error of the whole file is always among them.
fn every_error<T: DeserializeOwned>(label: &str, text: &str, whole: &YamlError) -> Vec<String> {
    let mut out = vec![whole.located(label, "MAG-Y001")];
    let syntax_ok = crate::yaml_text::from_str::<serde_yaml_ng::Value>(text).is_ok();
    let lines: Vec<&str> = text.split('\n').collect();
    let sections = top_level_sections(&lines);
    if !syntax_ok || sections.len() < 2 {
        return out;
    }
    for (start, end) in sections {
        let alone: Vec<&str> = lines
            .iter()
            .enumerate()
            .map(|(i, line)| if (start..end).contains(&i) { *line } else { "" })
            .collect();
        if let Err(e) = crate::yaml_text::from_str::<Option<T>>(&alone.join("\n"))
            // A section that names an anchor of another one is read with the whole file.
            && !e.to_string().contains("anchor")
        {
            let said = e.located(label, "MAG-Y001");
            if !out.contains(&said) {
                out.push(said);
            }
        }
    }
    // The tool sections are read apart from the others, at run time as here.
    if let Err(e) = crate::tools::permission::check_tool_sections(text) {
        let said = e.located(label, "MAG-Y001");
        if !out.contains(&said) {
            out.push(said);
        }
    }
    // In the order of the file.
    out.sort_by_key(|d| place_of(d, label));
    out
}

/// The line ranges (`start..end`, from 0) of the top-level keys of a block mapping: each
/// begins at a line whose key starts in the first column.
fn top_level_sections(lines: &[&str]) -> Vec<(usize, usize)> {
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, line)| {
            let first = line.chars().next();
            first.is_some_and(|c| !c.is_whitespace() && !matches!(c, '#' | '-' | '.' | '{' | '['))
                && line.contains(':')
        })
        .map(|(i, _)| i)
        .collect();
    starts
        .iter()
        .enumerate()
        .map(|(k, &s)| (s, starts.get(k + 1).copied().unwrap_or(lines.len())))
        .collect()
}

/// The line and column a diagnostic `label:line:column: …` names (none: first).
fn place_of(diagnostic: &str, label: &str) -> (usize, usize) {
    let rest = diagnostic.strip_prefix(label).unwrap_or(diagnostic);
    let mut parts = rest.trim_start_matches(':').splitn(3, ':');
    let number = |p: Option<&str>| p.and_then(|p| p.trim().parse().ok()).unwrap_or(0);
    (number(parts.next()), number(parts.next()))
}

/// The timeouts of a project's settings file `text` that its tenant's bound
/// (`bounds.maxTaskTimeoutSeconds`, `ceiling` seconds) refuses: `defaults.taskTimeoutSeconds`
/// and `shell.defaultTimeoutSeconds` above it would end every shell and script step that takes
/// them `technical_error` (`[MAG-BD030]`) before it starts. Each as `label:line:column: …`;
/// nothing for text [`check_settings`] refuses.
#[must_use]
pub fn check_against_tenant(label: &str, text: &str, ceiling: f64) -> Vec<String> {
    let Ok(Some(s)) = crate::yaml_text::from_str::<Option<ProjectSettings>>(text) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (path, key, value) in [
        (
            "defaults.taskTimeoutSeconds",
            "taskTimeoutSeconds",
            s.defaults.task_timeout_seconds,
        ),
        (
            "shell.defaultTimeoutSeconds",
            "defaultTimeoutSeconds",
            s.shell.default_timeout_seconds,
        ),
    ] {
        if let Some(v) = value
            && v.is_finite()
            && v > ceiling
        {
            out.push(format!(
                "{}[MAG-Y026] `{path}` is {v}: expected at most the tenant's \
                 bounds.maxTaskTimeoutSeconds ({ceiling} s); every shell or script step that \
                 takes it would end technical_error before it starts (MAG-BD030)",
                at(label, text, key)
            ));
        }
    }
    out
}

/// Reports `value` of the setting `path` (its last key `key`) unless it is unset or a
/// positive finite number.
fn positive(
    label: &str,
    text: &str,
    path: &str,
    key: &str,
    value: Option<f64>,
    out: &mut Vec<String>,
) {
    if let Some(v) = value
        && !(v > 0.0 && v.is_finite())
    {
        out.push(format!(
            "{}[MAG-Y026] `{path}` is {v}: expected a positive number of seconds (as it is, it \
             is ignored)",
            at(label, text, key)
        ));
    }
}

/// `label:line:column: ` of the value of the first `key:` in `text`, in block or flow style
/// (`shell: { defaultTimeoutSeconds: 0 }`; the settings' keys are distinct enough that the
/// first is the one), else `label: `.
fn at(label: &str, text: &str, key: &str) -> String {
    for (n, line) in text.lines().enumerate() {
        let code = line.split(" #").next().unwrap_or(line);
        for (start, _) in code.match_indices(key) {
            let before = code[..start].trim_end_matches(' ');
            let starts_key = before.is_empty()
                || before.ends_with('{')
                || before.ends_with(',')
                || before.ends_with("- ")
                || before == "-";
            let Some(rest) = code[start + key.len()..]
                .trim_start_matches(' ')
                .strip_prefix(':')
            else {
                continue;
            };
            if starts_key {
                let column = code.len() - rest.trim_start_matches(' ').len() + 1;
                return format!("{label}:{}:{column}: ", n + 1);
            }
        }
    }
    format!("{label}: ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_with_a_wrong_value_is_said_at_once_in_the_order_of_the_file() {
        let text = "lanes:\n  maxConcurrentTasks: \"many\"\ntools:\n  allowed: 5\n\
                    defaults:\n  taskTimeoutSeconds: 60\nsubRuns:\n  maxDepth: \"deep\"\n";
        let found = check_settings("s.yaml", text, false);
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found[0].starts_with("s.yaml:2:23: [MAG-Y007] lanes.maxConcurrentTasks"),
            "{found:?}"
        );
        assert!(found[1].starts_with("s.yaml:4:12: [MAG-Y007]"), "{found:?}");
        assert!(found[2].starts_with("s.yaml:8:13: [MAG-Y007]"), "{found:?}");
        // A tenant's file too.
        let text = "bounds:\n  maxTaskSpawns: lots\ndefaults:\n  gateTimeoutSeconds: soon\n";
        let found = check_settings("t.yaml", text, true);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("t.yaml:2:18: [MAG-Y007]"), "{found:?}");
        assert!(found[1].starts_with("t.yaml:4:23: [MAG-Y007]"), "{found:?}");
    }

    #[test]
    fn a_file_that_is_not_well_formed_or_shares_anchors_is_said_once() {
        // A syntax error is one error, not one per section.
        let found = check_settings("s.yaml", "lanes:\n  a: [1\ntools:\n  allowed: 5\n", false);
        assert_eq!(found.len(), 1, "{found:?}");
        // A section reading another's anchor is not blamed for it.
        let text = "defaults: &d\n  taskTimeoutSeconds: 60\nshell:\n  <<: *d\n";
        let found = check_settings("s.yaml", text, false);
        assert!(found.iter().all(|d| !d.contains("anchor")), "{found:?}");
    }

    #[test]
    fn valid_and_empty_settings_have_no_problem() {
        assert!(check_settings("s.yaml", "", false).is_empty());
        assert!(check_settings("s.yaml", "# nothing yet\n", false).is_empty());
        let text = "lanes: { maxConcurrentTasks: 2 }\ndefaults:\n  taskTimeoutSeconds: 600\nwebhooks: { a: { path: x } }\n";
        assert!(check_settings("s.yaml", text, false).is_empty());
        assert!(check_settings("t.yaml", "bounds: { maxTaskSpawns: 5 }\n", true).is_empty());
    }

    #[test]
    fn a_value_out_of_range_is_located_in_block_and_flow_style() {
        let found = check_settings("s.yaml", "shell: { defaultTimeoutSeconds: 0 }\n", false);
        assert_eq!(
            found,
            [
                "s.yaml:1:33: [MAG-Y026] `shell.defaultTimeoutSeconds` is 0: expected a positive \
              number of seconds (as it is, it is ignored)"
            ]
        );
        let found = check_settings(
            "s.yaml",
            "# taskTimeoutSeconds: 5\ndefaults:\n  gateTimeoutSeconds: 60\n  taskTimeoutSeconds:   -1\n",
            false,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("s.yaml:4:25: [MAG-Y026]"), "{found:?}");
        let found = check_settings("s.yaml", "lanes: {a: 1, maxConcurrentTasks: 0}\n", false);
        assert!(found[0].starts_with("s.yaml:1:35: [MAG-Y026]"), "{found:?}");
    }

    #[test]
    fn a_default_timeout_above_the_tenant_s_bound_is_located() {
        let text =
            "defaults:\n  taskTimeoutSeconds: 90000\nshell: { defaultTimeoutSeconds: 600 }\n";
        let found = check_against_tenant("s.yaml", text, 86_400.0);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("s.yaml:2:23: [MAG-Y026] `defaults.taskTimeoutSeconds` is 90000: expected at most the tenant's bounds.maxTaskTimeoutSeconds (86400 s)"),
            "{found:?}"
        );
        assert!(check_against_tenant("s.yaml", text, 100_000.0).is_empty());
        assert_eq!(check_against_tenant("s.yaml", text, 500.0).len(), 2);
    }

    #[test]
    fn a_number_too_large_for_any_setting_is_located() {
        for big in [
            "99999999999999999999",
            "12345678901234567890123456789012345",
        ] {
            let text =
                format!("webhooks:\n  gh:\n    path: tok-123456789012\nmisc:\n  big: {big}\n");
            let found = check_settings("s.yaml", &text, false);
            assert_eq!(found.len(), 1, "{found:?}");
            assert!(
                found[0].starts_with(&format!(
                    "s.yaml:5:8: [MAG-Y001] misc.big: the number {big} is too large: expected"
                )),
                "{found:?}"
            );
        }
    }

    #[test]
    fn broken_yaml_and_wrong_types_are_located() {
        let found = check_settings(
            "s.yaml",
            "defaults:\n  taskTimeoutSeconds: 5\nworkspaces: [\n",
            false,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("s.yaml:"), "{found:?}");
        assert!(
            found[0].contains("[MAG-Y001]"),
            "not well-formed: {found:?}"
        );
        let found = check_settings("s.yaml", "workspaces: [a, b]\n", false);
        assert!(
            found[0].starts_with("s.yaml:1:13: [MAG-Y007] workspaces:"),
            "{found:?}"
        );
        let found = check_settings("s.yaml", "lanes:\n\tmaxConcurrentTasks: 2\n", false);
        assert!(
            found[0].starts_with("s.yaml:2:1: [MAG-Y001] invalid YAML: a tab character"),
            "{found:?}"
        );
        // A section of the wrong kind names no Rust type.
        let found = check_settings("s.yaml", "defaults: 5\n", false);
        assert!(
            found[0].starts_with("s.yaml:1:11: [MAG-Y007] defaults: ")
                && found[0].ends_with("expected a mapping"),
            "{found:?}"
        );
        let found = check_settings("s.yaml", "lanes:\n  maxConcurrentTasks: many\n", false);
        assert!(
            found[0].starts_with("s.yaml:2:") && found[0].contains("maxConcurrentTasks"),
            "{found:?}"
        );
    }

    #[test]
    fn a_tool_section_the_cascade_cannot_read_is_located() {
        for (text, code) in [
            ("tools:\n  bogus: 1\n", "[MAG-Y005]"),
            ("tools: {allowed: 5}\n", "[MAG-Y007]"),
            ("allowedTools: 5\n", "[MAG-Y007]"),
        ] {
            let found = check_settings("s.yaml", text, false);
            assert_eq!(found.len(), 1, "{text}: {found:?}");
            assert!(
                found[0].starts_with("s.yaml:") && found[0].contains(code),
                "{text}: {found:?}"
            );
        }
        assert!(
            check_settings(
                "s.yaml",
                "tools: {allowed: [doc_read], denied: [x]}\n",
                false
            )
            .is_empty()
        );
    }

    #[test]
    fn values_out_of_range_name_the_setting_at_its_place() {
        let found = check_settings(
            "s.yaml",
            "defaults:\n  taskTimeoutSeconds: -5\n  gateTimeoutSeconds: 0\nlanes: { maxConcurrentTasks: 0 }\n",
            false,
        );
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(
            found
                .iter()
                .any(|f| f
                    .starts_with("s.yaml:2:23: [MAG-Y026] `defaults.taskTimeoutSeconds` is -5")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|f| f.contains("gateTimeoutSeconds")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|f| f.contains("lanes.maxConcurrentTasks")),
            "{found:?}"
        );
        let found = check_settings("t.yaml", "shell:\n  defaultTimeoutSeconds: -1\n", true);
        assert!(
            found[0].contains("shell.defaultTimeoutSeconds"),
            "{found:?}"
        );
        // The tenant's longest task timeout: a value out of range would be ignored.
        for bad in ["-3", "0"] {
            let text = format!("bounds:\n  maxTaskTimeoutSeconds: {bad}\n");
            let found = check_settings("t.yaml", &text, true);
            assert!(
                found.len() == 1
                    && found[0]
                        .starts_with("t.yaml:2:26: [MAG-Y026] `bounds.maxTaskTimeoutSeconds`"),
                "{found:?}"
            );
        }
        let ok = "bounds:\n  maxTaskTimeoutSeconds: 3600\n";
        assert!(check_settings("t.yaml", ok, true).is_empty());
    }
}
