//! Synchronous calls into the store's own async runtime.

use std::future::Future;

use magrathea_core::StoreError;

/// A runtime of the store's own, on which its PostgreSQL client runs.
pub(crate) struct Bridge {
    /// `None` only while dropping.
    rt: Option<tokio::runtime::Runtime>,
}

impl Bridge {
    pub(crate) fn new() -> Result<Self, StoreError> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("magrathea-postgres")
            .enable_all()
            .build()?;
        Ok(Self { rt: Some(rt) })
    }

    /// Runs `f` on the store's runtime and waits for it. The caller's thread blocks (it may be
    /// a thread of another runtime: the wait does not use it), never the store's runtime.
    ///
    /// The wait is a plain channel, not a poll of the task's join handle: on a thread of
    /// another runtime, a join handle counts against that runtime's cooperative budget, which
    /// only a return to its scheduler refills, so a caller making many calls in one poll (a
    /// worker reclaiming hundreds of runs as it starts) would spin forever on an empty budget.
    pub(crate) fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let rt = self.rt.as_ref().ok_or(StoreError::Closed)?;
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        drop(rt.spawn(async move {
            // The caller waits for this send; it cannot be gone.
            let _ = tx.send(f.await);
        }));
        // The sender is dropped unsent only if the task panicked or the runtime shut down.
        rx.recv()
            .map_err(|_| StoreError::io("the store's task ended without an answer"))?
    }
}

impl Bridge {
    /// Runs `f` in the background on the store's runtime; it stops with the store.
    pub(crate) fn spawn<F>(&self, f: F) -> Result<(), StoreError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let rt = self.rt.as_ref().ok_or(StoreError::Closed)?;
        drop(rt.spawn(f));
        Ok(())
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        // A runtime dropped inside another runtime's context must not block.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
