//! `magrathea inbox list|answer`: the inbox items gates open, and answering them.

use clap::ArgGroup;
use magrathea_core::{GateAnswer, InboxItem, InboxStatus};

use super::backend::Answered;
use super::output::{answer_hint, answer_line, errln, now_ms, outln, overdue};
use super::run::{default_user, finish};
use super::store::Project;
use super::{EXIT_OK, Invalid, Location};

/// `magrathea inbox …`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum InboxCommand {
    /// List the project's pending inbox items, oldest first (`--json`: one JSON array).
    List {
        /// Print a JSON array of items (`id`, `kind`, `title`, `body`, `options`,
        /// `assignedTo`, `workflowRunId`, `workflowState`, `status`, …). `status` is
        /// `PENDING`, or `TIMED_OUT` when the item's `expiresAt` passed with no process to
        /// fire its timeout: an answer now is ignored.
        #[arg(long)]
        json: bool,
    },
    /// Answer an inbox item and drive its run on until it settles again.
    #[command(
        group(ArgGroup::new("answer").required(true).multiple(false)),
        after_help = "\
Prints the run like `magrathea run`. Exit codes: 0 DONE; 1 FAILED, CANCELLED or BLOCKED (an
answer to a BLOCKED run is not recorded), or no such item (`[MAG-GT001]`, naming the id);
2 the answer does not fit the gate (e.g. an option that is not offered; nothing was recorded);
3 the run waits on a gate again. An answer to a gate that already completed (answered, timed
out, run ended) is journaled as ignored (a gate that ended unanswered keeps it on its item):
the command says so on stderr and exits per the run's status. The item of a sub-run carries its parents on too: the command ends once they
have settled as well, and prints and exits per the sub-run."
    )]
    Answer(AnswerArgs),
}

/// Arguments of `magrathea inbox answer`.
#[derive(Debug, clap::Args)]
pub(crate) struct AnswerArgs {
    /// The item id (`<run_id>-<step>`, from `inbox list`).
    id: String,
    /// Approve an APPROVAL gate.
    #[arg(long, group = "answer")]
    approve: bool,
    /// Reject an APPROVAL gate.
    #[arg(long, group = "answer")]
    reject: bool,
    /// Choose an option of a DECISION gate.
    #[arg(long, group = "answer", value_name = "OPTION")]
    choose: Option<String>,
    /// Answer a FEEDBACK gate.
    #[arg(long, group = "answer", value_name = "TEXT")]
    text: Option<String>,
    /// Answer "I need more information" (any gate).
    #[arg(long, group = "answer")]
    insufficient_info: bool,
    /// Answer "this cannot be decided" (any gate).
    #[arg(long, group = "answer")]
    undecidable: bool,
    /// A comment journaled with the answer.
    #[arg(long, value_name = "C")]
    comment: Option<String>,
    /// Who answers [default: $USER, else `cli`].
    #[arg(long, value_name = "WHO")]
    by: Option<String>,
    /// Print the run as one JSON object on stdout.
    #[arg(long)]
    json: bool,
}

impl AnswerArgs {
    fn answer(&self) -> GateAnswer {
        let answer = if self.approve {
            GateAnswer::approve()
        } else if self.reject {
            GateAnswer::reject()
        } else if let Some(option) = &self.choose {
            GateAnswer::choose(option)
        } else if let Some(text) = &self.text {
            GateAnswer::text(text)
        } else if self.insufficient_info {
            GateAnswer::insufficient_info()
        } else {
            GateAnswer::undecidable()
        };
        let answer = answer.by(self.by.clone().unwrap_or_else(default_user));
        match &self.comment {
            Some(c) => answer.with_comment(c),
            None => answer,
        }
    }
}

pub(crate) async fn inbox(loc: &Location, cmd: InboxCommand) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    match cmd {
        InboxCommand::List { json } => {
            let mut items = match project.existing_backend().await? {
                Some(backend) => backend.pending(Some(project.scope_string())).await?,
                None => Vec::new(),
            };
            // An item whose timeout came due with no process to fire it reads as timed out:
            // the timeout is journaled before any answer given now, which is ignored.
            let now = now_ms();
            for item in &mut items {
                if overdue(item, now) {
                    item.status = InboxStatus::TimedOut;
                }
            }
            if json {
                outln!("{}", serde_json::to_string(&items)?)?;
            } else if items.is_empty() {
                errln!("no pending inbox items");
                project.note_if_no_project();
            } else {
                for item in &items {
                    print_item(item)?;
                }
            }
            Ok(EXIT_OK)
        }
        InboxCommand::Answer(args) => answer(&project, args).await,
    }
}

fn print_item(item: &InboxItem) -> anyhow::Result<()> {
    outln!(
        "{}  {} {}",
        item.id,
        item.kind.as_str(),
        super::output::one_line(&item.title)
    )?;
    let state = item.workflow_state.as_deref().unwrap_or("-");
    outln!(
        "    run {} ({}, state {state}), assigned to {}",
        item.workflow_run_id,
        item.workflow_name,
        if item.assigned_to.is_empty() {
            "-".into()
        } else {
            super::output::one_line(&item.assigned_to)
        }
    )?;
    if !item.body.is_empty() {
        outln!("    {}", item.body.replace('\n', "\n    "))?;
    }
    answer_line(item)
}

async fn answer(project: &Project, args: AnswerArgs) -> anyhow::Result<u8> {
    let runtime = project.runtime();
    // A project without a store has no item to answer: nothing is created for it.
    let Some(backend) = project.existing_backend_with(&runtime).await? else {
        return Err(item_not_found(&args.id));
    };
    let item = match backend.inbox_item(&args.id).await? {
        Some((item, scope)) if project.owns(scope.as_deref().unwrap_or_default()) => item,
        _ => return Err(item_not_found(&args.id)),
    };
    // Installed before the answer is recorded and kept for following the run.
    super::progress::Interrupts::install()?.keep();
    let (answered, follower) = backend
        .answer(item.workflow_run_id, &args.id, args.answer())
        .await?;
    match answered {
        Answered::Applied => {}
        Answered::Ignored => {
            errln!("answer ignored: the gate had already completed");
        }
        Answered::Invalid { message } => {
            let hint = answer_hint(&item);
            return Err(Invalid(format!(
                "[MAG-GT002] invalid answer: {message}; this {} gate takes {hint}",
                item.kind.as_str()
            ))
            .into());
        }
        Answered::NotFound => return Err(item_not_found(&args.id)),
        // Nothing was recorded; the run is shown as it is, and exits 1 as BLOCKED.
        Answered::Blocked { message } => errln!("answer not recorded: {message}"),
    }
    finish(project, &backend, item.workflow_run_id, follower, args.json).await
}

fn item_not_found(id: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "[MAG-GT001] inbox item `{id}` not found in this project; `magrathea inbox list` shows the pending ones"
    )
}
