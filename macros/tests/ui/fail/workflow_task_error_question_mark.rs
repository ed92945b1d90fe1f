// A `TaskError` is what a task body returns; it is not a std error, so `?` cannot turn it
// into a `magrathea::Error`. Workflow code gets `StepError`s from its steps, which convert.
use magrathea::{Context, TaskError, workflow};

#[workflow]
async fn order(_ctx: Context, id: u64) -> Result<u64, magrathea::Error> {
    if id == 0 {
        Err(TaskError::terminal("no order"))?;
    }
    Ok(id)
}

fn main() {}
