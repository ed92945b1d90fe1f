//! A client that follows a run: Ctrl-C, an owner that dies, an owner that drives its
//! clients' runs to their end before it exits.

use super::*;

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
    // The control key's place is taken by a directory: the key cannot be written.
    std::fs::create_dir_all(p.store().join("control.key/taken")).unwrap();
    let out = cli(&p, &["run", "echo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stderr(&out).contains("[MAG-CS003]"), "{}", stderr(&out));
    assert!(stdout(&out).contains("DONE"), "{}", stdout(&out));
    assert!(!socket(&p).exists());
}

#[test]
fn a_store_deeper_than_a_socket_address_holds_still_has_an_owner_to_ask() {
    let p = project();
    // Longer than a Unix socket's path may be (108 bytes).
    let store = p.root.join("s".repeat(60)).join("t".repeat(60));
    let with_store = |args: &[&str]| {
        let mut cmd = p.command(args);
        cmd.arg("--store").arg(&store);
        cmd
    };
    let _ = std::fs::remove_file(p.dir.join("holding"));
    let mut owner = with_store(&["run", "hold"]);
    owner.stdout(Stdio::null()).stderr(Stdio::null());
    let owner = Guard(owner.spawn().unwrap());
    wait_for("the owner's shell step", || p.dir.join("holding").exists());
    let socket = store.join("control.sock");
    wait_for("the owner's control socket", || socket.exists());

    // A client reaches the owner: it lists the owner's run, which is still running.
    let list = finish(with_store(&["runs", "list", "--json"]));
    assert_eq!(code(&list), 0, "{}", stderr(&list));
    assert!(!stderr(&list).contains("[MAG-CS"), "{}", stderr(&list));
    assert!(stdout(&list).contains("\"RUNNING\""), "{}", stdout(&list));
    drop(owner);
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

/// `resume` while a `magrathea run` owns the store: that owner drives only its own run, so
/// `resume` waits for it to let the store go and then resumes the run a killed command left,
/// rather than saying the owner drives it and leaving it stranded.
#[test]
fn resume_waits_for_an_owner_that_drives_only_its_own_runs_then_resumes_the_rest() {
    let p = project();
    // A run whose command was killed: nobody drives it.
    let mut stranded = p.command(&["run", "hold2"]);
    stranded.stdout(Stdio::null()).stderr(Stdio::null());
    let stranded = Guard(stranded.spawn().unwrap());
    wait_for("the stranded run's step", || {
        p.dir.join("holding2").exists()
    });
    drop(stranded); // SIGKILL
    let owner = run_owner(&p);

    let said = p.root.join("resume.err");
    let mut resume = p.command(&["resume", "--json"]);
    resume
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&said).unwrap());
    let mut resume = Guard(resume.spawn().unwrap());
    wait_for("resume to say it waits", || {
        std::fs::read_to_string(&said).is_ok_and(|t| t.contains("drives only its own runs"))
    });
    std::fs::remove_file(p.dir.join("holding2")).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !p.dir.join("holding2").exists(),
        "the stranded run's step runs again only once the owner let the store go"
    );
    // The owner's run ends; it lets the store go, and `resume` takes it.
    std::fs::write(p.dir.join("release"), "").unwrap();
    let mut owner = owner;
    assert_eq!(owner.wait(), Some(0));
    wait_for("the stranded run's step again", || {
        p.dir.join("holding2").exists()
    });
    std::fs::write(p.dir.join("release2"), "").unwrap();
    assert_eq!(
        resume.wait(),
        Some(0),
        "{}",
        std::fs::read_to_string(&said).unwrap()
    );
    let runs = cli(&p, &["runs", "list", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&stdout(&runs)).unwrap();
    let hold2 = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workflowName"] == "hold2")
        .unwrap();
    assert_eq!(hold2["status"], "DONE", "{hold2}");
}
