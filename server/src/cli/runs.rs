//! `magrathea runs list|show|rerun|retry|pause|resume`: the project's runs.

use magrathea_core::RunStatus;
use magrathea_server::http::runs::RunDto;

use super::backend::{Backend, ControlOp, Controlled};
use super::output::{errln, outln, print_labels, print_run, run_json, timestamp};
use super::store::Project;
use super::{EXIT_OK, Location};

/// `magrathea runs …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum RunsCommand {
    /// List the project's runs, newest first (`--json`: one JSON array of run objects, each
    /// with the workflow document's `description` and `tags`).
    List {
        /// Only runs of this workflow.
        #[arg(long, value_name = "NAME")]
        workflow: Option<String>,
        /// Only runs with this status (RUNNING, WAITING, PAUSED, DONE, FAILED, CANCELLED,
        /// BLOCKED); repeat it, or separate with commas, for several.
        #[arg(long, value_name = "STATUS", value_delimiter = ',')]
        status: Vec<RunStatus>,
        /// At most this many runs (0: all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Print a JSON array of run objects.
        #[arg(long)]
        json: bool,
    },
    /// Start the run's workflow again with the same parameters (as the document is now,
    /// `--current`, the default, or with `--frozen` exactly as the run started), then drive
    /// or follow it like `magrathea run` (same output, same exit codes).
    Rerun {
        /// The run id (32 hex digits).
        run_id: String,
        /// Run the original's frozen definition, version and bounds, not the current document.
        #[arg(long)]
        frozen: bool,
        /// Run the current document (the default), said explicitly.
        #[arg(long, conflicts_with = "frozen")]
        current: bool,
        /// Print the new run as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Start a FAILED or CANCELLED YAML run's workflow again from a state (by default the one
    /// it ended in, or the one before it when that is a `terminal`; after a saga, the state
    /// whose failure began it, not a compensation) with the variables the run
    /// had when it entered it, on the current document (`--current`, the default) or with
    /// `--frozen` on the run's own definition; then drive or follow it like `magrathea run`
    /// (same output, same exit codes). Exit 2 when the run cannot be retried: it is unknown,
    /// not FAILED or CANCELLED, not a YAML run, or `--from` names a state its workflow does
    /// not have.
    Retry {
        /// The run id (32 hex digits).
        run_id: String,
        /// The state to begin at.
        #[arg(long, value_name = "STATE")]
        from: Option<String>,
        /// Run the original's frozen definition, version and bounds, not the current document.
        #[arg(long)]
        frozen: bool,
        /// Run the current document (the default), said explicitly.
        #[arg(long, conflicts_with = "frozen")]
        current: bool,
        /// Print the new run as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Pause a run: it starts nothing new (task attempts, children, timers, gates) until
    /// `runs resume`; what already runs finishes. Exit 0 once paused (or if it was), 2 when the
    /// run has ended or does not exist.
    Pause {
        /// The run id (32 hex digits).
        run_id: String,
        /// Why, as the run records it.
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        /// Print the run as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Resume a paused run: what it held is dispatched. A run waiting on the decision of
    /// `onFailure: pause_for_approval` is resumed by answering that decision `retry`. Through
    /// a `magrathea serve` that owns the store: exit 0 once resumed. On the project's own
    /// store, the command then drives the run until it settles, like `magrathea run` (same
    /// output and exit codes). Exit 2 when the run is not paused or does not exist.
    Resume {
        /// The run id (32 hex digits).
        run_id: String,
        /// Print the run as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Show one run, with the workflow's version and the document's description and tags
    /// (exit 0 whatever its status; exit 1 when it does not exist in this project).
    Show {
        /// The run id (32 hex digits).
        run_id: String,
        /// Print the run as one JSON object.
        #[arg(long)]
        json: bool,
    },
}

pub(crate) async fn runs(loc: &Location, cmd: RunsCommand) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    match cmd {
        RunsCommand::Rerun {
            run_id,
            frozen,
            json,
            ..
        } => rerun(&project, &run_id, frozen, json).await,
        RunsCommand::Retry {
            run_id,
            from,
            frozen,
            json,
            ..
        } => retry(&project, &run_id, from.as_deref(), frozen, json).await,
        RunsCommand::Pause {
            run_id,
            reason,
            json,
        } => control(&project, &run_id, ControlOp::Pause { reason }, json).await,
        RunsCommand::Resume { run_id, json } => {
            control(&project, &run_id, ControlOp::Resume, json).await
        }
        RunsCommand::List {
            workflow,
            status,
            limit,
            json,
        } => {
            let backend = project.existing_backend().await?;
            let views: Vec<RunDto> = match &backend {
                Some(backend) => {
                    backend
                        .list_runs(workflow, project.scope_string(), limit, &status)
                        .await?
                }
                None => Vec::new(),
            };
            if json {
                outln!("{}", serde_json::to_string(&views)?)?;
            } else if views.is_empty() {
                errln!("no runs");
                project.note_if_no_project();
            } else {
                outln!(
                    "{:<32}  {:<24}  {:<9}  {:<20}  {:<19}  {}",
                    "RUN",
                    "WORKFLOW",
                    "STATUS",
                    "STATE",
                    "STARTED (UTC)",
                    "VERSION"
                )?;
                for d in &views {
                    let v = &d.run;
                    outln!(
                        "{:<32}  {:<24}  {:<9}  {:<20}  {:<19}  {}",
                        v.workflow_run_id,
                        v.workflow_name,
                        v.status.as_str(),
                        v.current_state.as_deref().unwrap_or("-"),
                        timestamp(v.created_at),
                        version_label(d)
                    )?;
                }
            }
            Ok(EXIT_OK)
        }
        RunsCommand::Show { run_id, json } => {
            let backend = project.existing_backend().await?;
            let dto = project.run(backend.as_ref(), &run_id).await?;
            let view = &dto.run;
            if json {
                outln!("{}", run_json(&dto))?;
            } else {
                let pending = match &backend {
                    Some(b) => b.pending(None).await?,
                    None => Vec::new(),
                };
                print_run(&dto, false, &pending)?;
                print_labels(&dto)?;
                outln!("  params: {}", view.params)?;
                if !view.vars.is_empty() {
                    outln!("  vars:   {}", serde_json::Value::Object(view.vars.clone()))?;
                }
                outln!(
                    "  started {} by {}",
                    timestamp(view.created_at),
                    view.started_by
                )?;
                // The run it repeats, as `GET …/origin` tells it.
                let origin = backend
                    .as_ref()
                    .and_then(|b| super::schedules::catalog_of(b).ok())
                    .and_then(|c| {
                        magrathea_server::http::rerun::origin_of(&*c, view.workflow_run_id).ok()
                    })
                    .unwrap_or_default();
                let definition = origin["definition"].as_str().unwrap_or("current");
                if let Some(of) = origin["retryOf"].as_str() {
                    let from = origin["fromState"].as_str().unwrap_or("?");
                    outln!("  retry of {of} from state {from} ({definition} definition)")?;
                } else if let Some(of) = origin["rerunOf"].as_str() {
                    outln!("  rerun of {of} ({definition} definition)")?;
                }
                // Side effects that may have happened more than once, each on record.
                for r in &view.re_executions {
                    outln!(
                        "  re-executed #{} {} attempt {} (execution {}) after recovery, {} on {}",
                        r.step,
                        r.name,
                        r.attempt,
                        r.execution,
                        timestamp(r.at),
                        r.worker
                    )?;
                }
            }
            Ok(EXIT_OK)
        }
    }
}

/// A run to act on that is not there (or whose id is malformed): nothing was done, exit 2 as
/// for any refused request.
fn not_found(e: &anyhow::Error) -> u8 {
    errln!("error: {}", super::output::chain(e));
    super::EXIT_INVALID
}

/// `magrathea runs pause|resume`: through the store's owner when one serves it.
async fn control(project: &Project, run_id: &str, op: ControlOp, json: bool) -> anyhow::Result<u8> {
    // A malformed id is said as such, whether or not the project has runs.
    if let Err(e) = run_id.parse::<magrathea_core::RunId>() {
        errln!("error: {e}");
        return Ok(super::EXIT_INVALID);
    }
    let Some(backend) = project.existing_backend().await? else {
        errln!("error: run `{run_id}` not found: this project has no runs yet");
        return Ok(super::EXIT_INVALID);
    };
    let run = match project.run(Some(&backend), run_id).await {
        Ok(dto) => dto.run.workflow_run_id,
        Err(e) => return Ok(not_found(&e)),
    };
    let by = super::run::default_user();
    if matches!(op, ControlOp::Resume) {
        // Installed before the resume is recorded and kept for driving the run on.
        super::progress::Interrupts::install()?.keep();
    }
    let (controlled, follower) = backend.control(run, op, &by).await?;
    let code = match controlled {
        Controlled::Paused => {
            errln!("run {run} is paused");
            EXIT_OK
        }
        Controlled::AlreadyPaused => {
            errln!("run {run} was paused already");
            EXIT_OK
        }
        Controlled::Resumed => {
            errln!("run {run} is resumed");
            EXIT_OK
        }
        Controlled::Refused { message } => {
            // Nothing was recorded: as every other refusal, nothing on stdout.
            errln!("error: {message}");
            return Ok(super::EXIT_INVALID);
        }
    };
    if let Some(follower) = follower {
        // This process resumed the run on its own store: it drives the run until it settles.
        return super::run::finish(project, &backend, run, follower, json).await;
    }
    let dto = match backend.run(run).await {
        Ok(dto) => dto,
        // The owner was a command driving the run (`magrathea run`), which exits once its run
        // is paused: the run is read from the store it has let go of.
        Err(_) if matches!(backend, Backend::Remote(_)) && code == EXIT_OK => {
            let Some(backend) = project.existing_backend().await? else {
                return Ok(code);
            };
            backend.run(run).await?
        }
        Err(e) => return Err(e),
    };
    if let Some(dto) = dto {
        if json {
            outln!("{}", run_json(&dto))?;
        } else {
            print_run(&dto, false, &[])?;
        }
    }
    Ok(code)
}

/// `magrathea runs rerun`.
async fn rerun(project: &Project, run_id: &str, frozen: bool, json: bool) -> anyhow::Result<u8> {
    let runtime = project.runtime();
    // A project without a store has no run to repeat: nothing is created for it.
    let backend = project.existing_backend_with(&runtime).await?;
    let (backend, original) = match project.run(backend.as_ref(), run_id).await {
        Ok(dto) => (backend, dto.run.workflow_run_id),
        Err(e) => return Ok(not_found(&e)),
    };
    let Some(backend) = backend else {
        return Ok(not_found(&project.not_found(original)));
    };
    let journal = backend.journal(original).await?;
    let start = start_of(&journal, original)?;
    if start.parent.is_some() {
        errln!("error: run {original} is a sub-run: rerun its parent");
        return Ok(super::EXIT_INVALID);
    }
    let request = match repeat_request(project, &runtime, &start, frozen) {
        Ok(req) => req,
        Err(code) => return Ok(code),
    };
    // Installed before the run starts and kept for following it.
    super::progress::Interrupts::install()?.keep();
    let (run, follower) = backend.start(request).await?;
    if let Ok(catalog) = super::schedules::catalog_of(&backend) {
        let definition = if frozen { "frozen" } else { "current" };
        magrathea_server::http::rerun::record_origin(catalog.as_ref(), run, original, definition);
    }
    errln!("rerun of {original}: run {run}");
    super::run::finish(project, &backend, run, follower, json).await
}

/// `magrathea runs retry`.
async fn retry(
    project: &Project,
    run_id: &str,
    from: Option<&str>,
    frozen: bool,
    json: bool,
) -> anyhow::Result<u8> {
    use magrathea_core::RunStatus;
    use magrathea_server::http::retry::{defines_state, entry_of, record_origin};
    let runtime = project.runtime();
    let backend = project.existing_backend_with(&runtime).await?;
    let dto = match project.run(backend.as_ref(), run_id).await {
        Ok(dto) => dto,
        Err(e) => return Ok(not_found(&e)),
    };
    let Some(backend) = backend else {
        return Ok(not_found(&project.not_found(dto.run.workflow_run_id)));
    };
    let original = dto.run.workflow_run_id;
    if !matches!(dto.run.status, RunStatus::Failed | RunStatus::Cancelled) {
        errln!(
            "error: run {original} is {}: only a FAILED or CANCELLED run can be retried",
            dto.run.status
        );
        return Ok(super::EXIT_INVALID);
    }
    let journal = backend.journal(original).await?;
    let start = start_of(&journal, original)?;
    if start.parent.is_some() {
        errln!("error: run {original} is a sub-run: retry its parent");
        return Ok(super::EXIT_INVALID);
    }
    if start.frontend.as_str() != "yaml" {
        errln!("error: run {original} is a code workflow's: rerun it instead");
        return Ok(super::EXIT_INVALID);
    }
    let entry = match entry_of(&journal, from) {
        Ok(entry) => entry,
        Err(e) => {
            errln!("error: {e}");
            return Ok(super::EXIT_INVALID);
        }
    };
    let mut request = match repeat_request(project, &runtime, &start, frozen) {
        Ok(req) => req,
        Err(code) => return Ok(code),
    };
    let which = if frozen { "frozen" } else { "current" };
    let defined = request
        .definition
        .as_deref()
        .is_some_and(|text| defines_state(&start.workflow_name, text, &entry.state));
    if !defined {
        errln!(
            "error: the {which} definition of workflow `{}` has no state `{}`",
            start.workflow_name,
            entry.state
        );
        return Ok(super::EXIT_INVALID);
    }
    let from_state = entry.state.clone();
    request.entry = Some(entry);
    // Installed before the run starts and kept for following it.
    super::progress::Interrupts::install()?.keep();
    let (run, follower) = backend.start(request).await?;
    if let Ok(catalog) = super::schedules::catalog_of(&backend) {
        record_origin(catalog.as_ref(), run, original, &from_state, which);
    }
    errln!("retry of {original} from state {from_state}: run {run}");
    super::run::finish(project, &backend, run, follower, json).await
}

/// The `StartRecord` of run `run`, the first record of its `journal`.
fn start_of(
    journal: &[magrathea_core::Entry],
    run: magrathea_core::RunId,
) -> anyhow::Result<magrathea_core::StartRecord> {
    journal
        .iter()
        .find_map(|e| match &e.record {
            magrathea_core::Record::Start(s) => Some((**s).clone()),
            _ => None,
        })
        .ok_or_else(|| anyhow::anyhow!("run {run} has no StartRecord"))
}

/// The request that starts the workflow of `start` again with its parameters, started by this
/// user: on the definition it started with (`frozen`), else on the document as it is now, its
/// parameters validated again. `Err` holds the exit code when the document refuses them (the
/// reason is printed; nothing was started).
fn repeat_request(
    project: &Project,
    runtime: &magrathea_yaml::YamlRuntime,
    start: &magrathea_core::StartRecord,
    frozen: bool,
) -> Result<magrathea_core::StartRequest, u8> {
    let by = super::run::default_user();
    if frozen {
        // A run started again on its frozen definition is a new start: refused while archived.
        if project
            .docs()
            .is_archived(&project.scope, &start.workflow_name)
        {
            let archived = magrathea_yaml::DocumentError::Archived(start.workflow_name.clone());
            errln!("error: {archived}");
            errln!("nothing was started");
            return Err(super::EXIT_INVALID);
        }
        return Ok(magrathea_core::StartRequest::repeat_of(start).started_by(by));
    }
    runtime
        .start_request(
            &project.scope,
            &start.workflow_name,
            start.params.clone(),
            |req| req.started_by(&by),
        )
        .map_err(|e| {
            errln!("error: {e}");
            errln!("nothing was started");
            super::EXIT_INVALID
        })
}

/// The version a run executes, for the listing: the document's `version:` text, if any, then
/// the first 12 hex digits of its definition's hash (as `versions` and `publish` name it),
/// `+draft` for a draft; a code workflow's version.
fn version_label(dto: &magrathea_server::http::runs::RunDto) -> String {
    let version = dto.run.workflow_version.as_str();
    let Some(hash) = &dto.definition_hash else {
        return if version.is_empty() { "-" } else { version }.to_owned();
    };
    // The version's text and the content hash it ran, as `runs show` names them. A draft's
    // version already ends with `+draft` (a draft without `version:` has only that).
    let short = hash.get(..12).unwrap_or(hash);
    let (text, draft) = match version.strip_suffix("+draft") {
        Some(text) => (text, true),
        None => (version, dto.draft),
    };
    match (text.is_empty(), draft) {
        (true, false) => short.to_owned(),
        (true, true) => format!("{short}+draft"),
        (false, false) => format!("{text} {short}"),
        (false, true) => format!("{text}+draft {short}"),
    }
}
