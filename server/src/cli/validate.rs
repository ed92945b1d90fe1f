//! `magrathea validate [NAME...]`: check workflow and scheduler documents without running
//! anything.
//!
//! With no names, every `_vance/workflows/*.yaml`, `_vance/scheduler/*.yaml`,
//! `_vance/events/*.yaml` and `_vance/hooks/*.yaml` of the project is checked, and its
//! `_vance/settings.yaml`; a path is checked by where it lies: under `_vance/scheduler/` as a
//! schedule (`magrathea_yaml::scheduler::load_schedule`), under `_vance/events/` or
//! `_vance/hooks/` as the server reads those, `_vance/settings.yaml` (a tenant's under
//! `_tenant/`) as settings; any other name or path as a workflow.
//!
//! Output: `ok: <path>` on stdout for each valid document; every error on stderr as
//! `path:line:column: [MAG-Ynnn] message` and every warning as
//! `path:line:column: warning: [MAG-Ynnn] message`, the path as the user would pass it
//! (relative to the current directory when the file is below it). Warnings include what
//! static analysis finds, and `workflow_task`s naming a workflow that neither the project
//! nor its tenant has; a `script_task` whose script (a path without `${…}`) a run would not
//! find is an error. Both are reported with a document's other errors. A file in those
//! directories named like a document but not `*.yaml` (`x.yml`, `x.YAML`), which nothing
//! reads, is a warning (`path: warning: not read: …`). Exit 0 when every
//! document is valid, 1 otherwise — and with `--strict`, 1 also when there is a warning. The
//! exit code holds even when the reader of stdout closed it early.

use std::path::{Path, PathBuf};

