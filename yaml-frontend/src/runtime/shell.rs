//! `shell_task`: a real process via `sh -c` in a named workspace directory (reference §3.2).
//!
//! The command runs in its own process group; a timeout (or a cancelled run) kills the whole
//! group, so a `sleep` started by the script does not outlive it. Output is
//! `{status, exitCode, stdout, stderr, durationMs}` with the reference's outcome mapping:
//! exit 0 → `success`, exit ≠ 0 → `business_error`, killed on timeout → `timeout`, cannot
//! start → `technical_error`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use magrathea_core::TaskError;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

/// Kills the process group when dropped (timeout, cancellation, or a dropped task future).
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.0.take() {
            let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
        }
    }
}

/// Runs `command` with `sh -c` in `dir`.
pub(crate) async fn run_shell(
    command: &str,
    dir: PathBuf,
    timeout: Option<Duration>,
    env: Vec<(String, String)>,
) -> Result<Value, TaskError> {
    let started = Instant::now();
    let technical = |msg: String| {
        TaskError::terminal(msg.clone())
            .with_kind("technical_error")
            .with_output(json!({
                "status": "FAILED",
                "exitCode": null,
                "stdout": "",
                "stderr": msg,
                "durationMs": started.elapsed().as_millis() as u64,
            }))
    };
    if !dir.is_dir() {
        return Err(technical(format!(
            "[MAG-SH002] workspace directory {} does not exist",
            dir.display()
        )));
    }
    let mut cmd = tokio::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&dir)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd
        .spawn()
        .map_err(|e| technical(format!("[MAG-SH003] cannot start `sh -c`: {e}")))?;
    let mut guard = GroupGuard(child.id().map(|id| id as i32));
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let collect = async {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let read_out = async {
            if let Some(s) = stdout.as_mut() {
                let _ = s.read_to_end(&mut out).await;
            }
        };
        let read_err = async {
            if let Some(s) = stderr.as_mut() {
                let _ = s.read_to_end(&mut err).await;
            }
        };
        let ((), ()) = tokio::join!(read_out, read_err);
        let status = child.wait().await;
        (status, out, err)
    };
    let finished = match timeout {
        Some(t) => tokio::time::timeout(t, collect).await.ok(),
        None => Some(collect.await),
    };
    let duration_ms = started.elapsed().as_millis() as u64;
    let Some((status, out, err)) = finished else {
        drop(guard); // kills the group
        return Err(TaskError::terminal(format!(
            "command killed after its timeout of {} s",
            timeout.map_or(0.0, |t| t.as_secs_f64())
        ))
        .with_kind("timeout")
        .with_output(json!({
            "status": "KILLED",
            "exitCode": null,
            "stdout": "",
            "stderr": "",
            "durationMs": duration_ms,
        })));
    };
    // The shell exited; anything it left in its group goes with it.
    drop(std::mem::replace(&mut guard, GroupGuard(None)));
    let status =
        status.map_err(|e| technical(format!("[MAG-SH004] waiting for the command: {e}")))?;
    let output = json!({
        "status": "COMPLETED",
        "exitCode": status.code(),
        "stdout": String::from_utf8_lossy(&out),
        "stderr": String::from_utf8_lossy(&err),
        "durationMs": duration_ms,
    });
    match status.code() {
        Some(0) => Ok(output),
        Some(code) => Err(
            TaskError::terminal(format!("command exited with status {code}"))
                .with_kind("business_error")
                .with_output(output),
        ),
        None => Err(TaskError::terminal("command was killed by a signal")
            .with_kind("technical_error")
            .with_output(json!({
                "status": "KILLED",
                "exitCode": null,
                "stdout": String::from_utf8_lossy(&out),
                "stderr": String::from_utf8_lossy(&err),
                "durationMs": duration_ms,
            }))),
    }
}
