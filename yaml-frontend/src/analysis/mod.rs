//! Static analysis of a valid workflow document: what can happen when it runs, found before
//! it runs.
//!
//! - `outcomes.rs`: a transition on an outcome the task can never end with (an error; a
//!   warning for `failure`, which the reference's own example writes on an `agent_task`),
//!   a transition that its state as configured never takes, outcomes no `on:`/`catch:`
//!   routes, and a `condition_task` without `else` whose rules may all be false.
//! - `reach.rs`: states never reached from `start`, and loops with no timer, gate or bound
//!   on them (a run that loops until the tenant's default bounds stop it).
//! - [`Loaded::check_sub_workflows`]: a `workflow_task` naming a workflow that does not
//!   exist. It needs the document cascade, so the caller runs it with a lookup.
//! - `lookup.rs`: the checks against the caller's documents ([`DocumentLookup`]): the
//!   workflows `workflow_task`s start and the scripts `script_task`s run.
//!
//! The outcomes of each task type come from one table, [`crate::outcome`].

mod finite;
mod lookup;
mod outcomes;
mod placeholders;
mod reach;
mod timeouts;
mod tools;

pub use lookup::{DocumentLookup, ProjectDocuments, RecipeRef, ScriptRef, WorkspaceRef};
pub(crate) use lookup::{
    missing_scripts, recipe_refs, script_refs, sub_workflow_params, unknown_recipes,
    unknown_sub_workflows, unknown_workspaces, workspace_refs,
};
pub use timeouts::TimeoutRef;
pub(crate) use timeouts::{over_tenant_bound, timeout_refs};

use crate::api::Loaded;
use crate::ast::{Defaults, Spanned, StateSpec, TaskType, WorkflowDoc};
use crate::build::Ctx;
use crate::diagnostic::{Code, Diagnostics};
use crate::node::YamlNode;
use crate::plan::Plan;

/// Runs every check that needs nothing but the document and its plan (the document gives
/// the positions, the plan the graph).
///
/// `settings`: the timeout defaults of the settings a run of the document would take where
/// its own `defaults:` set none (none known: `Defaults::default()`).
pub(crate) fn analyse(ctx: &mut Ctx<'_>, doc: &WorkflowDoc, plan: &Plan, settings: Defaults) {
    outcomes::check(ctx, doc, settings);
    let reachable = reach::unreachable(ctx, doc, plan);
    reach::unbounded_loops(ctx, doc, plan, &reachable);
    reach::no_terminal(ctx, doc, plan, &reachable);
}

/// Placeholders naming a parameter or variable the document nearly declares
/// ([`placeholders::check`]).
pub(crate) fn misspelt_placeholders(ctx: &mut Ctx<'_>, root: &YamlNode, doc: &WorkflowDoc) {
    placeholders::check(ctx, root, doc);
}

/// Warnings for `tool_task`s calling a tool the workflow's own pool leaves out
/// ([`tools::check`]).
pub(crate) fn tools_out_of_pool(ctx: &mut Ctx<'_>, root: &YamlNode, doc: &WorkflowDoc) {
    tools::check(ctx, root, doc);
}

/// Errors for the numbers of the states' data (`result:`, `params:`) that JSON cannot hold
/// (`.inf`, `.nan`, `1e400`).
pub(crate) fn non_finite_numbers(ctx: &mut Ctx<'_>, root: &YamlNode, doc: &WorkflowDoc) {
    finite::check(ctx, root, doc);
}

/// The outcome checks of the states of `doc` (a document with errors) that have no error of
/// their own: a state's errors lie between its key's line and the next state's (the last
/// state's, up to the next top-level key after `states:`).
pub(crate) fn outcomes_of_sound_states(
    ctx: &mut Ctx<'_>,
    root: &YamlNode,
    doc: &WorkflowDoc,
    settings: Defaults,
) {
    let mut starts: Vec<u32> = doc.states.values().map(|s| s.span.line).collect();
    starts.sort_unstable();
    let error_lines: Vec<u32> = ctx.diags.errors().map(|d| d.line).collect();
    // The lines of each top-level block: from its key to the next key.
    let top: Vec<(&str, u32)> = root
        .as_map()
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, _)| Some((k.as_str()?, k.span.line)))
        .collect();
    let block_of = |name: &str| {
        let i = top.iter().position(|(k, _)| *k == name)?;
        let end = top.get(i + 1).map_or(u32::MAX, |(_, line)| *line);
        Some(top[i].1..end)
    };
    // Errors in the blocks that may change what any state ends with (the defaults' timeouts,
    // the failure policy) leave every state's outcomes unsure; errors elsewhere outside the
    // states (a parameter's type, the bounds) do not.
    let global = ["defaults", "onFailure"];
    if global
        .iter()
        .filter_map(|b| block_of(b))
        .any(|lines| error_lines.iter().any(|l| lines.contains(l)))
    {
        return;
    }
    let states_end = block_of("states").map_or(u32::MAX, |lines| lines.end);
    let sound = |s: &StateSpec| {
        let end = starts
            .iter()
            .find(|l| **l > s.span.line)
            .copied()
            .unwrap_or(states_end);
        !error_lines.iter().any(|l| (s.span.line..end).contains(l))
    };
    outcomes::check_states(ctx, doc, settings, sound);
}

