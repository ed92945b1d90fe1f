//! `shell_task`: a real process via `sh -c` in a named workspace directory (reference §3.2).
//!
//! The command runs in its own process group; a timeout (or a cancelled run) kills the whole
//! group, so a `sleep` started by the script does not outlive it. The group also dies with the
//! process that started it, even when that process is killed with SIGKILL (the lifeline in `run_shell`):
//! after a crash, the step's re-execution never runs beside its orphaned original. Output is a [`ShellOutput`]
//! `{status, exitCode, stdout, stderr, durationMs}` with the reference's outcome mapping:
//! exit 0 → `success`, exit ≠ 0 → `business_error`, killed on timeout → `timeout` (with the
//! output produced until then), cannot start → `technical_error`.
//!
//! The process starts from a clean environment (see [`mod@env`]): never the server's own. It sees
//! the run's parameters and stored variables as environment variables, so a command need not
//! splice `${params.x}` into its text (a shell-injection risk): `MAGRATHEA_PARAM_<KEY>` and
//! `MAGRATHEA_VAR_<KEY>`, the key upper-cased with every character other than `A-Z`, `0-9`
//! and `_` replaced by `_`; strings as they are, other values as compact JSON, nested values
//! under their joined path. They come from the call's [`RunData`], which is not journaled.
//! Also `MAGRATHEA_RUN_ID`, `MAGRATHEA_WORKFLOW` and `MAGRATHEA_STATE`, and the input's own
//! `env` (journaled; under `splice: variables` a YAML state's `${…}` in `run:` arrive there as
//! `MAGRATHEA_SPLICE_<n>`).
//!
//! **Containment** (the tenant's `shell:` settings, [`TenantShellSettings`]):
//! - the process runs in the Landlock [`sandbox`]: on by default for served trees (a kernel
//!   without Landlock then refuses shell steps, `[MAG-SH010]`), off by default for the local
//!   `magrathea` command; `shell.sandbox: on | off` decides;
//! - in a served tree, a workspace whose real path lies outside the project directory is
//!   refused (`[MAG-SH011]`) unless it lies under one of the tenant's `shell.workspaceRoots`;
//! - a step that declares no timeout gets the project's `shell.defaultTimeoutSeconds`, at
//!   most the tenant's (default 3600 s);
//! - shell steps wait in the project's shell lane, apart from script and tool steps
//!   (`lanes.maxConcurrentTasks` wide, like the other).
//!
//! Each of stdout and stderr is read as it is produced into a buffer that keeps at most
//! `shell.maxOutputBytes` (settings; 1 MiB by default): the tail is kept, a
//! `[… N bytes truncated …]` line marks the cut, and `stdoutTruncated` / `stderrTruncated`
//! say so. A command's output is never held whole in memory.

pub mod env;
pub mod sandbox;
mod scratch;
mod tail;

use tail::Tail;
mod tree;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use magrathea_core::{TaskContext, TaskError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

pub use env::env_name;

use self::sandbox::{Sandbox, SandboxError};
use crate::call::{ExecCall, IntoExecCall, RunData, call_of, decode};
use crate::documents::{DocumentSource, Scope};
use crate::lanes::{Lane, Lanes};
use crate::settings::{SandboxMode, TenantShellSettings};
use crate::{opt_text, positive_secs, saturating_secs, text_field};

/// The task name shell steps are journaled under.
pub const TASK: &str = "shell_task";

/// A shell command to run: the journaled input of a `shell_task`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ShellInput {
    /// The command, run with `sh -c`.
    pub run: String,
    /// The workspace directory it runs in: a name declared under `workspaces:` in the
    /// project's settings, or `workspace` (the project directory). `None` is an error
    /// (`[MAG-SH001]`), as a YAML state without `dirName:`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir_name: Option<String>,
    /// Kills the process group after this many seconds (outcome `timeout`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<f64>,
    /// More environment variables, journaled with the input (the run's parameters and
    /// variables come from [`RunData`] instead).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

impl ShellInput {
    /// `command` in the workspace `workspace` (the project directory), without a timeout.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            run: command.into(),
            dir_name: Some("workspace".into()),
            timeout_seconds: None,
            env: BTreeMap::new(),
        }
    }

    /// In the workspace directory `name`.
    pub fn dir(mut self, name: impl Into<String>) -> Self {
        self.dir_name = Some(name.into());
        self
    }

    /// Killed after `timeout`.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_seconds = Some(timeout.as_secs_f64());
        self
    }

    /// With the environment variable `name` set to `value`.
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }

    /// The input of a YAML state from its resolved spec (`run`, `dirName`, `timeoutSeconds`
    /// as a number or numeric text, and `env`: the variables that carry the values spliced
    /// into `run`).
    pub fn from_spec(spec: &Value) -> Self {
        Self {
            run: text_field(spec, "run"),
            dir_name: opt_text(spec, "dirName"),
            timeout_seconds: positive_secs(spec.get("timeoutSeconds")),
            env: spec
                .get("env")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect(),
        }
    }
}

