//! The internal event hub (Friday §6.3): the engine's run and approval events, delivered to
//! event subscriptions (event documents with `subscribe:`) and hook scripts (reference §8.5).
//!
//! Events are read from the journal as it is committed, so an event is never announced before
//! it is durable:
//!
//! | event | record |
//! |-------|--------|
//! | `workflow.run.started` | `StartRecord` |
//! | `workflow.run.completed` / `failed` / `cancelled` | `StatusRecord` DONE / FAILED / CANCELLED |
//! | `workflow.run.paused` / `resumed` | `PauseRequestedRecord` / `ResumeRequestedRecord` |
//! | `workflow.approval.requested` | `GateOpenedRecord` of an approval gate, or of the DECISION of `onFailure: pause_for_approval` |
//! | `workflow.approval.approved` / `rejected` | its `GateAnsweredRecord` |
//! | `workflow.approval.expired` | the `TimerFiredRecord` of its timeout |
//!
//! A subscription or hook sees the events of runs of its own project only (never another
//! project's, never another tenant's), and never those of runs it started itself (a
//! subscription to `workflow.run.failed` whose workflow fails does not start itself again).
//! Each start's idempotency key names the event (`event:{trigger}:{run}:{seq}`), so an event
//! seen twice starts one run. A start continues the trigger chain of the run whose event it
//! reacts to, and a chain is bounded (see [`chain`]): triggers reacting to each other's runs
//! stop instead of starting runs for ever.
//!
//! Delivery is by the process that commits the record. Events committed while a process
//! stops and before it announced them are not delivered again after a restart.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use magrathea_core::{
    Entry, GateKind, GateSpec, JournalUpdate, Record, RunId, RunStatus, StartRecord,
};
use magrathea_exec::{HookHost, HookLogLevel, HookScript, run_hook};
use magrathea_yaml::Scope;
use serde_json::{Map, Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::Triggers;
use super::deliveries::{self, Delivery, DeliveryStatus};
use super::delivery_slots::DeliverySlots;
use super::documents::{self, Hook, Subscription};
use super::open_gates::{Known, OpenGates};
use super::registry::{self, Registration, TriggerKind};
use crate::http::state::{AppState, Starter};
use magrathea_yaml::runtime::chain;

/// An internal event: its name and its JSON.
#[derive(Debug, Clone)]
struct Event {
    name: &'static str,
    run: RunId,
    seq: u64,
    tenant: String,
    project: String,
    started_by: String,
    /// The trigger chain the run belongs to (see [`chain`]).
    chain: chain::Link,
    body: Value,
}

/// Parsed subscriptions and hooks, by registration key and digest.
#[derive(Default)]
struct Memory {
    subscriptions: HashMap<String, (String, Arc<Subscription>)>,
    hooks: HashMap<String, (String, Arc<Hook>)>,
}

/// How long the hub's copy of the registrations is used before it reads them again (other
/// processes on the store, `magrathea schedules`); this process's own changes are seen at once.
const REGISTRATIONS_FRESH: Duration = Duration::from_millis(500);

pub(super) fn spawn(triggers: Arc<Triggers>, state: AppState) {
    // Only the records events are made of: runs that only take steps, however many, never
    // make the hub fall behind the runs whose events it delivers.
    let mut updates = state.engine.subscribe_milestones();
    tokio::spawn(async move {
        let mut memory = Memory::default();
        let slots = DeliverySlots::default();
        let mut regs: Vec<Registration> = Vec::new();
        let mut read_at: Option<tokio::time::Instant> = None;
        let mut read_changes = 0;
        let mut open = OpenGates::new(!state.engine.is_shared_store());
        while !triggers.is_stopped() {
            let update = match tokio::time::timeout(Duration::from_secs(1), updates.recv()).await {
                Ok(Ok(u)) => u,
                Ok(Err(RecvError::Lagged(n))) => {
                    tracing::warn!(
                        missed = n,
                        "the trigger hub fell behind; events were missed"
                    );
                    open.forget_all();
                    continue;
                }
                Ok(Err(RecvError::Closed)) => return,
                Err(_) => continue,
            };
            let changes = triggers.changes();
            if read_at.is_none_or(|t| t.elapsed() >= REGISTRATIONS_FRESH) || changes != read_changes
            {
                let Ok(catalog) = triggers.catalog() else {
                    return;
                };
                match registry::list_all(catalog) {
                    Ok(all) => {
                        regs = all
                            .into_iter()
                            .filter(|r| {
                                r.active && matches!(r.kind, TriggerKind::Event | TriggerKind::Hook)
                            })
                            .collect();
                        read_at = Some(tokio::time::Instant::now());
                        read_changes = changes;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "could not read the trigger registrations");
                        continue;
                    }
                }
            }
            // The gates are noted whoever listens: a subscriber may come before they close.
            let closed = gates_of(&mut open, &update);
            // Most updates concern no subscriber and no follower: nothing is decoded for them.
            let followed = triggers.events.receiver_count() > 0;
            if (regs.is_empty() && !followed) || !has_event_records(&update) {
                continue;
            }
            for event in events_of(&state, &update, closed) {
                if followed {
                    let _ = triggers.events.send(Arc::new(super::HubEvent {
                        name: event.name,
                        tenant: event.tenant.clone(),
                        project: event.project.clone(),
                        body: event.body.clone(),
                    }));
                }
                for reg in regs.iter().filter(|r| {
                    r.event.as_deref() == Some(event.name)
                        && r.tenant == event.tenant
                        && r.project == event.project
                }) {
                    // The list is up to REGISTRATIONS_FRESH old: a trigger paused, switched
                    // off or rewritten since must not fire on it.
                    let Some(reg) = still_active(&triggers, reg) else {
                        continue;
                    };
                    let reg = &reg;
                    let Some(work) = prepare(&state, &mut memory, reg, &event) else {
                        continue;
                    };
                    // The hub never waits for a place: the delivery does, on its own task,
                    // within its tenant's share.
                    let Some(ticket) = slots.enter(&reg.tenant) else {
                        refuse_waiting(&triggers, reg, &event);
                        continue;
                    };
                    let (triggers, state, reg, event) =
                        (triggers.clone(), state.clone(), reg.clone(), event.clone());
                    tokio::spawn(async move {
                        let running = ticket.run().await;
                        deliver(&triggers, &state, &reg, &event, work).await;
                        drop(running);
                    });
                }
            }
        }
    });
}

