//! `MAG-YA009`: a `shell_task` or `script_task` whose timeout (its `timeoutSeconds`, or the
//! document's `defaults.taskTimeoutSeconds`) is above the tenant's
//! `bounds.maxTaskTimeoutSeconds`. Such a step never starts: it ends `technical_error` with
//! `MAG-BD030`. A warning, as that outcome may be routed and the tenant's administrator may
//! raise the bound before the run.

use crate::ast::{Spanned, TaskType, WorkflowDoc};
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::node::YamlNode;

use super::DocumentLookup;

/// The timeout a `shell_task` or `script_task` asks for in its document, and where.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeoutRef {
    /// The state.
    pub state: String,
    /// Its type (`shell_task` or `script_task`).
    pub task_type: TaskType,
    /// The seconds, and where they are written (the state's `timeoutSeconds`, or the
    /// document's `defaults.taskTimeoutSeconds` it takes).
    pub seconds: Spanned<f64>,
}

/// The timeout of every `shell_task` and `script_task` that has one in the document.
pub(crate) fn timeout_refs(root: &YamlNode, doc: &WorkflowDoc) -> Vec<TimeoutRef> {
    let default = root
        .get("defaults")
        .and_then(|d| d.get("taskTimeoutSeconds"))
        .zip(doc.defaults.task_timeout_seconds);
    super::state_nodes(root, doc)
        .filter(|(_, s)| matches!(s.task_type, TaskType::ShellTask | TaskType::ScriptTask))
        .filter_map(|(v, s)| {
            let (node, seconds) = match (v.get("timeoutSeconds"), s.timeout_seconds) {
                (Some(node), Some(seconds)) => (node, seconds),
                _ => default?,
            };
            Some(TimeoutRef {
                state: s.name.clone(),
                task_type: s.task_type,
                seconds: Spanned {
                    value: seconds,
                    span: node.content.unwrap_or(node.span),
                },
            })
        })
        .collect()
}

/// The `MAG-YA009` warnings of `refs` (of the document labelled `path`) against the ceiling
/// `lookup` knows.
pub(crate) fn over_tenant_bound(
    path: &str,
    refs: &[TimeoutRef],
    lookup: &mut impl DocumentLookup,
) -> Diagnostics {
    let mut out = Diagnostics::new();
    let Some(ceiling) = lookup.task_timeout_ceiling() else {
        return out;
    };
    for r in refs.iter().filter(|r| r.seconds.value > ceiling) {
        out.push(Diagnostic::warning(
            path,
            r.seconds.span,
            Code::TimeoutAboveBound,
            format_args!(
                "the {} `{}` asks for a timeout of {} s, above the tenant's \
                 bounds.maxTaskTimeoutSeconds ({ceiling} s): the step would not start and \
                 end technical_error (MAG-BD030); lower the timeout, or ask the tenant's \
                 administrator to raise the bound",
                r.task_type.as_str(),
                r.state,
                r.seconds.value
            ),
        ));
    }
    out
}
