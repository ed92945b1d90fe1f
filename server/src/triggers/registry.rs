//! Registrations: every trigger the documents declare, one per document and kind, kept in the
//! store's catalog so that the API, the command line and every worker see the same list.
//!
//! A project's triggers come from its own `_vance/scheduler/`, `_vance/events/` and
//! `_vance/hooks/` directories (tenant-wide `_tenant/_vance/` documents declare no triggers:
//! a trigger starts runs in one project). [`Triggers::resync`](super::Triggers::resync) rebuilds a project's registrations from
//! its documents: at start, when a document is written through the API, on
//! `POST …/triggers/resync`, and every [`RESYNC_EVERY`](super::RESYNC_EVERY) for files changed
//! on disk.
//!
//! Catalog tables: `trigger.registration` (`{tenant}/{project}/{kind}/{name}` → JSON),
//! `trigger.id` (id → that key), `trigger.paused` (id → pause by an operator, kept across
//! resyncs), `trigger.webhook` (SHA-256 of a webhook's path token → key), `trigger.writer`
//! (`{tenant}/{project}/{document}` → who last wrote the document through the API, and the
//! digest of what they wrote).

use magrathea_core::store::catalog::scan_all;
use magrathea_core::{Catalog, StoreError};
use magrathea_yaml::Scope;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `{tenant}/{project}/{kind}/{name}` → [`Registration`].
pub(crate) const REGISTRATIONS: &str = "trigger.registration";
/// Registration id → its key.
const IDS: &str = "trigger.id";
/// Registration id → paused by an operator (`PATCH … {enabled: false}`, `schedules pause`).
const PAUSED: &str = "trigger.paused";
/// SHA-256 (hex) of a webhook path token → the registration's key.
const WEBHOOKS: &str = "trigger.webhook";
/// `{tenant}/{project}/{document}` → [`Writer`]: who last wrote a trigger document through
/// the API.
const WRITERS: &str = "trigger.writer";
/// SHA-256 (hex) of a webhook path token → [`TokenTenant`]: the tenant whose webhook took it,
/// and when it let go of it.
const WEBHOOK_TENANTS: &str = "trigger.webhook-tenant";

/// How long a path token stays its tenant's after its last webhook let go of it (a document
/// edited or removed): meanwhile a webhook of another tenant cannot take it, so a delivery
/// meant for one tenant never starts a run in another after a moment's edit.
pub const WEBHOOK_TOKEN_RESERVATION: std::time::Duration =
    std::time::Duration::from_secs(30 * 24 * 3600);
/// Entries read per catalog page.
const PAGE: usize = 1000;

/// What starts runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TriggerKind {
    /// A scheduler document (`_vance/scheduler/<name>.yaml`): cron or a one-shot `at`.
    Cron,
    /// An event document's `webhook:` block: `POST /v1/workflow-webhooks/{pathToken}`.
    Webhook,
    /// An event document's `subscribe:` block: an internal event.
    Event,
    /// A hook document (`_vance/hooks/<name>.yaml`): a script run on an internal event.
    Hook,
}

impl TriggerKind {
    /// The word in JSON, keys and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Cron => "cron",
            Self::Webhook => "webhook",
            Self::Event => "event",
            Self::Hook => "hook",
        }
    }

    /// The documents directory under `_vance/` that declares it.
    pub fn directory(self) -> &'static str {
        match self {
            Self::Cron => "scheduler",
            Self::Webhook | Self::Event => "events",
            Self::Hook => "hooks",
        }
    }
}

/// One trigger, as the catalog keeps it and the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    /// A stable id: `trg_` and 24 hex digits of the SHA-256 of its key.
    pub id: String,
    /// The tenant.
    pub tenant: String,
    /// The project.
    pub project: String,
    /// What kind of trigger.
    #[serde(rename = "triggerType")]
    pub kind: TriggerKind,
    /// The document's name.
    pub name: String,
    /// The document, relative to the project (`_vance/scheduler/nightly.yaml`).
    pub document: String,
    /// The workflow it starts (none for a hook, whose script decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The document's `description`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The document's `enabled` (default true).
    pub enabled_in_document: bool,
    /// Paused by an operator; kept across resyncs.
    #[serde(default)]
    pub paused: bool,
    /// Whether it fires: enabled in its document, not paused and valid.
    #[serde(default)]
    pub active: bool,
    /// Why the document does not make a working trigger (it then never fires).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// A schedule's cron expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cron: Option<String>,
    /// A one-shot schedule's instant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    /// A schedule's time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// A schedule's overlap policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overlap: Option<String>,
    /// The internal event a subscription or hook listens to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// Its filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// A webhook's dedupe window in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dedupe_window_sec: Option<u64>,
    /// SHA-256 of the webhook's path token (never the token); not shown by the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_token_sha256: Option<String>,
    /// SHA-256 of the document's text: a changed document is a changed registration.
    pub digest: String,
    /// Who wrote the document, when it was written through the API and has not changed on
    /// disk since: the runs the trigger starts carry them as `requestedBy` (unless someone
    /// fired it by hand), so a gate's `selfApproval: false` refuses them too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
    /// The editor graph's trigger node it came from (Friday's `trigger_node_id`): the
    /// document's `params.triggerNodeId`, which a graph import writes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trigger_node_id: Option<String>,
}

