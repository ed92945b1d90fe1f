//! Delivery records (Friday's `workflow_trigger_deliveries`): one per scheduler tick, webhook
//! request, internal event and hook execution — accepted with its run, a duplicate, rejected
//! with a reason code, skipped (overlap, outside the catch-up window) or failed (the start
//! was refused). Kept in the store's catalog twice, by project and by trigger, newest first,
//! and pruned by age and count (see [`Retention`]).

use std::time::Duration;

use magrathea_core::{Catalog, StoreError};
use serde::{Deserialize, Serialize};

use super::registry::{Registration, TriggerKind};

/// Deliveries by project: `{tenant}/{project}/{newest-first time}/{id}`.
const BY_PROJECT: &str = "trigger.delivery";
/// Deliveries by trigger: `{trigger id}/{newest-first time}/{id}`.
const BY_TRIGGER: &str = "trigger.delivery.by";

/// What became of a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryStatus {
    /// A run was started (`runId`).
    Accepted,
    /// The same delivery came before, inside the dedupe window: nothing started; `runId` is
    /// the first delivery's run.
    Duplicate,
    /// Refused before anything started (`reason`: bad signature, expired timestamp, …).
    Rejected,
    /// Not fired on purpose (`reason`: `overlap`, `outside_catchup_window`, `filtered`, …).
    Skipped,
    /// Accepted, but the run could not be started (`reason`, `message`).
    Failed,
}

impl DeliveryStatus {
    /// The word in JSON and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accepted => "accepted",
            Self::Duplicate => "duplicate",
            Self::Rejected => "rejected",
            Self::Skipped => "skipped",
            Self::Failed => "failed",
        }
    }
}

/// One delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// Its id (32 hex digits, time-ordered).
    pub id: String,
    /// The trigger's registration id.
    pub trigger_id: String,
    /// The trigger's document name.
    pub trigger: String,
    /// The trigger's kind.
    pub kind: TriggerKind,
    /// The tenant.
    pub tenant: String,
    /// The project.
    pub project: String,
    /// What became of it.
    pub status: DeliveryStatus,
    /// A stable snake_case reason code for every status but `accepted`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Details for people (never a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The stable code of the error that refused the run's start (`MAG-HTTP-INVALID-PARAMS`,
    /// `MAG-VR001`, …), for a `start_refused` delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<String>,
    /// The run started (or, for a duplicate, the first delivery's run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The same run under the name the reference's scheduler event log gives it (§8.4), so
    /// that a UI can link a tick or delivery to its run.
    #[serde(
        rename = "workflowRunId",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub workflow_run_id: Option<String>,
    /// The dedupe key of a webhook delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_key: Option<String>,
    /// The scheduler tick (ms since the epoch, UTC) a schedule's delivery is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tick_ms: Option<i64>,
    /// The internal event a subscription or hook delivery is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// When it was recorded (ms since the epoch).
    pub at_ms: i64,
}

