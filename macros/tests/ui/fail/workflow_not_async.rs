// A workflow suspends on its steps, so #[workflow] needs an `async fn`.
use magrathea::{Context, WorkflowError, workflow};

#[workflow]
fn order(ctx: Context, id: u64) -> Result<u64, WorkflowError> {
    let _ = ctx;
    Ok(id)
}

fn main() {}
