//! JSON Schemas of the documents under `_vance/`, derived from the types that describe them:
//! workflows, settings, recipes, events, schedules and hooks. The repository keeps them in `schemas/` (a test
//! regenerates and compares them) and the server serves them at `/schemas/<name>.schema.json`,
//! so an editor's YAML language server can complete and check documents.

mod documents;
mod fanout;
mod hook;
mod scheduler;
mod webhook;
mod words;
mod workflow;

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde_json::{Value, json};

pub use documents::{EventAuth, EventDocument, HttpMethodWords, SettingsDocument, ToolSettings};
pub use hook::{
    CheckedHook, DEFAULT_HOOK_TIMEOUT_SECONDS, HookDocument, HookState, MAX_HOOK_TIMEOUT_SECONDS,
};
pub use scheduler::{OverlapWord, SchedulerDocument};
pub use webhook::{
    DedupeSource, DocDuration, MAX_DEDUPE_WINDOW, MAX_PASSED_HEADERS, MAX_PREFIX_LEN,
    MAX_TOLERANCE, MIN_DEDUPE_WINDOW, MIN_TOLERANCE, SignatureEncoding, WEBHOOK_MAX_BODY_BYTES,
    WebhookConfig, WebhookDedupe, WebhookSignature,
};
pub use words::{ErrorKindKey, ErrorKindList, WordList, Words};
pub use workflow::{
    AgentTask, Bounds, Branch, Common, ConditionTask, CriticalityWords, Defaults, ElseRule,
    FailureBlockPolicyWords, FailurePolicyWords, ForeachTask, GateTask, IfRule, Inbox,
    InboxApprovers, InboxKindWords, InlineBranch, OnFailure, OnFailureBlock, OnRejectWords,
    ParallelTask, ParamTypeName, Parameter, Retry, Rule, ScriptSourceWords, ScriptTask, ShellTask,
    SpliceWords, State, Terminal, TerminalOutcomeWords, TimerTask, ToleratedFailures, ToolTask,
    Version, WorkflowBranch, WorkflowDocument, WorkflowTask,
};

use crate::ast::TaskType;
use crate::runtime::Recipe;

/// The documents that have a schema: the name in `<name>.schema.json`, and what it covers.
pub const DOCUMENTS: [(&str, &str); 6] = [
    ("workflow", "_vance/workflows/*.yaml"),
    ("settings", "_vance/settings.yaml"),
    ("recipe", "_vance/recipes/*.yaml"),
    ("event", "_vance/events/*.yaml"),
    ("scheduler", "_vance/scheduler/*.yaml"),
    ("hook", "_vance/hooks/*.yaml"),
];

fn generate<T: JsonSchema>() -> Schema {
    // Draft 7: the draft editors' YAML language servers understand best.
    SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<T>()
}

/// The schema of the document `name` (one of [`DOCUMENTS`]), or `None`.
#[must_use]
pub fn schema(name: &str) -> Option<Value> {
    let schema = match name {
        "workflow" => with_outcomes(generate::<WorkflowDocument>()),
        "settings" => generate::<SettingsDocument>(),
        "recipe" => generate::<Recipe>(),
        "event" => generate::<EventDocument>(),
        "scheduler" => generate::<SchedulerDocument>(),
        "hook" => generate::<HookDocument>(),
        _ => return None,
    };
    let mut value = schema.to_value();
    without_null(&mut value);
    Some(value)
}

/// Removes `null` as an alternative of optional fields: an absent field is what the documents
/// mean, and the loader refuses `field: null` where it expects a value.
fn without_null(v: &mut Value) {
    match v {
        Value::Object(map) => {
            // `#[serde(default)]` on an `Option` says `default: null`, which the type refuses.
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            if let Some(Value::Array(types)) = map.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    map.insert("type".into(), only);
                }
            }
            let single = match map.get_mut("anyOf") {
                Some(Value::Array(alternatives)) => {
                    alternatives.retain(|a| a != &json!({ "type": "null" }));
                    (alternatives.len() == 1).then(|| alternatives.remove(0))
                }
                _ => None,
            };
            if let Some(Value::Object(only)) = single {
                map.remove("anyOf");
                for (k, x) in only {
                    map.entry(k).or_insert(x);
                }
            }
            map.values_mut().for_each(without_null);
        }
        Value::Array(items) => items.iter_mut().for_each(without_null),
        _ => {}
    }
}

