// The Context goes first and the input second; here they are swapped.
use magrathea::{Context, WorkflowError, workflow};

#[workflow]
async fn order(id: u64, ctx: Context) -> Result<u64, WorkflowError> {
    let _ = ctx;
    Ok(id)
}

fn main() {}
