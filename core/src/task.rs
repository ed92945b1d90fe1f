//! What a task is to the engine: its options, its error type and what it sees when it runs.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::engine::{EngineInner, Event};
use crate::id::RunId;
use crate::record::Step;

/// How a task is retried after a failed attempt.
///
/// `max_attempts` counts the first attempt: `max_attempts: 3` is the original plus two retries.
/// The delay before retry `n` (n ≥ 1) is `initial_backoff * multiplier^(n-1)`, capped at
/// `max_backoff`. Retry delays are durable timers: a retry due in an hour survives a restart.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, including the first. `1` means no retry.
    pub max_attempts: u32,
    /// Delay before the first retry.
    pub initial_backoff: Duration,
    /// Growth factor of the delay per retry.
    pub multiplier: f64,
    /// Upper bound of the delay.
    pub max_backoff: Duration,
    /// Error kinds that are retried; `None` retries every retryable error.
    pub retry_on: Option<Vec<String>>,
}

impl RetryPolicy {
    /// No retries: one attempt.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// `max_attempts` attempts in all with a fixed delay between them.
    pub fn fixed(max_attempts: u32, backoff: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            initial_backoff: backoff,
            multiplier: 1.0,
            max_backoff: backoff,
            retry_on: None,
        }
    }

    /// `max_attempts` attempts with exponential backoff from `initial`, doubling, capped at
    /// `max`.
    pub fn exponential(max_attempts: u32, initial: Duration, max: Duration) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            initial_backoff: initial,
            multiplier: 2.0,
            max_backoff: max,
            retry_on: None,
        }
    }

    /// Retries only errors of these kinds.
    pub fn on_kinds<I, S>(mut self, kinds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.retry_on = Some(kinds.into_iter().map(Into::into).collect());
        self
    }

    /// The delay before the attempt after `attempt` (1-based).
    ///
    /// Saturates, never panics: a product too large for a `Duration` (a huge initial delay, a
    /// large multiplier, many attempts) is `max_backoff`; a negative or NaN product (a
    /// negative or NaN multiplier) is zero.
    pub fn backoff_after(&self, attempt: u32) -> Duration {
        let exp = self
            .multiplier
            .powi(attempt.saturating_sub(1).min(64) as i32);
        let secs = self.initial_backoff.as_secs_f64() * exp;
        if secs.is_nan() || secs <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(secs)
            .unwrap_or(Duration::MAX)
            .min(self.max_backoff)
    }

    /// Whether a failed attempt number `attempt` with this error is retried.
    pub fn should_retry(&self, attempt: u32, error: &TaskError) -> bool {
        error.retryable
            && attempt < self.max_attempts
            && self
                .retry_on
                .as_ref()
                .is_none_or(|kinds| kinds.contains(&error.kind))
    }
}

impl Default for RetryPolicy {
    /// Three attempts, 100 ms doubling to at most 10 s.
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(100),
            multiplier: 2.0,
            max_backoff: Duration::from_secs(10),
            retry_on: None,
        }
    }
}

/// Options of one task call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TaskOptions {
    /// Retry policy.
    pub retry: RetryPolicy,
    /// Time limit of each attempt; an attempt past it fails with kind `timeout`.
    pub timeout: Option<Duration>,
}

impl TaskOptions {
    /// Sets the retry policy.
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
    /// Sets the per-attempt timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// Why a task attempt failed.
///
/// A `TaskError` is retryable unless made with [`TaskError::terminal`]: `?` on any
/// `std::error::Error` inside a task gives a retryable error, as transient failures are the
/// common case. `kind` is the outcome journaled for the attempt (`technical_error` by default;
/// the YAML front end uses the reference's error kinds).
#[derive(Debug, Clone, PartialEq)]
pub struct TaskError {
    /// The error kind: the outcome journaled in the `TaskResultRecord`.
    pub kind: String,
    /// A message for people.
    pub message: String,
    /// Data that goes with the failure (journaled as the output).
    pub output: Value,
    /// Whether another attempt may succeed.
    pub retryable: bool,
}

impl TaskError {
    /// The kind of a plain task failure.
    pub const TECHNICAL: &'static str = "technical_error";
    /// The kind of an attempt that ran past its timeout.
    pub const TIMEOUT: &'static str = "timeout";
    /// The kind of a step ended by cancellation of its run.
    pub const CANCELLED: &'static str = "cancelled";

