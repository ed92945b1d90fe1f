//! Tick arithmetic on UTC milliseconds: the next tick, the ticks of a span, catching up after
//! a pause, and jitter.
//!
//! Finding the next tick of a `cron:` starts the wall-clock search at the instant read with
//! the smallest offset in force within six hours after it. That start is early enough: a
//! wall-clock time `N` that fires at `f > after` is `f` plus the offset at `f` (or, in a gap,
//! at least the shift plus the offset before it), and within six hours a zone changes its
//! offset at most once, so `N` is at or after `after` plus that smallest offset. The search
//! then skips the few times (those of a repeated hour) that fire at or before `after`. The
//! search backwards mirrors it with the largest offset.

use super::{Schedule, When, millis};

/// The ticks of a pause, split into those to fire and those too old to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct CatchUp {
    /// Ticks to fire, oldest first: those inside the catch-up window, and always the latest
    /// tick due. At most `max` of them; see [`CatchUp::fire_more`].
    pub fire: Vec<i64>,
    /// Ticks older than the window, oldest first, at most `max` of them: to be recorded as
    /// skipped, never fired.
    pub skipped: Vec<i64>,
    /// More ticks were skipped than `skipped` lists.
    pub skipped_more: bool,
    /// More ticks inside the window are due than `fire` holds: after firing these, call
    /// [`Schedule::catch_up`] again from the last of them.
    pub fire_more: bool,
}

impl CatchUp {
    /// The cursor to keep after firing [`CatchUp::fire`]: its last tick, else `cursor_ms`
    /// unchanged. Skipped ticks all lie before the first fired one.
    #[must_use]
    pub fn next_cursor(&self, cursor_ms: i64) -> i64 {
        self.fire.last().copied().unwrap_or(cursor_ms)
    }
}

impl Schedule {
    /// The first tick strictly after `after_ms`; `None` once a one-shot `at:` is past, or when
    /// a `cron:` never fires again.
    #[must_use]
    pub fn next_tick(&self, after_ms: i64) -> Option<i64> {
        match &self.when {
            When::At(at) => (*at > after_ms).then_some(*at),
            When::Cron(c) => c.next_after(after_ms),
        }
    }

    /// The ticks in `(from_ms, to_ms]`, ascending, at most `max`.
    #[must_use]
    pub fn ticks_between(&self, from_ms: i64, to_ms: i64, max: usize) -> Vec<i64> {
        let mut out = Vec::new();
        let mut cursor = from_ms;
        while out.len() < max {
            match self.next_tick(cursor) {
                Some(t) if t <= to_ms => {
                    out.push(t);
                    cursor = t;
                }
                _ => break,
            }
        }
        out
    }

    /// The delay of the tick at `tick_ms` of the schedule registered as `key`, in
    /// `[0, jitter)` milliseconds (0 without `jitter:`). A hash of `(key, tick_ms)`, so every
    /// worker and every restart computes the same delay for the same tick.
    #[must_use]
    pub fn jitter_ms(&self, key: &str, tick_ms: i64) -> i64 {
        let bound = millis(self.jitter);
        if bound <= 0 {
            return 0;
        }
        let h = stable_hash(key.as_bytes(), tick_ms);
        // `bound` is positive, so the remainder fits and is below it.
        i64::try_from(h % bound.unsigned_abs()).unwrap_or(0)
    }

    /// What to do with the ticks in `(cursor_ms, now_ms]` after the scheduler was away: those
    /// at or after `now_ms - catchupWindow` fire, in order; older ones are skipped. A tick's
    /// jitter and the scheduler's own delay ([`PASS_SLACK_MS`]) do not make it late: the
    /// window is measured from the latest time the tick could have been waited for.
    ///
    /// Work and memory are bounded by `max`, however long the pause: at most `max` ticks are
    /// listed to fire ([`CatchUp::fire_more`] says when more are due) and at most `max`
    /// skipped ones ([`CatchUp::skipped_more`]); the skipped ticks between are jumped over,
    /// never enumerated. Afterwards the cursor is [`CatchUp::next_cursor`].
    #[must_use]
    pub fn catch_up(&self, cursor_ms: i64, now_ms: i64, max: usize) -> CatchUp {
        let mut out = CatchUp::default();
        if now_ms <= cursor_ms || max == 0 {
            return out;
        }
        let late = millis(self.catchup_window)
            .saturating_add(millis(self.jitter))
            .saturating_add(PASS_SLACK_MS);
        let window_start = now_ms.saturating_sub(late);
        // Ticks at or after `window_start` (and after the cursor) fire.
        let fire_after = cursor_ms.max(window_start.saturating_sub(1));
        out.fire = self.ticks_between(fire_after, now_ms, max.saturating_add(1));
        if out.fire.len() > max {
            out.fire.truncate(max);
            out.fire_more = true;
        }
        // Ticks before the window are skipped.
        if window_start.saturating_sub(1) > cursor_ms {
            out.skipped = self.ticks_between(
                cursor_ms,
                window_start.saturating_sub(1),
                max.saturating_add(1),
            );
        }
        if out.skipped.len() > max {
            out.skipped.truncate(max);
            out.skipped_more = true;
        }
        out
    }
}

/// How late the scheduler may reach a tick without the tick counting as missed: it looks
/// every 100 ms, and a loaded machine delays it. A schedule with `catchupWindow: 0s` fires a
/// tick the scheduler reaches within this of its time (plus its jitter).
pub const PASS_SLACK_MS: i64 = 1_000;

/// FNV-1a over the key and the tick, then a splitmix64 finaliser to spread the bits: fixed
/// forever, unlike the standard library's hasher, whose algorithm may change between releases.
fn stable_hash(key: &[u8], tick_ms: i64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.iter().chain(tick_ms.to_le_bytes().iter()) {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h ^= h >> 30;
    h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^= h >> 27;
    h = h.wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_fixed() {
        // A changed hash would move every jittered tick of every deployed schedule.
        assert_eq!(stable_hash(b"", 0), 9_313_164_154_874_788_883);
        assert_eq!(
            stable_hash(b"acme/web/nightly", 1_780_000_000_000),
            9_525_616_877_283_393_602
        );
        assert_ne!(stable_hash(b"a", 0), stable_hash(b"a", 1));
        assert_ne!(stable_hash(b"a", 0), stable_hash(b"b", 0));
    }
}