impl Registration {
    /// The catalog key: `{tenant}/{project}/{kind}/{name}`.
    pub fn key(&self) -> String {
        key_of(&self.tenant, &self.project, self.kind, &self.name)
    }

    /// The run scope.
    pub fn scope(&self) -> Scope {
        Scope::new(&self.tenant, &self.project)
    }

    /// A new registration of `kind` for the document `name` of `scope`, with `text`'s digest.
    pub fn new(scope: &Scope, kind: TriggerKind, name: &str, text: &str) -> Self {
        let key = key_of(&scope.tenant, &scope.project, kind, name);
        Self {
            id: id_of(&key),
            tenant: scope.tenant.clone(),
            project: scope.project.clone(),
            kind,
            name: name.to_owned(),
            document: format!("_vance/{}/{name}.yaml", kind.directory()),
            workflow: None,
            description: None,
            enabled_in_document: true,
            paused: false,
            active: false,
            error: None,
            cron: None,
            at: None,
            timezone: None,
            overlap: None,
            event: None,
            filter: None,
            dedupe_window_sec: None,
            webhook_token_sha256: None,
            digest: sha256_hex(text),
            written_by: None,
            trigger_node_id: None,
        }
    }

    /// Sets `active` from the document's `enabled:`, the pause and the error.
    pub fn settle(&mut self) {
        self.active = self.enabled_in_document && !self.paused && self.error.is_none();
    }
}

