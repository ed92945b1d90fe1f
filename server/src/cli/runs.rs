//! `magrathea runs list|show`: the project's runs.

use magrathea_server::http::runs::RunDto;

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
        /// At most this many runs (0: all).
        #[arg(long, default_value_t = 0)]
        limit: usize,
        /// Print a JSON array of run objects.
        #[arg(long)]
        json: bool,
    },
    /// Start the run's workflow again with the same parameters (as the document is now, or
    /// with `--frozen` exactly as the run started), then drive or follow it like `magrathea
    /// run` (same output, same exit codes).
    Rerun {
        /// The run id (32 hex digits).
        run_id: String,
        /// Run the original's frozen definition, version and bounds, not the current document.
        #[arg(long)]
        frozen: bool,
        /// Print the new run as one JSON object.
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
        } => rerun(&project, &run_id, frozen, json).await,
        RunsCommand::List {
            workflow,
            limit,
            json,
        } => {
            let backend = project.existing_backend().await?;
            let views: Vec<RunDto> = match &backend {
                Some(backend) => {
                    backend
                        .list_runs(workflow, project.scope_string(), limit)
                        .await?
                }
                None => Vec::new(),
            };
            if json {
                outln!("{}", serde_json::to_string(&views)?)?;
            } else if views.is_empty() {
                errln!("no runs");
            } else {
                outln!(
                    "{:<32}  {:<24}  {:<9}  {:<20}  {:<19}",
                    "RUN",
                    "WORKFLOW",
                    "STATUS",
                    "STATE",
                    "STARTED (UTC)"
                )?;
                for v in views.iter().map(|d| &d.run) {
                    outln!(
                        "{:<32}  {:<24}  {:<9}  {:<20}  {}",
                        v.workflow_run_id,
                        v.workflow_name,
                        v.status.as_str(),
                        v.current_state.as_deref().unwrap_or("-"),
                        timestamp(v.created_at)
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

/// `magrathea runs rerun`.
async fn rerun(project: &Project, run_id: &str, frozen: bool, json: bool) -> anyhow::Result<u8> {
    let runtime = project.runtime();
    let backend = project.backend(&runtime).await?;
    let original = project
        .run(Some(&backend), run_id)
        .await?
        .run
        .workflow_run_id;
    let journal = backend.journal(original).await?;
    let Some(start) = journal.iter().find_map(|e| match &e.record {
        magrathea_core::Record::Start(s) => Some((**s).clone()),
        _ => None,
    }) else {
        anyhow::bail!("run {original} has no StartRecord");
    };
    if start.parent.is_some() {
        errln!("error: run {original} is a sub-run: rerun its parent");
        return Ok(super::EXIT_FAILED);
    }
    let by = super::run::default_user();
    let request = if frozen {
        magrathea_core::StartRequest::repeat_of(&start).started_by(by)
    } else {
        match runtime.start_request(
            &project.scope,
            &start.workflow_name,
            start.params.clone(),
            |req| req.started_by(&by),
        ) {
            Ok(req) => req,
            Err(e) => {
                errln!("error: {e}");
                errln!("nothing was started");
                return Ok(super::EXIT_INVALID);
            }
        }
    };
    let (run, follower) = backend.start(request).await?;
    if let Ok(catalog) = super::schedules::catalog_of(&backend) {
        let definition = if frozen { "frozen" } else { "current" };
        magrathea_server::http::rerun::record_origin(catalog.as_ref(), run, original, definition);
    }
    errln!("rerun of {original}: run {run}");
    super::run::finish(&backend, run, follower, json).await
}
