//! `magrathea cancel RUN_ID`: cancel a run and drive it until it settles.

use super::Location;
use super::backend::Cancelled;
use super::output::errln;
use super::run::finish_after;
use super::store::Project;

/// Arguments of `magrathea cancel`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Requests the run's cancellation: the workflow sees its pending steps fail with a `cancelled`
error and may clean up; its running child runs are cancelled too. The command then drives the
run (or, while another process owns the store, follows it there) until it settles, prints it
as `magrathea run` does, and exits with the run's code: 1 once it is CANCELLED (or FAILED),
0 if it finished DONE all the same, 3 if it waits on a gate. A run that had already ended is
printed as it is, with a note on stderr. A sub-run's parents act on its end: the command ends
once they have settled too.")]
pub(crate) struct CancelArgs {
    /// The run id (32 hex digits).
    run_id: String,
    /// Why, as the run records it.
    #[arg(
        long,
        value_name = "TEXT",
        default_value = "cancelled from the command line"
    )]
    reason: String,
    /// Print the run as one JSON object.
    #[arg(long)]
    json: bool,
}

pub(crate) async fn cancel(loc: &Location, args: CancelArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    let runtime = project.runtime();
    // A project without a store has no run to cancel: nothing is created for it.
    let Some(backend) = project.existing_backend_with(&runtime).await? else {
        return Err(project.not_found(super::store::parse_run_id(&args.run_id)?));
    };
    // Installed before the cancel is requested, kept for following the run.
    super::progress::Interrupts::install()?.keep();
    let run = project
        .run(Some(&backend), &args.run_id)
        .await?
        .run
        .workflow_run_id;
    // Read before the cancel: once it settles the run, the store's owner may be gone.
    let earlier = backend.journal(run).await.unwrap_or_default();
    let (cancelled, follower) = backend.cancel(run, &args.reason).await?;
    match cancelled {
        Cancelled::Requested => {}
        Cancelled::AlreadyRequested => {
            errln!("cancellation of run {run} had been requested already")
        }
        Cancelled::AlreadyFinished => errln!("run {run} had already ended; nothing to cancel"),
    }
    finish_after(&project, &backend, run, follower, args.json, earlier).await
}
