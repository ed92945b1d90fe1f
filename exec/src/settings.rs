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
//!   defaultTimeoutSeconds: 600  # timeout of shell steps that declare none; at most the
//!                             # tenant's `shell.defaultTimeoutSeconds` (a larger value is cut)
//! subRuns:
//!   maxDepth: 8               # sub-runs nest at most this deep (default: the engine's, 32)
//! defaults:                   # timeouts of YAML states that declare none (see TimeoutDefaults)
//!   taskTimeoutSeconds: 600
//!   gateTimeoutSeconds: 86400
//! ```
//!
//! Tenant settings: `<root>/<tenant>/_tenant/_vance/settings.yaml` (see [`TenantSettings`]).
//!
//! ```yaml
//! shell:
//!   passEnv: [CARGO_HOME]     # server variables a shell step sees (when set); none by default
//!   env: { CI: "true" }       # variables every shell step of the tenant sees
//!   defaultTimeoutSeconds: 3600 # timeout of shell steps that declare none (default 1 hour)
//!   sandbox: on               # on | off; absent: on when served, off from the local CLI
//!   readPaths: [/srv/tools]   # more directories the sandbox lets shell steps read
//!   writePaths: [/srv/cache]  # more directories the sandbox lets shell steps write
//!   workspaceRoots: [/srv/build] # where workspaces outside the project may live (served)
//! agents:
//!   keyEnv:                   # server variables recipes may name in `apiKeyEnv` (served;
//!     OPENAI_API_KEY: [api.openai.com]  # none by default), each with the hosts it may go to
//! ```
//!
//! The same file's `execution:` (which task types a project may run; see
//! [`ExecutionPolicy`]), `egress:` (where `http_request` may connect; see [`EgressPolicy`])
//! and `bounds:` (default per-run bounds; see [`TenantBounds`]) are the tenant's too:
//!
//! ```yaml
//! bounds:
//!   maxTaskSpawns: 10000      # tasks a YAML run whose document declares no
//!                             # bounds.maxTaskSpawns may spawn (default 10000; 0: no default)
//!   maxJournalBytes: 67108864 # most bytes of a run's journal ([MAG-BD001]); absent: the
//!                             # engine's limit (256 MiB), which it never exceeds
//!   maxWallclockSeconds: 86400 # deadline of YAML runs whose document declares none
//!   maxTaskTimeoutSeconds: 86400 # the longest timeout of a shell or script step (default)
//!   projects:
//!     shop: { maxTaskSpawns: 500 } # a project's entry wins over the tenant-wide key
//! defaults:                   # timeouts of YAML states that declare none; a project's win
//!   taskTimeoutSeconds: 3600
//! ```
//!
//! The spawn default is frozen in each run's start record when the run starts: a change of
//! the settings applies to runs started after it, never to a run being replayed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::bounds::TenantBounds;
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
    /// Default timeouts of the project's YAML states that declare none (Friday's
    /// `defaultNodeTimeoutMs`); they win over the tenant's.
    #[serde(default)]
    pub defaults: TimeoutDefaults,
}

/// `defaults:` of the project or tenant settings: the timeouts of YAML states that declare no
/// `timeoutSeconds` of their own and whose document's `defaults:` sets none. Each applies
/// only when declared. Precedence: the state's `timeoutSeconds` > the document's
/// `defaults:` > the project's settings > the tenant's. They are read when a run starts and
/// frozen in its start record, so a change applies to runs started after it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimeoutDefaults {
    /// The timeout of `shell_task`, `script_task`, `tool_task`, `agent_task` and
    /// `workflow_task` states, in seconds.
    #[serde(default)]
    pub task_timeout_seconds: Option<f64>,
    /// The timeout of `gate_task` states, in seconds (the gate then ends `timeout`).
    #[serde(default)]
    pub gate_timeout_seconds: Option<f64>,
}

