//! Many `magrathea` processes on one redb store: while one process owns the store (`magrathea
//! serve`, or a `magrathea run` waiting on a shell step), every other command on it is the
//! owner's client and prints what it prints without an owner, byte for byte, with the same exit
//! code. Real processes on a real store in a temporary project (`<tmp>/acme/shop`); each child
//! is killed when its guard drops, and every wait has a deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli_common;
use crate::serve_child;
use cli_common::{Project, code, stderr, stdout};
use serve_child::serve_command;
mod clients;
mod control_socket;
mod following;
mod reading;

/// How long any one command or wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(90);

/// A done run whose shell step the driving process executes.
const ECHO: &str = "\
description: Says hello.
tags: [demo]
start: say
states:
  say:
    type: shell_task
    run: \"echo hello\"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
    result: { said: hello }
";

/// A failing run: exit 1 from `run`.
const BROKEN: &str = "\
start: done
states:
  done:
    type: terminal
    outcome: failure
    result: { why: broken }
";

/// Waits on an approval gate: exit 3 from `run`.
const REVIEW: &str = "\
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: \"Ship it?\" }
    on:
      approved: done
      rejected: done
  done:
    type: terminal
    result: { reviewed: true }
";

/// A shell step that holds its process until the file `release` appears in the project.
const HOLD: &str = "\
start: work
states:
  work:
    type: shell_task
    run: \"touch holding; while [ ! -e release ]; do sleep 0.05; done\"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
";

/// Like [`HOLD`], on the files `holding2` and `release2`.
const HOLD2: &str = "\
start: work
states:
  work:
    type: shell_task
    run: \"touch holding2; while [ ! -e release2 ]; do sleep 0.05; done\"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
    result: { held: twice }
";

/// Sleeps on a timer for an hour: `run` follows it until interrupted.
const NAP: &str = "\
start: nap
states:
  nap:
    type: timer_task
    duration: 1h
    on:
      fired: done
  done:
    type: terminal
";

/// Lanes wide enough that a client's shell step runs beside the owner's held one.
const SETTINGS: &str = "lanes:\n  maxConcurrentTasks: 4\n";

/// The tenant lets its projects run shell steps, also when served.
const TENANT_SETTINGS: &str = "execution:\n  shellTask: true\n";

pub(crate) fn project() -> Project {
    let p = Project::new();
    p.workflow("echo", ECHO)
        .workflow("broken", BROKEN)
        .workflow("review", REVIEW)
        .workflow("hold", HOLD)
        .workflow("hold2", HOLD2)
        .workflow("nap", NAP);
    std::fs::write(p.dir.join("_vance/settings.yaml"), SETTINGS).unwrap();
    // A served owner runs shell steps only where the tenant allows them.
    let tenant = p.root.join("acme/_tenant/_vance");
    std::fs::create_dir_all(&tenant).unwrap();
    std::fs::write(tenant.join("settings.yaml"), TENANT_SETTINGS).unwrap();
    p
}

/// A child process, SIGKILLed and reaped when dropped.
pub(crate) struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Whether the process has not exited yet.
    fn is_running(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// Waits for the process to exit, within the deadline; its exit code.
    fn wait(&mut self) -> Option<i32> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the process did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs `cmd` to its end (stdin closed) within the deadline.
fn finish(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).map(|_| v)
    });
    let mut guard = Guard(child);
    guard.wait();
    let status = guard.0.wait().unwrap();
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

pub(crate) fn cli(p: &Project, args: &[&str]) -> Output {
    finish(p.command(args))
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn socket(p: &Project) -> PathBuf {
    p.store().join("control.sock")
}

/// Whether an owner answers on the socket.
fn owner_answers(path: &Path) -> bool {
    UnixStream::connect(path).is_ok()
}

/// `magrathea serve` owning the project's store, once it serves the control socket.
pub(crate) fn serve_owner(p: &Project) -> Guard {
    let mut cmd = serve_command(&p.root);
    cmd.arg("--store")
        .arg(p.store())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let guard = Guard(cmd.spawn().unwrap());
    wait_for("the server's control socket", || owner_answers(&socket(p)));
    guard
}

/// `magrathea run hold` owning the store, once its shell step runs.
pub(crate) fn run_owner(p: &Project) -> Guard {
    let _ = std::fs::remove_file(p.dir.join("holding"));
    let mut cmd = p.command(&["run", "hold"]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let guard = Guard(cmd.spawn().unwrap());
    wait_for("the owner's shell step", || p.dir.join("holding").exists());
    wait_for("the owner's control socket", || owner_answers(&socket(p)));
    guard
}

/// What a command gave: exit code, stdout, stderr.
fn result(o: &Output) -> (i32, String, String) {
    (code(o), stdout(o), stderr(o))
}

/// Output with what differs from one run to the next made uniform: run ids (32 hex digits)
/// become `<id>` and every other number `N` (times, durations, gate steps).
fn uniform(text: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.len() == 32 && word.bytes().all(|b| b.is_ascii_hexdigit()) {
            out.push_str("<id>");
        } else {
            let mut in_number = false;
            for c in word.chars() {
                if c.is_ascii_digit() {
                    if !in_number {
                        out.push('N');
                    }
                    in_number = true;
                } else {
                    in_number = false;
                    out.push(c);
                }
            }
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn uniform_result(o: &Output) -> (i32, String, String) {
    (code(o), uniform(&stdout(o)), uniform(&stderr(o)))
}

fn run_id(o: &Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(o), stderr(o)));
    v["workflowRunId"].as_str().unwrap().to_string()
}

/// Every reading command, on runs that exist (done, waiting) and one that does not.
fn reading_commands(done: &str, waiting: &str) -> Vec<Vec<String>> {
    let unknown = "0123456789abcdef0123456789abcdef";
    let cmds: Vec<Vec<&str>> = vec![
        vec!["runs", "list"],
        vec!["runs", "list", "--json"],
        vec![
            "runs",
            "list",
            "--workflow",
            "echo",
            "--limit",
            "1",
            "--json",
        ],
        vec!["runs", "show", done],
        vec!["runs", "show", done, "--json"],
        vec!["runs", "show", waiting],
        vec!["runs", "show", unknown],
        vec!["journal", done],
        vec!["journal", done, "--json"],
        vec!["journal", waiting, "--json"],
        vec!["journal", unknown],
        vec!["inbox", "list"],
        vec!["inbox", "list", "--json"],
        vec!["runs", "list", "--status", "done,waiting", "--json"],
        vec!["runs", "list", "--status", "WAITING", "--limit", "1"],
    ];
    cmds.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

/// A done and a waiting run, started without an owner.
pub(crate) fn two_runs(p: &Project) -> (String, String) {
    let done = cli(p, &["run", "echo", "--json"]);
    assert_eq!(code(&done), 0, "{}", stderr(&done));
    let waiting = cli(p, &["run", "review", "--json"]);
    assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));
    (run_id(&done), run_id(&waiting))
}

fn outputs(p: &Project, cmds: &[Vec<String>]) -> Vec<(i32, String, String)> {
    cmds.iter()
        .map(|c| {
            let args: Vec<&str> = c.iter().map(String::as_str).collect();
            result(&cli(p, &args))
        })
        .collect()
}

fn assert_same(
    cmds: &[Vec<String>],
    client: &[(i32, String, String)],
    alone: &[(i32, String, String)],
) {
    for ((cmd, c), a) in cmds.iter().zip(client).zip(alone) {
        assert_eq!(c, a, "`magrathea {}` as a client differs", cmd.join(" "));
    }
}
