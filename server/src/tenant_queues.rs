//! Work shared fairly between tenants, each tenant in a queue of its own: at most so many of
//! one tenant and so many in all at once. A tenant takes its own turn first, so that one
//! tenant's queue never holds the places in all another tenant waits for. A tenant's queue is
//! kept only while some of its work runs or waits, so the table holds no more tenants than
//! there are requests in flight, whatever names the requests carry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The tenants' queues, by tenant.
type Queues = Arc<Mutex<HashMap<String, Arc<Semaphore>>>>;

/// The places of one kind of work (see the module docs).
#[derive(Debug)]
pub(crate) struct TenantQueues {
    tenants: Queues,
    per_tenant: usize,
    all: Arc<Semaphore>,
}

/// A place, held while the work runs and given back when dropped; dropping the last one of a
/// tenant (held or waited for) forgets the tenant's queue.
#[derive(Debug)]
pub(crate) struct Place {
    _all: OwnedSemaphorePermit,
    _tenant: OwnedSemaphorePermit,
    _queue: InQueue,
}

/// A tenant's hold on its queue, taken before its turn is awaited.
#[derive(Debug)]
struct InQueue {
    tenants: Queues,
    tenant: String,
    semaphore: Arc<Semaphore>,
}

impl Drop for InQueue {
    fn drop(&mut self) {
        let mut tenants = self.tenants.lock().unwrap_or_else(PoisonError::into_inner);
        // The table's reference and this one: nobody else holds or waits for the tenant's.
        if Arc::strong_count(&self.semaphore) == 2 {
            tenants.remove(&self.tenant);
        }
    }
}

impl TenantQueues {
    /// At most `per_tenant` places of one tenant and `in_all` in all.
    pub(crate) fn new(per_tenant: usize, in_all: usize) -> Self {
        Self {
            tenants: Queues::default(),
            per_tenant,
            all: Arc::new(Semaphore::new(in_all)),
        }
    }

    /// Waits for a place of `tenant`: its own turn first, then one of all.
    pub(crate) async fn acquire(&self, tenant: &str) -> Place {
        let semaphore = self
            .tenants
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(tenant.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_tenant)))
            .clone();
        let queue = InQueue {
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
        Place {
            _all: all,
            _tenant: own,
            _queue: queue,
        }
    }

    /// How many tenants have a queue.
    #[cfg(test)]
    pub(crate) fn tenants(&self) -> usize {
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

    /// One tenant's work queues behind its own, never another tenant's, whatever their names;
    /// a tenant with nothing running or waiting is forgotten; no more than the bound run in all.
    #[tokio::test]
    async fn a_tenant_waits_only_behind_itself_and_the_bound_in_all() {
        let queues = TenantQueues::new(1, 4);
        let held = queues.acquire("acme").await;
        let more = tokio::time::timeout(Duration::from_millis(100), queues.acquire("acme")).await;
        assert!(more.is_err(), "a second place of one tenant waits");
        for other in (0..200).map(|n| format!("tenant-{n}")) {
            let turn = tokio::time::timeout(Duration::from_secs(5), queues.acquire(&other)).await;
            assert!(turn.is_ok(), "{other} goes ahead of acme's queue");
        }
        drop(held);
        let again = tokio::time::timeout(Duration::from_secs(5), queues.acquire("acme")).await;
        assert!(again.is_ok(), "a place given back is taken again");
        drop(again);
        assert_eq!(queues.tenants(), 0);

        let mut held = Vec::new();
        for n in 0..4 {
            held.push(queues.acquire(&format!("t{n}")).await);
        }
        let more = tokio::time::timeout(Duration::from_millis(100), queues.acquire("other")).await;
        assert!(more.is_err(), "one more waits for a place in all");
        held.pop();
        let turn = tokio::time::timeout(Duration::from_secs(5), queues.acquire("other")).await;
        assert!(turn.is_ok());
    }
}
