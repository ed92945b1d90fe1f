//! Schemas of words the loader reads case-insensitively: an `enum` for completion, and a
//! pattern that accepts what the loader accepts.

use std::borrow::Cow;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::error_kind::ErrorKind;

/// A closed list of words.
pub trait WordList {
    /// The schema's name.
    const NAME: &'static str;
    /// The words as documents usually write them.
    const WORDS: &'static [&'static str];
}

/// One of `W`'s words, in any case.
#[derive(Debug)]
pub struct Words<W>(PhantomData<W>);

/// A regular expression matching `word` in any case; with `dashes`, `_` may be written `-`.
fn any_case(word: &str, dashes: bool) -> String {
    word.chars()
        .map(|c| match c {
            '_' if dashes => "[_-]".to_owned(),
            c if c.is_ascii_alphabetic() => {
                format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
            }
            c => regex::escape(&c.to_string()),
        })
        .collect()
}

fn words_schema(words: &[&str], dashes: bool) -> Schema {
    let alternatives: Vec<String> = words.iter().map(|w| any_case(w, dashes)).collect();
    let pattern = format!("^(?:{})$", alternatives.join("|"));
    json_schema!({
        "type": "string",
        "anyOf": [{ "enum": words }, { "pattern": pattern }]
    })
}

impl<W: WordList> JsonSchema for Words<W> {
    fn schema_name() -> Cow<'static, str> {
        W::NAME.into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        words_schema(W::WORDS, false)
    }
}

/// The error kinds `catch:` and `retry.on` take: the seven of the reference's vocabulary (and
/// `failure`), and `rejected`, the outcome of a rejected APPROVAL, read as `human_rejected`.
fn error_kinds() -> Vec<&'static str> {
    let mut kinds: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
    kinds.push("rejected");
    kinds
}

/// A mapping keyed by error kinds (`catch:`), with a state name as each value.
#[derive(Debug)]
pub struct ErrorKindKey;

impl JsonSchema for ErrorKindKey {
    fn schema_name() -> Cow<'static, str> {
        "Catch".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        let kinds = error_kinds();
        let properties: serde_json::Map<String, serde_json::Value> = kinds
            .iter()
            .map(|k| {
                let doc = if *k == "rejected" {
                    "The next state when an APPROVAL gate is rejected (`human_rejected`).".into()
                } else if *k == "failure" {
                    "The next state when the task fails in a way no key of its own kind \
                     routes (technical_error, business_error, agent_error, timeout, \
                     permission_error), or a sub-run fails."
                        .into()
                } else {
                    format!("The next state when the task ends `{k}`.")
                };
                (
                    k.to_string(),
                    serde_json::json!({ "type": "string", "description": doc }),
                )
            })
            .collect();
        json_schema!({
            "type": "object",
            "properties": properties,
            "propertyNames": words_schema(&kinds, true),
            "additionalProperties": { "type": "string" }
        })
    }
}

/// A list of error kinds (`retry.on`).
#[derive(Debug)]
pub struct ErrorKindList;

impl JsonSchema for ErrorKindList {
    fn schema_name() -> Cow<'static, str> {
        "ErrorKinds".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "array", "items": words_schema(&error_kinds(), true) })
    }
}
