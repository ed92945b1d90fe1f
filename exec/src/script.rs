//! `script_task`: JavaScript in an embedded engine (reference §3.2).
//!
//! ```yaml
//! transform:
//!   type: script_task
//!   source: document          # document (default) | workspace
//!   path: _vance/scripts/transform.js
//!   dirName: workspace        # with `source: workspace`: the workspace root dir (default `workspace`)
//!   timeoutSeconds: 120
//! ```
//!
//! The file is the body of an async function `(params, state) => …`: `return <value>` gives
//! the task output (any JSON-compatible value), `await` works. In a YAML run `params` are the
//! run's parameters and `state` its variables, handed over as the call's [`RunData`] (not
//! journaled); a call from code passes them in [`ScriptInput::params`] and
//! [`ScriptInput::state`] (journaled). The script runs in QuickJS (see its `engine` module) on a
//! blocking thread, with its own runtime per execution: no file system, network or process
//! access, a memory limit, and `timeoutSeconds` enforced by interrupting the script.
//!
//! Hooks ([`run_hook`]) run in the same sandbox with another view: the event, `workflows.start`
//! and `log.*` (see the `hook` module's documentation on [`HookHost`]).
//!
//! Outcomes: `success` (the return value); `technical_error` with
//! `{error, message, name, line}` when the script throws, does not compile, exceeds the
//! memory limit or returns something JSON cannot carry; `timeout` when interrupted at its
//! deadline.

mod console_budget;
mod engine;
mod hook;

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use magrathea_core::{TaskContext, TaskError, TaskOutputLimit};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::call::{ExecCall, IntoExecCall, RunData, call_of, decode};
use crate::documents::{DocumentSource, Scope};
use crate::lanes::Lanes;
use crate::{opt_text, positive_secs, saturating_secs, technical, text_field};
use engine::{Failure, Job, Limits};
pub use hook::{
    HookError, HookHost, HookLogLevel, HookOutcome, HookScript, MAX_STARTS, MAX_TIMEOUT, run_hook,
};

/// The task name script steps are journaled under.
pub const TASK: &str = "script_task";

/// The heap a script may use.
const MEMORY_LIMIT_BYTES: usize = 64 * 1024 * 1024;
/// The JavaScript stack a script may use (well inside a blocking thread's 2 MiB stack).
const STACK_LIMIT_BYTES: usize = 512 * 1024;
/// The timeout of a `script_task` without `timeoutSeconds:`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long past its timeout the task waits for the interrupted script's thread before it
/// reports the timeout anyway.
const GRACE: Duration = Duration::from_secs(5);

/// A script to run: the journaled input of a `script_task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ScriptInput {
    /// The script file, relative to its root (no `..`).
    pub path: String,
    /// `document` (default): the project directory, then the tenant's; `workspace`: the
    /// workspace directory [`ScriptInput::dir_name`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// With `source: workspace`, the workspace (default `workspace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_name: Option<String>,
    /// The script is interrupted after this many seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// The script's `params`, journaled; without them, the call's [`RunData`] parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    /// The script's `state`, journaled; without it, the call's [`RunData`] variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

impl ScriptInput {
    /// The project document `path` (e.g. `_vance/scripts/transform.js`).
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            source: None,
            dir_name: None,
            timeout_seconds: None,
            params: None,
            state: None,
        }
    }

    /// `path` in the workspace directory `dir_name` instead.
    pub fn in_workspace(mut self, dir_name: impl Into<String>) -> Self {
        self.source = Some("workspace".into());
        self.dir_name = Some(dir_name.into());
        self
    }

    /// Interrupted after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_seconds = Some(timeout.as_secs_f64());
        self
    }

    /// With `params` for the script.
    pub fn params(mut self, params: Value) -> Self {
        self.params = Some(params);
        self
    }

    /// With `state` for the script.
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The input of a YAML state from its resolved spec (`path`, `source`, `dirName`,
    /// `timeoutSeconds`).
    pub fn from_spec(spec: &Value) -> Self {
        Self {
            path: text_field(spec, "path"),
            source: opt_text(spec, "source"),
            dir_name: opt_text(spec, "dirName"),
            timeout_seconds: positive_secs(spec.get("timeoutSeconds")),
            params: None,
            state: None,
        }
    }
}

impl IntoExecCall for ScriptInput {
    type Output = Value;
    fn into_exec_call(self) -> ExecCall<Value> {
        call_of(TASK, &self)
    }
}

