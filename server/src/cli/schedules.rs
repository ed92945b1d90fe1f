//! `magrathea schedules list|trigger|pause|resume` and `magrathea deliveries list`: the
//! project's schedules (`_vance/scheduler/*.yaml`) and the record of every trigger delivery.

use magrathea_core::Catalog;
use magrathea_server::triggers::deliveries::{self, Delivery, DeliveryQuery, DeliveryStatus};
use magrathea_server::triggers::registry::{self, Registration, TriggerKind};
use magrathea_server::triggers::{self, Cursor};
use serde_json::{Value, json};

use super::backend::Backend;
use super::output::{errln, outln, timestamp};
use super::run::finish;
use super::store::Project;
use super::{EXIT_FAILED, EXIT_INVALID, EXIT_OK, Location};

/// `magrathea schedules …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SchedulesCommand {
    /// The project's schedules: name, cron (or one-shot instant), zone, next fire times, last
    /// run and its status (`--json`: one JSON array).
    List {
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Fire a schedule now: start its workflow as the schedule would (its `params`, `runAs`),
    /// outside its cron and its overlap policy, then drive or follow the run like `magrathea
    /// run` (same output, same exit codes).
    Trigger {
        /// The schedule (`_vance/scheduler/NAME.yaml`).
        name: String,
        /// Print the run as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Pause a schedule: it fires no tick until resumed (kept across restarts and document
    /// changes).
    Pause {
        /// The schedule.
        name: String,
    },
    /// Resume a paused schedule. The ticks it missed while paused are not fired.
    Resume {
        /// The schedule.
        name: String,
    },
}

/// `magrathea deliveries …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum DeliveriesCommand {
    /// The project's trigger deliveries, newest first: accepted (with the run), duplicate,
    /// rejected (with the reason code), skipped, failed (`--json`: `{deliveries, next}`).
    List {
        /// Only this trigger's: its document name or its id (`trg_…`).
        #[arg(long, value_name = "NAME")]
        trigger: Option<String>,
        /// Only deliveries with this status: accepted, duplicate, rejected, skipped, failed.
        #[arg(long, value_name = "STATUS")]
        status: Option<String>,
        /// At most this many (1–1000).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=1000))]
        limit: u16,
        /// Start after this cursor: the `next` of the previous page.
        #[arg(long, value_name = "CURSOR")]
        cursor: Option<String>,
        /// Print `{deliveries, next}` as JSON (`next` is null on the last page).
        #[arg(long)]
        json: bool,
    },
}

/// The catalog of the store, wherever it is held.
pub(crate) fn catalog_of(backend: &Backend) -> anyhow::Result<Box<dyn Catalog>> {
    match backend {
        Backend::Local(engine) => {
            Ok(Box::new(engine.catalog().ok_or_else(|| {
                anyhow::anyhow!("the store keeps no catalog")
            })?))
        }
        Backend::Remote(owner) => Ok(Box::new(owner.catalog())),
    }
}

/// Brings the catalog's registrations of the project in line with its documents, and returns
/// them. Each keeps the writer its document was recorded with, as the server's own rebuild
/// does: the runs a trigger starts are requested by whoever wrote it.
fn synced(project: &Project, catalog: &dyn Catalog) -> anyhow::Result<Vec<Registration>> {
    let regs = registry::scan_with_writers(project.docs(), catalog, &project.scope)?;
    registry::replace_scope(catalog, &project.scope, &regs)?;
    Ok(registry::list(catalog, &project.scope, None)?)
}

