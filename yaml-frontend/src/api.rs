//! The entry point: text in, validated [`WorkflowDoc`] or every diagnostic out.

use crate::analysis::{
    self, DocumentLookup, RecipeRef, ScriptRef, TimeoutRef, WorkflowRef, WorkspaceRef,
};
use crate::ast::{Defaults, WorkflowDoc};
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
    /// The script of every `script_task` written without placeholders, for
    /// [`load_workflow_checked`].
    pub script_refs: Vec<ScriptRef>,
    /// The `dirName:` of every `shell_task` written without placeholders, for
    /// [`load_workflow_checked`].
    pub workspace_refs: Vec<WorkspaceRef>,
    /// The `recipe:` of every `agent_task` written without placeholders, for
    /// [`load_workflow_checked`].
    pub recipe_refs: Vec<RecipeRef>,
    /// The timeout of every `shell_task` and `script_task` that has one in the document, for
    /// [`load_workflow_checked`].
    pub timeout_refs: Vec<TimeoutRef>,
}

/// What a document refers to in other documents, found in whatever part of it was built.
#[derive(Default)]
struct Refs {
    workflows: Vec<WorkflowRef>,
    scripts: Vec<ScriptRef>,
    workspaces: Vec<WorkspaceRef>,
    recipes: Vec<RecipeRef>,
    timeouts: Vec<TimeoutRef>,
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
    load(path_label, text, opts, Defaults::default()).map_err(|(diags, _)| diags)
}

/// [`load_workflow`], with the checks against the caller's documents among the diagnostics
/// (sorted by position): the `MAG-YA005` warnings of [`Loaded::check_sub_workflows`], and a
/// `MAG-Y040` error for each `script_task` whose script, written without placeholders,
/// `lookup` would not find at run time (with the reason the task would fail with), and a
/// `MAG-Y042` warning for each `shell_task` whose `dirName:` names no workspace of the
/// project, and a `MAG-YA009` warning for each `shell_task` or `script_task` whose timeout is
/// above the tenant's bound. All are reported for a document with errors too, so that one pass shows
/// everything to fix.
///
/// A state is checked wherever it was read as a `workflow_task` or `script_task`, whatever
/// else is wrong in the document; a state whose type cannot be read is not.
pub fn load_workflow_checked(
    path_label: &str,
    text: &str,
    opts: &LoadOptions,
    mut lookup: impl DocumentLookup,
) -> Result<Loaded, Diagnostics> {
    let settings = lookup.timeout_defaults();
    let mut checks = |refs: Refs| {
        let names = std::cell::RefCell::new(&mut lookup);
        let mut found = analysis::unknown_sub_workflows(
            path_label,
            &refs.workflows,
            |name| names.borrow_mut().workflow_exists(name),
            || names.borrow_mut().workflow_names(),
        );
        found.extend(analysis::missing_scripts(
            path_label,
            &refs.scripts,
            &mut lookup,
        ));
        found.extend(analysis::unknown_workspaces(
            path_label,
            &refs.workspaces,
            &mut lookup,
        ));
        found.extend(analysis::unknown_recipes(
            path_label,
            &refs.recipes,
            &mut lookup,
        ));
        found.extend(analysis::sub_workflow_params(
            path_label,
            &refs.workflows,
            &mut lookup,
        ));
        found.extend(analysis::over_tenant_bound(
            path_label,
            &refs.timeouts,
            &mut lookup,
        ));
        found
    };
    match load(path_label, text, opts, settings) {
        Ok(mut loaded) => {
            let found = checks(Refs {
                workflows: loaded.workflow_refs.clone(),
                scripts: loaded.script_refs.clone(),
                workspaces: loaded.workspace_refs.clone(),
                recipes: loaded.recipe_refs.clone(),
                timeouts: loaded.timeout_refs.clone(),
            });
            loaded.warnings.extend(found);
            loaded.warnings.sort();
            if loaded.warnings.has_errors() {
                Err(loaded.warnings)
            } else {
                Ok(loaded)
            }
        }
        Err((mut diags, refs)) => {
            diags.extend(checks(*refs));
            diags.sort();
            Err(diags)
        }
    }
}

/// Loads a document; on failure, its diagnostics and the workflows it names.
/// `settings`: the timeout defaults a run takes from the settings (see
/// [`DocumentLookup::timeout_defaults`]).
fn load(
    path_label: &str,
    text: &str,
    opts: &LoadOptions,
    settings: Defaults,
) -> Result<Loaded, (Diagnostics, Box<Refs>)> {
    // Mistakes in keys are reported with every other finding (a duplicate key's later
    // entries left out); syntax and size errors stop here: without a tree, nothing else can
    // be read.
    let (root, key_errors) =
        parse_yaml_with_key_errors(path_label, text, opts).map_err(|d| (d, Box::default()))?;
    let mut ctx = build::Ctx::new(path_label, text);
    ctx.diags.extend(key_errors);
    let doc = build::build(&mut ctx, &root);
    let mut plan = None;
    if let Some(doc) = &doc {
        validate(&mut ctx, doc);
        analysis::misspelt_placeholders(&mut ctx, &root, doc);
        analysis::non_finite_numbers(&mut ctx, &root, doc);
        analysis::tools_out_of_pool(&mut ctx, &root, doc);
        // The analysis walks the compiled plan, whose transitions are indices of states:
        // with an error (a target that is no state, a state that did not build) there is no
        // graph to walk, so outcomes, reachability and loops wait until the errors are fixed.
        if !ctx.diags.has_errors() {
            let compiled = Plan::compile(doc);
            analysis::analyse(&mut ctx, doc, &compiled, settings);
            plan = Some(compiled);
        } else {
            // What needs no graph is still said in the same pass: the transitions of each
            // state that has no error of its own against what its task can end with.
            analysis::outcomes_of_sound_states(&mut ctx, &root, doc, settings);
        }
    }
    let refs = doc
        .as_ref()
        .map(|doc| Refs {
            workflows: analysis::workflow_refs(&root, doc),
            scripts: analysis::script_refs(&root, doc),
            workspaces: analysis::workspace_refs(&root, doc),
            recipes: analysis::recipe_refs(&root, doc),
            timeouts: analysis::timeout_refs(&root, doc),
        })
        .unwrap_or_default();
    analysis::invalid_sub_workflow_names(&mut ctx, &refs.workflows);
    let mut diags = ctx.diags;
    diags.sort();
    match (doc, plan) {
        (Some(doc), Some(plan)) if !diags.has_errors() => Ok(Loaded {
            plan,
            workflow_refs: refs.workflows,
            script_refs: refs.scripts,
            workspace_refs: refs.workspaces,
            recipe_refs: refs.recipes,
            timeout_refs: refs.timeouts,
            doc,
            warnings: diags,
            path: path_label.to_owned(),
        }),
        _ => Err((diags, Box::new(refs))),
    }
}
