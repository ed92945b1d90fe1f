//! Friday's version `config` (seed 001: `runTimeoutMs`, `defaultNodeTimeoutMs`,
//! `maxParallelism`, `failurePolicy`) as the document's own settings, beside the document
//! fields an export writes there (`bounds`, `defaults`, `onFailure`, …), which win where both
//! say the same thing.

use serde_json::{Map, Value, json};

use super::seconds_value;

/// Friday's fields of a version `config`, read here rather than written through.
const FRIDAY_FIELDS: [&str; 4] = [
    "runTimeoutMs",
    "defaultNodeTimeoutMs",
    "maxParallelism",
    "failurePolicy",
];

/// The document's top-level fields for a graph's `config`: its own fields as written (but
/// `start` and `states`), and Friday's mapped — `runTimeoutMs` to `bounds.runTimeoutMs`,
/// `defaultNodeTimeoutMs` to `defaults.taskTimeoutSeconds`, `failurePolicy: {onFailure,
/// fallbackNodeId}` to `onFailure:` (with the fallback's state). A value of the wrong kind is
/// carried as it is, for the document's loader to refuse with its place.
pub(super) fn document_settings(config: &Map<String, Value>) -> Map<String, Value> {
    let mut out: Map<String, Value> = config
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "start" | "states"))
        .filter(|(k, _)| !FRIDAY_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(ms) = config.get("runTimeoutMs")
        && let Value::Object(bounds) = out.entry("bounds").or_insert_with(|| json!({}))
        && !bounds.contains_key("runTimeoutMs")
        && !bounds.contains_key("maxWallclockSeconds")
    {
        bounds.insert("runTimeoutMs".into(), ms.clone());
    }
    if let Some(ms) = config.get("defaultNodeTimeoutMs")
        && let Value::Object(defaults) = out.entry("defaults").or_insert_with(|| json!({}))
        && !defaults.contains_key("taskTimeoutSeconds")
    {
        let seconds = ms
            .as_f64()
            .map_or_else(|| ms.clone(), |ms| seconds_value(ms / 1000.0));
        defaults.insert("taskTimeoutSeconds".into(), seconds);
    }
    if let Some(policy) = config.get("failurePolicy")
        && !out.contains_key("onFailure")
    {
        let word = policy.get("onFailure").filter(|w| w.is_string());
        let fallback = policy.get("fallbackNodeId").filter(|f| !f.is_null());
        let on_failure = match (word, fallback) {
            (Some(word), Some(fallback)) => json!({ "policy": word, "fallback": fallback }),
            (Some(word), None) => word.clone(),
            _ => policy.clone(),
        };
        out.insert("onFailure".into(), on_failure);
    }
    out
}

/// Friday's `maxParallelism`: how many nodes of a run the scheduler runs at once, given to
/// each fan-out the import made (a `parallel_task`) that sets none of its own.
pub(super) fn max_parallelism(config: Option<&Map<String, Value>>) -> Option<Value> {
    config?
        .get("maxParallelism")
        .filter(|v| !v.is_null())
        .cloned()
}
