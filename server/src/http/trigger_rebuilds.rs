//! Requests that rebuild a project's trigger registrations from its documents: a resync, and
//! the writes of trigger documents and settings, which resync the project.
//!
//! A resync reads and parses every trigger document of a project (a thousand schedules take
//! about half a second of a core). Run on the runtime's threads, one tenant's forty resyncs at
//! once held the server's two threads for seconds and every other tenant's requests waited
//! behind them (a webhook's sender gives up after ten seconds). They run off the runtime's
//! threads, at most [`PER_TENANT`] of one tenant and [`IN_ALL`] in all at a time, each tenant
//! in a queue of its own (`tenant_queues`); the rest wait (and leave the queue when
//! their client goes).

use crate::tenant_queues::{Place, TenantQueues};

/// Rebuilds of one tenant at a time.
pub const PER_TENANT: usize = 1;
/// Rebuilds at a time in all.
pub const IN_ALL: usize = 4;

/// The permits of trigger rebuilds (see the module docs).
#[derive(Debug)]
pub struct TriggerRebuilds(TenantQueues);

impl Default for TriggerRebuilds {
    fn default() -> Self {
        Self(TenantQueues::new(PER_TENANT, IN_ALL))
    }
}

/// Leave to rebuild registrations, held while the rebuild runs.
#[derive(Debug)]
pub struct RebuildPermit {
    _place: Place,
}

impl TriggerRebuilds {
    /// Waits until `tenant` may rebuild one more project's registrations; the permit is given
    /// back when dropped.
    pub async fn acquire(&self, tenant: &str) -> RebuildPermit {
        RebuildPermit {
            _place: self.0.acquire(tenant).await,
        }
    }
}