/// `reg` as the catalog holds it now, if it is still active with the same event.
fn still_active(triggers: &Triggers, reg: &Registration) -> Option<Registration> {
    let catalog = triggers.catalog().ok()?;
    match registry::by_id(catalog, &reg.id) {
        Ok(Some(now)) if now.active && now.event == reg.event => Some(now),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(error = %e, trigger = %reg.id, "could not read a trigger registration");
            None
        }
    }
}

/// Whether an update holds a record that can be an event.
fn has_event_records(update: &JournalUpdate) -> bool {
    update.entries.iter().any(|e| e.record.is_milestone())
}

/// Notes the approval gates an update opens, and closes those its answers and timers close:
/// whether each closed step is an approval gate, by step.
fn gates_of(open: &mut OpenGates, update: &JournalUpdate) -> HashMap<u32, Known> {
    let mut closed = HashMap::new();
    for entry in update.entries.iter() {
        match &entry.record {
            Record::GateAnswered { step, .. } | Record::TimerFired { step } => {
                // The first record of a step closes its gate; a later one is told by a read.
                let known = open.close(update.run_id, *step);
                closed.entry(*step).or_insert(known);
            }
            record => open.note(update.run_id, record, is_approval),
        }
    }
    closed
}

/// The events of a journal update; `closed` says which gate answers and timers close an
/// approval gate (see [`gates_of`]).
fn events_of(
    state: &AppState,
    update: &JournalUpdate,
    mut closed: HashMap<u32, Known>,
) -> Vec<Event> {
    let mut out = Vec::new();
    let mut start: Option<StartRecord> = None;
    for entry in update.entries.iter() {
        let name = match &entry.record {
            Record::Start(s) => {
                start = Some((**s).clone());
                Some("workflow.run.started")
            }
            Record::Status { status, .. } => match status {
                RunStatus::Done => Some("workflow.run.completed"),
                RunStatus::Failed => Some("workflow.run.failed"),
                RunStatus::Cancelled => Some("workflow.run.cancelled"),
                _ => None,
            },
            Record::GateOpened { gate, .. } if is_approval(gate) => {
                Some("workflow.approval.requested")
            }
            Record::GateAnswered { .. } | Record::TimerFired { .. } => Some("gate"),
            Record::PauseRequested { .. } => Some("workflow.run.paused"),
            Record::ResumeRequested { .. } => Some("workflow.run.resumed"),
            _ => None,
        };
        let Some(name) = name else { continue };
        if let Some(event) = event(state, update.run_id, entry, name, &mut start, &mut closed) {
            out.push(event);
        }
    }
    out
}

