//! The tool permission cascade (reference §10).
//!
//! ```text
//! allowed = tenant.allowed ∩ project.allowed ∩ workflow.allowedTools
//! denied  = tenant.denied ∪ project.denied          (overrides any allow)
//! ```
//!
//! Tenant and project settings are the `tools:` section of the same `_vance/settings.yaml`
//! that holds the project's lane and workspace settings:
//!
//! - tenant: `<root>/<tenant>/_tenant/_vance/settings.yaml`
//! - project: `<root>/<tenant>/<project>/_vance/settings.yaml`
//!
//! ```yaml
//! tools:
//!   allowed: [http_request, doc_read, doc_list, inbox_read, workflow_start]
//!   denied: [shell_exec]
//! ```
//!
//! - A missing file, a file without `tools:`, or `tools:` without `allowed:` puts no
//!   restriction at that level (`allowed: []` allows nothing).
//! - `denied:` entries of the tenant and the project always win, over every allow.
//! - A workflow without `allowedTools:` gets the default pool (`web_search`, `doc_read`,
//!   `doc_list`, `inbox_read`); a workflow's list only narrows what tenant and project
//!   allow, it never widens it.
//! - Names match exactly (no patterns). Registered `#[task]`s are tools by their name and
//!   pass the same cascade.
//! - A settings file that cannot be read or parsed, or whose `tools:` section has unknown
//!   keys (a typo like `deny:`), denies every tool of the scope (fails closed) with a
//!   reason naming the file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::documents::{DocumentSource, Scope};

/// The tools a workflow without `allowedTools:` may call.
pub const DEFAULT_POOL: [&str; 4] = ["web_search", "doc_read", "doc_list", "inbox_read"];

/// The `tools:` section of a settings file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ToolSettings {
    /// `None`: no restriction at this level.
    #[serde(default)]
    allowed: Option<Vec<String>>,
    #[serde(default)]
    denied: Vec<String>,
}

/// A settings file; other sections are read by [`ProjectSettings`](crate::ProjectSettings).
#[derive(Debug, Default, Deserialize)]
struct SettingsFile {
    #[serde(default)]
    tools: Option<ToolSettings>,
}

fn read(path: &Path) -> Result<ToolSettings, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ToolSettings::default()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    if text.trim().is_empty() {
        return Ok(ToolSettings::default());
    }
    let file: Option<SettingsFile> = serde_yaml_ng::from_str(&text)
        .map_err(|e| format!("invalid tool settings in {}: {e}", path.display()))?;
    Ok(file.and_then(|f| f.tools).unwrap_or_default())
}

fn tenant_file(docs: &DocumentSource, scope: &Scope) -> PathBuf {
    docs.tenant_dir(scope).join("_vance").join("settings.yaml")
}

fn project_file(docs: &DocumentSource, scope: &Scope) -> PathBuf {
    docs.project_dir(scope).join("_vance").join("settings.yaml")
}

/// The cascade: `Ok(())` or why `tool` is refused.
pub fn decide(
    docs: &DocumentSource,
    scope: &Scope,
    workflow: Option<&[String]>,
    tool: &str,
) -> Result<(), String> {
    let levels = [
        ("tenant", tenant_file(docs, scope)),
        ("project", project_file(docs, scope)),
    ];
    let mut settings = Vec::with_capacity(2);
    for (level, path) in &levels {
        let s = read(path).map_err(|e| format!("the {level}'s tool settings fail closed: {e}"))?;
        settings.push((level, path, s));
    }
    for (level, path, s) in &settings {
        if s.denied.iter().any(|t| t == tool) {
            return Err(format!(
                "denied by the {level}'s tools.denied in {}",
                path.display()
            ));
        }
    }
    match workflow {
        Some(list) if !list.iter().any(|t| t == tool) => {
            return Err(format!(
                "not in the workflow's allowedTools [{}]",
                list.join(", ")
            ));
        }
        None if !DEFAULT_POOL.contains(&tool) => {
            return Err(format!(
                "not in the default tool pool [{}]; declare it in the workflow's allowedTools:",
                DEFAULT_POOL.join(", ")
            ));
        }
        _ => {}
    }
    for (level, path, s) in &settings {
        if let Some(allowed) = &s.allowed
            && !allowed.iter().any(|t| t == tool)
        {
            return Err(format!(
                "not in the {level}'s tools.allowed in {}",
                path.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_empty_files_restrict_nothing_and_unknown_keys_fail_closed() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("settings.yaml");
        assert!(read(&f).unwrap().allowed.is_none());
        std::fs::write(&f, "").unwrap();
        assert!(read(&f).unwrap().allowed.is_none());
        std::fs::write(&f, "lanes:\n  maxConcurrentTasks: 2\n").unwrap();
        assert!(read(&f).unwrap().allowed.is_none());
        std::fs::write(&f, "tools:\n  allowed: [a]\n  denied: [b]\n").unwrap();
        let s = read(&f).unwrap();
        assert_eq!(s.allowed, Some(vec!["a".to_string()]));
        assert_eq!(s.denied, vec!["b".to_string()]);
        std::fs::write(&f, "tools:\n  deny: [b]\n").unwrap();
        assert!(read(&f).unwrap_err().contains("deny"));
    }
}
