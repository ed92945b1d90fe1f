//! The checks that look beyond the document into the caller's documents, through a
//! [`DocumentLookup`]: the workflows its `workflow_task`s start (`MAG-YA005`, a warning: the
//! workflow may be written later, and a failed sub-run is an outcome the document may route)
//! and the scripts its `script_task`s run (`MAG-Y040`, an error: with the documents as they
//! are, the task cannot run its script) and the workspaces its `shell_task`s run in
//! (`MAG-Y042`, a warning: the step would end `technical_error`, an outcome the document may
//! route). All are found in whatever part of the document was built, so they are reported
//! with the document's other errors.

use crate::ast::{ScriptSource, Spanned, TaskSpec, WorkflowDoc};
use crate::diagnostic::{Code, Diagnostic, Diagnostics};
use crate::node::YamlNode;
use crate::runtime::{DocumentSource, Scope};

use super::WorkflowRef;

/// What the caller's documents hold, for [`crate::load_workflow_checked`]. A closure
/// `|name| …` answers [`DocumentLookup::workflow_exists`] and finds every script;
/// [`ProjectDocuments`] looks both up as a run would.
pub trait DocumentLookup {
    /// Whether the workflow `name` exists (by the cascade: project, then tenant).
    fn workflow_exists(&mut self, name: &str) -> bool;

    /// Why a `script_task` with this `source`, `dirName` and `path` would not find its script
    /// at run time (the executor's message), or `Ok` when it would. The default finds every
    /// script: a lookup that does not check them.
    ///
    /// # Errors
    /// The message the run's task would fail with.
    fn find_script(
        &mut self,
        source: ScriptSource,
        dir_name: &str,
        path: &str,
    ) -> Result<(), String> {
        let _ = (source, dir_name, path);
        Ok(())
    }

    /// Whether a `shell_task`'s `dirName` names a workspace of the project (the project's
    /// `workspaces:` setting, or `workspace`). The default knows every workspace: a lookup
    /// that does not check them.
    fn has_workspace(&mut self, dir_name: &str) -> bool {
        let _ = dir_name;
        true
    }

    /// Whether an `agent_task`'s `recipe:` names a recipe of the project or its tenant
    /// (`_vance/recipes/<name>.yaml` by the cascade). The default knows every recipe: a lookup
    /// that does not check them.
    fn has_recipe(&mut self, name: &str) -> bool {
        let _ = name;
        true
    }

    /// The timeout defaults of the settings (the project's, then the tenant's) that a run takes
    /// where the document's `defaults:` set none. The default knows none: a lookup that does
    /// not read settings.
    fn timeout_defaults(&mut self) -> crate::ast::Defaults {
        crate::ast::Defaults::default()
    }

    /// The longest timeout, in seconds, the tenant lets a `shell_task` or `script_task` have
    /// (`bounds.maxTaskTimeoutSeconds`). The default knows no bound: a lookup that does not
    /// check timeouts.
    fn task_timeout_ceiling(&mut self) -> Option<f64> {
        None
    }

    /// The names of the workflows the project and its tenant have, for a near name to
    /// suggest when a `workflow_task` names none of them. The default knows none: a lookup
    /// that suggests nothing.
    fn workflow_names(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// The `parameters:` the workflow `name` declares, when its document loads. The default
    /// knows none: a lookup that does not check a sub-run's parameters.
    fn workflow_parameters(
        &mut self,
        name: &str,
    ) -> Option<indexmap::IndexMap<String, crate::ast::ParamSchema>> {
        let _ = name;
        None
    }
}

impl<F: FnMut(&str) -> bool> DocumentLookup for F {
    fn workflow_exists(&mut self, name: &str) -> bool {
        self(name)
    }
}

/// A project's documents as its runs find them: workflows by the project → tenant cascade,
/// scripts where the `script_task` executor looks for them
/// ([`magrathea_exec::script::locate_script`]).
#[derive(Debug, Clone, Copy)]
pub struct ProjectDocuments<'a> {
    docs: &'a DocumentSource,
    scope: &'a Scope,
}

