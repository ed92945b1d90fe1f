//! Requests that rebuild a project's trigger registrations from its documents: a resync, and
//! the writes of trigger documents and settings, which resync the project.
//!
//! A resync reads and parses every trigger document of a project (a thousand schedules take
//! about half a second of a core). Run on the runtime's threads, one tenant's forty resyncs at
//! once held the server's two threads for seconds and every other tenant's requests waited
//! behind them (a webhook's sender gives up after ten seconds). They run off the runtime's
//! threads, at most [`PER_TENANT`] of one tenant and [`IN_ALL`] in all at a time; the rest
//! wait (and leave the queue when their client goes). Each tenant waits in a queue of its own,
//! kept only while one of its rebuilds runs or waits (tenants are those of the tree, which the
//! route has checked), so no tenant ever queues behind another's rebuilds.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Rebuilds of one tenant at a time.
pub const PER_TENANT: usize = 1;
/// Rebuilds at a time in all.
pub const IN_ALL: usize = 4;

/// The permits of trigger rebuilds (see the module docs).
#[derive(Debug)]
pub struct TriggerRebuilds {
    tenants: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    all: Arc<Semaphore>,
}

impl Default for TriggerRebuilds {
    fn default() -> Self {
        Self {
            tenants: Arc::default(),
            all: Arc::new(Semaphore::new(IN_ALL)),
        }
    }
}

/// Leave to rebuild registrations, held while the rebuild runs; dropping the last one of a
/// tenant (held or waited for) forgets the tenant's queue.
#[derive(Debug)]
pub struct RebuildPermit {
    _all: OwnedSemaphorePermit,
    _tenant: OwnedSemaphorePermit,
    _queue: TenantQueue,
}

/// A tenant's place in the table, taken before its turn is awaited.
#[derive(Debug)]
struct TenantQueue {
    tenants: Arc<Mutex<HashMap<String, Arc<Semaphore>>>>,
    tenant: String,
    semaphore: Arc<Semaphore>,
}

impl Drop for TenantQueue {
    fn drop(&mut self) {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        // The table's reference and this one: nobody else holds or waits for the tenant's.
        if Arc::strong_count(&self.semaphore) == 2 {
            tenants.remove(&self.tenant);
        }
    }
}

impl TriggerRebuilds {
    /// Waits until `tenant` may rebuild one more project's registrations: its own turn
    /// first, then one of all. The permit is given back when dropped.
    pub async fn acquire(&self, tenant: &str) -> RebuildPermit {
        let semaphore = self
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(tenant.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(PER_TENANT)))
            .clone();
        let queue = TenantQueue {
            tenants: Arc::clone(&self.tenants),
            tenant: tenant.to_owned(),
            semaphore: Arc::clone(&semaphore),
        };
        let own = semaphore
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let all = Arc::clone(&self.all)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        RebuildPermit {
            _all: all,
            _tenant: own,
            _queue: queue,
        }
    }

    #[cfg(test)]
    fn tenants(&self) -> usize {
        self.tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One tenant's rebuilds queue behind each other, never another tenant's, whatever their
    /// names; a tenant with nothing running or waiting is forgotten.
    #[tokio::test]
    async fn one_tenant_cannot_take_every_rebuild() {
        let rebuilds = TriggerRebuilds::default();
        let held = rebuilds.acquire("acme").await;
        let more = tokio::time::timeout(Duration::from_millis(100), rebuilds.acquire("acme")).await;
        assert!(more.is_err(), "a second rebuild of one tenant waits");
        for other in (0..200).map(|n| format!("tenant-{n}")) {
            let turn = tokio::time::timeout(Duration::from_secs(5), rebuilds.acquire(&other)).await;
            assert!(turn.is_ok(), "{other}'s rebuild goes ahead of acme's queue");
        }
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(5), rebuilds.acquire("acme")).await;
        assert!(again.is_ok(), "a rebuild given back is taken again");
        drop(again);
        assert_eq!(rebuilds.tenants(), 0);
    }

    /// No more than the bound in all run at once.
    #[tokio::test]
    async fn at_most_the_bound_run_in_all() {
        let rebuilds = TriggerRebuilds::default();
        let mut held = Vec::new();
        for n in 0..IN_ALL {
            held.push(rebuilds.acquire(&format!("t{n}")).await);
        }
        let more =
            tokio::time::timeout(Duration::from_millis(100), rebuilds.acquire("other")).await;
        assert!(more.is_err(), "one more waits for a place in all");
        held.pop();
        let turn = tokio::time::timeout(Duration::from_secs(5), rebuilds.acquire("other")).await;
        assert!(turn.is_ok());
    }
}
