//! The tenant's default bounds of a YAML run, frozen in its start record.
//!
//! A document that declares no `bounds.maxTaskSpawns` runs under its tenant's default
//! (`bounds.maxTaskSpawns` in `<tenant>/_tenant/_vance/settings.yaml`, 10000 unless set; see
//! [`magrathea_exec::bounds`]). The default is read when the run starts and journaled in its
//! `StartRecord` as `bounds`:
//!
//! ```json
//! {"maxTaskSpawns": 10000,
//!  "maxTaskSpawnsSetting": "bounds.maxTaskSpawns in acme/_tenant/_vance/settings.yaml"}
//! ```
//!
//! The interpreter reads it from there, so a replay applies the default the run started with
//! whatever the settings say by then, and a run started before defaults existed (no `bounds`
//! in its record) keeps running without one.

use magrathea_core::StartRecord;
use magrathea_exec::{DocumentSource, Scope};
use serde_json::{Value, json};

use crate::ast::Bounds;

const MAX_TASK_SPAWNS: &str = "maxTaskSpawns";
const MAX_TASK_SPAWNS_SETTING: &str = "maxTaskSpawnsSetting";

/// The tenant's defaults for runs of `scope`, as frozen in a start record; `None` when there
/// are none (the settings turn them off).
pub(crate) fn tenant_defaults(docs: &DocumentSource, scope: &Scope) -> Option<Value> {
    let spawns = docs.tenant_settings(scope).bounds.task_spawns(scope)?;
    Some(json!({ MAX_TASK_SPAWNS: spawns.value, MAX_TASK_SPAWNS_SETTING: spawns.setting }))
}

/// What of `defaults` a run of a document with `declared` bounds freezes: the defaults of the
/// bounds the document leaves open, or `None`.
pub(crate) fn for_document(declared: &Bounds, defaults: Option<Value>) -> Option<Value> {
    defaults.filter(|_| declared.max_task_spawns.is_none())
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
