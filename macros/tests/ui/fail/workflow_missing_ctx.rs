// A workflow reaches the world only through its Context, which must be its first parameter.
use magrathea::{WorkflowError, workflow};

#[workflow]
async fn order(id: u64) -> Result<u64, WorkflowError> {
    Ok(id)
}

fn main() {}
