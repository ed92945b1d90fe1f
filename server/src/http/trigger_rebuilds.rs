//! Requests that rebuild a project's trigger registrations from its documents: a resync, and
//! the writes of trigger documents and settings, which resync the project.
//!
//! A resync reads and parses every trigger document of a project (a thousand schedules take
//! about half a second of a core). Run on the runtime's threads, one tenant's forty resyncs at
//! once held the server's two threads for seconds and every other tenant's requests waited
//! behind them (a webhook's sender gives up after ten seconds). They run off the runtime's
//! threads, at most [`PER_TENANT`] of one tenant and [`IN_ALL`] in all at a time; the rest
//! wait (and leave the queue when their client goes), as whole-journal reads do
//! ([`super::journal_reads`]).

use crate::tenant_shares::{Share, TenantShares};

/// Rebuilds of one tenant at a time.
pub const PER_TENANT: usize = 1;
/// Rebuilds at a time in all.
pub const IN_ALL: usize = 4;

/// The permits of trigger rebuilds (see the module docs).
#[derive(Debug)]
pub struct TriggerRebuilds(TenantShares);

impl Default for TriggerRebuilds {
    fn default() -> Self {
        Self(TenantShares::new(PER_TENANT, IN_ALL))
    }
}

/// Leave to rebuild registrations, held while the rebuild runs.
#[derive(Debug)]
pub struct RebuildPermit {
    _share: Share,
}

impl TriggerRebuilds {
    /// Waits until `tenant` may rebuild one more project's registrations; the permit is given
    /// back when dropped.
    pub async fn acquire(&self, tenant: &str) -> RebuildPermit {
        RebuildPermit {
            _share: self.0.acquire(tenant).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One tenant's rebuilds queue behind each other, never another tenant's.
    #[tokio::test]
    async fn one_tenant_cannot_take_every_rebuild() {
        let rebuilds = TriggerRebuilds::default();
        let held = rebuilds.acquire("acme").await;
        let more = tokio::time::timeout(Duration::from_millis(100), rebuilds.acquire("acme")).await;
        assert!(more.is_err(), "a second rebuild of one tenant waits");
        let other = tokio::time::timeout(Duration::from_secs(5), rebuilds.acquire("globex")).await;
        assert!(other.is_ok(), "another tenant's rebuild goes ahead");
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(5), rebuilds.acquire("acme")).await;
        assert!(again.is_ok(), "a rebuild given back is taken again");
    }
}
