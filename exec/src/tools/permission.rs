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
//! - The reference's names, `allowedTools: [...]` and `denied: [...]` at the top of the file,
//!   mean the same as `tools: {allowed, denied}` (both ways at once: both hold).
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
/// The reference's own names (`allowedTools:` and `denied:` at the top, §10) say the same as
/// `tools: {allowed, denied}`; given both ways, both hold (the allowed lists intersect, the
/// denied lists add up).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SettingsFile {
    #[serde(default)]
    tools: Option<ToolSettings>,
    #[serde(default)]
    allowed_tools: Option<Vec<String>>,
    #[serde(default)]
    denied: Option<Vec<String>>,
}

impl SettingsFile {
    /// The level's cascade, from `tools:` and the reference's top-level names together.
    fn into_tools(self) -> ToolSettings {
        let mut tools = self.tools.unwrap_or_default();
        if let Some(top) = self.allowed_tools {
            tools.allowed = Some(match tools.allowed {
                Some(section) => section.into_iter().filter(|t| top.contains(t)).collect(),
                None => top,
            });
        }
        tools.denied.extend(self.denied.unwrap_or_default());
        tools
    }
}

/// Whether a settings file's tool sections (`tools:`, `allowedTools:`, `denied:`) read as
/// the tool cascade reads them (a wrong one denies every tool of its scope): the parser's
/// error otherwise.
pub(crate) fn check_tool_sections(text: &str) -> Result<(), crate::yaml_text::YamlError> {
    crate::yaml_text::from_str::<Option<SettingsFile>>(text).map(drop)
}

/// Reads the settings at `path`, a file of `docs`' tree, as every document of it is read:
/// in a served tree beneath its project (or tenant), so a link a step put in the file's
/// place leads nowhere else. Errors name the file by `label` (in a served tree never by its
/// path on the server's disk: a denial is a task's outcome, which its run shows) and say
/// where it is wrong, never what it holds: the settings hold secrets, and the run's readers
/// may not read them.
fn read(docs: &DocumentSource, path: &Path, label: &str) -> Result<ToolSettings, String> {
    let text = match docs.read_text(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ToolSettings::default()),
        Err(e) => return Err(format!("cannot read {label}: {}", e.kind())),
    };
    if text.trim().is_empty() {
        return Ok(ToolSettings::default());
    }
    let file: Option<SettingsFile> = crate::yaml_text::from_str(&text).map_err(|e| {
        let at = e
            .position()
            .map(|(line, column)| format!(" at line {line}, column {column}"))
            .unwrap_or_default();
        format!(
            "invalid tool settings in {label}{at} (`magrathea validate` says what is wrong \
             there)"
        )
    })?;
    Ok(file.map(SettingsFile::into_tools).unwrap_or_default())
}

/// The tenant's settings file, and its name in messages ([`DocumentSource::label`]).
fn tenant_file(docs: &DocumentSource, scope: &Scope) -> (PathBuf, String) {
    let path = docs.tenant_dir(scope).join("_vance").join("settings.yaml");
    let label = docs.label(&path);
    (path, label)
}

