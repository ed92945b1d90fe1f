//! Numbers a run's values cannot hold: the data a state writes (a terminal's `result:`, a
//! task's `params:`) is JSON, which has no infinite or NaN numbers, so `.inf`, `.nan` or a
//! number past a double's range (`1e400`) would reach the run as the text `inf` or `NaN`.
//! Refused where written, as a parameter's default is.

use crate::ast::WorkflowDoc;
use crate::build::Ctx;
use crate::diagnostic::Code;
use crate::node::{YamlKind, YamlNode};

/// The data fields of a state whose values become the run's JSON.
const DATA_FIELDS: [&str; 2] = ["result", "params"];

/// Errors for each number of the states' data fields of `root` that JSON cannot hold.
pub(crate) fn check(ctx: &mut Ctx<'_>, root: &YamlNode, doc: &WorkflowDoc) {
    for (node, state) in super::state_nodes(root, doc) {
        for field in DATA_FIELDS {
            if let Some(value) = node.get(field) {
                walk(ctx, value, &state.name, field);
            }
        }
    }
}

fn walk(ctx: &mut Ctx<'_>, node: &YamlNode, state: &str, field: &str) {
    match &node.kind {
        YamlKind::Float(f) if !f.is_finite() => {
            let written = node
                .written
                .as_deref()
                .map_or_else(|| f.to_string(), str::to_owned);
            ctx.error(
                node.span,
                Code::InvalidValue,
                format_args!(
                    "'{field}' of state '{state}' holds the number {written}, which a run's \
                     values (JSON) cannot hold: expected a finite number, or quote it to keep \
                     it as text"
                ),
            );
        }
        YamlKind::Seq(items) => items.iter().for_each(|n| walk(ctx, n, state, field)),
        YamlKind::Map(entries) => entries.iter().for_each(|(_, v)| walk(ctx, v, state, field)),
        _ => {}
    }
}
