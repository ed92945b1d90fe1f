//! `magrathea serve` as a process: SIGKILL while runs are in flight, restart, and every run
//! finishes; SIGTERM stops it gracefully.

mod http_common;
mod serve_child;

use std::time::{Duration, Instant};

use http_common::*;
use serde_json::{Value, json};
use serve_child::ServeChild;

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

    let mut server = ServeChild::start(&root);
    let base = server.base.clone();
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
    server.kill(); // SIGKILL

    let mut server = ServeChild::start(&root);
    let base = server.base.clone();
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
    server.stop();
}

#[tokio::test]
async fn sigterm_stops_the_server_gracefully() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let mut server = ServeChild::start(&root);
    let r = reqwest::get(format!("{}/healthz", server.base))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    server.stop();
}