    /// A failure that another attempt may not repeat.
    pub fn retryable(message: impl Into<String>) -> Self {
        Self {
            kind: Self::TECHNICAL.into(),
            message: message.into(),
            output: Value::Null,
            retryable: true,
        }
    }

    /// A failure that retrying cannot fix: the step fails at once.
    pub fn terminal(message: impl Into<String>) -> Self {
        Self {
            retryable: false,
            ..Self::retryable(message)
        }
    }

    /// Sets the error kind.
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = kind.into();
        self
    }

    /// Attaches data to the failure.
    pub fn with_output(mut self, output: Value) -> Self {
        self.output = output;
        self
    }

    /// Whether this error ends a step whose executions are used up: the processes running it
    /// stopped before its result more often than `maxClaimAttempts` allows (`[MAG-EN007]`,
    /// `[MAG-LS001]`). The step "fails terminally" (reference §12): a front end's retries do
    /// not run it again.
    pub fn is_executions_exhausted(&self) -> bool {
        self.kind == Self::TECHNICAL
            && (self.message.starts_with("[MAG-EN007]") || self.message.starts_with("[MAG-LS001]"))
    }

    /// Whether this error is the cancellation of the run.
    pub fn is_cancelled(&self) -> bool {
        self.kind == Self::CANCELLED
    }

    pub(crate) fn cancelled(reason: &str) -> Self {
        Self::terminal(format!("[MAG-CX001] run cancelled: {reason}")).with_kind(Self::CANCELLED)
    }
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// Any error fails the attempt retryably with its message and its sources (`context: cause`),
/// so the cause an error wraps (an I/O error under an application's own type) is not lost.
impl<E: std::error::Error + Send + Sync + 'static> From<E> for TaskError {
    fn from(e: E) -> Self {
        let mut message = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        TaskError::retryable(message)
    }
}

/// Values an application hands to its tasks (a database pool, an HTTP client), one per type.
///
/// Filled with [`EngineBuilder::data`](crate::EngineBuilder::data) and read in a task with
/// [`TaskContext::data`]. Cheap to clone: clones share the values.
#[derive(Clone, Default)]
pub struct AppData {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for AppData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppData")
            .field("values", &self.values.len())
            .finish()
    }
}

/// The engine's limit on one task attempt's output, in bytes of JSON
/// ([`EngineBuilder::max_task_output_bytes`](crate::EngineBuilder::max_task_output_bytes)).
/// The engine puts it in every task's [`TaskContext::data`]: an executor that reads an output
/// from outside (an HTTP body, a process's output) stops reading past it instead of holding
/// what the engine would refuse anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskOutputLimit(pub usize);

impl AppData {
    /// Adds `value`, replacing an earlier value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was added.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values.get(&TypeId::of::<T>())?.downcast_ref::<T>()
    }
}

/// What a running task attempt knows about itself.
#[derive(Debug, Clone)]
pub struct TaskContext {
    /// The run.
    pub run_id: RunId,
    /// The step.
    pub step: Step,
    /// The attempt, from 1.
    pub attempt: u32,
    /// The journaled label of the step (the YAML state, or the task name).
    pub name: String,
    data: AppData,
    /// The engine running the attempt, which journals its admission; none for a context a
    /// front end or a test built.
    engine: Option<EngineLink>,
}

/// The engine that runs an attempt, as its context holds it: weakly, so that a context kept
/// past its attempt keeps no engine alive.
#[derive(Clone)]
struct EngineLink(Weak<EngineInner>);

impl fmt::Debug for EngineLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("EngineLink")
    }
}

impl TaskContext {
    /// The context of attempt `attempt` of step `step` of run `run_id`, labelled `name`, with
    /// no application data (the engine builds these; front ends and tests may too).
    pub fn new(run_id: RunId, step: Step, attempt: u32, name: impl Into<String>) -> Self {
        Self {
            run_id,
            step,
            attempt,
            name: name.into(),
            data: AppData::default(),
            engine: None,
        }
    }

