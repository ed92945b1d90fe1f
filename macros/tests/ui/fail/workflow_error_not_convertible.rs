// A workflow's declared error must convert into WorkflowError or into a boxed error;
// `Refused` is neither (derive `std::error::Error` for it, or return `magrathea::Error`).
use magrathea::{Context, workflow};

#[derive(Debug)]
struct Refused;

#[workflow]
async fn order(_ctx: Context, id: u64) -> Result<u64, Refused> {
    if id == 0 { Err(Refused) } else { Ok(id) }
}

fn main() {}
