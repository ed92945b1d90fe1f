//! `shell_task`: a real process via `sh -c` in a named workspace directory (reference §3.2).
//!
//! The command runs in its own process group; a timeout (or a cancelled run) kills the whole
//! group, so a `sleep` started by the script does not outlive it. Output is
//! `{status, exitCode, stdout, stderr, durationMs}` with the reference's outcome mapping:
//! exit 0 → `success`, exit ≠ 0 → `business_error`, killed on timeout → `timeout`, cannot
//! start → `technical_error`.
//!
//! The process sees the run's parameters and stored variables as environment variables, so a
//! command need not splice `${params.x}` into its text (a shell-injection risk):
//! `MAGRATHEA_PARAM_<KEY>` and `MAGRATHEA_VAR_<KEY>`, the key upper-cased with every character
//! other than `A-Z`, `0-9` and `_` replaced by `_`; strings as they are, other values as
//! compact JSON. Also `MAGRATHEA_RUN_ID`, `MAGRATHEA_WORKFLOW` and `MAGRATHEA_STATE`.
//!
//! Each of stdout and stderr keeps at most `shell.maxOutputBytes` (settings; 1 MiB by
//! default): the tail is kept, a `[… N bytes truncated …]` line marks the cut, and
//! `stdoutTruncated` / `stderrTruncated` say so.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use magrathea_core::{TaskContext, TaskError};
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
    max_output: usize,
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
    let (out, out_cut) = tail(&out, max_output);
    let (err, err_cut) = tail(&err, max_output);
    let mut output = json!({
        "status": "COMPLETED",
        "exitCode": status.code(),
        "stdout": out,
        "stderr": err,
        "durationMs": duration_ms,
    });
    if out_cut {
        output["stdoutTruncated"] = Value::Bool(true);
    }
    if err_cut {
        output["stderrTruncated"] = Value::Bool(true);
    }
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
                "stdout": out,
                "stderr": err,
                "durationMs": duration_ms,
            }))),
    }
}

/// The last `max` bytes of `bytes` as text, with a line marking what was cut.
fn tail(bytes: &[u8], max: usize) -> (String, bool) {
    if bytes.len() <= max {
        return (String::from_utf8_lossy(bytes).into_owned(), false);
    }
    let cut = bytes.len() - max;
    let kept = String::from_utf8_lossy(&bytes[cut..]);
    (format!("[… {cut} bytes truncated …]\n{kept}"), true)
}

/// The environment variable that carries a run parameter (`PARAM`) or variable (`VAR`):
/// `MAGRATHEA_<PREFIX>_<KEY>`, the key upper-cased with every character other than `A-Z`,
/// `0-9` and `_` replaced by `_`.
pub(crate) fn env_name(prefix: &str, key: &str) -> String {
    let key: String = key
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("MAGRATHEA_{prefix}_{key}")
}

/// The environment of a shell step: run parameters, stored variables and the run's identity.
pub(crate) fn environment(input: &Value, ctx: &TaskContext) -> Vec<(String, String)> {
    let name = env_name;
    let text = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut env = vec![
        ("MAGRATHEA_RUN_ID".to_string(), ctx.run_id.to_string()),
        ("MAGRATHEA_STATE".to_string(), ctx.name.clone()),
    ];
    if let Some(w) = input.pointer("/$run/workflowName").and_then(Value::as_str) {
        env.push(("MAGRATHEA_WORKFLOW".into(), w.to_string()));
    }
    for (prefix, pointer) in [("PARAM", "/$run/params"), ("VAR", "/$run/vars")] {
        if let Some(map) = input.pointer(pointer).and_then(Value::as_object) {
            env.extend(map.iter().map(|(k, v)| (name(prefix, k), text(v))));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_end_and_marks_the_cut() {
        assert_eq!(tail(b"hello", 10), ("hello".to_string(), false));
        let (t, cut) = tail(b"0123456789", 4);
        assert!(cut);
        assert_eq!(t, "[… 6 bytes truncated …]\n6789");
    }

    #[test]
    fn environment_names_are_sanitised_and_values_rendered() {
        let input = json!({"$run": {
            "workflowName": "wf",
            "params": {"pr-url": "https://x", "n": 3},
            "vars": {"plan": {"risk": "low"}}
        }});
        let ctx = TaskContext::new(magrathea_core::RunId::new(), 0, 1, "check");
        let env = environment(&input, &ctx);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("MAGRATHEA_PARAM_PR_URL").as_deref(), Some("https://x"));
        assert_eq!(get("MAGRATHEA_PARAM_N").as_deref(), Some("3"));
        assert_eq!(
            get("MAGRATHEA_VAR_PLAN").as_deref(),
            Some(r#"{"risk":"low"}"#)
        );
        assert_eq!(get("MAGRATHEA_STATE").as_deref(), Some("check"));
        assert_eq!(get("MAGRATHEA_WORKFLOW").as_deref(), Some("wf"));
    }
}
