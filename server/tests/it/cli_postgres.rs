//! `--store postgres://…`: the `magrathea` commands on a PostgreSQL database (a throwaway
//! cluster from the system's packages), the same as on the embedded file.

use crate::cli_common;

use std::sync::OnceLock;

use cli_common::{Project, code, json, stderr, stdout};
use magrathea_postgres::testing::TestCluster;

fn cluster() -> &'static TestCluster {
    static CLUSTER: OnceLock<TestCluster> = OnceLock::new();
    CLUSTER.get_or_init(TestCluster::start)
}

const GREET: &str = "\
start: greet
states:
  greet:
    type: condition_task
    transitions:
      - else: done
  done:
    type: terminal
    result: \"hello ${params.who}\"
parameters:
  who: { type: string, default: world }
";

const REVIEW: &str = "\
start: review
states:
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: \"Ship it?\" }
    on:
      approved: done
      rejected: nope
  done: { type: terminal, result: shipped }
  nope: { type: terminal, outcome: failure }
";

#[test]
fn run_runs_and_journal_work_on_a_postgres_store() {
    let url = cluster().create_database();
    let p = Project::new();
    p.workflow("greet", GREET);
    let out = p.cli(&[
        "run", "greet", "--store", &url, "--param", "who=pg", "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "DONE", "{run}");
    assert_eq!(run["result"], "hello pg");
    let id = run["workflowRunId"].as_str().unwrap().to_owned();

    // Nothing went to the project's default file store.
    assert!(!p.store().join("journal.redb").exists());

    let list = json(&p.cli(&["runs", "list", "--store", &url, "--json"]));
    assert_eq!(list[0]["workflowRunId"], id.as_str(), "{list}");
    let show = json(&p.cli(&["runs", "show", &id, "--store", &url, "--json"]));
    assert_eq!(show["result"], "hello pg");
    let journal = p.cli(&["journal", &id, "--store", &url]);
    assert_eq!(code(&journal), 0, "{}", stderr(&journal));
    assert!(
        stdout(&journal).contains("StartRecord"),
        "{}",
        stdout(&journal)
    );
}

#[test]
fn a_gate_waits_in_postgres_and_is_answered_by_another_process() {
    let url = cluster().create_database();
    let p = Project::new();
    p.workflow("review", REVIEW);
    let out = p.cli(&["run", "review", "--store", &url, "--json"]);
    assert_eq!(code(&out), 3, "waits on its gate: {}", stderr(&out));
    let id = json(&out)["workflowRunId"].as_str().unwrap().to_owned();

    let inbox = json(&p.cli(&["inbox", "list", "--store", &url, "--json"]));
    let item = inbox[0]["id"].as_str().unwrap().to_owned();
    let answered = p.cli(&["inbox", "answer", &item, "--approve", "--store", &url]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    let show = json(&p.cli(&["runs", "show", &id, "--store", &url, "--json"]));
    assert_eq!(show["status"], "DONE", "{show}");
    assert_eq!(show["result"], "shipped");
}

#[test]
fn an_unreachable_database_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = Project::new();
    p.workflow("greet", GREET);
    let url = format!("postgres://me:hunter2@127.0.0.1:{port}/db");
    let out = p.cli(&["run", "greet", "--store", &url]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("[MAG-ST001]"), "{err}");
    assert!(
        err.contains(&format!("postgres://me:***@127.0.0.1:{port}/db")),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn cancel_ends_a_waiting_run_on_a_postgres_store() {
    let url = cluster().create_database();
    let p = Project::new();
    p.workflow("review", REVIEW);
    let out = p.cli(&["run", "review", "--store", &url, "--json"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let id = json(&out)["workflowRunId"].as_str().unwrap().to_owned();
    let cancelled = p.cli(&["cancel", &id, "--store", &url, "--json"]);
    assert_eq!(
        code(&cancelled),
        1,
        "a CANCELLED run exits 1: {}",
        stderr(&cancelled)
    );
    assert_eq!(json(&cancelled)["status"], "CANCELLED");
    let show = json(&p.cli(&["runs", "show", &id, "--store", &url, "--json"]));
    assert_eq!(show["status"], "CANCELLED", "{show}");
}

const LONG: &str = "\
start: work
states:
  work:
    type: shell_task
    run: \"sleep 60\"
    dirName: workspace
    on: { success: done }
    catch: { business_error: done, technical_error: done, timeout: done }
  done: { type: terminal, result: finished }
";

/// Lets the project's tenant run shell steps, starts the command `args` (a `run` on the
/// database), and kills it once its run is RUNNING (its step on record) while it holds the
/// run's lease; the run's id.
fn killed_while_running(p: &Project, args: &[&str]) -> String {
    std::fs::create_dir_all(p.root.join("acme/_tenant/_vance")).unwrap();
    std::fs::write(
        p.root.join("acme/_tenant/_vance/settings.yaml"),
        "execution: { shellTask: true }\n",
    )
    .unwrap();
    let store = args[args.iter().position(|a| *a == "--store").unwrap() + 1];
    let mut run = p
        .command(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let id = loop {
        let list = json(&p.cli(&["runs", "list", "--store", store, "--json"]));
        if list[0]["status"] == "RUNNING" {
            break list[0]["workflowRunId"].as_str().unwrap().to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "{list}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::thread::sleep(std::time::Duration::from_millis(300));
    run.kill().unwrap();
    run.wait().unwrap();
    id
}

/// A run whose `magrathea run` was killed keeps its lease for the grace period: `resume`
/// says it waits for that, instead of waiting without a word.
#[test]
fn resume_says_it_waits_for_the_lease_of_a_run_a_killed_command_held() {
    use std::io::{BufRead, BufReader};
    let url = cluster().create_database();
    let p = Project::new();
    p.workflow("long", LONG);
    killed_while_running(&p, &["run", "long", "--store", &url]);

    let mut resume = p
        .command(&["resume", "--store", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    for line in BufReader::new(resume.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        said.push_str(&line);
        said.push('\n');
        if line.contains("another worker holds its lease") {
            break;
        }
    }
    let _ = resume.kill();
    let _ = resume.wait();
    assert!(
        said.contains("another worker holds its lease") && said.contains("its lease expires"),
        "{said}"
    );
}

const SHORT: &str = "\
start: work
states:
  work:
    type: shell_task
    run: \"sleep 2\"
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: finished }
";

/// `--lease-grace` is every command's: a `magrathea run` killed while its lease was two
/// seconds long leaves its run (and its project's shell lane) to the next process two seconds
/// on, not after the default five minutes; `resume` then carries the run to its end.
#[test]
fn a_killed_command_s_short_lease_frees_its_run_for_the_next_command() {
    let url = cluster().create_database();
    let p = Project::new();
    p.workflow("short", SHORT);
    let id = killed_while_running(&p, &["run", "short", "--store", &url, "--lease-grace", "2"]);

    // Well inside the default grace of 300 s.
    let resumed = p.cli_within(
        &["resume", "--store", &url],
        std::time::Duration::from_secs(120),
    );
    assert_eq!(code(&resumed), 0, "{}", stderr(&resumed));
    let show = json(&p.cli(&["runs", "show", &id, "--store", &url, "--json"]));
    assert_eq!(
        (show["status"].clone(), show["result"].clone()),
        (serde_json::json!("DONE"), serde_json::json!("finished")),
        "{show}"
    );
}

const NAP: &str = "\
start: nap
states:
  nap: { type: timer_task, duration: 4s, on: { fired: done } }
  done: { type: terminal, result: rested }
";

/// A database that refuses connections for a while: `magrathea run` says so and waits for it
/// (up to 30 s), then carries the run on to its end, instead of exiting at the first failed
/// read (docs/serving.md, "Health").
#[test]
fn run_waits_for_a_database_that_refuses_connections_for_a_while() {
    let url = cluster().create_database();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let p = Project::new();
    p.workflow("nap", NAP);
    let mut run = p
        .command(&["run", "nap", "--store", &url, "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = Said::of(&mut run);
    said.wait_for("state nap");
    refuse_connections(&database, true);
    said.wait_for("waits for it");
    refuse_connections(&database, false);
    let out = run.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said.text);
    let view: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(view["status"], "DONE", "{view}");
    assert_eq!(view["result"], "rested");
}

/// `magrathea resume` waits for a database that refuses connections for a while as `run`
/// does (docs/serving.md, "Health"), instead of exiting at the first failed read with the
/// runs it was driving left half-way.
#[test]
fn resume_waits_for_a_database_that_refuses_connections_for_a_while() {
    let url = cluster().create_database();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let p = Project::new();
    p.workflow("short", SHORT);
    let id = killed_while_running(&p, &["run", "short", "--store", &url, "--lease-grace", "1"]);

    let mut resume = p
        .command(&["resume", "--store", &url])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = Said::of(&mut resume);
    said.wait_for("resuming 1 run(s)");
    refuse_connections(&database, true);
    said.wait_for("waits for it");
    refuse_connections(&database, false);
    let status = resume.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", said.text);
    let show = json(&p.cli(&["runs", "show", &id, "--store", &url, "--json"]));
    assert_eq!(
        (show["status"].clone(), show["result"].clone()),
        (serde_json::json!("DONE"), serde_json::json!("finished")),
        "{show}"
    );
}

/// Makes `database` refuse connections (and ends those it has), or take them again.
fn refuse_connections(database: &str, refuse: bool) {
    if refuse {
        cluster().psql(&format!(
            "ALTER DATABASE {database} ALLOW_CONNECTIONS false; \
             SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = '{database}' AND pid <> pg_backend_pid();"
        ));
    } else {
        cluster().psql(&format!("ALTER DATABASE {database} ALLOW_CONNECTIONS true"));
    }
}

/// What a command says on stderr, read line by line as it goes.
struct Said {
    lines: std::sync::mpsc::Receiver<String>,
    text: String,
}

impl Said {
    /// Reads the stderr of `child` (spawned with it piped) on a thread of its own.
    fn of(child: &mut std::process::Child) -> Self {
        use std::io::{BufRead, BufReader};
        let (tx, lines) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let _ = tx.send(line.unwrap());
            }
        });
        Self {
            lines,
            text: String::new(),
        }
    }

    /// Waits until the command has said `what`; fails the test after 30 s without a line.
    fn wait_for(&mut self, what: &str) {
        while !self.text.contains(what) {
            let line = match self.lines.recv_timeout(std::time::Duration::from_secs(30)) {
                Ok(line) => line,
                Err(e) => panic!("no {what:?} ({e}) in: {}", self.text),
            };
            self.text.push_str(&line);
            self.text.push('\n');
        }
    }
}
