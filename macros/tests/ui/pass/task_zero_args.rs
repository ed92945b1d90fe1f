// A task without input has `()` as input; any std error converts into TaskError, and `?`
// inside the body converts into the declared error type as usual.
use magrathea::{Task, task};

#[derive(Debug)]
struct Unreachable;

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("unreachable")
    }
}

impl std::error::Error for Unreachable {}

impl From<std::num::ParseIntError> for Unreachable {
    fn from(_: std::num::ParseIntError) -> Self {
        Unreachable
    }
}

#[task]
async fn ping() -> Result<u16, Unreachable> {
    let port: u16 = "8080".parse()?;
    Ok(port)
}

#[task]
async fn io_ping() -> Result<(), std::io::Error> {
    Ok(())
}

fn assert_task<T: Task<Input = ()>>(_: T) {}

fn main() {
    assert_task(ping);
    assert_eq!(<ping as Task>::NAME, "ping");
    let _ = <io_ping as Task>::NAME;
}
