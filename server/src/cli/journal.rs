//! `magrathea journal RUN_ID`: a run's journal records, one JSON object per line with its
//! `type`; a table for a person reading a terminal unless `--json` is given.

use std::io::IsTerminal as _;

use anyhow::Context as _;
use magrathea_core::{Entry, Record};

use super::output::{compact, errln, outln, timestamp};
use super::store::Project;
use super::{EXIT_OK, Location};

/// Arguments of `magrathea journal`.
#[derive(Debug, clap::Args)]
pub(crate) struct JournalArgs {
    /// The run id (32 hex digits).
    run_id: String,
    /// One JSON object per line, with `seq`, `createdAt` and `type` (`StartRecord`,
    /// `TaskResultRecord`, …) plus the record's fields; the first also holds the run's
    /// `runId`. This is what the command prints whenever its output is not a terminal (a
    /// pipe, a file); on a terminal, without `--json`, it prints a table.
    #[arg(long, conflicts_with = "table")]
    json: bool,
    /// A table for a person, one record a line (`seq`, time, type, what it says), also when
    /// the output is not a terminal.
    #[arg(long)]
    table: bool,
    /// Write the journal to FILE, one JSON object per line as `--json` prints them (the
    /// first also holds the run's `runId`), for a replay test of the workflow's code
    /// (`magrathea::testing`); `-` writes them to standard output. A file it creates is
    /// readable by its owner alone, as the store is.
    #[arg(long, value_name = "FILE", conflicts_with = "table")]
    export: Option<std::path::PathBuf>,
}

pub(crate) async fn journal(loc: &Location, args: JournalArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    let backend = project.existing_backend().await?;
    let view = project.run(backend.as_ref(), &args.run_id).await?.run;
    let Some(backend) = backend else {
        return Err(project.not_found(view.workflow_run_id));
    };
    let entries = backend.journal(view.workflow_run_id).await?;
    if let Some(path) = args.export.as_ref().filter(|p| p.as_os_str() != "-") {
        let text = magrathea_core::export::write_export(view.workflow_run_id, &entries)?;
        // The run's parameters, variables and outputs: as private as the store they came from.
        let write = || -> std::io::Result<()> {
            use std::io::Write as _;
            use std::os::unix::fs::OpenOptionsExt as _;
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(path)?
                .write_all(text.as_bytes())
        };
        write().with_context(|| format!("cannot write the journal to {}", path.display()))?;
        errln!(
            "exported {} records of run {} to {}",
            entries.len(),
            view.workflow_run_id,
            path.display()
        );
        return Ok(EXIT_OK);
    }
    // A program reading the output (a pipe, a file) gets the records as JSON lines; the table
    // is for a person at a terminal.
    if args.json || args.export.is_some() || !(args.table || std::io::stdout().is_terminal()) {
        // The export's lines: the first holds the run's id.
        let text = magrathea_core::export::write_export(view.workflow_run_id, &entries)?;
        for line in text.lines() {
            outln!("{line}")?;
        }
        return Ok(EXIT_OK);
    }
    for entry in entries {
        outln!(
            "{:>4}  {}  {:<22} {}",
            entry.seq,
            timestamp(entry.at_ms),
            entry.record.type_name(),
            describe(&entry)
        )?;
    }
    Ok(EXIT_OK)
}

/// The record's fields on one line.
fn describe(entry: &Entry) -> String {
    match &entry.record {
        Record::Start(s) => format!(
            "{} v{:?} by {} params {}",
            s.workflow_name,
            s.workflow_version,
            s.started_by,
            compact(&s.params)
        ),
        Record::StateEntered { step, state } => format!("#{step} {state}"),
        Record::TaskStarted {
            step,
            attempt,
            task,
            name,
            ..
        } => format!("#{step} {task} {name} attempt {attempt}"),
        Record::TaskResult {
            step,
            attempt,
            outcome,
            output,
            error,
            ..
        } => {
            let error = error
                .as_deref()
                .map(|e| format!(" error: {e}"))
                .unwrap_or_default();
            format!(
                "#{step} attempt {attempt}: {outcome} {}{error}",
                compact(output)
            )
        }
        Record::TaskRestarted {
            step,
            attempt,
            execution,
            worker,
        } => format!("#{step} attempt {attempt} runs again (execution {execution}) on {worker}"),
        Record::TaskInterrupted {
            step,
            attempt,
            execution,
            worker,
        } => format!(
            "#{step} attempt {attempt} stopped with its process {worker} (execution {execution}; a clean stop, not counted against maxClaimAttempts)"
        ),
        Record::TaskQueued { step, attempt } => {
            format!("#{step} attempt {attempt} waits for a place in its lane")
        }
        Record::TaskAdmitted { step, attempt } => format!("#{step} attempt {attempt} begins"),
        Record::Var { step, key, value } => format!("#{step} {key} = {}", compact(value)),
        Record::Status { status, reason } => match reason {
            Some(r) => format!("{status}: {r}"),
            None => status.to_string(),
        },
        Record::Result { state, result } => match state {
            Some(s) => format!("{s}: {}", compact(result)),
            None => compact(result),
        },
        other => {
            // The remaining records are shown as their JSON fields.
            let mut v = serde_json::to_value(other).unwrap_or_default();
            if let Some(m) = v.as_object_mut() {
                m.remove("type");
            }
            compact(&v)
        }
    }
}
