//! The scheduler: fires each due tick of every active schedule once, in order.
//!
//! A schedule's progress is its *cursor* (catalog table `trigger.cursor`, by registration
//! id): the last tick handled (fired, skipped or buffered), the next fire time, the last run it
//! started and a buffered tick. A pass reads the cursor, asks the schedule which ticks lie
//! between it and now (see [`Schedule::catch_up`]), and handles them in order:
//!
//! 1. A tick whose run exists already (its idempotency key `schedule:{key}@{tick}` is taken)
//!    is that run: the process stopped after starting it and before moving the cursor.
//! 2. Otherwise the overlap policy looks at the last run: `skip` records the tick as skipped
//!    while it runs, `buffer_one` keeps one tick to start when it ends (a later one is
//!    skipped), `allow_all` starts anyway, `cancel_other` cancels it and starts.
//! 3. The run starts with the tick's idempotency key; its delivery is recorded (once per tick:
//!    the record's key is the tick's), then the cursor moves past the tick.
//!
//! Ticks older than the catch-up window (beyond their jitter and a second of slack) are
//! recorded as skipped
//! (`outside_catchup_window`). Jitter delays a tick's start by a fixed amount per tick. Inactive
//! schedules (disabled, paused, invalid) keep their cursor at now: resumed, they do not catch up
//! on what they missed. Cursors move by compare-and-swap, so workers sharing a PostgreSQL store
//! may run passes at once: the idempotency key and the tick's record make every tick one run
//! and one delivery whoever handles it.
//!
//! A pass handles the tenants side by side, each tenant's schedules one after another, and
//! fires at most [`TICKS_PER_TENANT_PER_PASS`] ticks of one tenant (its schedules taking turns
//! to go first from pass to pass): a tenant with many schedules due at once delays its own
//! ticks, never another tenant's.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use magrathea_core::{Catalog, RunId, StoreError};
use magrathea_yaml::Scope;
use magrathea_yaml::scheduler::{Overlap, Schedule};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::deliveries::{self, Delivery, DeliveryStatus};
use super::registry::{self, Registration, TriggerKind};
use super::{TriggerError, Triggers};
use crate::http::state::{AppState, Starter};

/// Registration id → [`Cursor`].
const CURSORS: &str = "trigger.cursor";

/// Most ticks handled per schedule and pass (the rest wait for the next pass).
const MAX_TICKS_PER_PASS: usize = 100;

/// How far the wall clock may step back behind a schedule's cursor and be waited out (no tick
/// fires twice for it); a longer step back restarts the schedule from the clock's time.
const CLOCK_BACK_WAITED_MS: i64 = 60_000;

/// Most ticks fired per tenant and pass, all its schedules together (the rest wait for the
/// next pass).
pub const TICKS_PER_TENANT_PER_PASS: usize = 50;

/// A schedule's progress, in the catalog.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Cursor {
    /// Ticks up to this instant (ms, UTC) are handled.
    pub cursor_ms: i64,
    /// The next tick's fire time (with its jitter), if there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_ms: Option<i64>,
    /// The last run the schedule started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<String>,
    /// The tick of that run (absent for a manual fire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_tick_ms: Option<i64>,
    /// A tick waiting for the last run to end (`overlap: buffer_one`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffered_ms: Option<i64>,
    /// When the schedule fires (`cron`, `at`, `timezone`) as the cursor knows it: a rewrite
    /// that changes it starts the schedule afresh (absent in cursors written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
}

/// What decides when `reg` fires: its `cron`, `at` and `timezone`.
pub(super) fn timing_of(reg: &Registration) -> String {
    serde_json::json!([reg.cron, reg.at, reg.timezone]).to_string()
}

/// The cursor of the schedule `id`.
pub fn cursor(catalog: &dyn Catalog, id: &str) -> Result<Option<Cursor>, StoreError> {
    Ok(catalog
        .get(CURSORS, id)?
        .and_then(|b| serde_json::from_slice(&b).ok()))
}