/// Every schema with its name, in the order of [`DOCUMENTS`].
#[must_use]
pub fn schemas() -> Vec<(&'static str, Value)> {
    DOCUMENTS
        .iter()
        .filter_map(|(name, _)| schema(name).map(|s| (*name, s)))
        .collect()
}

/// Adds the outcomes each task type can end with (the table of [`crate::Outcome`]) to the
/// `on:` of its state schema, so that editors complete them.
fn with_outcomes(mut schema: Schema) -> Schema {
    let Some(variants) = schema
        .pointer_mut("/definitions/State/oneOf")
        .and_then(Value::as_array_mut)
    else {
        return schema;
    };
    for (name, ty) in TaskType::ALL {
        let variant = variants
            .iter_mut()
            .find(|d| d.pointer("/properties/type/const") == Some(&json!(name)));
        let Some(on) = variant.and_then(|d| d.pointer_mut("/properties/on")) else {
            continue;
        };
        let outcomes: serde_json::Map<String, Value> = ty
            .outcomes()
            .iter()
            .map(|p| {
                let doc = format!("The next state when the {name} ends `{}`.", p.outcome);
                (
                    p.outcome.to_string(),
                    json!({ "type": "string", "description": doc }),
                )
            })
            .collect();
        on["properties"] = Value::Object(outcomes);
    }
    schema
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::build::inbox::INBOX_FIELDS;
    use crate::build::state::{COMMON, type_fields};
    use crate::build::{BOUNDS_FIELDS, PARAM_FIELDS, TOP_FIELDS};

    fn properties(v: &Value) -> BTreeSet<&str> {
        v["properties"]
            .as_object()
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }

    fn set<'a>(fields: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
        fields.into_iter().collect()
    }

    #[test]
    fn the_workflow_schema_has_exactly_the_fields_the_loader_reads() {
        let s = schema("workflow").unwrap();
        assert_eq!(properties(&s), set(TOP_FIELDS.iter().copied()));
        let defs = &s["definitions"];
        assert_eq!(
            properties(&defs["Parameter"]),
            set(PARAM_FIELDS.iter().copied())
        );
        assert_eq!(
            properties(&defs["Bounds"]),
            set(BOUNDS_FIELDS.iter().copied())
        );
        assert_eq!(
            properties(&defs["Inbox"]),
            set(INBOX_FIELDS.iter().copied())
        );
        let variants = defs["State"]["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), TaskType::ALL.len());
        for (name, ty) in TaskType::ALL {
            let variant = variants
                .iter()
                .find(|v| v["properties"]["type"]["const"] == name)
                .unwrap_or_else(|| panic!("no schema for {name}"));
            let mut expected = set(COMMON.iter().copied());
            expected.extend(type_fields(ty).iter().copied());
            if ty == TaskType::Terminal {
                for transition in ["on", "catch", "retry", "compensate"] {
                    expected.remove(transition);
                }
            }
            assert_eq!(properties(variant), expected, "{name}");
        }
    }

    #[test]
    fn the_scheduler_schema_has_the_fields_the_loader_reads_but_recipe() {
        let s = schema("scheduler").unwrap();
        let mut expected = set(crate::scheduler::FIELDS.iter().copied());
        // The loader reads `recipe:` only to say it is not supported.
        expected.remove("recipe");
        assert_eq!(properties(&s), expected);
        let overlap: Vec<&str> = crate::scheduler::Overlap::ALL
            .iter()
            .map(|(w, _)| *w)
            .collect();
        let words: Vec<&Value> = s["definitions"]["OverlapWord"]["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| &w["const"])
            .collect();
        assert_eq!(json!(words), json!(overlap));
    }

    #[test]
    fn each_state_schema_completes_the_outcomes_of_its_type() {
        let s = schema("workflow").unwrap();
        let variants = s["definitions"]["State"]["oneOf"].as_array().unwrap();
        let timer = variants
            .iter()
            .find(|v| v["properties"]["type"]["const"] == "timer_task")
            .unwrap();
        assert_eq!(
            properties(&timer["properties"]["on"]),
            set(["fired", "technical_error", "cancelled"])
        );
        assert!(
            !s.to_string().contains("\"null\""),
            "optional fields are not nullable"
        );
    }
}