fn schedule_named(regs: &[Registration], name: &str) -> anyhow::Result<Registration> {
    regs.iter()
        .find(|r| r.kind == TriggerKind::Cron && r.name == name)
        .cloned()
        .ok_or_else(|| {
            let known: Vec<&str> = regs
                .iter()
                .filter(|r| r.kind == TriggerKind::Cron)
                .map(|r| r.name.as_str())
                .collect();
            anyhow::anyhow!(
                "no schedule `{name}` in this project (_vance/scheduler/{name}.yaml); known: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            )
        })
}

pub(crate) async fn schedules(loc: &Location, cmd: SchedulesCommand) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    // Listing creates nothing, as the other reading commands do: without a store the
    // schedules are listed from their documents, none having fired yet (and a project of a
    // served tree is told where the server keeps its store).
    if let SchedulesCommand::List { json } = &cmd {
        let Some(backend) = project.existing_backend().await? else {
            let mut regs = triggers::scan_scope(project.docs(), &project.scope);
            regs.iter_mut().for_each(|r| r.settle());
            return list(&project, None, &regs, *json).await;
        };
        let catalog = catalog_of(&backend)?;
        let regs = synced(&project, catalog.as_ref())?;
        return list(&project, Some((&backend, catalog.as_ref())), &regs, *json).await;
    }
    let runtime = project.runtime();
    let backend = project.backend(&runtime).await?;
    let catalog = catalog_of(&backend)?;
    let regs = synced(&project, catalog.as_ref())?;
    match cmd {
        SchedulesCommand::List { json } => {
            list(&project, Some((&backend, catalog.as_ref())), &regs, json).await
        }
        SchedulesCommand::Pause { name } => {
            let reg = schedule_named(&regs, &name)?;
            registry::set_paused(catalog.as_ref(), &reg.id, true)?;
            outln!("paused schedule {name}")?;
            Ok(EXIT_OK)
        }
        SchedulesCommand::Resume { name } => {
            let reg = schedule_named(&regs, &name)?;
            registry::set_paused(catalog.as_ref(), &reg.id, false)?;
            if !reg.enabled_in_document {
                errln!(
                    "note: the document says `enabled: false`; the schedule stays off until it says otherwise"
                );
            }
            outln!("resumed schedule {name}")?;
            Ok(EXIT_OK)
        }
        SchedulesCommand::Trigger { name, json } => {
            // As `magrathea run` of an unknown workflow: nothing started, exit 2.
            let reg = match schedule_named(&regs, &name) {
                Ok(reg) => reg,
                Err(e) => {
                    errln!("error: {e}");
                    errln!("nothing was started");
                    return Ok(EXIT_INVALID);
                }
            };
            if let Some(e) = &reg.error {
                errln!("error: the schedule `{name}` is invalid: {e}");
                errln!("nothing was started");
                return Ok(EXIT_INVALID);
            }
            if let Some(why) = triggers::switched_off(&reg) {
                errln!("error: {why}");
                errln!("nothing was started");
                return Ok(EXIT_INVALID);
            }
            let Some((_, schedule)) = triggers::load_schedule(project.docs(), &reg) else {
                errln!("error: cannot read _vance/scheduler/{name}.yaml");
                return Ok(EXIT_FAILED);
            };
            let by = schedule.run_as().to_owned();
            let key = format!(
                "schedule:{}@manual:{}",
                reg.key(),
                uuid::Uuid::now_v7().simple()
            );
            let params = Value::Object(schedule.params().clone());
            let now = triggers::Clock::now_ms(&triggers::SystemClock);
            // A start that fails is a delivery too, on record as failed with its reason.
            let failed = |why: String| {
                let mut d = Delivery::new(&reg, DeliveryStatus::Failed, now)
                    .reason("manual")
                    .message(format!(
                        "fired by {} from the command line: {why}",
                        super::run::default_user()
                    ));
                d.event = None;
                deliveries::record(catalog.as_ref(), &d)
            };
            let request =
                match runtime.start_request(&project.scope, schedule.workflow(), params, |req| {
                    req.started_by(&by)
                        .requested_by(super::run::default_user())
                        .idempotency_key(&key)
                }) {
                    Ok(r) => r,
                    Err(e) => {
                        failed(e.to_string())?;
                        errln!("error: {e}");
                        errln!("nothing was started");
                        return Ok(EXIT_INVALID);
                    }
                };
            // Installed before the run starts and kept for following it.
            super::progress::Interrupts::install()?.keep();
            let (run, follower) = match backend.start(request).await {
                Ok(started) => started,
                Err(e) => {
                    failed(super::output::chain(&e))?;
                    return Err(e);
                }
            };
            let mut d = Delivery::new(&reg, DeliveryStatus::Accepted, now)
                .reason("manual")
                .message(format!(
                    "fired by {} from the command line",
                    super::run::default_user()
                ))
                .run(run);
            d.event = None;
            deliveries::record(catalog.as_ref(), &d)?;
            triggers::note_manual_run(catalog.as_ref(), &reg.id, &run.to_string(), now)?;
            finish(&project, &backend, run, follower, json).await
        }
    }
}