/// The most scripts of all projects that execute at once: each may hold its heap limit
/// (64 MiB), and projects run theirs side by side, so without this one token with many
/// projects could grow the server's memory without end. More wait for a place.
pub const MAX_CONCURRENT_SCRIPTS: usize = 16;

/// The most scripts of one tenant's projects that execute at once: half the places, so one
/// tenant's long scripts never hold every place another tenant's steps wait for.
pub const MAX_CONCURRENT_SCRIPTS_PER_TENANT: usize = MAX_CONCURRENT_SCRIPTS / 2;

/// The limits every execution runs under, the executions running now, and their places (of
/// all tenants, and of each).
#[derive(Debug, Clone)]
pub(crate) struct Scripts {
    limits: Limits,
    running: Arc<AtomicUsize>,
    places: Arc<tokio::sync::Semaphore>,
    tenants: Arc<std::sync::Mutex<std::collections::HashMap<String, Arc<tokio::sync::Semaphore>>>>,
}

impl Scripts {
    /// The default limits (64 MiB heap, 512 KiB stack, 60 s without `timeoutSeconds:`).
    pub(crate) fn new() -> Self {
        Self {
            limits: Limits {
                memory_bytes: MEMORY_LIMIT_BYTES,
                stack_bytes: STACK_LIMIT_BYTES,
                timeout: DEFAULT_TIMEOUT,
                result_bytes: engine::DEFAULT_RESULT_BYTES,
                log_tenant: String::new(),
            },
            running: Arc::new(AtomicUsize::new(0)),
            places: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_SCRIPTS)),
            tenants: Arc::default(),
        }
    }

    /// The places of `tenant`'s scripts.
    fn tenant_places(&self, tenant: &str) -> Arc<tokio::sync::Semaphore> {
        let mut tenants = self
            .tenants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // A tenant none of whose scripts runs or waits holds nothing worth keeping.
        tenants.retain(|_, places| {
            Arc::strong_count(places) > 1
                || places.available_permits() < MAX_CONCURRENT_SCRIPTS_PER_TENANT
        });
        tenants
            .entry(tenant.to_owned())
            .or_insert_with(|| {
                Arc::new(tokio::sync::Semaphore::new(
                    MAX_CONCURRENT_SCRIPTS_PER_TENANT,
                ))
            })
            .clone()
    }
}

/// Counts an execution on its blocking thread, from its start to its very end.
struct Running(Arc<AtomicUsize>);