impl IntoExecCall for ShellInput {
    type Output = ShellOutput;
    fn into_exec_call(self) -> ExecCall<ShellOutput> {
        call_of(TASK, &self)
    }
}

/// How the process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ShellStatus {
    /// It exited (with any status).
    Completed,
    /// It was killed at its timeout.
    Killed,
    /// It could not be started or waited for, or a signal killed it before its timeout.
    Failed,
}

/// What a shell command produced: the task's output, and the output of its `business_error`,
/// `timeout` and `technical_error` failures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ShellOutput {
    /// How it ended.
    pub status: ShellStatus,
    /// The exit status, if it exited.
    pub exit_code: Option<i32>,
    /// Standard output (its tail, if longer than the limit).
    pub stdout: String,
    /// Standard error (its tail, if longer than the limit).
    pub stderr: String,
    /// How long it ran.
    pub duration_ms: u64,
    /// Whether `stdout` lost its beginning to the limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdout_truncated: bool,
    /// Whether `stderr` lost its beginning to the limit.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stderr_truncated: bool,
}

impl ShellOutput {
    /// The output a failed shell step carries, e.g. from a workflow's `StepError::output`.
    pub fn of_failure(output: &Value) -> Option<Self> {
        serde_json::from_value(output.clone()).ok()
    }

    fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A step that could not start, or whose process could not be waited for: `technical_error`
/// with the output every shell step has (reference §3.2), `FAILED`, the reason in `stderr`
/// and in `error` (as every task type's technical error carries it).
fn cannot_start(msg: String, started: Instant) -> TaskError {
    let output = ShellOutput {
        status: ShellStatus::Failed,
        exit_code: None,
        stdout: String::new(),
        stderr: msg.clone(),
        duration_ms: started.elapsed().as_millis() as u64,
        stdout_truncated: false,
        stderr_truncated: false,
    };
    let mut output = output.to_value();
    if let Value::Object(m) = &mut output {
        m.insert("error".into(), Value::String(msg.clone()));
    }
    TaskError::terminal(msg)
        .with_kind(TaskError::TECHNICAL)
        .with_output(output)
}

/// Runs one `shell_task` attempt.
pub(crate) async fn execute(
    docs: &DocumentSource,
    lanes: &Lanes,
    input: Value,
    data: Option<&RunData>,
    ctx: TaskContext,
) -> Result<Value, TaskError> {
    let (input, run): (ShellInput, _) = decode(TASK, input)?;
    let started = Instant::now();
    let technical = |msg: String| cannot_start(msg, started);
    let Some(dir_name) = input.dir_name.as_deref() else {
        return Err(technical(
            "[MAG-SH001] shell_task has no `dirName:`; name a workspace directory (e.g. \
             `dirName: workspace`)"
                .into(),
        ));
    };
    let scope: Scope = run.scope();
    let Some(dir) = docs.workspace_dir(&scope, dir_name) else {
        return Err(technical(format!(
            "[MAG-SH005] unknown workspace `{dir_name}`: declare it under `workspaces:` in \
             _vance/settings.yaml"
        )));
    };
    let tenant = docs.tenant_settings(&scope).shell;
    let project = docs.settings(&scope).shell;
    let dir = if docs.is_served() {
        check_workspace_root(docs, &docs.project_dir(&scope), dir, dir_name, &tenant)?
    } else {
        dir
    };
    let sandbox = tenant.sandbox.unwrap_or(if docs.is_served() {
        SandboxMode::On
    } else {
        SandboxMode::Off
    });
    let timeout = input
        .timeout_seconds
        .unwrap_or_else(|| default_timeout(&tenant, project.default_timeout_seconds));
    docs.tenant_settings(&scope)
        .bounds
        .check_task_timeout(TASK, timeout)
        .map_err(technical)?;
    let _lane = lanes.enter(&run.scope, Lane::Shell, &ctx).await?;
    let tmp = scratch::Scratch::create().map_err(|e| {
        technical(format!(
            "[MAG-SH013] cannot create the shell step's temporary directory: {e}"
        ))
    })?;
    let places = env::Places {
        workspace: &dir,
        tmp: tmp.path(),
    };
    let mut vars = env::base(&places, &tenant);
    vars.extend(run_variables(data, &ctx));
    if !run.workflow_name.is_empty() {
        vars.push(("MAGRATHEA_WORKFLOW".into(), run.workflow_name.clone()));
    }
    vars.extend(input.env);
    let env::Spilled { vars, prelude } = env::spill(vars, tmp.path()).map_err(|e| {
        technical(format!(
            "[MAG-SH013] cannot write a large parameter or variable to the shell step's \
             temporary directory: {e}"
        ))
    })?;
    let sandbox = match sandbox {
        SandboxMode::On => Some(Sandbox::new(&dir, tmp.path(), &tenant)),
        SandboxMode::Off => None,
    };
    if let Some(opened) = sandbox
        .as_ref()
        .filter(|s| docs.is_served() && s.workspace() != dir)
    {
        // A link swapped after the workspace was checked: the sandbox would grant where it
        // leads now.
        return Err(technical(format!(
            "[MAG-SH011] workspace `{dir_name}` moved while it was checked (it leads to `{}` \
             now); run the step again once its path stays put",
            docs.label(opened.workspace())
        )));
    }
    if let Some(allowed) = sandbox
        .as_ref()
        .filter(|_| docs.is_served())
        .and_then(|s| docs.protected().find_map(|p| s.exposes(p)))
    {
        return Err(technical(format!(
            "[MAG-SH014] shell steps are refused here: the served document tree or the \
             server's store lies beneath `{}`, which the shell sandbox lets steps reach, so a \
             step could read `_auth/`, every tenant and the store; the server's operator \
             keeps them elsewhere or narrows the tenant's `shell` settings",
            allowed.display()
        )));
    }
    if let Some(granted) = sandbox.as_ref().filter(|_| docs.is_served()).and_then(|s| {
        // The tenant's own projects are its own to grant; the rest of the tree (other
        // tenants, `_auth/`, its `_tenant/` with the settings that decide the sandbox) and
        // the store are not, whatever its settings say.
        let own = docs.root().join(&scope.tenant);
        docs.protected().enumerate().find_map(|(i, p)| {
            let own = (i == 0).then_some(own.as_path());
            s.grants_inside(p, own)
        })
    }) {
        return Err(technical(format!(
            "[MAG-SH015] shell steps of tenant `{}` are refused: its `shell.readPaths` or \
             `writePaths` names `{}`, which lies in the served document tree outside the \
             tenant's own projects (another tenant, `_auth/`, the tenant's `_tenant/`) or in \
             the server's store; \
             the tenant's administrator removes it from _tenant/_vance/settings.yaml",
            scope.tenant,
            docs.label(&granted)
        )));
    }
    let job = Job {
        dir,
        timeout: Some(saturating_secs(timeout)),
        env: vars,
        max_output: kept_output(
            project.max_output_bytes,
            ctx.data::<magrathea_core::TaskOutputLimit>().map(|l| l.0),
        ),
        sandbox,
    };
    // A spliced value too large for the environment is set by the shell from its file first.
    let command = if prelude.is_empty() {
        input.run
    } else {
        format!("{prelude}{}", input.run)
    };
    run_shell(&command, job).await
}

/// The bytes kept of each of stdout and stderr: the project's `shell.maxOutputBytes`, never
/// more than a task's output may hold (`limit`, the engine's default when unknown): what a
/// project asks beyond it would only grow the server's memory (a step may print gigabytes)
/// before the step fails its output limit.
fn kept_output(project: usize, limit: Option<usize>) -> usize {
    project.min(limit.unwrap_or(magrathea_core::DEFAULT_MAX_TASK_OUTPUT_BYTES))
}

/// The timeout of a step that declares none: the project's default, at most the tenant's (a
/// tenant value that is not a positive number counts as the default hour).
fn default_timeout(tenant: &TenantShellSettings, project: Option<f64>) -> f64 {
    let cap = Some(tenant.default_timeout_seconds)
        .filter(|c| c.is_finite() && *c > 0.0)
        .unwrap_or(3600.0);
    match project {
        Some(p) if p.is_finite() && p > 0.0 => p.min(cap),
        _ => cap,
    }
}

/// Refuses a workspace of a served project that lies outside it (see
/// [`crate::workspace::contained`]); gives the real path the step runs in (and the sandbox
/// allows).
fn check_workspace_root(
    docs: &DocumentSource,
    project: &Path,
    dir: PathBuf,
    name: &str,
    tenant: &TenantShellSettings,
) -> Result<PathBuf, TaskError> {
    // `technical_error`, as every shell step that cannot start (reference §3.2).
    crate::workspace::contained(docs, project, dir, name, tenant)
        .map_err(|why| cannot_start(format!("[MAG-SH011] {why}"), Instant::now()))
}

/// The script that starts every shell step: `sh -c LIFELINE sh <command>`.
///
/// The step's standard input is a pipe whose only writing end is held by the process that
/// started the step (close-on-exec, so no other program inherits it). The script starts a
/// watcher in the step's process group that reads that pipe; then it `exec`s `sh -c
/// <command>` with `/dev/null` as its input, so the command keeps the process id, the exit
/// status and the signal the executor waits for. The watcher holds none of the command's output
/// pipes, which end when the command's own processes are done. When the starting process ends
/// in any way — SIGKILL included — the kernel closes the pipe, the watcher reads its end, and
/// kills the whole group with SIGKILL: the command and everything it started in its group.
///
/// A parent-death signal (`PR_SET_PDEATHSIG`) would not do: the kernel sends it when the
/// *thread* that forked the child ends, and sandboxed steps are forked from a thread that ends
/// right after the fork (see [`sandbox`]). It would also reach only the direct child, not the
/// processes the command starts. The watcher is a shell builtin loop, so it runs in the
/// sandbox and needs nothing outside it.
const LIFELINE: &str = "exec 3<&0; \
    { while read -r _ <&3; do :; done; kill -KILL 0; } </dev/null >/dev/null 2>&1 & \
    exec sh -c \"$1\" sh 3<&- </dev/null";

/// Kills the process group when dropped (timeout, cancellation, or a dropped task future), and
/// the processes its members started outside it whose parents still live ([`tree`]).
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            tree::kill_group_and_strays(pgid);
        }
    }
}

