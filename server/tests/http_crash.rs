//! `magrathea serve` as a process: SIGKILL while runs are in flight, restart, and every run
//! finishes; SIGTERM stops it gracefully.

mod http_common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use http_common::*;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_magrathea");

const SLOW: &str = r#"
start: work
states:
  work:
    type: shell_task
    run: "sleep 1"
    dirName: workspace
    on:
      success: done
  done: { type: terminal, result: finished }
"#;

fn spawn(root: &Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--root"])
        .arg(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, addr)
}

#[tokio::test]
async fn runs_in_flight_at_sigkill_finish_after_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    write(&root.join("acme/shop/_vance/workflows/slow.yaml"), SLOW);
    write(
        &root.join("acme/shop/_vance/settings.yaml"),
        "lanes:\n  maxConcurrentTasks: 8\n",
    );
    let client = reqwest::Client::new();

    let (mut child, base) = spawn(&root);
    let mut runs = Vec::new();
    for _ in 0..12 {
        let r: Value = client
            .post(format!(
                "{base}/brain/acme/project/shop/workflows/slow/start"
            ))
            .bearer_auth(ACME)
            .json(&json!({}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        runs.push(r["workflowRunId"].as_str().unwrap().to_string());
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let (mut child, base) = spawn(&root);
    let deadline = Instant::now() + Duration::from_secs(60);
    for run in &runs {
        loop {
            let v: Value = client
                .get(format!(
                    "{base}/brain/acme/project/shop/workflows/runs/{run}"
                ))
                .bearer_auth(ACME)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if v["status"] == "DONE" {
                assert_eq!(v["result"], "finished");
                break;
            }
            assert!(Instant::now() < deadline, "run {run} did not finish: {v}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    stop(&mut child);
}

fn stop(child: &mut Child) {
    let pid = child.id() as i32;
    std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return;
        }
        assert!(Instant::now() < deadline, "no graceful stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn sigterm_stops_the_server_gracefully() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let (mut child, base) = spawn(&root);
    let r = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert_eq!(r.status(), 200);
    stop(&mut child);
}
