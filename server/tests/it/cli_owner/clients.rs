//! `run` and `inbox answer` as clients of an owner: the same output and exit codes as
//! without one.

use super::*;

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

/// A run a command starts through a server's control socket is one the server started: its
/// metrics count it (`trigger="cli"`), so runs started and finished add up.
#[test]
fn a_run_started_through_a_serve_owner_is_counted_in_its_metrics() {
    let p = project();
    let mut cmd = serve_command(&p.root);
    cmd.arg("--store").arg(p.store());
    let mut server = serve_child::ServeChild::spawn(cmd);
    wait_for("the server's control socket", || owner_answers(&socket(&p)));
    let out = cli(&p, &["run", "echo"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let text = rt.block_on(async {
        reqwest::get(format!("{}/metrics", server.base))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    server.stop();
    for needle in [
        "magrathea_runs_started_total{trigger=\"cli\"} 1",
        "magrathea_runs_finished_total{status=\"DONE\"} 1",
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

/// `serve` started while a `run` holds the store waits for it to let go (as the commands do)
/// instead of failing at once on the lock.
#[test]
fn serve_waits_for_a_command_that_holds_the_store() {
    let p = project();
    let mut owner = run_owner(&p);
    let mut server = serve_on_the_store(&p);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        server.is_running(),
        "serve gave up while the store was held"
    );
    std::fs::write(p.dir.join("release"), "").unwrap();
    assert_eq!(owner.wait(), Some(0));
    wait_for("the server's control socket", || owner_answers(&socket(&p)));
    assert!(server.is_running());
}

/// A signal while `serve` waits for the store ends the wait: it opens nothing (a run a
/// killed command left is not restarted only to be interrupted) and exits 0.
#[test]
fn a_signal_while_serve_waits_for_the_store_stops_it_without_opening_it() {
    let p = project();
    let owner = run_owner(&p);
    let mut server = serve_on_the_store(&p);
    std::thread::sleep(Duration::from_millis(500));
    server.signal("HUP");
    assert_eq!(server.wait(), Some(0));
    assert!(
        owner_answers(&socket(&p)),
        "the owner still serves the store"
    );
    drop(owner);
}

/// `magrathea serve` on `p`'s store, started at once (it may wait for the store).
fn serve_on_the_store(p: &Project) -> Guard {
    let mut cmd = serve_command(&p.root);
    cmd.arg("--store")
        .arg(p.store())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Guard(cmd.spawn().unwrap())
}