/// The SHA-256 of `text` in lower-case hex: document digests, ids, dedupe keys.
pub fn sha256_hex(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The catalog key of a trigger.
pub fn key_of(tenant: &str, project: &str, kind: TriggerKind, name: &str) -> String {
    format!("{tenant}/{project}/{}/{name}", kind.as_str())
}

/// The id of the trigger with `key`.
pub fn id_of(key: &str) -> String {
    format!("trg_{}", &sha256_hex(key)[..24])
}

fn store_err(e: serde_json::Error) -> StoreError {
    StoreError::io(format!("a trigger registration does not decode: {e}"))
}

fn decode(bytes: &[u8]) -> Result<Registration, StoreError> {
    serde_json::from_slice(bytes).map_err(store_err)
}

/// Whether an operator paused the trigger `id`.
pub fn is_paused(catalog: &dyn Catalog, id: &str) -> Result<bool, StoreError> {
    Ok(catalog.get(PAUSED, id)?.is_some())
}

/// Pauses (or resumes) the trigger `id`. A resumed schedule does not catch up on the ticks
/// it missed while paused.
pub fn set_paused(catalog: &dyn Catalog, id: &str, paused: bool) -> Result<(), StoreError> {
    if paused {
        catalog.put(PAUSED, id, b"1")
    } else {
        catalog.delete(PAUSED, &[id.to_owned()]).map(drop)
    }
}

/// Who last wrote a trigger document through the API, and the digest of what they wrote.
#[derive(Debug, Serialize, Deserialize)]
struct Writer {
    by: String,
    digest: String,
}

fn writer_key(scope: &Scope, document: &str) -> String {
    format!("{}/{}/{document}", scope.tenant, scope.project)
}

/// Records that `by` wrote `text` to `document` (`_vance/…`) of `scope` through the API.
pub fn record_writer(
    catalog: &dyn Catalog,
    scope: &Scope,
    document: &str,
    text: &str,
    by: &str,
) -> Result<(), StoreError> {
    let writer = Writer {
        by: by.to_owned(),
        digest: sha256_hex(text),
    };
    let bytes = serde_json::to_vec(&writer).map_err(store_err)?;
    catalog.put(WRITERS, &writer_key(scope, document), &bytes)
}

/// Forgets the writer of `document` of `scope` (the document was removed).
pub fn forget_writer(
    catalog: &dyn Catalog,
    scope: &Scope,
    document: &str,
) -> Result<(), StoreError> {
    catalog
        .delete(WRITERS, &[writer_key(scope, document)])
        .map(drop)
}

/// Who wrote `document` of `scope` through the API, if what they wrote is the text whose
/// digest is `digest` (a document changed on disk since has no known writer).
pub fn writer_of(
    catalog: &dyn Catalog,
    scope: &Scope,
    document: &str,
    digest: &str,
) -> Result<Option<String>, StoreError> {
    let Some(bytes) = catalog.get(WRITERS, &writer_key(scope, document))? else {
        return Ok(None);
    };
    let writer: Writer = serde_json::from_slice(&bytes).map_err(store_err)?;
    Ok((writer.digest == digest).then_some(writer.by))
}

/// The registrations a project's documents declare, each with the writer recorded for its
/// document's current text ([`writer_of`]): what replaces the project's registrations.
pub fn scan_with_writers(
    docs: &magrathea_yaml::DocumentSource,
    catalog: &dyn Catalog,
    scope: &Scope,
) -> Result<Vec<Registration>, StoreError> {
    let mut regs = super::scan_scope(docs, scope);
    for reg in &mut regs {
        reg.written_by = writer_of(catalog, scope, &reg.document, &reg.digest)?;
    }
    Ok(regs)
}

/// The registrations of a project (of one kind, when given), by kind and name, with their
/// pause applied.
pub fn list(
    catalog: &dyn Catalog,
    scope: &Scope,
    kind: Option<TriggerKind>,
) -> Result<Vec<Registration>, StoreError> {
    let prefix = match kind {
        Some(k) => format!("{}/{}/{}/", scope.tenant, scope.project, k.as_str()),
        None => format!("{}/{}/", scope.tenant, scope.project),
    };
    scan_registrations(catalog, &prefix)
}

/// Every registration of every project (for the scheduler and the event hub).
pub fn list_all(catalog: &dyn Catalog) -> Result<Vec<Registration>, StoreError> {
    scan_registrations(catalog, "")
}

/// The registrations under `prefix`, with the pauses read in one scan.
fn scan_registrations(
    catalog: &dyn Catalog,
    prefix: &str,
) -> Result<Vec<Registration>, StoreError> {
    let mut out = Vec::new();
    scan_all(catalog, REGISTRATIONS, prefix, PAGE, |_, bytes| {
        out.push(decode(&bytes)?);
        Ok(())
    })?;
    let paused = paused_ids(catalog)?;
    for reg in &mut out {
        reg.paused = paused.contains(&reg.id);
        reg.settle();
    }
    Ok(out)
}

/// The ids of every paused trigger.
fn paused_ids(catalog: &dyn Catalog) -> Result<std::collections::HashSet<String>, StoreError> {
    let mut ids = std::collections::HashSet::new();
    scan_all(catalog, PAUSED, "", PAGE, |key, _| {
        ids.insert(key);
        Ok(())
    })?;
    Ok(ids)
}

/// The registration with id `id`.
pub fn by_id(catalog: &dyn Catalog, id: &str) -> Result<Option<Registration>, StoreError> {
    let Some(key) = catalog.get(IDS, id)? else {
        return Ok(None);
    };
    let key = String::from_utf8_lossy(&key).into_owned();
    by_key(catalog, &key)
}

/// The registration with catalog key `key`.
pub fn by_key(catalog: &dyn Catalog, key: &str) -> Result<Option<Registration>, StoreError> {
    let Some(bytes) = catalog.get(REGISTRATIONS, key)? else {
        return Ok(None);
    };
    let mut reg = decode(&bytes)?;
    reg.paused = is_paused(catalog, &reg.id)?;
    reg.settle();
    Ok(Some(reg))
}

/// The webhook whose path token hashes to `sha256`.
pub fn by_webhook_token(
    catalog: &dyn Catalog,
    sha256: &str,
) -> Result<Option<Registration>, StoreError> {
    let Some(key) = catalog.get(WEBHOOKS, sha256)? else {
        return Ok(None);
    };
    let key = String::from_utf8_lossy(&key).into_owned();
    Ok(by_key(catalog, &key)?.filter(|r| r.webhook_token_sha256.as_deref() == Some(sha256)))
}

/// What a resync changed.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resynced {
    /// Registrations added or changed.
    pub updated: usize,
    /// Registrations removed (their documents are gone).
    pub removed: usize,
    /// Registrations now in the project.
    pub total: usize,
}