    /// The same context, its admission journaled by `engine`'s driver of the run.
    pub(crate) fn with_admission(mut self, engine: Weak<EngineInner>) -> Self {
        self.engine = Some(EngineLink(engine));
        self
    }

    /// The same context with the application's data.
    pub fn with_data(mut self, data: AppData) -> Self {
        self.data = data;
        self
    }

    /// The application's value of type `T`, registered with
    /// [`EngineBuilder::data`](crate::EngineBuilder::data); `None` if none was.
    ///
    /// ```
    /// # use magrathea_core::{AppData, RunId, TaskContext};
    /// struct Pool(&'static str);
    /// let mut data = AppData::default();
    /// data.insert(Pool("db"));
    /// let ctx = TaskContext::new(RunId::new(), 0, 1, "charge").with_data(data);
    /// assert_eq!(ctx.data::<Pool>().map(|p| p.0), Some("db"));
    /// assert!(ctx.data::<String>().is_none());
    /// ```
    pub fn data<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.data.get::<T>()
    }

    /// All of the application's data.
    pub fn app_data(&self) -> &AppData {
        &self.data
    }

    /// Waits for `admission` — a place to run that other attempts may hold, such as a slot of
    /// a concurrency limit — without the wait counting as an execution of the attempt.
    ///
    /// An attempt whose process stops before its result runs again on recovery, at most
    /// [`EngineBuilder::max_claim_attempts`](crate::EngineBuilder::max_claim_attempts) times
    /// in all; an attempt that waited the whole time never began, and should not use up one
    /// of those. So the wait is journaled (a `TaskQueuedRecord`) and so is its end (a
    /// `TaskAdmittedRecord`, durable before this returns): a process that stops in between
    /// leaves an attempt that runs again under the same execution number. Once this
    /// returns, the attempt counts as begun.
    ///
    /// Call it only when the place is not free at once (a place taken at once needs no
    /// record), and before the attempt's first side effect. A context the engine did not
    /// build (a test's) just waits.
    ///
    /// # Errors
    ///
    /// A retryable [`TaskError`] when the admission could not be made durable: the run no
    /// longer runs this attempt (it ended, or was cancelled) or its store failed. The attempt
    /// must not begin; return the error (its result is not journaled either).
    pub async fn wait_for_admission<T>(
        &self,
        admission: impl Future<Output = T>,
    ) -> Result<T, TaskError> {
        let Some(EngineLink(engine)) = &self.engine else {
            return Ok(admission.await);
        };
        let (step, attempt) = (self.step, self.attempt);
        let send = |event: Event| match engine.upgrade() {
            Some(engine) => engine.send_in_memory(self.run_id, event).is_ok(),
            None => false,
        };
        // Not awaited: without it, a stop while waiting only counts as an execution.
        send(Event::TaskQueued { step, attempt });
        let place = admission.await;
        let (reply, admitted) = oneshot::channel();
        if send(Event::TaskAdmitted {
            step,
            attempt,
            reply,
        }) && admitted.await.is_ok()
        {
            return Ok(place);
        }
        Err(TaskError::retryable(
            "the attempt's admission could not be journaled: its run no longer runs it, or \
             the engine is closing",
        ))
    }

    /// A key that is stable across re-executions of the same attempt after a crash:
    /// `<run_id>-<step>-<attempt>`. Pass it to external systems to dedupe side effects.
    pub fn idempotency_key(&self) -> String {
        format!("{}-{}-{}", self.run_id, self.step, self.attempt)
    }
}

/// The type-erased body of a registered task.
pub type TaskFn =
    Arc<dyn Fn(Value, TaskContext) -> BoxFuture<'static, Result<Value, TaskError>> + Send + Sync>;

/// A task registered with the engine under a name.
#[derive(Clone)]
pub struct TaskRegistration {
    /// The name workflows call it by.
    pub name: String,
    /// Default options for calls that do not give their own.
    pub options: TaskOptions,
    /// The body.
    pub body: TaskFn,
}

