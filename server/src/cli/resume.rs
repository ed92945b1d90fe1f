//! `magrathea resume`: recover every unfinished run of the project and drive it until it
//! settles.
//!
//! "Settled" here means: terminal, `WAITING` on a gate, `BLOCKED`, or parked — `RUNNING` with
//! no task attempt in flight and nothing due soon, i.e. sleeping on a timer that fires more
//! than a second from now, waiting for a signal, or waiting for a sub-run that is itself
//! settled. A timer due within a second is waited for. The command polls every 100 ms and
//! returns once every run has been settled for a quiet period of 300 ms without new journal
//! records, so a run that is between two steps is not mistaken for parked.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use magrathea_core::{Engine, Entry, RunError, RunId, RunStatus, StoreError};
use magrathea_server::http::runs::RunDto;

use super::output::{errln, is_stdout_closed, print_run};
use super::store::Project;
use super::store_wait::{Unread, store_failing};
use super::{EXIT_FAILED, EXIT_OK, Location};

/// Arguments of `magrathea resume`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Recovers every run of the project that is not DONE, FAILED or CANCELLED and drives it until
it is terminal, WAITING, BLOCKED, or sleeping on a timer due more than a second from now; the
runs of other projects in the same store (a served tree's) are left as they are. Prints each run
(with --json one JSON object per line). While `magrathea serve` (or another `resume`) owns
the store, that process drives the runs: the command prints the project's unfinished runs as
its client. While another command owns it (a `run` waiting on a step), which drives only its
own runs, the command waits for it to let the store go, then resumes the runs itself.

Exit codes: 0 every resumed run is DONE, WAITING or still running (asleep on a timer), or
there was nothing to resume; 1 some resumed run ended FAILED or CANCELLED or is BLOCKED, or
the store cannot be opened.")]
pub(crate) struct ResumeArgs {
    /// Print each run as one JSON object per line.
    #[arg(long)]
    json: bool,
}

const POLL: Duration = Duration::from_millis(100);
const QUIET: Duration = Duration::from_millis(300);
const DUE_SOON_MS: u64 = 1000;

pub(crate) async fn resume(loc: &Location, args: ResumeArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    resume_here(&project, args).await
}

/// Resumes the project's runs in this process, or reports them through the store's owner.
async fn resume_here(project: &Project, args: ResumeArgs) -> anyhow::Result<u8> {
    if !project.store_may_exist()? {
        errln!("nothing to resume: no store at {}", project.store_name());
        return Ok(EXIT_OK);
    }
    // Only this project's runs are recovered: the store may hold other projects' (a served
    // tree's store), whose documents and rules this command does not read, and whose runs it
    // neither reports nor should drive.
    let engine = match project.engine(&project.runtime(), false).await {
        Ok(engine) => engine,
        Err(e) if super::store::is_locked(&e) => {
            return Box::pin(through_owner(project, args)).await;
        }
        Err(e) => return Err(e),
    };
    resume_with(project, &engine, args).await
}

/// Resumes the project's unfinished runs on `engine`, which this process opened (without
/// recovering every run of the store), and follows them until they settle.
async fn resume_with(project: &Project, engine: &Engine, args: ResumeArgs) -> anyhow::Result<u8> {
    let scope = project.scope_string();
    let mut runs = Vec::new();
    for run in engine.store().active_runs()? {
        if engine.summary(run).is_ok_and(|s| s.scope == scope) {
            runs.push(run);
        }
    }
    if runs.is_empty() {
        project.note_if_no_project();
        errln!("nothing to resume: every run of {scope} has finished");
        return Ok(EXIT_OK);
    }
    let mut interrupts = super::progress::Interrupts::install()?;
    errln!("resuming {} run(s)", runs.len());
    let mut held_elsewhere: Vec<RunId> = runs
        .iter()
        .copied()
        .filter(|&r| !engine.resume(r))
        .collect();
    // On a shared store, a run another worker holds is driven here only once that worker lets
    // it go or its lease expires: say so rather than wait without a word.
    if engine.is_shared_store() {
        for run in &held_elsewhere {
            errln!(
                "run {run}: another worker holds its lease; it is driven here once that worker \
                 lets it go, or its lease expires (a worker that died holds it for its grace \
                 period, 300 s unless `serve --lease-grace` says otherwise)"
            );
        }
    }
    let mut lengths: HashMap<RunId, usize> = HashMap::new();
    let mut quiet_since = Instant::now();
    let mut polls = 0u32;
    // A store that cannot commit, or cannot be read (a full disk), is waited for as `run`
    // waits for it, then given up with its error: the runs stay as journaled.
    let mut unread = Unread::default();
    let mut failing = std::pin::pin!(store_failing(engine));
    'poll: loop {
        polls = polls.wrapping_add(1);
        // A run another worker held is taken up once its lease lets go (every second).
        if polls.is_multiple_of(10) {
            held_elsewhere.retain(|&r| !engine.resume(r));
        }
        let mut all_settled = true;
        for &run in &runs {
            let Some(read) = unread.patience(where_it_is(engine, run)).await else {
                continue 'poll;
            };
            let (entries, status) = read?;
            if lengths.insert(run, entries.len()) != Some(entries.len()) {
                quiet_since = Instant::now();
            }
            if status == RunStatus::Running && !parked(engine, &entries) {
                all_settled = false;
            }
        }
        if all_settled && quiet_since.elapsed() >= QUIET {
            break;
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            e = &mut failing => return Err(RunError::Store(e).into()),
            () = interrupts.recv() => {
                errln!(
                    "interrupted: the runs stay as journaled; `magrathea resume` carries them on"
                );
                return Ok(super::EXIT_INTERRUPTED);
            }
        }
    }
    let mut code = EXIT_OK;
    for run in runs {
        let dto = RunDto::load(engine, run)?;
        if matches!(
            dto.run.status,
            RunStatus::Failed | RunStatus::Cancelled | RunStatus::Blocked
        ) {
            code = EXIT_FAILED;
        }
        // The runs' statuses are the answer; a reader that closed stdout does not change it.
        match print_run(&dto, args.json, &[]) {
            Err(e) if is_stdout_closed(&e) => {}
            other => other?,
        }
    }
    Ok(code)
}

