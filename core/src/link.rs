//! What a run's code and its driver share, and how the code tells the driver it left work.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::Waker;

use crate::context::Shared;

/// What a run's code and its driver share: the state under a lock, and what the driver reads
/// after every poll without taking it.
pub(crate) struct Link {
    shared: Mutex<Shared>,
    /// Set, under the lock, when the code left the driver something there: a command, a patch
    /// conflict, a dropped step. The driver takes the lock after a poll only when it is set,
    /// and clears it under the lock.
    pub(crate) work: AtomicBool,
    /// While replaying: the index in the journal of the next record the driver applies. The
    /// driver sets it before it polls; replay's shortcut moves it past the records of the steps
    /// it completes (under the lock, see [`Shared::task_from_journal`]).
    pub(crate) replay_next: AtomicUsize,
    /// Wakes the driver, for work the code leaves outside the driver's poll of it.
    driver: OnceLock<Waker>,
}

impl Link {
    pub(crate) fn new(shared: Shared) -> Self {
        Self {
            shared: Mutex::new(shared),
            work: AtomicBool::new(false),
            replay_next: AtomicUsize::new(0),
            driver: OnceLock::new(),
        }
    }

    /// Sets the waker of the run's driver (once; later calls change nothing).
    pub(crate) fn set_driver(&self, waker: Waker) {
        let _ = self.driver.set(waker);
    }

    /// Marks work for the driver; call it under the lock. Inside the driver's poll of the code
    /// the driver looks after the poll; anywhere else (a clone of the context in a task of its
    /// own, a step future dropped there) the driver is woken, or it would not look until
    /// something else woke it.
    pub(crate) fn left_work(self: &Arc<Self>) {
        self.work.store(true, Ordering::Release);
        if !crate::engine::code_runs_here(self)
            && let Some(driver) = self.driver.get()
        {
            driver.wake_by_ref();
        }
    }
}

pub(crate) fn lock(link: &Link) -> MutexGuard<'_, Shared> {
    link.shared.lock().unwrap_or_else(|p| p.into_inner())
}
