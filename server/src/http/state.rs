//! What every handler shares: the engine, the YAML runtime, the tokens and the metrics; and
//! the scope checks every run, inbox and document route goes through.

use std::path::Path;
use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use magrathea_core::{Engine, RunError, RunId, RunSummary, RunView, StartError, StartRequest};
use magrathea_yaml::{DocumentError, DocumentSource, Scope, YamlRuntime, YamlStartError};
use serde_json::Value;

use super::auth::{ApiScope, Auth, Principal, bearer};
use super::error::ApiError;
use super::follow::Followers;
use super::metrics::Metrics;

/// The state of the server, shared by every handler: one reference-counted pointer, since
/// the router clones it for every request. Its parts are [`AppParts`], reached through it.
#[derive(Debug, Clone)]
pub struct AppState(Arc<AppParts>);

impl AppState {
    /// The state made of `parts`.
    pub fn new(parts: AppParts) -> Self {
        Self(Arc::new(parts))
    }
}

impl std::ops::Deref for AppState {
    type Target = AppParts;

    fn deref(&self) -> &AppParts {
        &self.0
    }
}

/// What [`AppState`] holds.
#[derive(Debug)]
pub struct AppParts {
    /// The engine.
    pub engine: Engine,
    /// The YAML runtime (documents, interpreter).
    pub runtime: YamlRuntime,
    /// API tokens.
    pub auth: Arc<Auth>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Live followers (SSE streams, WebSocket subscriptions) against their caps.
    pub followers: Arc<Followers>,
    /// The triggers: schedules, webhooks, internal events and hooks.
    pub triggers: Arc<crate::triggers::Triggers>,
    /// What one project may hold under `_vance/`.
    pub document_quota: super::doc_quota::DocumentQuota,
    /// The requests reading whole journals at a time, per tenant and in all.
    pub journal_reads: super::journal_reads::JournalReads,
    /// The requests rebuilding trigger registrations at a time, per tenant and in all.
    pub trigger_rebuilds: super::trigger_rebuilds::TriggerRebuilds,
    /// Said once the server begins to stop: waits answer and live streams end then, rather
    /// than hold the stop for its whole grace.
    pub closing: Closing,
}

/// The server's stop as requests that could outlast it see it: a read waiting for its run,
/// an SSE stream, a WebSocket session.
#[derive(Debug)]
pub struct Closing(tokio::sync::watch::Sender<bool>);

impl Default for Closing {
    fn default() -> Self {
        Self(tokio::sync::watch::channel(false).0)
    }
}

/// Why a live stream or WebSocket session ends before its client closes it
/// ([`AppState::stream_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// The token it was opened with was revoked in the token file.
    Revoked,
    /// The server began to stop.
    Stopping,
}

impl Closing {
    /// Says that the server is stopping (once is enough; again changes nothing).
    pub fn close(&self) {
        self.0.send_replace(true);
    }

    /// Completes once the server has begun to stop.
    pub async fn closed(&self) {
        let mut rx = self.0.subscribe();
        let _ = rx.wait_for(|closing| *closing).await;
    }
}

impl AppState {
    /// The document source.
    pub fn docs(&self) -> &DocumentSource {
        self.runtime.documents()
    }

    /// The root directory of documents.
    pub fn root(&self) -> &Path {
        self.docs().root()
    }

    /// The caller of a tenant's route, from the `Authorization` header (see [`Auth`]).
    pub fn authorize(
        &self,
        headers: &HeaderMap,
        tenant: &str,
        scope: ApiScope,
    ) -> Result<Principal, ApiError> {
        self.auth.authorize(bearer(headers), tenant, scope)
    }

    /// The scope of a route's `{tenant}` and `{project}`. Names that cannot be directories
    /// of the document tree cannot hold anything: 404.
    pub fn scope(&self, tenant: &str, project: &str) -> Result<Scope, ApiError> {
        for name in [tenant, project] {
            if !plain_name(name) {
                return Err(ApiError::not_found(format!(
                    "project `{tenant}/{project}` not found"
                )));
            }
        }
        Ok(Scope::new(tenant, project))
    }

