//! The entry point: text in, validated [`WorkflowDoc`] or every diagnostic out.

use crate::analysis::{self, WorkflowRef};
use crate::ast::WorkflowDoc;
use crate::build;
use crate::diagnostic::Diagnostics;
use crate::loader::{LoadOptions, parse_yaml_with_key_errors};
use crate::plan::Plan;
use crate::validate::validate;

/// A successfully loaded document and the warnings it produced.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The validated document.
    pub doc: WorkflowDoc,
    /// The document compiled for the interpreter, `graph` and the analysis.
    pub plan: Plan,
    /// Warnings (never errors), sorted by position.
    pub warnings: Diagnostics,
    /// The label the diagnostics carry as their path.
    pub path: String,
    /// The `workflow:` of every `workflow_task`, for [`Loaded::check_sub_workflows`].
    pub workflow_refs: Vec<WorkflowRef>,
}

/// Parses, structurally builds and semantically validates a workflow document, then
/// analyses a valid one (`analysis/`: outcomes, reachability, loops).
///
/// `path_label` is only used to label diagnostics. On failure, returns all errors and
/// warnings found (sorted by position); syntax and size errors stop before validation.
pub fn load_workflow(
    path_label: &str,
    text: &str,
    opts: &LoadOptions,
) -> Result<Loaded, Diagnostics> {
    // Mistakes in keys are reported with every other finding (a duplicate key's later
    // entries left out); syntax and size errors stop here.
    let (root, key_errors) = parse_yaml_with_key_errors(path_label, text, opts)?;
    let mut ctx = build::Ctx::new(path_label);
    ctx.diags.extend(key_errors);
    let doc = build::build(&mut ctx, &root);
    let mut plan = None;
    if let Some(doc) = &doc {
        validate(&mut ctx, doc);
        if !ctx.diags.has_errors() {
            let compiled = Plan::compile(doc);
            analysis::analyse(&mut ctx, doc, &compiled);
            plan = Some(compiled);
        }
    }
    let mut diags = ctx.diags;
    diags.sort();
    match (doc, plan) {
        (Some(doc), Some(plan)) if !diags.has_errors() => Ok(Loaded {
            plan,
            workflow_refs: analysis::workflow_refs(&root, &doc),
            doc,
            warnings: diags,
            path: path_label.to_owned(),
        }),
        _ => Err(diags),
    }
}
