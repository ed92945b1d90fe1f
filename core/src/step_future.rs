//! The future of one step, and the numbering of the polls of a run's code that tells a step
//! made complete in a poll (replay's shortcut) to show its completion from the next one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskCx, Poll};

use serde_json::Value;

use crate::context::{Link, Resolution, lock};
use crate::record::{Entry, Step};
use crate::task::TaskError;

thread_local! {
    /// The number of the poll of workflow code this thread is in (see [`begin_poll`]).
    static POLL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Called by the driver right before it polls a run's code: numbers the poll, so that a step
/// made complete during it can tell the poll it was made in from a later one. Drivers move
/// between threads, so another thread may reach the same number; a step then waits one poll
/// more, never less.
pub(crate) fn begin_poll() {
    POLL.with(|p| p.set(p.get().wrapping_add(1)));
}

fn current_poll() -> u64 {
    POLL.with(std::cell::Cell::get)
}

/// The future of one step. Resolves when the step's completion is delivered.
#[must_use = "a step is journaled and its work runs even if it is not awaited; only its result is lost"]
pub struct StepFuture<T> {
    /// The run's shared state, where the completion arrives; `None` for a step that was
    /// complete when it was made, which never looks there.
    shared: Option<Arc<Link>>,
    step: Step,
    map: Option<Box<dyn FnOnce(Resolution) -> T + Send>>,
    /// The completion of a step that was complete when it was made (replay's shortcut,
    /// `Shared::task_from_journal`): it never goes through `resolved`.
    ready: Option<Ready<T>>,
}

/// The completion a task step was made with, and when it shows. It shows from the code's
/// next poll on, as a completion the driver delivers would: a step made in a poll never
/// completes in that poll, live or replayed, and code that races futures by poll order
/// (`futures::select`, the branches of a `join!`) must see the same order on replay.
///
/// Kept small (an error is boxed): the code moves its step futures around by value.
struct Ready<T> {
    /// The journal seq of the record that completed the step.
    seq: u64,
    /// The poll of the code the step was made in (see [`begin_poll`]).
    made_in: u64,
    completion: TaskCompletion,
    /// Makes the output of the completion, for a future not mapped since it was made (a
    /// plain function: no box, no call through a vtable); `None` after [`StepFuture::map`],
    /// whose `map` takes the completion then.
    finish: Option<Finish<T>>,
}

/// The journaled completion of a task step, as a replayed step holds it.
pub(crate) type TaskCompletion = Result<Value, Box<TaskError>>;

/// Makes a completed step's output from its completion.
type Finish<T> = fn(TaskCompletion) -> T;

impl<T> fmt::Debug for StepFuture<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StepFuture")
            .field("step", &self.step)
            .finish()
    }
}

impl<T> StepFuture<T> {
    /// A step whose completion the driver delivers to `shared`.
    pub(crate) fn pending(
        shared: Arc<Link>,
        step: Step,
        map: impl FnOnce(Resolution) -> T + Send + 'static,
    ) -> Self {
        Self {
            shared: Some(shared),
            step,
            map: Some(Box::new(map)),
            ready: None,
        }
    }

    /// A task step complete when it is made, by the final result record `result` (replay's
    /// shortcut): its completion shows from the code's next poll on.
    #[inline]
    pub(crate) fn complete(step: Step, result: &Entry, finish: Finish<T>) -> Self {
        Self {
            shared: None,
            step,
            map: None,
            ready: Some(Ready {
                seq: result.seq,
                made_in: current_poll(),
                completion: crate::replay::task_completion(&result.record),
                finish: Some(finish),
            }),
        }
    }

    /// The step number.
    pub fn step(&self) -> Step {
        self.step
    }

    /// Maps the output, keeping the step (so the result can still take part in a select).
    pub fn map<U>(mut self, f: impl FnOnce(T) -> U + Send + 'static) -> StepFuture<U>
    where
        T: 'static,
    {
        let ready = self.ready.take();
        // A completed step's own output function moves into the boxed map, which the
        // completion goes to from now on.
        let inner = match (self.map.take(), ready.as_ref().and_then(|r| r.finish)) {
            (Some(m), _) => Some(m),
            (None, Some(finish)) => Some(Box::new(move |r: Resolution| {
                finish(crate::context::task_resolution(r).map_err(Box::new))
            }) as Box<dyn FnOnce(Resolution) -> T + Send>),
            (None, None) => None,
        };
        StepFuture {
            shared: self.shared.take(),
            step: self.step,
            map: inner
                .map(|m| Box::new(move |r| f(m(r))) as Box<dyn FnOnce(Resolution) -> U + Send>),
            ready: ready.map(|r| Ready {
                seq: r.seq,
                made_in: r.made_in,
                completion: r.completion,
                finish: None,
            }),
        }
    }

    /// Whether the step was made complete in the poll the code is in: its completion shows
    /// from the next poll on.
    fn ready_later(&self) -> bool {
        self.ready
            .as_ref()
            .is_some_and(|r| r.made_in == current_poll())
    }

    pub(crate) fn resolved_seq(&self) -> Option<u64> {
        if let Some(ready) = &self.ready {
            return (!self.ready_later()).then_some(ready.seq);
        }
        lock(self.shared.as_ref()?)
            .resolved
            .get(&self.step)
            .map(|(seq, _)| *seq)
    }
}

impl<T> Future for StepFuture<T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<T> {
        if self.ready_later() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if let Some(ready) = self.ready.take() {
            return match (ready.finish, self.map.take()) {
                (Some(finish), _) => Poll::Ready(finish(ready.completion)),
                (None, Some(map)) => {
                    Poll::Ready(map(Resolution::Task(ready.completion.map_err(|e| *e))))
                }
                (None, None) => Poll::Pending,
            };
        }
        let Some(shared) = &self.shared else {
            // Made complete, and its completion was taken already.
            return Poll::Pending;
        };
        let mut s = lock(shared);
        match s.resolved.remove(&self.step) {
            Some((_, resolution)) => {
                s.wakers.remove(&self.step);
                drop(s);
                match self.map.take() {
                    Some(map) => Poll::Ready(map(resolution)),
                    None => Poll::Pending,
                }
            }
            None => {
                s.wakers.insert(self.step, cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl<T> Drop for StepFuture<T> {
    fn drop(&mut self) {
        // A step complete when it was made has nothing in the shared state to clear.
        if self.map.is_some()
            && self.ready.is_none()
            && let Some(shared) = &self.shared
        {
            let mut s = lock(shared);
            s.wakers.remove(&self.step);
            if s.resolved.remove(&self.step).is_none() && s.dropped.insert(self.step) {
                s.newly_dropped.push(self.step);
                shared.left_work();
            }
        }
    }
}