/// Makes the catalog hold exactly `regs` for `scope` (registrations of other projects are
/// untouched). Unchanged registrations are not written again.
pub fn replace_scope(
    catalog: &dyn Catalog,
    scope: &Scope,
    regs: &[Registration],
) -> Result<Resynced, StoreError> {
    let old = list(catalog, scope, None)?;
    let mut report = Resynced {
        total: regs.len(),
        ..Resynced::default()
    };
    let regs = claim_webhook_tokens(catalog, scope, regs)?;
    for reg in &regs {
        let key = reg.key();
        let mut stored = reg.clone();
        // The pause lives in its own table; the stored copy never carries it.
        stored.paused = false;
        stored.active = false;
        let bytes = serde_json::to_vec(&stored).map_err(store_err)?;
        if let Some(hash) = &reg.webhook_token_sha256 {
            reserve_webhook_token(catalog, hash, &reg.tenant)?;
        }
        if catalog.get(REGISTRATIONS, &key)?.as_deref() == Some(&bytes[..]) {
            continue;
        }
        if let Some(previous) = old.iter().find(|o| o.key() == key)
            && let Some(hash) = &previous.webhook_token_sha256
            && previous.webhook_token_sha256 != reg.webhook_token_sha256
        {
            release_webhook_token(catalog, hash, &key)?;
        }
        catalog.put(REGISTRATIONS, &key, &bytes)?;
        catalog.put(IDS, &reg.id, key.as_bytes())?;
        if let Some(hash) = &reg.webhook_token_sha256 {
            catalog.put(WEBHOOKS, hash, key.as_bytes())?;
        }
        report.updated += 1;
    }
    for gone in old
        .iter()
        .filter(|o| !regs.iter().any(|r| r.key() == o.key()))
    {
        catalog.delete(REGISTRATIONS, &[gone.key()])?;
        catalog.delete(IDS, std::slice::from_ref(&gone.id))?;
        catalog.delete(PAUSED, std::slice::from_ref(&gone.id))?;
        if let Some(hash) = &gone.webhook_token_sha256 {
            release_webhook_token(catalog, hash, &gone.key())?;
        }
        super::scheduler::forget(catalog, gone)?;
        report.removed += 1;
    }
    Ok(report)
}

/// Gives each webhook of `regs` (all of `scope`, replacing its registrations) its path token
/// unless another webhook holds it: one of another project or tenant registered with it
/// before, or, among `regs`, the one holding it now, else the one whose key sorts first. A
/// holder of `scope` that `regs` no longer has (a removed or renamed document) holds nothing.
/// A webhook whose token is taken is registered with `[MAG-TR003]` and without the token, so
/// it answers nothing and the holder keeps answering.
fn claim_webhook_tokens(
    catalog: &dyn Catalog,
    scope: &Scope,
    regs: &[Registration],
) -> Result<Vec<Registration>, StoreError> {
    let own = format!("{}/{}/", scope.tenant, scope.project);
    let mut out = regs.to_vec();
    // The webhook holding its token keeps it; the others claim in key order.
    let mut order = Vec::with_capacity(out.len());
    for (i, reg) in out.iter().enumerate() {
        let holds = match &reg.webhook_token_sha256 {
            Some(hash) => catalog.get(WEBHOOKS, hash)?.as_deref() == Some(reg.key().as_bytes()),
            None => false,
        };
        order.push((!holds, reg.key(), i));
    }
    order.sort();
    let mut claimed: Vec<(String, String)> = Vec::new();
    for (_, key, i) in order {
        let Some(hash) = out[i].webhook_token_sha256.clone() else {
            continue;
        };
        let holder = match claimed.iter().find(|(h, _)| *h == hash) {
            Some((_, holder)) => Some(holder.clone()),
            None => match by_webhook_token(catalog, &hash)?
                .map(|r| r.key())
                .filter(|holder| !holder.starts_with(&own))
            {
                Some(holder) => Some(holder),
                // No webhook holds it, but another tenant's let go of it lately.
                None => reserved_for_another(catalog, &hash, &scope.tenant)?
                    .then(|| "another tenant".to_owned()),
            },
        };
        match holder {
            Some(holder) => {
                let reg = &mut out[i];
                reg.webhook_token_sha256 = None;
                let same_project = holder.starts_with(&own);
                reg.error = Some(format!(
                    "[MAG-TR003] the webhook's path token is already the path token of {}; \
                     give each webhook a token of its own",
                    if same_project {
                        let name = holder.rsplit('/').next().unwrap_or_default();
                        format!("the webhook `{name}` of this project")
                    } else {
                        "another webhook".to_owned()
                    }
                ));
            }
            None => claimed.push((hash, key)),
        }
    }
    Ok(out)
}

