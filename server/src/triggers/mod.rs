//! Triggers: what starts runs on its own — the scheduler (reference §8.4), webhooks (Friday
//! §6.2), internal events and hooks (Friday §6.3, reference §8.5) — each delivery on record.
//!
//! Every trigger starts its run through the engine's idempotent start, with a key that names
//! the delivery (a schedule and its tick's instant, a webhook's dedupe key, an event's run and
//! journal position). A crash between "due" and "started" therefore never loses nor doubles a
//! run: after a restart the same delivery is made again and the key returns the run started
//! the first time, on redb and on PostgreSQL alike (where several workers may make it at once).
//!
//! The pieces:
//! - [`registry`]: registrations rebuilt from the documents, kept in the store's catalog.
//! - [`deliveries`]: the record of every delivery, with retention.
//! - `scheduler`: ticks, catch-up, overlap, jitter, against a [`Clock`].
//! - `hub`: the engine's run and approval events, event subscriptions and hook scripts.
//! - Webhook requests are served by the HTTP layer (`POST /v1/workflow-webhooks/{pathToken}`)
//!   with [`crate::webhook`] verifying them.
//!
//! [`Triggers::spawn`] runs them in the background of a server; `magrathea serve` and
//! [`Server`](crate::Server) do so.

mod clock;
pub mod dedupe;
pub mod deliveries;
mod delivery_slots;
pub(crate) mod documents;
mod hub;
mod open_gates;
pub mod registry;
mod resync_locks;
mod scheduler;

use std::sync::Arc;
use std::time::Duration;

use magrathea_core::{Catalog, SharedCatalog, StoreError};
use magrathea_yaml::Scope;
use tokio::sync::Notify;

pub use clock::{Clock, ManualClock, SystemClock};
pub use deliveries::{Delivery, DeliveryPage, DeliveryQuery, DeliveryStatus, Retention};
pub use documents::{
    check_event_document, check_hook_document, load_schedule, projects, scan_scope,
};
pub(crate) use documents::{load_webhook, parse_event, parse_event_at};
pub use registry::{Registration, Resynced, TriggerKind};
pub use scheduler::{Cursor, NotFired, TICKS_PER_TENANT_PER_PASS, cursor, switched_off};

use crate::http::state::AppState;

/// How often the documents are read again for changes made on disk (changes through the API
/// take effect at once).
pub const RESYNC_EVERY: Duration = Duration::from_secs(30);

/// How often the background loop looks for due ticks (and finished runs a buffered tick waits
/// for).
pub const POLL_EVERY: Duration = Duration::from_millis(100);

/// How often deliveries are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Configuration of the triggers.
#[derive(Debug, Clone)]
pub struct TriggerConfig {
    /// The clock schedules run on (default the system's).
    pub clock: Arc<dyn Clock>,
    /// How long and how many delivery records are kept.
    pub retention: Retention,
    /// Whether the background loop runs at all (default true). Without it nothing fires on
    /// its own; webhooks still answer.
    pub enabled: bool,
}

impl Default for TriggerConfig {
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            retention: Retention::default(),
            enabled: true,
        }
    }
}

/// Why a trigger operation failed.
#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    /// The store keeps no catalog (a custom [`Store`](magrathea_core::Store) without one).
    #[error("[MAG-TR001] the store keeps no catalog, so it cannot hold triggers")]
    NoCatalog,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The triggers of a server: shared by its handlers and its background loop.
#[derive(Debug)]
pub struct Triggers {
    catalog: Option<SharedCatalog>,
    config: TriggerConfig,
    /// Wakes the loop early (a resync, a manual fire).
    wake: Notify,
    /// Serialises passes of the loop with [`Triggers::tick`] calls.
    pass: tokio::sync::Mutex<scheduler::Memory>,
    /// Serialises the resyncs of each project: each scans the documents and their writers,
    /// then replaces the registrations, so a scan that began before a write cannot land
    /// after the write's own. Projects scan side by side: one tenant's resyncs (half a
    /// second each with a thousand documents) never queue another tenant's.
    scanning: resync_locks::ResyncLocks,
    /// Serialises the replacements of registrations, which claim webhook path tokens across
    /// projects and tenants (a quick step: an unchanged registration is only compared).
    resyncing: std::sync::Mutex<()>,
    /// Set when the server stops: the background loop and the hub end.
    stopped: std::sync::atomic::AtomicBool,
    /// Counts the changes this process made to the registrations (a resync, a pause): the
    /// hub reads them again at the next event after one, instead of keeping its copy.
    changes: std::sync::atomic::AtomicU64,
    /// The internal events, for live followers (`GET /v1/workflow-events`).
    events: tokio::sync::broadcast::Sender<Arc<HubEvent>>,
    /// The warnings of failed passes, which a failing store repeats at every pass.
    pass_warnings: magrathea_core::LogThrottle,
}

