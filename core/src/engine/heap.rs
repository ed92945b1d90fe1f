//! Returning freed heap memory to the operating system after a large run.
//!
//! A large run allocates a lot while it runs — task outputs, encoded records, replay state —
//! and frees it all when its driver leaves memory. glibc's allocator keeps freed memory in its
//! arenas for reuse rather than giving it back, so without help a process that once ran a
//! large run keeps that run's peak in its resident set for good. After the driver of a run
//! whose journal reached [`EngineBuilder::heap_trim_threshold`](crate::EngineBuilder::heap_trim_threshold)
//! leaves memory (the run ended, or was evicted while it waits), the engine asks glibc to
//! release its free pages (`malloc_trim(0)`).
//!
//! The trim runs on a blocking thread, never on the journal's hot path, and at most once per
//! [`MIN_INTERVAL`]: requests inside the interval coalesce into one trim at its end, so a
//! stream of large runs costs one trim per interval, and the last of them is always followed
//! by one. On targets without glibc there is nothing to trim and the request does nothing.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The least time between two trims.
pub(crate) const MIN_INTERVAL: Duration = Duration::from_secs(5);

/// Schedules heap trims; one per engine.
#[derive(Debug, Default)]
pub(crate) struct HeapTrimmer {
    /// A trim is scheduled and has not started yet.
    pending: AtomicBool,
    /// When the last trim ended.
    last: Mutex<Option<Instant>>,
    /// Trims done.
    trims: AtomicU64,
}

impl HeapTrimmer {
    /// Asks for a trim: now if none ran within [`MIN_INTERVAL`], else at the interval's end;
    /// nothing when one is already scheduled. Must be called on a tokio runtime.
    pub(crate) fn request(self: &Arc<Self>) {
        if self.pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let wait = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map_or(Duration::ZERO, |t| MIN_INTERVAL.saturating_sub(t.elapsed()));
        let this = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            // Cleared before the trim, so memory freed while it runs asks for another.
            this.pending.store(false, Ordering::Release);
            let _ = tokio::task::spawn_blocking(trim).await;
            *this.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(Instant::now());
            this.trims.fetch_add(1, Ordering::AcqRel);
        });
    }

    /// The number of trims done.
    #[cfg(test)]
    pub(crate) fn trims(&self) -> u64 {
        self.trims.load(Ordering::Acquire)
    }
}

/// Gives the allocator's free pages back to the operating system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() {
    // SAFETY: `malloc_trim` takes no pointers and only walks glibc's own arenas under their
    // locks; it is thread-safe and may be called at any time. Its result (whether memory was
    // released) needs no handling.
    let released = unsafe { libc::malloc_trim(0) };
    tracing::debug!(released = released != 0, "heap trimmed after a large run");
}

/// Other allocators return memory on their own terms; there is nothing to ask.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() {}

#[cfg(test)]
mod tests {
    use super::*;

    async fn until_trims(t: &HeapTrimmer, n: u64) {
        while t.trims() < n {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn requests_inside_the_interval_coalesce_into_one_trim_at_its_end() {
        let t = Arc::new(HeapTrimmer::default());
        for _ in 0..3 {
            t.request();
        }
        until_trims(&t, 1).await;
        for _ in 0..3 {
            t.request();
        }
        tokio::time::sleep(MIN_INTERVAL / 2).await;
        assert_eq!(t.trims(), 1, "no second trim inside the interval");
        until_trims(&t, 2).await;
        tokio::time::sleep(MIN_INTERVAL * 3).await;
        assert_eq!(
            t.trims(),
            2,
            "the requests inside the interval made one trim"
        );
    }
}
