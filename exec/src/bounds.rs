//! Default per-run bounds: the tenant's `bounds:` settings.
//!
//! A workflow document may declare its own `bounds:`; one that declares none would otherwise
//! run without limit. The tenant's `<tenant>/_tenant/_vance/settings.yaml`, which the
//! documents API cannot write, sets the defaults:
//!
//! ```yaml
//! bounds:
//!   maxTaskSpawns: 10000      # default; 0 turns the default off
//!   maxJournalBytes: 67108864 # absent: the engine's limit (256 MiB); never above it
//!   maxTaskTimeoutSeconds: 86400 # the longest timeout of a shell or script step (default)
//!   projects:
//!     shop:
//!       maxTaskSpawns: 500    # a project's entry wins over the tenant-wide key
//! ```
//!
//! `maxTaskSpawns` applies to runs of YAML workflows whose document declares no
//! `bounds.maxTaskSpawns`. It is resolved when a run starts and frozen in the run's
//! `StartRecord` (`bounds`), so a run replays with the default it started with, whatever the
//! settings say later. `maxJournalBytes` is the most bytes a run's journal may hold
//! (`[MAG-BD001]`), asked each time a run is loaded; the engine's own limit
//! (`EngineBuilder::max_journal_bytes_per_run`) stays the ceiling.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::documents::{DocumentSource, Scope};

/// The default of [`TenantBounds::max_task_spawns`].
pub const DEFAULT_MAX_TASK_SPAWNS: u64 = 10_000;

/// The default of [`TenantBounds::max_task_timeout_seconds`]: one day.
pub const DEFAULT_MAX_TASK_TIMEOUT_SECONDS: f64 = 86_400.0;

/// The tenant's default bounds for runs whose definition declares none.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TenantBounds {
    /// The most tasks a YAML run whose document declares no `bounds.maxTaskSpawns` may
    /// spawn (default 10000; 0 turns the default off).
    #[serde(default = "default_max_task_spawns")]
    pub max_task_spawns: u64,
    /// The most bytes a run's journal may hold (absent or 0: the engine's limit, 256 MiB by
    /// default). A larger value than the engine's limit has no effect.
    #[serde(default)]
    pub max_journal_bytes: Option<u64>,
    /// The deadline, in seconds from its start, of a YAML run whose document declares no
    /// `bounds.maxWallclockSeconds` (absent or 0: none).
    #[serde(default)]
    pub max_wallclock_seconds: Option<f64>,
    /// The longest timeout a `shell_task` or `script_task` attempt of the tenant's runs may
    /// have, declared (`timeoutSeconds`) or by default (default one day): a step that asks
    /// for more ends `technical_error` before it starts (`[MAG-BD030]`). What holds a
    /// process or a script engine holds them at most this long, whatever a document says.
    #[serde(default)]
    pub max_task_timeout_seconds: Option<f64>,
    /// Per-project overrides, by project name.
    #[serde(default)]
    pub projects: BTreeMap<String, ProjectBounds>,
}

/// One project's overrides of the tenant's [`TenantBounds`].
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ProjectBounds {
    /// Overrides `bounds.maxTaskSpawns` for this project (0 turns the default off).
    #[serde(default)]
    pub max_task_spawns: Option<u64>,
    /// Overrides `bounds.maxJournalBytes` for this project (0: the engine's limit).
    #[serde(default)]
    pub max_journal_bytes: Option<u64>,
    /// Overrides `bounds.maxWallclockSeconds` for this project (0 turns it off).
    #[serde(default)]
    pub max_wallclock_seconds: Option<f64>,
}

fn default_max_task_spawns() -> u64 {
    DEFAULT_MAX_TASK_SPAWNS
}

impl Default for TenantBounds {
    fn default() -> Self {
        Self {
            max_task_spawns: DEFAULT_MAX_TASK_SPAWNS,
            max_journal_bytes: None,
            max_wallclock_seconds: None,
            max_task_timeout_seconds: None,
            projects: BTreeMap::new(),
        }
    }
}

/// A default bound and the setting that decides it, for messages that name what to change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultBound {
    /// The bound.
    pub value: u64,
    /// The setting and its file, relative to the tree's root, e.g.
    /// `bounds.maxTaskSpawns in acme/_tenant/_vance/settings.yaml`.
    pub setting: String,
}

impl TenantBounds {
    /// The default `maxTaskSpawns` of `scope`'s project and where it is set; `None` when the
    /// settings turn it off (0).
    pub fn task_spawns(&self, scope: &Scope) -> Option<DefaultBound> {
        let (value, key) = match self
            .projects
            .get(&scope.project)
            .and_then(|p| p.max_task_spawns)
        {
            Some(v) => (
                v,
                format!("bounds.projects.{}.maxTaskSpawns", scope.project),
            ),
            None => (self.max_task_spawns, "bounds.maxTaskSpawns".to_string()),
        };
        // The built-in default is named as such: the file may not exist.
        let unset = if key == "bounds.maxTaskSpawns" && value == DEFAULT_MAX_TASK_SPAWNS {
            format!(", {DEFAULT_MAX_TASK_SPAWNS} unless set")
        } else {
            String::new()
        };
        (value > 0).then(|| DefaultBound {
            value,
            setting: format!("{key} in {}{unset}", settings_file(scope)),
        })
    }