impl Delivery {
    /// The delivery as the HTTP routes and `deliveries list --json` show it: its fields, and
    /// the names of Friday's delivery record (§2 `workflow_trigger_deliveries`) beside them:
    /// `deliveredAt` (`atMs` as an RFC 3339 instant, as `nextFireAt` beside `nextFireMs`) and,
    /// for a delivery that started no run (`rejected`, `failed`), `errorMessage` (its
    /// `message`) and `errorCode` (the start's refusal, else the `MAG-…` code its message
    /// opens with, else its `reason`).
    pub fn view(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).unwrap_or_default();
        if let Some(map) = v.as_object_mut() {
            map.insert("deliveredAt".into(), super::iso(self.at_ms).into());
            if matches!(
                self.status,
                DeliveryStatus::Rejected | DeliveryStatus::Failed
            ) {
                if let Some(message) = &self.message {
                    map.insert("errorMessage".into(), message.clone().into());
                }
                let code = self.error_code.clone().or_else(|| {
                    let message = self.message.as_deref()?;
                    let code = message.strip_prefix('[')?.split_once(']')?.0;
                    code.starts_with("MAG-").then(|| code.to_owned())
                });
                if let Some(code) = code.or_else(|| self.reason.clone()) {
                    map.insert("errorCode".into(), code.into());
                }
            }
        }
        v
    }

    /// A delivery of `reg` at `at_ms` with `status`; the rest is filled in by the caller.
    pub fn new(reg: &Registration, status: DeliveryStatus, at_ms: i64) -> Self {
        Self {
            id: uuid::Uuid::now_v7().simple().to_string(),
            trigger_id: reg.id.clone(),
            trigger: reg.name.clone(),
            kind: reg.kind,
            tenant: reg.tenant.clone(),
            project: reg.project.clone(),
            status,
            reason: None,
            message: None,
            error_code: None,
            run_id: None,
            workflow_run_id: None,
            dedupe_key: None,
            tick_ms: None,
            event: None,
            at_ms,
        }
    }

    /// With a reason code.
    pub fn reason(mut self, reason: &str) -> Self {
        self.reason = Some(reason.to_owned());
        self
    }

    /// A start the engine or the workflow refused: `failed`, `start_refused`, with the
    /// error's message and code.
    pub fn start_refused(reg: &Registration, at_ms: i64, code: &str, message: &str) -> Self {
        let mut d = Self::new(reg, DeliveryStatus::Failed, at_ms)
            .reason("start_refused")
            .message(message);
        d.error_code = Some(code.to_owned());
        d
    }

    /// With a message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// With a run.
    pub fn run(mut self, run: impl ToString) -> Self {
        self.run_id = Some(run.to_string());
        self.workflow_run_id.clone_from(&self.run_id);
        self
    }
}

/// Newest first: keys sort by the complement of the time, then of the id (time-ordered too),
/// so that deliveries of one millisecond keep their order.
fn time_key(at_ms: i64) -> String {
    format!(
        "{:016x}",
        u64::MAX - u64::try_from(at_ms.max(0)).unwrap_or(0)
    )
}

/// The key part of a delivery: `{newest-first time}/{newest-first id}`.
fn order_key(d: &Delivery) -> String {
    let id = u128::from_str_radix(&d.id, 16).unwrap_or(0);
    format!("{}/{:032x}", time_key(d.at_ms), u128::MAX - id)
}

/// Whether `cursor` has the form of a page's `next` (a delivery's key): 16 hex digits, `/`,
/// 32 hex digits.
pub fn is_cursor(cursor: &str) -> bool {
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    cursor
        .split_once('/')
        .is_some_and(|(time, id)| hex(time, 16) && hex(id, 32))
}

/// Records a delivery.
pub fn record(catalog: &dyn Catalog, d: &Delivery) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(d).map_err(|e| StoreError::io(e.to_string()))?;
    let k = order_key(d);
    catalog.put(BY_TRIGGER, &format!("{}/{k}", d.trigger_id), &bytes)?;
    catalog.put(
        BY_PROJECT,
        &format!("{}/{}/{k}", d.tenant, d.project),
        &bytes,
    )
}

/// Records the delivery of a scheduler tick, once: the first record of a tick stands (a
/// second pass over the same tick, after a crash or on another worker, records nothing).
pub fn record_tick(catalog: &dyn Catalog, d: &Delivery, tick_ms: i64) -> Result<(), StoreError> {
    let mut d = d.clone();
    d.at_ms = tick_ms;
    d.tick_ms = Some(tick_ms);
    // The id is the trigger's and the tick's, so both processes name the same record, and
    // triggers firing on the same tick keep a record each in the project's listing.
    d.id = tick_id(&d.trigger_id, tick_ms);
    let bytes = serde_json::to_vec(&d).map_err(|e| StoreError::io(e.to_string()))?;
    let k = order_key(&d);
    let by_trigger = format!("{}/{k}", d.trigger_id);
    let stored = match catalog.insert_new(BY_TRIGGER, &by_trigger, &bytes)? {
        None => bytes,
        // Skipped as missed while the wall clock ran ahead, and now, the clock set back, the
        // tick came at its true time and was handled: the later record tells what happened.
        Some(old) if d.status != DeliveryStatus::Skipped && skipped_as_missed(&old) => {
            if catalog.swap(BY_TRIGGER, &by_trigger, Some(&old), &bytes)? {
                let by_project = format!("{}/{}/{k}", d.tenant, d.project);
                if !catalog.swap(BY_PROJECT, &by_project, Some(&old), &bytes)? {
                    catalog.insert_new(BY_PROJECT, &by_project, &bytes)?;
                }
                return Ok(());
            }
            catalog.get(BY_TRIGGER, &by_trigger)?.unwrap_or(bytes)
        }
        Some(old) => old,
    };
    // The project's listing gets the record that stands, also when a crash came between the
    // two writes and this pass is the one after it.
    catalog.insert_new(
        BY_PROJECT,
        &format!("{}/{}/{k}", d.tenant, d.project),
        &stored,
    )?;
    Ok(())
}