/// Forgets the cursor of the removed schedule `reg`. A tick that waited for the schedule's
/// last run (`overlap: buffer_one`) will not start: it is recorded as skipped, as when a
/// pause drops it.
pub(super) fn forget(catalog: &dyn Catalog, reg: &Registration) -> Result<(), StoreError> {
    if let Some(tick) = cursor(catalog, &reg.id)?.and_then(|c| c.buffered_ms) {
        let d = Delivery::new(reg, DeliveryStatus::Skipped, tick)
            .reason("trigger_deleted")
            .message(
                "the tick waited for the schedule's last run to end (overlap: buffer_one), and \
                 the schedule's document was removed meanwhile",
            );
        deliveries::record_tick(catalog, &d, tick)?;
    }
    catalog
        .delete(CURSORS, std::slice::from_ref(&reg.id))
        .map(drop)
}

/// Parsed schedules, by registration key and document digest.
#[derive(Debug, Default)]
pub(super) struct Memory {
    schedules: HashMap<String, (String, Arc<Schedule>)>,
    /// Passes made: which of a tenant's schedules goes first turns with it.
    passes: usize,
}

impl Memory {
    /// The parsed schedule of `reg`, reading its document when it changed.
    fn schedule(&mut self, state: &AppState, reg: &Registration) -> Option<Arc<Schedule>> {
        let key = reg.key();
        if let Some((digest, s)) = self.schedules.get(&key)
            && *digest == reg.digest
        {
            return Some(s.clone());
        }
        let (digest, schedule) = super::documents::load_schedule(state.docs(), reg)?;
        if digest != reg.digest {
            // Changed on disk since the registration: the next resync brings both together.
            return None;
        }
        let schedule = Arc::new(schedule);
        self.schedules.insert(key, (digest, schedule.clone()));
        Some(schedule)
    }
}

/// Stores `next` if the cursor still is `prev`; whether it did.
fn save(
    catalog: &dyn Catalog,
    id: &str,
    prev: &Option<Vec<u8>>,
    next: &Cursor,
) -> Result<Option<Vec<u8>>, StoreError> {
    let bytes = serde_json::to_vec(next).map_err(|e| StoreError::io(e.to_string()))?;
    if prev.as_deref() == Some(&bytes[..]) {
        return Ok(Some(bytes));
    }
    Ok(catalog
        .swap(CURSORS, id, prev.as_deref(), &bytes)?
        .then_some(bytes))
}

/// A schedule of a pass, with its cursor as stored.
type Due<'a> = (&'a Registration, Option<Vec<u8>>);

/// One pass over every schedule.
pub(super) async fn pass(
    triggers: &Triggers,
    state: &AppState,
    memory: &mut Memory,
) -> Result<(), TriggerError> {
    let catalog = triggers.catalog()?;
    let regs = registry::list_all(catalog)?;
    // Every cursor in one read: a pass costs the same few reads however many schedules run.
    let mut cursors: HashMap<String, Vec<u8>> = HashMap::new();
    magrathea_core::store::catalog::scan_all(catalog, CURSORS, "", 1000, |id, value| {
        cursors.insert(id, value);
        Ok(())
    })?;
    let mut by_tenant: BTreeMap<&str, Vec<Due<'_>>> = BTreeMap::new();
    for reg in regs.iter().filter(|r| r.kind == TriggerKind::Cron) {
        let raw = cursors.remove(&reg.id);
        by_tenant
            .entry(reg.tenant.as_str())
            .or_default()
            .push((reg, raw));
    }
    memory.passes = memory.passes.wrapping_add(1);
    let first = memory.passes;
    let memory = RefCell::new(memory);
    // The tenants side by side, each within its budget of ticks (see the module docs).
    futures::future::join_all(by_tenant.into_values().map(|mut schedules| {
        let memory = &memory;
        async move {
            let turn = first % schedules.len();
            schedules.rotate_left(turn);
            let budget = Cell::new(TICKS_PER_TENANT_PER_PASS);
            for (reg, raw) in schedules {
                if let Err(e) = pass_one(triggers, state, memory, reg, raw, &budget).await {
                    tracing::warn!(trigger = %reg.key(), error = %e, "a schedule's pass failed");
                }
            }
        }
    }))
    .await;
    // Parsed schedules of removed registrations go too.
    memory
        .borrow_mut()
        .schedules
        .retain(|k, _| regs.iter().any(|r| r.key() == *k));
    Ok(())
}

