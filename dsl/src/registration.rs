//! The untyped registrations the core runs, built from a `#[task]` or `#[workflow]`.
//!
//! The engine builder and the workflow context both need a task's body: the builder to expose
//! it by name (to YAML and tools), the context so that a call carries its own body and runs
//! whether or not the task was registered. Both build it here, so the two cannot drift.

use magrathea_core::{TaskError, TaskRegistration, WorkflowError, WorkflowRegistration};
use serde_json::Value;

use crate::context::Context;
use crate::traits::{Task, Workflow};

/// Why the caller's input could not be serialised, when `input` is the mark the workflow
/// context journals in its place (`{"$error": "[MAG-SE001] …"}`): the input was of the right
/// type, so the error is that type's, not a mismatch.
fn unserialisable(input: &Value) -> Option<&str> {
    match input {
        Value::Object(m) if m.len() == 1 => m
            .get("$error")?
            .as_str()?
            .strip_prefix(crate::context::UNSERIALISABLE),
        _ => None,
    }
}

/// `T`'s body behind the core's JSON interface, with its default options.
pub(crate) fn task<T: Task>() -> TaskRegistration {
    TaskRegistration::new(T::NAME, T::options(), |input: Value, ctx| async move {
        if let Some(why) = unserialisable(&input) {
            return Err(TaskError::terminal(format!(
                "[MAG-SE001] the input of task `{}` cannot be serialised: {why}",
                T::NAME
            )));
        }
        let input: T::Input = serde_json::from_value(input).map_err(|e| {
            TaskError::terminal(format!(
                "[MAG-TK002] invalid input for task `{}`: {e}",
                T::NAME
            ))
        })?;
        let output = T::run(input, ctx).await?;
        serde_json::to_value(output).map_err(|e| {
            TaskError::terminal(format!("[MAG-SE001] output cannot be serialised: {e}"))
        })
    })
}

/// `W`'s body behind the core's JSON interface.
pub(crate) fn workflow<W: Workflow>() -> WorkflowRegistration {
    WorkflowRegistration::new(W::NAME, W::VERSION, |ctx, input: Value| async move {
        if let Some(why) = unserialisable(&input) {
            return Err(WorkflowError::failed(format!(
                "[MAG-SE001] the input of workflow `{}` cannot be serialised: {why}",
                W::NAME
            )));
        }
        let input: W::Input = serde_json::from_value(input).map_err(|e| {
            WorkflowError::failed(format!(
                "[MAG-SE003] invalid input for workflow `{}`: {e}",
                W::NAME
            ))
        })?;
        let output = W::run(Context::from_raw(ctx), input).await?;
        serde_json::to_value(output).map_err(|e| {
            WorkflowError::failed(format!("[MAG-SE001] output cannot be serialised: {e}"))
        })
    })
}
