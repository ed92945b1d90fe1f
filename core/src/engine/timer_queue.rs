//! The timer service's queue: every pending durable timer of the process, in due order, in
//! 32 bytes each.
//!
//! A suspended run costs the process its timers and nothing else, so their representation sets
//! how many suspended runs fit in memory. The queue is one binary heap of packed entries (due
//! time, run id, step, purpose) with no index beside it; the two things an index was for are
//! done lazily instead:
//!
//! - **Duplicates.** Replaying a run registers its pending timers again, with the due times its
//!   journal holds, so a duplicate is an *equal* entry. Equal entries leave the heap one after
//!   the other, and [`TimerQueue::pop_due`] hands out one and drops the others. They also go at
//!   the next compaction. (A timer registered again *after* it was handed out is a new timer,
//!   as before: a run whose firing was not journaled needs it again.)
//! - **Forgetting an ended run.** [`TimerQueue::forget_run`] notes the run; its entries are
//!   skipped when they come due, and dropped at the next compaction, which also empties the
//!   note.
//!
//! A compaction (sort, drop duplicates and forgotten runs, rebuild the heap: O(n log n)) runs
//! when the heap has doubled since the last one or the forgotten runs outnumber half the
//! entries, so its cost per registration is amortised to O(log n), and neither duplicates nor
//! notes of forgotten runs can grow beyond a constant factor of the live timers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashSet;

use crate::id::RunId;
use crate::record::Step;
use crate::replay::TimerPurpose;

/// Below this many entries (or notes) the queue does not bother to compact.
const COMPACT_FLOOR: usize = 1024;

/// One pending timer. The run id is split into two `u64` so that the entry is 8-byte aligned
/// and 32 bytes long (a `u128` field would align it to 16 and make it 48). Ordered by due time
/// first, so that the heap's smallest entry is the next timer due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Due {
    /// When the timer is due, in ms since the Unix epoch.
    pub(crate) at_ms: u64,
    run_hi: u64,
    run_lo: u64,
    pub(crate) step: Step,
    pub(crate) purpose: TimerPurpose,
}

impl Due {
    pub(crate) fn new(at_ms: u64, run: RunId, step: Step, purpose: TimerPurpose) -> Self {
        let id = run.as_u128();
        Self {
            at_ms,
            run_hi: (id >> 64) as u64,
            run_lo: id as u64,
            step,
            purpose,
        }
    }

    fn run_u128(&self) -> u128 {
        (u128::from(self.run_hi) << 64) | u128::from(self.run_lo)
    }

    /// The run the timer belongs to.
    pub(crate) fn run(&self) -> RunId {
        RunId::from_u128(self.run_u128())
    }
}

/// The pending timers, in due order (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct TimerQueue {
    heap: BinaryHeap<Reverse<Due>>,
    /// Runs that ended: their entries still in the heap are not delivered.
    forgotten: FxHashSet<u128>,
    /// The heap's length after the last compaction.
    compacted_len: usize,
}

impl TimerQueue {
    /// Adds a timer. Registering an equal timer again is harmless: it is delivered once.
    pub(crate) fn push(&mut self, due: Due) {
        // A run forgotten earlier cannot have a timer now unless it was loaded again; keep the
        // new timer (a note only hides the entries pushed before it).
        if !self.forgotten.is_empty() && self.forgotten.contains(&due.run_u128()) {
            self.compact();
        }
        self.heap.push(Reverse(due));
        if self.heap.len() >= COMPACT_FLOOR.max(self.compacted_len.saturating_mul(2)) {
            self.compact();
        }
    }

    /// Forgets every pending timer of `run` (it ended).
    pub(crate) fn forget_run(&mut self, run: RunId) {
        if self.heap.is_empty() {
            return;
        }
        self.forgotten.insert(run.as_u128());
        if self.forgotten.len() >= COMPACT_FLOOR.max(self.heap.len() / 2) {
            self.compact();
        }
    }

    /// When the next timer to deliver is due.
    pub(crate) fn next_due(&mut self) -> Option<u64> {
        self.skip_dead();
        self.heap.peek().map(|Reverse(d)| d.at_ms)
    }

    /// Takes the next timer to deliver if it is due at `now_ms`.
    pub(crate) fn pop_due(&mut self, now_ms: u64) -> Option<Due> {
        self.skip_dead();
        match self.heap.peek() {
            Some(Reverse(d)) if d.at_ms <= now_ms => {
                let due = *d;
                // Its duplicates are next in line: they go with it.
                while self.heap.peek().is_some_and(|Reverse(d)| *d == due) {
                    self.heap.pop();
                }
                Some(due)
            }
            _ => None,
        }
    }

