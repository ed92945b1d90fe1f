// A task's input is one journaled value; two parameters must become one struct.
use magrathea::{TaskError, task};

#[task]
async fn transfer(from: String, to: String) -> Result<(), TaskError> {
    let _ = (from, to);
    Ok(())
}

fn main() {}
