//! The Jeltz protocol (reference §3.1): `prompt` + `schema` in, a `{success, data}` wrapper out.

use serde_json::{Value, json};

/// JSON Schema keywords that mark `schema:` as a complete schema rather than a properties map.
const SCHEMA_KEYWORDS: &[&str] = &[
    "$schema", "$ref", "$defs", "allOf", "anyOf", "oneOf", "not", "enum", "const", "if",
];

/// Keys that describe a value in JSON Schema: an object holding one of them is a property's
/// schema (`{type: string}`, `{enum: [a, b]}`), not a schema keyword's value.
const SCHEMA_WORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "$ref",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "properties",
    "items",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "description",
    "default",
    "required",
    "additionalProperties",
];

/// Whether `v` reads as one property's schema in a properties map.
fn is_property_schema(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| SCHEMA_WORDS.iter().any(|k| o.contains_key(*k)))
}

/// The JSON Schema for `schema:` of an agent task.
///
/// A complete JSON Schema (a top-level `type` that is a string or a list, `properties` next to
/// no `type`, or one of the combinators/`$ref`/`enum`/`const`) is used as it is. Anything else
/// is read the reference's way, as a *properties map* (`risk: {type: string}`): it becomes
/// `{type: object, properties: <map>, required: <every key>}`. A key of the map named like a
/// keyword whose value is a property's schema (`enum: {type: string}`, `properties: {type:
/// array}`) is a field, not the keyword.
pub(super) fn normalise_schema(schema: &Value) -> Result<Value, String> {
    let Some(map) = schema.as_object() else {
        return Err(format!(
            "`schema` must be a mapping (a JSON Schema or a properties map), not {schema}"
        ));
    };
    let keyword = |k: &str| map.get(k).is_some_and(|v| !is_property_schema(v));
    let typed = map
        .get("type")
        .is_some_and(|t| t.is_string() || t.is_array());
    let properties = map.get("properties").is_some_and(Value::is_object)
        && keyword("properties")
        && !map.contains_key("type");
    if typed || properties || SCHEMA_KEYWORDS.iter().any(|k| keyword(k)) {
        return Ok(schema.clone());
    }
    let required: Vec<&String> = map.keys().collect();
    Ok(json!({ "type": "object", "properties": schema, "required": required }))
}

/// Compiles the (normalised) schema.
pub(super) fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::validator_for(schema).map_err(|e| format!("invalid `schema`: {e}"))
}

/// The user message of a Jeltz call: the prompt and the reply contract.
pub(super) fn user_message(prompt: &str, schema: Option<&Value>) -> String {
    let data = match schema {
        Some(s) => format!(
            "`data` must be a JSON value that matches this JSON Schema:\n{}",
            serde_json::to_string_pretty(s).unwrap_or_default()
        ),
        None => "`data` is your answer as a JSON value.".into(),
    };
    format!(
        "{prompt}\n\nAnswer with exactly one JSON object and nothing else, of the form \
         {{\"success\": true, \"data\": <your answer>}}. {data}\nIf you cannot do the task, \
         answer {{\"success\": false, \"error\": \"<why>\"}}."
    )
}

/// What the wrapper parse made of the last assistant message.
#[derive(Debug, PartialEq)]
pub(super) enum Wrapper {
    /// `success: true` and `data` matches the schema.
    Success(Value),
    /// Anything else; `last_invalid` is the parsed reply, or the raw text when it is no JSON.
    Invalid { last_invalid: Value, reason: String },
}

/// The wrapper parse of §3.1. A reply in a single Markdown code fence is unwrapped first.
pub(super) fn parse_wrapper(text: &str, validator: Option<&jsonschema::Validator>) -> Wrapper {
    let body = unfence(text);
    let reply: Value = match serde_json::from_str(body) {
        Ok(v) => v,
        Err(e) => {
            return Wrapper::Invalid {
                last_invalid: Value::String(text.to_string()),
                reason: format!("the reply is not JSON: {e}"),
            };
        }
    };
    let success = reply.get("success").and_then(Value::as_bool);
    match success {
        None => Wrapper::Invalid {
            reason: "the reply is not a {\"success\": bool, \"data\": …} object".into(),
            last_invalid: reply,
        },
        Some(false) => {
            let why = reply
                .get("error")
                .and_then(Value::as_str)
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            Wrapper::Invalid {
                reason: format!("the agent answered success: false{why}"),
                last_invalid: reply,
            }
        }
        Some(true) => {
            let data = reply.get("data").cloned().unwrap_or(Value::Null);
            if let Some(v) = validator {
                let errors: Vec<String> = v
                    .iter_errors(&data)
                    .take(5)
                    .map(|e| {
                        let at = e.instance_path().to_string();
                        if at.is_empty() {
                            e.to_string()
                        } else {
                            format!("{at}: {e}")
                        }
                    })
                    .collect();
                if !errors.is_empty() {
                    return Wrapper::Invalid {
                        reason: format!("`data` does not match the schema: {}", errors.join("; ")),
                        last_invalid: reply,
                    };
                }
            }
            Wrapper::Success(data)
        }
    }
}