/// Whether the record `bytes` is of a tick skipped outside its catch-up window.
fn skipped_as_missed(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Delivery>(bytes).is_ok_and(|d| {
        d.status == DeliveryStatus::Skipped && d.reason.as_deref() == Some("outside_catchup_window")
    })
}

/// The id of the delivery of `trigger`'s tick at `tick_ms`: 32 hex digits of the SHA-256 of
/// both.
fn tick_id(trigger: &str, tick_ms: i64) -> String {
    super::registry::sha256_hex(&format!("{trigger}/{tick_ms}"))[..32].to_owned()
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct DeliveryQuery {
    /// Only this trigger's (a registration id).
    pub trigger_id: Option<String>,
    /// Only with this status.
    pub status: Option<DeliveryStatus>,
    /// The page starts after this cursor (the `next` of the previous page).
    pub cursor: Option<String>,
    /// At most this many (capped at [`MAX_PAGE`]).
    pub limit: usize,
}

/// The ids of the triggers of `tenant/project` that are no longer registered (their documents
/// were removed) but whose deliveries are still kept, named by `id_or_name`: the id itself, or
/// the document name under each kind of trigger. Empty when none has a delivery kept.
pub fn retired_trigger_ids(
    catalog: &dyn Catalog,
    tenant: &str,
    project: &str,
    id_or_name: &str,
) -> Result<Vec<String>, StoreError> {
    let candidates: Vec<String> = if id_or_name.starts_with("trg_") {
        vec![id_or_name.to_owned()]
    } else {
        [
            TriggerKind::Cron,
            TriggerKind::Webhook,
            TriggerKind::Event,
            TriggerKind::Hook,
        ]
        .into_iter()
        .map(|kind| {
            super::registry::id_of(&super::registry::key_of(tenant, project, kind, id_or_name))
        })
        .collect()
    };
    let mut kept = Vec::new();
    for id in candidates {
        let first = catalog.scan(BY_TRIGGER, &format!("{id}/"), None, 1)?;
        // An id names one project's trigger; still check the scope.
        let ours = first.iter().any(|(_, bytes)| {
            serde_json::from_slice::<Delivery>(bytes)
                .is_ok_and(|d| d.tenant == tenant && d.project == project)
        });
        if ours {
            kept.push(id);
        }
    }
    Ok(kept)
}

/// The largest page of deliveries.
pub const MAX_PAGE: usize = 1000;

/// A page of deliveries, newest first, and the cursor of the next page.
#[derive(Debug, Clone)]
pub struct DeliveryPage {
    /// The deliveries.
    pub deliveries: Vec<Delivery>,
    /// Pass as `cursor` for the next page; absent on the last.
    pub next: Option<String>,
}

impl DeliveryPage {
    /// `{deliveries, next?}`, each delivery as its [`Delivery::view`].
    pub fn view(&self) -> serde_json::Value {
        let mut v = serde_json::json!({
            "deliveries": self.deliveries.iter().map(Delivery::view).collect::<Vec<_>>(),
        });
        if let Some(next) = &self.next {
            v["next"] = next.clone().into();
        }
        v
    }
}

/// The newest delivery of the trigger `reg`, if it has any.
pub fn last(catalog: &dyn Catalog, reg: &Registration) -> Result<Option<Delivery>, StoreError> {
    let page = list(
        catalog,
        &reg.tenant,
        &reg.project,
        &DeliveryQuery {
            trigger_id: Some(reg.id.clone()),
            limit: 1,
            ..DeliveryQuery::default()
        },
    )?;
    Ok(page.deliveries.into_iter().next())
}

/// Deliveries of a project, newest first.
pub fn list(
    catalog: &dyn Catalog,
    tenant: &str,
    project: &str,
    q: &DeliveryQuery,
) -> Result<DeliveryPage, StoreError> {
    let (table, prefix) = match &q.trigger_id {
        Some(id) => (BY_TRIGGER, format!("{id}/")),
        None => (BY_PROJECT, format!("{tenant}/{project}/")),
    };
    let limit = q.limit.clamp(1, MAX_PAGE);
    let mut out = Vec::new();
    let mut after = q.cursor.as_ref().map(|c| format!("{prefix}{c}"));
    // The key of the page's last delivery once the page is full: the next page's cursor if
    // one more delivery matches, so the last page says it is the last.
    let mut full_at: Option<String> = None;
    // Filtering by status may need several reads; each is bounded.
    loop {
        let rows = catalog.scan(table, &prefix, after.as_deref(), MAX_PAGE)?;
        let done = rows.len() < MAX_PAGE;
        for (key, bytes) in rows {
            after = Some(key);
            let Ok(d) = serde_json::from_slice::<Delivery>(&bytes) else {
                continue;
            };
            // A trigger id names one project's trigger; still check the scope.
            if d.tenant != tenant || d.project != project {
                continue;
            }
            if q.status.is_some_and(|s| s != d.status) {
                continue;
            }
            if let Some(last) = full_at {
                return Ok(DeliveryPage {
                    deliveries: out,
                    next: Some(last[prefix.len()..].to_owned()),
                });
            }
            out.push(d);
            if out.len() == limit {
                full_at.clone_from(&after);
            }
        }
        if done {
            return Ok(DeliveryPage {
                deliveries: out,
                next: None,
            });
        }
    }
}

/// How long and how many deliveries are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Deliveries older than this are deleted.
    pub max_age: Duration,
    /// At most this many per trigger (the newest).
    pub max_per_trigger: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Self {
            max_age: Duration::from_secs(7 * 24 * 3600),
            max_per_trigger: 10_000,
        }
    }
}

