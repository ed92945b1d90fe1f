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
    /// The wait is exempt from the cooperative budget of a runtime the caller may be on: only
    /// a return to that runtime's scheduler refills the budget, so a caller making many calls
    /// in one poll (a worker reclaiming hundreds of runs as it starts) would otherwise find the
    /// join handle pending, woken at once, for ever.
    pub(crate) fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let rt = self.rt.as_ref().ok_or(StoreError::Closed)?;
        futures::executor::block_on(tokio::task::unconstrained(rt.spawn(f)))
            .map_err(StoreError::io)?
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
