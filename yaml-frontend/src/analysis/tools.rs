//! `MAG-YA010`: a `tool_task` whose `tool:` the workflow's own pool leaves out (its
//! `allowedTools:`, or the default pool when it declares none). The cascade intersects the
//! workflow's pool with the tenant's and the project's, so no settings can let such a call
//! through: every run of the state ends `permission_error` (`MAG-TL002`). A warning, as that
//! outcome may be routed.

use magrathea_exec::tools::permission::DEFAULT_POOL;

use crate::ast::{TaskSpec, WorkflowDoc};
use crate::build::Ctx;
use crate::diagnostic::Code;
use crate::node::YamlNode;

/// A warning at the `tool:` of each `tool_task` (written without placeholders) that the
/// workflow's pool leaves out.
pub(crate) fn check(ctx: &mut Ctx<'_>, root: &YamlNode, doc: &WorkflowDoc) {
    for (node, state) in super::state_nodes(root, doc) {
        let TaskSpec::Tool { tool, .. } = &state.task else {
            continue;
        };
        // A missing or empty `tool:` is an error of its own (MAG-Y006), not a refused call.
        if tool.contains("${") || tool.trim().is_empty() {
            continue;
        }
        // A near name of the pool is most likely a misspelt tool.
        let why = match &doc.allowed_tools {
            Some(list) if !list.iter().any(|t| t == tool) => format!(
                "the workflow's allowedTools [{}] leave it out{}",
                list.join(", "),
                crate::suggest::hint(tool, list.iter().map(String::as_str))
            ),
            None if !DEFAULT_POOL.contains(&tool.as_str()) => format!(
                "the workflow declares no allowedTools:, so it may call only the default pool \
                 [{}]; name it under allowedTools:{}",
                DEFAULT_POOL.join(", "),
                crate::suggest::hint(tool, DEFAULT_POOL.iter().copied())
            ),
            _ => continue,
        };
        let span = node
            .get("tool")
            .map_or(state.span, |n| n.content.unwrap_or(n.span));
        ctx.warn(
            span,
            Code::ToolNotAllowed,
            format_args!(
                "tool_task `{}` calls `{tool}`, which every run would refuse \
                 (permission_error, MAG-TL002): {why}",
                state.name
            ),
        );
    }
}
