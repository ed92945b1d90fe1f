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

/// Reading commands and starts, many at once on one store: each short-lived command owns the
/// store for a moment and the others ask it. None fails because the owner it asked was
/// leaving: it asks the next one, or opens the store itself.
#[test]
fn commands_racing_for_a_store_never_fail_as_its_owner_changes_hands() {
    let p = project();
    two_runs(&p);
    let failures = std::sync::Mutex::new(Vec::new());
    // Runs `args` `times` times, keeping what each failure said.
    let repeat = |args: &'static [&'static str], times: usize| {
        for _ in 0..times {
            let out = cli(&p, args);
            if code(&out) != 0 {
                let said = format!("{args:?}: {}", stderr(&out));
                failures.lock().unwrap().push(said);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| repeat(&["runs", "list", "--json"], 30));
        }
        s.spawn(|| repeat(&["run", "echo", "--json"], 15));
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
        2 + 15,
        "each start made one run"
    );
}