impl TimeoutDefaults {
    /// These defaults, each filled from `fallback` where unset; values that are not positive
    /// finite numbers count as unset.
    pub fn or(self, fallback: TimeoutDefaults) -> TimeoutDefaults {
        let ok = |v: Option<f64>| v.filter(|n| *n > 0.0 && n.is_finite());
        TimeoutDefaults {
            task_timeout_seconds: ok(self.task_timeout_seconds)
                .or(ok(fallback.task_timeout_seconds)),
            gate_timeout_seconds: ok(self.gate_timeout_seconds)
                .or(ok(fallback.gate_timeout_seconds)),
        }
    }
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
    /// Most bytes kept of each of stdout and stderr; the tail is kept (default 1 MiB; never
    /// more than a task's output may hold, the engine's task output limit, 4 MiB by default).
    #[serde(default = "one_mib")]
    pub max_output_bytes: usize,
    /// The timeout of shell steps that declare none. Never larger than the tenant's
    /// [`TenantShellSettings::default_timeout_seconds`]: a larger value is cut to it.
    #[serde(default)]
    pub default_timeout_seconds: Option<f64>,
}

fn one_mib() -> usize {
    1 << 20
}

impl Default for ShellSettings {
    fn default() -> Self {
        Self {
            max_output_bytes: one_mib(),
            default_timeout_seconds: None,
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
/// bounds:                     # defaults for runs whose document declares none
///   maxTaskSpawns: 10000      # 0 turns the default off
///   maxJournalBytes: 67108864 # absent: the engine's limit
///   projects: { shop: { maxTaskSpawns: 500 } }
/// ```
///
/// See [`ExecutionPolicy`], [`EgressPolicy`] and [`TenantBounds`] for what each key decides.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TenantSettings {
    /// What the tenant's shell steps see and may touch.
    #[serde(default)]
    pub shell: TenantShellSettings,
    /// Which task types (`shell_task`, `script_task`, `http_request`) the tenant's projects
    /// may run.
    #[serde(default)]
    pub execution: ExecutionPolicy,
    /// Where the `http_request` tool may connect (and, in a served tree, agent engines).
    #[serde(default)]
    pub egress: EgressPolicy,
    /// What the tenant's agent steps may use of the server.
    #[serde(default)]
    pub agents: TenantAgentSettings,
    /// Default bounds of the tenant's runs whose definition declares none.
    #[serde(default)]
    pub bounds: TenantBounds,
    /// Default timeouts of the tenant's YAML states (a project's `defaults:` wins).
    #[serde(default)]
    pub defaults: TimeoutDefaults,
    /// The search service of the `web_search` tool.
    #[serde(default)]
    pub web_search: WebSearchSettings,
}

/// The tenant's search service for the `web_search` tool: a SearxNG-compatible JSON endpoint,
/// asked as `<url>?q=<query>&format=json` through the tenant's egress policy.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchSettings {
    /// The endpoint; without it `web_search` ends `technical_error` (`[MAG-TL006]`).
    #[serde(default)]
    pub url: Option<String>,
    /// Seconds a search may take (default 15, at most 300).
    #[serde(default)]
    pub timeout_seconds: Option<f64>,
}

impl WebSearchSettings {
    /// The search's timeout in seconds: the setting within (0, 300], else 15.
    pub fn timeout_seconds(&self) -> f64 {
        self.timeout_seconds
            .filter(|t| *t > 0.0 && t.is_finite())
            .map_or(15.0, |t| t.min(300.0))
    }
}

/// The tenant's rules for `agent_task`. Only the tenant's administrator writes them.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TenantAgentSettings {
    /// The server's environment variables a recipe of the tenant may name in `apiKeyEnv`, in
    /// a served tree (none by default), each with the hosts its key may be sent to (patterns
    /// as in `egress.allowHosts`: `host`, `*.domain`, either with an optional `:port`). A
    /// recipe is a document a token with `workflow.write` may write, and its key goes to the
    /// recipe's `baseUrl`: only to a host listed here.
    #[serde(default)]
    pub key_env: BTreeMap<String, Vec<String>>,
}