/// Deletes deliveries past the retention; how many.
pub fn prune(
    catalog: &dyn Catalog,
    retention: Retention,
    now_ms: i64,
) -> Result<usize, StoreError> {
    let oldest =
        now_ms.saturating_sub(i64::try_from(retention.max_age.as_millis()).unwrap_or(i64::MAX));
    let mut gone = 0;
    let mut after: Option<String> = None;
    let mut current_trigger = String::new();
    let mut kept = 0usize;
    loop {
        let rows = catalog.scan(BY_TRIGGER, "", after.as_deref(), MAX_PAGE)?;
        let done = rows.len() < MAX_PAGE;
        let mut doomed: Vec<Delivery> = Vec::new();
        for (key, bytes) in rows {
            after = Some(key.clone());
            let Ok(d) = serde_json::from_slice::<Delivery>(&bytes) else {
                catalog.delete(BY_TRIGGER, &[key])?;
                continue;
            };
            if d.trigger_id != current_trigger {
                current_trigger.clone_from(&d.trigger_id);
                kept = 0;
            }
            if d.at_ms < oldest || kept >= retention.max_per_trigger {
                doomed.push(d);
            } else {
                kept += 1;
            }
        }
        let by_trigger: Vec<String> = doomed
            .iter()
            .map(|d| format!("{}/{}", d.trigger_id, order_key(d)))
            .collect();
        let by_project: Vec<String> = doomed
            .iter()
            .map(|d| format!("{}/{}/{}", d.tenant, d.project, order_key(d)))
            .collect();
        gone += catalog.delete(BY_TRIGGER, &by_trigger)?;
        catalog.delete(BY_PROJECT, &by_project)?;
        if done {
            return Ok(gone);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use magrathea_core::MemoryStore;
    use magrathea_yaml::Scope;

    use super::*;

    fn reg(name: &str) -> Registration {
        Registration::new(&Scope::new("acme", "shop"), TriggerKind::Webhook, name, "x")
    }

    /// The project's newest ten deliveries.
    fn first_ten(store: &MemoryStore) -> DeliveryPage {
        let q = DeliveryQuery {
            limit: 10,
            ..Default::default()
        };
        list(store, "acme", "shop", &q).unwrap()
    }

    fn statuses(page: &DeliveryPage) -> Vec<i64> {
        page.deliveries.iter().map(|d| d.at_ms).collect()
    }

    #[test]
    fn deliveries_list_newest_first_in_pages_by_project_and_by_trigger() {
        let store = MemoryStore::new();
        let (a, b) = (reg("a"), reg("b"));
        for t in 1..=5 {
            record(
                &store,
                &Delivery::new(&a, DeliveryStatus::Accepted, t * 1000),
            )
            .unwrap();
        }
        record(&store, &Delivery::new(&b, DeliveryStatus::Rejected, 2500)).unwrap();
        let all = first_ten(&store);
        assert_eq!(statuses(&all), [5000, 4000, 3000, 2500, 2000, 1000]);
        let q = DeliveryQuery {
            trigger_id: Some(a.id.clone()),
            limit: 2,
            ..Default::default()
        };
        let first = list(&store, "acme", "shop", &q).unwrap();
        assert_eq!(statuses(&first), [5000, 4000]);
        let second = list(
            &store,
            "acme",
            "shop",
            &DeliveryQuery {
                cursor: first.next.clone(),
                ..q.clone()
            },
        )
        .unwrap();
        assert_eq!(statuses(&second), [3000, 2000]);
        let rejected = list(
            &store,
            "acme",
            "shop",
            &DeliveryQuery {
                status: Some(DeliveryStatus::Rejected),
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(statuses(&rejected), [2500]);
        // Another project sees none of them.
        let other = list(
            &store,
            "acme",
            "lab",
            &DeliveryQuery {
                limit: 10,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(other.deliveries.is_empty());
    }

    /// A catalog whose first write to the project's listing fails, as a crash between the two
    /// writes of a delivery would leave it.
    struct CrashBeforeProjectWrite {
        inner: MemoryStore,
        crashed: std::sync::atomic::AtomicBool,
    }

    impl CrashBeforeProjectWrite {
        fn crash_at(&self, table: &str) -> Result<(), StoreError> {
            if table == BY_PROJECT && !self.crashed.swap(true, std::sync::atomic::Ordering::SeqCst)
            {
                return Err(StoreError::io("the process stopped here"));
            }
            Ok(())
        }
    }

    impl Catalog for CrashBeforeProjectWrite {
        fn get(&self, table: &str, key: &str) -> Result<Option<Vec<u8>>, StoreError> {
            self.inner.get(table, key)
        }
        fn put(&self, table: &str, key: &str, value: &[u8]) -> Result<(), StoreError> {
            self.crash_at(table)?;
            self.inner.put(table, key, value)
        }
        fn insert_new(
            &self,
            table: &str,
            key: &str,
            value: &[u8],
        ) -> Result<Option<Vec<u8>>, StoreError> {
            self.crash_at(table)?;
            self.inner.insert_new(table, key, value)
        }
        fn swap(
            &self,
            table: &str,
            key: &str,
            expected: Option<&[u8]>,
            value: &[u8],
        ) -> Result<bool, StoreError> {
            self.inner.swap(table, key, expected, value)
        }
        fn delete(&self, table: &str, keys: &[String]) -> Result<usize, StoreError> {
            self.inner.delete(table, keys)
        }
        fn scan(
            &self,
            table: &str,
            prefix: &str,
            after: Option<&str>,
            limit: usize,
        ) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
            self.inner.scan(table, prefix, after, limit)
        }
    }

    /// A tick whose delivery was half recorded before a crash (the trigger's listing has it,
    /// the project's not) is in both once the pass after the restart records it again.
    #[test]
    fn a_tick_recorded_again_after_a_crash_between_its_two_writes_is_in_both_listings() {
        let catalog = CrashBeforeProjectWrite {
            inner: MemoryStore::new(),
            crashed: Default::default(),
        };
        let r = reg("nightly");
        let d = Delivery::new(&r, DeliveryStatus::Accepted, 0);
        assert!(record_tick(&catalog, &d, 60_000).is_err(), "the crash");
        record_tick(&catalog, &d, 60_000).unwrap();
        record_tick(&catalog, &d, 60_000).unwrap();
        let by_project = first_ten(&catalog.inner);
        assert_eq!(statuses(&by_project), [60_000]);
        let q = DeliveryQuery {
            trigger_id: Some(r.id.clone()),
            limit: 10,
            ..Default::default()
        };
        let by_trigger = list(&catalog.inner, "acme", "shop", &q).unwrap();
        assert_eq!(statuses(&by_trigger), [60_000]);
    }

    #[test]
    fn pruning_keeps_the_retention_by_age_and_by_count() {
        let store = MemoryStore::new();
        let a = reg("a");
        for t in 1..=20 {
            record(
                &store,
                &Delivery::new(&a, DeliveryStatus::Accepted, t * 1000),
            )
            .unwrap();
        }
        let retention = Retention {
            max_age: Duration::from_secs(15),
            max_per_trigger: 4,
        };
        // Now = 25 s: older than 10 s goes, and of the rest only the newest 4 stay.
        let gone = prune(&store, retention, 25_000).unwrap();
        assert_eq!(gone, 16);
        let left = list(
            &store,
            "acme",
            "shop",
            &DeliveryQuery {
                limit: 100,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(statuses(&left), [20_000, 19_000, 18_000, 17_000]);
    }

    #[test]
    fn a_page_cursor_is_a_key_of_the_list() {
        let d = Delivery::new(&reg("a"), DeliveryStatus::Accepted, 1_772_323_200_000);
        assert!(is_cursor(&order_key(&d)));
        for bad in ["zz", "", "0/0", &format!("{}x", order_key(&d))] {
            assert!(!is_cursor(bad), "{bad}");
        }
    }

    #[test]
    fn a_tick_is_recorded_once_whoever_records_it() {
        let store = MemoryStore::new();
        let a = reg("a");
        let first = Delivery::new(&a, DeliveryStatus::Accepted, 1).run("r1");
        let second = Delivery::new(&a, DeliveryStatus::Skipped, 2).reason("overlap");
        record_tick(&store, &first, 60_000).unwrap();
        record_tick(&store, &second, 60_000).unwrap();
        let all = first_ten(&store);
        assert_eq!(all.deliveries.len(), 1);
        assert_eq!(all.deliveries[0].run_id.as_deref(), Some("r1"));
        assert_eq!(all.deliveries[0].tick_ms, Some(60_000));
    }

    #[test]
    fn two_triggers_firing_on_one_tick_keep_a_record_each() {
        let store = MemoryStore::new();
        let (a, b) = (reg("a"), reg("b"));
        let of_a = Delivery::new(&a, DeliveryStatus::Accepted, 1).run("ra");
        let of_b = Delivery::new(&b, DeliveryStatus::Failed, 1).reason("start_refused");
        record_tick(&store, &of_a, 60_000).unwrap();
        record_tick(&store, &of_b, 60_000).unwrap();
        let all = first_ten(&store);
        let mut triggers: Vec<&str> = all
            .deliveries
            .iter()
            .map(|d| d.trigger_id.as_str())
            .collect();
        triggers.sort_unstable();
        let mut expected = vec![a.id.as_str(), b.id.as_str()];
        expected.sort_unstable();
        assert_eq!(triggers, expected);
    }
}
