//! Many `magrathea` processes on one redb store: while one process owns the store (`magrathea
//! serve`, or a `magrathea run` waiting on a shell step), every other command on it is the
//! owner's client and prints what it prints without an owner, byte for byte, with the same exit
//! code. Real processes on a real store in a temporary project (`<tmp>/acme/shop`); each child
//! is killed when its guard drops, and every wait has a deadline.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli_common;
use crate::serve_child;
use cli_common::{Project, code, stderr, stdout};
use serve_child::serve_command;

/// How long any one command or wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(90);

/// A done run whose shell step the driving process executes.
const ECHO: &str = "\
description: Says hello.
tags: [demo]
start: say
states:
  say:
    type: shell_task
    run: \"echo hello\"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
    result: { said: hello }
";

/// A failing run: exit 1 from `run`.
const BROKEN: &str = "\
start: done
states:
  done:
    type: terminal
    outcome: failure
    result: { why: broken }
";

/// Waits on an approval gate: exit 3 from `run`.
const REVIEW: &str = "\
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: \"Ship it?\" }
    on:
      approved: done
      rejected: done
  done:
    type: terminal
    result: { reviewed: true }
";

/// A shell step that holds its process until the file `release` appears in the project.
const HOLD: &str = "\
start: work
states:
  work:
    type: shell_task
    run: \"touch holding; while [ ! -e release ]; do sleep 0.05; done\"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
";

/// Like [`HOLD`], on the files `holding2` and `release2`.
const HOLD2: &str = "\
start: work
states:
  work:
    type: shell_task
    run: \"touch holding2; while [ ! -e release2 ]; do sleep 0.05; done\"
    dirName: workspace
    on:
      success: done
  done:
    type: terminal
    result: { held: twice }
";

/// Sleeps on a timer for an hour: `run` follows it until interrupted.
const NAP: &str = "\
start: nap
states:
  nap:
    type: timer_task
    duration: 1h
    on:
      fired: done
  done:
    type: terminal
";

/// Lanes wide enough that a client's shell step runs beside the owner's held one.
const SETTINGS: &str = "lanes:\n  maxConcurrentTasks: 4\n";

/// The tenant lets its projects run shell steps, also when served.
const TENANT_SETTINGS: &str = "execution:\n  shellTask: true\n";

pub(crate) fn project() -> Project {
    let p = Project::new();
    p.workflow("echo", ECHO)
        .workflow("broken", BROKEN)
        .workflow("review", REVIEW)
        .workflow("hold", HOLD)
        .workflow("hold2", HOLD2)
        .workflow("nap", NAP);
    std::fs::write(p.dir.join("_vance/settings.yaml"), SETTINGS).unwrap();
    // A served owner runs shell steps only where the tenant allows them.
    let tenant = p.root.join("acme/_tenant/_vance");
    std::fs::create_dir_all(&tenant).unwrap();
    std::fs::write(tenant.join("settings.yaml"), TENANT_SETTINGS).unwrap();
    p
}

/// A child process, SIGKILLed and reaped when dropped.
pub(crate) struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.0.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Whether the process has not exited yet.
    fn is_running(&mut self) -> bool {
        self.0.try_wait().unwrap().is_none()
    }

    /// Waits for the process to exit, within the deadline; its exit code.
    fn wait(&mut self) -> Option<i32> {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status.code();
            }
            assert!(Instant::now() < deadline, "the process did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Runs `cmd` to its end (stdin closed) within the deadline.
fn finish(mut cmd: Command) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).map(|_| v)
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).map(|_| v)
    });
    let mut guard = Guard(child);
    guard.wait();
    let status = guard.0.wait().unwrap();
    Output {
        status,
        stdout: out.join().unwrap().unwrap(),
        stderr: err.join().unwrap().unwrap(),
    }
}

pub(crate) fn cli(p: &Project, args: &[&str]) -> Output {
    finish(p.command(args))
}

