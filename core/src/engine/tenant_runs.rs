//! The runs each tenant has in progress, counted so that one tenant cannot fill the engine
//! with runs ([`EngineBuilder::max_active_runs_per_tenant`]).
//!
//! A run's tenant is its scope's first part (`acme` of `acme/shop`); a run of no scope is not
//! counted. A run counts from its start (or its recovery) until it ends, the engine stops, or
//! another worker takes it over. Its place is held by its driver and given back when the
//! driver leaves memory, except when the run only waits (evicted until its timer or answer
//! comes): then the place is *parked* under the run's id and handed to the driver that
//! takes the run into memory again. Every other bound is a run's own or its tree's; this one
//! is what a tenant's token can start in all, top-level runs and sub-runs alike, however long
//! they wait. On a store several workers share, each worker counts the runs it holds.
//!
//! [`EngineBuilder::max_active_runs_per_tenant`]: crate::EngineBuilder::max_active_runs_per_tenant

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::RunScope;
use crate::id::RunId;

/// The runs in progress of each tenant.
#[derive(Default)]
pub(crate) struct TenantRuns {
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    /// Runs counted, by tenant.
    held: FxHashMap<Box<str>, u32>,
    /// The tenants of the counted runs that wait out of memory.
    parked: FxHashMap<RunId, Box<str>>,
}

/// One run's place in its tenant's count, given back when dropped (with the driver that holds
/// it, however it leaves).
pub(crate) struct TenantSlot {
    runs: Arc<TenantRuns>,
    tenant: Box<str>,
}

impl std::fmt::Debug for TenantSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("TenantSlot").field(&self.tenant).finish()
    }
}

/// The tenant of `scope`: the text before its first `/`, or `None` for a run of no scope.
pub(crate) fn tenant_of(scope: &RunScope) -> Option<&str> {
    let s = scope.as_str();
    let tenant = s.split_once('/').map_or(s, |(t, _)| t);
    (!tenant.is_empty()).then_some(tenant)
}

impl TenantRuns {
    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The place `run` held when it left memory to wait, if it did: counted still, and now
    /// held by whoever takes it (the driver that takes the run into memory again, or nobody
    /// when the run is no longer this engine's).
    pub(crate) fn unpark(self: &Arc<Self>, run: RunId) -> Option<TenantSlot> {
        let tenant = self.lock().parked.remove(&run)?;
        Some(TenantSlot {
            runs: self.clone(),
            tenant,
        })
    }

    /// A place for one more run of `scope`'s tenant if it holds fewer than `limit` runs;
    /// otherwise how many it holds. `Ok(None)`: the run has no tenant and is not counted.
    pub(crate) fn admit(
        self: &Arc<Self>,
        scope: &RunScope,
        limit: u32,
    ) -> Result<Option<TenantSlot>, u32> {
        let Some(tenant) = tenant_of(scope) else {
            return Ok(None);
        };
        let mut counts = self.lock();
        let held = counts.held.get(tenant).copied().unwrap_or(0);
        if held >= limit {
            return Err(held);
        }
        counts.held.insert(tenant.into(), held + 1);
        Ok(Some(TenantSlot {
            runs: self.clone(),
            tenant: tenant.into(),
        }))
    }

    /// A place for a run of `scope`'s tenant whatever the tenant holds (a run recovered after
    /// a restart, or taken over from another worker, is in memory already).
    pub(crate) fn join(self: &Arc<Self>, scope: &RunScope) -> Option<TenantSlot> {
        self.admit(scope, u32::MAX).ok().flatten()
    }

    /// How many runs of `tenant` are counted.
    #[cfg(test)]
    pub(crate) fn held(&self, tenant: &str) -> u32 {
        self.lock().held.get(tenant).copied().unwrap_or(0)
    }
}

impl TenantSlot {
    /// Keeps the run counted while it waits out of memory (see the module docs).
    pub(crate) fn park(mut self, run: RunId) {
        let tenant = std::mem::take(&mut self.tenant);
        self.runs.lock().parked.insert(run, tenant);
        // `self` now holds no tenant: dropping it gives nothing back.
    }
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        if self.tenant.is_empty() {
            return;
        }
        let mut counts = self.runs.lock();
        if let Some(held) = counts.held.get_mut(&*self.tenant) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                counts.held.remove(&*self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_holds_at_most_its_limit_and_each_ended_run_frees_a_place() {
        let runs = Arc::new(TenantRuns::default());
        let shop = RunScope::from("acme/shop");
        let blog = RunScope::from("acme/blog");
        let a = runs.admit(&shop, 2).unwrap().unwrap();
        let b = runs.admit(&blog, 2).unwrap().unwrap();
        // Two projects of one tenant share its count; another tenant has its own.
        assert_eq!(runs.admit(&shop, 2).err(), Some(2));
        let other = runs.admit(&RunScope::from("globex/shop"), 2).unwrap();
        assert!(other.is_some());
        drop(a);
        assert_eq!(runs.held("acme"), 1);
        let c = runs.admit(&shop, 2).unwrap();
        assert!(c.is_some());
        // A recovered run is counted beyond the limit.
        let d = runs.join(&shop);
        assert_eq!(runs.held("acme"), 3);
        drop((b, c, d, other));
        assert_eq!(runs.held("acme"), 0);
        assert_eq!(runs.held("globex"), 0);
    }

    #[test]
    fn a_parked_run_stays_counted_until_it_is_taken_up_and_ends() {
        let runs = Arc::new(TenantRuns::default());
        let shop = RunScope::from("acme/shop");
        let run = RunId::new();
        runs.admit(&shop, 1).unwrap().unwrap().park(run);
        assert_eq!(runs.held("acme"), 1, "a waiting run holds its place");
        assert_eq!(runs.admit(&shop, 1).err(), Some(1));
        assert!(
            runs.unpark(RunId::new()).is_none(),
            "only a parked run is unparked"
        );
        let slot = runs.unpark(run).expect("parked");
        assert_eq!(runs.held("acme"), 1, "taken up, still counted");
        assert!(runs.unpark(run).is_none(), "a place is taken up once");
        drop(slot);
        assert_eq!(runs.held("acme"), 0);
    }

    #[test]
    fn a_run_of_no_scope_is_not_counted() {
        let runs = Arc::new(TenantRuns::default());
        assert!(runs.admit(&RunScope::default(), 0).unwrap().is_none());
        assert_eq!(tenant_of(&RunScope::from("acme")), Some("acme"));
        assert_eq!(tenant_of(&RunScope::from("/x")), None);
    }
}
