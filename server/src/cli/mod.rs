//! The `magrathea` command line: argument parsing and dispatch to one module per command.

mod backend;
mod bench;
mod cancel;
mod cancelled_sub_runs;
mod control;
mod graph;
mod inbox;
mod journal;
mod output;
use magrathea_server::pending;
mod progress;
mod resume;
mod run;
mod runs;
mod runtime;
mod schedules;
mod serve;
mod settle;
mod store;
mod store_wait;
mod validate;
mod versions;

use std::fmt;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use output::{errln, is_stdout_closed};

/// Exit code: the run is `DONE` / the command succeeded.
pub(crate) const EXIT_OK: u8 = 0;
/// Exit code: the run `FAILED`, was `CANCELLED` or is `BLOCKED`; or the command failed.
pub(crate) const EXIT_FAILED: u8 = 1;
/// Exit code: invalid document, parameters or answer; nothing was started or answered.
pub(crate) const EXIT_INVALID: u8 = 2;
/// Exit code: the run waits on a gate.
pub(crate) const EXIT_WAITING: u8 = 3;
/// Exit code: interrupted (Ctrl-C) while driving a run; the run resumes with `resume`.
pub(crate) const EXIT_INTERRUPTED: u8 = 130;

const AFTER_HELP: &str = "\
Exit codes of `run`, `inbox answer` and `cancel`: 0 the run is DONE; 1 FAILED, CANCELLED or BLOCKED
(or the command failed); 2 invalid document, parameters or answer (nothing started);
3 the run waits on a gate (answer it with `magrathea inbox answer`) or is PAUSED (resume it with
`magrathea runs resume`); 130 interrupted (Ctrl-C, SIGTERM or SIGHUP, also for `resume`;
`magrathea resume` carries the run on). A command line that cannot be read (an unknown flag, a
missing argument) exits 2 with the usage on stderr, before anything is done, whatever the
command. A reader closing stdout early (`| head`) ends any command quietly.

One process owns a directory store at a time (`serve`, or a `run`, `resume` or `inbox answer`
while it drives); `runs`, `journal`, `inbox`, `cancel` and `run` on the same store meanwhile ask it over
<store>/control.sock (mode 0600, with the key in <store>/control.key) and print what they would
print as the owner.";

/// Run, validate and inspect Magrathea workflows of a project.
#[derive(Debug, Parser)]
#[command(name = "magrathea", version, after_help = AFTER_HELP)]
struct Cli {
    #[command(flatten)]
    location: Location,
    #[command(subcommand)]
    command: Command,
}

/// Where the project and its store are; accepted before or after the subcommand.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Location {
    /// The project directory, holding `_vance/` (default: the current directory).
    #[arg(long, value_name = "DIR", global = true)]
    pub(crate) project: Option<PathBuf>,
    /// The store: a directory, whose journal is `<store>/journal.redb` (default:
    /// `<project>/.magrathea/`; for `serve`, `<root>/.magrathea/`), or a PostgreSQL URL
    /// (`postgres://user@host:port/database`).
    #[arg(long, value_name = "PATH|URL", global = true, value_parser = store_arg)]
    pub(crate) store: Option<PathBuf>,
    /// With a PostgreSQL store (--store postgres://…): seconds a lease of a run this process
    /// holds lasts without a heartbeat; after it, another worker reclaims the run and replays
    /// it, and the lane slots the process held come free. For `serve` and for every command
    /// that drives runs (`run`, `resume`, `cancel`, answers).
    #[arg(long, value_name = "SECONDS", global = true, default_value_t = 300.0,
          value_parser = serve::parse_grace)]
    pub(crate) lease_grace: f64,
}

impl Location {
    /// ` --project DIR --store PATH` as given (each only when given; a PostgreSQL URL's
    /// password hidden), for the commands this one suggests, so that they act on the same
    /// project and store when typed from the same directory.
    fn as_args(&self) -> String {
        let mut args = String::new();
        if let Some(project) = &self.project {
            args.push_str(&format!(
                " --project {}",
                shell_word(&project.to_string_lossy())
            ));
        }
        if let Some(store) = &self.store {
            let store = store.to_string_lossy();
            let shown = if magrathea_postgres::is_postgres_url(&store) {
                magrathea_postgres::redact(&store)
            } else {
                store.into_owned()
            };
            args.push_str(&format!(" --store {}", shell_word(&shown)));
        }
        args
    }
}