    /// The default deadline (seconds) of `scope`'s YAML runs and where it is set; `None`
    /// when none is set (or 0).
    pub fn wallclock_seconds(&self, scope: &Scope) -> Option<(f64, String)> {
        let (value, key) = match self
            .projects
            .get(&scope.project)
            .and_then(|p| p.max_wallclock_seconds)
        {
            Some(v) => (
                v,
                format!("bounds.projects.{}.maxWallclockSeconds", scope.project),
            ),
            None => (
                self.max_wallclock_seconds?,
                "bounds.maxWallclockSeconds".to_string(),
            ),
        };
        (value > 0.0 && value.is_finite())
            .then(|| (value, format!("{key} in {}", settings_file(scope))))
    }

    /// The journal limit of `scope`'s project in bytes; `None` leaves the engine's.
    pub fn journal_bytes(&self, scope: &Scope) -> Option<u64> {
        self.projects
            .get(&scope.project)
            .and_then(|p| p.max_journal_bytes)
            .or(self.max_journal_bytes)
            .filter(|b| *b > 0)
    }
}

/// The tenant's settings file of `scope`, relative to the tree's root.
fn settings_file(scope: &Scope) -> String {
    format!("{}/_tenant/_vance/settings.yaml", scope.tenant)
}

/// The journal limit of the runs of `run_scope` (`tenant/project`) from their tenant's
/// settings, for [`EngineBuilder::journal_bytes_limit`]; `None` for a run without a scope.
///
/// [`EngineBuilder::journal_bytes_limit`]: magrathea_core::EngineBuilder::journal_bytes_limit
pub fn journal_bytes_limit(docs: &DocumentSource, run_scope: &str) -> Option<u64> {
    let scope = Scope::parse(run_scope)?;
    docs.tenant_settings(&scope).bounds.journal_bytes(&scope)
}

impl TenantBounds {
    /// The longest timeout a shell or script step may have (see
    /// [`TenantBounds::max_task_timeout_seconds`]; a value that is not a positive number
    /// counts as the default).
    #[must_use]
    pub fn task_timeout_ceiling(&self) -> f64 {
        self.max_task_timeout_seconds
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(DEFAULT_MAX_TASK_TIMEOUT_SECONDS)
    }

    /// `Err` with the `[MAG-BD030]` message when a step of `task` would run with a timeout of
    /// `seconds`, above [`TenantBounds::task_timeout_ceiling`].
    ///
    /// # Errors
    /// The reason the step ends `technical_error` without starting.
    pub fn check_task_timeout(&self, task: &str, seconds: f64) -> Result<(), String> {
        let ceiling = self.task_timeout_ceiling();
        if seconds <= ceiling {
            return Ok(());
        }
        Err(format!(
            "[MAG-BD030] the {task}'s timeout of {seconds} s is above the tenant's \
             bounds.maxTaskTimeoutSeconds ({ceiling} s); the step did not start: lower its \
             timeoutSeconds (or, when it sets none, the default it takes: `defaults:` of the \
             document, defaults.taskTimeoutSeconds or shell.defaultTimeoutSeconds of \
             _vance/settings.yaml), or ask the tenant's administrator to raise the bound in \
             _tenant/_vance/settings.yaml"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(yaml: &str) -> TenantBounds {
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn without_settings_runs_get_ten_thousand_spawns_and_the_engine_journal_limit() {
        let b = TenantBounds::default();
        let shop = Scope::new("acme", "shop");
        assert_eq!(
            b.task_spawns(&shop),
            Some(DefaultBound {
                value: 10_000,
                setting: "bounds.maxTaskSpawns in acme/_tenant/_vance/settings.yaml, 10000 unless \
                          set"
                .into(),
            })
        );
        assert_eq!(b.journal_bytes(&shop), None);
        assert_eq!(bounds("{}").max_task_spawns, 10_000);
    }

    #[test]
    fn zero_turns_the_spawn_default_off_and_a_project_entry_wins() {
        let b = bounds(
            "maxTaskSpawns: 0\nmaxJournalBytes: 4096\nprojects:\n  shop:\n    maxTaskSpawns: 7\n    \
             maxJournalBytes: 0\n  lab:\n    maxJournalBytes: 100\n",
        );
        let (shop, lab, web) = (
            Scope::new("acme", "shop"),
            Scope::new("acme", "lab"),
            Scope::new("acme", "web"),
        );
        assert_eq!(b.task_spawns(&web), None);
        let shop_spawns = b.task_spawns(&shop).unwrap();
        assert_eq!(shop_spawns.value, 7);
        assert_eq!(
            shop_spawns.setting,
            "bounds.projects.shop.maxTaskSpawns in acme/_tenant/_vance/settings.yaml"
        );
        assert_eq!(b.journal_bytes(&web), Some(4096));
        assert_eq!(b.journal_bytes(&lab), Some(100));
        assert_eq!(b.journal_bytes(&shop), None, "0 leaves the engine's limit");
    }

    #[test]
    fn the_journal_limit_is_read_from_the_run_scope_tenant_settings() {
        let dir = tempfile::tempdir().unwrap();
        let docs = DocumentSource::new(dir.path());
        assert_eq!(journal_bytes_limit(&docs, "acme/shop"), None);
        let file = dir.path().join("acme/_tenant/_vance/settings.yaml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "bounds:\n  maxJournalBytes: 2048\n").unwrap();
        assert_eq!(journal_bytes_limit(&docs, "acme/shop"), Some(2048));
        assert_eq!(journal_bytes_limit(&docs, "other/shop"), None);
        assert_eq!(journal_bytes_limit(&docs, ""), None);
    }
}