impl<'a> ProjectDocuments<'a> {
    /// The documents of `scope` in `docs`.
    #[must_use]
    pub fn new(docs: &'a DocumentSource, scope: &'a Scope) -> Self {
        Self { docs, scope }
    }
}

impl DocumentLookup for ProjectDocuments<'_> {
    fn workflow_exists(&mut self, name: &str) -> bool {
        self.docs.workflow(self.scope, name).is_ok()
    }

    fn workflow_names(&mut self) -> Vec<String> {
        self.docs.workflow_names(self.scope)
    }

    fn find_script(
        &mut self,
        source: ScriptSource,
        dir_name: &str,
        path: &str,
    ) -> Result<(), String> {
        match source {
            // A workspace is written to while runs go on: only whether the script is there.
            ScriptSource::Workspace => magrathea_exec::script::locate_script(
                self.docs,
                self.scope,
                "workspace",
                dir_name,
                path,
            )
            .map(|_| ()),
            // A document is read as the run reads it: one that is not UTF-8 is named now.
            _ => magrathea_exec::script::read_script(
                self.docs, self.scope, "document", dir_name, path,
            )
            .map(|_| ()),
        }
        .map_err(|e| e.message)
    }

    fn has_workspace(&mut self, dir_name: &str) -> bool {
        self.docs.workspace_dir(self.scope, dir_name).is_some()
    }

    fn has_recipe(&mut self, name: &str) -> bool {
        self.docs.document(self.scope, "recipes", name).is_ok()
    }

    fn timeout_defaults(&mut self) -> crate::ast::Defaults {
        // As a run reads them when it starts (`runtime::default_bounds`).
        let cascade = self
            .docs
            .settings(self.scope)
            .defaults
            .or(self.docs.tenant_settings(self.scope).defaults);
        crate::ast::Defaults {
            task_timeout_seconds: cascade.task_timeout_seconds,
            gate_timeout_seconds: cascade.gate_timeout_seconds,
        }
    }

    fn task_timeout_ceiling(&mut self) -> Option<f64> {
        Some(
            self.docs
                .tenant_settings(self.scope)
                .bounds
                .task_timeout_ceiling(),
        )
    }

    fn workflow_parameters(
        &mut self,
        name: &str,
    ) -> Option<indexmap::IndexMap<String, crate::ast::ParamSchema>> {
        let (path, text) = self.docs.workflow(self.scope, name).ok()?;
        let label = path.display().to_string();
        let loaded = crate::load_workflow(&label, &text, &crate::LoadOptions::default()).ok()?;
        Some(loaded.doc.parameters)
    }
}

/// An `agent_task`'s `recipe:`, written without placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct RecipeRef {
    /// The state holding the `agent_task`.
    pub state: String,
    /// `recipe:`, and where its value is written.
    pub recipe: Spanned<String>,
}

/// The literal `recipe:` of every `agent_task` state, with its position.
pub(crate) fn recipe_refs(root: &YamlNode, doc: &WorkflowDoc) -> Vec<RecipeRef> {
    let mut out = Vec::new();
    for (v, state) in super::state_nodes(root, doc) {
        let TaskSpec::Agent { recipe, .. } = &state.task else {
            continue;
        };
        let Some(node) = v.get("recipe") else {
            continue;
        };
        if recipe.is_empty() || recipe.contains("${") {
            continue;
        }
        out.push(RecipeRef {
            state: state.name.clone(),
            recipe: Spanned {
                value: recipe.clone(),
                span: node.content.unwrap_or(node.span),
            },
        });
    }
    out
}

/// The `MAG-YA007` warnings of `refs` (of the document labelled `path`): each recipe the
/// project and its tenant do not have now. A warning, as for a sub-workflow: the recipe may
/// be written before a run reaches the state, and the task's `technical_error` may be routed.
pub(crate) fn unknown_recipes(
    path: &str,
    refs: &[RecipeRef],
    lookup: &mut impl DocumentLookup,
) -> Diagnostics {
    let mut out = Diagnostics::new();
    for r in refs {
        let name = &r.recipe.value;
        if lookup.has_recipe(name) {
            continue;
        }
        out.push(Diagnostic::warning(
            path,
            r.recipe.span,
            Code::UnknownRecipe,
            format_args!(
                "agent_task '{}' uses recipe '{name}', which is not a recipe of the project or \
                 its tenant: expected _vance/recipes/{name}.yaml; the task would end with \
                 'technical_error' ([MAG-AG001])",
                r.state
            ),
        ));
    }
    out
}

