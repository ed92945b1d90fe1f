//! `foreach_task` over real HTTP, with a real `magrathea serve` killed (SIGKILL) while its
//! sub-runs wait on timers: after the restart the fan-out finishes and each item ran once.

use crate::http_common;
use crate::serve_child;

use std::time::{Duration, Instant};

use http_common::write;
use serde_json::json;

/// One item: marks that it started, waits on a durable timer, then logs that it ran.
const ITEM: &str = r#"
start: mark
parameters:
  n: { type: integer, required: true }
states:
  mark:
    type: shell_task
    run: "touch started-${params.n}"
    splice: quoted
    dirName: workspace
    on: { success: wait }
  wait:
    type: timer_task
    duration: "3s"
    on: { fired: work }
  work:
    type: shell_task
    run: "echo ${params.n} >> ran.log"
    splice: quoted
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: "${params.n}" }
"#;

const FAN: &str = r#"
start: each
states:
  each:
    type: foreach_task
    items: [0, 1, 2, 3]
    workflow: item
    params: { n: "${item}" }
    maxParallelism: 2
    storeAs: out
    on: { success: end }
  end: { type: terminal, result: "${state.out}" }
"#;

#[tokio::test]
async fn a_fan_out_interrupted_by_sigkill_finishes_after_restart_with_each_item_run_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    http_common::tree(&root);
    let project = root.join("acme/shop");
    write(&project.join("_vance/workflows/item.yaml"), ITEM);
    write(&project.join("_vance/workflows/fan.yaml"), FAN);
    let client = reqwest::Client::new();
    let mut server = serve_child::ServeChild::start(&root);
    let run = server.start_run(&client, "fan", http_common::ACME).await;
    // The first two items are waiting on their timers: kill the server mid fan-out.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !(project.join("started-0").exists() && project.join("started-1").exists()) {
        assert!(Instant::now() < deadline, "the first items never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !project.join("started-2").exists(),
        "maxParallelism 2 holds the third item back"
    );
    server.kill();
    let mut server = serve_child::ServeChild::start(&root);
    let view = server
        .wait_status(&client, &run, http_common::ACME, &["DONE", "FAILED"])
        .await;
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], json!([0, 1, 2, 3]), "{view}");
    let log = std::fs::read_to_string(project.join("ran.log")).unwrap();
    let mut ran: Vec<&str> = log.lines().collect();
    ran.sort_unstable();
    assert_eq!(ran, ["0", "1", "2", "3"], "each item ran once: {log}");
    server.stop();
}
