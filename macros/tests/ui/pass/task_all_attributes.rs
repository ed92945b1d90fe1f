// Every #[task] argument, and each retry form mapped onto its RetryPolicy constructor.
use std::time::Duration;

use magrathea::{RetryPolicy, Task, TaskError, TaskOptions, task};

#[task(name = "payments.charge", retry(max_attempts = 3, backoff_ms = 100), timeout_ms = 5000)]
async fn charge(cents: u64) -> Result<u64, TaskError> {
    Ok(cents)
}

#[task(retry(max_attempts = 5, backoff_ms = 10, max_backoff_ms = 1000))]
async fn exponential(n: u32) -> Result<u32, TaskError> {
    Ok(n)
}

#[task(retry(max_attempts = 2))]
async fn immediate(n: u32) -> Result<u32, TaskError> {
    Ok(n)
}

#[task(retry = "none", name = "once")]
async fn once(n: u32) -> Result<u32, TaskError> {
    Ok(n)
}

#[task(timeout_ms = 250)]
async fn bounded(n: u32) -> Result<u32, TaskError> {
    Ok(n)
}

fn main() {
    assert_eq!(<charge as Task>::NAME, "payments.charge");
    assert_eq!(
        <charge as Task>::options(),
        TaskOptions {
            retry: RetryPolicy::fixed(3, Duration::from_millis(100)),
            timeout: Some(Duration::from_millis(5000)),
        }
    );
    assert_eq!(
        <exponential as Task>::options().retry,
        RetryPolicy::exponential(5, Duration::from_millis(10), Duration::from_millis(1000))
    );
    assert_eq!(<immediate as Task>::options().retry, RetryPolicy::fixed(2, Duration::ZERO));
    assert_eq!(<once as Task>::NAME, "once");
    assert_eq!(<once as Task>::options().retry, RetryPolicy::none());
    assert_eq!(<once as Task>::options().timeout, None);
    assert_eq!(<bounded as Task>::options().retry, RetryPolicy::default());
    assert_eq!(<bounded as Task>::options().timeout, Some(Duration::from_millis(250)));
}
