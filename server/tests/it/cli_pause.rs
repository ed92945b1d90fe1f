//! `magrathea runs pause|resume`: on the project's own store and through a `magrathea serve`
//! that owns it; a gate answered while the run is paused moves it on after the resume.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::cli_common;
use crate::serve_child;
use cli_common::{Project, code, json, stderr};
use serve_child::serve_command;

const APPROVE: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on:
      approved: shipped
    catch:
      human_rejected: held
  shipped: { type: terminal, result: approved }
  held: { type: terminal, result: rejected }
"#;

/// The id of the run's one pending inbox item.
fn pending_item(p: &Project) -> String {
    let items = json(&p.cli(&["inbox", "list", "--json"]));
    items[0]["id"].as_str().expect("a pending item").to_owned()
}

#[test]
fn pause_and_resume_on_the_project_store() {
    let p = Project::new();
    p.workflow("approve", APPROVE);
    // A malformed id is said as one, also before the project has any run.
    for op in ["pause", "resume"] {
        let out = p.cli(&["runs", op, "xyz"]);
        assert_eq!(code(&out), 2, "{}", stderr(&out));
        assert!(stderr(&out).contains("[MAG-ID001]"), "{}", stderr(&out));
    }
    let out = p.cli(&["run", "approve", "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let run = json(&out)["workflowRunId"].as_str().unwrap().to_owned();
    let out = p.cli(&["runs", "pause", "xyz"]);
    assert!(stderr(&out).contains("[MAG-ID001]"), "{}", stderr(&out));

    let out = p.cli(&["runs", "pause", &run, "--reason", "audit", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "PAUSED");
    assert!(stderr(&out).contains("is paused"), "{}", stderr(&out));
    let out = p.cli(&["runs", "pause", &run]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("paused already"), "{}", stderr(&out));

    // The gate may be answered while paused: the answer is journaled, the run waits.
    let item = pending_item(&p);
    let out = p.cli(&["inbox", "answer", &item, "--approve", "--json"]);
    assert_eq!(json(&out)["status"], "PAUSED", "{}", stderr(&out));
    let shown = json(&p.cli(&["runs", "show", &run, "--json"]));
    assert_eq!(shown["status"], "PAUSED");
    assert_eq!(shown["result"], serde_json::Value::Null);
    let listed = json(&p.cli(&["runs", "list", "--json"]));
    assert_eq!(listed[0]["status"], "PAUSED");
    // `magrathea resume` (recovery) does not drive a paused run on.
    let out = p.cli(&["resume", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "PAUSED", "{}", stderr(&out));
    let journal = p.cli(&["journal", &run, "--json"]);
    assert!(
        String::from_utf8_lossy(&journal.stdout).contains("PauseRequestedRecord"),
        "{}",
        String::from_utf8_lossy(&journal.stdout)
    );

    // The resume drives the run on to its end.
    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let done = json(&out);
    assert_eq!(done["status"], "DONE");
    assert_eq!(done["result"], "approved");
    // Its end is journaled as a run's that was never paused: the terminal state entered first.
    assert_eq!(done["currentState"], "shipped");

    // Refusals exit 2, say why, and print no run a script could take for the answer.
    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("MAG-PS002"), "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = p.cli(&["runs", "pause", &run]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("MAG-PS001"), "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = p.cli(&["runs", "pause", "0123456789abcdef0123456789abcdef"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

/// Kills the served process when dropped.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn pause_and_resume_through_a_serving_owner() {
    let p = Project::new();
    p.workflow("approve", APPROVE);
    let mut cmd = serve_command(&p.root);
    cmd.arg("--store")
        .arg(p.store())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let _owner = Guard(cmd.spawn().unwrap());
    let socket = p.store().join("control.sock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(
            Instant::now() < deadline,
            "the owner never served its socket"
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    let out = p.cli(&["run", "approve", "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let run = json(&out)["workflowRunId"].as_str().unwrap().to_owned();
    let out = p.cli(&["runs", "pause", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "PAUSED");

    let item = pending_item(&p);
    let out = p.cli(&["inbox", "answer", &item, "--approve", "--json"]);
    assert_eq!(json(&out)["status"], "PAUSED", "{}", stderr(&out));

    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    // The owner drives the run on.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let shown = json(&p.cli(&["runs", "show", &run, "--json"]));
        if shown["status"] == "DONE" {
            assert_eq!(shown["result"], "approved");
            break;
        }
        assert!(Instant::now() < deadline, "never DONE: {shown}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = p.cli(&["runs", "resume", &run]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("MAG-PS002"), "{}", stderr(&out));
}

/// The id of the project's newest run, once its journal holds a record of type `record`
/// (at most 30 s).
fn newest_run_once_it_journals(p: &Project, record: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let listed = json(&p.cli(&["runs", "list", "--json"]));
        if let Some(id) = listed[0]["workflowRunId"].as_str() {
            let journal = p.cli(&["journal", id, "--json"]);
            if String::from_utf8_lossy(&journal.stdout).contains(record) {
                return id.to_owned();
            }
        }
        assert!(Instant::now() < deadline, "no {record} was journaled");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `workflow` with `magrathea run --json` and pauses the run once its first step has
/// started; the run's id and the command's output, once it exited 3 (PAUSED).
fn paused_while_its_step_runs(p: &Project, workflow: &str) -> (String, std::process::Output) {
    let child = p.spawn(&["run", workflow, "--json"]);
    let run = newest_run_once_it_journals(p, "TaskStartedRecord");
    let out = p.cli(&["runs", "pause", &run, "--reason", "hold"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    (run, out)
}

/// A run paused while `magrathea run` drives its shell step: the step finishes and its result
/// is journaled before the command exits (3, PAUSED); the resume goes on from there, and the
/// step's side effect happened once.
#[test]
fn a_task_running_when_its_run_is_paused_finishes_before_the_run_command_exits() {
    let p = Project::new();
    let marks = p.dir.join("marks");
    p.workflow(
        "slow",
        &format!(
            "start: work\nstates:\n  work:\n    type: shell_task\n    run: 'sleep 2; echo once >> {}'\n    dirName: workspace\n    on: {{ success: done }}\n  done: {{ type: terminal, result: finished }}\n",
            marks.display()
        ),
    );
    let (run, out) = paused_while_its_step_runs(&p, "slow");
    assert_eq!(json(&out)["status"], "PAUSED");
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "once\n");
    let journal = p.cli(&["journal", &run, "--json"]);
    let journal = String::from_utf8_lossy(&journal.stdout).into_owned();
    assert!(journal.contains("TaskResultRecord"), "{journal}");

    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["result"], "finished");
    let journal = p.cli(&["journal", &run, "--json"]);
    assert!(
        !String::from_utf8_lossy(&journal.stdout).contains("TaskRestartedRecord"),
        "the step ran once"
    );
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "once\n");
}

/// A run paused while a sub-run of it runs a shell step: the sub-run goes on (it is paused
/// separately), so `magrathea run` does not stop, and kill the step, before the step ends; the
/// step's side effect happens once, and the resume finishes the run.
#[test]
fn a_sub_runs_step_running_when_its_parent_is_paused_finishes_before_the_run_command_exits() {
    let p = Project::new();
    let marks = p.dir.join("marks");
    p.workflow(
        "inner",
        &format!(
            "start: work\nstates:\n  work:\n    type: shell_task\n    run: 'sleep 2; echo once >> {}'\n    dirName: workspace\n    on: {{ success: done }}\n  done: {{ type: terminal, result: inner-done }}\n",
            marks.display()
        ),
    );
    p.workflow(
        "outer",
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: inner\n    storeAs: r\n    on: { success: done }\n  done: { type: terminal, result: \"${state.r}\" }\n",
    );
    let child = p.spawn(&["run", "outer", "--json"]);
    let inner = newest_run_once_it_journals(&p, "TaskStartedRecord");
    let listed = json(&p.cli(&["runs", "list", "--json"]));
    let outer = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workflowName"] == "outer")
        .unwrap()["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = p.cli(&["runs", "pause", &outer, "--reason", "hold"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "PAUSED");
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "once\n");

    let out = p.cli(&["runs", "resume", &outer, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["result"], "inner-done");
    let journal = p.cli(&["journal", &inner, "--json"]);
    assert!(
        !String::from_utf8_lossy(&journal.stdout).contains("TaskRestartedRecord"),
        "the sub-run's step ran once"
    );
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "once\n");
}

/// A run asleep in a `timer_task` has its state's task step open, but no attempt of it runs:
/// paused, the `run` command that drives it exits at once with the run `PAUSED`, instead of
/// waiting for a task to finish that is not running.
#[test]
fn a_run_paused_while_it_sleeps_in_a_timer_state_lets_the_run_command_exit() {
    let p = Project::new();
    p.workflow(
        "nap",
        "start: nap\nstates:\n  nap:\n    type: timer_task\n    duration: 1h\n    on: { fired: done }\n  done: { type: terminal }\n",
    );
    let child = p.spawn(&["run", "nap", "--json"]);
    let run = newest_run_once_it_journals(&p, "TimerSetRecord");
    let out = p.cli(&["runs", "pause", &run, "--reason", "hold"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(Duration::from_secs(30)) else {
        let _ = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status();
        panic!("`magrathea run` kept waiting on a paused run asleep on its timer");
    };
    let out = out.unwrap();
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    assert_eq!(json(&out)["status"], "PAUSED");
}

/// A gate that times out after one second.
const EXPIRING: &str = r#"
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    timeoutSeconds: 1
    on: { approved: shipped }
    catch: { timeout: expired }
  shipped: { type: terminal, result: approved }
  expired: { type: terminal, result: expired }
"#;

#[test]
fn a_gate_that_timed_out_during_the_pause_is_acted_on_before_resume_reports() {
    let p = Project::new();
    p.workflow("expiring", EXPIRING);
    let out = p.cli(&["run", "expiring", "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let run = json(&out)["workflowRunId"].as_str().unwrap().to_owned();
    let out = p.cli(&["runs", "pause", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    std::thread::sleep(Duration::from_millis(1500));
    // The timeout fell due while paused: the resumed run acts on it and ends, and `resume`
    // reports that end, not the gate it no longer waits on.
    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let view = json(&out);
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "expired", "{view}");
    assert!(!stderr(&out).contains("inbox answer"), "{}", stderr(&out));
}

/// A run's deadline is not held by a pause: a run paused before it comes due, whose next state
/// is its end, fails with the deadline's reason once resumed after it (it ended DONE), also
/// when no process ran while it came due.
#[test]
fn a_deadline_that_came_due_while_paused_fails_the_run_on_its_resume() {
    let p = Project::new();
    let marks = p.dir.join("marks");
    p.workflow(
        "bounded",
        &format!(
            "bounds: {{ maxWallclockSeconds: 2 }}\nstart: work\nstates:\n  work:\n    type: shell_task\n    run: 'sleep 0.5; echo once >> {}'\n    dirName: workspace\n    on: {{ success: done }}\n  done: {{ type: terminal, result: finished }}\n",
            marks.display()
        ),
    );
    let (run, _) = paused_while_its_step_runs(&p, "bounded");
    // Past the deadline, with no process running the store.
    std::thread::sleep(Duration::from_millis(2500));
    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(json(&out)["status"], "FAILED", "{}", stderr(&out));
    assert!(
        json(&out)["reason"]
            .as_str()
            .unwrap()
            .starts_with("bounds exhausted: maxWallclockSeconds 2 exceeded"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "once\n");
}

/// Compensations run without a deadline: one the deadline stops while it runs runs again, to
/// its end, and the compensations after it still run.
#[test]
fn a_compensation_the_deadline_stops_runs_again_to_its_end() {
    let p = Project::new();
    let undo = p.dir.join("undo");
    p.workflow(
        "saga",
        &format!(
            "bounds: {{ maxWallclockSeconds: 1 }}\nonFailure: compensate\nstart: a\nstates:\n  a: {{ type: shell_task, dirName: workspace, run: 'true', compensate: undo_a, on: {{ success: b }} }}\n  b: {{ type: shell_task, dirName: workspace, run: 'exit 1', on: {{ success: done }} }}\n  undo_a: {{ type: shell_task, dirName: workspace, run: 'echo start >> {0}; sleep 2; echo end >> {0}', on: {{ success: done }} }}\n  done: {{ type: terminal }}\n",
            undo.display()
        ),
    );
    let out = p.cli(&["run", "saga", "--json"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let view = json(&out);
    assert_eq!(
        view["result"]["compensations"][0]["outcome"], "success",
        "{view}"
    );
    assert_eq!(
        std::fs::read_to_string(&undo).unwrap(),
        "start\nstart\nend\n",
        "stopped once by the deadline, then run to its end"
    );
}

/// A deadline that came due while no process ran the run fires at its recovery before anything
/// the run had running runs again: the step stopped before the deadline is not started twice,
/// and the run fails with the deadline's reason (a cancel then finds it ended).
#[test]
fn a_deadline_due_at_recovery_fires_before_the_stopped_step_runs_again() {
    let p = Project::new();
    let marks = p.dir.join("marks");
    p.workflow(
        "bounded",
        &format!(
            "bounds: {{ maxWallclockSeconds: 2 }}\nstart: work\nstates:\n  work:\n    type: shell_task\n    run: 'echo start >> {}; sleep 30'\n    dirName: workspace\n    on: {{ success: done }}\n  done: {{ type: terminal }}\n",
            marks.display()
        ),
    );
    let child = p.spawn(&["run", "bounded"]);
    let run = newest_run_once_it_journals(&p, "TaskStartedRecord");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !marks.exists() {
        assert!(Instant::now() < deadline, "the step never began");
        std::thread::sleep(Duration::from_millis(20));
    }
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 130, "{}", stderr(&out));
    std::thread::sleep(Duration::from_millis(2500));
    let out = p.cli(&["cancel", &run, "--json"]);
    let view = json(&out);
    assert_eq!(view["status"], "FAILED", "{}", stderr(&out));
    assert!(
        view["reason"]
            .as_str()
            .unwrap()
            .starts_with("bounds exhausted: maxWallclockSeconds 2 exceeded"),
        "{view}"
    );
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "start\n");
}

/// A run waiting on the DECISION of `onFailure: pause_for_approval` is Friday's paused run:
/// `magrathea runs resume` answers it `retry`, as the HTTP routes' resume does, and drives the
/// run on; the failed state runs again.
#[test]
fn resume_answers_the_decision_of_a_run_paused_for_approval() {
    let p = Project::new();
    let fixed = p.root.join("fixed");
    p.workflow(
        "flaky",
        &format!(
            "\
onFailure: {{ policy: pause_for_approval }}
start: flaky
states:
  flaky:
    type: shell_task
    run: \"test -e {}\"
    dirName: workspace
    on: {{ success: done }}
  done: {{ type: terminal, result: fixed }}
",
            fixed.display()
        ),
    );
    let out = p.cli(&["run", "flaky", "--json"]);
    assert_eq!(code(&out), 3, "waits on the decision: {}", stderr(&out));
    let run = json(&out)["workflowRunId"].as_str().unwrap().to_owned();
    std::fs::write(&fixed, "").unwrap();
    let out = p.cli(&["runs", "resume", &run, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let done = json(&out);
    assert_eq!(done["status"], "DONE", "{done}");
    assert_eq!(done["result"], "fixed", "{done}");
    // Nothing is left to resume: the run has ended.
    let out = p.cli(&["runs", "resume", &run]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}