    /// A place for one more live follower of the caller: 429 once the token's subject holds
    /// as many as [`Followers`] allows.
    pub(crate) fn follower_slot(
        &self,
        tenant: &str,
        who: &Principal,
    ) -> Result<super::follow::FollowerSlot, ApiError> {
        self.followers.acquire(tenant, &who.subject).ok_or_else(|| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "MAG-RD003",
                format!(
                    "[MAG-RD003] `{}` already follows {} runs (SSE streams, WebSocket subscriptions and waiting reads of a run together), the most one subject may; close one first",
                    who.subject,
                    self.followers.max_per_subject()
                ),
            )
        })
    }

    /// Completes when what a live stream or session of `who` (signed in with `token`) holds
    /// must end, saying why: the token is revoked in the token file, or the server begins to
    /// stop.
    pub(crate) fn stream_end(
        &self,
        token: Option<String>,
        who: Principal,
    ) -> impl std::future::Future<Output = StreamEnd> + Send + 'static {
        let state = self.clone();
        async move {
            tokio::select! {
                () = state.auth.revoked(token.as_deref(), &who) => StreamEnd::Revoked,
                () = state.closing.closed() => StreamEnd::Stopping,
            }
        }
    }

    /// The summary of `run` if it belongs to `scope`; 404 otherwise, whether the run does not
    /// exist or belongs to another tenant or project.
    pub fn scoped_summary(&self, scope: &Scope, run: &str) -> Result<RunSummary, ApiError> {
        let not_found = || ApiError::not_found(format!("run `{run}` not found"));
        let id: RunId = run.parse().map_err(|_| not_found())?;
        match self.engine.summary(id) {
            Ok(s) if s.scope == scope.key() => Ok(s),
            Ok(_) | Err(RunError::NotFound(_)) => Err(not_found()),
            Err(e) => Err(ApiError::internal(e)),
        }
    }

    /// The run view of `run` if it belongs to `scope`; 404 otherwise.
    pub fn scoped_run(&self, scope: &Scope, run: &str) -> Result<RunView, ApiError> {
        let summary = self.scoped_summary(scope, run)?;
        self.view(summary.run_id)
    }

    /// The tenant of `run` (its scope's first part; empty for a run of no scope or none).
    pub(crate) fn tenant_of(&self, run: RunId) -> String {
        self.engine
            .summary(run)
            .ok()
            .and_then(|s| s.scope.as_str().split('/').next().map(str::to_owned))
            .unwrap_or_default()
    }

    /// Runs `read`, which reads whole journals of `tenant`'s runs, off the runtime's threads
    /// and within the tenant's share of such reads ([`super::journal_reads`]).
    pub(crate) async fn journal_read<T: Send + 'static>(
        &self,
        tenant: &str,
        read: impl FnOnce(&Engine) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let _permit = self.journal_reads.acquire(tenant).await;
        let engine = self.engine.clone();
        tokio::task::spawn_blocking(move || read(&engine))
            .await
            .map_err(ApiError::internal)
    }

    /// Runs `work`, which rebuilds registrations of `tenant`'s triggers from their documents
    /// (a resync), off the runtime's threads and within the tenant's share of such work
    /// ([`super::trigger_rebuilds`]).
    pub(crate) async fn trigger_work<T: Send + 'static>(
        &self,
        tenant: &str,
        work: impl FnOnce(&AppState) -> T + Send + 'static,
    ) -> Result<T, ApiError> {
        let _permit = self.trigger_rebuilds.acquire(tenant).await;
        let state = self.clone();
        tokio::task::spawn_blocking(move || work(&state))
            .await
            .map_err(ApiError::internal)
    }

    /// The run view of a run known to exist.
    pub fn view(&self, run: RunId) -> Result<RunView, ApiError> {
        self.engine.run(run).map_err(ApiError::internal)
    }

    /// Starts the YAML workflow `name` of `scope`, or, when the scope has no such document,
    /// the code workflow `name` registered with the engine (with `params` as its input);
    /// `trigger` labels the metric.
    pub async fn start(
        &self,
        scope: &Scope,
        name: &str,
        params: Value,
        started_by: &str,
        trigger: &str,
    ) -> Result<RunId, ApiError> {
        let starter = Starter::new(started_by);
        Ok(self
            .start_as(scope, name, params, &starter, trigger)
            .await?
            .0)
    }

    /// [`AppState::start`] with who asked and an idempotency key: the run and whether it is
    /// new (`false`: the key had started it before, and nothing was started now).
    pub async fn start_as(
        &self,
        scope: &Scope,
        name: &str,
        params: Value,
        starter: &Starter,
        trigger: &str,
    ) -> Result<(RunId, bool), ApiError> {
        self.start_from(scope, name, params, starter, trigger, false)
            .await
    }

    /// [`AppState::start_as`] of the live document, or with `draft` of the project's draft
    /// (`_vance/workflow-drafts/<name>.yaml`; never a code workflow).
    pub async fn start_from(
        &self,
        scope: &Scope,
        name: &str,
        params: Value,
        starter: &Starter,
        trigger: &str,
        draft: bool,
    ) -> Result<(RunId, bool), ApiError> {
        // A name no document may have and no code workflow has starts nothing, and finds no
        // earlier run by its key: the key's text (`…:{name}:{key}`) must not meet another
        // workflow's.
        if magrathea_yaml::runtime::check_name(name).is_err()
            && !self.engine.has_code_workflow(name)
        {
            return Err(
                self.start_error(YamlStartError::Document(DocumentError::InvalidName(
                    name.to_owned(),
                ))),
            );
        }
        if let Some(existing) = self.run_of_key(starter.idempotency_key.as_deref())? {
            return Ok((existing, false));
        }
        let yaml_params = if params.is_null() {
            Value::Object(Default::default())
        } else {
            params.clone()
        };
        // With a key, the run gets an id chosen here: a start whose key another start took
        // meanwhile (in this process, or on another worker) returns that start's run, and only
        // the caller whose id it is created it.
        let chosen = starter.idempotency_key.as_ref().map(|_| RunId::new());
        let apply = |r: StartRequest| StartRequest {
            run_id: chosen.or(r.run_id),
            ..starter.apply(r)
        };
        // A project is a directory of the tree: in a name no directory has, no document
        // (not even a tenant's, by the cascade) starts, only a registered code workflow.
        let no_project = || {
            ApiError::not_found(format!(
                "project `{}/{}` not found",
                scope.tenant, scope.project
            ))
        };
        let run = if self.docs().project_dir(scope).is_dir() {
            self.start_document(scope, name, params, yaml_params, &apply, draft)
                .await?
        } else if draft {
            return Err(no_project());
        } else {
            let request = apply(StartRequest::code(name, params).scope(scope.key()));
            self.start_code(request).await?.ok_or_else(no_project)?
        };
        let created = chosen.is_none_or(|id| id == run);
        if created {
            self.metrics.run_started(trigger);
        }
        Ok((run, created))
    }

    /// The run an earlier request with the idempotency key `key` started, if one did.
    pub(crate) fn run_of_key(&self, key: Option<&str>) -> Result<Option<RunId>, ApiError> {
        let Some(key) = key else {
            return Ok(None);
        };
        self.engine
            .store()
            .find_idempotency_key(key)
            .map_err(ApiError::internal)
    }

    /// Starts the document `name` of `scope` (its draft with `draft`), else a registered code
    /// workflow of that name.
    async fn start_document(
        &self,
        scope: &Scope,
        name: &str,
        params: Value,
        yaml_params: Value,
        apply: &(dyn Fn(StartRequest) -> StartRequest + Sync),
        draft: bool,
    ) -> Result<RunId, ApiError> {
        let started = if draft {
            match self.runtime.draft_request(scope, name, yaml_params, apply) {
                Ok(req) => self.engine.start(req).await.map_err(YamlStartError::from),
                Err(e) => Err(e),
            }
        } else {
            self.runtime
                .start_with(&self.engine, scope, name, yaml_params, apply)
                .await
        };
        let run = match started {
            Ok(run) => run,
            Err(e @ YamlStartError::Document(DocumentError::UnknownWorkflow { .. })) => {
                // No document of that name: a registered code workflow, else the document
                // error as it always was.
                let request = apply(StartRequest::code(name, params).scope(scope.key()));
                match self.start_code(request).await? {
                    Some(run) => run,
                    None => return Err(self.start_error(e)),
                }
            }
            Err(e) => return Err(self.start_error(e)),
        };
        Ok(run)
    }

    /// Starts the registered code workflow of `request`; `None` when there is none.
    async fn start_code(&self, request: StartRequest) -> Result<Option<RunId>, ApiError> {
        match self.engine.start(request).await {
            Ok(run) => Ok(Some(run)),
            Err(StartError::UnknownWorkflow(_)) => Ok(None),
            Err(e) => Err(ApiError::from_start(e)),
        }
    }

    /// 409 `MAG-VR001` when the workflow `name` of `scope` is archived: a run started again on
    /// its frozen definition is a new start too.
    pub(crate) fn refuse_if_archived(&self, scope: &Scope, name: &str) -> Result<(), ApiError> {
        if self.docs().is_archived(scope, name) {
            return Err(
                self.start_error(YamlStartError::Document(DocumentError::Archived(
                    name.to_owned(),
                ))),
            );
        }
        Ok(())
    }

    /// 404 `MAG-HTTP-WORKFLOW-NOT-FOUND` for `e`, an [`DocumentError::UnknownWorkflow`]: the
    /// name, the two documents looked for (relative to the root, as the command names them)
    /// and a near name of the scope, if one is.
    pub(crate) fn unknown_workflow(&self, e: &DocumentError) -> ApiError {
        let message = match e {
            DocumentError::UnknownWorkflow {
                name,
                project,
                tenant,
                hint,
            } => format!(
                "[MAG-DOC001] unknown workflow `{name}`: looked for {} and {}{hint}",
                self.label(project),
                self.label(tenant)
            ),
            other => other.to_string(),
        };
        ApiError::new(
            StatusCode::NOT_FOUND,
            "MAG-HTTP-WORKFLOW-NOT-FOUND",
            message,
        )
    }

    pub(crate) fn start_error(&self, e: YamlStartError) -> ApiError {
        match e {
            YamlStartError::Document(e @ DocumentError::UnknownWorkflow { .. }) => {
                self.unknown_workflow(&e)
            }
            YamlStartError::Document(e @ DocumentError::Archived(_)) => {
                ApiError::new(StatusCode::CONFLICT, "MAG-VR001", e.to_string())
            }
            YamlStartError::Document(e @ DocumentError::NoDraft(_)) => {
                ApiError::new(StatusCode::NOT_FOUND, "MAG-VR002", e.to_string())
            }
            YamlStartError::Document(e @ DocumentError::OutsideProject(_)) => ApiError::new(
                StatusCode::FORBIDDEN,
                "MAG-HTTP-OUTSIDE-PROJECT",
                e.to_string(),
            ),
            YamlStartError::Document(e @ DocumentError::InvalidName(_)) => {
                ApiError::bad_request("MAG-HTTP-INVALID-NAME", e.to_string())
            }
            YamlStartError::Invalid(diags) => {
                ApiError::invalid_diagnostics(diags.iter(), |p| self.label(Path::new(p)))
            }
            // An invalid document, located as a diagnostic.
            YamlStartError::Document(DocumentError::NotUtf8 { path, text }) => {
                self.not_utf8(&path, text)
            }
            YamlStartError::Document(e @ DocumentError::TooLarge { .. }) => {
                ApiError::invalid_document(vec![e.to_string()])
            }
            YamlStartError::Document(DocumentError::Io { path, message }) => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "MAG-HTTP-500",
                format!("[MAG-DOC003] cannot read {}: {message}", self.label(&path)),
            ),
            YamlStartError::Params(p) => {
                ApiError::bad_request("MAG-HTTP-INVALID-PARAMS", format!("[MAG-YP001] {p}"))
            }
            YamlStartError::Engine(e) => ApiError::from_start(e),
            e => ApiError::internal(e),
        }
    }

    /// The answer to a document at `path` that is not UTF-8 text: 422 with its diagnostic,
    /// the path as clients see it.
    pub(crate) fn not_utf8(&self, path: &Path, text: magrathea_exec::NotUtf8Text) -> ApiError {
        ApiError::invalid_document(vec![
            DocumentError::NotUtf8 {
                path: self.label(path).into(),
                text,
            }
            .to_string(),
        ])
    }

    /// A document path as clients see it: relative to the root (`acme/shop/_vance/…`), so
    /// the server's directory layout is not revealed. A path outside the root (which no
    /// document has) is shown by its file name only: never an absolute path of the server.
    pub fn label(&self, path: &Path) -> String {
        magrathea_exec::root_relative(self.root(), path)
    }
}

