//! The tenant's default bounds and the settings' default timeouts of a YAML run, frozen in
//! its start record.
//!
//! A document that declares no `bounds.maxTaskSpawns` runs under its tenant's default
//! (`bounds.maxTaskSpawns` in `<tenant>/_tenant/_vance/settings.yaml`, 10000 unless set; see
//! [`magrathea_exec::bounds`]); one that declares no `bounds.maxWallclockSeconds` under the
//! tenant's `bounds.maxWallclockSeconds` when it sets one. The `defaults:` timeouts of the
//! project's and the tenant's settings fill what neither a state nor the document sets. All
//! are read when the run starts and journaled in its `StartRecord` as `bounds`:
//!
//! ```json
//! {"maxTaskSpawns": 10000,
//!  "maxTaskSpawnsSetting": "bounds.maxTaskSpawns in acme/_tenant/_vance/settings.yaml",
//!  "maxWallclockSeconds": 3600,
//!  "maxWallclockSecondsSetting": "bounds.maxWallclockSeconds in acme/_tenant/_vance/settings.yaml",
//!  "defaults": {"taskTimeoutSeconds": 600, "gateTimeoutSeconds": 86400}}
//! ```
//!
//! The interpreter reads them from there, so a replay applies the defaults the run started
//! with whatever the settings say by then, and a run started before defaults existed (no
//! `bounds` in its record) keeps running without them.

use magrathea_core::StartRecord;
use magrathea_exec::{DocumentSource, Scope};
use serde_json::{Map, Value, json};

use crate::ast::{Bounds, Defaults};

const MAX_TASK_SPAWNS: &str = "maxTaskSpawns";
const MAX_TASK_SPAWNS_SETTING: &str = "maxTaskSpawnsSetting";
const MAX_WALLCLOCK: &str = "maxWallclockSeconds";
const MAX_WALLCLOCK_SETTING: &str = "maxWallclockSecondsSetting";
const DEFAULTS: &str = "defaults";
const TASK_TIMEOUT: &str = "taskTimeoutSeconds";
const GATE_TIMEOUT: &str = "gateTimeoutSeconds";

