//! The `magrathea` command's contract beyond the happy path: exit codes for every run status
//! (CANCELLED, BLOCKED, a failed resumed run), Ctrl-C, invalid graphs, unknown inbox items, a
//! reader that closes the pipe early, and the document's labels in run output. Real processes,
//! real signals and real pipes, in temporary project directories (`<tmp>/acme/shop`).

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Output};

use serde_json::Value;

use crate::cli_common;
use crate::serve_child;
use cli_common::{BIN, Project, code, json, stderr, stdout};
use serve_child::{ServeChild, serve_command};

/// Waits until `path` exists, or fails the test after a generous bound.
fn wait_for_file(path: &Path) {
    for _ in 0..1200 {
        if path.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    panic!("{} never appeared", path.display());
}

/// Sends `signal` (`INT`, `KILL`, …) to the process with the system's `kill`.
fn signal(child: &Child, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} failed");
}

const REVIEW: &str = "\
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: \"Ship it?\" }
    on:
      approved: route
      rejected: done
  route:
    type: condition_task
    transitions:
      - else: done
  done:
    type: terminal
";

/// A terminal whose result repeats a parameter: with a big parameter, every run output is
/// far larger than a pipe's buffer.
const ECHO: &str = "\
description: |
  Echoes its parameter.
  Twice.
version: 1.10
tags: [echo, demo]
start: done
states:
  done:
    type: terminal
    result:
      a: \"${params.big}\"
      b: \"${params.big}\"
";

const ECHO_FAIL: &str = "\
start: done
states:
  done:
    type: terminal
    outcome: failure
    result:
      a: \"${params.big}\"
      b: \"${params.big}\"
";

/// 100 000 characters: under the 128 KiB limit of one command-line argument, and each run's
/// JSON (parameter, result twice) is some 300 kB.
fn big() -> String {
    "x".repeat(100_000)
}

/// Runs the command with stdout on a pipe whose reader reads one byte and closes it, long
/// before the command has written everything; returns the finished command's output (stderr
/// only).
fn with_reader_closing_early(p: &Project, args: &[&str]) -> Output {
    let mut child = p.spawn(args);
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    out.read_exact(&mut first)
        .expect("the command wrote something");
    drop(out);
    child.wait_with_output().unwrap()
}