/// Reads `stream` to its end into `tail`.
async fn pump(stream: Option<impl AsyncRead + Unpin>, tail: &mut Tail) {
    let Some(mut stream) = stream else { return };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => tail.push(&buf[..n]),
        }
    }
}

/// How long the output pipes are read after the shell exited, for what is still in them.
const PIPE_GRACE: Duration = Duration::from_millis(200);

/// Where and how a command runs.
struct Job {
    dir: PathBuf,
    timeout: Option<Duration>,
    env: Vec<(String, String)>,
    max_output: usize,
    /// `None`: not confined.
    sandbox: Option<Sandbox>,
}

/// Runs `command` with `sh -c` in the job's directory, with exactly the job's environment.
async fn run_shell(command: &str, job: Job) -> Result<Value, TaskError> {
    let Job {
        dir,
        timeout,
        env,
        max_output,
        sandbox,
    } = job;
    let started = Instant::now();
    let technical = |msg: String| cannot_start(msg, started);
    if !dir.is_dir() {
        return Err(technical(
            "[MAG-SH002] the workspace directory does not exist: create it, or point \
             `workspaces:` in _vance/settings.yaml at one that does"
                .into(),
        ));
    }
    // A value spliced into `run:` (or any other variable) holding a NUL byte: no process
    // environment can hold it, so the step cannot start; said as such.
    if let Some((name, _)) = env.iter().find(|(_, v)| v.contains('\0')) {
        return Err(technical(format!(
            "[MAG-SH016] the variable `{name}` holds a NUL byte, which no process's \
             environment can hold: the step cannot start; keep binary data out of what `run:` \
             splices (store it in a file, or print it with `-print0` into a file)"
        )));
    }
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(LIFELINE)
        .arg("sh")
        .arg(command)
        .current_dir(&dir)
        .env_clear()
        .envs(env)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let spawned = match sandbox {
        None => cmd.spawn().map_err(SandboxError::Spawn),
        Some(sandbox) => sandbox.spawn(cmd).await,
    };
    let mut child = spawned.map_err(|e| technical(spawn_error(e)))?;
    let mut guard = GroupGuard(child.id().map(|id| id as i32));
    // Held until the command has ended: closing it (or dying) kills the group (`LIFELINE`).
    let lifeline = child.stdin.take();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut out = Tail::new(max_output);
    let mut err = Tail::new(max_output);
    let finished = {
        let collect = async {
            let pumps = async {
                tokio::join!(pump(stdout, &mut out), pump(stderr, &mut err));
            };
            tokio::pin!(pumps);
            tokio::select! {
                () = &mut pumps => child.wait().await,
                status = child.wait() => {
                    // The shell has exited: what it wrote is in the pipes, read at once. A
                    // child it left in the background may hold them open; it goes with the
                    // group below, and the step ends with the shell's status.
                    let _ = tokio::time::timeout(PIPE_GRACE, &mut pumps).await;
                    status
                }
            }
        };
        match timeout {
            Some(t) => match tokio::time::timeout(t, collect).await {
                Ok(status) => Some(status),
                // The deadline passed while the shell's end was being taken in (its output
                // read for `PIPE_GRACE`, or this process stopped or busy when it came): a
                // command that had exited keeps its status; one still running is killed.
                Err(_) => child.try_wait().ok().flatten().map(Ok),
            },
            None => Some(collect.await),
        }
    };
    let duration_ms = started.elapsed().as_millis() as u64;
    let ((stdout, stdout_truncated), (stderr, stderr_truncated)) = (out.text(), err.text());
    let output = |status, exit_code| ShellOutput {
        status,
        exit_code,
        stdout: stdout.clone(),
        stderr: stderr.clone(),
        duration_ms,
        stdout_truncated,
        stderr_truncated,
    };
    let Some(status) = finished else {
        drop(guard); // kills the group
        return Err(TaskError::terminal(format!(
            "command killed after its timeout of {} s",
            timeout.map_or(0.0, |t| t.as_secs_f64())
        ))
        .with_kind(TaskError::TIMEOUT)
        .with_output(output(ShellStatus::Killed, None).to_value()));
    };
    // The shell exited; anything it left in its group goes with it.
    drop(std::mem::replace(&mut guard, GroupGuard(None)));
    drop(lifeline);
    let status =
        status.map_err(|e| technical(format!("[MAG-SH004] waiting for the command: {e}")))?;
    match status.code() {
        Some(0) => Ok(output(ShellStatus::Completed, Some(0)).to_value()),
        Some(code) => Err(
            TaskError::terminal(format!("command exited with status {code}"))
                .with_kind("business_error")
                .with_output(output(ShellStatus::Completed, Some(code)).to_value()),
        ),
        // Killed by someone else than its watchdog (the kernel's out-of-memory killer, an
        // operator): the reference's table keeps KILLED for the watchdog (`timeout`), and a
        // job that failed otherwise is FAILED, a `technical_error`.
        None => Err(TaskError::terminal(format!(
            "command was killed by signal {}",
            std::os::unix::process::ExitStatusExt::signal(&status)
                .map_or_else(|| "?".to_owned(), |s| s.to_string())
        ))
        .with_kind(TaskError::TECHNICAL)
        .with_output(output(ShellStatus::Failed, None).to_value())),
    }
}