fn wait_for(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn socket(p: &Project) -> PathBuf {
    p.store().join("control.sock")
}

/// Whether an owner answers on the socket.
fn owner_answers(path: &Path) -> bool {
    UnixStream::connect(path).is_ok()
}

/// `magrathea serve` owning the project's store, once it serves the control socket.
fn serve_owner(p: &Project) -> Guard {
    let mut cmd = serve_command(&p.root);
    cmd.arg("--store")
        .arg(p.store())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let guard = Guard(cmd.spawn().unwrap());
    wait_for("the server's control socket", || owner_answers(&socket(p)));
    guard
}

/// `magrathea run hold` owning the store, once its shell step runs.
pub(crate) fn run_owner(p: &Project) -> Guard {
    let _ = std::fs::remove_file(p.dir.join("holding"));
    let mut cmd = p.command(&["run", "hold"]);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let guard = Guard(cmd.spawn().unwrap());
    wait_for("the owner's shell step", || p.dir.join("holding").exists());
    wait_for("the owner's control socket", || owner_answers(&socket(p)));
    guard
}

/// What a command gave: exit code, stdout, stderr.
fn result(o: &Output) -> (i32, String, String) {
    (code(o), stdout(o), stderr(o))
}

/// Output with what differs from one run to the next made uniform: run ids (32 hex digits)
/// become `<id>` and every other number `N` (times, durations, gate steps).
fn uniform(text: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.len() == 32 && word.bytes().all(|b| b.is_ascii_hexdigit()) {
            out.push_str("<id>");
        } else {
            let mut in_number = false;
            for c in word.chars() {
                if c.is_ascii_digit() {
                    if !in_number {
                        out.push('N');
                    }
                    in_number = true;
                } else {
                    in_number = false;
                    out.push(c);
                }
            }
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn uniform_result(o: &Output) -> (i32, String, String) {
    (code(o), uniform(&stdout(o)), uniform(&stderr(o)))
}

fn run_id(o: &Output) -> String {
    let v: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", stdout(o), stderr(o)));
    v["workflowRunId"].as_str().unwrap().to_string()
}

/// Every reading command, on runs that exist (done, waiting) and one that does not.
fn reading_commands(done: &str, waiting: &str) -> Vec<Vec<String>> {
    let unknown = "0123456789abcdef0123456789abcdef";
    let cmds: Vec<Vec<&str>> = vec![
        vec!["runs", "list"],
        vec!["runs", "list", "--json"],
        vec![
            "runs",
            "list",
            "--workflow",
            "echo",
            "--limit",
            "1",
            "--json",
        ],
        vec!["runs", "show", done],
        vec!["runs", "show", done, "--json"],
        vec!["runs", "show", waiting],
        vec!["runs", "show", unknown],
        vec!["journal", done],
        vec!["journal", done, "--json"],
        vec!["journal", waiting, "--json"],
        vec!["journal", unknown],
        vec!["inbox", "list"],
        vec!["inbox", "list", "--json"],
        vec!["runs", "list", "--status", "done,waiting", "--json"],
        vec!["runs", "list", "--status", "WAITING", "--limit", "1"],
    ];
    cmds.into_iter()
        .map(|c| c.into_iter().map(String::from).collect())
        .collect()
}

/// A done and a waiting run, started without an owner.
pub(crate) fn two_runs(p: &Project) -> (String, String) {
    let done = cli(p, &["run", "echo", "--json"]);
    assert_eq!(code(&done), 0, "{}", stderr(&done));
    let waiting = cli(p, &["run", "review", "--json"]);
    assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));
    (run_id(&done), run_id(&waiting))
}

fn outputs(p: &Project, cmds: &[Vec<String>]) -> Vec<(i32, String, String)> {
    cmds.iter()
        .map(|c| {
            let args: Vec<&str> = c.iter().map(String::as_str).collect();
            result(&cli(p, &args))
        })
        .collect()
}

fn assert_same(
    cmds: &[Vec<String>],
    client: &[(i32, String, String)],
    alone: &[(i32, String, String)],
) {
    for ((cmd, c), a) in cmds.iter().zip(client).zip(alone) {
        assert_eq!(c, a, "`magrathea {}` as a client differs", cmd.join(" "));
    }
}

#[test]
fn reading_commands_print_the_same_through_a_serve_owner_as_without_one() {
    let p = project();
    let (done, waiting) = two_runs(&p);
    let cmds = reading_commands(&done, &waiting);
    let alone = outputs(&p, &cmds);
    assert_eq!(alone[0].0, 0);
    assert!(alone[6].2.contains("[MAG-RN001]"), "{}", alone[6].2);

    let mut owner = serve_owner(&p);
    let client = outputs(&p, &cmds);
    assert_same(&cmds, &client, &alone);

    // A clean stop removes the socket; the store is the next command's again.
    owner.signal("TERM");
    assert_eq!(owner.wait(), Some(0));
    assert!(!socket(&p).exists(), "the socket outlived its owner");
    assert_same(&cmds, &outputs(&p, &cmds), &alone);
}

#[test]
fn reading_commands_print_the_same_while_a_run_waits_on_a_shell_step() {
    let p = project();
    let (done, waiting) = two_runs(&p);
    let owner = run_owner(&p);
    let cmds = reading_commands(&done, &waiting);
    let client = outputs(&p, &cmds);
    // The held run shows as RUNNING; after a SIGKILL nobody drives it on, so the owner-less
    // commands see the same store.
    assert!(client[0].1.contains("hold"), "{}", client[0].1);
    drop(owner);
    assert_same(&cmds, &client, &outputs(&p, &cmds));
}

#[test]
fn a_socket_left_by_a_killed_owner_does_not_stop_the_next_command() {
    let p = project();
    let (done, _) = two_runs(&p);
    let owner = serve_owner(&p);
    drop(owner); // SIGKILL: the socket file stays, nobody listens on it.
    assert!(socket(&p).exists());
    assert!(!owner_answers(&socket(&p)));

    let show = cli(&p, &["runs", "show", &done]);
    assert_eq!(code(&show), 0, "{}", stderr(&show));
    // The next owner replaces the stale socket with its own.
    let _owner = run_owner(&p);
    let list = cli(&p, &["runs", "list", "--json"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert!(stdout(&list).contains(&done));
}

#[test]
fn the_control_socket_is_for_the_stores_owner_only() {
    let p = project();
    two_runs(&p);
    let _owner = serve_owner(&p);
    let mode = std::fs::metadata(socket(&p)).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    let key = p.store().join("control.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    // Connecting needs no right on the store directory (a sandboxed shell step of the
    // owner's user can connect): without the store's control key the owner answers nothing.
    let key = std::fs::read_to_string(&key).unwrap();
    for first in ["", "0123456789abcdef", &key[..key.len() - 1]] {
        let reply = ask_owner(
            &p,
            format!("{first}\n{{\"op\":\"pending\",\"scope\":null}}\n"),
        );
        assert!(reply.contains("[MAG-CS004]"), "{first:?}: {reply}");
        assert!(!reply.contains("items"), "{reply}");
    }
    let reply = ask_owner(
        &p,
        format!("{key}\n{{\"op\":\"pending\",\"scope\":null}}\n"),
    );
    assert!(reply.starts_with("{\"reply\":\"items\""), "{reply}");
}

#[test]
fn a_command_that_cannot_read_the_control_key_says_so() {
    let p = project();
    two_runs(&p);
    let _owner = serve_owner(&p);
    std::fs::remove_file(p.store().join("control.key")).unwrap();
    let list = cli(&p, &["runs", "list", "--json"]);
    assert_ne!(code(&list), 0, "{}", stdout(&list));
    let err = stderr(&list);
    assert!(
        err.contains("[MAG-CS004]") && err.contains("control.key"),
        "{err}"
    );
}

/// What the owner of `p`'s store answers to `request`, sent as it is.
fn ask_owner(p: &Project, request: impl AsRef<[u8]>) -> String {
    let mut s = UnixStream::connect(socket(p)).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    // The owner may answer before it has read an oversized request to its end.
    let _ = s.write_all(request.as_ref());
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    reply
}

/// The control key of `p`'s store's owner, as a request's first line.
fn key_line(p: &Project) -> Vec<u8> {
    let mut key = std::fs::read(p.store().join("control.key")).unwrap();
    key.push(b'\n');
    key
}

/// `run` as a client: the owner starts and drives the run, the client prints its progress and
/// result, and exits like an owner-less `run`.
fn runs_through(p: &Project, owner: impl Fn(&Project) -> Guard) {
    let cases: [&[&str]; 5] = [
        &["run", "echo"],
        &["run", "echo", "--json"],
        &["run", "broken"],
        &["run", "review"],
        &["run", "review", "--json"],
    ];
    let guard = owner(p);
    let client: Vec<_> = cases.iter().map(|c| uniform_result(&cli(p, c))).collect();
    drop(guard);
    let alone: Vec<_> = cases.iter().map(|c| uniform_result(&cli(p, c))).collect();
    for ((case, c), a) in cases.iter().zip(&client).zip(&alone) {
        assert_eq!(c, a, "`magrathea {}` as a client differs", case.join(" "));
    }
    assert_eq!(
        client.iter().map(|c| c.0).collect::<Vec<_>>(),
        [0, 0, 1, 3, 3]
    );
    assert!(
        client[0].1.contains("result: {\"said\":\"hello\"}"),
        "{}",
        client[0].1
    );
    assert!(
        client[0].2.contains("shell_task say: success"),
        "{}",
        client[0].2
    );
}

#[test]
fn run_as_a_client_of_a_serve_owner_prints_and_exits_as_without_one() {
    runs_through(&project(), serve_owner);
}

#[test]
fn run_as_a_client_of_a_run_waiting_on_a_shell_step_prints_and_exits_as_without_one() {
    runs_through(&project(), run_owner);
}

#[test]
fn an_invalid_document_or_parameter_is_refused_by_the_client_with_exit_2() {
    let p = project();
    p.workflow(
        "bad",
        "start: nowhere\nstates:\n  done:\n    type: terminal\n",
    );
    let _owner = serve_owner(&p);
    let bad = cli(&p, &["run", "bad"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("nothing was started"),
        "{}",
        stderr(&bad)
    );
    let params = cli(&p, &["run", "echo", "--params", "[1]"]);
    assert_eq!(code(&params), 2, "{}", stderr(&params));
    let list = cli(&p, &["runs", "list", "--json"]);
    assert_eq!(stdout(&list).trim(), "[]");
}

#[test]
fn inbox_answer_as_a_client_of_a_serve_owner_answers_and_drives_the_run_as_without_one() {
    answers_through(&project(), serve_owner);
}

#[test]
fn inbox_answer_as_a_client_of_a_run_waiting_on_a_shell_step_answers_as_without_one() {
    answers_through(&project(), run_owner);
}

/// `inbox answer` as a client: an invalid answer, an unknown item, the answer, a late answer;
/// each prints and exits as without an owner.
fn answers_through(p: &Project, owner: impl Fn(&Project) -> Guard) {
    let first = run_id(&cli(p, &["run", "review", "--json"]));
    let second = run_id(&cli(p, &["run", "review", "--json"]));
    let items = cli(p, &["inbox", "list", "--json"]);
    let items: serde_json::Value = serde_json::from_slice(&items.stdout).unwrap();
    let item = |run: &str| -> String {
        items
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["workflowRunId"] == run)
            .and_then(|i| i["id"].as_str())
            .unwrap_or_else(|| panic!("no item of {run} in {items}"))
            .to_string()
    };
    let cases = |run: &str| -> Vec<Vec<String>> {
        let id = item(run);
        vec![
            vec![
                "inbox".into(),
                "answer".into(),
                id.clone(),
                "--choose".into(),
                "x".into(),
            ],
            vec![
                "inbox".into(),
                "answer".into(),
                "0123456789abcdef0123456789abcdef-1".into(),
                "--approve".into(),
            ],
            vec![
                "inbox".into(),
                "answer".into(),
                id.clone(),
                "--approve".into(),
                "--json".into(),
            ],
            vec!["inbox".into(), "answer".into(), id, "--reject".into()],
        ]
    };
    let answer = |run: &str| -> Vec<Output> {
        cases(run)
            .iter()
            .map(|c| {
                let args: Vec<&str> = c.iter().map(String::as_str).collect();
                cli(p, &args)
            })
            .collect()
    };
    let guard = owner(p);
    let client = answer(&first);
    drop(guard);
    let alone = answer(&second);
    let uniform_all = |o: &[Output]| o.iter().map(uniform_result).collect::<Vec<_>>();
    assert_eq!(uniform_all(&client), uniform_all(&alone));
    let client: Vec<_> = client.iter().map(result).collect();
    // Invalid answer, unknown item, the answer, a late answer to the completed gate.
    assert_eq!(client.iter().map(|c| c.0).collect::<Vec<_>>(), [2, 1, 0, 0]);
    assert!(client[0].2.contains("[MAG-GT002]"), "{}", client[0].2);
    assert!(client[1].2.contains("[MAG-GT001]"), "{}", client[1].2);
    assert!(
        client[2].1.contains("\"status\":\"DONE\""),
        "{}",
        client[2].1
    );
    assert!(client[3].2.contains("answer ignored"), "{}", client[3].2);
}

/// `magrathea run nap` as a client, and what it has printed on stderr so far.
fn follow_nap(p: &Project) -> (Guard, Arc<Mutex<String>>, std::thread::JoinHandle<()>) {
    follow(p, "nap", "timer: fires in")
}

/// `magrathea run <workflow>` as a client, its stderr collected, once it shows `shown` (a
/// progress line: the client follows the run and handles Ctrl-C by then).
fn follow(
    p: &Project,
    workflow: &str,
    shown: &str,
) -> (Guard, Arc<Mutex<String>>, std::thread::JoinHandle<()>) {
    let mut cmd = p.command(&["run", workflow]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut client = Guard(cmd.spawn().unwrap());
    let err = client.0.stderr.take().unwrap();
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = seen.clone();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { break };
            let mut text = sink.lock().unwrap();
            text.push_str(&line);
            text.push('\n');
        }
    });
    wait_for("the client to show its progress", || {
        seen.lock().unwrap().contains(shown)
    });
    (client, seen, reader)
}

#[test]
fn ctrl_c_on_a_client_exits_130_and_the_owner_keeps_driving_the_run() {
    let p = project();
    let _owner = serve_owner(&p);
    let (mut client, seen, reader) = follow_nap(&p);
    client.signal("INT");
    assert_eq!(client.wait(), Some(130));
    reader.join().unwrap();
    let text = seen.lock().unwrap().clone();
    assert!(text.contains("interrupted: run "), "{text}");
    // The owner still drives it: `magrathea resume` would be refused while it runs.
    assert!(
        text.contains("it goes on in the process that owns the store"),
        "{text}"
    );
    let list = cli(&p, &["runs", "list", "--json"]);
    assert!(
        stdout(&list).contains("\"status\":\"RUNNING\""),
        "{}",
        stdout(&list)
    );
}

/// The same with a `magrathea run` as the owner, whose own run ends before the client's:
/// it does not exit and leave the interrupted client's run RUNNING, but drives it to its
/// end first, as the client said it would.
#[test]
fn a_run_owner_drives_an_interrupted_clients_run_to_its_end_before_exiting() {
    let p = project();
    let mut owner = run_owner(&p);
    // Interrupted once it follows its run (a progress line), in its shell step.
    let (mut client, _, reader) = follow(&p, "hold2", "→ state");
    wait_for("the client's shell step", || {
        p.dir.join("holding2").exists()
    });
    client.signal("INT");
    assert_eq!(client.wait(), Some(130));
    reader.join().unwrap();
    // The owner's own run ends; the client's is still in its shell step.
    std::fs::write(p.dir.join("release"), "").unwrap();
    wait_for("the owner's run to be DONE", || {
        let list = cli(&p, &["runs", "list", "--workflow", "hold", "--json"]);
        stdout(&list).contains("\"status\":\"DONE\"")
    });
    std::thread::sleep(Duration::from_millis(300));
    assert!(owner.is_running(), "the owner left the client's run behind");
    std::fs::write(p.dir.join("release2"), "").unwrap();
    assert_eq!(owner.wait(), Some(0));
    let list = cli(&p, &["runs", "list", "--workflow", "hold2", "--json"]);
    assert!(
        stdout(&list).contains("\"status\":\"DONE\""),
        "{}",
        stdout(&list)
    );
}

#[test]
fn a_client_whose_owner_dies_while_it_follows_a_run_says_so_and_exits_1() {
    let p = project();
    let owner = serve_owner(&p);
    let (mut client, seen, reader) = follow_nap(&p);
    drop(owner);
    assert_eq!(client.wait(), Some(1));
    reader.join().unwrap();
    let text = seen.lock().unwrap().clone();
    assert!(text.contains("[MAG-CS001]"), "{text}");
    // Not "run the command again", which would start a second run: where the run is.
    assert!(text.contains("magrathea runs list"), "{text}");
    assert!(text.contains("magrathea resume"), "{text}");
}

#[test]
fn the_owner_refuses_a_malformed_or_oversized_request() {
    let p = project();
    let _owner = serve_owner(&p);
    let ask = |request: &[u8]| ask_owner(&p, [key_line(&p), request.to_vec()].concat());
    let reply = ask(b"{\"op\":\"launchMissiles\"}\n");
    assert!(reply.contains("[MAG-CS002]"), "{reply}");
    let mut huge = vec![b'x'; 5 << 20];
    huge.push(b'\n');
    let reply = ask(&huge);
    assert!(reply.contains("[MAG-CS002]"), "{reply}");
    assert!(reply.contains("longer than"), "{reply}");
    // The owner still serves.
    let list = cli(&p, &["runs", "list", "--json"]);
    assert_eq!(code(&list), 0, "{}", stderr(&list));
}

#[test]
fn an_owner_that_finished_its_run_drives_its_clients_run_to_the_end() {
    let p = project();
    let mut owner = run_owner(&p);
    let mut cmd = p.command(&["run", "hold2", "--json"]);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut client = Guard(cmd.spawn().unwrap());
    let mut out = client.0.stdout.take().unwrap();
    let printed = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });
    wait_for("the client's shell step", || {
        p.dir.join("holding2").exists()
    });
    // The owner's own run ends first; it still owns the store and drives the client's run.
    std::fs::write(p.dir.join("release"), "").unwrap();
    wait_for("the owner's run to be DONE", || {
        let list = cli(&p, &["runs", "list", "--workflow", "hold", "--json"]);
        stdout(&list).contains("\"status\":\"DONE\"")
    });
    std::fs::write(p.dir.join("release2"), "").unwrap();
    assert_eq!(client.wait(), Some(0));
    let text = printed.join().unwrap();
    assert!(text.contains("\"held\":\"twice\""), "{text}");
    assert_eq!(owner.wait(), Some(0));
    assert!(!socket(&p).exists(), "the socket outlived its owner");
}