/// An internal event as the hub read it from the journal (see `docs/hooks.md` for its JSON).
#[derive(Debug, Clone)]
pub struct HubEvent {
    /// `workflow.run.failed`, `workflow.approval.requested`, ….
    pub name: &'static str,
    /// The run's tenant.
    pub tenant: String,
    /// The run's project.
    pub project: String,
    /// The event's JSON.
    pub body: serde_json::Value,
}

/// Events a live follower may fall behind by before it is told it missed some.
const EVENT_BUFFER: usize = 1024;

impl Triggers {
    /// Triggers over `catalog` (the engine's, see [`Engine::catalog`](magrathea_core::Engine::catalog)).
    pub fn new(catalog: Option<SharedCatalog>, config: TriggerConfig) -> Self {
        Self {
            catalog,
            config,
            wake: Notify::new(),
            pass: tokio::sync::Mutex::new(scheduler::Memory::default()),
            scanning: resync_locks::ResyncLocks::default(),
            resyncing: std::sync::Mutex::new(()),
            changes: std::sync::atomic::AtomicU64::new(0),
            stopped: std::sync::atomic::AtomicBool::new(false),
            pass_warnings: magrathea_core::LogThrottle::new(std::time::Duration::from_secs(10)),
            events: tokio::sync::broadcast::channel(EVENT_BUFFER).0,
        }
    }

    /// Follows the internal events of every tenant (the caller filters): run started,
    /// completed, failed, cancelled; approval requested, approved, rejected, expired.
    pub fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<Arc<HubEvent>> {
        self.events.subscribe()
    }

