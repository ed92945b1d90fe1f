//! Requests that read whole journals, bounded: a run's view (`GET …/runs/{id}`, the replies
//! of cancel and answer, a page of the runs list), an inbox item or approval, a retry's search
//! for its state, and the inbox listing of finished runs; and the workflows listing, which
//! reads and validates every document of a project.
//!
//! A journal may hold up to the journal bound (256 MiB by default), read and decoded in one
//! piece; a token that may only read could otherwise ask for a long run's view from as many
//! connections as it likes and hold the server's threads and gigabytes of memory, and the
//! other tenants' requests wait behind it. The reads run off the runtime's threads, at most
//! [`PER_TENANT`] of one tenant and [`IN_ALL`] in all at a time; the rest wait (and leave the
//! queue when their client goes). Each tenant waits in a queue of its own
//! (`tenant_queues`), so no tenant waits behind another's reads.

use crate::tenant_queues::{Place, TenantQueues};

/// Whole-journal reads of one tenant at a time.
pub const PER_TENANT: usize = 2;
/// Whole-journal reads at a time in all.
pub const IN_ALL: usize = 4;

/// The permits of whole-journal reads (see the module docs).
#[derive(Debug)]
pub struct JournalReads(TenantQueues);

impl Default for JournalReads {
    fn default() -> Self {
        Self(TenantQueues::new(PER_TENANT, IN_ALL))
    }
}

/// Leave to read journals, held while the read runs.
#[derive(Debug)]
pub struct ReadPermit {
    _place: Place,
}

impl JournalReads {
    /// Waits until `tenant` may read one more journal; the permit is given back when dropped.
    /// The tenant's own turn comes first, so that one tenant's queue never holds the shared
    /// permits another tenant waits for.
    pub async fn acquire(&self, tenant: &str) -> ReadPermit {
        ReadPermit {
            _place: self.0.acquire(tenant).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One tenant holds at most its own permits: another tenant still reads meanwhile.
    #[tokio::test]
    async fn one_tenant_cannot_take_every_read() {
        let reads = JournalReads::default();
        let held: Vec<ReadPermit> =
            futures::future::join_all((0..PER_TENANT).map(|_| reads.acquire("acme"))).await;
        assert_eq!(held.len(), PER_TENANT);
        let more = tokio::time::timeout(Duration::from_millis(100), reads.acquire("acme")).await;
        assert!(more.is_err(), "a third read of one tenant waits");
        let other = tokio::time::timeout(Duration::from_secs(5), reads.acquire("globex")).await;
        assert!(other.is_ok(), "another tenant's read goes ahead");
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(5), reads.acquire("acme")).await;
        assert!(again.is_ok(), "a read given back is taken again");
    }
}
