//! The compiled form of `parallel_task` and `foreach_task`.

use serde_json::Value;

use crate::ast::{BranchBody, Defaults, FanOut, TaskSpec, Tolerance};
use crate::template::{Template, TemplateValue};

/// The variable a foreach's `${item}` reads while its `params:` are resolved.
pub const ITEM_VAR: &str = "__item";
/// The variable a foreach's `${index}` reads while its `params:` are resolved.
pub const INDEX_VAR: &str = "__index";

/// A fan-out state: its sub-runs and how they run.
#[derive(Debug, Clone)]
pub struct FanOutPlan {
    /// Branches or items.
    pub kind: FanKind,
    /// `maxParallelism` (`None`: every sub-run at once).
    pub max_parallelism: Option<u32>,
    /// `toleratedFailures`.
    pub tolerated: Tolerance,
}

/// Where a fan-out's sub-runs come from.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FanKind {
    /// `parallel_task`: named branches in declaration order.
    Parallel(Vec<(String, BodyPlan)>),
    /// `foreach_task`: one sub-run of `body` per item of `items`.
    Foreach {
        /// `items:`, resolved when the state starts; must be an array.
        items: TemplateValue,
        /// The sub-run of each item (`${item}`/`${index}` resolved in its `params:`).
        body: BodyPlan,
    },
}

/// What one sub-run of a fan-out runs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum BodyPlan {
    /// A workflow document, found as a `workflow_task` finds it.
    Workflow {
        /// The workflow's name.
        workflow: Template,
        /// Its parameters.
        params: TemplateValue,
    },
    /// Inline states: the frozen document text of the sub-run.
    Inline {
        /// The branch's document.
        definition: String,
        /// The branch's document with the parent document's `defaults:`, when the parent has
        /// some and the branch none (used by runs that carry the patch marker for it).
        with_defaults: Option<String>,
        /// Parameters added to the parent's (a foreach's `params:`).
        params: TemplateValue,
    },
}

impl FanOutPlan {
    /// The plan of a fan-out task spec; `None` for other specs.
    /// `allowed_tools`: the parent document's `allowedTools:`, which an inline branch cannot
    /// widen (its own list is intersected with it).
    pub(super) fn of(
        spec: &TaskSpec,
        allowed_tools: Option<&[String]>,
        defaults: &Defaults,
    ) -> Option<Self> {
        let body = |b: &BranchBody| body(b, allowed_tools, defaults);
        let (kind, fan) = match spec {
            TaskSpec::Parallel { branches, fan } => (
                FanKind::Parallel(
                    branches
                        .iter()
                        .map(|b| (b.name.clone(), body(&b.body)))
                        .collect(),
                ),
                fan,
            ),
            TaskSpec::Foreach {
                items,
                body: b,
                fan,
            } => (
                FanKind::Foreach {
                    items: TemplateValue::compile(items),
                    body: body(b),
                },
                fan,
            ),
            _ => return None,
        };
        let FanOut {
            max_parallelism,
            tolerated,
        } = *fan;
        Some(Self {
            kind,
            max_parallelism,
            tolerated,
        })
    }
}

fn body(b: &BranchBody, allowed_tools: Option<&[String]>, defaults: &Defaults) -> BodyPlan {
    match b {
        BranchBody::Workflow { workflow, params } => BodyPlan::Workflow {
            workflow: Template::parse(&rewrite(workflow)),
            params: TemplateValue::compile(&item_vars(params)),
        },
        BranchBody::Inline { definition, params } => {
            let definition = within_tools(definition, allowed_tools);
            BodyPlan::Inline {
                with_defaults: with_defaults(&definition, defaults),
                definition,
                params: TemplateValue::compile(&item_vars(params)),
            }
        }
    }
}