fn event(
    state: &AppState,
    run: RunId,
    entry: &Entry,
    name: &'static str,
    start: &mut Option<StartRecord>,
    closed: &mut HashMap<u32, Known>,
) -> Option<Event> {
    if start.is_none() {
        // The run's first record says who started it and where.
        *start = Some(chain::start_of(&state.engine, run)?);
    }
    let s = start.as_ref()?;
    let (tenant, project) = s.scope.as_str().split_once('/')?;
    let mut body = json!({
        "runId": run.to_string(),
        "workflowName": s.workflow_name,
        "tenant": tenant,
        "project": project,
        "startedBy": s.started_by,
    });
    let map = body.as_object_mut()?;
    let name = match (&entry.record, name) {
        (Record::Status { status, reason }, _) => {
            map.insert("status".into(), json!(status));
            if let Some(reason) = reason {
                map.insert(
                    "error".into(),
                    json!({ "kind": status_kind(*status), "message": reason }),
                );
            }
            name
        }
        (Record::GateOpened { step, gate }, _) => {
            approval_fields(map, run, *step, gate);
            name
        }
        (Record::GateAnswered { step, answer }, _) => {
            let gate = closed_gate(state, run, *step, closed)?;
            approval_fields(map, run, *step, &gate);
            if !answer.answered_by.is_empty() {
                map.insert("answeredBy".into(), json!(answer.answered_by));
            }
            if let Some(c) = &answer.comment {
                map.insert("comment".into(), json!(c));
            }
            // The failure pause's `retry` and `fallback` go on, as its approval does.
            let approved = answer.value.get("approved") == Some(&Value::Bool(true))
                || matches!(
                    answer.value.get("chosen").and_then(Value::as_str),
                    Some("retry" | "fallback")
                );
            if approved {
                "workflow.approval.approved"
            } else {
                "workflow.approval.rejected"
            }
        }
        (Record::TimerFired { step }, _) => {
            let gate = closed_gate(state, run, *step, closed)?;
            approval_fields(map, run, *step, &gate);
            "workflow.approval.expired"
        }
        (Record::Start(_), _) => {
            map.insert("status".into(), json!(RunStatus::Running));
            name
        }
        (Record::PauseRequested { by, reason }, _) => {
            map.insert("status".into(), json!(RunStatus::Paused));
            map.insert("by".into(), json!(by));
            if let Some(reason) = reason {
                map.insert("reason".into(), json!(reason));
            }
            name
        }
        (Record::ResumeRequested { by }, _) => {
            map.insert("by".into(), json!(by));
            name
        }
        _ => name,
    };
    map.insert("event".into(), json!(name));
    let chain = chain::of_run(&state.engine, run, s);
    Some(Event {
        name,
        run,
        seq: entry.seq,
        tenant: tenant.to_owned(),
        project: project.to_owned(),
        started_by: s.started_by.clone(),
        chain,
        body,
    })
}

