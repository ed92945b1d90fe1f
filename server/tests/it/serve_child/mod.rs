//! `magrathea serve` as a child process on 127.0.0.1 port 0, for the tests that need a real
//! process: SIGKILL and restart, its resident memory, the environment it hands shell steps.

// Each test binary uses a part of this module.
#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `magrathea` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_magrathea");

/// `magrathea serve --addr 127.0.0.1:0 --root <root>`; callers add flags and environment.
pub fn serve_command(root: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(["serve", "--addr", "127.0.0.1:0", "--root"])
        .arg(root);
    cmd
}

/// A served child process and the base URL it printed; killed (SIGKILL) when dropped.
pub struct ServeChild {
    /// The process.
    pub child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl ServeChild {
    /// `magrathea serve` on `root` with no further flags.
    pub fn start(root: &Path) -> Self {
        Self::spawn(serve_command(root))
    }

    /// Runs `cmd` (a `serve` command) and waits, for at most 60 s, for its `listening on
    /// <base>` line.
    pub fn spawn(cmd: Command) -> Self {
        Self::spawn_with_stderr(cmd, Stdio::null())
    }

    /// [`ServeChild::spawn`] with the server's stderr (its log) written to `file`.
    pub fn spawn_logging_to(cmd: Command, file: &Path) -> Self {
        Self::spawn_with_stderr(cmd, std::fs::File::create(file).unwrap().into())
    }

    fn spawn_with_stderr(mut cmd: Command, stderr: Stdio) -> Self {
        let mut child = cmd.stdout(Stdio::piped()).stderr(stderr).spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(read.map(|_| line));
        });
        // A server that never gets to listening fails the test instead of stalling it.
        let line = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(read) => read.unwrap(),
            Err(_) => {
                let _ = child.kill();
                panic!("the server did not print its address within 60 s");
            }
        };
        let Some(base) = line.trim().strip_prefix("listening on ") else {
            let _ = child.kill();
            panic!("unexpected first line {line:?}");
        };
        Self {
            base: base.to_owned(),
            child,
        }
    }

    /// Starts `name` in acme/shop with `token` and no parameters; returns the run's id.
    pub async fn start_run(&self, client: &reqwest::Client, name: &str, token: &str) -> String {
        let r: serde_json::Value = client
            .post(format!(
                "{}/brain/acme/project/shop/workflows/{name}/start",
                self.base
            ))
            .bearer_auth(token)
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        r["workflowRunId"]
            .as_str()
            .unwrap_or_else(|| panic!("{r}"))
            .to_owned()
    }

    /// Polls acme/shop's run `run` with `token` until its status is one of `statuses`, for at
    /// most 60 s; returns its view.
    pub async fn wait_status(
        &self,
        client: &reqwest::Client,
        run: &str,
        token: &str,
        statuses: &[&str],
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v = self
                .get_json(
                    client,
                    &format!("/brain/acme/project/shop/workflows/runs/{run}"),
                    token,
                )
                .await;
            if statuses.iter().any(|s| v["status"] == *s) {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "run {run} never reached {statuses:?}: {v}"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// GET `path` (from `/brain/…`) with `token`; the JSON body.
    pub async fn get_json(
        &self,
        client: &reqwest::Client,
        path: &str,
        token: &str,
    ) -> serde_json::Value {
        client
            .get(format!("{}{path}", self.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// The journal of acme/shop's run `run`, read with `token`.
    pub async fn journal(
        &self,
        client: &reqwest::Client,
        run: &str,
        token: &str,
    ) -> Vec<serde_json::Value> {
        let journal = self
            .get_json(
                client,
                &format!("/brain/acme/project/shop/workflows/runs/{run}/journal"),
                token,
            )
            .await;
        journal
            .as_array()
            .unwrap_or_else(|| panic!("{journal}"))
            .clone()
    }

    /// Waits, for at most 30 s, until the journal of acme/shop's run `run` holds a record of
    /// type `kind`.
    pub async fn journaled(&self, client: &reqwest::Client, run: &str, token: &str, kind: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self
            .journal(client, run, token)
            .await
            .iter()
            .any(|r| r["type"] == kind)
        {
            assert!(Instant::now() < deadline, "no {kind} in {run}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, then reaps the process.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, and asserts the process exits with success within 20 s.
    pub fn stop(&mut self) {
        self.stop_with("TERM");
    }

    /// Sends `signal` (a name `kill` knows), and asserts the process exits with success
    /// within 20 s.
    pub fn stop_with(&mut self, signal: &str) {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args([&format!("-{signal}"), &pid])
            .status()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "{status}");
                return;
            }
            assert!(Instant::now() < deadline, "no graceful stop on SIG{signal}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for ServeChild {
    fn drop(&mut self) {
        self.kill();
    }
}
