// A task may take its TaskContext first; its input may be bound by a pattern.
use magrathea::{Task, TaskContext, TaskError, task};

/// Adds two numbers, keyed for idempotency.
#[task]
pub(crate) async fn add(ctx: TaskContext, (a, b): (u32, u32)) -> Result<String, TaskError> {
    Ok(format!("{}: {}", ctx.idempotency_key(), a + b))
}

/// The same with a qualified context type.
#[task]
async fn add_qualified(ctx: magrathea::TaskContext, n: u32) -> Result<u32, TaskError> {
    Ok(n + ctx.attempt)
}

fn assert_task<T: Task>(_: T) {}

fn main() {
    assert_task(add);
    assert_task(add_qualified);
    let _: Option<<add as Task>::Input> = Some((1, 2));
    let _: Option<<add as Task>::Output> = Some(String::new());
}
