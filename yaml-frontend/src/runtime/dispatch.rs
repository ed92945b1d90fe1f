//! Dispatch of the task types that run outside the workflow (`shell_task`, `script_task`,
//! `tool_task`, `agent_task`) to the executors of `magrathea-exec`: what a state hands its
//! executor, and how the executor's result becomes the state's [`Completion`].
//!
//! A step journals its typed input (taken from the state's resolved spec) and the run's small
//! constant context (scope, workflow, `startedBy`, and for tools and agents `allowedTools`).
//! The run's parameters and variables, which a shell step sees as `MAGRATHEA_PARAM_*` /
//! `MAGRATHEA_VAR_*` and a script as `params` / `state`, travel inside the call as
//! [`RunData`] and are not journaled: a run of N states journals O(N) bytes of them, not
//! O(N²). Replay rebuilds the same parameters (the StartRecord's) and variables (journaled
//! results) for the same step, so a step re-run after a restart sees the same.

use std::sync::Arc;

use magrathea_core::{
    RetryPolicy, StartRecord, TaskCall, TaskError, TaskOptions, TaskRegistration, WorkflowContext,
};
use magrathea_exec::{
    AgentInput, ExecCall, IntoExecCall, RunContext, RunData, ScriptInput, ShellInput, ToolInput,
};
use serde_json::{Map, Value, json};

use super::RuntimeInner;
use crate::ast::TaskType;

/// What a state's task produced.
pub(crate) struct Completion {
    pub(crate) outcome: String,
    pub(crate) output: Value,
    pub(crate) next: Option<String>,
    /// What the task cost (agent tasks), for `bounds.maxTotalCostUsd`.
    pub(crate) cost_usd: f64,
    /// The step's executions are used up (reference §12: it "fails terminally"): `retry:`
    /// does not run it again, only the routing sees it.
    pub(crate) exhausted: bool,
}

impl Completion {
    pub(crate) fn of(outcome: &str, output: Value) -> Self {
        Self {
            outcome: outcome.into(),
            output,
            next: None,
            cost_usd: 0.0,
            exhausted: false,
        }
    }
    pub(crate) fn from_task(result: Result<Value, TaskError>) -> Self {
        match result {
            Ok(v) => Self::of("success", v),
            Err(e) => {
                let exhausted = e.is_executions_exhausted();
                // A failure's message is its output (what `storeAs` keeps), except a
                // cancel's: a cancelled task produced nothing, whichever task it was.
                let output = if e.output.is_null() && e.kind != "cancelled" {
                    json!({ "error": e.message })
                } else if e.output.is_null() {
                    Value::Null
                } else {
                    e.output
                };
                Self {
                    exhausted,
                    ..Self::of(&e.kind, output)
                }
            }
        }
    }
}

/// What every state's task may need to know about its run.
pub(crate) struct RunInfo<'a> {
    pub(crate) start: &'a StartRecord,
    pub(crate) allowed_tools: Option<&'a [String]>,
    pub(crate) params: &'a Value,
    pub(crate) vars: &'a Map<String, Value>,
    /// Which attempt of the state's `retry:` this is (1 for the first): the number its task
    /// step's attempt is journaled with.
    pub(crate) attempt: u32,
}

impl RunInfo<'_> {
    /// `call`, its attempt numbered as this attempt of the state.
    fn numbered(&self, call: TaskCall) -> TaskCall {
        TaskCall {
            first_attempt: Some(self.attempt),
            ..call
        }
    }

    /// The journaled run context of a step: scope, workflow and who started the run.
    fn context(&self) -> RunContext {
        RunContext::new()
            .scope_key(self.start.scope.as_str())
            .workflow(&self.start.workflow_name)
            .started_by(&self.start.started_by)
    }

    /// The context of a step that calls tools: with the workflow's `allowedTools:`.
    fn tool_context(&self) -> RunContext {
        self.context()
            .allowed_tools(self.allowed_tools.map(<[String]>::to_vec))
    }

    /// The run's parameters and variables as they are now, for the executor only.
    fn data(&self) -> Arc<RunData> {
        Arc::new(RunData::new(self.params.clone(), self.vars.clone()))
    }
}

/// Runs the executor of `task_type` (one of the four external types) for state `state` with
/// its resolved `spec`.
pub(crate) async fn external(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    run: &RunInfo<'_>,
    state: &str,
    task_type: TaskType,
    spec: &Value,
) -> Completion {
    let call = |call: ExecCall<Value>| {
        ctx.task_with(run.numbered(call.on(&rt.exec).label(state).into_task_call()))
    };
    match task_type {
        TaskType::ShellTask => {
            let shell = ShellInput::from_spec(spec).into_exec_call().untyped();
            let result = call(shell.run_context(run.context()).run_data(run.data())).await;
            Completion::from_task(result)
        }
        TaskType::ScriptTask => {
            let script = ScriptInput::from_spec(spec).into_exec_call().untyped();
            let result = call(script.run_context(run.context()).run_data(run.data())).await;
            Completion::from_task(result)
        }
        TaskType::ToolTask => tool(ctx, rt, run, state, spec).await,
        TaskType::AgentTask => {
            let agent = AgentInput::from_spec(spec).into_exec_call().untyped();
            let result = call(agent.run_context(run.tool_context())).await;
            let mut done = Completion::from_task(result);
            // The agent executor reports `{data, usage, costUsd}`; `data` is the task output.
            if let Some(obj) = done.output.as_object()
                && obj.contains_key("data")
            {
                done.cost_usd = obj.get("costUsd").and_then(Value::as_f64).unwrap_or(0.0);
                done.output = obj.get("data").cloned().unwrap_or(Value::Null);
            }
            done
        }
        other => Completion::of(
            "technical_error",
            json!({ "error": format!("`{}` does not run outside the workflow", other.as_str()) }),
        ),
    }
}

