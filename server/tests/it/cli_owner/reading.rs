//! Reading commands print the same through an owner as without one.

use super::*;

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
fn a_command_whose_owner_is_stopped_says_so_instead_of_waiting_for_ever() {
    let p = project();
    let owner = serve_owner(&p);
    // Stopped (SIGSTOP), the owner still accepts connections but answers nothing.
    owner.signal("STOP");
    let out = cli(&p, &["runs", "list"]);
    owner.signal("CONT");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[MAG-CS001]") && stderr(&out).contains("did not answer within 30 s"),
        "{}",
        stderr(&out)
    );
}

/// Reading commands, starts and answers, many at once on one store: each short-lived command
/// owns the store for a moment and the others ask it. None fails because the owner it asked
/// was leaving: it asks the next one, or opens the store itself, and an owner whose client
/// followed a run to its end stays for the client's last question.
#[test]
fn commands_racing_for_a_store_never_fail_as_its_owner_changes_hands() {
    let p = project();
    two_runs(&p);
    let gates: Vec<String> = (0..8)
        .map(|_| {
            let waiting = cli(&p, &["run", "review", "--json"]);
            assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));
            run_id(&waiting)
        })
        .collect();
    let items: Vec<String> = json_of(&cli(&p, &["inbox", "list", "--json"]))
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(items.len(), 1 + gates.len());
    let failures = std::sync::Mutex::new(Vec::new());
    // Runs `args`, keeping what a failure said; 3 is a run waiting on its gate.
    let attempt = |args: &[&str]| {
        let out = cli(&p, args);
        if ![0, 3].contains(&code(&out)) {
            let said = format!("{args:?}: {}", stderr(&out));
            failures.lock().unwrap().push(said);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| (0..30).for_each(|_| attempt(&["runs", "list", "--json"])));
        }
        s.spawn(|| (0..15).for_each(|_| attempt(&["run", "echo", "--json"])));
        s.spawn(|| {
            for item in &items {
                attempt(&["inbox", "answer", item, "--approve"]);
            }
        });
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} failed: {failures:#?}",
        failures.len()
    );
    let runs = cli(&p, &["runs", "list", "--json"]);
    let listed = serde_json::from_str::<serde_json::Value>(&stdout(&runs)).unwrap();
    assert_eq!(
        listed.as_array().unwrap().len(),
        2 + 8 + 15,
        "each start made one run"
    );
    let pending = json_of(&cli(&p, &["inbox", "list", "--json"]));
    assert_eq!(
        pending,
        serde_json::json!([]),
        "every gate was answered once"
    );
}

fn json_of(out: &Output) -> serde_json::Value {
    serde_json::from_str(&stdout(out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(out)))
}