impl fmt::Debug for TaskRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskRegistration")
            .field("name", &self.name)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TaskRegistration {
    /// Registers a closure as a task.
    pub fn new<F, Fut>(name: impl Into<String>, options: TaskOptions, f: F) -> Self
    where
        F: Fn(Value, TaskContext) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, TaskError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            options,
            body: Arc::new(move |v, c| Box::pin(f(v, c))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_converted_keeps_the_causes_it_wraps() {
        #[derive(Debug, thiserror::Error)]
        #[error("charging the card")]
        struct Outer(#[source] std::io::Error);
        let e = TaskError::from(Outer(std::io::Error::other("disk on fire")));
        assert_eq!(e.message, "charging the card: disk on fire");
        assert!(e.retryable);
    }

    #[test]
    fn backoff_grows_and_caps() {
        let p = RetryPolicy::exponential(5, Duration::from_millis(100), Duration::from_millis(300));
        assert_eq!(p.backoff_after(1), Duration::from_millis(100));
        assert_eq!(p.backoff_after(2), Duration::from_millis(200));
        assert_eq!(p.backoff_after(3), Duration::from_millis(300));
    }

    #[test]
    fn huge_backoffs_and_many_attempts_saturate_at_max_backoff() {
        let huge = RetryPolicy {
            max_attempts: u32::MAX,
            initial_backoff: Duration::MAX,
            multiplier: 1e300,
            max_backoff: Duration::MAX,
            retry_on: None,
        };
        for attempt in [0, 1, 2, 64, 65, 1_000, u32::MAX] {
            assert_eq!(
                huge.backoff_after(attempt),
                Duration::MAX,
                "attempt {attempt}"
            );
        }
        let capped = RetryPolicy::exponential(
            u32::MAX,
            Duration::from_secs(u64::MAX / 2),
            Duration::from_secs(3600),
        );
        for attempt in [1, 2, 63, 64, 65, 10_000, u32::MAX] {
            assert_eq!(
                capped.backoff_after(attempt),
                Duration::from_secs(3600),
                "attempt {attempt}"
            );
        }
        // Doubling from 1 s for ever reaches the cap and stays there.
        let doubling =
            RetryPolicy::exponential(u32::MAX, Duration::from_secs(1), Duration::from_secs(60));
        assert_eq!(doubling.backoff_after(7), Duration::from_secs(60));
        assert_eq!(doubling.backoff_after(u32::MAX), Duration::from_secs(60));
        let mut previous = Duration::ZERO;
        for attempt in 1..200 {
            let d = doubling.backoff_after(attempt);
            assert!(d >= previous, "attempt {attempt}: {d:?} < {previous:?}");
            previous = d;
        }
    }

    #[test]
    fn nan_infinite_and_negative_multipliers_never_panic() {
        let with = |multiplier: f64| RetryPolicy {
            multiplier,
            max_backoff: Duration::MAX,
            ..RetryPolicy::exponential(10, Duration::from_secs(5), Duration::MAX)
        };
        assert_eq!(with(f64::NAN).backoff_after(3), Duration::ZERO);
        assert_eq!(with(-2.0).backoff_after(2), Duration::ZERO);
        assert_eq!(with(f64::INFINITY).backoff_after(2), Duration::MAX);
        assert_eq!(with(f64::INFINITY).backoff_after(1), Duration::from_secs(5));
        assert_eq!(with(0.0).backoff_after(2), Duration::ZERO);
        let zero = RetryPolicy {
            initial_backoff: Duration::ZERO,
            ..with(f64::INFINITY)
        };
        assert_eq!(zero.backoff_after(5), Duration::ZERO, "0 × ∞ is no delay");
    }

    #[test]
    fn max_attempts_counts_the_first_attempt() {
        let p = RetryPolicy::fixed(3, Duration::ZERO);
        let e = TaskError::retryable("x");
        assert!(p.should_retry(1, &e));
        assert!(p.should_retry(2, &e));
        assert!(!p.should_retry(3, &e));
        assert!(!p.should_retry(1, &TaskError::terminal("x")));
    }

    #[test]
    fn retry_on_filters_by_kind() {
        let p = RetryPolicy::fixed(3, Duration::ZERO).on_kinds(["timeout"]);
        assert!(p.should_retry(1, &TaskError::retryable("x").with_kind("timeout")));
        assert!(!p.should_retry(1, &TaskError::retryable("x")));
    }
}
