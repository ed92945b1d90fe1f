// A task's input is written to the journal, so it must be a serde type; `Order` derives
// neither Serialize nor Deserialize.
use magrathea::{TaskError, task};

struct Order {
    id: u64,
}

#[task]
async fn charge(order: Order) -> Result<u64, TaskError> {
    Ok(order.id)
}

fn main() {}