#[test]
fn a_reader_that_closes_stdout_early_ends_the_command_quietly() {
    let p = Project::new();
    p.workflow("echo", ECHO).workflow("fail", ECHO_FAIL);
    let param = format!("big={}", big());
    let run = p.cli(&["run", "echo", "--param", &param, "--json"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let id = json(&run)["workflowRunId"].as_str().unwrap().to_owned();

    for args in [
        vec!["journal", &id, "--json"],
        vec!["journal", &id],
        vec!["runs", "list", "--json"],
        vec!["runs", "show", &id, "--json"],
        vec!["runs", "show", &id],
    ] {
        let out = with_reader_closing_early(&p, &args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        assert!(
            out.stderr.is_empty(),
            "{args:?} wrote to stderr: {}",
            stderr(&out)
        );
    }

    // A command that drives a run still answers with the run's status.
    let failed = with_reader_closing_early(&p, &["run", "fail", "--param", &param, "--json"]);
    assert_eq!(code(&failed), 1, "{}", stderr(&failed));
    assert!(!stderr(&failed).contains("panicked"), "{}", stderr(&failed));
    let done = with_reader_closing_early(&p, &["run", "echo", "--param", &param, "--json"]);
    assert_eq!(code(&done), 0, "{}", stderr(&done));

    // The store was closed properly: the next command opens it at once.
    let list = p.cli(&["runs", "list", "--json"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert_eq!(json(&list).as_array().unwrap().len(), 3);
}

#[test]
fn help_and_version_that_cannot_be_written_exit_1_as_any_output_does() {
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    for args in [
        vec!["--help"],
        vec!["--version"],
        vec!["runs", "list", "--help"],
    ] {
        let out = Command::new(BIN)
            .args(&args)
            .stdout(full())
            .output()
            .unwrap();
        assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("cannot write to stdout"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // A usage error goes to stderr, which works: exit 2 as always.
    let usage = Command::new(BIN)
        .args(["journal", "--export"])
        .stdout(full())
        .output()
        .unwrap();
    assert_eq!(code(&usage), 2, "{}", stderr(&usage));
    // Written where it can be, the help exits 0.
    let help = Command::new(BIN).arg("--help").output().unwrap();
    assert_eq!(code(&help), 0);
    assert!(stdout(&help).contains("Usage: magrathea"));
}

#[test]
fn piping_into_head_keeps_the_first_line_and_exits_0() {
    let p = Project::new();
    p.workflow("echo", ECHO);
    let param = format!("big={}", big());
    let run = p.cli(&["run", "echo", "--param", &param, "--json"]);
    let id = json(&run)["workflowRunId"].as_str().unwrap().to_owned();
    // `sh` reports the last command's status; `$PIPESTATUS` is bash's, so the status of
    // `magrathea` is written to a file instead.
    let status_file = p.root.join("status");
    let out = Command::new("sh")
        .arg("-c")
        .arg(r#"{ "$0" journal "$1" --json; echo $? > "$2"; } | head -1"#)
        .args([BIN, &id, status_file.to_str().unwrap()])
        .current_dir(&p.dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stderr.is_empty(), "stderr: {}", stderr(&out));
    let first: Value = serde_json::from_str(stdout(&out).trim_end()).unwrap();
    assert_eq!(first["type"], "StartRecord");
    let status = std::fs::read_to_string(&status_file).unwrap();
    assert_eq!(status.trim(), "0");
}

#[test]
fn the_documents_version_description_and_tags_show_in_run_output() {
    let p = Project::new();
    p.workflow("echo", ECHO).workflow("fail", ECHO_FAIL);
    let run = p.cli(&["run", "echo", "--param", "big=1", "--json"]);
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let run = json(&run);
    assert_eq!(run["workflowVersion"], "1.10");
    assert_eq!(run["description"], "Echoes its parameter.\nTwice.\n");
    assert_eq!(run["tags"], serde_json::json!(["echo", "demo"]));
    let id = run["workflowRunId"].as_str().unwrap();

    let show = json(&p.cli(&["runs", "show", id, "--json"]));
    assert_eq!(show, run, "`runs show --json` shows what `run --json` did");

    let human = p.cli(&["runs", "show", id]);
    let text = stdout(&human);
    assert!(text.contains("  version: 1.10\n"), "{text}");
    assert!(
        text.contains("  description: Echoes its parameter.\n    Twice.\n"),
        "{text}"
    );
    assert!(text.contains("  tags:   echo, demo\n"), "{text}");

    // A document without them: `description` is null and `tags` empty, both present.
    p.cli(&["run", "fail", "--param", "big=1"]);
    let list = json(&p.cli(&["runs", "list", "--json"]));
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0]["workflowName"], "fail");
    assert_eq!(list[0]["description"], Value::Null);
    assert_eq!(list[0]["tags"], serde_json::json!([]));
    assert_eq!(list[0]["workflowVersion"], "");
    assert_eq!(list[1]["tags"], serde_json::json!(["echo", "demo"]));

    // The labels are those of the frozen definition, not of today's document.
    p.workflow(
        "echo",
        &ECHO.replace("tags: [echo, demo]", "tags: [changed]"),
    );
    let show = json(&p.cli(&["runs", "show", id, "--json"]));
    assert_eq!(show["tags"], serde_json::json!(["echo", "demo"]));
}

#[test]
fn ctrl_c_while_a_run_waits_on_a_timer_exits_130_and_leaves_the_run_to_resume() {
    let p = Project::new();
    p.workflow(
        "wait",
        "start: nap\nstates:\n  nap:\n    type: timer_task\n    duration: 1h\n    on:\n      fired: done\n  done:\n    type: terminal\n",
    );
    let mut child = p.spawn(&["run", "wait"]);
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        assert!(n > 0, "the run ended before its timer was set: {seen}");
        seen.push_str(&line);
        if line.contains("timer: fires in") {
            break;
        }
    }
    signal(&child, "INT");
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen}{rest}");
    assert!(rest.contains("interrupted: run "), "{rest}");
    assert!(rest.contains("magrathea resume"), "{rest}");

    let runs = json(&p.cli(&["runs", "list", "--json"]));
    assert_eq!(runs[0]["status"], "RUNNING", "{runs}");
    assert_eq!(runs[0]["currentState"], "nap");

    // `resume` recovers it and stops once it sleeps again: the timer's task step is open, but
    // no attempt of it runs.
    let resumed = p.cli_within(&["resume", "--json"], std::time::Duration::from_secs(30));
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    let view = json(&resumed);
    assert_eq!(view["status"], "RUNNING", "{view}");
    assert_eq!(view["currentState"], "nap", "{view}");
}

/// What the child writes to stderr until it exits.
fn stderr_to_end(child: &mut Child) -> String {
    let mut text = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    text
}

#[test]
fn sigterm_interrupts_run_and_ctrl_c_or_sighup_interrupts_resume_each_with_130() {
    let p = Project::new();
    // The step touches `started` and then waits for `go`, which never comes.
    p.workflow(
        "slow",
        "start: work\nstates:\n  work:\n    type: shell_task\n    run: \"touch started; while [ ! -e go ]; do sleep 0.05; done\"\n    dirName: workspace\n    on:\n      success: done\n  done:\n    type: terminal\n",
    );
    let started = p.dir.join("started");
    let mut child = p.spawn(&["run", "slow", "--json"]);
    wait_for_file(&started);
    signal(&child, "TERM");
    let rest = stderr_to_end(&mut child);
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{rest}");
    assert!(rest.contains("interrupted: run "), "{rest}");
    // With --json, the run as journaled is still printed: a script learns what to resume.
    let view: serde_json::Value = serde_json::from_str(&out).expect(&out);
    assert_eq!(view["status"], "RUNNING", "{view}");
    assert_eq!(view["currentState"], "work", "{view}");
    assert!(
        rest.contains(view["workflowRunId"].as_str().unwrap()),
        "{rest}"
    );

    // `resume` drives the run again (its step runs again after recovery); Ctrl-C stops it, and
    // so does SIGHUP (a closed terminal). Interruptions are clean stops, not crashes: more of
    // them than maxClaimAttempts (3) allows crashes leave the step to run again, and it ends
    // as it would have.
    for sig in ["INT", "HUP", "HUP"] {
        std::fs::remove_file(&started).unwrap();
        let mut child = p.spawn(&["resume"]);
        wait_for_file(&started);
        signal(&child, sig);
        let rest = stderr_to_end(&mut child);
        assert_eq!(child.wait().unwrap().code(), Some(130), "{rest}");
        assert!(
            rest.contains("interrupted: the runs stay as journaled"),
            "{rest}"
        );
    }
    let runs = json(&p.cli(&["runs", "list", "--json"]));
    assert_eq!(runs[0]["status"], "RUNNING", "{runs}");
    std::fs::write(p.dir.join("go"), "").unwrap();
    let resumed = p.cli_within(&["resume", "--json"], std::time::Duration::from_secs(30));
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    assert_eq!(json(&resumed)["status"], "DONE", "{}", stdout(&resumed));
    let id = runs[0]["workflowRunId"].as_str().unwrap();
    let journal = stdout(&p.cli(&["journal", id, "--json"]));
    let stops = journal
        .lines()
        .filter(|l| l.contains("\"TaskInterruptedRecord\""))
        .count();
    assert_eq!(stops, 4, "{journal}");
}

#[test]
fn resume_exits_1_when_a_resumed_run_fails() {
    let p = Project::new();
    // The first attempt waits until the test lets it go; the attempt that recovery runs
    // again fails (exit 3 is a business_error, which nothing catches).
    p.workflow(
        "flaky",
        "start: work\nstates:\n  work:\n    type: shell_task\n    run: \"if [ -e ran ]; then exit 3; fi; touch ran; while [ ! -e go ]; do sleep 0.05; done\"\n    dirName: workspace\n    on:\n      success: done\n  done:\n    type: terminal\n",
    );
    let mut child = p.spawn(&["run", "flaky"]);
    wait_for_file(&p.dir.join("ran"));
    signal(&child, "KILL");
    child.wait().unwrap();
    std::fs::write(p.dir.join("go"), "").unwrap();

    let out = p.cli(&["resume", "--json"]);
    assert_eq!(code(&out), 1, "{}\n{}", stdout(&out), stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "FAILED", "{run}");
    assert_eq!(
        run["reason"], "no transition for outcome 'business_error'",
        "{run}"
    );
    assert_eq!(run["lastError"]["name"], "work", "{run}");
    assert_eq!(run["lastError"]["outcome"], "business_error", "{run}");

    // Nothing left to resume: exit 0.
    let again = p.cli(&["resume"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
}

#[test]
fn graph_of_an_invalid_document_exits_2_and_of_an_unknown_one_1() {
    let p = Project::new();
    p.workflow(
        "bad",
        "start: a\nstates:\n  a:\n    type: terminal\n  b:\n    type: shell_task\n    run: x\n    on:\n      success: nowhere\n",
    );
    let out = p.cli(&["graph", "bad"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l.contains("bad.yaml:") && l.contains("[MAG-Y010]")),
        "{}",
        stderr(&out)
    );
    let dot = p.cli(&["graph", "bad", "--format", "dot"]);
    assert_eq!(code(&dot), 2);

    // An unknown workflow is refused like any invalid request (`run` and `versions` alike).
    let missing = p.cli(&["graph", "nope"]);
    assert_eq!(code(&missing), 2, "{}", stderr(&missing));
    assert!(stderr(&missing).contains("nope"), "{}", stderr(&missing));
}

#[test]
fn answering_an_unknown_inbox_item_names_it_and_exits_1() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let waiting = p.cli(&["run", "review", "--json"]);
    assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));
    let run = json(&waiting)["workflowRunId"].as_str().unwrap().to_owned();

    for id in [
        "nope-1".to_owned(),
        "garbage".to_owned(),
        format!("{run}-99"),
        "0123456789abcdef0123456789abcdef-1".to_owned(),
    ] {
        let out = p.cli(&["inbox", "answer", &id, "--approve"]);
        assert_eq!(code(&out), 1, "{id}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{id}: {}", stdout(&out));
        assert_eq!(
            stderr(&out).trim_end(),
            format!(
                "error: [MAG-GT001] inbox item `{id}` not found in this project; `magrathea inbox list` shows the pending ones"
            )
        );
    }
    // The run still waits on its gate.
    let show = json(&p.cli(&["runs", "show", &run, "--json"]));
    assert_eq!(show["status"], "WAITING");
}

/// Serves the project's tree and store with `magrathea serve`, cancels `run` over HTTP, and
/// stops the server with SIGTERM (its exit releases the store).
fn cancel_over_http(p: &Project, run: &str) {
    let mut cmd = serve_command(&p.root);
    cmd.arg("--insecure-no-auth").arg("--store").arg(p.store());
    let mut server = ServeChild::spawn(cmd);
    let addr = server.base.clone();
    let runs = format!("{addr}/brain/acme/project/shop/workflows/runs/{run}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let reply: Value = client
            .post(format!("{runs}/cancel"))
            .json(&serde_json::json!({ "reason": "no longer needed" }))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(reply["cancel"], "requested", "{reply}");
        let mut status = Value::Null;
        for _ in 0..400 {
            let view: Value = client
                .get(&runs)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            status = view["status"].clone();
            if status == "CANCELLED" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        assert_eq!(status, "CANCELLED");
    });
    server.stop();
}

#[test]
fn a_cancelled_run_exits_1_from_the_commands_that_report_a_runs_status() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let waiting = p.cli(&["run", "review", "--json"]);
    assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));
    let run = json(&waiting)["workflowRunId"].as_str().unwrap().to_owned();
    cancel_over_http(&p, &run);

    // `runs show` shows the status and succeeds; it does not report it as its exit code.
    let show = p.cli(&["runs", "show", &run, "--json"]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    assert_eq!(json(&show)["status"], "CANCELLED");

    // Answering the gate of the cancelled run is ignored, and the command exits 1 with the
    // run as it is.
    let answered = p.cli(&[
        "inbox",
        "answer",
        &format!("{run}-2"),
        "--approve",
        "--json",
    ]);
    assert_eq!(code(&answered), 1, "{}", stderr(&answered));
    assert_eq!(json(&answered)["status"], "CANCELLED");
    assert_eq!(json(&answered)["reason"], "no longer needed");
    assert!(
        stderr(&answered).contains("answer ignored"),
        "{}",
        stderr(&answered)
    );
}

/// Appends a record that no version of the journal format can read to `run`'s journal, as a
/// damaged or newer store would hold: the engine blocks the run rather than guess.
fn damage_the_journal(p: &Project, run: &str) {
    use magrathea_core::store::{CommitBatch, EncodedRecord};
    use magrathea_core::{Durability, RedbStore, RunId, Store};
    let store = RedbStore::open(p.store().join("journal.redb"), Durability::Immediate).unwrap();
    let run: RunId = run.parse().unwrap();
    let next = store.read_journal_raw(run).unwrap().len() as u64;
    store
        .commit(&[&CommitBatch {
            records: vec![EncodedRecord {
                run_id: run,
                seq: next,
                bytes: vec![0xEE, 0x01, 0x02],
            }],
            ..CommitBatch::default()
        }])
        .unwrap();
}

/// Appends to `run`'s journal that step 3 entered a state the workflow never enters after the
/// gate (step 2, in the state's task step 1): replaying the answered gate then disagrees with
/// the journal.
fn diverge(p: &Project, run: &str) {
    use magrathea_core::store::{CommitBatch, EncodedRecord};
    use magrathea_core::{Durability, Record, RedbStore, RunId, Store, codec};
    let store = RedbStore::open(p.store().join("journal.redb"), Durability::Immediate).unwrap();
    let run: RunId = run.parse().unwrap();
    let next = store.read_journal_raw(run).unwrap().len() as u64;
    let mut bytes = Vec::new();
    codec::encode(
        &Record::StateEntered {
            step: 3,
            state: "bogus".into(),
        },
        1,
        &mut bytes,
    );
    store
        .commit(&[&CommitBatch {
            records: vec![EncodedRecord {
                run_id: run,
                seq: next,
                bytes,
            }],
            ..CommitBatch::default()
        }])
        .unwrap();
}

#[test]
fn a_blocked_run_exits_1_from_inbox_answer_and_resume() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let waiting = p.cli(&["run", "review", "--json"]);
        assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));
        ids.push(json(&waiting)["workflowRunId"].as_str().unwrap().to_owned());
    }
    diverge(&p, &ids[0]);
    damage_the_journal(&p, &ids[1]);

    // The answer reaches a run that no longer replays: nothing is recorded, the run is shown
    // BLOCKED with the reason, and the command exits 1.
    let answered = p.cli(&[
        "inbox",
        "answer",
        &format!("{}-2", ids[0]),
        "--approve",
        "--json",
    ]);
    assert_eq!(code(&answered), 1, "{}", stderr(&answered));
    let run = json(&answered);
    assert_eq!(run["status"], "BLOCKED", "{run}");
    let reason = run["reason"].as_str().unwrap();
    assert!(reason.contains("[MAG-ND002]"), "{reason}");
    assert!(
        stderr(&answered).contains("answer not recorded: [MAG-GT003]"),
        "{}",
        stderr(&answered)
    );

    // `resume` recovers both runs — one blocked, one whose journal cannot be read — shows
    // each instead of stopping at the unreadable one, and exits 1.
    let resumed = p.cli_within(&["resume", "--json"], std::time::Duration::from_secs(30));
    assert_eq!(code(&resumed), 1, "{}", stderr(&resumed));
    let shown: Vec<Value> = stdout(&resumed)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids_shown: Vec<&str> = shown
        .iter()
        .map(|r| r["workflowRunId"].as_str().unwrap())
        .collect();
    assert_eq!(ids_shown.len(), 2, "{shown:?}");
    assert!(ids.iter().all(|id| ids_shown.contains(&id.as_str())));
    let blocked = shown
        .iter()
        .find(|r| r["workflowRunId"] == ids[0].as_str())
        .unwrap();
    assert_eq!(blocked["status"], "BLOCKED");
    assert!(!stderr(&resumed).contains("error:"), "{}", stderr(&resumed));
}

