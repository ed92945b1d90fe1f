// A task with one serde input and output; its name defaults to the function's name.
use magrathea::{Task, TaskError, TaskOptions, task};
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
struct Order {
    id: u64,
}

#[derive(Serialize, Deserialize)]
struct Receipt {
    order: u64,
}

/// Charges an order.
#[task]
async fn charge(order: Order) -> Result<Receipt, TaskError> {
    if order.id == 0 {
        return Err(TaskError::retryable("no order"));
    }
    Ok(Receipt { order: order.id })
}

fn assert_task<T: Task<Input = Order, Output = Receipt>>(_: T) {}

fn main() {
    assert_task(charge);
    assert_eq!(<charge as Task>::NAME, "charge");
    assert_eq!(<charge as Task>::options(), TaskOptions::default());
    let _copy = charge;
    let _ = format!("{charge:?}");
}
