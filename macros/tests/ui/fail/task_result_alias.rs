// With a two-argument alias other than `Result` the macro cannot tell the output from the
// error, so it asks for the full `Result<T, E>`.
use magrathea::task;

type PayResult<E, T> = Result<T, E>;

#[task]
async fn charge(cents: u64) -> PayResult<magrathea::TaskError, u64> {
    Ok(cents)
}

fn main() {}