#[test]
fn catch_failure_routes_a_failed_sub_workflow_as_in_the_reference() {
    let p = Project::new();
    p.workflow(
        "parent",
        "start: build\nstates:\n  build:\n    type: workflow_task\n    workflow: child\n    on:\n      success: deploy\n    catch:\n      failure: escalate\n  deploy:\n    type: terminal\n  escalate:\n    type: terminal\n    result: escalated\n",
    )
    .workflow(
        "child",
        "start: broken\nstates:\n  broken:\n    type: terminal\n    outcome: failure\n",
    );
    let valid = p.cli(&["validate", "parent"]);
    assert_eq!(code(&valid), 0, "{}", stderr(&valid));
    let out = p.cli(&["run", "parent", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["currentState"], "escalate");
    assert_eq!(run["result"], "escalated");
    let graph = stdout(&p.cli(&["graph", "parent"]));
    assert!(
        graph.contains("build --> escalate : catch failure"),
        "{graph}"
    );
}

/// A run whose sub-run waits on a gate waits on a person too: `run` stops there with exit 3
/// (the parent stays RUNNING, as its status says), shows the sub-run's item, and answering
/// it finishes both runs.
#[test]
fn run_exits_3_when_its_sub_run_waits_on_a_gate() {
    let p = Project::new();
    p.workflow(
        "parent",
        "start: sub\nstates:\n  sub:\n    type: workflow_task\n    workflow: child\n    storeAs: r\n    on: { success: done }\n  done: { type: terminal, result: \"${state.r}\" }\n",
    )
    .workflow(
        "child",
        "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: \"child ok?\" }\n    on: { approved: ok, rejected: ok }\n  ok: { type: terminal, result: approved }\n",
    );
    let mut started = p.command(&["run", "parent", "--json"]);
    let out = cli_common::output_within(&mut started, std::time::Duration::from_secs(60));
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "RUNNING", "{run}");
    assert_eq!(run["subRuns"][0]["status"], "WAITING", "{run}");

    let shown = stdout(&p.cli(&["runs", "show", run["workflowRunId"].as_str().unwrap()]));
    assert!(shown.contains("RUNNING"), "{shown}");
    let human = p.cli(&["run", "parent"]);
    assert_eq!(code(&human), 3, "{}", stderr(&human));
    assert!(
        stdout(&human).contains("waits on APPROVAL gate of sub-run"),
        "{}",
        stdout(&human)
    );

    let items = json(&p.cli(&["inbox", "list", "--json"]));
    let item = items
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["workflowRunId"] == run["subRuns"][0]["runId"])
        .unwrap_or_else(|| panic!("{items}"));
    let answered = p.cli(&["inbox", "answer", item["id"].as_str().unwrap(), "--approve"]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    let parent = json(&p.cli(&[
        "runs",
        "show",
        run["workflowRunId"].as_str().unwrap(),
        "--json",
    ]));
    assert_eq!(parent["status"], "DONE", "{parent}");
    assert_eq!(parent["result"], "approved", "{parent}");
}

