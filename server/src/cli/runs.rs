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
    let backend = project.existing_backend().await?;
    match cmd {
        RunsCommand::List {
            workflow,
            limit,
            json,
        } => {
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
