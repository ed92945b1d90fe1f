//! SIGKILL of `magrathea run` in the middle of a shell step, then `magrathea resume`: the
//! interrupted step died with the killed process (it never finishes beside its re-execution),
//! the run finishes, the interrupted step ran again (its start was journaled, its result was
//! not) with that re-execution journaled and shown by `runs show`, and every step's result is
//! journaled exactly once.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_magrathea");

const WORKFLOW: &str = r#"
start: first
states:
  first:
    type: shell_task
    run: "echo first >> executions.log"
    dirName: workspace
    on:
      success: slow
  slow:
    type: shell_task
    run: "echo slow-start >> executions.log; if [ ! -e first.pid ]; then sleep 30 & echo $! > first.pid; wait; fi; echo slow-end >> executions.log"
    dirName: workspace
    storeAs: slow_output
    on:
      success: last
  last:
    type: shell_task
    run: "echo last >> executions.log"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
    result: finished
"#;

#[test]
fn a_killed_run_resumes_and_each_step_result_is_recorded_once() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("acme").join("shop");
    std::fs::create_dir_all(dir.join("_vance/workflows")).unwrap();
    std::fs::write(dir.join("_vance/workflows/crashy.yaml"), WORKFLOW).unwrap();
    let log = dir.join("executions.log");

    let mut child = spawn_quiet(&dir, &["run", "crashy", "--json"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    let sleeper = loop {
        let pid = std::fs::read_to_string(dir.join("first.pid")).unwrap_or_default();
        if pid.ends_with('\n') {
            break pid.trim().to_owned();
        }
        assert!(Instant::now() < deadline, "the slow step never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The step's `sleep 30` goes with the killed process instead of finishing beside the
    // step's re-execution.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sleeps(&sleeper) {
        assert!(
            Instant::now() < deadline,
            "the killed run's shell step outlived it"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let resume = Command::new(BIN)
        .args(["resume", "--json"])
        .current_dir(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let resumer = resume.id();
    let resumed = resume.wait_with_output().unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let run: Value = String::from_utf8_lossy(&resumed.stdout)
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("resume printed the run");
    assert_eq!(run["status"], "DONE", "{run}");
    assert_eq!(run["result"], "finished");
    let id = run["workflowRunId"].as_str().unwrap();

    let journal = Command::new(BIN)
        .args(["journal", id, "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let records: Vec<Value> = String::from_utf8_lossy(&journal.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |ty: &str, state: &str| {
        records
            .iter()
            .filter(|r| r["type"] == ty && r["name"] == state)
            .count()
    };
    for state in ["first", "slow", "last"] {
        assert_eq!(
            of("TaskStartedRecord", state),
            1,
            "{state} started once in the journal"
        );
    }
    let results: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "TaskResultRecord")
        .collect();
    assert_eq!(results.len(), 3, "one result per step: {results:?}");
    let steps: std::collections::BTreeSet<u64> = results
        .iter()
        .map(|r| r["step"].as_u64().unwrap())
        .collect();
    assert_eq!(steps.len(), 3);

    let executions = std::fs::read_to_string(&log).unwrap();
    let count = |line: &str| executions.lines().filter(|l| *l == line).count();
    assert_eq!(count("first"), 1, "a finished step is not run again");
    assert_eq!(
        count("slow-start"),
        2,
        "the interrupted step ran again after resume"
    );
    assert_eq!(count("last"), 1);
    assert_eq!(
        count("slow-end"),
        1,
        "only the re-execution of the interrupted step finished"
    );

    // The re-execution is on record, before the step's result.
    let slow_step = records
        .iter()
        .find(|r| r["type"] == "TaskStartedRecord" && r["name"] == "slow")
        .map(|r| r["step"].clone())
        .unwrap();
    let restarts: Vec<&Value> = records
        .iter()
        .filter(|r| r["type"] == "TaskRestartedRecord")
        .collect();
    assert_eq!(restarts.len(), 1, "{restarts:?}");
    assert_eq!(restarts[0]["step"], slow_step);
    assert_eq!(restarts[0]["attempt"], 1);
    assert_eq!(restarts[0]["execution"], 2);
    assert!(
        restarts[0]["worker"]
            .as_str()
            .unwrap()
            .ends_with(&format!(":{resumer}")),
        "{restarts:?}"
    );
    let seq_of = |r: &Value| r["seq"].as_u64().unwrap();
    let slow_result = records
        .iter()
        .find(|r| r["type"] == "TaskResultRecord" && r["step"] == slow_step)
        .unwrap();
    assert!(seq_of(restarts[0]) < seq_of(slow_result));

    // `journal` and `runs show` say so.
    let text = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let journal = text(&["journal", id, "--table"]);
    assert!(
        journal.contains("TaskRestartedRecord") && journal.contains("runs again (execution 2)"),
        "{journal}"
    );
    let show = text(&["runs", "show", id]);
    assert!(
        show.contains("re-executed") && show.contains("slow attempt 1 (execution 2)"),
        "{show}"
    );
    let shown: Value = serde_json::from_str(&text(&["runs", "show", id, "--json"])).unwrap();
    assert_eq!(shown["reExecutions"][0]["name"], "slow", "{shown}");
    assert_eq!(shown["reExecutions"][0]["execution"], 2, "{shown}");
}

/// Starts `magrathea ARGS` in `dir` with its output discarded, to be killed.
fn spawn_quiet(dir: &std::path::Path, args: &[&str]) -> std::process::Child {
    Command::new(BIN)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Whether process `pid` is a live `sleep` (not a zombie, not another process with its pid).
fn sleeps(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let zombie = stat
        .rsplit_once(')')
        .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !zombie && String::from_utf8_lossy(&cmdline).starts_with("sleep")
}

/// Reference §12 with real kills: a shell step during which the process is killed every time
/// runs three times in all (`maxClaimAttempts`, 3, the first run counting); the next
/// `magrathea resume` does not run it again but ends it as a `technical_error`
/// (`[MAG-EN007]`), which `catch:` routes. The step "fails terminally": a `retry:` on
/// `technical_error` does not run it again.
#[test]
fn a_step_killed_every_time_it_runs_fails_after_max_claim_attempts_and_catch_routes_it() {
    const DOOMED: &str = r#"
start: doomed
states:
  doomed:
    type: shell_task
    run: "echo started >> executions.log; sleep 30"
    dirName: workspace
    retry: { maxAttempts: 3, on: [technical_error] }
    on:
      success: done
    catch:
      technical_error: gave_up
  done:
    type: terminal
    result: finished
  gave_up:
    type: terminal
    result: gave up
"#;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap().join("acme").join("shop");
    std::fs::create_dir_all(dir.join("_vance/workflows")).unwrap();
    std::fs::write(dir.join("_vance/workflows/doomed.yaml"), DOOMED).unwrap();
    let log = dir.join("executions.log");
    let executions = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .count()
    };
    for k in 1..=3 {
        let args: &[&str] = if k == 1 {
            &["run", "doomed"]
        } else {
            &["resume"]
        };
        let mut child = spawn_quiet(&dir, args);
        let deadline = Instant::now() + Duration::from_secs(30);
        while executions() < k {
            assert!(Instant::now() < deadline, "execution {k} never started");
            std::thread::sleep(Duration::from_millis(20));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
    }

    let resumed = Command::new(BIN)
        .args(["resume", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let run: Value = String::from_utf8_lossy(&resumed.stdout)
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(&resumed.stderr)));
    assert_eq!(run["status"], "DONE", "{run}");
    assert_eq!(run["result"], "gave up", "{run}");
    assert_eq!(executions(), 3, "run three times in all, not a fourth");
    let restarts = run["reExecutions"].as_array().map_or(0, Vec::len);
    assert_eq!(restarts, 2, "{run}");

    let journal = Command::new(BIN)
        .args(["journal", run["workflowRunId"].as_str().unwrap(), "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
    let result = String::from_utf8_lossy(&journal.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|r| r["type"] == "TaskResultRecord")
        .expect("the step's result");
    assert_eq!(result["outcome"], "technical_error", "{result}");
    assert!(
        result["error"].as_str().unwrap().contains("[MAG-EN007]"),
        "{result}"
    );
}

/// `magrathea resume` drives only its own project's runs, also on a store several projects
/// share (a served tree's, `--store <root>/.magrathea`): from the tree's root, which is no
/// project, or from another project, the killed run is left as it is (no step restarted, no
/// record added; the root says it is no project), and from its own project it finishes.
#[test]
fn resume_drives_only_the_runs_of_its_own_project() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let dir = root.join("acme/shop");
    std::fs::create_dir_all(dir.join("_vance/workflows")).unwrap();
    std::fs::create_dir_all(root.join("acme/other/_vance")).unwrap();
    std::fs::write(dir.join("_vance/workflows/crashy.yaml"), WORKFLOW).unwrap();
    let store = root.join(".magrathea");
    let store = store.to_str().unwrap();
    let cli = |at: &std::path::Path, args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--store", store]);
        Command::new(BIN)
            .args(&all)
            .current_dir(at)
            .output()
            .unwrap()
    };

    let mut child = spawn_quiet(&dir, &["run", "crashy", "--store", store]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(dir.join("first.pid")).is_ok_and(|p| p.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the slow step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let listed: Value =
        serde_json::from_slice(&cli(&dir, &["runs", "list", "--json"]).stdout).unwrap();
    let id = listed[0]["workflowRunId"].as_str().unwrap().to_owned();
    let records = || {
        let out = cli(&dir, &["journal", &id, "--json"]);
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let before = records();
    assert!(before > 0);

    for (at, note) in [(root.as_path(), true), (&*root.join("acme/other"), false)] {
        let out = cli(at, &["resume"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains("nothing to resume"), "{err}");
        assert_eq!(err.contains("is no project"), note, "{err}");
        assert_eq!(
            records(),
            before,
            "{} drove another project's run",
            at.display()
        );
    }
    let log = std::fs::read_to_string(dir.join("executions.log")).unwrap();
    assert_eq!(log.matches("slow-start").count(), 1, "{log}");

    let out = cli(&dir, &["resume", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .expect("resume printed the run");
    assert_eq!(run["status"], "DONE", "{run}");
}
