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
//! Each place also counts the journal bytes its run holds in memory, for
//! [`EngineBuilder::max_resident_bytes_per_tenant`]: the driver says how many it holds after
//! each commit, a parked run holds none, and a start that would take its tenant past the
//! bound is refused.
//!
//! [`EngineBuilder::max_active_runs_per_tenant`]: crate::EngineBuilder::max_active_runs_per_tenant
//! [`EngineBuilder::max_resident_bytes_per_tenant`]: crate::EngineBuilder::max_resident_bytes_per_tenant

use std::sync::atomic::{AtomicU64, Ordering};
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
    /// The journal bytes the counted runs in memory hold, by tenant (kept while it holds any
    /// run).
    bytes: FxHashMap<Box<str>, Arc<AtomicU64>>,
}

/// One run's place in its tenant's count, given back when dropped (with the driver that holds
/// it, however it leaves).
pub(crate) struct TenantSlot {
    runs: Arc<TenantRuns>,
    tenant: Box<str>,
    /// The tenant's bytes in memory, and this run's share of them.
    bytes: Arc<AtomicU64>,
    mine: u64,
}

/// Why a tenant gets no place for another run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// It holds as many runs as it may (how many).
    Runs(u32),
    /// Its runs in memory hold as many journal bytes as its runs may (how many).
    Bytes(u64),
}

/// The most a tenant may hold: runs, and journal bytes of its runs in memory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) runs: u32,
    pub(crate) bytes: u64,
}

impl Limits {
    /// No bound at all (a run that is in progress already).
    pub(crate) const NONE: Self = Self {
        runs: u32::MAX,
        bytes: u64::MAX,
    };
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
        let mut counts = self.lock();
        let tenant = counts.parked.remove(&run)?;
        let bytes = counts.bytes.entry(tenant.clone()).or_default().clone();
        Some(TenantSlot {
            runs: self.clone(),
            tenant,
            bytes,
            mine: 0,
        })
    }

    /// A place for one more run of `scope`'s tenant, whose start brings `incoming` journal
    /// bytes, if it stays within `limits`; otherwise what it is full of. `Ok(None)`: the run
    /// has no tenant and is not counted.
    pub(crate) fn admit(
        self: &Arc<Self>,
        scope: &RunScope,
        limits: Limits,
        incoming: u64,
    ) -> Result<Option<TenantSlot>, Full> {
        let Some(tenant) = tenant_of(scope) else {
            return Ok(None);
        };
        let mut counts = self.lock();
        let held = counts.held.get(tenant).copied().unwrap_or(0);
        if held >= limits.runs {
            return Err(Full::Runs(held));
        }
        let bytes = counts.bytes.entry(tenant.into()).or_default().clone();
        let resident = bytes.load(Ordering::Relaxed);
        if resident.saturating_add(incoming) > limits.bytes {
            if held == 0 {
                counts.bytes.remove(tenant);
            }
            return Err(Full::Bytes(resident));
        }
        counts.held.insert(tenant.into(), held + 1);
        // Held from now: starts made at once count each other's before their first commit.
        bytes.fetch_add(incoming, Ordering::Relaxed);
        Ok(Some(TenantSlot {
            runs: self.clone(),
            tenant: tenant.into(),
            bytes,
            mine: incoming,
        }))
    }

    /// A place for a run of `scope`'s tenant whatever the tenant holds (a run recovered after
    /// a restart, or taken over from another worker, is in memory already).
    pub(crate) fn join(self: &Arc<Self>, scope: &RunScope) -> Option<TenantSlot> {
        self.admit(scope, Limits::NONE, 0).ok().flatten()
    }

    /// The journal bytes `tenant`'s runs in memory hold.
    #[cfg(test)]
    pub(crate) fn resident(&self, tenant: &str) -> u64 {
        self.lock()
            .bytes
            .get(tenant)
            .map_or(0, |b| b.load(Ordering::Relaxed))
    }

    /// How many runs of `tenant` are counted.
    #[cfg(test)]
    pub(crate) fn held(&self, tenant: &str) -> u32 {
        self.lock().held.get(tenant).copied().unwrap_or(0)
    }
}

impl TenantSlot {
    /// Keeps the run counted while it waits out of memory (see the module docs); the bytes it
    /// held in memory are given back.
    pub(crate) fn park(mut self, run: RunId) {
        self.hold(0);
        let tenant = std::mem::take(&mut self.tenant);
        self.runs.lock().parked.insert(run, tenant);
        // `self` now holds no tenant: dropping it gives nothing back.
    }

