// A workflow's declared error must convert into WorkflowError; a `String` does not (return
// `magrathea::Error::failed(..)` or `WorkflowError::failed(..)` instead).
use magrathea::{Context, workflow};

#[workflow]
async fn order(_ctx: Context, id: u64) -> Result<u64, String> {
    if id == 0 { Err("no order".to_string()) } else { Ok(id) }
}

fn main() {}