/// Forgets that the path token hashing to `hash` leads to `key`, unless it leads elsewhere
/// (another webhook holds it).
fn release_webhook_token(catalog: &dyn Catalog, hash: &str, key: &str) -> Result<(), StoreError> {
    if catalog.get(WEBHOOKS, hash)?.as_deref() == Some(key.as_bytes()) {
        catalog.delete(WEBHOOKS, &[hash.to_owned()])?;
        let tenant = key.split('/').next().unwrap_or_default();
        if let Some(mut owner) = token_tenant(catalog, hash)?
            && owner.tenant == tenant
        {
            owner.released_ms = Some(wall_ms());
            put_token_tenant(catalog, hash, &owner)?;
        }
    }
    Ok(())
}

/// Whose a path token is (see [`WEBHOOK_TENANTS`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TokenTenant {
    tenant: String,
    /// When its last webhook let go of it; `None` while one holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    released_ms: Option<i64>,
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn token_tenant(catalog: &dyn Catalog, hash: &str) -> Result<Option<TokenTenant>, StoreError> {
    match catalog.get(WEBHOOK_TENANTS, hash)? {
        None => Ok(None),
        // An entry that does not parse reserves nothing.
        Some(bytes) => Ok(serde_json::from_slice(&bytes).ok()),
    }
}

fn put_token_tenant(
    catalog: &dyn Catalog,
    hash: &str,
    owner: &TokenTenant,
) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(owner).map_err(store_err)?;
    catalog.put(WEBHOOK_TENANTS, hash, &bytes)
}

/// Notes that a webhook of `tenant` holds the token, unless that is noted already.
fn reserve_webhook_token(
    catalog: &dyn Catalog,
    hash: &str,
    tenant: &str,
) -> Result<(), StoreError> {
    let owner = TokenTenant {
        tenant: tenant.to_owned(),
        released_ms: None,
    };
    if token_tenant(catalog, hash)?.as_ref() != Some(&owner) {
        put_token_tenant(catalog, hash, &owner)?;
    }
    Ok(())
}

/// Whether another tenant's webhook let go of the token less than
/// [`WEBHOOK_TOKEN_RESERVATION`] ago (or holds it still).
fn reserved_for_another(
    catalog: &dyn Catalog,
    hash: &str,
    tenant: &str,
) -> Result<bool, StoreError> {
    let Some(owner) = token_tenant(catalog, hash)? else {
        return Ok(false);
    };
    let window = i64::try_from(WEBHOOK_TOKEN_RESERVATION.as_millis()).unwrap_or(i64::MAX);
    Ok(owner.tenant != tenant
        && owner
            .released_ms
            .is_none_or(|at| wall_ms().saturating_sub(at) < window))
}

/// Forgets the tenants of path tokens let go of more than [`WEBHOOK_TOKEN_RESERVATION`] ago;
/// how many.
pub fn prune_webhook_reservations(catalog: &dyn Catalog) -> Result<usize, StoreError> {
    let window = i64::try_from(WEBHOOK_TOKEN_RESERVATION.as_millis()).unwrap_or(i64::MAX);
    let now = wall_ms();
    let mut expired = Vec::new();
    scan_all(catalog, WEBHOOK_TENANTS, "", PAGE, |hash, bytes| {
        let owner: Option<TokenTenant> = serde_json::from_slice(&bytes).ok();
        if owner.is_none_or(|o| {
            o.released_ms
                .is_some_and(|at| now.saturating_sub(at) >= window)
        }) {
            expired.push(hash);
        }
        Ok(())
    })?;
    if expired.is_empty() {
        return Ok(0);
    }
    catalog.delete(WEBHOOK_TENANTS, &expired)
}

/// The projects that hold registrations (`tenant`, `project`), for removing those of deleted
/// projects.
pub fn registered_scopes(catalog: &dyn Catalog) -> Result<Vec<Scope>, StoreError> {
    let mut scopes: Vec<Scope> = Vec::new();
    for reg in list_all(catalog)? {
        if !scopes
            .iter()
            .any(|s| s.tenant == reg.tenant && s.project == reg.project)
        {
            scopes.push(reg.scope());
        }
    }
    Ok(scopes)
}

/// The JSON the API shows of a registration: everything but the webhook token's hash.
pub fn shown(reg: &Registration) -> Value {
    let mut v = serde_json::to_value(reg).unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        map.remove("webhookTokenSha256");
        map.remove("digest");
    }
    v
}
