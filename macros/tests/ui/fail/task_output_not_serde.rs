// A task's output is journaled so replay can return it without running the task again;
// `Receipt` is not a serde type.
use magrathea::{TaskError, task};

struct Receipt {
    id: u64,
}

#[task]
async fn charge(id: u64) -> Result<Receipt, TaskError> {
    Ok(Receipt { id })
}

fn main() {
    let _ = |r: Receipt| r.id;
}
