//! Structural pass for the fan-out states, `parallel_task` and `foreach_task`: their branches
//! (a workflow document's sub-run, or inline states checked here as a document of their own,
//! positions in the parent's file), `maxParallelism` and `toleratedFailures`.

use serde_json::Value;

use crate::ast::{Branch, BranchBody, FanOut, TaskSpec, Tolerance};
use crate::diagnostic::Code;
use crate::node::{YamlKind, YamlNode};

use super::ctx::{Ctx, found};

/// The fields of an inline branch: a small workflow document.
const INLINE_FIELDS: &[&str] = &[
    "description",
    "start",
    "states",
    "bounds",
    "allowedTools",
    "defaults",
    "onFailure",
];

/// `parallel_task`: `branches:` (required, non-empty, in declaration order).
pub(super) fn parallel(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> TaskSpec {
    let fan = fan_out(ctx, node, what);
    let mut branches = Vec::new();
    match node.get("branches") {
        None => ctx.error(
            node.span,
            Code::MissingField,
            format_args!(
                "{what} has no 'branches': expected a mapping of branch name to \
                 '{{workflow: <name>}}' or '{{start: …, states: …}}'"
            ),
        ),
        Some(b) => match b.as_map() {
            Some([]) => ctx.error(
                b.span,
                Code::FanOutBody,
                format_args!("'branches' of {what} is empty: expected at least one branch"),
            ),
            Some(entries) => {
                for (k, v) in entries {
                    let Some(name) = k.key_text() else { continue };
                    let bwhat = format!("branch '{name}' of {what}");
                    let Some(v) = ctx.map(v, &bwhat) else {
                        continue;
                    };
                    if let Some(body) = branch_body(ctx, v, &bwhat, true) {
                        branches.push(Branch {
                            name,
                            body,
                            span: k.span,
                        });
                    }
                }
            }
            None => ctx.wrong_type(b, &format!("'branches' of {what}"), "a mapping"),
        },
    }
    TaskSpec::Parallel { branches, fan }
}

/// `foreach_task`: `items:` (required template) and a body, as the state's own fields.
pub(super) fn foreach(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> TaskSpec {
    let fan = fan_out(ctx, node, what);
    let items = match node.get("items") {
        None => {
            ctx.error(
                node.span,
                Code::MissingField,
                format_args!(
                    "{what} has no 'items': expected a template that resolves to a list, \
                     e.g. items: \"${{state.files}}\""
                ),
            );
            Value::Null
        }
        Some(v) => match &v.kind {
            // Only a placeholder alone can be a list: any other text resolves to text, which
            // ends every run of the state `failure` ([MAG-PR001]).
            YamlKind::Str(s) if crate::template::Template::parse(s).whole().is_none() => {
                ctx.error(
                    v.span,
                    Code::WrongType,
                    format_args!(
                        "'items' of {what} is the text '{s}', which is never a list: expected \
                         one placeholder alone, such as \"${{state.files}}\", or a list"
                    ),
                );
                Value::Null
            }
            YamlKind::Str(s) => Value::String(s.clone()),
            // A literal list is a list of items too; its strings may hold placeholders.
            YamlKind::Seq(_) => v.to_json(),
            _ => {
                ctx.wrong_type(
                    v,
                    &format!("'items' of {what}"),
                    "a template string such as \"${state.files}\" or a list",
                );
                Value::Null
            }
        },
    };
    // The body's own fields, without the foreach's.
    let entries: Vec<(YamlNode, YamlNode)> = node
        .as_map()
        .unwrap_or_default()
        .iter()
        .filter(|(k, _)| {
            matches!(
                k.key_text().as_deref(),
                Some("workflow" | "params" | "start" | "states")
            )
        })
        .cloned()
        .collect();
    let body_node = YamlNode {
        span: node.span,
        content: None,
        block: None,
        columns: None,
        places: None,
        written: None,
        kind: YamlKind::Map(entries),
    };
    let body = branch_body(ctx, &body_node, what, false).unwrap_or(BranchBody::Workflow {
        workflow: String::new(),
        params: Value::Null,
    });
    TaskSpec::Foreach { items, body, fan }
}

/// A branch's body: `workflow:` (+ `params:`) or inline `start:` + `states:`. `own_fields`:
/// the node holds only the branch (unknown fields are reported here).
fn branch_body(
    ctx: &mut Ctx<'_>,
    node: &YamlNode,
    what: &str,
    own_fields: bool,
) -> Option<BranchBody> {
    let workflow = node.get("workflow");
    let inline_body = node.get("states").or_else(|| node.get("start"));
    match (workflow, inline_body) {
        (Some(_), Some(s)) => {
            ctx.error(
                s.span,
                Code::FanOutBody,
                format_args!(
                    "{what} has both 'workflow' and inline 'start'/'states': expected one of them"
                ),
            );
            None
        }
        (None, None) => {
            ctx.error(
                node.span,
                Code::FanOutBody,
                format_args!(
                    "{what} names no sub-run: expected 'workflow: <name>' or inline \
                     'start:' and 'states:'"
                ),
            );
            None
        }
        (Some(_), None) => {
            if own_fields {
                ctx.check_fields(node, &["workflow", "params"], what);
            }
            let workflow = ctx.required_str(node, "workflow", what)?;
            Some(BranchBody::Workflow {
                workflow,
                params: node.get("params").map_or(Value::Null, YamlNode::to_json),
            })
        }
        (None, Some(_)) => {
            if own_fields {
                ctx.check_fields(node, INLINE_FIELDS, what);
            }
            let params = if own_fields {
                Value::Null
            } else {
                node.get("params").map_or(Value::Null, YamlNode::to_json)
            };
            inline(ctx, node).map(|definition| BranchBody::Inline { definition, params })
        }
    }
}

/// Checks inline states as a document of their own (diagnostics at their place in this file)
/// and returns the document's text, the frozen definition of the branch's sub-runs.
fn inline(ctx: &mut Ctx<'_>, node: &YamlNode) -> Option<String> {
    let entries: Vec<(YamlNode, YamlNode)> = node
        .as_map()
        .unwrap_or_default()
        .iter()
        .filter(|(k, _)| {
            k.key_text()
                .is_some_and(|k| INLINE_FIELDS.contains(&k.as_str()))
        })
        .cloned()
        .collect();
    let doc_node = YamlNode {
        span: node.span,
        content: None,
        block: None,
        columns: None,
        places: None,
        written: None,
        kind: YamlKind::Map(entries),
    };
    let mut sub = Ctx::new(ctx.path, ctx.text);
    let doc = super::build(&mut sub, &doc_node);
    if let Some(doc) = &doc {
        crate::validate::validate(&mut sub, doc);
        if !sub.diags.has_errors() {
            let plan = crate::plan::Plan::compile(doc);
            crate::analysis::analyse(&mut sub, doc, &plan, crate::ast::Defaults::default());
        }
    }
    let failed = sub.diags.has_errors();
    // The parent's pass already checked the templates of the whole state: keep one of each.
    for d in sub.diags {
        if !ctx.diags.iter().any(|e| *e == d) {
            ctx.diags.push(d);
        }
    }
    (!failed && doc.is_some()).then(|| doc_node.to_json().to_string())
}

/// The most sub-runs one fan-out may keep in flight: each holds its parameters (the parent's,
/// for an inline branch) in memory while it runs.
pub(crate) const MAX_PARALLELISM: u32 = 1000;

/// `maxParallelism` and `toleratedFailures` of a fan-out state.
fn fan_out(ctx: &mut Ctx<'_>, node: &YamlNode, what: &str) -> FanOut {
    let max_parallelism = node.get("maxParallelism").and_then(|v| match v.kind {
        YamlKind::Int(n) if (1..=i64::from(MAX_PARALLELISM)).contains(&n) => u32::try_from(n).ok(),
        _ => {
            ctx.error(
                v.span,
                Code::InvalidParallelism,
                format_args!(
                    "maxParallelism of {what} is {}: expected an integer from 1 to \
                     {MAX_PARALLELISM} (each sub-run in flight holds its parameters in memory)",
                    found(v)
                ),
            );
            None
        }
    });
    let tolerated = node
        .get("toleratedFailures")
        .and_then(|v| {
            let t = match &v.kind {
                YamlKind::Int(n) if *n >= 0 => Some(Tolerance::Count(n.unsigned_abs())),
                YamlKind::Str(s) => s
                    .strip_suffix('%')
                    .and_then(|p| p.trim().parse::<f64>().ok())
                    .filter(|p| (0.0..=100.0).contains(p))
                    .map(Tolerance::Percent),
                _ => None,
            };
            if t.is_none() {
                ctx.error(
                    v.span,
                    Code::InvalidTolerance,
                    format_args!(
                        "toleratedFailures of {what} is {}: expected a count (an integer >= 0) \
                         or a percentage such as \"25%\" (0 to 100)",
                        found(v)
                    ),
                );
            }
            t
        })
        .unwrap_or_default();
    FanOut {
        max_parallelism,
        tolerated,
    }
}
