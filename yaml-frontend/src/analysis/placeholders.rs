//! Placeholders that name a parameter or variable the document does not have, when one it
//! has is a close spelling (`${params.pr_ur}` beside `pr_url`): a warning with the name meant.
//! Parameters pass through beyond the schema (reference §2.1) and a missing key resolves to
//! an empty string (§2.4), so a name with no close one is left alone.

use crate::ast::WorkflowDoc;
use crate::build::Ctx;
use crate::diagnostic::Code;
use crate::node::{YamlKind, YamlNode};
use crate::suggest;

/// Warns of each `${params.<key>}` and `${state.<key>}` under the states of `root` whose key
/// the document does not declare (`parameters:`, `storeAs:`) but nearly does.
pub(crate) fn check(ctx: &mut Ctx<'_>, root: &YamlNode, doc: &WorkflowDoc) {
    let params: Vec<&str> = doc.parameters.keys().map(String::as_str).collect();
    let vars: Vec<&str> = doc
        .states
        .values()
        .filter_map(|s| s.store_as.as_deref())
        .collect();
    for (node, _) in super::state_nodes(root, doc) {
        walk(ctx, node, &params, &vars);
    }
}

fn walk(ctx: &mut Ctx<'_>, node: &YamlNode, params: &[&str], vars: &[&str]) {
    match &node.kind {
        YamlKind::Str(s) => {
            for (root, declared, what) in [
                ("${params.", params, "parameter"),
                ("${state.", vars, "variable (storeAs)"),
            ] {
                let mut from = 0;
                while let Some(rel) = s[from..].find(root) {
                    let at = from + rel;
                    from = at + root.len();
                    if s[..at].ends_with('$') {
                        continue;
                    }
                    let rest = &s[from..];
                    let key = &rest[..rest.find(['.', '}', '[']).unwrap_or(rest.len())];
                    if key.is_empty() || declared.contains(&key) {
                        continue;
                    }
                    let Some(meant) = suggest::did_you_mean(key, declared.iter().copied()) else {
                        continue;
                    };
                    ctx.warn(
                        node.span_at(s[..at].chars().count()),
                        Code::Template,
                        format_args!(
                            "'{root}{key}}}' names no {what} of the workflow, which resolves \
                             to an empty string: did you mean '{meant}'?"
                        ),
                    );
                }
            }
        }
        YamlKind::Seq(items) => items.iter().for_each(|n| walk(ctx, n, params, vars)),
        // An inline branch's states read the branch's own parameters.
        YamlKind::Map(entries) => entries
            .iter()
            .filter(|(k, _)| !matches!(k.key_text().as_deref(), Some("branches" | "states")))
            .for_each(|(_, v)| walk(ctx, v, params, vars)),
        _ => {}
    }
}
