//! The task attempts a driver has running: the one it polls itself, and spawned ones.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use super::Driver;
use crate::context::StepMap;
use crate::engine::Event;
use crate::record::Step;
use crate::task::{TaskContext, TaskError};

/// Where a task attempt runs.
enum Running {
    /// In its own tokio task.
    Spawned(tokio::task::AbortHandle),
    /// Polled by the driver itself.
    Local,
}

/// The result of a task attempt.
type AttemptFuture = Pin<Box<dyn Future<Output = Result<Value, TaskError>> + Send>>;

/// An attempt the driver polls itself: step, attempt number, the attempt.
struct LocalAttempt {
    step: Step,
    attempt: u32,
    future: AttemptFuture,
}

/// The running attempts of one run.
#[derive(Default)]
pub(super) struct Attempts {
    running: StepMap<Running>,
    /// The attempt that runs inside the driver's own task.
    local: Option<LocalAttempt>,
}

impl Attempts {
    pub(super) fn is_empty(&self) -> bool {
        self.running.is_empty()
    }

    /// Whether an attempt of `step` runs.
    pub(super) fn runs(&self, step: Step) -> bool {
        self.running.contains_key(&step)
    }

    /// An attempt of `step` ended (its result reached the driver).
    pub(super) fn finished(&mut self, step: Step) {
        self.running.remove(&step);
    }

    /// The local attempt's step, attempt number and result, once it has one; pending forever
    /// while there is none.
    pub(super) async fn poll_local(&mut self) -> (Step, u32, Result<Value, TaskError>) {
        match &mut self.local {
            Some(l) => {
                let result = l.future.as_mut().await;
                let (step, attempt) = (l.step, l.attempt);
                self.local = None;
                (step, attempt, result)
            }
            None => std::future::pending().await,
        }
    }

    /// Stops every running attempt (spawned ones at their next await point).
    pub(super) fn abort_all(&mut self) {
        for running in self.running.values() {
            if let Running::Spawned(h) = running {
                h.abort();
            }
        }
        self.running.clear();
        self.local = None;
    }
}

impl Driver {
    /// Runs the current attempt of `step`.
    pub(super) fn execute(&mut self, step: Step) {
        if self.attempts.running.contains_key(&step) {
            return;
        }
        let Some((name, call, attempt)) = self.state.attempt(step) else {
            return;
        };
        // Only the body goes with the attempt (its name and options stay with the step).
        let body = self
            .engine
            .tasks
            .get(&call.task)
            .or(call.registration.as_ref())
            .map(|r| r.body.clone());
        let tctx = TaskContext::new(self.run_id, step, attempt, name)
            .with_data(self.engine.data.clone())
            .with_admission(std::sync::Arc::downgrade(&self.engine));
        let input = call.input.clone();
        let timeout = call.options.timeout;
        let task_name = call.task.clone();
        let max_output = self.engine.config.max_task_output_bytes;
        let span = tracing::info_span!(
            "task",
            run = %self.run_id,
            step,
            attempt,
            task = %task_name,
            name = %name
        );
        let attempt_future = async move {
            let result = match body {
                None => Err(TaskError::terminal(format!(
                    "[MAG-TK001] unknown task `{task_name}`: register it with EngineBuilder::task"
                ))),
                Some(run_body) => {
                    let body = crate::panic::CatchFuture(run_body(input, tctx));
                    let outcome = match timeout {
                        Some(t) => match tokio::time::timeout(t, body).await {
                            Ok(r) => r,
                            Err(_) => Ok(Err(TaskError::retryable(format!(
                                "attempt timed out after {} ms",
                                t.as_millis()
                            ))
                            .with_kind(TaskError::TIMEOUT))),
                        },
                        None => body.await,
                    };
                    outcome.unwrap_or_else(|panic| {
                        let at = panic
                            .location
                            .map(|l| format!(" at {l}"))
                            .unwrap_or_default();
                        Err(TaskError::retryable(format!(
                            "task panicked{at}: {}",
                            panic.message
                        )))
                    })
                }
            };
            let result = super::bounds::check_output(result, max_output);
            if let Err(e) = &result {
                tracing::debug!(kind = %e.kind, error = %e.message, "task attempt failed");
            }
            result
        };
        let attempt_future = tracing::Instrument::instrument(attempt_future, span);
        // The run's only running attempt is polled by the driver itself: a step then costs no
        // task spawn and no cross-task wake-up, which on a multi-threaded runtime also spares
        // waking a second worker to steal work. Further concurrent attempts (a fan-out) get
        // their own tasks so that they run in parallel.
        if self.attempts.local.is_none() && self.attempts.running.is_empty() {
            self.attempts.local = Some(LocalAttempt {
                step,
                attempt,
                future: Box::pin(attempt_future),
            });
            self.attempts.running.insert(step, Running::Local);
            return;
        }
        let engine = self.engine.clone();
        let run = self.run_id;
        let handle = tokio::spawn(async move {
            let result = attempt_future.await;
            engine.deliver(
                run,
                Event::TaskDone {
                    step,
                    attempt,
                    result,
                },
            );
        });
        self.attempts
            .running
            .insert(step, Running::Spawned(handle.abort_handle()));
    }
}