/// The approval gate a gate answer or a timer at `step` of `run` closed, if it closed one:
/// as the hub noted it, else as the run's journal says.
fn closed_gate(
    state: &AppState,
    run: RunId,
    step: u32,
    closed: &mut HashMap<u32, Known>,
) -> Option<GateSpec> {
    match closed.remove(&step).unwrap_or(Known::Unknown) {
        Known::Approval(gate) => Some(gate),
        Known::Other => None,
        Known::Unknown => approval_gate(state, run, step),
    }
}

/// The approval gate at `step` of `run`, if that step is one.
fn approval_gate(state: &AppState, run: RunId, step: u32) -> Option<GateSpec> {
    let journal = state.engine.journal(run).ok()?;
    journal.into_iter().find_map(|e| match e.record {
        Record::GateOpened { step: s, gate } if s == step && is_approval(&gate) => Some(*gate),
        _ => None,
    })
}

/// Whether `gate` is one of Friday's approvals: an approval gate, or the DECISION a run opens
/// under `onFailure: pause_for_approval` (listed among the approvals too).
fn is_approval(gate: &GateSpec) -> bool {
    gate.kind == GateKind::Approval
        || (gate.kind == GateKind::Decision
            && gate.meta.get("onFailure").and_then(Value::as_str) == Some("pause_for_approval"))
}

/// The fields of an approval event: the inbox item, the gate's state (its YAML state, else its
/// step), its title and assignee.
fn approval_fields(map: &mut Map<String, Value>, run: RunId, step: u32, gate: &GateSpec) {
    map.insert("itemId".into(), json!(format!("{run}-{step}")));
    let state = gate
        .meta
        .get("workflowState")
        .and_then(Value::as_str)
        .map_or_else(|| step.to_string(), str::to_owned);
    map.insert("step".into(), json!(state));
    map.insert("title".into(), json!(gate.title));
    if !gate.assigned_to.is_empty() {
        map.insert("assignee".into(), json!(gate.assigned_to));
    }
}

/// The error kind of a run that ended without success.
fn status_kind(status: RunStatus) -> &'static str {
    match status {
        RunStatus::Cancelled => "cancelled",
        _ => "failure",
    }
}

/// What a matching registration does with an event.
enum Work {
    Subscription(Arc<Subscription>),
    Hook(Arc<Hook>, String),
    /// A hook whose document or script cannot be read now: its delivery fails, on record.
    BrokenHook,
}

/// The parsed subscription or hook of `reg`, unless the event is its own run's.
fn prepare(
    state: &AppState,
    memory: &mut Memory,
    reg: &Registration,
    event: &Event,
) -> Option<Work> {
    let own = match reg.kind {
        TriggerKind::Hook => format!("hook:{}", reg.name),
        _ => format!("event:{}", reg.name),
    };
    if event.started_by == own {
        return None;
    }
    let key = reg.key();
    match reg.kind {
        TriggerKind::Event => Some(Work::Subscription(match memory.subscriptions.get(&key) {
            Some((digest, s)) if *digest == reg.digest => s.clone(),
            _ => {
                let (digest, s) = documents::load_subscription(state.docs(), reg)?;
                let s = Arc::new(s);
                memory.subscriptions.insert(key, (digest, s.clone()));
                s
            }
        })),
        TriggerKind::Hook => {
            let hook = match memory.hooks.get(&key) {
                Some((digest, h)) if *digest == reg.digest => h.clone(),
                _ => match documents::load_hook(state.docs(), reg) {
                    Some((digest, hook)) => {
                        let h = Arc::new(hook);
                        memory.hooks.insert(key, (digest, h.clone()));
                        h
                    }
                    None => return Some(Work::BrokenHook),
                },
            };
            // The parsed document is kept while it is unchanged; its script is read anew.
            Some(match documents::hook_source(state.docs(), reg, &hook) {
                Some(source) => Work::Hook(hook, source),
                None => Work::BrokenHook,
            })
        }
        _ => None,
    }
}