impl Running {
    fn enter(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl crate::Executors {
    /// How many scripts are executing now, each on its blocking thread: those of running
    /// steps, and those interrupted (timeout, cancelled run) that have not stopped yet.
    pub fn scripts_running(&self) -> usize {
        self.inner.scripts.running.load(Ordering::SeqCst)
    }
}

/// Sets the flag when the task's future is dropped (its run was cancelled), which interrupts
/// the script still running on its blocking thread.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Runs one `script_task` attempt.
pub(crate) async fn execute(
    docs: &DocumentSource,
    lanes: &Lanes,
    scripts: &Scripts,
    input: Value,
    data: Option<&RunData>,
    ctx: TaskContext,
) -> Result<Value, TaskError> {
    let (input, run): (ScriptInput, _) = decode(TASK, input)?;
    let scope = Scope::parse(&run.scope).ok_or_else(|| {
        technical(format!(
            "[MAG-JS017] script_task runs in no project scope (`{}`)",
            run.scope
        ))
    })?;
    let path = input.path.clone();
    if path.is_empty() {
        return Err(technical(
            "[MAG-JS001] script_task has no `path:`; name the script file (e.g. \
             `path: _vance/scripts/transform.js`)"
                .into(),
        ));
    }
    let source = input.source.unwrap_or_else(|| "document".into());
    let dir_name = input.dir_name.unwrap_or_else(|| "workspace".into());
    let mut limits = scripts.limits.clone();
    limits.log_tenant.clone_from(&scope.tenant);
    if let Some(limit) = ctx.data::<TaskOutputLimit>() {
        limits.result_bytes = limit.0;
    }
    if let Some(t) = input.timeout_seconds {
        limits.timeout = saturating_secs(t);
    }
    docs.tenant_settings(&scope)
        .bounds
        .check_task_timeout(TASK, limits.timeout.as_secs_f64())
        .map_err(technical)?;
    let object = |v: Option<Value>| v.filter(|v| !v.is_null()).unwrap_or_else(|| json!({}));
    let params = object(input.params.or_else(|| data.map(|d| d.params.clone())));
    let state = object(
        input
            .state
            .or_else(|| data.map(|d| Value::Object(d.vars.clone()))),
    );
    let _lane = lanes
        .enter(&run.scope, crate::lanes::Lane::Tasks, &ctx)
        .await?;
    let docs = docs.clone();
    let label = format!("{} {}", ctx.run_id, ctx.name);
    let cancel = Arc::new(AtomicBool::new(false));
    let _cancel_on_drop = CancelOnDrop(cancel.clone());
    let timeout = limits.timeout;
    let script_path = path.clone();
    // A place among its tenant's scripts and among those of all projects, held until the
    // script's thread ends (an interrupted script still holds its memory until then). The
    // wait counts against the step's timeout: a step that gets no place in time times out.
    let waiting = std::time::Instant::now();
    let tenant_places = scripts.tenant_places(&scope.tenant);
    let places = scripts.places.clone();
    let taken = tokio::time::timeout(timeout, async move {
        let own = tenant_places.acquire_owned().await?;
        let place = places.acquire_owned().await?;
        Ok::<_, tokio::sync::AcquireError>((own, place))
    })
    .await;
    let (own, place) = match taken {
        Ok(Ok(places)) => places,
        Ok(Err(_)) => return Err(technical("[MAG-JS015] the script engine is closing".into())),
        Err(_) => {
            let secs = timeout.as_secs_f64();
            let msg = format!(
                "[MAG-JS011] script `{path}` got no place to run within its timeout of {secs} s: \
                 at most {MAX_CONCURRENT_SCRIPTS_PER_TENANT} scripts of one tenant and \
                 {MAX_CONCURRENT_SCRIPTS} of all run at once"
            );
            return Err(TaskError::terminal(msg.clone())
                .with_kind(TaskError::TIMEOUT)
                .with_output(json!({ "error": msg, "timeoutSeconds": secs })));
        }
    };
    limits.timeout = timeout.saturating_sub(waiting.elapsed());
    let left = limits.timeout;
    let running = Running::enter(&scripts.running);
    let handle = tokio::task::spawn_blocking(move || {
        let _running = running;
        let _place = (own, place);
        let body = read_script(&docs, &scope, &source, &dir_name, &script_path)?;
        let job = Job {
            body: &body,
            file_name: &script_path,
            params: &params,
            state: &state,
            log_label: &label,
        };
        engine::run(&job, &limits, cancel).map_err(|f| failed(&script_path, timeout, f))
    });
    match tokio::time::timeout(left + GRACE, handle).await {
        Ok(Ok(result)) => result,
        Ok(Err(join)) => Err(technical(format!(
            "[MAG-JS015] script `{path}` crashed the script engine: {join}"
        ))),
        Err(_) => {
            // The interrupt did not stop the script: report the timeout anyway, and say so.
            let secs = timeout.as_secs_f64();
            let msg = format!(
                "[MAG-JS011] script `{path}` did not finish within its timeout of {secs} s and \
                 had not stopped {} s after it was interrupted",
                GRACE.as_secs()
            );
            Err(TaskError::terminal(msg.clone())
                .with_kind(TaskError::TIMEOUT)
                .with_output(json!({ "error": msg, "timeoutSeconds": secs, "stillRunning": true })))
        }
    }
}

/// The task error of a failed execution.
fn failed(path: &str, timeout: Duration, failure: Failure) -> TaskError {
    match failure {
        Failure::Thrown {
            name,
            message,
            line,
        }
        | Failure::Compile {
            name,
            message,
            line,
        } => {
            let what = match &name {
                Some(n) => format!("{n}: {message}"),
                None => message.clone(),
            };
            let at = line.map(|l| format!(" at line {l}")).unwrap_or_default();
            let msg = format!("[MAG-JS010] script `{path}` failed{at}: {what}");
            TaskError::terminal(msg.clone())
                .with_kind("technical_error")
                .with_output(
                    json!({ "error": msg, "message": message, "name": name, "line": line }),
                )
        }
        Failure::Timeout => {
            let secs = timeout.as_secs_f64();
            let msg = format!(
                "[MAG-JS011] script `{path}` did not finish within its timeout of {secs} s and \
                 was interrupted"
            );
            TaskError::terminal(msg.clone())
                .with_kind(TaskError::TIMEOUT)
                .with_output(json!({ "error": msg, "timeoutSeconds": secs }))
        }
        Failure::Cancelled => {
            let msg = format!("[MAG-JS016] script `{path}` was interrupted: its run was cancelled");
            TaskError::terminal(msg.clone())
                .with_kind(TaskError::CANCELLED)
                .with_output(json!({ "error": msg }))
        }
        Failure::OutOfMemory => technical(format!(
            "[MAG-JS012] script `{path}` ran out of memory: it exceeded the memory limit of {} \
             MiB",
            MEMORY_LIMIT_BYTES / (1024 * 1024)
        )),
        Failure::NeverSettled => technical(format!(
            "[MAG-JS013] script `{path}` awaited a promise that never settles (the sandbox has \
             no timers or I/O to settle it)"
        )),
        // A value refused for a reason with a code of its own (too large: `[MAG-BD002]`) is
        // named by that code.
        Failure::BadResult(why) if why.starts_with("[MAG-") => {
            technical(format!("{why} (the return value of script `{path}`)"))
        }
        Failure::BadResult(why) => technical(format!(
            "[MAG-JS014] script `{path}` returned no JSON value: {why}"
        )),
        Failure::Engine(why) => technical(format!(
            "[MAG-JS015] script `{path}` could not run in the script engine: {why}"
        )),
    }
}

/// Reads the script that [`locate_script`] finds: what a run executes, as UTF-8 text.
///
/// # Errors
///
/// The task's `technical_error`: the path is refused or names no file, the file cannot be
/// read, or it is not UTF-8 text (with the line and column of its first byte that is not).
pub fn read_script(
    docs: &DocumentSource,
    scope: &Scope,
    source: &str,
    dir_name: &str,
    path: &str,
) -> Result<String, TaskError> {
    let (file, checked) = locate_checked(docs, scope, source, dir_name, path)?;
    let cannot = |e: std::io::Error| {
        technical(format!(
            "[MAG-JS004] cannot read script {}: {}",
            script_label(docs, source, dir_name, path, &file),
            e.kind()
        ))
    };
    let opened = crate::regular_file::open(&checked).map_err(cannot)?;
    // What was opened is what was checked: a link swapped in between (by a step of the same
    // project) is refused, not followed.
    if opened_path(&opened).is_some_and(|real| real != checked) {
        return Err(technical(format!(
            "[MAG-JS002] invalid script path `{path}`: it changed while it was opened"
        )));
    }
    let bytes = crate::regular_file::read_opened(opened).map_err(cannot)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = crate::documents::NotUtf8Text::of(&e);
        technical(format!(
            "[MAG-JS004] cannot read script {}: line {}, column {}: {}: expected a UTF-8 \
             script; save the file as UTF-8",
            script_label(docs, source, dir_name, path, &file),
            at.line,
            at.column,
            at.what
        ))
    })
}

