//! `magrathea validate [NAME...]`: check workflow and scheduler documents without running
//! anything.
//!
//! With no names, every `_vance/workflows/*.yaml` and every `_vance/scheduler/*.yaml` of the
//! project is checked; a path to a file under `_vance/scheduler/` is checked as a schedule
//! (`magrathea_yaml::scheduler::load_schedule`), any other name or path as a workflow.
//!
//! Output: `ok: <path>` on stdout for each valid document; every error on stderr as
//! `path:line:column: [MAG-Ynnn] message` and every warning as
//! `path:line:column: warning: [MAG-Ynnn] message`, the path as the user would pass it
//! (relative to the current directory when the file is below it). Warnings include what
//! static analysis finds, and `workflow_task`s naming a workflow that neither the project
//! nor its tenant has; a `script_task` whose script (a path without `${…}`) a run would not
//! find is an error. Both are reported with a document's other errors. Exit 0 when every
//! document is valid, 1 otherwise — and with `--strict`, 1 also when there is a warning. The
//! exit code holds even when the reader of stdout closed it early.

use std::path::{Path, PathBuf};

use anyhow::Context;
use magrathea_exec::{DocumentError, NotUtf8Text};
use magrathea_yaml::scheduler::load_schedule;
use magrathea_yaml::{
    Diagnostic, Diagnostics, LoadOptions, ProjectDocuments, load_workflow_checked,
};

use super::output::{errln, is_stdout_closed, outln};
use super::store::Project;
use super::{EXIT_FAILED, EXIT_OK, Location};

/// Arguments of `magrathea validate`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
Prints `ok: <path>` on stdout per valid document and every diagnostic on stderr as
`path:line:column: [MAG-Ynnn] message`, warnings as `path:line:column: warning: [MAG-Ynnn] message`
(warnings do not fail validation unless --strict).
Without names, checks every `_vance/workflows/*.yaml` and `_vance/scheduler/*.yaml` of the
project; a path under `_vance/scheduler/` is checked as a scheduler document (cron or at,
workflow, timezone, overlap, catchupWindow, jitter; codes MAG-SCnnn).
A script_task's script (a path without `${…}`) is looked up as a run would: one it would not
find is an error (MAG-Y040).
Exit codes: 0 all valid; 1 an error in some document, or a workflow not found, or (with
--strict) a warning.")]
pub(crate) struct ValidateArgs {
    /// Fail (exit 1) when any document has a warning.
    #[arg(long)]
    strict: bool,
    /// Workflow names (resolved like `run`: project, then tenant) or paths to `.yaml` files,
    /// those under `_vance/scheduler/` read as schedules [default: every
    /// `_vance/workflows/*.yaml` and `_vance/scheduler/*.yaml` of the project].
    names: Vec<String>,
}

pub(crate) fn validate(loc: &Location, args: ValidateArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .unwrap_or_default();
    let mut docs: Vec<(Kind, String, anyhow::Result<String>)> = Vec::new();
    if args.names.is_empty() {
        let dir = project.dir.join("_vance").join("workflows");
        for path in yaml_files(&dir)? {
            docs.push((Kind::Workflow, label(&path), read_named(&path)));
        }
        let scheduler = project.dir.join("_vance").join("scheduler");
        if scheduler.is_dir() {
            for path in yaml_files(&scheduler)? {
                docs.push((Kind::Schedule(stem(&path)), label(&path), read_named(&path)));
            }
        }
        if docs.is_empty() {
            errln!("no workflows in {}", label(&dir));
            return Ok(EXIT_OK);
        }
    } else {
        for name in &args.names {
            if is_path(name) {
                let path = Path::new(name);
                let kind = if is_schedule(path) {
                    Kind::Schedule(stem(path))
                } else {
                    Kind::Workflow
                };
                docs.push((kind, name.clone(), read(path)));
            } else {
                match project.docs().workflow(&project.scope, name) {
                    Ok((path, text)) => {
                        docs.push((Kind::Workflow, relative(&path, &cwd), Ok(text)));
                    }
                    // Found by its name but not UTF-8: located as when named by its path.
                    Err(DocumentError::NotUtf8 { path, text }) => docs.push((
                        Kind::Workflow,
                        name.clone(),
                        Err(anyhow::Error::new(NotUtf8::at(
                            &relative(&path, &cwd),
                            &text,
                        ))),
                    )),
                    Err(e) => {
                        docs.push((Kind::Workflow, name.clone(), Err(anyhow::anyhow!("{e}"))))
                    }
                }
            }
        }
    }
    let mut invalid = 0;
    // The exit code says whether every document is valid, even when the reader of stdout
    // went away (`| head`): validation goes on, only the `ok:` lines stop.
    let mut stdout_open = true;
    let mut warnings = 0;
    for (kind, label, text) in &docs {
        let text = match text {
            Ok(t) => t,
            // Located like a diagnostic; anything else is a plain error.
            Err(e) if e.is::<NotUtf8>() => {
                errln!("{e}");
                invalid += 1;
                continue;
            }
            Err(e) => {
                errln!("error: {}", super::output::chain(e));
                invalid += 1;
                continue;
            }
        };
        let checked = match kind {
            // The workflows its workflow_tasks start and the scripts its script_tasks run are
            // looked up as a run would, also when the document has errors: one pass shows
            // everything to fix.
            Kind::Workflow => {
                let lookup = ProjectDocuments::new(project.docs(), &project.scope);
                load_workflow_checked(label, text, &LoadOptions::default(), lookup)
                    .map(|loaded| loaded.warnings)
            }
            Kind::Schedule(name) => load_schedule(label, name, text).map(|_| Diagnostics::new()),
        };
        match checked {
            Ok(mut found) => {
                // Under --strict a warning fails the document: it is not reported ok.
                let ok = !args.strict || found.is_empty();
                if ok
                    && stdout_open
                    && let Err(e) = outln!("ok: {label}")
                {
                    if !is_stdout_closed(&e) {
                        return Err(e);
                    }
                    stdout_open = false;
                }
                found.sort();
                for w in found.iter() {
                    errln!("{}", w.rendered());
                }
                warnings += found.len();
            }
            Err(diags) => {
                invalid += 1;
                for d in diags.iter() {
                    errln!("{}", d.rendered());
                }
            }
        }
    }
    if invalid > 0 {
        let what = if docs.iter().any(|(k, ..)| matches!(k, Kind::Schedule(_))) {
            "document(s)"
        } else {
            "workflow(s)"
        };
        errln!("{invalid} of {} {what} invalid", docs.len());
        Ok(EXIT_FAILED)
    } else if args.strict && warnings > 0 {
        errln!("{warnings} warning(s), and --strict fails on warnings");
        Ok(EXIT_FAILED)
    } else {
        Ok(EXIT_OK)
    }
}