/// `word` as one shell word: as it is when it holds only characters no shell treats
/// specially, else in single quotes.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+:@=,".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The `--project` and `--store` of this command ([`Location::as_args`]).
static LOCATION_ARGS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The `--project` and `--store` this command was given, as arguments to append to a command
/// it suggests (empty when neither was given).
pub(crate) fn location_args() -> &'static str {
    LOCATION_ARGS.get().map_or("", String::as_str)
}

/// `--store`: a directory or a PostgreSQL URL. A URL of another scheme (`mysql://…`), and a
/// PostgreSQL URL mistyped (`postgres:/db`, `POSTGRES://…`), are refused rather than taken for
/// a directory of that name: a worker would go on alone beside the shared database.
fn store_arg(arg: &str) -> Result<PathBuf, String> {
    // Spaces pasted around or into the scheme count as the typo they are.
    let lower: String = arg
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_ascii_lowercase();
    if (lower.starts_with("postgres:") || lower.starts_with("postgresql:"))
        && !magrathea_postgres::is_postgres_url(arg)
    {
        return Err(format!(
            "`{arg}` is not a PostgreSQL URL: expected postgres://user@host:port/database \
             (a directory of this name would be ./{arg})"
        ));
    }
    if let Some((scheme, _)) = arg.split_once("://")
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !magrathea_postgres::is_postgres_url(arg)
    {
        return Err(format!(
            "`{scheme}://` is not a store: pass a directory, or a PostgreSQL URL \
             (postgres://user@host:port/database)"
        ));
    }
    Ok(PathBuf::from(arg))
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a workflow run and drive it until it is DONE, FAILED, CANCELLED, BLOCKED or
    /// waits on a gate.
    Run(run::RunArgs),
    /// Validate workflow documents (default: every `_vance/workflows/*.yaml` of the project).
    Validate(validate::ValidateArgs),
    /// Recover every unfinished run of the store and drive it until it settles.
    Resume(resume::ResumeArgs),
    /// List and show runs.
    #[command(subcommand)]
    Runs(runs::RunsCommand),
    /// Print a run's journal.
    Journal(journal::JournalArgs),
    /// List and answer the gates' inbox items.
    #[command(subcommand)]
    Inbox(inbox::InboxCommand),
    /// Cancel a run and drive it until it settles.
    Cancel(cancel::CancelArgs),
    /// Print a workflow's state graph (Mermaid, Graphviz DOT or the editor's React Flow JSON).
    Graph(graph::GraphArgs),
    /// List, fire, pause and resume the project's schedules (`_vance/scheduler/`).
    #[command(subcommand)]
    Schedules(schedules::SchedulesCommand),
    /// List the record of trigger deliveries (schedules, webhooks, events, hooks).
    #[command(subcommand)]
    Deliveries(schedules::DeliveriesCommand),
    /// Serve the HTTP API (runs, inbox, events, documents) over a tree of tenants and projects.
    Serve(serve::ServeArgs),
    /// Publish a workflow's draft (`_vance/workflow-drafts/NAME.yaml`): validate it, keep the
    /// live document in `_vance/workflow-history/`, make the draft live.
    Publish(versions::NameArgs),
    /// List a workflow's live document and its history, newest first.
    Versions(versions::NameArgs),
    /// Archive a workflow: new starts are refused (exit 2), running runs finish.
    Archive(versions::NameArgs),
    /// Unarchive a workflow: starts are accepted again.
    Unarchive(versions::NameArgs),
    /// Measure this machine and disk with the standard durable workloads, against raw
    /// fdatasync and redb commits measured in the same run.
    Bench(bench::BenchArgs),
}

impl Command {
    /// Whether the command only reads the store: done twice, it does nothing twice.
    fn reads_only(&self) -> bool {
        matches!(
            self,
            Command::Runs(runs::RunsCommand::List { .. } | runs::RunsCommand::Show { .. })
                | Command::Journal(_)
                | Command::Inbox(inbox::InboxCommand::List { .. })
                | Command::Schedules(schedules::SchedulesCommand::List { .. })
                | Command::Deliveries(_)
        )
    }
}

/// A failure the command reports with exit code 2 (invalid input; nothing was done).
#[derive(Debug)]
pub(crate) struct Invalid(pub(crate) String);

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Invalid {}