async fn deliver(
    triggers: &Triggers,
    state: &AppState,
    reg: &Registration,
    event: &Event,
    work: Work,
) {
    let delivery = match work {
        Work::Subscription(sub) => deliver_subscription(triggers, state, reg, event, &sub).await,
        Work::Hook(hook, source) => deliver_hook(triggers, state, reg, event, &hook, &source).await,
        Work::BrokenHook => Some(
            Delivery::new(reg, DeliveryStatus::Failed, triggers.now_ms())
                .reason("hook_failed")
                .message(format!(
                    "hook `{}` cannot be run: its document or its script cannot be read now \
                     (missing, not a file, too large, or a link out of the project)",
                    reg.name
                )),
        ),
    };
    if let (Some(mut d), Ok(catalog)) = (delivery, triggers.catalog()) {
        d.event = Some(event.name.to_owned());
        if let Err(e) = deliveries::record(catalog, &d) {
            tracing::warn!(trigger = %reg.key(), error = %e, "could not record a delivery");
        }
    }
}

/// Records the delivery of `event` to `reg` as failed: as many of its tenant's deliveries wait
/// or run as may ([`super::delivery_slots`]).
fn refuse_waiting(triggers: &Triggers, reg: &Registration, event: &Event) {
    let mut d = Delivery::new(reg, DeliveryStatus::Failed, triggers.now_ms())
        .reason("too_many_waiting")
        .message(format!(
            "not delivered: {} deliveries of tenant `{}` already wait or run (their hooks and \
             subscriptions are slower than their events come)",
            super::delivery_slots::WAITING_PER_TENANT,
            reg.tenant
        ));
    d.event = Some(event.name.to_owned());
    if let Ok(catalog) = triggers.catalog()
        && let Err(e) = deliveries::record(catalog, &d)
    {
        tracing::warn!(trigger = %reg.key(), error = %e, "could not record a delivery");
    }
}

/// `Ok` when the event passes the filter; else `Err(Some(delivery))` to record (the filter
/// failed), or `Err(None)` when it does not match.
fn filtered(
    filter: Option<&magrathea_yaml::Condition>,
    reg: &Registration,
    event: &Event,
    now: i64,
) -> Result<(), Option<Box<Delivery>>> {
    let Some(filter) = filter else { return Ok(()) };
    match filter.matches_event(&event.body) {
        Ok(true) => Ok(()),
        Ok(false) => Err(None),
        Err(e) => Err(Some(Box::new(
            Delivery::new(reg, DeliveryStatus::Failed, now)
                .reason("filter_error")
                .message(e.to_string()),
        ))),
    }
}

async fn deliver_subscription(
    triggers: &Triggers,
    state: &AppState,
    reg: &Registration,
    event: &Event,
    sub: &Subscription,
) -> Option<Delivery> {
    let now = triggers.now_ms();
    if let Err(d) = filtered(sub.filter.as_ref(), reg, event, now) {
        return d.map(|d| *d);
    }
    let mut params: Map<String, Value> = sub.params.clone();
    params.insert("event".into(), event.body.clone());
    let key = format!("event:{}:{}:{}", reg.key(), event.run, event.seq);
    // The run continues the chain of the run whose event it reacts to: refused past its bounds.
    if let Err(why) = triggers
        .catalog()
        .map_err(|e| e.to_string())
        .and_then(|catalog| chain::extend(catalog, &event.chain, &key))
    {
        return Some(
            Delivery::new(reg, DeliveryStatus::Rejected, now)
                .reason("trigger_chain")
                .message(why),
        );
    }
    let starter = Starter {
        started_by: format!("event:{}", reg.name),
        requested_by: reg.written_by.clone(),
        idempotency_key: Some(key),
    };
    Some(
        match state
            .start_as(
                &reg.scope(),
                &sub.workflow,
                Value::Object(params),
                &starter,
                "event",
            )
            .await
        {
            Ok((run, _)) => Delivery::new(reg, DeliveryStatus::Accepted, now).run(run),
            Err(e) => Delivery::start_refused(reg, now, e.code, &e.message),
        },
    )
}

