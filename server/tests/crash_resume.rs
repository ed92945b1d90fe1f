//! SIGKILL of `magrathea run` in the middle of a shell step, then `magrathea resume`: the run
//! finishes, the interrupted step ran again (its start was journaled, its result was not), and
//! every step's result is journaled exactly once.

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
    run: "echo slow-start >> executions.log; sleep 2; echo slow-end >> executions.log"
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

    let mut child = Command::new(BIN)
        .args(["run", "crashy", "--json"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("slow-start")
    {
        assert!(Instant::now() < deadline, "the slow step never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let resumed = Command::new(BIN)
        .args(["resume", "--json"])
        .current_dir(&dir)
        .output()
        .unwrap();
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
}
