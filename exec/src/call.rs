//! How an executor becomes a journaled task: the typed input and the run context are the
//! task's input (journaled); the run's growing data travels beside it (not journaled).

use std::marker::PhantomData;
use std::sync::Arc;

use magrathea_core::{RetryPolicy, TaskCall, TaskError, TaskOptions, TaskRegistration};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::Executors;
use crate::documents::Scope;

/// What a step knows of the run it belongs to, journaled with its input as `$run`: small and
/// the same for every step of a run (the scope its documents and workspaces resolve in, the
/// workflow, who started it, the workflow's `allowedTools:`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunContext {
    /// `tenant/project`; empty means tenant `_`, project `_` (see [`Scope::of_run`]).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scope: String,
    /// The calling workflow's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub workflow_name: String,
    /// Who the run acts for (tools get it as [`ToolContext::user`](crate::ToolContext)).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub started_by: String,
    /// The workflow's `allowedTools:`; `None` means the default pool of the permission
    /// cascade. Only tools and agents read it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_tools: Option<Vec<String>>,
}

impl RunContext {
    /// An empty context: scope `_/_`, no workflow name or user, the default tool pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// In `scope`.
    pub fn in_scope(mut self, scope: &Scope) -> Self {
        self.scope = scope.key();
        self
    }

    /// In the scope whose key (`tenant/project`, as journaled in a StartRecord) is `key`.
    pub fn scope_key(mut self, key: impl Into<String>) -> Self {
        self.scope = key.into();
        self
    }

    /// Of workflow `name`.
    pub fn workflow(mut self, name: impl Into<String>) -> Self {
        self.workflow_name = name.into();
        self
    }

    /// Acting for `user`.
    pub fn started_by(mut self, user: impl Into<String>) -> Self {
        self.started_by = user.into();
        self
    }

    /// With the workflow's `allowedTools:` (`None`: the default pool).
    pub fn allowed_tools(mut self, tools: Option<Vec<String>>) -> Self {
        self.allowed_tools = tools;
        self
    }

    /// The scope tasks resolve documents, workspaces and lanes in.
    pub fn scope(&self) -> Scope {
        Scope::of_run(&self.scope)
    }

    fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// What a step may see of its run without journaling it: the run's parameters and variables.
///
/// A YAML shell step gets them as `MAGRATHEA_PARAM_*` / `MAGRATHEA_VAR_*`, a script as its
/// `params` and `state`. Journaling them with every step would make a run of N states journal
/// O(N²) bytes, so they travel inside the call ([`ExecCall::run_data`]) instead. They must be
/// what replay rebuilds for the same step (the YAML interpreter's are: parameters from the
/// StartRecord, variables from journaled results), so that a step re-run after a restart sees
/// the same.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct RunData {
    /// The run's parameters (an object, or null).
    pub params: Value,
    /// The run's variables.
    pub vars: Map<String, Value>,
}

impl RunData {
    /// Parameters and variables.
    pub fn new(params: Value, vars: Map<String, Value>) -> Self {
        Self { params, vars }
    }
}

/// A typed input of one executor, with the output its task answers.
pub trait IntoExecCall {
    /// What the task answers on success.
    type Output: Serialize + DeserializeOwned + Send + 'static;
    /// The call, not yet bound to executors.
    fn into_exec_call(self) -> ExecCall<Self::Output>;
}

/// One journaled call of an executor: its typed input, the run context, the step's label and,
/// not journaled, the run's data. [`ExecCall::into_task_call`] makes the core's task call,
/// which carries the executor's body (the executors are not registered by name).
///
/// The executors are those the call was bound to ([`Executors::call`]) or else those in the
/// engine's data ([`Executors::install`]).
pub struct ExecCall<O> {
    task: &'static str,
    input: Value,
    run: RunContext,
    label: Option<String>,
    data: Option<Arc<RunData>>,
    executors: Option<Executors>,
    options: TaskOptions,
    _output: PhantomData<fn() -> O>,
}

impl<O> std::fmt::Debug for ExecCall<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecCall")
            .field("task", &self.task)
            .field("input", &self.input)
            .field("run", &self.run)
            .field("label", &self.label)
            .field("data", &self.data.is_some())
            .field("bound", &self.executors.is_some())
            .finish_non_exhaustive()
    }
}