/// Handles the due ticks of one schedule, firing at most `budget` (which it lowers).
async fn pass_one(
    triggers: &Triggers,
    state: &AppState,
    memory: &RefCell<&mut Memory>,
    reg: &Registration,
    raw: Option<Vec<u8>>,
    budget: &Cell<usize>,
) -> Result<(), TriggerError> {
    let catalog = triggers.catalog()?;
    let now = triggers.now_ms();
    let Some(mut cur) = raw
        .as_deref()
        .and_then(|b| serde_json::from_slice::<Cursor>(b).ok())
    else {
        // A new schedule starts from now: it does not fire the ticks before it existed.
        let fresh = Cursor {
            cursor_ms: now,
            timing: Some(timing_of(reg)),
            ..Cursor::default()
        };
        save(catalog, &reg.id, &raw, &fresh)?;
        return Ok(());
    };
    let timing = timing_of(reg);
    match &cur.timing {
        // Rewritten to fire at other times: a new schedule, which does not fire the ticks
        // of its new times before it was written (the old times' were handled as they came).
        Some(known) if *known != timing => {
            let fresh = Cursor {
                cursor_ms: cur.cursor_ms.max(now),
                next_ms: None,
                buffered_ms: None,
                timing: Some(timing),
                ..cur.clone()
            };
            save(catalog, &reg.id, &raw, &fresh)?;
            return Ok(());
        }
        Some(_) => {}
        // A cursor from before its timing was kept: it takes the timing as it is now.
        None => cur.timing = Some(timing),
    }
    // The wall clock stepped back past ticks already handled (it ran ahead and was corrected):
    // the schedule goes on from the clock's time, so that it is not silent for as long as the
    // clock was wrong. The ticks handled ahead of time may fire again at their true times.
    if cur.cursor_ms > now.saturating_add(CLOCK_BACK_WAITED_MS) {
        tracing::warn!(
            trigger = %reg.key(),
            ahead_ms = cur.cursor_ms - now,
            "the wall clock went back behind the schedule's last tick: it goes on from now"
        );
        cur.cursor_ms = now;
        cur.next_ms = None;
    }
    let schedule = if reg.active {
        memory.borrow_mut().schedule(state, reg)
    } else {
        None
    };
    let Some(schedule) = schedule else {
        // Inactive: keep the cursor at now, so that resuming does not catch up. A tick that
        // waited for the last run (`buffer_one`) will not start: it is recorded as skipped.
        if let Some(tick) = cur.buffered_ms {
            let d = Delivery::new(reg, DeliveryStatus::Skipped, tick)
                .reason("trigger_disabled")
                .message(
                    "the tick waited for the schedule's last run to end (overlap: buffer_one), \
                     and the schedule was paused, disabled or made invalid meanwhile",
                );
            deliveries::record_tick(catalog, &d, tick)?;
        }
        if cur.cursor_ms < now || cur.next_ms.is_some() || cur.buffered_ms.is_some() {
            let next = Cursor {
                cursor_ms: cur.cursor_ms.max(now),
                next_ms: None,
                buffered_ms: None,
                ..cur.clone()
            };
            save(catalog, &reg.id, &raw, &next)?;
        }
        return Ok(());
    };
    let mut raw = raw;
    // A buffered tick starts once the run before it ended.
    if let Some(tick) = cur.buffered_ms
        && budget.get() > 0
        && !last_run_active(state, &cur)
    {
        budget.set(budget.get() - 1);
        cur.buffered_ms = None;
        fire_tick(triggers, state, reg, &schedule, &mut cur, tick, now, true).await?;
        match save(catalog, &reg.id, &raw, &cur)? {
            Some(bytes) => raw = Some(bytes),
            None => return Ok(()), // another worker moved it: its view wins
        }
    }
    let due = schedule.catch_up(cur.cursor_ms, now, MAX_TICKS_PER_PASS);
    for tick in &due.skipped {
        let d = Delivery::new(reg, DeliveryStatus::Skipped, *tick)
            .reason("outside_catchup_window")
            .message(
                "the tick is older than catchupWindow: it was missed while no process ran, or \
                 the tenant's schedules came due faster than a pass fires them",
            );
        deliveries::record_tick(catalog, &d, *tick)?;
        cur.cursor_ms = cur.cursor_ms.max(*tick);
    }
    if due.skipped_more {
        tracing::warn!(trigger = %reg.key(), "more ticks were missed than are recorded");
    }
    for tick in due.fire {
        let at = tick + schedule.jitter_ms(&reg.id, tick);
        if at > now || budget.get() == 0 {
            break;
        }
        budget.set(budget.get() - 1);
        fire_tick(triggers, state, reg, &schedule, &mut cur, tick, now, false).await?;
        cur.cursor_ms = tick;
        match save(catalog, &reg.id, &raw, &cur)? {
            Some(bytes) => raw = Some(bytes),
            None => return Ok(()),
        }
    }
    let next = schedule
        .next_tick(cur.cursor_ms)
        .map(|t| t + schedule.jitter_ms(&reg.id, t));
    if cur.next_ms != next {
        cur.next_ms = next;
    }
    save(catalog, &reg.id, &raw, &cur)?;
    Ok(())
}

