//! Waiting on the first of several steps to complete, by journal order: [`Select`] (the
//! others are dropped) and [`NextCompleted`] (the others are left pending).
//!
//! Both pick the step whose completion has the lowest journal sequence number, so a replay,
//! which feeds completions in journal order, picks the same one as the live run did.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskCx, Poll};

use crate::step_future::StepFuture;

/// The future of [`WorkflowContext::select`](crate::WorkflowContext::select).
#[must_use = "a select does nothing unless awaited"]
#[derive(Debug)]
pub struct Select<T> {
    pub(crate) futures: Vec<StepFuture<T>>,
}

/// The future of [`WorkflowContext::next_completed`](crate::WorkflowContext::next_completed).
#[must_use = "next_completed does nothing unless awaited"]
#[derive(Debug)]
pub struct NextCompleted<'a, T> {
    pub(crate) futures: &'a mut Vec<StepFuture<T>>,
}

/// The index of the step completed first by journal order, if any completed; otherwise every
/// step is polled, so each registers the waker.
fn first_completed<T>(futures: &mut [StepFuture<T>], cx: &mut TaskCx<'_>) -> Option<usize> {
    let winner = futures
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.resolved_seq().map(|seq| (seq, i)))
        .min()
        .map(|(_, i)| i);
    if winner.is_none() {
        for f in futures.iter_mut() {
            let _ = Pin::new(f).poll(cx);
        }
    }
    winner
}

impl<T> Future for Select<T> {
    type Output = (usize, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<(usize, T)> {
        let Some(i) = first_completed(&mut self.futures, cx) else {
            return Poll::Pending;
        };
        let mut fut = self.futures.swap_remove(i);
        self.futures.clear();
        Pin::new(&mut fut).poll(cx).map(|v| (i, v))
    }
}

impl<T> Future for NextCompleted<'_, T> {
    type Output = (usize, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<(usize, T)> {
        let Some(i) = first_completed(self.futures, cx) else {
            return Poll::Pending;
        };
        let mut fut = self.futures.remove(i);
        match Pin::new(&mut fut).poll(cx) {
            Poll::Ready(v) => Poll::Ready((i, v)),
            // Unreachable: a resolved step is ready; keep it rather than drop it.
            Poll::Pending => {
                self.futures.insert(i, fut);
                Poll::Pending
            }
        }
    }
}