/// The real path of an open file, where the system says it (`/proc/self/fd` on Linux).
fn opened_path(file: &std::fs::File) -> Option<PathBuf> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd as _;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = file;
        None
    }
}

/// The file a `script_task` with `source`, `dirName` and `path` runs, found as it is at run
/// time: `source: document` in the project directory, then the tenant directory (the
/// cascade); `source: workspace` in the workspace directory `dir_name`. `source` is read in
/// any case, as the document's other fixed words are.
///
/// # Errors
/// A `technical_error` whose message says why, with its code: `[MAG-JS002]` for a path that is
/// absolute, holds `..` or leads out of its root through a symbolic link, `[MAG-JS003]` when
/// no such file exists (naming where it looked), `[MAG-JS005]` for an unknown workspace and
/// `[MAG-JS006]` for an unknown source. `magrathea validate` reports the same for a path
/// written without placeholders.
pub fn locate_script(
    docs: &DocumentSource,
    scope: &Scope,
    source: &str,
    dir_name: &str,
    path: &str,
) -> Result<PathBuf, TaskError> {
    locate_checked(docs, scope, source, dir_name, path).map(|(file, _)| file)
}

/// [`locate_script`], with the real path the checks were made on.
fn locate_checked(
    docs: &DocumentSource,
    scope: &Scope,
    source: &str,
    dir_name: &str,
    path: &str,
) -> Result<(PathBuf, PathBuf), TaskError> {
    let rel = relative(path)?;
    let source = source.to_ascii_lowercase();
    let source = source.as_str();
    let roots = match source {
        "document" => vec![docs.project_dir(scope), docs.tenant_dir(scope)],
        "workspace" => match docs.workspace_dir(scope, dir_name) {
            // A served project's scripts run in the server's own process: its workspaces
            // stay inside it, as shell steps' do.
            Some(dir) if docs.is_served() => {
                let tenant = docs.tenant_settings(scope).shell;
                let project = docs.project_dir(scope);
                vec![
                    crate::workspace::contained(docs, &project, dir, dir_name, &tenant)
                        .map_err(|why| technical(format!("[MAG-JS018] {why}")))?,
                ]
            }
            Some(dir) => vec![dir],
            None => {
                return Err(technical(format!(
                    "[MAG-JS005] unknown workspace `{dir_name}`: declare it under \
                     `workspaces:` in _vance/settings.yaml"
                )));
            }
        },
        other => {
            return Err(technical(format!(
                "[MAG-JS006] unknown script source `{other}`: use `document` or `workspace`"
            )));
        }
    };
    let where_ = |p: &Path| script_label(docs, source, dir_name, path, p);
    for root in &roots {
        let file = root.join(&rel);
        let Ok(base) = root.canonicalize() else {
            continue;
        };
        // No escape through symbolic links either: the file must stay under its root. A
        // link is judged by where it points, not by what is there, so a link out is refused
        // alike whether its target exists or not.
        let real = match crate::confine::resolve_inside(&base, root, &base.join(&rel)) {
            Ok(real) => real,
            Err(crate::confine::Unresolved::Missing) => continue,
            Err(_) => {
                return Err(technical(format!(
                    "[MAG-JS002] invalid script path `{path}`: it leads outside {}",
                    where_(root)
                )));
            }
        };
        if docs.is_settings_file(scope, &real) {
            return Err(technical(format!(
                "[MAG-JS019] invalid script path `{path}`: it is a settings file, which holds \
                 the project's or the tenant's secrets; a script lives in its own file (e.g. \
                 `_vance/scripts/<name>.js`)"
            )));
        }
        return Ok((file, real));
    }
    let looked: Vec<String> = roots.iter().map(|r| where_(&r.join(&rel))).collect();
    Err(technical(format!(
        "[MAG-JS003] script `{path}` not found: looked for {}",
        looked.join(" and ")
    )))
}