/// The `MAG-YA008` warnings of `refs` (of the document labelled `path`): each `workflow_task`
/// that would not pass the parameters its workflow declares — a required one without a
/// default left out, or one written as a value of another type — so that its sub-run would be
/// refused and the task end `failure` (`[MAG-YR002]`).
pub(crate) fn sub_workflow_params(
    path: &str,
    refs: &[WorkflowRef],
    lookup: &mut impl DocumentLookup,
) -> Diagnostics {
    let mut out = Diagnostics::new();
    for r in refs {
        let (Some(params), name) = (&r.params, &r.name.value) else {
            continue;
        };
        if name.contains("${") || magrathea_exec::check_name(name).is_err() {
            continue;
        }
        let Some(declared) = lookup.workflow_parameters(name) else {
            continue;
        };
        for (param, schema) in &declared {
            let passed = params.given.iter().find(|(k, _, _)| k == param);
            match passed {
                None if schema.required && schema.default.is_none() => {
                    out.push(Diagnostic::warning(
                        path,
                        params.span,
                        Code::SubWorkflowParams,
                        format_args!(
                            "workflow_task '{}' starts workflow '{name}' without its required \
                             parameter '{param}' ({}): expected it under 'params:'; the sub-run \
                             would be refused and the task end with 'failure' ([MAG-YR002])",
                            r.state,
                            schema.ty.as_str()
                        ),
                    ));
                }
                Some((_, Some(value), span)) if !value.is_null() && !schema.ty.matches(value) => {
                    out.push(Diagnostic::warning(
                        path,
                        *span,
                        Code::SubWorkflowParams,
                        format_args!(
                            "workflow_task '{}' passes parameter '{param}' of workflow \
                             '{name}' as {}: expected {}; the sub-run would be refused and the \
                             task end with 'failure' ([MAG-YR002])",
                            r.state,
                            crate::params::kind(value),
                            schema.ty.as_str()
                        ),
                    ));
                }
                _ => {}
            }
        }
    }
    out
}

/// A `shell_task`'s `dirName:`, written without placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkspaceRef {
    /// The state holding the `shell_task`.
    pub state: String,
    /// `dirName:`, and where its value is written.
    pub dir_name: Spanned<String>,
}

/// The literal `dirName:` of every `shell_task` state, with its position.
pub(crate) fn workspace_refs(root: &YamlNode, doc: &WorkflowDoc) -> Vec<WorkspaceRef> {
    let mut out = Vec::new();
    for (v, state) in super::state_nodes(root, doc) {
        let TaskSpec::Shell {
            dir_name: Some(dir_name),
            ..
        } = &state.task
        else {
            continue;
        };
        let Some(node) = v.get("dirName") else {
            continue;
        };
        if dir_name.contains("${") {
            continue;
        }
        out.push(WorkspaceRef {
            state: state.name.clone(),
            dir_name: Spanned {
                value: dir_name.clone(),
                span: node.content.unwrap_or(node.span),
            },
        });
    }
    out
}

/// The `MAG-Y042` warnings of `refs` (of the document labelled `path`): each `dirName` that
/// names no workspace of the project now. A warning, as the reference has such a step end
/// `technical_error` at run time, which the document may route, and the settings may gain
/// the workspace before the run.
pub(crate) fn unknown_workspaces(
    path: &str,
    refs: &[WorkspaceRef],
    lookup: &mut impl DocumentLookup,
) -> Diagnostics {
    let mut out = Diagnostics::new();
    for r in refs {
        let name = &r.dir_name.value;
        if lookup.has_workspace(name) {
            continue;
        }
        out.push(Diagnostic::warning(
            path,
            r.dir_name.span,
            Code::UnknownWorkspace,
            format_args!(
                "shell_task '{}' runs in workspace '{name}', which the project does not declare: \
                 expected 'workspace' (the project directory) or a workspace under 'workspaces:' \
                 in _vance/settings.yaml; the task would end with 'technical_error' ([MAG-SH005])",
                r.state
            ),
        ));
    }
    out
}

