//! How many event and hook deliveries run at once, shared fairly between tenants.
//!
//! A delivery may run a hook script for up to its timeout (60 s at most). With one pool for
//! every tenant, one tenant's slow hooks took every place and the hub waited for one before
//! it read the next event: every other tenant's subscriptions and hooks stood still. Each
//! tenant now has places of its own: at most [`PER_TENANT`] of its deliveries run at once and
//! at most [`IN_ALL`] in all, and the hub never waits for a place: a delivery waits on its own
//! task. At most [`WAITING_PER_TENANT`] of one tenant wait or run; beyond that its deliveries
//! are refused, on record. The places are shared as [`crate::tenant_shares`] shares them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::tenant_shares::{SLOTS, Share, TenantShares};

/// Deliveries running at once in all.
pub(super) const IN_ALL: usize = 16;
/// Deliveries of one tenant running at once.
pub(super) const PER_TENANT: usize = 4;
/// Deliveries of one tenant waiting or running.
pub(super) const WAITING_PER_TENANT: usize = 1_000;

/// The places of deliveries (see the module docs).
#[derive(Debug)]
pub(super) struct DeliverySlots {
    running: Arc<TenantShares>,
    waiting: Vec<Arc<AtomicUsize>>,
}

impl Default for DeliverySlots {
    fn default() -> Self {
        Self {
            running: Arc::new(TenantShares::new(PER_TENANT, IN_ALL)),
            waiting: (0..SLOTS).map(|_| Arc::default()).collect(),
        }
    }
}

/// A delivery's place in its tenant's queue, given back when dropped.
#[derive(Debug)]
pub(super) struct Ticket {
    running: Arc<TenantShares>,
    slot: usize,
    waiting: Arc<AtomicUsize>,
}

/// Leave to run a delivery, held while it runs.
#[derive(Debug)]
pub(super) struct Running {
    _share: Share,
    _ticket: Ticket,
}

impl DeliverySlots {
    /// A place in `tenant`'s queue; `None` when as many of its deliveries wait or run as may.
    pub(super) fn enter(&self, tenant: &str) -> Option<Ticket> {
        let slot = TenantShares::slot(tenant);
        let waiting = &self.waiting[slot];
        if waiting.fetch_add(1, Ordering::AcqRel) >= WAITING_PER_TENANT {
            waiting.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Ticket {
            running: Arc::clone(&self.running),
            slot,
            waiting: Arc::clone(waiting),
        })
    }
}

impl Ticket {
    /// Waits until the delivery may run, within its tenant's share.
    pub(super) async fn run(self) -> Running {
        let share = self.running.acquire_slot(self.slot).await;
        Running {
            _share: share,
            _ticket: self,
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// One tenant runs at most its own places: another tenant's delivery runs meanwhile.
    #[tokio::test]
    async fn one_tenant_cannot_take_every_place() {
        let slots = DeliverySlots::default();
        let mut held = Vec::new();
        for _ in 0..PER_TENANT {
            held.push(slots.enter("acme").unwrap().run().await);
        }
        let more = slots.enter("acme").unwrap();
        assert!(
            tokio::time::timeout(Duration::from_millis(50), more.run())
                .await
                .is_err(),
            "a fifth delivery of acme waits"
        );
        let tenant = (0..1000)
            .map(|i| format!("tenant-{i}"))
            .find(|t| TenantShares::slot(t) != TenantShares::slot("acme"))
            .unwrap();
        let other = slots.enter(&tenant).unwrap();
        tokio::time::timeout(Duration::from_secs(5), other.run())
            .await
            .expect("another tenant's delivery runs while acme's places are taken");
    }

    #[test]
    fn a_tenant_waits_at_most_its_bound_and_a_place_comes_back() {
        let slots = DeliverySlots::default();
        let tickets: Vec<Ticket> = (0..WAITING_PER_TENANT)
            .map(|_| slots.enter("acme").unwrap())
            .collect();
        assert!(slots.enter("acme").is_none(), "one more is refused");
        drop(tickets);
        assert!(slots.enter("acme").is_some(), "places come back");
    }
}