/// Answering a sub-run's gate carries its parent on before the command exits: here the parent
/// goes on to a task of a second once the sub-run is done. A command that stopped as soon as
/// the sub-run settled would leave the parent half-way, its task killed with the process,
/// until `magrathea resume`.
#[test]
fn answering_a_sub_runs_gate_carries_its_parent_on_before_the_command_exits() {
    let p = Project::new();
    p.workflow(
        "parent",
        "start: sub\nstates:\n  sub:\n    type: workflow_task\n    workflow: child\n    on: { success: after }\n  after:\n    type: shell_task\n    run: \"sleep 1\"\n    dirName: workspace\n    on: { success: done }\n  done: { type: terminal, result: finished }\n",
    )
    .workflow(
        "child",
        "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: \"child ok?\" }\n    on: { approved: ok, rejected: ok }\n  ok: { type: terminal, result: approved }\n",
    );
    let started = p.cli(&["run", "parent", "--json"]);
    assert_eq!(code(&started), 3, "{}", stderr(&started));
    let parent_run = json(&started)["workflowRunId"].as_str().unwrap().to_owned();
    let items = json(&p.cli(&["inbox", "list", "--json"]));
    let item = items[0]["id"].as_str().unwrap_or_else(|| panic!("{items}"));

    let answered = p.cli(&["inbox", "answer", item, "--approve"]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    let parent = json(&p.cli(&["runs", "show", &parent_run, "--json"]));
    assert_eq!(parent["status"], "DONE", "{parent}");
    assert_eq!(parent["result"], "finished", "{parent}");
}

/// A run that stops waiting for its sub-run (a `workflow_task` timeout) and ends cancels the
/// sub-run, and that sub-run its own, before the command exits: each cancellation is a commit
/// of its own, and the last sub-run's running shell task has to be stopped. A command that
/// exited as soon as the parent ended left them `RUNNING`, their cancellation journaled only
/// in the parent, until `magrathea resume`.
#[test]
fn a_run_that_ends_cancels_its_abandoned_sub_runs_before_the_command_exits() {
    let p = Project::new();
    p.workflow(
        "parent",
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: middle\n    timeoutSeconds: 1\n    on: { success: done }\n    catch: { timeout: gave_up }\n  done: { type: terminal }\n  gave_up: { type: terminal, result: gave up }\n",
    )
    .workflow(
        "middle",
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: slow\n    on: { success: done }\n  done: { type: terminal }\n",
    )
    .workflow(
        "slow",
        "start: work\nstates:\n  work:\n    type: shell_task\n    run: \"sleep 30\"\n    dirName: workspace\n    on: { success: done }\n  done: { type: terminal }\n",
    );
    let ran = p.cli(&["run", "parent", "--json"]);
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    let view = json(&ran);
    assert_eq!(view["result"], "gave up", "{view}");
    assert_eq!(view["subRuns"][0]["status"], "CANCELLED", "{view}");

    let runs = json(&p.cli(&["runs", "list", "--json"]));
    let runs = runs.as_array().unwrap_or_else(|| panic!("{runs}"));
    for name in ["middle", "slow"] {
        let sub = runs
            .iter()
            .find(|r| r["workflowName"] == name)
            .unwrap_or_else(|| panic!("no {name} sub-run in {runs:?}"));
        assert_eq!(sub["status"], "CANCELLED", "{sub}");
    }
}

/// `magrathea cancel` of a run whose sub-run waits on a gate ends only once the sub-run is
/// cancelled too: its inbox item closes, and the printed run shows it `CANCELLED`.
#[test]
fn cancelling_a_parent_cancels_its_waiting_sub_run_before_the_command_exits() {
    let p = Project::new();
    p.workflow(
        "parent",
        "start: call\nstates:\n  call: { type: workflow_task, workflow: child, on: { success: done } }\n  done: { type: terminal }\n",
    )
    .workflow(
        "child",
        "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: \"child ok?\" }\n    on: { approved: fin, rejected: fin }\n  fin: { type: terminal }\n",
    );
    let started = p.cli(&["run", "parent", "--json"]);
    assert_eq!(code(&started), 3, "{}", stderr(&started));
    let parent = json(&started)["workflowRunId"].as_str().unwrap().to_owned();

    let cancelled = p.cli(&["cancel", &parent, "--json"]);
    assert_eq!(code(&cancelled), 1, "{}", stderr(&cancelled));
    let view = json(&cancelled);
    assert_eq!(view["status"], "CANCELLED", "{view}");
    assert_eq!(view["subRuns"][0]["status"], "CANCELLED", "{view}");
    let pending = json(&p.cli(&["inbox", "list", "--json"]));
    assert_eq!(
        pending,
        serde_json::json!([]),
        "the sub-run's item is closed"
    );
}

#[test]
fn validate_piped_into_a_reader_that_closes_early_still_reports_an_invalid_document() {
    let p = Project::new();
    // Many valid documents print many `ok:` lines; the invalid one sorts last.
    for i in 0..2000 {
        p.workflow(
            &format!("a{i:04}-{}", "x".repeat(60)),
            "start: done\nstates:\n  done:\n    type: terminal\n",
        );
    }
    p.workflow(
        "zz-bad",
        "start: nowhere\nstates:\n  a:\n    type: terminal\n",
    );
    let out = with_reader_closing_early(&p, &["validate"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(stderr(&out).contains("zz-bad.yaml:"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "{}", stderr(&out));
}

#[test]
fn an_empty_starter_is_refused_before_anything_starts() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let out = p.cli(&["run", "review", "--started-by", ""]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--started-by"), "{}", stderr(&out));
    let runs = p.cli(&["runs", "list", "--json"]);
    assert_eq!(stdout(&runs).trim(), "[]", "nothing was started");
}

/// A sub-run refused before it started (here deeper than the project's `subRuns.maxDepth`)
/// is no run: the parent's step fails, and the parent's `subRuns` lists only the runs that
/// exist, each of which `runs show` finds.
#[test]
fn a_sub_run_refused_before_it_started_is_not_listed() {
    let p = Project::new();
    std::fs::write(
        p.dir.join("_vance/settings.yaml"),
        "subRuns:\n  maxDepth: 1\n",
    )
    .unwrap();
    p.workflow(
        "outer",
        "start: sub\nstates:\n  sub:\n    type: workflow_task\n    workflow: middle\n    on: { success: done, failure: failed }\n  done: { type: terminal, result: ok }\n  failed: { type: terminal, result: failed }\n",
    )
    .workflow(
        "middle",
        "start: sub\nstates:\n  sub:\n    type: workflow_task\n    workflow: inner\n    on: { success: done, failure: failed }\n  done: { type: terminal, result: ok }\n  failed: { type: terminal, outcome: failure, result: refused }\n",
    )
    .workflow("inner", "start: d\nstates:\n  d: { type: terminal, result: in }\n");
    let out = p.cli(&["run", "outer", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let outer = json(&out);
    assert_eq!(outer["result"], "failed", "{outer}");
    assert_eq!(outer["subRunCount"], 1, "{outer}");
    let middle_id = outer["subRuns"][0]["runId"].as_str().unwrap().to_owned();
    let middle = json(&p.cli(&["runs", "show", &middle_id, "--json"]));
    assert_eq!(middle["result"], "refused", "{middle}");
    assert_eq!(middle["subRuns"], serde_json::json!([]), "{middle}");
    assert_eq!(middle["subRunCount"], 0, "{middle}");
}
