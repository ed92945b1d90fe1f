//! The expansion compiles cleanly under the workspace's strict lints, with `pub` items and
//! without docs on the function (the macro writes one).
#![deny(
    missing_docs,
    unreachable_pub,
    missing_debug_implementations,
    unused,
    rust_2018_idioms,
    clippy::all
)]

use magrathea::{Context, TaskContext, TaskError, WorkflowError, task, workflow};

/// A public task with every argument.
#[task(
    name = "lints.charge",
    retry(max_attempts = 2, backoff_ms = 1),
    timeout_ms = 10
)]
pub async fn charge(ctx: TaskContext, cents: u64) -> Result<u64, TaskError> {
    Ok(cents + u64::from(ctx.attempt))
}

#[task]
pub async fn undocumented() -> Result<(), std::io::Error> {
    Ok(())
}

#[task(retry = "none")]
pub async fn pattern((a, b): (u32, u32)) -> Result<u32, TaskError> {
    Ok(a + b)
}

/// A public workflow.
#[workflow(version = "1")]
pub async fn order(ctx: Context, cents: u64) -> Result<u64, WorkflowError> {
    let charged = ctx.task(charge, cents).await?;
    Ok(charged)
}

#[workflow]
pub async fn tick(_ctx: Context) -> Result<(), TaskError> {
    Ok(())
}

#[test]
fn names() {
    use magrathea::{Task, Workflow};
    assert_eq!(<charge as Task>::NAME, "lints.charge");
    assert_eq!(<undocumented as Task>::NAME, "undocumented");
    assert_eq!(<pattern as Task>::NAME, "pattern");
    assert_eq!(<order as Workflow>::VERSION, "1");
    assert_eq!(<tick as Workflow>::NAME, "tick");
}