/// What a document is read as.
enum Kind {
    /// A workflow, `_vance/workflows/<name>.yaml` or any other path.
    Workflow,
    /// A scheduler document, `_vance/scheduler/<name>.yaml`, with its name.
    Schedule(String),
}

fn read(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("[MAG-DOC003] could not read {}", label(path)))?;
    String::from_utf8(bytes).map_err(|e| anyhow::Error::new(NotUtf8::new(&label(path), &e)))
}

/// A document that is not UTF-8 text, located like every other error of `validate`:
/// `path:line:column: [MAG-Y001] …` at its first byte that is not.
#[derive(Debug)]
struct NotUtf8(String);

impl NotUtf8 {
    fn new(label: &str, e: &std::string::FromUtf8Error) -> Self {
        Self::at(label, &NotUtf8Text::of(e))
    }

    fn at(label: &str, text: &NotUtf8Text) -> Self {
        let NotUtf8Text { line, column, what } = text;
        Self(format!(
            "{label}:{line}:{column}: [MAG-Y001] {what}: expected a UTF-8 document; save the file as UTF-8"
        ))
    }
}

impl std::fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotUtf8 {}

/// [`read`] for a document found in its directory, which is run by its name: a name that
/// `run` (or a schedule) could not use makes the document invalid.
fn read_named(path: &Path) -> anyhow::Result<String> {
    if let Err(e) = magrathea_yaml::runtime::check_name(&stem(path)) {
        anyhow::bail!("{}: {e}; rename the file", label(path));
    }
    read(path)
}

/// Whether `path` lies directly in a `_vance/scheduler/` directory.
fn is_schedule(path: &Path) -> bool {
    let mut dirs = path.parent().into_iter().flat_map(Path::components).rev();
    let scheduler = dirs.next().is_some_and(|c| c.as_os_str() == "scheduler");
    scheduler && dirs.next().is_some_and(|c| c.as_os_str() == "_vance")
}

/// The file name without its extension: a schedule's name.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A diagnostic as every command prints it: `path:line:column: [MAG-Ynnn] message`, a warning
/// with `warning:` before its code.
pub(crate) fn line(d: &Diagnostic) -> String {
    d.rendered()
}

/// The `*.yaml` files of `dir`, sorted by name.
fn yaml_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!(
            "{} does not exist: is this a project? Pass --project DIR (the directory holding `_vance/`)",
            label(dir)
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

fn is_path(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml") || name.contains(['/', '\\'])
}

/// A path as the user typed it: without a leading `./`.
fn label(path: &Path) -> String {
    path.strip_prefix(".").unwrap_or(path).display().to_string()
}

/// `path` relative to `cwd` when below it.
fn relative(path: &Path, cwd: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(cwd)
        .unwrap_or(&path)
        .display()
        .to_string()
}