/// An inline branch's document with the parent document's `defaults:` where it declares none
/// (`None` when that changes nothing): its states are states of the same file, so the file's
/// default timeouts hold for them too.
fn with_defaults(definition: &str, defaults: &Defaults) -> Option<String> {
    if defaults.task_timeout_seconds.is_none() && defaults.gate_timeout_seconds.is_none() {
        return None;
    }
    let Ok(Value::Object(mut doc)) = serde_json::from_str::<Value>(definition) else {
        return None;
    };
    if doc.contains_key("defaults") {
        return None;
    }
    let mut block = serde_json::Map::new();
    if let Some(t) = defaults.task_timeout_seconds {
        block.insert("taskTimeoutSeconds".into(), Value::from(t));
    }
    if let Some(t) = defaults.gate_timeout_seconds {
        block.insert("gateTimeoutSeconds".into(), Value::from(t));
    }
    doc.insert("defaults".into(), Value::Object(block));
    Some(Value::Object(doc).to_string())
}

/// An inline branch's document with its `allowedTools:` narrowed to the parent's: the parent's
/// list when the branch has none, else the tools on both lists.
fn within_tools(definition: &str, parent: Option<&[String]>) -> String {
    let (Some(parent), Ok(Value::Object(mut doc))) =
        (parent, serde_json::from_str::<Value>(definition))
    else {
        return definition.to_string();
    };
    let tools: Vec<Value> = match doc.get("allowedTools").and_then(Value::as_array) {
        Some(own) => own
            .iter()
            .filter(|t| t.as_str().is_some_and(|t| parent.iter().any(|p| p == t)))
            .cloned()
            .collect(),
        None => parent.iter().map(|t| Value::String(t.clone())).collect(),
    };
    doc.insert("allowedTools".into(), Value::Array(tools));
    Value::Object(doc).to_string()
}

/// `${item…}` and `${index}` rewritten as placeholders of the variables the interpreter sets
/// for each item ([`ITEM_VAR`], [`INDEX_VAR`]).
fn item_vars(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(rewrite(s)),
        Value::Array(a) => Value::Array(a.iter().map(item_vars).collect()),
        Value::Object(m) => {
            Value::Object(m.iter().map(|(k, v)| (k.clone(), item_vars(v))).collect())
        }
        other => other.clone(),
    }
}

/// The foreach word a `${…}` starts with, given the text after its `${`: `item` (for
/// `${item}` and `${item.<path>}`) or `index` (for `${index}`).
pub(crate) fn item_word(tail: &str) -> Option<&'static str> {
    if tail.starts_with("item}") || tail.starts_with("item.") {
        Some("item")
    } else if tail.starts_with("index}") {
        Some("index")
    } else {
        None
    }
}

fn rewrite(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 2..];
        match item_word(tail) {
            Some(word) => {
                out.push_str("${state.");
                out.push_str(if word == "item" { ITEM_VAR } else { INDEX_VAR });
                rest = &tail[word.len()..];
            }
            None => {
                out.push_str("${");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn item_and_index_become_state_placeholders() {
        assert_eq!(rewrite("${item}"), "${state.__item}");
        assert_eq!(
            rewrite("f-${item.name}-${index}"),
            "f-${state.__item.name}-${state.__index}"
        );
        assert_eq!(
            rewrite("$${item} ${items} ${params.x}"),
            "$${state.__item} ${items} ${params.x}"
        );
    }
}

#[cfg(test)]
mod tool_tests {
    use super::within_tools;

    #[test]
    fn an_inline_branch_never_gets_more_tools_than_its_parent() {
        let parent = ["a".to_string(), "b".to_string()];
        let none = r#"{"start":"x","states":{}}"#;
        assert!(within_tools(none, Some(&parent)).contains(r#""allowedTools":["a","b"]"#));
        let own = r#"{"allowedTools":["b","c"],"start":"x","states":{}}"#;
        assert!(within_tools(own, Some(&parent)).contains(r#""allowedTools":["b"]"#));
        assert_eq!(within_tools(own, None), own);
    }
}
