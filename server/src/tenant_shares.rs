//! Places shared fairly between tenants by slots: at most so many of one tenant and so many in
//! all at once. Event and hook deliveries take theirs here (the hub keeps its waiting
//! deliveries by slot; requests wait in queues of their own tenant, [`crate::tenant_queues`]). A tenant takes its own turn first, so that one tenant's queue never holds
//! the shared places another tenant waits for. A tenant is kept apart by a slot of its own
//! among [`SLOTS`] (by its name's hash), so that the table never grows with the names a request
//! may carry; tenants whose names share a slot share its places.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Tenant slots.
pub(crate) const SLOTS: usize = 64;

/// The places of one kind of work (see the module docs).
#[derive(Debug)]
pub(crate) struct TenantShares {
    tenants: Vec<Arc<Semaphore>>,
    all: Arc<Semaphore>,
}

/// A place, held while the work runs and given back when dropped.
#[derive(Debug)]
pub(crate) struct Share {
    _tenant: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

impl TenantShares {
    /// At most `per_tenant` places of one tenant and `in_all` in all.
    pub(crate) fn new(per_tenant: usize, in_all: usize) -> Self {
        Self {
            tenants: (0..SLOTS)
                .map(|_| Arc::new(Semaphore::new(per_tenant)))
                .collect(),
            all: Arc::new(Semaphore::new(in_all)),
        }
    }

    /// The slot of `tenant`.
    pub(crate) fn slot(tenant: &str) -> usize {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        tenant.hash(&mut hasher);
        (hasher.finish() % SLOTS as u64) as usize
    }

    /// Waits for a place of the tenants of `slot`: theirs first, then one of all.
    pub(crate) async fn acquire_slot(&self, slot: usize) -> Share {
        let tenant = Arc::clone(&self.tenants[slot % SLOTS])
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        let all = Arc::clone(&self.all)
            .acquire_owned()
            .await
            .expect("the semaphore is never closed");
        Share {
            _tenant: tenant,
            _all: all,
        }
    }
}