/// A `script_task`'s script, written without placeholders (a `${…}` in `path` or `dirName`
/// is resolved at run time and cannot be looked up before).
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptRef {
    /// The state holding the `script_task`.
    pub state: String,
    /// `source:`.
    pub source: ScriptSource,
    /// `dirName:` (`workspace` when absent, as at run time).
    pub dir_name: String,
    /// `path:`, and where its value is written.
    pub path: Spanned<String>,
}

/// The literal script of every `script_task` state, with the position of its `path:` value.
pub(crate) fn script_refs(root: &YamlNode, doc: &WorkflowDoc) -> Vec<ScriptRef> {
    let mut out = Vec::new();
    for (v, state) in super::state_nodes(root, doc) {
        let TaskSpec::Script {
            source,
            path,
            dir_name,
        } = &state.task
        else {
            continue;
        };
        let dir_name = dir_name.as_deref().unwrap_or("workspace");
        let Some(node) = v.get("path") else { continue };
        if path.is_empty() || path.contains("${") || dir_name.contains("${") {
            continue;
        }
        out.push(ScriptRef {
            state: state.name.clone(),
            source: *source,
            dir_name: dir_name.to_owned(),
            path: Spanned {
                value: path.clone(),
                span: node.content.unwrap_or(node.span),
            },
        });
    }
    out
}

/// The `MAG-YA005` warnings of `refs` (of the document labelled `path`): each workflow
/// `exists` does not know, unless written as a template.
pub(crate) fn unknown_sub_workflows(
    path: &str,
    refs: &[WorkflowRef],
    mut exists: impl FnMut(&str) -> bool,
    mut names: impl FnMut() -> Vec<String>,
) -> Diagnostics {
    let mut out = Diagnostics::new();
    // Listed once, at the first name that needs a suggestion.
    let mut known: Option<Vec<String>> = None;
    for r in refs {
        let name = &r.name.value;
        // A name that is no document name has its error (`MAG-Y026`) already.
        if name.contains("${") || magrathea_exec::check_name(name).is_err() || exists(name) {
            continue;
        }
        let known = known.get_or_insert_with(&mut names);
        let hint = crate::suggest::hint(name, known.iter().map(String::as_str));
        out.push(Diagnostic::warning(
            path,
            r.name.span,
            Code::UnknownSubWorkflow,
            format_args!(
                "{} '{}' starts workflow '{name}', which is not a workflow of \
                 the project or its tenant: expected _vance/workflows/{name}.yaml; the \
                 task would end with 'failure'{hint}",
                r.task_type.as_str(),
                r.state
            ),
        ));
    }
    out
}

/// The `MAG-Y040` errors of `refs` (of the document labelled `path`): each script `lookup`
/// would not find at run time, with the reason the task would fail with.
pub(crate) fn missing_scripts(
    path: &str,
    refs: &[ScriptRef],
    lookup: &mut impl DocumentLookup,
) -> Diagnostics {
    let mut out = Diagnostics::new();
    for r in refs {
        let Err(why) = lookup.find_script(r.source, &r.dir_name, &r.path.value) else {
            continue;
        };
        // A workspace is written to while runs go on (a shell step before the script may
        // create it): a script missing from it now is a warning. Anything else about the path
        // stays wrong at run time.
        if r.source == ScriptSource::Workspace && why.starts_with(MISSING) {
            out.push(Diagnostic::warning(
                path,
                r.path.span,
                Code::ScriptPath,
                format_args!(
                    "the script of script_task '{}' is not in its workspace now: unless a state \
                     before it writes it there, the task would end with 'technical_error': {why}",
                    r.state
                ),
            ));
        } else {
            out.push(Diagnostic::error(
                path,
                r.path.span,
                Code::ScriptPath,
                format_args!(
                    "the path of script_task '{}' names no script it can run, so the task \
                     would end with 'technical_error': {why}",
                    r.state
                ),
            ));
        }
    }
    out
}

/// How the executor's message for a script that is not there begins.
const MISSING: &str = "[MAG-JS003]";