/// Whether shell steps run confined by the sandbox (Landlock; see the README's "Shell
/// sandbox").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Confined: a kernel without Landlock refuses to run shell steps (`[MAG-SH010]`).
    On,
    /// Not confined: a shell step reads and writes whatever the server's user may.
    Off,
}

/// The tenant's rules for `shell_task`: its environment, its sandbox, its default timeout
/// and where its workspaces may live. Only the tenant's administrator writes them.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TenantShellSettings {
    /// Names of the server's environment variables a shell step sees, copied when set. A
    /// shell step otherwise starts from an empty environment plus `PATH`, `HOME`, `LANG`,
    /// `TMPDIR` and the `MAGRATHEA_*` variables.
    #[serde(default)]
    pub pass_env: Vec<String>,
    /// Variables every shell step of the tenant sees, with their values.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The timeout of a shell step that declares none, and the most a project's
    /// `shell.defaultTimeoutSeconds` may set (default 3600 s).
    #[serde(default = "one_hour")]
    pub default_timeout_seconds: f64,
    /// `on` or `off`. Absent: on for a served tree, off for the local `magrathea` command.
    #[serde(default)]
    pub sandbox: Option<SandboxMode>,
    /// More directories (and what is beneath them) the sandbox lets shell steps read and
    /// execute. In a served tree none may lie in the tree outside the tenant's own projects
    /// (its `_tenant/` included) nor in the server's store (`[MAG-SH015]`).
    #[serde(default)]
    pub read_paths: Vec<PathBuf>,
    /// More directories the sandbox lets shell steps read, write and execute; bounded as
    /// [`TenantShellSettings::read_paths`] is.
    #[serde(default)]
    pub write_paths: Vec<PathBuf>,
    /// Directories outside the project where a served project's `workspaces:` may point. A
    /// workspace of a served project outside its project directory and outside these is
    /// refused (`[MAG-SH011]`).
    #[serde(default)]
    pub workspace_roots: Vec<PathBuf>,
}

fn one_hour() -> f64 {
    3600.0
}

impl Default for TenantShellSettings {
    fn default() -> Self {
        Self {
            pass_env: Vec::new(),
            env: BTreeMap::new(),
            default_timeout_seconds: one_hour(),
            sandbox: None,
            read_paths: Vec::new(),
            write_paths: Vec::new(),
            workspace_roots: Vec::new(),
        }
    }
}

impl TenantSettings {
    /// Reads the file; a missing file gives the defaults, an invalid one is logged and gives
    /// the defaults.
    pub fn read(path: &Path) -> Self {
        Self::from_read(path, crate::regular_file::read_to_string(path))
    }

    /// The settings of the file at `path`, which read as `text`: defaults when it is
    /// missing, unreadable (logged) or invalid (logged).
    pub fn from_read(path: &Path, text: std::io::Result<String>) -> Self {
        match text {
            Ok(text) => crate::yaml_text::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring invalid tenant settings");
                Self::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring unreadable tenant settings");
                Self::default()
            }
        }
    }
}

impl ProjectSettings {
    /// Reads the file; a missing file gives the defaults, an unreadable one is logged and
    /// gives the defaults.
    pub fn read(path: &Path) -> Self {
        Self::from_read(path, crate::regular_file::read_to_string(path))
    }

    /// The settings of the file at `path`, which read as `text`: defaults when it is
    /// missing, unreadable (logged) or invalid (logged).
    pub fn from_read(path: &Path, text: std::io::Result<String>) -> Self {
        match text {
            Ok(text) => crate::yaml_text::from_str(&text).unwrap_or_else(|e| {
                tracing::warn!(path = %path.display(), error = %e, "ignoring invalid settings");
                Self::default()
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::default(),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "ignoring unreadable settings");
                Self::default()
            }
        }
    }
}