/// Whether the schedule's last run is still going.
fn last_run_active(state: &AppState, cur: &Cursor) -> bool {
    let Some(run) = cur
        .last_run
        .as_deref()
        .and_then(|r| r.parse::<RunId>().ok())
    else {
        return false;
    };
    state.engine.status(run).is_ok_and(|s| !s.is_terminal())
}

/// The idempotency key of a tick.
fn tick_key(reg: &Registration, tick: i64) -> String {
    format!("schedule:{}@{tick}", reg.key())
}

/// Handles one due tick: see the module docs. `buffered`: the tick waited for the last run,
/// so the overlap policy has had its say.
#[allow(clippy::too_many_arguments)]
async fn fire_tick(
    triggers: &Triggers,
    state: &AppState,
    reg: &Registration,
    schedule: &Schedule,
    cur: &mut Cursor,
    tick: i64,
    now: i64,
    buffered: bool,
) -> Result<(), TriggerError> {
    let catalog = triggers.catalog()?;
    let key = tick_key(reg, tick);
    // 1. Started before a crash: that run is the tick's.
    if let Some(run) = state.engine.store().find_idempotency_key(&key)? {
        let d = Delivery::new(reg, DeliveryStatus::Accepted, tick).run(run);
        deliveries::record_tick(catalog, &d, tick)?;
        cur.last_run = Some(run.to_string());
        cur.last_tick_ms = Some(tick);
        return Ok(());
    }
    // 2. The overlap policy.
    if !buffered && last_run_active(state, cur) {
        let last = cur.last_run.clone().unwrap_or_default();
        match schedule.overlap() {
            Overlap::Skip => {
                let d = Delivery::new(reg, DeliveryStatus::Skipped, tick)
                    .reason("overlap")
                    .message(format!(
                        "run {last} of this schedule is still going (overlap: skip)"
                    ));
                deliveries::record_tick(catalog, &d, tick)?;
                return Ok(());
            }
            Overlap::BufferOne => {
                if cur.buffered_ms.is_none() {
                    cur.buffered_ms = Some(tick);
                } else {
                    let d = Delivery::new(reg, DeliveryStatus::Skipped, tick)
                        .reason("overlap")
                        .message(format!(
                            "run {last} of this schedule is still going and a tick already waits for it (overlap: buffer_one)"
                        ));
                    deliveries::record_tick(catalog, &d, tick)?;
                }
                return Ok(());
            }
            Overlap::AllowAll => {}
            _ => {
                if let Ok(run) = last.parse::<RunId>() {
                    let mut cancel = tokio::spawn(cancel_until_ended(state.engine.clone(), run));
                    // The cancel answers at once when this process or a live worker holds the
                    // run: the new run starts after the old one is cancelled. A worker that
                    // holds it and does not answer (killed, its lease not yet run out) takes
                    // tens of seconds each try: the pass, every tenant's ticks, goes on while
                    // the cancel is tried again in the background.
                    let _ = tokio::time::timeout(CANCEL_WAIT, &mut cancel).await;
                }
            }
        }
    }
    // 3. Start.
    let delivery = start(state, reg, schedule, &key, tick, now, None).await;
    if let Some(run) = &delivery.run_id {
        cur.last_run = Some(run.clone());
        cur.last_tick_ms = Some(tick);
    }
    deliveries::record_tick(catalog, &delivery, tick)?;
    Ok(())
}

