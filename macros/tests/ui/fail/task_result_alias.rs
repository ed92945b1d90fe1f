// With a one-argument alias the macro cannot tell the output from the error, so it asks for
// the full `Result<T, E>`.
use magrathea::task;

type TaskResult<T> = Result<T, magrathea::TaskError>;

#[task]
async fn charge(cents: u64) -> TaskResult<u64> {
    Ok(cents)
}

fn main() {}
