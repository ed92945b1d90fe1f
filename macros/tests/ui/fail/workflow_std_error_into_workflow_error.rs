// `WorkflowError` converts from step and child errors only; `?` on another error needs the
// body to declare `magrathea::Error`, which takes every std error.
use magrathea::{Context, WorkflowError, workflow};

#[workflow]
async fn parse(_ctx: Context, text: String) -> Result<u32, WorkflowError> {
    let n: u32 = text.parse()?;
    Ok(n)
}

fn main() {}