use anyhow::Context;
use magrathea_exec::settings_check::{check_against_tenant, check_settings};
use magrathea_exec::{DocumentError, NotUtf8Text};
use magrathea_server::triggers::{check_event_document, check_hook_document};
use magrathea_yaml::scheduler::{Schedule, load_schedule};
use magrathea_yaml::{
    Code, Diagnostic, Diagnostics, LoadOptions, ProjectDocuments, Severity, load_workflow_checked,
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
Without names, checks every `_vance/workflows/*.yaml`, `_vance/scheduler/*.yaml`,
`_vance/events/*.yaml` and `_vance/hooks/*.yaml` of the project, and `_vance/settings.yaml`;
a path under `_vance/scheduler/` is checked as a scheduler document (cron or at, workflow,
timezone, overlap, catchupWindow, jitter; codes MAG-SCnnn), one under `_vance/events/` or
`_vance/hooks/` as an event or hook document, and `_vance/settings.yaml` (a tenant's under
`_tenant/_vance/`) as settings (types, and timeouts and limits in range).
A script_task's script (a path without `${…}`) is looked up as a run would: one it would not
find is an error (MAG-Y040), and so is a hook's script (MAG-HK012); a sub-workflow, a shell
workspace or an agent recipe the project and its tenant lack is a warning (MAG-YA005, MAG-Y042,
MAG-YA007). A file in those directories
named `.yml` or `.YAML`, which nothing reads, is a warning; so is a one-shot schedule whose
`at:` has passed (MAG-SC010).
Exit codes: 0 all valid; 1 an error in some document, or a workflow not found, or (with
--strict) a warning.")]
pub(crate) struct ValidateArgs {
    /// Fail (exit 1) when any document has a warning.
    #[arg(long)]
    strict: bool,
    /// Workflow names (resolved like `run`: project, then tenant) or paths to `.yaml` files,
    /// read by where they lie (schedules, events, hooks, settings, else workflows) [default:
    /// every workflow, schedule, event and hook document of the project, and its settings].
    names: Vec<String>,
}

pub(crate) fn validate(loc: &Location, args: ValidateArgs) -> anyhow::Result<u8> {
    let project = Project::locate(loc)?;
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .unwrap_or_default();
    let mut docs: Vec<(Kind, String, anyhow::Result<String>)> = Vec::new();
    // Files beside the documents that the server would not read (`x.yml`, `x.YAML`): said,
    // as warnings, rather than passed over in silence.
    let mut unread: Vec<PathBuf> = Vec::new();
    if args.names.is_empty() {
        for dir in ["workflows", "scheduler", "events", "hooks"] {
            unread.extend(unread_files(&project.dir.join("_vance").join(dir)));
        }
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
        for (dir, kind) in [("events", Kind::Event), ("hooks", Kind::Hook)] {
            let dir = project.dir.join("_vance").join(dir);
            if dir.is_dir() {
                for path in yaml_files(&dir)? {
                    docs.push((kind.clone(), label(&path), read_named(&path)));
                }
            }
        }
        let settings = project.dir.join("_vance").join("settings.yaml");
        if settings.is_file() {
            docs.push((
                Kind::Settings { tenant: false },
                label(&settings),
                read(&settings),
            ));
        }
        if !docs.iter().any(|(k, ..)| matches!(k, Kind::Workflow)) {
            errln!("no workflows in {}", label(&dir));
        }
        if docs.is_empty() && unread.is_empty() {
            return Ok(EXIT_OK);
        }
    } else {
        for name in &args.names {
            // `x.yaml` that is no file here, for a workflow `x` of the project: its name.
            let stem = name.strip_suffix(".yaml").filter(|stem| {
                !name.contains(['/', '\\'])
                    && !Path::new(name).exists()
                    && project.docs().workflow(&project.scope, stem).is_ok()
            });
            let name = &stem.map_or_else(|| name.clone(), str::to_owned);
            if is_path(name) {
                let path = Path::new(name);
                let kind = kind_of(path);
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
                        Err(anyhow::Error::new(Located::not_utf8(
                            &relative(&path, &cwd),
                            &text,
                        ))),
                    )),
                    // Longer than the server reads: located likewise.
                    Err(DocumentError::TooLarge { path }) => docs.push((
                        Kind::Workflow,
                        name.clone(),
                        Err(anyhow::Error::new(Located(
                            DocumentError::TooLarge {
                                path: relative(&path, &cwd).into(),
                            }
                            .to_string(),
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
    let mut warnings = unread.len();
    for path in &unread {
        if path.extension().is_some_and(|e| e == "yaml") {
            errln!(
                "{}:1:1: warning: [MAG-DOC003] not read: it is no regular file (a link that \
                 leads nowhere, a directory or a named pipe)",
                label(path)
            );
            continue;
        }
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        errln!(
            "{}:1:1: warning: [MAG-Y044] not read: documents are the files ending in `.yaml` (rename it `{name}.yaml`)",
            label(path)
        );
    }
    for (kind, label, text) in &docs {
        let text = match text {
            Ok(t) => t,
            // Located like a diagnostic; anything else is a plain error.
            Err(e) if e.is::<Located>() => {
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
            Kind::Schedule(name) => load_schedule(label, name, text)
                .map_err(|mut errors| {
                    // The workflow it names is looked up all the same: one pass shows
                    // everything to fix.
                    let named = magrathea_exec::yaml_text::from_str::<serde_yaml_ng::Value>(text)
                        .ok()
                        .and_then(|v| {
                            v.get("workflow")
                                .and_then(|w| w.as_str())
                                .map(str::to_owned)
                        });
                    if let Some(workflow) = named
                        && let Some(w) = unknown_workflow(&project, label, text, &workflow, "tick")
                    {
                        errors.push(w);
                    }
                    errors
                })
                .map(|schedule| {
                    let mut found = Diagnostics::new();
                    if let Some(w) =
                        unknown_workflow(&project, label, text, schedule.workflow(), "tick")
                    {
                        found.push(w);
                    }
                    if let Some(w) = past_at(label, text, &schedule) {
                        found.push(w);
                    }
                    found
                }),
            // A valid event document of a workflow the project lacks: a warning, as for a
            // schedule.
            Kind::Event if check_event_document(label, text).is_ok() => {
                let mut found = Diagnostics::new();
                let doc = magrathea_exec::yaml_text::from_str::<
                    magrathea_yaml::schema::EventDocument,
                >(text);
                if let Ok(doc) = doc
                    && let Some(w) =
                        unknown_workflow(&project, label, text, &doc.workflow, "request")
                {
                    found.push(w);
                }
                Ok(found)
            }
            // Checked by the server's own readers, whose messages say where when they can.
            Kind::Event | Kind::Hook | Kind::Settings { .. } => {
                let found = match kind {
                    Kind::Event => check_event_document(label, text)
                        .err()
                        .into_iter()
                        .collect(),
                    Kind::Hook => match check_hook_document(label, text) {
                        Err(e) => vec![e],
                        // A script the hook would not find fails every event it fires on.
                        Ok(()) => missing_hook_script(&project, label, text)
                            .into_iter()
                            .collect(),
                    },
                    Kind::Settings { tenant } => {
                        let mut found = check_settings(label, text, *tenant);
                        if !*tenant && found.is_empty() {
                            let ceiling = project
                                .docs()
                                .tenant_settings(&project.scope)
                                .bounds
                                .task_timeout_ceiling();
                            found.extend(check_against_tenant(label, text, ceiling));
                        }
                        found
                    }
                    _ => Vec::new(),
                };
                if found.is_empty() {
                    if stdout_open && let Err(e) = outln!("ok: {label}") {
                        if !is_stdout_closed(&e) {
                            return Err(e);
                        }
                        stdout_open = false;
                    }
                } else {
                    invalid += 1;
                    for f in found {
                        errln!("{f}");
                    }
                }
                continue;
            }
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
        let what = if docs.iter().any(|(k, ..)| !matches!(k, Kind::Workflow)) {
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

/// A warning when a schedule's or event's `workflow` is neither the project's nor its
/// tenant's: each of its ticks (requests) would fail to start it (as a `workflow_task` naming
/// such a workflow is warned of). Said at the `workflow:` key, with the close name meant.
fn unknown_workflow(
    project: &Project,
    label: &str,
    text: &str,
    workflow: &str,
    each: &str,
) -> Option<Diagnostic> {
    if workflow.contains("${") || project.docs().workflow(&project.scope, workflow).is_ok() {
        return None;
    }
    // At the value, as a workflow document's diagnostics point at theirs.
    let (line, column) = text
        .lines()
        .enumerate()
        .find_map(|(n, l)| {
            let value = l.strip_prefix("workflow:")?;
            let blank = value.len() - value.trim_start().len();
            let column = "workflow:".len() + blank + 1;
            Some((n + 1, u32::try_from(column).unwrap_or(1)))
        })
        .unwrap_or((1, 1));
    Some(Diagnostic {
        path: label.to_owned(),
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column,
        code: Code::UnknownSubWorkflow,
        message: format!(
            "[MAG-YA005] workflow '{workflow}' is neither the project's nor its tenant's \
             (_vance/workflows/{workflow}.yaml): each {each} would fail to start it{}",
            magrathea_exec::suggest::hint(
                workflow,
                project
                    .docs()
                    .workflow_names(&project.scope)
                    .iter()
                    .map(String::as_str)
            )
        ),
        severity: Severity::Warning,
    })
}

/// What a document is read as.
#[derive(Clone)]
enum Kind {
    /// A workflow, `_vance/workflows/<name>.yaml` or any other path.
    Workflow,
    /// A scheduler document, `_vance/scheduler/<name>.yaml`, with its name.
    Schedule(String),
    /// An event document, `_vance/events/<name>.yaml`.
    Event,
    /// A hook document, `_vance/hooks/<name>.yaml`.
    Hook,
    /// `_vance/settings.yaml` of a project, or of a tenant (`_tenant/_vance/settings.yaml`).
    Settings {
        /// A tenant's.
        tenant: bool,
    },
}

/// What the file at `path` is read as, by where it lies: directly in `_vance/scheduler/`,
/// `_vance/events/` or `_vance/hooks/`, or `_vance/settings.yaml`; any other file is a
/// workflow.
fn kind_of(path: &Path) -> Kind {
    let mut dirs = path
        .parent()
        .into_iter()
        .flat_map(Path::components)
        .rev()
        .map(|c| c.as_os_str().to_str());
    let (dir, above) = (dirs.next().flatten(), dirs.next().flatten());
    if dir == Some("_vance") && path.file_name().is_some_and(|f| f == "settings.yaml") {
        return Kind::Settings {
            tenant: above == Some("_tenant"),
        };
    }
    if above != Some("_vance") {
        return Kind::Workflow;
    }
    match dir {
        Some("scheduler") => Kind::Schedule(stem(path)),
        Some("events") => Kind::Event,
        Some("hooks") => Kind::Hook,
        _ => Kind::Workflow,
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("[MAG-DOC003] could not read {}", label(path)))?;
    String::from_utf8(bytes)
        .map_err(|e| anyhow::Error::new(Located::not_utf8(&label(path), &NotUtf8Text::of(&e))))
}

/// A document refused before it is parsed (not UTF-8 text, longer than the server reads),
/// located like every other error of `validate`: `path:line:column: [MAG-…] …`.
#[derive(Debug)]
struct Located(String);

impl Located {
    /// At the first byte of the document that is not UTF-8.
    fn not_utf8(label: &str, text: &NotUtf8Text) -> Self {
        let NotUtf8Text { line, column, what } = text;
        Self(format!(
            "{label}:{line}:{column}: [MAG-Y001] {what}: expected a UTF-8 document; save the file as UTF-8"
        ))
    }
}

impl std::fmt::Display for Located {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Located {}

/// [`read`] for a document found in its directory, which is run by its name: a name that
/// `run` (or a schedule) could not use makes the document invalid.
fn read_named(path: &Path) -> anyhow::Result<String> {
    if let Err(e) = magrathea_yaml::runtime::check_name(&stem(path)) {
        anyhow::bail!("{}: {e}; rename the file", label(path));
    }
    read(path)
}

/// The file name without its extension: a schedule's name.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The `*.yaml` files of `dir`, sorted by name.
fn yaml_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "{} does not exist: is this a project? Pass --project DIR (the directory holding `_vance/`)",
            label(dir)
        ),
        Err(e) => anyhow::bail!("[MAG-DOC003] could not read {}: {e}", label(dir)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    Ok(files)
}

/// A warning when the one-shot schedule's `at:` lies in the past: it never fires.
fn past_at(label: &str, text: &str, schedule: &Schedule) -> Option<Diagnostic> {
    let at = schedule.at_ms()?;
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_millis(),
    )
    .ok()?;
    if at >= now {
        return None;
    }
    let root = magrathea_yaml::parse_yaml(label, text, &LoadOptions::default()).ok()?;
    let node = root.get("at")?;
    Some(Diagnostic::warning(
        label,
        node.span,
        Code::ScheduleNeverFires,
        format_args!(
            "'at' is {}, in the past: this one-shot schedule never fires: expected a time \
             to come",
            node.as_str().unwrap_or("?")
        ),
    ))
}

/// An error when the valid hook document `text` names a script the project does not have,
/// located at its `script:`.
fn missing_hook_script(project: &Project, label: &str, text: &str) -> Option<String> {
    let doc: magrathea_yaml::schema::HookDocument =
        magrathea_exec::yaml_text::from_str(text).ok()?;
    if project.dir.join(&doc.script).is_file() {
        return None;
    }
    let root = magrathea_yaml::parse_yaml(label, text, &LoadOptions::default()).ok()?;
    let span = root.get("script").map_or(root.span, |v| v.span);
    Some(format!(
        "{label}:{}:{}: [MAG-HK012] hook script `{}` is not there: expected a `.js` file at \
         that path from the project's directory",
        span.line, span.column, doc.script
    ))
}

/// The entries of `dir` that nothing reads: files named like YAML documents but not
/// `*.yaml` (`.yml`, `.YAML`), and `*.yaml` entries that are no regular file (a link that
/// leads nowhere, a directory, a named pipe).
fn unread_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| match p.extension().and_then(|e| e.to_str()) {
            Some("yaml") => !p.is_file(),
            Some(e) => {
                p.is_file() && (e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
            }
            None => false,
        })
        .collect();
    files.sort();
    files
}

fn is_path(name: &str) -> bool {
    name.ends_with(".yaml") || name.ends_with(".yml") || name.contains(['/', '\\'])
}

/// A path as the user typed it: without a leading `./`.
fn label(path: &Path) -> String {
    path.strip_prefix(".").unwrap_or(path).display().to_string()
}

/// A document's path relative to the working directory when it lies below it, as `validate`
/// names documents.
pub(crate) fn here(path: &str) -> String {
    let cwd = std::env::current_dir()
        .and_then(|d| d.canonicalize())
        .unwrap_or_default();
    relative(std::path::Path::new(path), &cwd)
}

/// A diagnostic as every command prints it: `path:line:column: [MAG-Ynnn] message`, a warning
/// with `warning:` before its code, its document named by [`here`].
pub(crate) fn shown(d: &magrathea_yaml::Diagnostic) -> String {
    d.rendered_at(&here(&d.path))
}

/// `path` relative to `cwd` when below it.
pub(crate) fn relative(path: &Path, cwd: &Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    path.strip_prefix(cwd)
        .unwrap_or(&path)
        .display()
        .to_string()
}