/// How long a tick of `overlap: cancel_other` waits for the previous run's cancel before it
/// starts its own run anyway.
const CANCEL_WAIT: std::time::Duration = std::time::Duration::from_secs(1);
/// How long a cancel that is not answered is tried again: past the lease grace of the worker
/// that held the run, another worker has reclaimed it and answers.
const CANCEL_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(30 * 60);
/// The pause between two tries of an unanswered cancel.
const CANCEL_RETRY_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Cancels `run` for a newer tick of its schedule (`overlap: cancel_other`), trying again
/// while the cancel is not answered and the run has not ended, for at most
/// [`CANCEL_RETRY_FOR`].
async fn cancel_until_ended(engine: magrathea_core::Engine, run: RunId) {
    let since = std::time::Instant::now();
    loop {
        let reason = "cancelled by a newer tick of its schedule (overlap: cancel_other)";
        let Err(e) = engine.cancel(run, reason).await else {
            return;
        };
        if engine.status(run).map_or(true, |s| s.is_terminal()) {
            // It ended meanwhile: nothing is left to cancel.
            return;
        }
        if since.elapsed() >= CANCEL_RETRY_FOR {
            tracing::warn!(run = %run, error = %e, "could not cancel the schedule's previous run");
            return;
        }
        tracing::info!(run = %run, error = %e, "the schedule's previous run did not answer its cancel; trying again");
        tokio::time::sleep(CANCEL_RETRY_EVERY).await;
    }
}

/// Starts the schedule's workflow with `key`, as its `runAs`; a run fired by hand records who
/// fired it as `requestedBy`, a tick who wrote the schedule through the API (so a gate's
/// `selfApproval: false` refuses them too). The delivery that says how it went.
async fn start(
    state: &AppState,
    reg: &Registration,
    schedule: &Schedule,
    key: &str,
    tick: i64,
    now: i64,
    fired_by: Option<&str>,
) -> Delivery {
    let starter = Starter {
        started_by: schedule.run_as().to_owned(),
        requested_by: fired_by
            .map(str::to_owned)
            .or_else(|| reg.written_by.clone()),
        idempotency_key: Some(key.to_owned()),
    };
    let params = Value::Object(schedule.params().clone());
    let at = if tick > 0 { tick } else { now };
    match state
        .start_as(
            &reg.scope(),
            schedule.workflow(),
            params,
            &starter,
            "schedule",
        )
        .await
    {
        Ok((run, _)) => Delivery::new(reg, DeliveryStatus::Accepted, at).run(run),
        Err(e) => Delivery::start_refused(reg, at, e.code, &e.message),
    }
}