fn unfence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return t;
    };
    let Some(rest) = rest.strip_suffix("```") else {
        return t;
    };
    // Drop the info string (`json`) on the opening line.
    match rest.split_once('\n') {
        Some((_, body)) => body.trim(),
        None => rest.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr_schema() -> Value {
        json!({
            "risk": { "type": "string", "enum": ["low", "medium", "high"] },
            "focus_areas": { "type": "array", "items": { "type": "string" } },
        })
    }

    #[test]
    fn a_properties_map_becomes_an_object_schema_requiring_every_key() {
        let s = normalise_schema(&pr_schema()).unwrap();
        assert_eq!(s["type"], "object");
        assert_eq!(s["required"], json!(["focus_areas", "risk"]));
        let full = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
        assert_eq!(normalise_schema(&full).unwrap(), full);
        // A property called `type` does not make a properties map a schema.
        let odd = json!({ "type": { "type": "string" } });
        assert_eq!(normalise_schema(&odd).unwrap()["properties"], odd);
        // Nor do fields named like other keywords, when their values are property schemas.
        let fields = json!({
            "enum": { "type": "string" },
            "properties": { "type": "array", "items": { "type": "string" } },
            "not": { "enum": ["a", "b"] },
            "if": { "type": "boolean" },
        });
        let s = normalise_schema(&fields).unwrap();
        assert_eq!(s["properties"], fields);
        assert_eq!(s["required"], json!(["enum", "if", "not", "properties"]));
        // The keywords themselves still make a full schema.
        for full in [
            json!({ "properties": { "a": { "type": "string" } }, "required": ["a"] }),
            json!({ "enum": [1, 2] }),
            json!({ "anyOf": [{ "type": "string" }, { "type": "null" }] }),
            json!({ "not": { "type": "string" }, "$schema": "https://json-schema.org/draft/2020-12/schema" }),
            json!({ "const": { "a": 1 } }),
        ] {
            assert_eq!(normalise_schema(&full).unwrap(), full, "{full}");
        }
        assert!(normalise_schema(&json!("x")).is_err());
    }

    #[test]
    fn the_wrapper_parse_maps_replies() {
        let v = compile(&normalise_schema(&pr_schema()).unwrap()).unwrap();
        let ok = r#"{"success": true, "data": {"risk": "low", "focus_areas": ["a"]}}"#;
        assert_eq!(
            parse_wrapper(ok, Some(&v)),
            Wrapper::Success(json!({"risk": "low", "focus_areas": ["a"]}))
        );
        let fenced = format!("```json\n{ok}\n```");
        assert!(matches!(
            parse_wrapper(&fenced, Some(&v)),
            Wrapper::Success(_)
        ));
        let Wrapper::Invalid {
            last_invalid,
            reason,
        } = parse_wrapper(r#"{"success": true, "data": {"risk": "huge"}}"#, Some(&v))
        else {
            panic!("accepted")
        };
        assert_eq!(last_invalid["data"]["risk"], "huge");
        assert!(reason.contains("does not match the schema"), "{reason}");
        let Wrapper::Invalid { last_invalid, .. } = parse_wrapper("not json {", Some(&v)) else {
            panic!("accepted")
        };
        assert_eq!(last_invalid, json!("not json {"));
        let Wrapper::Invalid { reason, .. } =
            parse_wrapper(r#"{"success": false, "error": "no PR"}"#, Some(&v))
        else {
            panic!("accepted")
        };
        assert!(reason.ends_with("no PR"), "{reason}");
        assert!(matches!(
            parse_wrapper("[1]", None),
            Wrapper::Invalid { .. }
        ));
    }
}