async fn deliver_hook(
    triggers: &Triggers,
    state: &AppState,
    reg: &Registration,
    event: &Event,
    hook: &Hook,
    source: &str,
) -> Option<Delivery> {
    let now = triggers.now_ms();
    if let Err(d) = filtered(hook.checked.filter.as_ref(), reg, event, now) {
        return d.map(|d| *d);
    }
    let scope = reg.scope();
    // A hook runs JavaScript: only where the tenant lets the project run scripts.
    if let Err(why) = magrathea_exec::policy::check(
        state.docs(),
        &scope,
        magrathea_exec::policy::TaskType::Script,
    ) {
        return Some(
            Delivery::new(reg, DeliveryStatus::Rejected, now)
                .reason("scripts_not_allowed")
                .message(why),
        );
    }
    let host = Arc::new(Host {
        state: state.clone(),
        scope,
        hook: reg.name.clone(),
        written_by: reg.written_by.clone(),
        key: format!("hook:{}:{}:{}", reg.key(), event.run, event.seq),
        handle: tokio::runtime::Handle::current(),
        starts: AtomicUsize::new(0),
        catalog: state.engine.catalog(),
        chain: event.chain.clone(),
    });
    let script = HookScript {
        name: reg.name.clone(),
        source: source.to_owned(),
        event: event.body.clone(),
        timeout: hook.checked.timeout,
        tenant: reg.tenant.clone(),
    };
    Some(match run_hook(script, host).await {
        Ok(outcome) => {
            let mut d = Delivery::new(reg, DeliveryStatus::Accepted, now);
            if let Some(first) = outcome.started.first() {
                d = d.run(first);
            }
            if outcome.started.len() > 1 {
                d = d.message(format!("started runs {}", outcome.started.join(", ")));
            }
            d
        }
        Err(e) => Delivery::new(reg, DeliveryStatus::Failed, now)
            .reason("hook_failed")
            .message(e.to_string()),
    })
}

/// What a hook's script reaches: starts in its own project, as `hook:<name>`.
struct Host {
    state: AppState,
    scope: Scope,
    hook: String,
    /// Who wrote the hook's document through the API: its runs' `requestedBy`.
    written_by: Option<String>,
    key: String,
    handle: tokio::runtime::Handle,
    starts: AtomicUsize,
    /// Where the trigger chains are kept.
    catalog: Option<magrathea_core::SharedCatalog>,
    /// The chain of the run whose event the hook reacts to: its starts continue it.
    chain: chain::Link,
}

impl HookHost for Host {
    fn start_workflow(&self, name: &str, params: Value) -> Result<Option<String>, String> {
        // A plain name of this project: never a path, never another tenant or project.
        magrathea_yaml::runtime::check_name(name).map_err(|e| e.to_string())?;
        let n = self.starts.fetch_add(1, Ordering::SeqCst);
        let key = format!("{}#{n}", self.key);
        let catalog = self
            .catalog
            .as_ref()
            .ok_or_else(|| super::TriggerError::NoCatalog.to_string())?;
        chain::extend(catalog, &self.chain, &key)?;
        let starter = Starter {
            started_by: format!("hook:{}", self.hook),
            requested_by: self.written_by.clone(),
            idempotency_key: Some(key),
        };
        let params = if params.is_null() {
            Value::Object(Map::new())
        } else {
            params
        };
        // The script runs on a blocking thread: waiting for the start here is allowed.
        self.handle
            .block_on(
                self.state
                    .start_as(&self.scope, name, params, &starter, "hook"),
            )
            .map(|(run, _)| Some(run.to_string()))
            .map_err(|e| e.message)
    }

    fn log(&self, level: HookLogLevel, message: &str, fields: Value) {
        let (hook, scope) = (&self.hook, self.scope.key());
        match level {
            HookLogLevel::Error => tracing::error!(hook, scope, %fields, "{message}"),
            HookLogLevel::Warn => tracing::warn!(hook, scope, %fields, "{message}"),
            _ => tracing::info!(hook, scope, %fields, "{message}"),
        }
    }
}
