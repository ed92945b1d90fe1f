//! A durable timer step (`sleep`, `sleep_until`): pending until its `TimerFiredRecord`.
//!
//! ```text
//! TimerSet ──▶ Pending { at } ──TimerFired──▶ Fired
//!                           └──CancelRequested──▶ Fired (resolved as cancelled)
//! ```

pub(crate) use crate::vocabulary::TimerPurpose;

/// A timer step's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimerStep {
    /// Waiting for its due time (ms since the epoch).
    Pending { at: u64 },
    /// Fired (or ended by cancellation).
    Fired,
}

impl TimerStep {
    pub(crate) fn due(self) -> Option<u64> {
        match self {
            TimerStep::Pending { at } => Some(at),
            TimerStep::Fired => None,
        }
    }

    pub(crate) fn is_resolved(self) -> bool {
        self == TimerStep::Fired
    }

    /// A `TimerSetRecord` (re)states the due time.
    pub(crate) fn set(&mut self, at: u64) {
        if let TimerStep::Pending { at: due } = self {
            *due = at;
        }
    }

    /// The timer fired: returns whether that resolves the step (a second firing does not).
    pub(crate) fn fire(&mut self) -> bool {
        std::mem::replace(self, TimerStep::Fired) != TimerStep::Fired
    }
}

/// The time `delay_ms` after `now_ms`, saturating: a delay too long to represent is a timer
/// that never fires in practice, never one that wraps around and fires at once.
pub(crate) fn due_after(now_ms: u64, delay_ms: u64) -> u64 {
    now_ms.saturating_add(delay_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_once() {
        let mut t = TimerStep::Pending { at: 10 };
        assert_eq!(t.due(), Some(10));
        t.set(12);
        assert_eq!(t.due(), Some(12));
        assert!(t.fire());
        assert!(t.is_resolved());
        assert!(!t.fire(), "a second firing resolves nothing");
        t.set(99);
        assert_eq!(t.due(), None, "a fired timer is not set again");
    }

    #[test]
    fn due_times_saturate() {
        assert_eq!(due_after(u64::MAX - 1, 10), u64::MAX);
        assert_eq!(due_after(5, 10), 15);
    }
}
