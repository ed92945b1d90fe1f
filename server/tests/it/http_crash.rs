//! `magrathea serve` as a process: SIGKILL while runs are in flight, restart, and every run
//! finishes; a shell step dies with the killed server and its re-execution is on record;
//! SIGTERM stops it gracefully.

use crate::http_common;
use crate::serve_child;

use http_common::*;
use serde_json::Value;
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

/// Sleeps 30 s in the background the first time (recording the pids of the shell and the
/// sleep), and returns at once when it runs again.
const ORPHAN: &str = r#"
start: work
states:
  work:
    type: shell_task
    run: "if [ -e sleeper.pid ]; then echo again; else sleep 30 & echo $! > sleeper.pid; echo $$ > shell.pid; wait; fi"
    dirName: workspace
    on:
      success: done
  done: { type: terminal, result: finished }
"#;

/// Whether process `pid` still runs `name` (a zombie, or a process that took its pid over,
/// does not count).
fn runs(pid: &str, name: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !zombie && String::from_utf8_lossy(&cmdline).starts_with(name)
}

/// Reads a pid file the step writes, waiting up to 30 s for it.
fn pid_file(path: &std::path::Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.ends_with('\n') {
            return text.trim().to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the step never wrote {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_shell_step_dies_with_its_killed_server_and_its_re_execution_is_on_record() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let project = root.join("acme/shop");
    write(&project.join("_vance/workflows/orphan.yaml"), ORPHAN);
    let client = reqwest::Client::new();

    let mut server = ServeChild::start(&root);
    let run = server.start_run(&client, "orphan", ACME).await;
    let sleeper = pid_file(&project.join("sleeper.pid"));
    let shell = pid_file(&project.join("shell.pid"));
    // A forked child shows its own command once it has exec'd it: under load that can lag
    // behind the pid file.
    let started = std::time::Instant::now();
    while !(runs(&sleeper, "sleep") && runs(&shell, "sh")) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the step's shell and sleep are not running"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    server.kill(); // SIGKILL: no chance to clean up

    // The step's shell and the sleep it started go with the server (the sleep alone would
    // last 30 s).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while runs(&sleeper, "sleep") || runs(&shell, "sh") {
        assert!(
            std::time::Instant::now() < deadline,
            "the killed server's shell step outlived it"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    let server = ServeChild::start(&root);
    let view = server.wait_status(&client, &run, ACME, &["DONE"]).await;
    assert_eq!(view["result"], "finished");
    let again = &view["reExecutions"];
    assert_eq!(again.as_array().map(Vec::len), Some(1), "{view}");
    assert_eq!(again[0]["name"], "work");
    assert_eq!(again[0]["attempt"], 1);
    assert_eq!(again[0]["execution"], 2);
    let worker = again[0]["worker"].as_str().unwrap();
    assert!(
        worker.ends_with(&format!(":{}", server.pid())),
        "re-executed by the restarted server, not {worker}"
    );

    let records = server.journal(&client, &run, ACME).await;
    let count = |ty: &str| records.iter().filter(|r| r["type"] == ty).count();
    assert_eq!(count("TaskRestartedRecord"), 1, "{records:?}");
    assert_eq!(count("TaskResultRecord"), 1, "{records:?}");
    let order: Vec<&str> = records
        .iter()
        .filter_map(|r| r["type"].as_str())
        .filter(|t| t.starts_with("Task"))
        .collect();
    assert_eq!(
        order,
        [
            "TaskStartedRecord",
            "TaskRestartedRecord",
            "TaskResultRecord"
        ],
        "the re-execution is journaled before its result"
    );
    // The restarted server observes the attempt it ran again, under its task, though the
    // attempt's start was journaled by the server before it.
    let needle = "magrathea_step_duration_seconds_count{task=\"shell_task\"} 1";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = client
            .get(format!("{}/metrics", server.base))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains(needle) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "missing {needle} in\n{text}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn sigterm_or_sighup_stops_the_server_gracefully() {
    // SIGHUP is what a closed terminal or a dropped SSH session sends.
    for signal in ["TERM", "HUP"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        tree(&root);
        let mut server = ServeChild::start(&root);
        let r = reqwest::get(format!("{}/healthz", server.base))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        server.stop_with(signal);
    }
}

/// A log that is no terminal (a file, a collector) gets plain text: no colour escapes. The
/// fixture's token file holds plain tokens every user may read, which the log warns of.
#[tokio::test]
async fn the_servers_log_to_a_file_is_plain_text_and_warns_of_readable_plain_tokens() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    let file = root.join("serve.log");
    let mut cmd = serve_child::serve_command(&root);
    cmd.env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .env("RUST_LOG", "info");
    let mut server = ServeChild::spawn_logging_to(cmd, &file);
    server.stop();
    let log = std::fs::read_to_string(&file).unwrap();
    assert!(
        log.contains("WARN") && log.contains("holds plain `token:` values"),
        "{log}"
    );
    assert!(!log.contains('\x1b'), "{log:?}");
}

const NAP: &str = r#"
start: nap
states:
  nap:
    type: timer_task
    duration: 1500ms
    on: { fired: done }
  done: { type: terminal, result: napped }
"#;

const ASK: &str = r#"
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on: { approved: done }
  done: { type: terminal, result: shipped }
"#;

#[tokio::test]
async fn a_timer_or_a_gate_open_at_sigkill_is_one_task_step_that_ends_after_the_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    tree(&root);
    write(&root.join("acme/shop/_vance/workflows/nap.yaml"), NAP);
    write(&root.join("acme/shop/_vance/workflows/ask.yaml"), ASK);
    let client = reqwest::Client::new();

    let mut server = ServeChild::start(&root);
    let nap = server.start_run(&client, "nap", ACME).await;
    let ask = server.start_run(&client, "ask", ACME).await;
    server
        .journaled(&client, &nap, ACME, "TimerSetRecord")
        .await;
    server
        .journaled(&client, &ask, ACME, "GateOpenedRecord")
        .await;
    server.kill(); // SIGKILL, each state's task step open

    let server = ServeChild::start(&root);
    let items = server
        .get_json(&client, "/brain/acme/project/shop/inbox", ACME)
        .await;
    let item = items
        .as_array()
        .and_then(|a| a.iter().find(|i| i["workflowRunId"] == ask.as_str()))
        .unwrap_or_else(|| panic!("no item of {ask} in {items}"));
    let answered = client
        .post(format!(
            "{}/brain/acme/project/shop/inbox/{}/answer",
            server.base,
            item["id"].as_str().unwrap()
        ))
        .bearer_auth(ACME)
        .json(&serde_json::json!({ "kind": "approve" }))
        .send()
        .await
        .unwrap();
    assert!(answered.status().is_success(), "{answered:?}");
    for (run, result) in [(&nap, "napped"), (&ask, "shipped")] {
        let v = server.wait_status(&client, run, ACME, &["DONE"]).await;
        assert_eq!(v["result"], result);
    }

    // Each state is one task step: started once, never re-executed (its code, not an
    // attempt, carries it out), its result after what it waited for.
    for (run, task, waited, outcome) in [
        (&nap, "timer_task", "TimerFiredRecord", "fired"),
        (&ask, "gate_task", "GateAnsweredRecord", "approved"),
    ] {
        let records = server.journal(&client, run, ACME).await;
        let types: Vec<&str> = records.iter().filter_map(|r| r["type"].as_str()).collect();
        let started: Vec<&Value> = records
            .iter()
            .filter(|r| r["type"] == "TaskStartedRecord")
            .collect();
        assert_eq!(started.len(), 1, "{types:?}");
        assert_eq!(started[0]["task"], task);
        assert!(!types.contains(&"TaskRestartedRecord"), "{types:?}");
        let results: Vec<&Value> = records
            .iter()
            .filter(|r| r["type"] == "TaskResultRecord")
            .collect();
        assert_eq!(results.len(), 1, "{types:?}");
        assert_eq!(results[0]["outcome"], outcome);
        assert_eq!(results[0]["step"], started[0]["step"]);
        let at = |kind: &str| types.iter().position(|t| *t == kind).unwrap();
        assert!(at(waited) < at("TaskResultRecord"), "{types:?}");
    }
}