/// How often `resume` looks whether an owner that drives only its own runs let the store go.
const OWNER_POLL: std::time::Duration = std::time::Duration::from_millis(200);

/// While another `magrathea` process owns the store: a server (or a `resume`) recovered
/// every unfinished run when it opened the store and drives them, so this command asks it for
/// the project's unfinished runs and prints them, as a client. Any other owner (a `run`, an
/// answer, a reading command) drives only the runs it and its clients touch: this command
/// waits for it to let the store go, then resumes the runs itself.
async fn through_owner(project: &Project, args: ResumeArgs) -> anyhow::Result<u8> {
    let mut interrupts = super::progress::Interrupts::install()?;
    let mut said = false;
    let backend = loop {
        let backend = project.backend(&project.runtime()).await?;
        let owner = match &backend {
            super::backend::Backend::Remote(owner) => owner,
            // The owner let go: this process opened the store, and resumes the runs itself.
            super::backend::Backend::Local(engine) => {
                interrupts.keep();
                return Box::pin(resume_with(project, engine, args)).await;
            }
        };
        if owner.drives_all().await? {
            break backend;
        }
        if !said {
            errln!(
                "the store is open in another magrathea process that drives only its own runs: \
                 waiting for it to let the store go, to resume the unfinished runs here \
                 (Ctrl-C stops waiting)"
            );
            said = true;
        }
        drop(backend);
        tokio::select! {
            () = tokio::time::sleep(OWNER_POLL) => {}
            () = interrupts.recv() => {
                errln!("interrupted: nothing was resumed; the runs stay as journaled");
                return Ok(super::EXIT_INTERRUPTED);
            }
        }
    };
    let unfinished = [
        RunStatus::Running,
        RunStatus::Waiting,
        RunStatus::Paused,
        RunStatus::Blocked,
    ];
    let runs = backend
        .list_runs(None, project.scope_string(), 0, &unfinished)
        .await?;
    errln!(
        "the store is open in another magrathea process, which drives its runs: {} unfinished \
         run(s) of {}",
        runs.len(),
        project.scope_string()
    );
    let mut code = EXIT_OK;
    for dto in &runs {
        if dto.run.status == RunStatus::Blocked {
            code = EXIT_FAILED;
        }
        match print_run(dto, args.json, &[]) {
            Err(e) if is_stdout_closed(&e) => {}
            other => other?,
        }
    }
    Ok(code)
}

/// The journal of `run` and its status. A journal with unreadable records reads as empty:
/// the engine blocks its run (`MAG-RC001`) as it recovers it, and that status settles it.
fn where_it_is(engine: &Engine, run: RunId) -> Result<(Vec<Entry>, RunStatus), RunError> {
    let entries = match engine.journal(run) {
        Err(RunError::Store(StoreError::Decode(_))) => Vec::new(),
        read => read?,
    };
    Ok((entries, engine.status(run)?))
}

/// Whether a `RUNNING` run waits only on things that are not due soon.
fn parked(engine: &Engine, entries: &[Entry]) -> bool {
    let now = super::pending::now_ms();
    let super::pending::Pending {
        tasks,
        timers,
        children,
        signals,
        ..
    } = super::pending::Pending::of(entries);
    if !tasks.is_empty() || timers.values().any(|&at| at <= now + DUE_SOON_MS) {
        return false;
    }
    let child_settled = |c: &RunId| engine.status(*c).is_ok_and(|s| s != RunStatus::Running);
    !timers.is_empty()
        || !signals.is_empty()
        || (!children.is_empty() && children.values().all(child_settled))
}