/// Runs journaled before a refused tool call was a task step: they go on without one.
const DENIED_STEP_PATCH: &str = "tool-task-denied-result";

/// A `tool_task` whose tool the cascade refuses ends as any task whose attempt cannot run
/// (reference §5: every task writes a `TaskStartedRecord` and a `TaskResultRecord`): a task
/// step of attempt `run.attempt` whose result is `permission_error` with output `{error}`.
/// The step counts against `maxTaskSpawns` like any attempt, and the journal shows the
/// refusal where the state ran. `error` comes from the journaled decision, so replay asks for
/// the same step.
async fn denied(
    ctx: &WorkflowContext,
    run: &RunInfo<'_>,
    state: &str,
    tool: &str,
    error: String,
) -> Completion {
    if !ctx.patched(DENIED_STEP_PATCH) {
        return Completion::of(
            crate::ErrorKind::PermissionError.as_str(),
            json!({ "error": error }),
        );
    }
    let step = FailedStep {
        task: magrathea_exec::tools::TASK,
        state,
        input: json!({ "tool": tool, "error": error }),
        kind: crate::ErrorKind::PermissionError,
        first_attempt: Some(run.attempt),
    };
    step.run(ctx).await
}

/// A task step that cannot run and ends at once, terminally, with error kind `kind`: its
/// input holds the `error` message, and its output is that input. The journal shows it
/// like any task whose attempt failed (a `TaskStartedRecord`, then a final
/// `TaskResultRecord`), so it counts against `maxTaskSpawns` and every view shows the
/// failure where the state ran.
pub(super) struct FailedStep<'a> {
    /// The task the step is journaled as (`tool_task`, `workflow_task`, …).
    pub(super) task: &'static str,
    /// The state's name: the step's label.
    pub(super) state: &'a str,
    /// `{error, …}`: journaled as the input, returned as the output.
    pub(super) input: Value,
    /// The outcome.
    pub(super) kind: crate::ErrorKind,
    /// The attempt's number (`None`: the next one).
    pub(super) first_attempt: Option<u32>,
}

impl FailedStep<'_> {
    pub(super) async fn run(self, ctx: &WorkflowContext) -> Completion {
        let once = TaskOptions {
            retry: RetryPolicy::none(),
            timeout: None,
        };
        let kind = self.kind;
        let registration =
            TaskRegistration::new(self.task, once.clone(), move |input: Value, _| {
                let message = input["error"].as_str().unwrap_or_default().to_string();
                async move {
                    Err(TaskError::terminal(message)
                        .with_kind(kind.as_str())
                        .with_output(input))
                }
            });
        let result = ctx
            .task_with(TaskCall {
                task: self.task.into(),
                name: Some(self.state.to_string()),
                input: self.input,
                options: Some(once),
                registration: Some(registration),
                first_attempt: self.first_attempt,
            })
            .await;
        Completion::from_task(result)
    }
}

/// `tool_task`: the permission cascade (§10), journaled as a side effect because it reads the
/// tenant's and project's settings; then a registered `#[task]` of that name (within the
/// state's `timeoutSeconds`), or a tool of the executors' registry.
async fn tool(
    ctx: &WorkflowContext,
    rt: &Arc<RuntimeInner>,
    run: &RunInfo<'_>,
    state: &str,
    spec: &Value,
) -> Completion {
    let input = ToolInput::from_spec(spec);
    let name = input.tool.clone();
    let context = run.tool_context();
    let scope = context.scope();
    let decision = ctx.side_effect("tool_permission", || {
        match rt
            .exec
            .tool_permission(&scope, context.allowed_tools.as_deref(), &name)
        {
            Ok(()) => json!({ "allowed": true, "reason": "allowed" }),
            Err(reason) => json!({ "allowed": false, "reason": reason }),
        }
    });
    if decision.get("allowed").and_then(Value::as_bool) != Some(true) {
        let reason = decision
            .get("reason")
            .and_then(Value::as_str)
            .unwrap_or("denied");
        let error = format!("[MAG-TL002] tool `{name}` is not allowed: {reason}");
        return denied(ctx, run, state, &name, error).await;
    }
    if ctx.is_task_registered(&name) {
        let params = if input.params.is_null() {
            json!({})
        } else {
            input.params
        };
        let options = TaskOptions {
            retry: RetryPolicy::none(),
            timeout: input.timeout_seconds.map(crate::saturating_secs),
        };
        let result = ctx
            .task_with(TaskCall {
                task: name,
                name: Some(state.to_string()),
                input: params,
                options: Some(options),
                registration: None,
                first_attempt: Some(run.attempt),
            })
            .await;
        return Completion::from_task(result);
    }
    let call = input.into_exec_call().on(&rt.exec).label(state);
    Completion::from_task(
        ctx.task_with(run.numbered(call.run_context(context).into_task_call()))
            .await,
    )
}