    /// Stops the background loop and the hub (the server stopped).
    pub fn stop(&self) {
        self.stopped
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.wake.notify_one();
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The catalog.
    pub fn catalog(&self) -> Result<&dyn Catalog, TriggerError> {
        self.catalog
            .as_ref()
            .map(|c| c as &dyn Catalog)
            .ok_or(TriggerError::NoCatalog)
    }

    /// The clock.
    pub fn clock(&self) -> &dyn Clock {
        self.config.clock.as_ref()
    }

    /// Now, by the triggers' clock.
    pub fn now_ms(&self) -> i64 {
        self.config.clock.now_ms()
    }

    /// The retention of deliveries.
    pub fn retention(&self) -> Retention {
        self.config.retention
    }

    /// Rebuilds a project's registrations from its documents.
    pub fn resync(&self, state: &AppState, scope: &Scope) -> Result<Resynced, TriggerError> {
        let catalog = self.catalog()?;
        let project = self.scanning.of(scope);
        let _this_project = project
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let regs = registry::scan_with_writers(state.docs(), catalog, scope)?;
        let report = {
            let _one_at_a_time = self
                .resyncing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            registry::replace_scope(catalog, scope, &regs)?
        };
        self.registrations_changed();
        Ok(report)
    }

    /// Says that this process changed the registrations (wrote, paused or resumed a trigger):
    /// the scheduler's loop wakes, and the next event is matched against the registrations as
    /// they are now, so a subscription written through the API hears the next event.
    pub fn registrations_changed(&self) {
        self.changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// How many changes [`Triggers::registrations_changed`] has counted.
    fn changes(&self) -> u64 {
        self.changes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Rebuilds every project's registrations, and drops those of projects that are gone.
    pub fn resync_all(&self, state: &AppState) -> Result<(), TriggerError> {
        let catalog = self.catalog()?;
        let mut seen: Vec<Scope> = Vec::new();
        for scope in documents::projects(state.root()) {
            self.resync(state, &scope)?;
            seen.push(scope);
        }
        registry::prune_webhook_reservations(catalog)?;
        for scope in registry::registered_scopes(catalog)? {
            if !seen
                .iter()
                .any(|s| s.tenant == scope.tenant && s.project == scope.project)
            {
                registry::replace_scope(catalog, &scope, &[])?;
            }
        }
        Ok(())
    }

    /// One pass of the background loop, now: fires what is due, starts buffered ticks whose
    /// previous run ended. For tests that move a [`ManualClock`].
    pub async fn tick(&self, state: &AppState) -> Result<(), TriggerError> {
        let mut memory = self.pass.lock().await;
        scheduler::pass(self, state, &mut memory).await
    }

    /// Fires the schedule `name` of `scope` now, outside its cron (`magrathea schedules
    /// trigger`, the API): the run and its delivery.
    pub async fn fire_now(
        &self,
        state: &AppState,
        scope: &Scope,
        name: &str,
        by: &str,
    ) -> Result<Result<Delivery, NotFired>, TriggerError> {
        let mut memory = self.pass.lock().await;
        scheduler::fire_manually(self, state, &mut memory, scope, name, by).await
    }

    /// One pass of the background loop: resyncs the documents when `resync`, fires due ticks,
    /// prunes deliveries when `prune`. Blocks on the store.
    fn pass(&self, state: &AppState, runtime: &tokio::runtime::Handle, resync: bool, prune: bool) {
        if resync && let Err(e) = self.resync_all(state) {
            tracing::warn!(error = %e, "could not read the trigger documents");
        }
        if let Err(e) = runtime.block_on(self.tick(state))
            && let Some(left_out) = self.pass_warnings.allow()
        {
            tracing::warn!(error = %e, left_out, "the scheduler's pass failed");
        }
        if prune && let Ok(catalog) = self.catalog() {
            let now_ms = self.now_ms();
            if let Err(e) = deliveries::prune(catalog, self.retention(), now_ms)
                .and_then(|_| dedupe::prune(catalog, now_ms))
            {
                tracing::warn!(error = %e, "could not prune trigger deliveries");
            }
        }
    }

    /// Runs the triggers in the background until the server stops: resyncs the documents at
    /// once and every [`RESYNC_EVERY`], fires due ticks, delivers internal events to
    /// subscriptions and hooks, prunes deliveries.
    pub fn spawn(self: &Arc<Self>, state: AppState) {
        if !self.config.enabled || self.catalog.is_none() {
            return;
        }
        hub::spawn(self.clone(), state.clone());
        // The documents' registrations exist before the server answers its first request (a
        // webhook posted right after the start finds its trigger).
        if let Err(e) = self.resync_all(&state) {
            tracing::warn!(error = %e, "could not read the trigger documents");
        }
        let triggers = self.clone();
        let runtime = tokio::runtime::Handle::current();
        tokio::spawn(async move {
            let mut last_resync = tokio::time::Instant::now();
            let mut last_prune: Option<tokio::time::Instant> = None;
            while !triggers.is_stopped() {
                let now = tokio::time::Instant::now();
                let resync = now.duration_since(last_resync) >= RESYNC_EVERY;
                let prune = last_prune.is_none_or(|t| now.duration_since(t) >= PRUNE_EVERY);
                // The pass reads and writes the store (a database that does not answer holds
                // it): off the runtime's threads, which serve requests meanwhile.
                let (t, st, rt) = (triggers.clone(), state.clone(), runtime.clone());
                let _ = tokio::task::spawn_blocking(move || t.pass(&st, &rt, resync, prune)).await;
                if resync {
                    last_resync = now;
                }
                if prune {
                    last_prune = Some(now);
                }
                let wake = async { triggers.wake.notified().await };
                let _ = tokio::time::timeout(POLL_EVERY, wake).await;
            }
        });
    }
}

/// The next `n` fire times (ms, UTC, with jitter) of an active schedule after its cursor (or
/// now, when it has none yet).
pub fn next_fire_times(
    state: &AppState,
    reg: &Registration,
    cursor: Option<&Cursor>,
    now_ms: i64,
    n: usize,
) -> Vec<i64> {
    next_fire_times_in(state.docs(), reg, cursor, now_ms, n)
}

/// [`next_fire_times`] from a document source.
pub fn next_fire_times_in(
    docs: &magrathea_yaml::DocumentSource,
    reg: &Registration,
    cursor: Option<&Cursor>,
    now_ms: i64,
    n: usize,
) -> Vec<i64> {
    let Some((_, schedule)) = documents::load_schedule(docs, reg) else {
        return Vec::new();
    };
    // As the scheduler will see it: a cursor of other times (the document was rewritten while
    // no scheduler ran) starts again from now, and ticks already past the catch-up window will
    // be skipped, not fired.
    let late = i64::try_from((schedule.catchup_window() + schedule.jitter()).as_millis())
        .unwrap_or(i64::MAX)
        .saturating_add(magrathea_yaml::scheduler::PASS_SLACK_MS);
    let timing = scheduler::timing_of(reg);
    let mut from = match cursor {
        Some(c) if c.timing.as_deref().is_none_or(|t| t == timing) => {
            c.cursor_ms.max(now_ms.saturating_sub(late))
        }
        _ => now_ms,
    };
    let mut out: Vec<i64> = Vec::new();
    while out.len() < n {
        let Some(tick) = schedule.next_tick(from) else {
            break;
        };
        // Ticks start in order: one whose jitter would put it before the tick ahead of it
        // starts with that one.
        let at = tick + schedule.jitter_ms(&reg.id, tick);
        out.push(out.last().map_or(at, |&before| at.max(before)));
        from = tick;
    }
    out
}

/// An instant (ms since the epoch) as RFC 3339 in UTC, e.g. `2026-12-01T06:00:00Z`.
pub fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

/// Notes a run fired by hand as the schedule's last (the overlap policy looks at it).
pub fn note_manual_run(
    catalog: &dyn Catalog,
    id: &str,
    run: &str,
    now_ms: i64,
) -> Result<(), StoreError> {
    scheduler::note_run(catalog, id, run, now_ms)
}
