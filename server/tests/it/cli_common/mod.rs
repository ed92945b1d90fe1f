//! A temporary project directory (`<tmp>/acme/shop/_vance/workflows/`, tenant `acme`, project
//! `shop`) and the `magrathea` binary run in it, for the command's end-to-end tests.

// Each test binary uses a part of this module.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_magrathea");

pub(crate) struct Project {
    _tmp: tempfile::TempDir,
    /// The directory holding the tenant `acme`.
    pub(crate) root: PathBuf,
    /// The project directory, `<root>/acme/shop`.
    pub(crate) dir: PathBuf,
}

impl Project {
    pub(crate) fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let dir = root.join("acme").join("shop");
        std::fs::create_dir_all(dir.join("_vance/workflows")).unwrap();
        Self {
            _tmp: tmp,
            root,
            dir,
        }
    }

    pub(crate) fn workflow(&self, name: &str, yaml: &str) -> &Self {
        std::fs::write(self.dir.join(format!("_vance/workflows/{name}.yaml")), yaml).unwrap();
        self
    }

    /// The command with `args`, run in `cwd`.
    pub(crate) fn command_in(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args).current_dir(cwd).env("USER", "tester");
        c
    }

    /// The command with `args`, run in the project directory.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        self.command_in(&self.dir, args)
    }

    /// Runs the binary with the project as the current directory.
    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    /// Runs the command like [`Project::cli`], killing it and failing the test if it has not
    /// exited within `limit` (a command that must return rather than wait on a run).
    pub(crate) fn cli_within(&self, args: &[&str], limit: std::time::Duration) -> Output {
        let child = self
            .command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        match rx.recv_timeout(limit) {
            Ok(out) => out.unwrap(),
            Err(_) => {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                panic!(
                    "`magrathea {}` did not exit within {limit:?}",
                    args.join(" ")
                );
            }
        }
    }

    pub(crate) fn cli_in(&self, cwd: &Path, args: &[&str]) -> Output {
        self.command_in(cwd, args).output().unwrap()
    }

    /// Spawns the command with stdin closed and stdout and stderr piped.
    pub(crate) fn spawn(&self, args: &[&str]) -> Child {
        self.command(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// The default store of the project.
    pub(crate) fn store(&self) -> PathBuf {
        self.dir.join(".magrathea")
    }
}

pub(crate) fn code(o: &Output) -> i32 {
    o.status
        .code()
        .expect("exited with a code, not by a signal")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub(crate) fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}\n{}", stdout(o), stderr(o)))
}

/// Runs `command` to its end and returns its output; kills it and fails the test when it is
/// still running after `limit` (a command that should have stopped on its own).
pub(crate) fn output_within(command: &mut Command, limit: std::time::Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let read = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = pipe.read_to_end(&mut buf);
            buf
        })
    };
    let out = read(Box::new(child.stdout.take().unwrap()));
    let err = read(Box::new(child.stderr.take().unwrap()));
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
            panic!("the command was still running after {limit:?}; stderr:\n{err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}
