// A #[task] is not a workflow: it cannot be started or registered as one.
use magrathea::{TaskError, task};

#[task]
async fn charge(cents: u64) -> Result<u64, TaskError> {
    Ok(cents)
}

fn needs_workflow<W: magrathea::Workflow>(_: W) {}

fn main() {
    needs_workflow(charge);
}