#[test]
fn an_owner_that_cannot_serve_its_socket_warns_and_still_drives_its_run() {
    let p = project();
    // Longer than a Unix socket's path may be (108 bytes).
    let store = p.root.join("s".repeat(60)).join("t".repeat(60));
    let mut cmd = p.command(&["run", "echo", "--store"]);
    cmd.arg(&store);
    let out = finish(cmd);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("[MAG-CS003]"), "{}", stderr(&out));
    assert!(stdout(&out).contains("DONE"), "{}", stdout(&out));
}

/// The uniform result of a command on an unknown run, without the store's path (which differs
/// from one project to the next).
fn unknown_run(o: &Output) -> (i32, String, String) {
    let (code, out, err) = uniform_result(o);
    let err = err.split(" (store ").next().unwrap_or_default().to_owned();
    (code, out, err)
}

/// `cancel` of a run waiting on its gate, then of the same (ended) run again, and of an unknown
/// run: exit codes and outputs, made uniform.
fn cancels(p: &Project) -> Vec<(i32, String, String)> {
    let waiting = run_id(&cli(p, &["run", "review", "--json"]));
    let mut out = vec![
        uniform_result(&cli(p, &["cancel", &waiting, "--reason", "not needed"])),
        uniform_result(&cli(p, &["cancel", &waiting, "--json"])),
        unknown_run(&cli(p, &["cancel", &"0".repeat(32)])),
    ];
    let shown = cli(p, &["runs", "show", &waiting, "--json"]);
    let view: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    out.push((0, view["status"].to_string(), String::new()));
    out
}