/// Fires a schedule now (`schedules trigger`): its workflow starts with a fresh key; the
/// overlap policy does not apply (an operator asked for it).
pub(super) async fn fire_manually(
    triggers: &Triggers,
    state: &AppState,
    memory: &mut Memory,
    scope: &Scope,
    name: &str,
    by: &str,
) -> Result<Result<Delivery, NotFired>, TriggerError> {
    let catalog = triggers.catalog()?;
    let key = registry::key_of(&scope.tenant, &scope.project, TriggerKind::Cron, name);
    let Some(reg) = registry::by_key(catalog, &key)? else {
        return Ok(Err(NotFired::Unknown(format!(
            "no schedule `{name}` in this project"
        ))));
    };
    if let Some(e) = &reg.error {
        return Ok(Err(NotFired::Unknown(format!(
            "the schedule `{name}` is invalid: {e}"
        ))));
    }
    if let Some(why) = switched_off(&reg) {
        return Ok(Err(NotFired::Off(why)));
    }
    let Some(schedule) = memory.schedule(state, &reg) else {
        return Ok(Err(NotFired::Unknown(format!(
            "the schedule `{name}` changed on disk; resync and try again"
        ))));
    };
    let now = triggers.now_ms();
    let key = format!(
        "schedule:{}@manual:{}",
        reg.key(),
        uuid::Uuid::now_v7().simple()
    );
    let mut d = start(state, &reg, &schedule, &key, 0, now, Some(by)).await;
    d.reason = Some("manual".into());
    // A refused start keeps its reason after who fired it (an archived workflow, …).
    d.message = Some(match d.message.take() {
        Some(why) if d.run_id.is_none() => format!("fired by {by}: {why}"),
        _ => format!("fired by {by}"),
    });
    deliveries::record(catalog, &d)?;
    if let Some(run) = &d.run_id {
        note_run(catalog, &reg.id, run, now)?;
    }
    Ok(Ok(d))
}

/// Why a schedule was not fired by hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotFired {
    /// No such schedule (or an invalid one, or one changed on disk meanwhile).
    Unknown(String),
    /// Its document says `enabled: false`, or an operator paused it: it fires nothing.
    Off(String),
}

impl std::fmt::Display for NotFired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotFired::Unknown(why) | NotFired::Off(why) => f.write_str(why),
        }
    }
}

/// Why `reg`, a schedule, fires nothing, by its ticks or by hand: its document switched it
/// off, or an operator paused it.
pub fn switched_off(reg: &Registration) -> Option<String> {
    if !reg.enabled_in_document {
        return Some(format!(
            "the schedule `{}` is switched off by its document (`enabled: false`): it fires \
             nothing, by hand either, until the document says otherwise",
            reg.name
        ));
    }
    reg.paused.then(|| {
        format!(
            "the schedule `{}` is paused by an operator: it fires nothing, by hand either; \
             resume it first (`magrathea schedules resume {}`, or `PATCH …/triggers/{}` with \
             {{\"enabled\": true}})",
            reg.name, reg.name, reg.name
        )
    })
}

/// Notes `run` as the schedule's last run (fired by hand: it has no tick).
pub(super) fn note_run(
    catalog: &dyn Catalog,
    id: &str,
    run: &str,
    now: i64,
) -> Result<(), StoreError> {
    // A scheduler pass may save the cursor in between (it moves on every tick): then read it
    // again and note the run on what the pass saved. Each lost race is a pass that just ran.
    for _ in 0..8 {
        let raw = catalog.get(CURSORS, id)?;
        let mut cur: Cursor = raw
            .as_deref()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Cursor {
                cursor_ms: now,
                ..Cursor::default()
            });
        cur.last_run = Some(run.to_owned());
        cur.last_tick_ms = None;
        if save(catalog, id, &raw, &cur)?.is_some() {
            return Ok(());
        }
    }
    Err(StoreError::io(
        "the schedule's cursor is contended; try again",
    ))
}
