//! [`NextCompleted`]: the first of several steps to complete, the others left pending.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskCx, Poll};

use crate::context::StepFuture;

/// The future of [`WorkflowContext::next_completed`](crate::WorkflowContext::next_completed).
#[must_use = "next_completed does nothing unless awaited"]
#[derive(Debug)]
pub struct NextCompleted<'a, T> {
    pub(crate) futures: &'a mut Vec<StepFuture<T>>,
}

impl<T> Future for NextCompleted<'_, T> {
    type Output = (usize, T);

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskCx<'_>) -> Poll<(usize, T)> {
        let winner = self
            .futures
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.resolved_seq().map(|seq| (seq, i)))
            .min()
            .map(|(_, i)| i);
        match winner {
            Some(i) => {
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
            None => {
                for f in self.futures.iter_mut() {
                    let _ = Pin::new(f).poll(cx);
                }
                Poll::Pending
            }
        }
    }
}
