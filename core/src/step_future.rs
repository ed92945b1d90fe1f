//! The future of one step, and the numbering of the polls of a run's code that tells a step
//! made complete in a poll (replay's shortcut) to show its completion from the next one.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskCx, Poll};

use crate::context::{Resolution, Shared, lock};
use crate::record::Step;

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
#[must_use = "a step does nothing unless awaited (it is journaled either way)"]
pub struct StepFuture<T> {
    /// The run's shared state, where the completion arrives; `None` for a step that was
    /// complete when it was made, which never looks there.
    shared: Option<Arc<Mutex<Shared>>>,
    step: Step,
    map: Option<Box<dyn FnOnce(Resolution) -> T + Send>>,
    /// The completion, with its journal seq, of a step that was complete when it was made
    /// (replay's shortcut, `Shared::task_from_journal`): it never goes through `resolved`.
    /// It shows from the code's next poll on, as a completion the driver delivers would: a
    /// step made in a poll never completes in that poll, live or replayed, and code that
    /// races futures by poll order (`futures::select`, the branches of a `join!`) must see
    /// the same order on replay.
    ready: Option<(u64, Resolution)>,
    /// The poll of the code the step was made in (see [`begin_poll`]), for a `ready` step.
    made_in: u64,
}

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
        shared: Arc<Mutex<Shared>>,
        step: Step,
        map: impl FnOnce(Resolution) -> T + Send + 'static,
    ) -> Self {
        Self {
            shared: Some(shared),
            step,
            map: Some(Box::new(map)),
            ready: None,
            made_in: 0,
        }
    }

    /// A step complete when it is made, with the seq of the record that completed it: its
    /// completion shows from the code's next poll on.
    pub(crate) fn complete(
        step: Step,
        seq: u64,
        resolution: Resolution,
        map: impl FnOnce(Resolution) -> T + Send + 'static,
    ) -> Self {
        Self {
            shared: None,
            step,
            map: Some(Box::new(map)),
            ready: Some((seq, resolution)),
            made_in: current_poll(),
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
        let inner = self.map.take();
        StepFuture {
            shared: self.shared.take(),
            step: self.step,
            map: inner
                .map(|m| Box::new(move |r| f(m(r))) as Box<dyn FnOnce(Resolution) -> U + Send>),
            ready: self.ready.take(),
            made_in: self.made_in,
        }
    }

    /// Whether the step was made complete in the poll the code is in: its completion shows
    /// from the next poll on.
    fn ready_later(&self) -> bool {
        self.ready.is_some() && self.made_in == current_poll()
    }

    pub(crate) fn resolved_seq(&self) -> Option<u64> {
        if let Some((seq, _)) = &self.ready {
            return (!self.ready_later()).then_some(*seq);
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
        if let Some((_, resolution)) = self.ready.take() {
            return match self.map.take() {
                Some(map) => Poll::Ready(map(resolution)),
                None => Poll::Pending,
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
            }
        }
    }
}