    /// Drops the timers of forgotten runs from the top of the heap.
    fn skip_dead(&mut self) {
        if self.forgotten.is_empty() {
            return;
        }
        while let Some(Reverse(d)) = self.heap.peek() {
            if !self.forgotten.contains(&d.run_u128()) {
                return;
            }
            self.heap.pop();
        }
    }

    /// Drops duplicates and the entries of forgotten runs, and the notes of those runs.
    fn compact(&mut self) {
        let forgotten = std::mem::take(&mut self.forgotten);
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.sort_unstable();
        entries.dedup();
        entries.retain(|Reverse(d)| !forgotten.contains(&d.run_u128()));
        entries.shrink_to(entries.len().saturating_mul(2));
        self.compacted_len = entries.len();
        self.heap = BinaryHeap::from(entries);
    }

    /// The number of distinct pending timers of runs not forgotten (O(n), for tests).
    #[cfg(test)]
    pub(crate) fn live_len(&self) -> usize {
        let mut live: Vec<Due> = self
            .heap
            .iter()
            .map(|Reverse(d)| *d)
            .filter(|d| !self.forgotten.contains(&d.run_u128()))
            .collect();
        live.sort_unstable();
        live.dedup();
        live.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn due(at: u64, run: RunId, step: Step) -> Due {
        Due::new(at, run, step, TimerPurpose::Sleep)
    }

    #[test]
    fn an_entry_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Reverse<Due>>(), 32);
    }

    #[test]
    fn timers_come_out_in_due_order_and_only_when_due() {
        let mut q = TimerQueue::default();
        let (a, b) = (RunId::new(), RunId::new());
        q.push(due(30, a, 0));
        q.push(due(10, b, 0));
        q.push(due(20, a, 1));
        assert_eq!(q.next_due(), Some(10));
        assert_eq!(q.pop_due(5), None, "nothing is due yet");
        assert_eq!(q.pop_due(25), Some(due(10, b, 0)));
        assert_eq!(q.pop_due(25), Some(due(20, a, 1)));
        assert_eq!(q.pop_due(25), None);
        assert_eq!(q.pop_due(30), Some(due(30, a, 0)));
        assert_eq!(q.next_due(), None);
    }

    #[test]
    fn a_timer_registered_twice_is_delivered_once() {
        let mut q = TimerQueue::default();
        let run = RunId::new();
        q.push(due(10, run, 3));
        q.push(due(10, run, 3));
        q.push(due(10, run, 3));
        assert_eq!(q.live_len(), 1);
        assert_eq!(q.pop_due(10), Some(due(10, run, 3)));
        assert_eq!(q.pop_due(10), None, "the duplicates went with it");
        // A run whose firing was not journaled (its commit failed) registers the timer again
        // when it is recovered: that is a new timer, delivered again.
        q.push(due(10, run, 3));
        assert_eq!(q.pop_due(10), Some(due(10, run, 3)));
    }

    #[test]
    fn a_forgotten_runs_timers_are_not_delivered_and_others_are() {
        let mut q = TimerQueue::default();
        let (ended, other) = (RunId::new(), RunId::new());
        q.push(due(10, ended, 0));
        q.push(due(20, other, 0));
        q.push(due(30, ended, 1));
        q.forget_run(ended);
        assert_eq!(q.live_len(), 1);
        assert_eq!(q.next_due(), Some(20));
        assert_eq!(q.pop_due(100), Some(due(20, other, 0)));
        assert_eq!(q.pop_due(100), None);
    }

    #[test]
    fn a_run_loaded_again_after_it_was_forgotten_keeps_its_new_timer() {
        let mut q = TimerQueue::default();
        let run = RunId::new();
        q.push(due(10, run, 0));
        q.forget_run(run);
        q.push(due(20, run, 1));
        assert_eq!(q.pop_due(100), Some(due(20, run, 1)));
        assert_eq!(q.pop_due(100), None);
    }

    #[test]
    fn duplicates_and_forgotten_runs_do_not_accumulate() {
        let mut q = TimerQueue::default();
        let runs: Vec<RunId> = (0..4 * COMPACT_FLOOR).map(|_| RunId::new()).collect();
        for (i, run) in runs.iter().enumerate() {
            // Every timer registered three times, as if its run were replayed twice.
            for _ in 0..3 {
                q.push(due(1_000 + i as u64, *run, 0));
            }
        }
        assert!(
            q.heap.len() < 2 * runs.len(),
            "duplicates were compacted away: {} entries for {} timers",
            q.heap.len(),
            runs.len()
        );
        for run in &runs {
            q.forget_run(*run);
        }
        assert!(
            q.forgotten.len() <= COMPACT_FLOOR,
            "notes are dropped with the entries"
        );
        assert_eq!(q.live_len(), 0);
        assert_eq!(q.next_due(), None);
    }
}
