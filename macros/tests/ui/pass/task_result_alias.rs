// A one-argument alias names the output; the error is the alias's own.
use magrathea::{Task, task};

type TaskResult<T> = Result<T, magrathea::TaskError>;

#[task]
async fn charge(cents: u64) -> TaskResult<u64> {
    Ok(cents)
}

#[task]
async fn parse(text: String) -> std::io::Result<u64> {
    text.parse().map_err(std::io::Error::other)
}

fn main() {
    let _: fn(u64, magrathea::TaskContext) -> _ = <charge as Task>::run;
    let _: fn(String, magrathea::TaskContext) -> _ = <parse as Task>::run;
}