/// The message of a command that did not start.
fn spawn_error(e: SandboxError) -> String {
    match e {
        SandboxError::Spawn(e) => format!("[MAG-SH003] cannot start `sh -c`: {e}"),
        SandboxError::Unavailable => "[MAG-SH010] the shell sandbox (Landlock) is not \
             available on this server's kernel, so shell steps do not run; the tenant's \
             administrator may run them unconfined with `shell: {sandbox: off}` in \
             _tenant/_vance/settings.yaml"
            .into(),
        SandboxError::Setup(e) => format!("[MAG-SH012] cannot set up the shell sandbox: {e}"),
    }
}

/// Whether this kernel enforces the shell sandbox (Landlock). Without it, a served tree's
/// shell steps are refused unless the tenant turns the sandbox off.
pub fn sandbox_available() -> bool {
    sandbox::available()
}

/// The run's identity, parameters and stored variables as `MAGRATHEA_*` variables.
fn run_variables(data: Option<&RunData>, ctx: &TaskContext) -> Vec<(String, String)> {
    let mut env = vec![
        ("MAGRATHEA_RUN_ID".to_string(), ctx.run_id.to_string()),
        ("MAGRATHEA_STATE".to_string(), ctx.name.clone()),
    ];
    if let Some(data) = data {
        if let Some(params) = data.params.as_object() {
            env.extend(env::flattened("PARAM", params.iter()));
        }
        env.extend(env::flattened("VAR", data.vars.iter()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_keeps_no_more_output_than_a_task_may_hold() {
        assert_eq!(kept_output(4_000_000_000, Some(65_536)), 65_536);
        assert_eq!(
            kept_output(4_000_000_000, None),
            magrathea_core::DEFAULT_MAX_TASK_OUTPUT_BYTES
        );
        assert_eq!(kept_output(1 << 20, Some(4 << 20)), 1 << 20);
    }
    use serde_json::json;

    #[test]
    fn environment_names_are_sanitised_and_values_rendered() {
        let mut vars = serde_json::Map::new();
        vars.insert("plan".into(), json!({"risk": "low"}));
        let data = RunData::new(json!({"pr-url": "https://x", "n": 3}), vars);
        let ctx = TaskContext::new(magrathea_core::RunId::new(), 0, 1, "check");
        let env = run_variables(Some(&data), &ctx);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("MAGRATHEA_PARAM_PR_URL").as_deref(), Some("https://x"));
        assert_eq!(get("MAGRATHEA_PARAM_N").as_deref(), Some("3"));
        assert_eq!(
            get("MAGRATHEA_VAR_PLAN").as_deref(),
            Some(r#"{"risk":"low"}"#)
        );
        assert_eq!(get("MAGRATHEA_STATE").as_deref(), Some("check"));
    }

    #[test]
    fn without_landlock_a_sandboxed_step_is_refused_naming_the_setting_that_turns_it_off() {
        let msg = spawn_error(SandboxError::Unavailable);
        assert!(msg.starts_with("[MAG-SH010]"), "{msg}");
        assert!(msg.contains("`shell: {sandbox: off}`"), "{msg}");
        assert!(msg.contains("_tenant/_vance/settings.yaml"), "{msg}");
    }

    #[test]
    fn the_input_comes_from_a_resolved_spec() {
        let spec = json!({
            "type": "shell_task", "run": "make", "dirName": "build",
            "timeoutSeconds": "2.5", "storeAs": "x", "on": {"success": "done"}
        });
        let input = ShellInput::from_spec(&spec);
        assert_eq!(
            input,
            ShellInput::new("make")
                .dir("build")
                .timeout(Duration::from_millis(2500))
        );
        assert_eq!(
            serde_json::to_value(&input).unwrap(),
            json!({"run": "make", "dirName": "build", "timeoutSeconds": 2.5})
        );
        assert_eq!(ShellInput::from_spec(&json!({"run": "x"})).dir_name, None);
    }
}