/// Each state of `doc` with its node in the document `root` it was read from (states the
/// node has and the document does not, e.g. of an invalid spec, are left out).
pub(crate) fn state_nodes<'a>(
    root: &'a YamlNode,
    doc: &'a WorkflowDoc,
) -> impl Iterator<Item = (&'a YamlNode, &'a StateSpec)> {
    root.get("states")
        .and_then(YamlNode::as_map)
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, v)| Some((v, doc.states.get(&k.key_text()?)?)))
}

/// A `workflow_task`'s (or a fan-out's) reference to another workflow.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowRef {
    /// The state holding the `workflow_task`, `parallel_task` or `foreach_task`.
    pub state: String,
    /// That state's type.
    pub task_type: TaskType,
    /// The workflow's name, and where its `workflow:` value is written.
    pub name: Spanned<String>,
    /// A `workflow_task`'s `params:` as written, when it is absent or a mapping: what
    /// `magrathea validate` checks against the workflow's `parameters:` (`MAG-YA008`). `None`
    /// for a fan-out, or `params:` written as one `${…}`.
    pub params: Option<SubParams>,
}

/// The `params:` of a `workflow_task`, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct SubParams {
    /// Where a missing parameter is said: the `params:` mapping, or the `workflow:` value
    /// when there is none.
    pub span: crate::diagnostic::Span,
    /// Each parameter passed: its name, its value when written without placeholders, and
    /// where the value is.
    pub given: Vec<(String, Option<serde_json::Value>, crate::diagnostic::Span)>,
}

/// [`SubParams`] of the `workflow_task` node `v`, whose `workflow:` value lies at `name_span`.
fn sub_params(v: &YamlNode, name_span: crate::diagnostic::Span) -> Option<SubParams> {
    let Some(params) = v.get("params") else {
        return Some(SubParams {
            span: name_span,
            given: Vec::new(),
        });
    };
    let entries = params.as_map()?;
    let given = entries
        .iter()
        .filter_map(|(k, value)| {
            let key = k.key_text()?;
            let json = value.to_json();
            let literal = (!json.to_string().contains("${")).then_some(json);
            Some((key, literal, value.content.unwrap_or(value.span)))
        })
        .collect();
    Some(SubParams {
        span: params.span,
        given,
    })
}

/// The `workflow:` of every `workflow_task` and `foreach_task` state and of every
/// `parallel_task` branch, with its position.
pub(crate) fn workflow_refs(root: &YamlNode, doc: &WorkflowDoc) -> Vec<WorkflowRef> {
    let mut out = Vec::new();
    for (v, state) in state_nodes(root, doc) {
        let nodes: Vec<&YamlNode> = match state.task_type {
            TaskType::WorkflowTask | TaskType::ForeachTask => {
                v.get("workflow").into_iter().collect()
            }
            TaskType::ParallelTask => v
                .get("branches")
                .and_then(YamlNode::as_map)
                .unwrap_or_default()
                .iter()
                .filter_map(|(_, b)| b.get("workflow"))
                .collect(),
            _ => Vec::new(),
        };
        for w in nodes {
            let Some(name) = w.as_str() else { continue };
            let span = w.content.unwrap_or(w.span);
            let params = (state.task_type == TaskType::WorkflowTask)
                .then(|| sub_params(v, span))
                .flatten();
            out.push(WorkflowRef {
                state: state.name.clone(),
                task_type: state.task_type,
                name: Spanned {
                    value: name.to_owned(),
                    span,
                },
                params,
            });
        }
    }
    out
}

/// `MAG-Y026` for every sub-workflow name written without placeholders that is no plain
/// document name (`../x`, `a/b`): no run could start it, whatever the project holds.
pub(crate) fn invalid_sub_workflow_names(ctx: &mut Ctx<'_>, refs: &[WorkflowRef]) {
    for r in refs {
        let name = &r.name.value;
        if name.contains("${") || magrathea_exec::check_name(name).is_ok() {
            continue;
        }
        ctx.error(
            r.name.span,
            Code::InvalidValue,
            format_args!(
                "'workflow' of {} '{}' is '{name}': expected the plain name of a workflow \
                 (a file name of _vance/workflows/ without '.yaml': ASCII letters, digits, '.', '_' \
                 and '-', no '..' or '/')",
                r.task_type.as_str(),
                r.state
            ),
        );
    }
}

impl Loaded {
    /// Warns (`MAG-YA005`) about every `workflow_task` whose workflow `exists` does not
    /// know. `exists` answers by the caller's document cascade (project, then tenant), e.g.
    /// `|name| docs.workflow(&scope, name).is_ok()`. Names written as a `${…}` template are
    /// resolved at run time and not checked. [`crate::load_workflow_checked`] does this for
    /// a document with errors too.
    pub fn check_sub_workflows(&self, exists: impl FnMut(&str) -> bool) -> Diagnostics {
        unknown_sub_workflows(&self.path, &self.workflow_refs, exists, Vec::new)
    }
}