/// Prints what parsing the arguments gave instead of a command (the help, the version, or a
/// usage error) and gives clap's exit code for it (0 and 2); a write that fails is said and
/// exits 1, as a command's output does, and a reader that went away (`| head`) is no error.
fn usage(e: &clap::Error) -> ExitCode {
    use std::io::Write as _;
    let written = e.print().and_then(|()| std::io::stdout().flush());
    let code = u8::try_from(e.exit_code()).unwrap_or(EXIT_INVALID);
    match written {
        Ok(()) => ExitCode::from(code),
        Err(w) if w.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::from(code),
        Err(w) => {
            let stream = if e.use_stderr() { "stderr" } else { "stdout" };
            let _ = writeln!(std::io::stderr(), "error: cannot write to {stream}: {w}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// Parses the arguments, runs the command and turns its outcome into the exit code.
pub(crate) async fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    let _ = LOCATION_ARGS.set(cli.location.as_args());
    let reads_only = cli.command.reads_only();
    let mut cli = Some(cli);
    let mut again = 0;
    let result = loop {
        // The arguments parsed once more for another try: the same, as they parsed before.
        let cli = match cli.take() {
            Some(cli) => cli,
            None => Cli::parse(),
        };
        let result = dispatch(cli).await;
        // The owner the command asked left the store as it asked (its work done): the command
        // starts over, finding the store free or its next owner, when doing so cannot do twice
        // what it did and nothing of it was printed.
        let left = result.as_ref().err().and_then(|e| {
            e.chain()
                .find_map(|c| c.downcast_ref::<control::client::OwnerLeft>())
        });
        let may_again = left
            .is_some_and(|left| reads_only || (!left.sent && !control::client::sent_any()))
            && !output::wrote_stdout();
        if !may_again || again == OWNER_LEFT_TRIES {
            break result;
        }
        again += 1;
        tokio::time::sleep(OWNER_LEFT_PAUSE).await;
    };
    finish(result).await
}

/// How many times a command starts over after its store's owner left before it answered.
const OWNER_LEFT_TRIES: u32 = 20;

/// The pause before it does.
const OWNER_LEFT_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// Runs the command.
async fn dispatch(cli: Cli) -> anyhow::Result<u8> {
    let loc = cli.location;
    match cli.command {
        Command::Run(a) => run::run(&loc, a).await,
        Command::Validate(a) => validate::validate(&loc, a),
        Command::Resume(a) => resume::resume(&loc, a).await,
        Command::Runs(c) => runs::runs(&loc, c).await,
        Command::Journal(a) => journal::journal(&loc, a).await,
        Command::Inbox(c) => inbox::inbox(&loc, c).await,
        Command::Cancel(a) => cancel::cancel(&loc, a).await,
        Command::Graph(a) => graph::graph(&loc, a),
        Command::Schedules(c) => schedules::schedules(&loc, c).await,
        Command::Deliveries(c) => schedules::deliveries(&loc, c).await,
        Command::Serve(a) => serve::serve(&loc, a).await,
        Command::Publish(a) => versions::publish(&loc, a),
        Command::Versions(a) => versions::list(&loc, a),
        Command::Archive(a) => versions::set_archived(&loc, a, true),
        Command::Unarchive(a) => versions::set_archived(&loc, a, false),
        Command::Bench(a) => bench::bench(&loc, a).await,
    }
}

/// Ends the process's part in the store and turns the command's outcome into the exit code.
async fn finish(result: anyhow::Result<u8>) -> ExitCode {
    // Clients that started or answered runs here see them settle before this process gives
    // up the store; after a Ctrl-C it leaves at once (their runs resume with the next owner).
    let how = match result {
        Ok(EXIT_INTERRUPTED) => control::owner::Shutdown::Abort,
        _ => control::owner::Shutdown::Drain,
    };
    control::owner::shutdown(how).await;
    store::release_leases().await;
    match result {
        Ok(code) => ExitCode::from(code),
        // The reader of stdout went away (`| head`): it has what it wanted.
        Err(e) if is_stdout_closed(&e) => ExitCode::from(EXIT_OK),
        Err(e) => {
            errln!("error: {}", output::chain(&e));
            if e.downcast_ref::<Invalid>().is_some() {
                ExitCode::from(EXIT_INVALID)
            } else {
                ExitCode::from(EXIT_FAILED)
            }
        }
    }
}
