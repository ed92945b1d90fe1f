//! Which task types a project may run: the tenant's `execution:` settings.
//!
//! Writing a document is not running it. Whether a project's workflows may run a process
//! (`shell_task`), JavaScript (`script_task`) or reach the network (the `http_request` tool,
//! from a `tool_task` or an agent) is decided in the tenant's
//! `<tenant>/_tenant/_vance/settings.yaml`, which the documents API cannot write:
//!
//! ```yaml
//! execution:
//!   shellTask: true          # every project of the tenant may run shell_task
//!   scriptTask: false
//!   httpRequest: true
//!   projects:
//!     shop:
//!       shellTask: false     # except shop
//! ```
//!
//! A key that is absent takes the default of the tree: **denied** when the tree is served to
//! remote clients ([`DocumentSource::is_served`]: `magrathea serve`, an application's server),
//! **allowed** for the `magrathea` command run by the project's owner. A project's entry under
//! `projects:` wins over the tenant-wide key.
//!
//! The check is made where every call of the task type passes: [`Executors::execute`] for
//! `shell_task` and `script_task`, the `http_request` tool itself for outbound HTTP. A refused
//! call fails the step with error kind `permission_error` and a `[MAG-PL001]` message naming
//! the setting to change; the run routes it like any failure (`catch: permission_error`).
//!
//! [`Executors::execute`]: crate::Executors::execute

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::documents::{DocumentSource, Scope};

/// The error kind of a refused call.
pub const PERMISSION_ERROR: &str = "permission_error";

/// The tenant's `execution:` settings: which task types its projects may run. An absent key
/// denies on a served tree and allows for the local `magrathea` command.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPolicy {
    /// Whether the tenant's projects may run `shell_task` (absent: the tree's default).
    #[serde(default)]
    pub shell_task: Option<bool>,
    /// Whether they may run `script_task` (absent: the tree's default).
    #[serde(default)]
    pub script_task: Option<bool>,
    /// Whether they may call the `http_request` tool (absent: the tree's default).
    #[serde(default)]
    pub http_request: Option<bool>,
    /// Per-project overrides, by project name.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectExecution>,
}

/// One project's overrides of the tenant's [`ExecutionPolicy`].
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectExecution {
    /// Overrides `execution.shellTask` for this project.
    #[serde(default)]
    pub shell_task: Option<bool>,
    /// Overrides `execution.scriptTask` for this project.
    #[serde(default)]
    pub script_task: Option<bool>,
    /// Overrides `execution.httpRequest` for this project.
    #[serde(default)]
    pub http_request: Option<bool>,
}

/// A task type the tenant's settings decide on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskType {
    /// `shell_task`.
    Shell,
    /// `script_task`.
    Script,
    /// The `http_request` tool.
    HttpRequest,
}

impl TaskType {
    /// The name workflows use (`shell_task`, `script_task`, `http_request`).
    pub fn name(self) -> &'static str {
        match self {
            TaskType::Shell => "shell_task",
            TaskType::Script => "script_task",
            TaskType::HttpRequest => "http_request",
        }
    }

    /// The settings key (`shellTask`, `scriptTask`, `httpRequest`).
    pub fn key(self) -> &'static str {
        match self {
            TaskType::Shell => "shellTask",
            TaskType::Script => "scriptTask",
            TaskType::HttpRequest => "httpRequest",
        }
    }
}

/// Whether the tree serves remote clients, which decides the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TreeMode {
    /// Served over HTTP: absent keys deny.
    Served,
    /// The owner's `magrathea` command: absent keys allow.
    Local,
}

impl TreeMode {
    /// The mode of `docs`.
    pub fn of(docs: &DocumentSource) -> Self {
        if docs.is_served() {
            TreeMode::Served
        } else {
            TreeMode::Local
        }
    }
}

impl ProjectExecution {
    fn get(&self, task: TaskType) -> Option<bool> {
        match task {
            TaskType::Shell => self.shell_task,
            TaskType::Script => self.script_task,
            TaskType::HttpRequest => self.http_request,
        }
    }
}

