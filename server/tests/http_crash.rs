//! `magrathea serve` as a process: SIGKILL while runs are in flight, restart, and every run
//! finishes; SIGTERM stops it gracefully.

mod http_common;
mod serve_child;

use http_common::*;
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
    let mut runs = Vec::new();
    for _ in 0..12 {
        runs.push(server.start_run(&client, "slow", ACME).await);
    }
    server.kill(); // SIGKILL

    let mut server = ServeChild::start(&root);
    for run in &runs {
        let v = server.wait_status(&client, run, ACME, &["DONE"]).await;
        assert_eq!(v["result"], "finished");
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