impl<O> IntoExecCall for ExecCall<O>
where
    O: Serialize + DeserializeOwned + Send + 'static,
{
    type Output = O;
    fn into_exec_call(self) -> ExecCall<O> {
        self
    }
}

impl<O> ExecCall<O> {
    /// A call of the executor `task` with `input` (the typed input, serialised).
    pub(crate) fn new(task: &'static str, input: Value) -> Self {
        Self {
            task,
            input,
            run: RunContext::default(),
            label: None,
            data: None,
            executors: None,
            options: TaskOptions {
                retry: RetryPolicy::none(),
                timeout: None,
            },
            _output: PhantomData,
        }
    }

    /// The task's name in the journal (`shell_task`, `script_task`, `tool_task`,
    /// `agent_task`).
    pub fn task(&self) -> &'static str {
        self.task
    }

    /// The journaled label of the step (a YAML state's name); the task's name by default.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// In `scope` (documents, workspaces, lanes and tool permissions resolve there).
    pub fn scope(mut self, scope: &Scope) -> Self {
        self.run.scope = scope.key();
        self
    }

    /// With the run's context (journaled).
    pub fn run_context(mut self, run: RunContext) -> Self {
        self.run = run;
        self
    }

    /// With the run's data, handed to the executor without being journaled (see [`RunData`]).
    pub fn run_data(mut self, data: Arc<RunData>) -> Self {
        self.data = Some(data);
        self
    }

    /// Run by `executors` rather than by those in the engine's data.
    pub fn on(mut self, executors: &Executors) -> Self {
        self.executors = Some(executors.clone());
        self
    }

    /// With a retry policy (none by default: the executors' failures are outcomes that
    /// workflows route on).
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.options.retry = retry;
        self
    }

    /// The same call, its output left untyped (for callers that read the task's JSON).
    pub fn untyped(self) -> ExecCall<Value> {
        ExecCall {
            task: self.task,
            input: self.input,
            run: self.run,
            label: self.label,
            data: self.data,
            executors: self.executors,
            options: self.options,
            _output: PhantomData,
        }
    }

    /// The journaled input: the typed input with the run context as `$run`.
    pub fn input(&self) -> Value {
        let mut input = self.input.clone();
        if let Value::Object(m) = &mut input
            && !self.run.is_empty()
        {
            m.insert(
                "$run".into(),
                serde_json::to_value(&self.run).unwrap_or(Value::Null),
            );
        }
        input
    }

    /// The core's task call, carrying the executor's body.
    pub fn into_task_call(self) -> TaskCall {
        let input = self.input();
        let task = self.task;
        let (executors, data) = (self.executors, self.data);
        let registration =
            TaskRegistration::new(task, self.options.clone(), move |input: Value, ctx| {
                let executors = executors.clone();
                let data = data.clone();
                async move {
                    let executors = match executors {
                        Some(e) => e,
                        None => ctx.data::<Executors>().cloned().ok_or_else(|| {
                            crate::technical(format!(
                                "[MAG-EX001] `{task}` ran without executors: bind the call with \
                                 Executors::call, or install them on the engine with \
                                 Executors::install"
                            ))
                        })?,
                    };
                    executors.execute(task, input, data.as_deref(), ctx).await
                }
            });
        TaskCall {
            task: task.into(),
            name: self.label,
            input,
            options: Some(self.options),
            registration: Some(registration),
            first_attempt: None,
        }
    }
}

/// The typed input and the `$run` context of a journaled executor input.
pub(crate) fn decode<I: DeserializeOwned>(
    task: &str,
    input: Value,
) -> Result<(I, RunContext), TaskError> {
    let run = input
        .get("$run")
        .cloned()
        .map(serde_json::from_value::<RunContext>)
        .transpose()
        .map_err(|e| bad_input(task, e))?
        .unwrap_or_default();
    let typed = serde_json::from_value(input).map_err(|e| bad_input(task, e))?;
    Ok((typed, run))
}

fn bad_input(task: &str, e: serde_json::Error) -> TaskError {
    crate::technical(format!("[MAG-TK002] invalid input for task `{task}`: {e}"))
}

/// The call of a typed input whose serialisation cannot fail (plain structs of strings,
/// numbers and JSON values).
pub(crate) fn call_of<I: Serialize, O>(task: &'static str, input: &I) -> ExecCall<O> {
    ExecCall::new(
        task,
        serde_json::to_value(input).unwrap_or_else(|_| Value::Object(Map::new())),
    )
}