/// Whether `name` can be a tenant or project directory of the document tree: a plain name
/// (see [`magrathea_yaml::runtime::check_name`]) other than `_tenant`.
pub(crate) fn plain_name(name: &str) -> bool {
    magrathea_yaml::runtime::check_name(name).is_ok() && name != "_tenant"
}

/// Who starts a run over the API, and how it is deduplicated.
#[derive(Debug, Clone, Default)]
pub struct Starter {
    /// The authenticated starter: the token's subject, or `event:<name>`.
    pub started_by: String,
    /// Who the caller says the run is for (a body's `startedBy`), recorded as `requestedBy`.
    pub requested_by: Option<String>,
    /// The engine's idempotency key: a second start with it returns the first run.
    pub idempotency_key: Option<String>,
}

impl Starter {
    /// Started by `who`, nothing else.
    pub fn new(who: &str) -> Self {
        Self {
            started_by: who.to_string(),
            ..Self::default()
        }
    }

    /// Started through the API by `who`, the body saying `claimed` started it: the token's
    /// subject starts the run and the claim is recorded as `requestedBy`. Without
    /// authentication (`--insecure-no-auth`, where every caller is `anonymous` and there is no
    /// one to impersonate) the claim is the starter, as the reference's start takes it.
    pub(crate) fn claimed(who: &super::auth::Principal, claimed: Option<String>) -> Self {
        let claimed = claimed.filter(|c| !c.trim().is_empty());
        match claimed {
            Some(c) if who.unauthenticated() => Self::new(&c),
            claimed => Self {
                requested_by: claimed,
                ..Self::new(&who.subject)
            },
        }
    }

    pub(crate) fn apply(&self, mut req: StartRequest) -> StartRequest {
        req.started_by = self.started_by.clone();
        req.requested_by = self.requested_by.clone();
        req.idempotency_key = self.idempotency_key.clone();
        req
    }
}