/// How messages name `file` (the script `path`, or its root): a workspace may lie outside
/// the tree, so a workspace's file is named by the workspace, not by its directory.
fn script_label(
    docs: &DocumentSource,
    source: &str,
    dir_name: &str,
    path: &str,
    file: &Path,
) -> String {
    if source.eq_ignore_ascii_case("workspace") {
        format!("{} in workspace `{dir_name}`", Path::new(path).display())
    } else {
        docs.label(file)
    }
}

/// `path` as a relative path that stays inside its root: no absolute paths, no `..`.
fn relative(path: &str) -> Result<PathBuf, TaskError> {
    let p = Path::new(path);
    let plain = !path.contains('\0')
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        && p.components().any(|c| matches!(c, Component::Normal(_)));
    if plain {
        Ok(p.to_path_buf())
    } else {
        Err(technical(format!(
            "[MAG-JS002] invalid script path `{path}`: use a path relative to the project or \
             workspace directory, without `..`"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_paths_are_rejected() {
        for bad in ["../x.js", "/etc/passwd", "a/../../x.js", "", ".", "a/.."] {
            assert!(relative(bad).is_err(), "{bad}");
        }
        for good in ["x.js", "_vance/scripts/t.js", "./a/b.js"] {
            assert!(relative(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn timeouts_are_positive_numbers_or_numeric_text() {
        let of = |v: Value| ScriptInput::from_spec(&v).timeout_seconds;
        assert_eq!(of(json!({"path": "a.js", "timeoutSeconds": 2})), Some(2.0));
        assert_eq!(
            of(json!({"path": "a.js", "timeoutSeconds": "1.5"})),
            Some(1.5)
        );
        assert_eq!(of(json!({"path": "a.js", "timeoutSeconds": 0})), None);
        assert_eq!(of(json!({"path": "a.js"})), None);
    }
}
