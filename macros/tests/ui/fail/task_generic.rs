// A task is journaled and called by name, so its input and output must be one concrete type.
use magrathea::{TaskError, task};

#[task]
async fn echo<T: serde::Serialize>(value: T) -> Result<T, TaskError> {
    Ok(value)
}

fn main() {}
