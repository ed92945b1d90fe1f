//! How much `console` output of one tenant's scripts reaches the server's log.
//!
//! One execution writes at most 1,000 lines of 4 KiB; a workflow that loops through script
//! steps multiplies that without end, and the log (the operator's disk, and the threads that
//! write it) is shared by every tenant. Each tenant's scripts may write [`BYTES_PER_SECOND`]
//! on average, in bursts of up to [`BURST_BYTES`] (one execution's most); lines past that are
//! dropped, and the log says how many, at most once a second. Tenants are kept apart by a slot
//! of their own among [`SLOTS`] (by their name's hash), so that the table never grows.

use std::hash::{Hash, Hasher};
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Instant;

/// The average rate of one tenant's `console` output into the log.
pub(crate) const BYTES_PER_SECOND: f64 = 1024.0 * 1024.0;
/// The most one tenant may write at once after a quiet while.
pub(crate) const BURST_BYTES: f64 = 4.0 * 1024.0 * 1024.0;
/// Tenant slots: tenants whose names share a slot share its budget.
const SLOTS: usize = 64;

#[derive(Debug)]
struct Bucket {
    bytes: f64,
    at: Instant,
    dropped: u64,
    said_at: Option<Instant>,
}

static BUCKETS: LazyLock<Vec<Mutex<Bucket>>> = LazyLock::new(|| {
    (0..SLOTS)
        .map(|_| {
            Mutex::new(Bucket {
                bytes: BURST_BYTES,
                at: Instant::now(),
                dropped: 0,
                said_at: None,
            })
        })
        .collect()
});

/// What to do with a line of `len` bytes of `tenant`'s scripts.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    /// Write it.
    Write,
    /// Drop it.
    Drop,
    /// Drop it, and say that this many lines were dropped since it was last said.
    DropAndSay(u64),
}

/// Whether a line of `len` bytes of `tenant`'s scripts may be written now.
pub(crate) fn admit(tenant: &str, len: usize) -> Admit {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    tenant.hash(&mut hasher);
    let slot = (hasher.finish() % SLOTS as u64) as usize;
    let mut b = BUCKETS[slot].lock().unwrap_or_else(PoisonError::into_inner);
    take(&mut b, len as f64, Instant::now())
}

fn take(b: &mut Bucket, len: f64, now: Instant) -> Admit {
    let refill = now.saturating_duration_since(b.at).as_secs_f64() * BYTES_PER_SECOND;
    b.bytes = (b.bytes + refill).min(BURST_BYTES);
    b.at = now;
    if b.bytes >= len {
        b.bytes -= len;
        return Admit::Write;
    }
    b.dropped += 1;
    if b.said_at
        .is_none_or(|t| now.saturating_duration_since(t).as_secs_f64() >= 1.0)
    {
        b.said_at = Some(now);
        return Admit::DropAndSay(std::mem::take(&mut b.dropped));
    }
    Admit::Drop
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_passes_then_the_rate_holds_and_drops_are_said_once_a_second() {
        let t0 = Instant::now();
        let mut b = Bucket {
            bytes: BURST_BYTES,
            at: t0,
            dropped: 0,
            said_at: None,
        };
        let line = 4096.0;
        let burst = (BURST_BYTES / line) as usize;
        for _ in 0..burst {
            assert_eq!(take(&mut b, line, t0), Admit::Write);
        }
        assert_eq!(take(&mut b, line, t0), Admit::DropAndSay(1));
        assert_eq!(take(&mut b, line, t0), Admit::Drop);
        assert_eq!(take(&mut b, line, t0), Admit::Drop);
        // A second later: a second's worth is written, and the drops since are said.
        let t1 = t0 + Duration::from_secs(1);
        let per_second = (BYTES_PER_SECOND / line) as usize;
        for _ in 0..per_second {
            assert_eq!(take(&mut b, line, t1), Admit::Write);
        }
        assert_eq!(take(&mut b, line, t1), Admit::DropAndSay(3));
    }
}