impl ExecutionPolicy {
    fn tenant_wide(&self, task: TaskType) -> Option<bool> {
        match task {
            TaskType::Shell => self.shell_task,
            TaskType::Script => self.script_task,
            TaskType::HttpRequest => self.http_request,
        }
    }

    /// Whether `project` may run `task`: its override, else the tenant-wide key, else the
    /// default of `mode`.
    pub fn allows(&self, project: &str, task: TaskType, mode: TreeMode) -> bool {
        self.projects
            .get(project)
            .and_then(|p| p.get(task))
            .or_else(|| self.tenant_wide(task))
            .unwrap_or(mode == TreeMode::Local)
    }
}

/// `Ok(())` if `scope`'s project may run `task`, else the `[MAG-PL001]` message naming the
/// setting to change (with the settings file relative to the tree's root).
pub fn check(docs: &DocumentSource, scope: &Scope, task: TaskType) -> Result<(), String> {
    let policy = docs.tenant_settings(scope).execution;
    if policy.allows(&scope.project, task, TreeMode::of(docs)) {
        return Ok(());
    }
    let (name, key, project) = (task.name(), task.key(), &scope.project);
    let file = format!("{}/_tenant/_vance/settings.yaml", scope.tenant);
    let overridden = policy
        .projects
        .get(project)
        .and_then(|p| p.get(task))
        .is_some();
    let fix = if overridden {
        format!("set `execution.projects.{project}.{key}: true`")
    } else {
        format!("set `execution.{key}: true` (or `execution.projects.{project}.{key}: true`)")
    };
    Err(format!(
        "[MAG-PL001] {name} is not allowed for project {}: {fix} in {file}",
        scope.key()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(yaml: &str) -> ExecutionPolicy {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn absent_keys_deny_when_served_and_allow_locally() {
        let p = ExecutionPolicy::default();
        for task in [TaskType::Shell, TaskType::Script, TaskType::HttpRequest] {
            assert!(!p.allows("shop", task, TreeMode::Served));
            assert!(p.allows("shop", task, TreeMode::Local));
        }
    }

    #[test]
    fn a_project_override_wins_over_the_tenant_key() {
        let p = policy(
            "shellTask: true\nprojects:\n  shop:\n    shellTask: false\n  lab:\n    scriptTask: true\n",
        );
        assert!(!p.allows("shop", TaskType::Shell, TreeMode::Served));
        assert!(p.allows("lab", TaskType::Shell, TreeMode::Served));
        assert!(p.allows("lab", TaskType::Script, TreeMode::Served));
        assert!(!p.allows("shop", TaskType::Script, TreeMode::Served));
        // An explicit false holds for the local command too.
        assert!(!p.allows("shop", TaskType::Shell, TreeMode::Local));
    }

    #[test]
    fn the_message_names_the_setting_and_a_relative_file() {
        let dir = tempfile::tempdir().unwrap();
        let docs = DocumentSource::new(dir.path()).served();
        let scope = Scope::new("acme", "shop");
        let e = check(&docs, &scope, TaskType::Shell).unwrap_err();
        assert_eq!(
            e,
            "[MAG-PL001] shell_task is not allowed for project acme/shop: set \
             `execution.shellTask: true` (or `execution.projects.shop.shellTask: true`) in \
             acme/_tenant/_vance/settings.yaml"
        );
        let file = dir.path().join("acme/_tenant/_vance/settings.yaml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(
            &file,
            "execution:\n  httpRequest: true\n  projects:\n    shop:\n      httpRequest: false\n",
        )
        .unwrap();
        let e = check(&docs, &scope, TaskType::HttpRequest).unwrap_err();
        assert!(
            e.contains("set `execution.projects.shop.httpRequest: true` in acme/_tenant"),
            "{e}"
        );
        assert!(check(&docs, &Scope::new("acme", "lab"), TaskType::HttpRequest).is_ok());
    }
}