/// Lists the schedules of `regs`, with what the store (when there is one) says of their
/// ticks, runs and deliveries.
async fn list(
    project: &Project,
    store: Option<(&Backend, &dyn Catalog)>,
    regs: &[Registration],
    json: bool,
) -> anyhow::Result<u8> {
    let now = triggers::Clock::now_ms(&triggers::SystemClock);
    let mut rows = Vec::new();
    for reg in regs.iter().filter(|r| r.kind == TriggerKind::Cron) {
        let cursor: Option<Cursor> = match store {
            Some((_, catalog)) => triggers::cursor(catalog, &reg.id)?,
            None => None,
        };
        // A schedule of an archived workflow starts nothing (each tick is a failed delivery):
        // not active while the workflow is archived, as the server lists it.
        let archived = reg
            .workflow
            .as_deref()
            .is_some_and(|w| project.docs().is_archived(&project.scope, w));
        let next = if reg.active && !archived {
            triggers::next_fire_times_in(project.docs(), reg, cursor.as_ref(), now, 3)
        } else {
            Vec::new()
        };
        let last_run = cursor.as_ref().and_then(|c| c.last_run.clone());
        let last_status = match (store, last_run.as_deref().and_then(|r| r.parse().ok())) {
            (Some((backend, _)), Some(run)) => backend
                .run(run)
                .await
                .ok()
                .flatten()
                .map(|dto| dto.run.status.as_str().to_owned()),
            _ => None,
        };
        let mut v = registry::shown(reg);
        if let Some(map) = v.as_object_mut() {
            if archived {
                map.insert("active".into(), json!(false));
            }
            map.insert("workflowArchived".into(), json!(archived));
            // The fields of the trigger routes' registrations, so a script reads either alike.
            map.insert("nextFireMs".into(), json!(next.first()));
            map.insert(
                "nextFireAt".into(),
                json!(next.first().map(|t| triggers::iso(*t))),
            );
            map.insert(
                "nextFireTimes".into(),
                json!(next.iter().map(|t| triggers::iso(*t)).collect::<Vec<_>>()),
            );
            map.insert("lastRunId".into(), json!(last_run));
            map.insert("lastRunStatus".into(), json!(last_status));
            let last = match store {
                Some((_, catalog)) => deliveries::last(catalog, reg)?.map(|d| d.view()),
                None => None,
            };
            map.insert("lastDelivery".into(), json!(last));
        }
        rows.push((v, next));
    }
    if json {
        let rows: Vec<&Value> = rows.iter().map(|(v, _)| v).collect();
        outln!("{}", serde_json::to_string(&rows)?)?;
        return Ok(EXIT_OK);
    }
    if rows.is_empty() {
        errln!("no schedules (documents go in _vance/scheduler/NAME.yaml)");
        return Ok(EXIT_OK);
    }
    let mut table = vec![[
        "NAME".to_owned(),
        "CRON".to_owned(),
        "ZONE".to_owned(),
        "NEXT FIRE TIMES (UTC)".to_owned(),
        "LAST RUN".to_owned(),
        "STATUS".to_owned(),
    ]];
    for (v, times) in &rows {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("-").to_owned();
        let (when, zone) = match (
            v.get("cron").and_then(Value::as_str),
            v.get("at").and_then(Value::as_str),
        ) {
            (Some(c), _) => (c.to_owned(), s("timezone")),
            // A one-shot's instant carries its own offset: no zone applies to it.
            (None, Some(at)) => (format!("at {at}"), "-".into()),
            _ => ("-".into(), s("timezone")),
        };
        // The next three, as `--json`'s `nextFireTimes`.
        let next = if times.is_empty() {
            state_word(v)
        } else {
            times
                .iter()
                .map(|ms| timestamp(ms.unsigned_abs()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        table.push([
            s("name"),
            when,
            zone,
            next,
            s("lastRunId"),
            s("lastRunStatus"),
        ]);
    }
    // Each column as wide as its widest cell, so that a long cell never shifts the others.
    let mut widths = [0usize; 6];
    for row in &table {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &table {
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  "));
            }
        }
        outln!("{line}")?;
    }
    // What makes a schedule invalid, where it is (`--json` has it as `error`).
    for (v, _) in &rows {
        if let Some(error) = v.get("error").and_then(Value::as_str) {
            errln!("{error}");
        }
    }
    Ok(EXIT_OK)
}

/// Why a schedule has no next fire time.
fn state_word(v: &Value) -> String {
    if v.get("error").is_some() {
        "invalid".into()
    } else if v.get("paused").and_then(Value::as_bool) == Some(true) {
        "paused".into()
    } else if v.get("enabledInDocument").and_then(Value::as_bool) == Some(false) {
        "disabled".into()
    } else {
        "-".into()
    }
}

pub(crate) async fn deliveries(loc: &Location, cmd: DeliveriesCommand) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    let DeliveriesCommand::List {
        trigger,
        status,
        limit,
        cursor,
        json,
    } = cmd;
    if let Some(c) = cursor.as_deref()
        && !deliveries::is_cursor(c)
    {
        errln!("error: `{c}` is not a cursor of this list: pass the `next` of the previous page");
        return Ok(EXIT_INVALID);
    }
    let status = match status.as_deref() {
        None | Some("all") => None,
        Some(s) => match serde_json::from_value::<DeliveryStatus>(json!(s)) {
            Ok(status) => Some(status),
            Err(_) => {
                errln!(
                    "error: unknown status `{s}`: use accepted, duplicate, rejected, skipped, \
                     failed or all"
                );
                return Ok(EXIT_INVALID);
            }
        },
    };
    let Some(backend) = project.existing_backend().await? else {
        // No store yet: no delivery, said as any empty page is.
        if json {
            outln!("{}", json!({ "deliveries": [], "next": null }))?;
        } else {
            errln!("no deliveries");
        }
        return Ok(EXIT_OK);
    };
    let catalog = catalog_of(&backend)?;
    let trigger_id = match &trigger {
        None => None,
        Some(t) => {
            let regs = registry::list(catalog.as_ref(), &project.scope, None)?;
            let found: Vec<&Registration> =
                regs.iter().filter(|r| r.id == *t || r.name == *t).collect();
            let retired = if found.is_empty() {
                deliveries::retired_trigger_ids(
                    catalog.as_ref(),
                    &project.scope.tenant,
                    &project.scope.project,
                    t,
                )?
            } else {
                Vec::new()
            };
            match found.as_slice() {
                // A trigger whose document was removed keeps its deliveries for the retention.
                [] if retired.len() == 1 => retired.into_iter().next(),
                [] if retired.len() > 1 => {
                    errln!(
                        "error: `{t}` named several removed triggers; name one by its id: {}",
                        retired.join(", ")
                    );
                    return Ok(EXIT_INVALID);
                }
                [] => {
                    errln!("error: no trigger `{t}` in this project");
                    return Ok(EXIT_FAILED);
                }
                [one] => Some(one.id.clone()),
                many => {
                    errln!(
                        "error: `{t}` declares several triggers; name one by its id: {}",
                        many.iter()
                            .map(|r| format!("{} ({})", r.id, r.kind.as_str()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    );
                    return Ok(EXIT_FAILED);
                }
            }
        }
    };
    let page = deliveries::list(
        catalog.as_ref(),
        &project.scope.tenant,
        &project.scope.project,
        &DeliveryQuery {
            trigger_id,
            status,
            cursor,
            limit: usize::from(limit),
        },
    )?;
    if json {
        let out = json!({ "deliveries": page.view()["deliveries"], "next": page.next });
        outln!("{}", serde_json::to_string(&out)?)?;
        return Ok(EXIT_OK);
    }
    if page.deliveries.is_empty() {
        errln!("no deliveries");
        return Ok(EXIT_OK);
    }
    outln!(
        "{:<19}  {:<20}  {:<7}  {:<9}  {:<22}  {}",
        "AT (UTC)",
        "TRIGGER",
        "KIND",
        "STATUS",
        "REASON",
        "RUN"
    )?;
    for d in &page.deliveries {
        outln!(
            "{:<19}  {:<20}  {:<7}  {:<9}  {:<22}  {}",
            timestamp(d.at_ms.unsigned_abs()),
            d.trigger,
            d.kind.as_str(),
            d.status.as_str(),
            d.reason.as_deref().unwrap_or("-"),
            d.run_id.as_deref().unwrap_or("-")
        )?;
    }
    if let Some(next) = &page.next {
        errln!("more: the next page is `--cursor {next}`");
    }
    Ok(EXIT_OK)
}
