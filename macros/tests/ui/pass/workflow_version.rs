// A workflow's name and version come from its arguments; a TaskError converts into
// WorkflowError, both through `?` in the body and as the declared error type.
use magrathea::{Context, TaskError, Workflow, workflow};

#[workflow(name = "orders.fulfil", version = "2")]
async fn fulfil(_ctx: Context, quantity: u32) -> Result<u32, TaskError> {
    let extra: u32 = "1".parse()?;
    Ok(quantity + extra)
}

fn main() {
    assert_eq!(<fulfil as Workflow>::NAME, "orders.fulfil");
    assert_eq!(<fulfil as Workflow>::VERSION, "2");
}