    /// The run holds `bytes` of journal in memory now.
    pub(crate) fn hold(&mut self, bytes: u64) {
        if bytes > self.mine {
            self.bytes.fetch_add(bytes - self.mine, Ordering::Relaxed);
        } else if bytes < self.mine {
            self.bytes.fetch_sub(self.mine - bytes, Ordering::Relaxed);
        }
        self.mine = bytes;
    }
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        if self.tenant.is_empty() {
            return;
        }
        self.hold(0);
        let mut counts = self.runs.lock();
        if let Some(held) = counts.held.get_mut(&*self.tenant) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                counts.held.remove(&*self.tenant);
                counts.bytes.remove(&*self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_only(runs: u32) -> Limits {
        Limits {
            runs,
            bytes: u64::MAX,
        }
    }

    #[test]
    fn a_tenant_s_runs_in_memory_hold_at_most_its_bytes_and_a_parked_run_holds_none() {
        let runs = Arc::new(TenantRuns::default());
        let shop = RunScope::from("acme/shop");
        let limits = Limits {
            runs: 100,
            bytes: 1_000,
        };
        let mut a = runs.admit(&shop, limits, 600).unwrap().unwrap();
        assert_eq!(runs.resident("acme"), 600, "held from the admission on");
        a.hold(600);
        assert_eq!(runs.resident("acme"), 600);
        // 600 + 500 would pass the bound; 400 fits.
        assert_eq!(runs.admit(&shop, limits, 500).err(), Some(Full::Bytes(600)));
        let mut b = runs.admit(&shop, limits, 400).unwrap().unwrap();
        assert_eq!(runs.admit(&shop, limits, 1).err(), Some(Full::Bytes(1_000)));
        b.hold(400);
        assert_eq!(runs.admit(&shop, limits, 1).err(), Some(Full::Bytes(1_000)));
        // Another tenant has its own bytes.
        assert!(
            runs.admit(&RunScope::from("globex/shop"), limits, 900)
                .is_ok()
        );
        // A run that shrinks or waits out of memory gives its bytes back.
        a.hold(100);
        assert_eq!(runs.resident("acme"), 500);
        let run = RunId::new();
        a.park(run);
        assert_eq!(runs.resident("acme"), 400);
        assert_eq!(runs.held("acme"), 2, "the parked run is counted still");
        let mut a = runs.unpark(run).unwrap();
        a.hold(300);
        assert_eq!(runs.resident("acme"), 700);
        // A recovered run joins whatever the tenant holds.
        let mut c = runs.join(&shop).unwrap();
        c.hold(5_000);
        assert_eq!(runs.resident("acme"), 5_700);
        drop((a, b, c));
        assert_eq!(runs.resident("acme"), 0);
        assert_eq!(runs.held("acme"), 0);
    }

    #[test]
    fn a_tenant_holds_at_most_its_limit_and_each_ended_run_frees_a_place() {
        let runs = Arc::new(TenantRuns::default());
        let shop = RunScope::from("acme/shop");
        let blog = RunScope::from("acme/blog");
        let a = runs.admit(&shop, runs_only(2), 0).unwrap().unwrap();
        let b = runs.admit(&blog, runs_only(2), 0).unwrap().unwrap();
        // Two projects of one tenant share its count; another tenant has its own.
        assert_eq!(
            runs.admit(&shop, runs_only(2), 0).err(),
            Some(Full::Runs(2))
        );
        let other = runs
            .admit(&RunScope::from("globex/shop"), runs_only(2), 0)
            .unwrap();
        assert!(other.is_some());
        drop(a);
        assert_eq!(runs.held("acme"), 1);
        let c = runs.admit(&shop, runs_only(2), 0).unwrap();
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
        runs.admit(&shop, runs_only(1), 0)
            .unwrap()
            .unwrap()
            .park(run);
        assert_eq!(runs.held("acme"), 1, "a waiting run holds its place");
        assert_eq!(
            runs.admit(&shop, runs_only(1), 0).err(),
            Some(Full::Runs(1))
        );
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
        assert!(
            runs.admit(&RunScope::default(), Limits { runs: 0, bytes: 0 }, 0)
                .unwrap()
                .is_none()
        );
        assert_eq!(tenant_of(&RunScope::from("acme")), Some("acme"));
        assert_eq!(tenant_of(&RunScope::from("/x")), None);
    }
}
