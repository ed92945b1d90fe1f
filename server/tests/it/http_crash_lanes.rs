//! A step queued behind its project's lane when the server is killed: its wait is on record,
//! and the restart runs it without counting an execution that never began, however low
//! `maxClaimAttempts` is; the step that held the lane, which had begun, is counted as before.

use crate::http_common;
use crate::serve_child;

use http_common::*;
use serve_child::{ServeChild, serve_command};

/// Holds the project's shell lane (one wide by default) for 30 s each time it runs; a lost
/// execution it cannot survive is caught.
pub(crate) const HOG: &str = r#"
start: hog
states:
  hog:
    type: shell_task
    run: "echo hog >> hog.log; sleep 30"
    dirName: workspace
    on: { success: done }
    catch: { technical_error: gave_up }
  done: { type: terminal, result: finished }
  gave_up: { type: terminal, result: gave up }
"#;

pub(crate) const QUICK: &str = r#"
start: quick
states:
  quick:
    type: shell_task
    run: "echo quick >> quick.log"
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: finished }
"#;

/// `magrathea serve` that runs each attempt once at most: a second execution of an attempt
/// whose process stopped ends it `[MAG-EN007]`.
fn serve_once(root: &std::path::Path) -> ServeChild {
    let mut cmd = serve_command(root);
    cmd.args(["--max-claim-attempts", "1"]);
    ServeChild::spawn(cmd)
}

/// The lines of a step's log file (0 while it does not exist).
pub(crate) fn lines(path: &std::path::Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .count()
}

#[tokio::test]
async fn a_step_queued_in_its_lane_at_sigkill_runs_after_the_restart_and_is_not_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let project = root.join("acme/shop");
    write(&project.join("_vance/workflows/hog.yaml"), HOG);
    write(&project.join("_vance/workflows/quick.yaml"), QUICK);
    let client = reqwest::Client::new();

    let mut server = serve_once(&root);
    let hog = server.start_run(&client, "hog", ACME).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while lines(&project.join("hog.log")) < 1 {
        assert!(std::time::Instant::now() < deadline, "the hog never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let quick = server.start_run(&client, "quick", ACME).await;
    server
        .journaled(&client, &quick, ACME, "TaskQueuedRecord")
        .await;
    server.kill(); // SIGKILL while `quick` waits for the lane `hog` holds

    let server = serve_once(&root);
    let view = server.wait_status(&client, &quick, ACME, &["DONE"]).await;
    assert_eq!(view["result"], "finished", "{view}");
    assert_eq!(lines(&project.join("quick.log")), 1, "it ran once");
    // Run again as its first execution (the journal's TaskRestartedRecord below): nothing ran
    // twice, so the run lists no re-execution.
    assert_eq!(view["reExecutions"], serde_json::json!([]), "{view}");
    let records = server.journal(&client, &quick, ACME).await;
    let types: Vec<&str> = records
        .iter()
        .filter_map(|r| r["type"].as_str())
        .filter(|t| t.starts_with("Task"))
        .collect();
    assert_eq!(
        types,
        [
            "TaskStartedRecord",
            "TaskQueuedRecord",
            "TaskRestartedRecord",
            "TaskResultRecord"
        ],
        "{records:?}"
    );

    // The hog had begun: its second execution is one more than the server allows.
    let view = server
        .wait_status(&client, &hog, ACME, &["DONE", "FAILED"])
        .await;
    assert_eq!(view["result"], "gave up", "{view}");
    assert_eq!(lines(&project.join("hog.log")), 1, "not run a second time");
    let records = server.journal(&client, &hog, ACME).await;
    let result = records
        .iter()
        .find(|r| r["type"] == "TaskResultRecord")
        .expect("the hog's result");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|e| e.contains("[MAG-EN007]")),
        "{result}"
    );
}
