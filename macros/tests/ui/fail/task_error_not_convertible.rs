// A task's error must convert into TaskError or into a boxed error; `Declined` is neither.
use magrathea::task;

#[derive(Debug)]
struct Declined;

#[task]
async fn charge(cents: u64) -> Result<u64, Declined> {
    if cents == 0 { Err(Declined) } else { Ok(cents) }
}

fn main() {}