/// Cancelling, from a client, the run of the `magrathea run` that owns the store: that owner
/// exits as soon as its run settles, and the client still prints the run whole — its
/// definition hash too, as `runs show` gives it. Several times, as the owner's exit races
/// the client's last read.
#[test]
fn cancelling_the_owners_own_run_prints_it_whole_after_the_owner_exits() {
    for _ in 0..4 {
        let p = project();
        let mut owner = run_owner(&p);
        let listed = cli(&p, &["runs", "list", "--workflow", "hold", "--json"]);
        let runs: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
        let id = runs[0]["workflowRunId"].as_str().unwrap().to_owned();
        let out = cli(&p, &["cancel", &id, "--json"]);
        assert_eq!(code(&out), 1, "{}", stderr(&out));
        let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(printed["status"], "CANCELLED", "{printed}");
        assert_eq!(owner.wait(), Some(1), "the owner's run was cancelled");
        let shown = cli(&p, &["runs", "show", &id, "--json"]);
        let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert!(shown["definitionHash"].is_string(), "{shown}");
        assert_eq!(
            printed["definitionHash"], shown["definitionHash"],
            "{printed}"
        );
    }
}

#[test]
fn cancel_ends_a_waiting_run_cancelled_alone_and_through_an_owner_alike() {
    let alone = cancels(&project());
    let (status, exits) = (&alone[3].1, [alone[0].0, alone[1].0, alone[2].0]);
    assert_eq!(status, "\"CANCELLED\"", "{alone:?}");
    assert_eq!(
        exits,
        [1, 1, 1],
        "CANCELLED exits 1; an unknown run too: {alone:?}"
    );
    assert!(alone[0].1.contains("CANCELLED"), "{alone:?}");
    assert!(alone[1].2.contains("had already ended"), "{alone:?}");
    assert!(
        alone[2]
            .2
            .starts_with("error: [MAG-RNN] run <id> not found in project acme/shop"),
        "{alone:?}"
    );

    let p = project();
    let _owner = serve_owner(&p);
    assert_eq!(cancels(&p), alone, "through a serve owner");
    let p = project();
    let _owner = run_owner(&p);
    assert_eq!(cancels(&p), alone, "through a run that owns the store");
}
