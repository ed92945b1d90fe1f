//! A warning that a lasting failure repeats — a full disk fails every attempt to heal the
//! store, several times a second — logged at most once per interval, with how many were left
//! out: a log on the very disk that is full must not be flooded by the failure itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// At most one warning per interval; see [`LogThrottle::allow`].
#[derive(Debug)]
pub struct LogThrottle {
    every: Duration,
    epoch: Instant,
    /// When the last warning went out, in milliseconds since `epoch` plus one (0: never).
    last: AtomicU64,
    /// Warnings left out since the last one that went out.
    skipped: AtomicU64,
}

impl LogThrottle {
    /// A throttle letting one warning out per `every`.
    pub fn new(every: Duration) -> Self {
        Self {
            every,
            epoch: Instant::now(),
            last: AtomicU64::new(0),
            skipped: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when a warning may go out now (`n`: how many were left out since the last
    /// one, to say with it); `None` when it is to be left out.
    pub fn allow(&self) -> Option<u64> {
        let now = u64::try_from(self.epoch.elapsed().as_millis())
            .unwrap_or(u64::MAX - 1)
            .saturating_add(1);
        let last = self.last.load(Ordering::Acquire);
        let every = u64::try_from(self.every.as_millis()).unwrap_or(u64::MAX);
        let due = last == 0 || now.saturating_sub(last) >= every;
        if due
            && self
                .last
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        {
            return Some(self.skipped.swap(0, Ordering::AcqRel));
        }
        self.skipped.fetch_add(1, Ordering::AcqRel);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_warning_goes_out_and_the_next_within_the_interval_are_counted() {
        let throttle = LogThrottle::new(Duration::from_secs(3600));
        assert_eq!(throttle.allow(), Some(0));
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.skipped.load(Ordering::Acquire), 2);
    }

    #[test]
    fn after_the_interval_a_warning_goes_out_with_the_count_left_out() {
        let mut throttle = LogThrottle::new(Duration::from_secs(3600));
        assert_eq!(throttle.allow(), Some(0));
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.allow(), None);
        // The interval is over.
        throttle.every = Duration::ZERO;
        assert_eq!(throttle.allow(), Some(2));
        assert_eq!(throttle.allow(), Some(0));
    }
}