/// The project's settings file, and its name in messages ([`DocumentSource::label`]).
fn project_file(docs: &DocumentSource, scope: &Scope) -> (PathBuf, String) {
    let path = docs.project_dir(scope).join("_vance").join("settings.yaml");
    let label = docs.label(&path);
    (path, label)
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
    for (level, (path, label)) in &levels {
        let s = read(docs, path, label)
            .map_err(|e| format!("the {level}'s tool settings fail closed: {e}"))?;
        settings.push((level, label, s));
    }
    for (level, label, s) in &settings {
        if s.denied.iter().any(|t| t == tool) {
            return Err(format!("denied by the {level}'s tools.denied in {label}"));
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
    for (level, label, s) in &settings {
        if let Some(allowed) = &s.allowed
            && !allowed.iter().any(|t| t == tool)
        {
            return Err(format!("not in the {level}'s tools.allowed in {label}"));
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
        let docs = DocumentSource::new(dir.path());
        let f = dir.path().join("settings.yaml");
        let label = "acme/shop/_vance/settings.yaml";
        assert!(read(&docs, &f, label).unwrap().allowed.is_none());
        std::fs::write(&f, "").unwrap();
        assert!(read(&docs, &f, label).unwrap().allowed.is_none());
        std::fs::write(&f, "lanes:\n  maxConcurrentTasks: 2\n").unwrap();
        assert!(read(&docs, &f, label).unwrap().allowed.is_none());
        std::fs::write(&f, "tools:\n  allowed: [a]\n  denied: [b]\n").unwrap();
        let s = read(&docs, &f, label).unwrap();
        assert_eq!(s.allowed, Some(vec!["a".to_string()]));
        assert_eq!(s.denied, vec!["b".to_string()]);
        std::fs::write(&f, "tools:\n  deny: [b]\n").unwrap();
        let e = read(&docs, &f, label).unwrap_err();
        assert!(e.contains("at line 2") && e.contains(label), "{e}");
    }

    /// The tool settings are read as every document of a served tree is: a link a step put in
    /// the settings' place leads nowhere outside the project (every tool of the scope is
    /// denied instead), and a file that does not parse is said by its place, never by what
    /// it holds (settings hold secrets; a denial is shown with the run).
    #[test]
    fn a_link_out_denies_every_tool_and_no_error_quotes_the_file() {
        let root = tempfile::tempdir().unwrap();
        let scope = Scope::new("acme", "shop");
        let docs = DocumentSource::new(root.path()).served();
        let project = root.path().join("acme/shop/_vance");
        std::fs::create_dir_all(&project).unwrap();
        let secret = root.path().join("globex/secret.txt");
        std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
        std::fs::write(&secret, "GLOBEX TOP SECRET\n").unwrap();
        std::os::unix::fs::symlink(&secret, project.join("settings.yaml")).unwrap();
        let e = decide(&docs, &scope, None, "doc_read").unwrap_err();
        assert!(
            e.contains("fail closed") && e.contains("cannot read"),
            "{e}"
        );
        assert!(!e.contains("GLOBEX"), "{e}");

        std::fs::remove_file(project.join("settings.yaml")).unwrap();
        std::fs::write(project.join("settings.yaml"), "OUR OWN SECRET\n").unwrap();
        let e = decide(&docs, &scope, None, "doc_read").unwrap_err();
        assert!(
            e.contains("invalid tool settings in acme/shop/_vance/settings.yaml at line 1"),
            "{e}"
        );
        assert!(!e.contains("SECRET"), "{e}");
    }

    /// The reference's own names (§10): `allowedTools:` and `denied:` at the top of the file.
    #[test]
    fn the_references_key_names_restrict_like_the_tools_section() {
        let root = tempfile::tempdir().unwrap();
        let scope = Scope::new("acme", "shop");
        let docs = DocumentSource::new(root.path());
        let project = root.path().join("acme/shop/_vance");
        std::fs::create_dir_all(&project).unwrap();
        let settings = project.join("settings.yaml");
        std::fs::write(
            &settings,
            "allowedTools: [inbox_read, doc_list]\ndenied: [doc_list]\n",
        )
        .unwrap();
        assert!(decide(&docs, &scope, None, "inbox_read").is_ok());
        assert!(decide(&docs, &scope, None, "doc_list").is_err(), "denied");
        assert!(
            decide(&docs, &scope, None, "doc_read").is_err(),
            "not allowed"
        );
        // Both ways at once: the allowed lists intersect, the denied lists add up.
        std::fs::write(
            &settings,
            "allowedTools: [inbox_read, doc_read]\ntools:\n  allowed: [doc_read, doc_list]\n  denied: [x]\ndenied: [y]\n",
        )
        .unwrap();
        let label = "acme/shop/_vance/settings.yaml";
        let s = read(&docs, &settings, label).unwrap();
        assert_eq!(s.allowed, Some(vec!["doc_read".to_string()]));
        assert_eq!(s.denied, vec!["x".to_string(), "y".to_string()]);
    }

    /// A denial is a task's outcome, shown to API clients with the run: in a served tree it
    /// names the settings file from the root of the tree, never by its path on the disk.
    #[test]
    fn a_denial_names_the_settings_file_from_the_root_of_the_tree() {
        let root = tempfile::tempdir().unwrap();
        let scope = Scope::new("acme", "shop");
        let docs = DocumentSource::new(root.path()).served();
        let project = root.path().join("acme/shop/_vance");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::write(
            project.join("settings.yaml"),
            "tools:\n  denied: [doc_read]\n",
        )
        .unwrap();
        let e = decide(&docs, &scope, None, "doc_read").unwrap_err();
        assert_eq!(
            e,
            "denied by the project's tools.denied in acme/shop/_vance/settings.yaml"
        );
        let tenant = root.path().join("acme/_tenant/_vance");
        std::fs::create_dir_all(&tenant).unwrap();
        std::fs::write(tenant.join("settings.yaml"), "tools: [unclosed\n").unwrap();
        let e = decide(&docs, &scope, None, "doc_read").unwrap_err();
        assert!(e.contains("acme/_tenant/_vance/settings.yaml"), "{e}");
        let root_text = root.path().display().to_string();
        assert!(!e.contains(&root_text), "{e}");
    }
}
