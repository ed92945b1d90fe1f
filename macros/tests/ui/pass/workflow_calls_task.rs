// A workflow takes its Context first and one input, and calls a task through the context.
use magrathea::{Context, Task, TaskError, Workflow, WorkflowError, task, workflow};
use serde::{Deserialize, Serialize};

#[derive(Clone, Serialize, Deserialize)]
pub struct Order {
    pub id: u64,
}

#[derive(Serialize, Deserialize)]
pub struct Summary {
    pub receipt: String,
}

#[task]
async fn charge(order: Order) -> Result<String, TaskError> {
    Ok(format!("receipt-{}", order.id))
}

/// Charges an order and summarises it.
#[workflow]
pub async fn place_order(ctx: Context, input: Order) -> Result<Summary, WorkflowError> {
    let receipt = ctx.task(charge, input).await?;
    Ok(Summary { receipt })
}

/// A workflow without input.
#[workflow]
async fn tick(ctx: Context) -> Result<(), WorkflowError> {
    let _ = ctx.now();
    Ok(())
}

fn assert_workflow<W: Workflow>(_: W) {}
fn assert_task<T: Task>(_: T) {}

fn main() {
    assert_workflow(place_order);
    assert_workflow(tick);
    assert_task(charge);
    assert_eq!(<place_order as Workflow>::NAME, "place_order");
    assert_eq!(<place_order as Workflow>::VERSION, "");
    let _: Option<<tick as Workflow>::Input> = Some(());
}
