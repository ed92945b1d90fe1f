//! The tenant's default bounds through the `magrathea` command: a journal limit from the
//! tenant's settings fails a run with `[MAG-BD001]`, and a run keeps the spawn default it
//! started with across a SIGKILL, a settings change and `magrathea resume`.
//!
//! Every wait has a deadline, and every child process is killed when its test ends.

use crate::cli_common;

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use cli_common::{Project, code, json, stderr, stdout};
use serde_json::Value;

/// How long any one command or wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(120);

/// A child process that is killed (SIGKILL) and reaped when dropped.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `command` to its end, failing the test (and killing it) past [`DEADLINE`].
fn run_bounded(mut command: Command) -> Output {
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = Killed(child);
    let started = Instant::now();
    loop {
        if child.0.try_wait().unwrap().is_some() {
            break;
        }
        assert!(
            started.elapsed() < DEADLINE,
            "the command did not finish in {DEADLINE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The child has exited: reading its pipes to the end cannot block on it.
    let Killed(inner) = &mut child;
    let mut out = Vec::new();
    let mut err = Vec::new();
    use std::io::Read;
    if let Some(mut s) = inner.stdout.take() {
        s.read_to_end(&mut out).unwrap();
    }
    if let Some(mut s) = inner.stderr.take() {
        s.read_to_end(&mut err).unwrap();
    }
    let status = inner.wait().unwrap();
    Output {
        status,
        stdout: out,
        stderr: err,
    }
}

fn tenant_settings(p: &Project, yaml: &str) -> PathBuf {
    let dir = p.root.join("acme/_tenant/_vance");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("settings.yaml");
    std::fs::write(&file, yaml).unwrap();
    file
}

/// The run's journal as JSON records, via `magrathea journal`.
fn journal(p: &Project, id: &str) -> Vec<Value> {
    let out = run_bounded(p.command(&["journal", id, "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A loop of timers: its journal grows by a few records per pass, forever.
const GROW: &str = r#"
start: tick
states:
  tick:
    type: timer_task
    duration: 1ms
    on:
      fired: tick
"#;

#[test]
fn a_tenant_journal_limit_fails_the_run_with_mag_bd001_shown_by_runs_show() {
    let p = Project::new();
    p.workflow("grow", GROW);
    tenant_settings(&p, "bounds:\n  maxJournalBytes: 1500\n");

    let out = run_bounded(p.command(&["run", "grow", "--json"]));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "FAILED", "{run}");
    let id = run["workflowRunId"].as_str().unwrap().to_string();

    let show = run_bounded(p.command(&["runs", "show", &id, "--json"]));
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    let shown = json(&show);
    assert_eq!(shown["status"], "FAILED", "{shown}");
    let reason = shown["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("[MAG-BD001] bounds exhausted")
            && reason.contains("more than its limit of 1500 bytes"),
        "{shown}"
    );
    // It is the tenant's limit that stopped it, long before the spawn default (10000).
    let timers = journal(&p, &id)
        .iter()
        .filter(|r| r["type"] == "TimerSetRecord")
        .count();
    assert!(timers < 100, "{timers} timers");
}

#[test]
fn the_built_in_spawn_default_of_ten_thousand_is_frozen_in_the_start_record() {
    let p = Project::new();
    p.workflow(
        "once",
        "start: wait\nstates:\n  wait: { type: timer_task, duration: 1ms, on: { fired: done } }\n  \
         done: { type: terminal, result: ok }\n",
    );
    let out = run_bounded(p.command(&["run", "once", "--json"]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = json(&out)["workflowRunId"].as_str().unwrap().to_string();
    let records = journal(&p, &id);
    assert_eq!(records[0]["type"], "StartRecord", "{records:?}");
    assert_eq!(
        records[0]["bounds"],
        serde_json::json!({
            "maxTaskSpawns": 10000,
            "maxTaskSpawnsSetting": "bounds.maxTaskSpawns in acme/_tenant/_vance/settings.yaml, 10000 unless set"
        })
    );
}

/// One tick a second, forever: each pass spawns a shell step that logs it.
const TICKER: &str = r#"
start: tick
states:
  tick:
    type: shell_task
    run: "echo tick >> ticks.log; sleep 1"
    dirName: workspace
    on:
      success: tick
"#;

/// Runs the ticker with `magrathea run` and SIGKILLs it in the middle of its second tick.
fn kill_in_second_tick(p: &Project) {
    let log = p.dir.join("ticks.log");
    let running = Killed(
        p.command(&["run", "ticker", "--json"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    while std::fs::read_to_string(&log)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        assert!(
            started.elapsed() < DEADLINE,
            "the second tick never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(running);
}

/// The run `magrathea resume --json` finished, from its output.
fn resumed_run(resumed: &Output) -> Value {
    stdout(resumed)
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("resume finished the interrupted run")
}

#[test]
fn a_killed_run_resumes_with_the_spawn_default_it_started_with_not_the_new_settings() {
    let p = Project::new();
    p.workflow("ticker", TICKER);
    let settings = tenant_settings(&p, "bounds:\n  maxTaskSpawns: 4\n");
    // In the middle of the second tick: SIGKILL, then a new default the run must not see.
    kill_in_second_tick(&p);
    std::fs::write(&settings, "bounds:\n  maxTaskSpawns: 6\n").unwrap();

    let resumed = run_bounded(p.command(&["resume", "--json"]));
    // Exit code 1: a resumed run ended FAILED.
    assert_eq!(code(&resumed), 1, "{}", stderr(&resumed));
    let run = resumed_run(&resumed);
    assert_eq!(run["status"], "FAILED", "{run}");
    let reason = run["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(
            "bounds exhausted: maxTaskSpawns 4 (the tenant's default, bounds.maxTaskSpawns in \
             acme/_tenant/_vance/settings.yaml"
        ),
        "{run}"
    );
    let id = run["workflowRunId"].as_str().unwrap();
    let records = journal(&p, id);
    assert_eq!(records[0]["bounds"]["maxTaskSpawns"], 4);
    let started = records
        .iter()
        .filter(|r| r["type"] == "TaskStartedRecord")
        .count();
    assert_eq!(started, 4, "four spawns, as frozen at the start");
}

#[test]
fn a_journal_limit_set_while_the_process_was_down_stops_the_resumed_run() {
    let p = Project::new();
    p.workflow("ticker", TICKER);
    let settings = tenant_settings(&p, "bounds:\n  maxTaskSpawns: 0\n");
    kill_in_second_tick(&p);
    // Without a limit the ticker never ends, and `resume` would run into the deadline.
    std::fs::write(
        &settings,
        "bounds:\n  maxTaskSpawns: 0\n  maxJournalBytes: 1500\n",
    )
    .unwrap();

    let resumed = run_bounded(p.command(&["resume", "--json"]));
    assert_eq!(code(&resumed), 1, "{}", stderr(&resumed));
    let run = resumed_run(&resumed);
    assert_eq!(run["status"], "FAILED", "{run}");
    let reason = run["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("[MAG-BD001]") && reason.contains("limit of 1500 bytes"),
        "{run}"
    );
}
