//! Project settings: `_vance/settings.yaml`.
//!
//! ```yaml
//! lanes:
//!   maxConcurrentTasks: 1     # synchronous tasks of the project run one at a time (default)
//! workspaces:
//!   workspace: .              # the workspace named `workspace` (default: the project dir)
//!   build: /srv/build         # relative paths are relative to the project dir
//! shell:
//!   maxOutputBytes: 1048576   # per stream; the tail is kept and the cut marked (default 1 MiB)
//! subRuns:
//!   maxDepth: 8               # sub-runs nest at most this deep (default: the engine's, 32)
//! ```
//!
//! Tenant settings: `<tenant>/_tenant/_vance/settings.yaml` ([`TenantSettings`]), which the
//! documents API cannot write. Its keys: `execution:` (which task types a project may run;
//! see [`ExecutionPolicy`]) and `egress:` (where `http_request` may connect; see
//! [`EgressPolicy`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::egress::EgressPolicy;
use crate::policy::ExecutionPolicy;

/// Settings of one project.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSettings {
    /// Lane settings.
    #[serde(default)]
    pub lanes: LaneSettings,
    /// Named workspace directories.
    #[serde(default)]
    pub workspaces: BTreeMap<String, PathBuf>,
    /// `shell_task` settings.
    #[serde(default)]
    pub shell: ShellSettings,
    /// Sub-run (`workflow_task`) settings.
    #[serde(default)]
    pub sub_runs: SubRunSettings,
}

/// How sub-runs (`workflow_task`, and YAML children of code workflows) of a project nest.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubRunSettings {
    /// The deepest a sub-run that the project's workflows start may be nested (a run started
    /// from outside is at depth 0, its sub-runs at 1, …). A `workflow_task` whose sub-run
    /// would be deeper does not start it and ends with outcome `failure` and a `[MAG-CH002]`
    /// error naming the chain of runs. Absent: the engine's limit
    /// (`EngineBuilder::max_child_depth`, 32 by default).
    #[serde(default)]
    pub max_depth: Option<u32>,
}

/// How `shell_task` captures output.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ShellSettings {
    /// Most bytes kept of each of stdout and stderr; the tail is kept (default 1 MiB).
    #[serde(default = "one_mib")]
    pub max_output_bytes: usize,
}

fn one_mib() -> usize {
    1 << 20
}

impl Default for ShellSettings {
    fn default() -> Self {
        Self {
            max_output_bytes: one_mib(),
        }
    }
}

/// How many synchronous tasks of a project may run at once.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaneSettings {
    /// At most this many at once (default 1, as the reference's project lane).
    #[serde(default = "one")]
    pub max_concurrent_tasks: usize,
}

fn one() -> usize {
    1
}

impl Default for LaneSettings {
    fn default() -> Self {
        Self {
            max_concurrent_tasks: 1,
        }
    }
}

/// Settings of one tenant: `<root>/<tenant>/_tenant/_vance/settings.yaml`.
///
/// The tenant's administrator writes this file on the server's disk; the documents API cannot
/// (its `{project}` is never `_tenant`). What it decides therefore holds against a token that
/// can write a project's documents and settings. Unknown keys are ignored: the same file holds
/// other settings (e.g. event tokens under `events:`).
///
/// ```yaml
/// execution:                  # which task types the tenant's projects may run
///   shellTask: true           # absent: denied when served, allowed for the local command
///   scriptTask: true
///   httpRequest: true
///   projects: { shop: { shellTask: false } }
/// egress:                     # where http_request may connect
///   allowHosts: ["api.example.com", "*.corp.example", "127.0.0.1:8080"]
///   allowPrivate: false
/// ```
///
/// See [`ExecutionPolicy`] and [`EgressPolicy`] for what each key decides.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantSettings {
    /// Which task types (`shell_task`, `script_task`, `http_request`) the tenant's projects
    /// may run.
    #[serde(default)]
    pub execution: ExecutionPolicy,
    /// Where the `http_request` tool may connect.
    #[serde(default)]
    pub egress: EgressPolicy,
}

impl TenantSettings {
    /// Reads the file; a missing file gives the defaults, an invalid one is logged and gives
    /// the defaults.
    pub fn read(path: &Path) -> Self {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_yaml_ng::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring invalid tenant settings");
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }
}

impl ProjectSettings {
    /// Reads the file; a missing file gives the defaults, an unreadable one is logged and
    /// gives the defaults.
    pub fn read(path: &Path) -> Self {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_yaml_ng::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring invalid settings");
                Self::default()
            }),
            Err(_) => Self::default(),
        }
    }
}
