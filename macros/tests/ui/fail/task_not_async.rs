// A task's attempt is awaited by the engine, so #[task] needs an `async fn`.
use magrathea::{TaskError, task};

#[task]
fn charge(cents: u64) -> Result<u64, TaskError> {
    Ok(cents)
}

fn main() {}
