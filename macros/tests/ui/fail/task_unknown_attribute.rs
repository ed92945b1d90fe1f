// `retries` is not a #[task] argument (the retry policy is `retry(...)`); a misspelt argument
// must not be silently ignored.
use magrathea::{TaskError, task};

#[task(retries = 3)]
async fn charge(cents: u64) -> Result<u64, TaskError> {
    Ok(cents)
}

fn main() {}
