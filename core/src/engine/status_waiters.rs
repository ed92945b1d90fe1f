//! Wake-ups for the callers waiting on one run's status ([`Engine::wait`](crate::Engine::wait)
//! and its kin).
//!
//! Every status change is also broadcast to subscribers of all runs
//! ([`Engine::subscribe_status`](crate::Engine::subscribe_status)); a caller waiting on one run
//! through that channel would read every other run's changes too, so n callers waiting on n
//! runs cost n² receives. Each waited-on run has a [`Notify`] here instead, woken only by its
//! own changes, and removed when its last waiter leaves: the map holds the runs being waited
//! on, never more.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

use crate::id::RunId;

/// The runs being waited on, each with its wake-up and the number of its waiters.
#[derive(Debug, Default)]
pub(crate) struct StatusWaiters {
    runs: Mutex<HashMap<RunId, (Arc<Notify>, usize)>>,
}

impl StatusWaiters {
    fn lock(&self) -> MutexGuard<'_, HashMap<RunId, (Arc<Notify>, usize)>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a waiter on `run` until the returned guard is dropped.
    pub(crate) fn watch(&self, run: RunId) -> Watch<'_> {
        let mut runs = self.lock();
        let (notify, waiters) = runs.entry(run).or_default();
        *waiters += 1;
        Watch {
            waiters: self,
            run,
            notify: notify.clone(),
        }
    }

    /// Wakes the waiters on `run` (its status changed).
    pub(crate) fn notify(&self, run: RunId) {
        let notify = self.lock().get(&run).map(|(n, _)| n.clone());
        if let Some(n) = notify {
            n.notify_waiters();
        }
    }

    /// Wakes every waiter, on every run: the engine is stopping, and their runs will not
    /// change here any more.
    pub(crate) fn notify_all(&self) {
        let all: Vec<Arc<Notify>> = self.lock().values().map(|(n, _)| n.clone()).collect();
        for n in all {
            n.notify_waiters();
        }
    }

    /// The runs being waited on.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// A waiter on one run; see [`StatusWaiters::watch`].
#[derive(Debug)]
pub(crate) struct Watch<'a> {
    waiters: &'a StatusWaiters,
    run: RunId,
    /// Woken by every status change of the run.
    pub(crate) notify: Arc<Notify>,
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let mut runs = self.waiters.lock();
        if let Some((_, waiters)) = runs.get_mut(&self.run) {
            *waiters -= 1;
            if *waiters == 0 {
                runs.remove(&self.run);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_change_wakes_the_waiters_on_its_run_only() {
        let waiters = StatusWaiters::default();
        let (a, b) = (RunId::new(), RunId::new());
        let (wa, wb) = (waiters.watch(a), waiters.watch(b));
        let (na, nb) = (wa.notify.notified(), wb.notify.notified());
        tokio::pin!(na, nb);
        na.as_mut().enable();
        nb.as_mut().enable();
        waiters.notify(a);
        tokio::time::timeout(Duration::from_secs(5), na)
            .await
            .expect("the waiter on the changed run is woken");
        assert!(
            tokio::time::timeout(Duration::from_millis(50), nb)
                .await
                .is_err(),
            "the waiter on another run sleeps on"
        );
    }

    #[test]
    fn a_run_leaves_the_map_with_its_last_waiter() {
        let waiters = StatusWaiters::default();
        let run = RunId::new();
        let first = waiters.watch(run);
        let second = waiters.watch(run);
        assert!(Arc::ptr_eq(&first.notify, &second.notify));
        drop(first);
        assert_eq!(waiters.len(), 1);
        drop(second);
        assert_eq!(waiters.len(), 0);
        waiters.notify(run);
        assert_eq!(
            waiters.len(),
            0,
            "a change of a run nobody waits on adds nothing"
        );
    }
}