/// The tenant's (and the project's) defaults for runs of `scope`, as frozen in a start
/// record; `None` when there are none.
pub(crate) fn tenant_defaults(docs: &DocumentSource, scope: &Scope) -> Option<Value> {
    let tenant = docs.tenant_settings(scope);
    let mut out = Map::new();
    if let Some(spawns) = tenant.bounds.task_spawns(scope) {
        out.insert(MAX_TASK_SPAWNS.into(), json!(spawns.value));
        out.insert(MAX_TASK_SPAWNS_SETTING.into(), json!(spawns.setting));
    }
    if let Some((secs, setting)) = tenant.bounds.wallclock_seconds(scope) {
        out.insert(MAX_WALLCLOCK.into(), json!(secs));
        out.insert(MAX_WALLCLOCK_SETTING.into(), json!(setting));
    }
    let timeouts = docs.settings(scope).defaults.or(tenant.defaults);
    let mut defaults = Map::new();
    if let Some(t) = timeouts.task_timeout_seconds {
        defaults.insert(TASK_TIMEOUT.into(), json!(t));
    }
    if let Some(t) = timeouts.gate_timeout_seconds {
        defaults.insert(GATE_TIMEOUT.into(), json!(t));
    }
    if !defaults.is_empty() {
        out.insert(DEFAULTS.into(), Value::Object(defaults));
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

/// What of `defaults` a run of a document with `declared` bounds freezes: the defaults of the
/// bounds the document leaves open and the settings' default timeouts (which apply only
/// where neither a state nor the document's `defaults:` sets one), or `None`.
pub(crate) fn for_document(declared: &Bounds, defaults: Option<Value>) -> Option<Value> {
    let Value::Object(mut m) = defaults? else {
        return None;
    };
    if declared.max_task_spawns.is_some() {
        m.remove(MAX_TASK_SPAWNS);
        m.remove(MAX_TASK_SPAWNS_SETTING);
    }
    if declared.max_wallclock_seconds.is_some() {
        m.remove(MAX_WALLCLOCK);
        m.remove(MAX_WALLCLOCK_SETTING);
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// The document's `defaults:`, each unset key filled from the settings' timeouts frozen in
/// `start` (precedence: state > document > project settings > tenant settings).
pub(crate) fn timeout_defaults(declared: Defaults, start: &StartRecord) -> Defaults {
    let frozen = start.bounds.as_ref().and_then(|b| b.get(DEFAULTS));
    let read = |key: &str| {
        frozen
            .and_then(|d| d.get(key))
            .and_then(Value::as_f64)
            .filter(|n| *n > 0.0 && n.is_finite())
    };
    Defaults {
        task_timeout_seconds: declared.task_timeout_seconds.or_else(|| read(TASK_TIMEOUT)),
        gate_timeout_seconds: declared.gate_timeout_seconds.or_else(|| read(GATE_TIMEOUT)),
    }
}

/// The run's deadline in seconds and its failure reason: the document's
/// `bounds.maxWallclockSeconds` (or `runTimeoutMs`, named as written), else the default frozen
/// in `start`.
pub(super) fn deadline(declared: &Bounds, start: &StartRecord) -> Option<(f64, String)> {
    if let (Some(max), Some(ms)) = (declared.max_wallclock_seconds, declared.run_timeout_ms) {
        return Some((max, format!("bounds exhausted: runTimeoutMs {ms} exceeded")));
    }
    if let Some(max) = declared.max_wallclock_seconds {
        return Some((
            max,
            format!("bounds exhausted: maxWallclockSeconds {max} exceeded"),
        ));
    }
    let frozen = start.bounds.as_ref()?;
    let max = frozen.get(MAX_WALLCLOCK)?.as_f64()?;
    let setting = frozen
        .get(MAX_WALLCLOCK_SETTING)
        .and_then(Value::as_str)
        .unwrap_or("bounds.maxWallclockSeconds in the tenant's _tenant/_vance/settings.yaml");
    Some((
        max,
        format!(
            "bounds exhausted: maxWallclockSeconds {max} exceeded (the tenant's default, \
             {setting}; a document's own bounds.maxWallclockSeconds replaces it)"
        ),
    ))
}

/// The spawn limit a run works under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SpawnLimit {
    /// The most task spawns.
    pub(super) max: u64,
    /// The tenant's setting it came from; `None` when the document declares it.
    setting: Option<String>,
}

impl SpawnLimit {
    /// The document's own `bounds.maxTaskSpawns`, else the default frozen in `start`.
    pub(super) fn of(declared: &Bounds, start: &StartRecord) -> Option<Self> {
        if let Some(max) = declared.max_task_spawns {
            return Some(Self { max, setting: None });
        }
        let frozen = start.bounds.as_ref()?;
        let max = frozen.get(MAX_TASK_SPAWNS)?.as_u64()?;
        let setting = frozen
            .get(MAX_TASK_SPAWNS_SETTING)
            .and_then(Value::as_str)
            .unwrap_or("bounds.maxTaskSpawns in the tenant's _tenant/_vance/settings.yaml");
        Some(Self {
            max,
            setting: Some(setting.to_string()),
        })
    }

    /// The run's failure once the limit is reached before `state`.
    pub(super) fn exhausted(&self, state: &str) -> String {
        let max = self.max;
        match &self.setting {
            None => format!("bounds exhausted: maxTaskSpawns {max} reached before state '{state}'"),
            Some(setting) => format!(
                "bounds exhausted: maxTaskSpawns {max} (the tenant's default, {setting}; a \
                 document's own bounds.maxTaskSpawns replaces it) reached before state '{state}'"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(bounds: Option<Value>) -> StartRecord {
        StartRecord {
            workflow_name: "w".into(),
            workflow_version: String::new(),
            frontend: "yaml".into(),
            params: json!({}),
            definition: None,
            parent: None,
            started_by: String::new(),
            idempotency_key: None,
            scope: "acme/shop".into(),
            requested_by: None,
            bounds,
            entry: None,
        }
    }

    #[test]
    fn the_document_bound_wins_over_the_frozen_default() {
        let frozen = Some(json!({ "maxTaskSpawns": 5, "maxTaskSpawnsSetting": "s" }));
        let declared = Bounds {
            max_task_spawns: Some(3),
            ..Bounds::default()
        };
        assert_eq!(for_document(&declared, frozen.clone()), None);
        let limit = SpawnLimit::of(&declared, &start(frozen.clone())).unwrap();
        assert_eq!(limit.max, 3);
        assert_eq!(
            limit.exhausted("x"),
            "bounds exhausted: maxTaskSpawns 3 reached before state 'x'"
        );
        let open = Bounds::default();
        assert_eq!(for_document(&open, frozen.clone()), frozen);
        let limit = SpawnLimit::of(&open, &start(frozen)).unwrap();
        assert_eq!(limit.max, 5);
        assert!(limit.exhausted("x").contains("(the tenant's default, s;"));
    }

    #[test]
    fn a_run_started_without_a_frozen_default_has_no_limit() {
        assert_eq!(SpawnLimit::of(&Bounds::default(), &start(None)), None);
    }
}
