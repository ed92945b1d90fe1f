//! A store the command cannot read is an error, never an empty store: a file where the store's
//! directory should be; and a store whose `journal.redb` is gone while its journal log is not
//! is opened, not taken for no store. A store file that its creation left all zeros (a full
//! disk) is created again; one that is damaged is named by `serve` as by the other commands.

use crate::cli_common;
use cli_common::{Project, code, stderr, stdout};

const HELLO: &str = "start: done\nstates:\n  done: { type: terminal, result: hi }\n";

#[test]
fn a_store_that_is_a_file_is_named_as_such_by_every_command() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let file = p.root.join("afile");
    std::fs::write(&file, "not a store").unwrap();
    let store = file.to_str().unwrap();
    for args in [
        vec!["runs", "list"],
        vec!["inbox", "list"],
        vec!["journal", "0123456789abcdef0123456789abcdef"],
        vec!["resume"],
        vec!["run", "hello"],
    ] {
        let mut all = vec!["--store", store];
        all.extend(&args);
        let o = p.cli(&all);
        assert_eq!(code(&o), 1, "{args:?}: {}{}", stdout(&o), stderr(&o));
        assert!(
            stderr(&o).contains("[MAG-SV001] the store")
                && stderr(&o).contains("is a file: pass the store's directory"),
            "{args:?}: {}",
            stderr(&o)
        );
        assert!(!stdout(&o).contains("no runs"), "{args:?}: {}", stdout(&o));
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "not a store");
}

#[test]
fn a_store_whose_redb_file_is_gone_but_whose_log_is_not_is_read_from_the_log() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let o = p.cli(&["run", "hello", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let run = cli_common::json(&o)["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let log = p.store().join("journal.redb-wal.0");
    assert!(log.exists(), "the journal log is beside the redb file");
    std::fs::remove_file(p.store().join("journal.redb")).unwrap();

    // Not "no runs": the store is opened, and what its log holds is there.
    let o = p.cli(&["runs", "list"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains(&run), "{}", stdout(&o));
}

#[test]
fn a_store_url_of_another_database_is_refused_not_made_a_directory() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let o = p.cli(&["run", "hello", "--store", "mysql://db.example/x"]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("`mysql://` is not a store"),
        "{}",
        stderr(&o)
    );
    assert!(
        !p.dir.join("mysql:").exists(),
        "a directory was made of the URL"
    );
}

#[test]
fn a_mistyped_postgres_url_is_refused_not_made_a_directory() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    for arg in [
        "postgres:/db.example/x",
        "postgresql:db",
        "Postgres:/x",
        " postgres://db.example/x",
        "postgres ://db.example/x",
    ] {
        for args in [
            vec!["run", "hello", "--store", arg],
            vec!["runs", "list", "--store", arg],
        ] {
            let o = p.cli(&args);
            assert_eq!(code(&o), 2, "{args:?}: {}", stderr(&o));
            assert!(
                stderr(&o).contains("is not a PostgreSQL URL: expected postgres://"),
                "{args:?}: {}",
                stderr(&o)
            );
        }
        let made = arg.split(':').next().unwrap();
        assert!(!p.dir.join(arg).exists(), "{arg}: a directory was made");
        assert!(
            !p.dir.join(format!("{made}:")).exists(),
            "{arg}: a directory was made"
        );
    }
}

/// A full disk failed the header's write of a new store file and left it all zeros: the next
/// command, with room again, creates the store afresh instead of refusing the file forever.
#[test]
fn a_store_file_a_full_disk_left_all_zeros_is_created_again() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    std::fs::create_dir_all(p.store()).unwrap();
    std::fs::write(p.store().join("journal.redb"), vec![0u8; 73_728]).unwrap();
    let o = p.cli(&["run", "hello"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stdout(&o).contains("DONE"), "{}", stdout(&o));
}

/// `serve` names the store it cannot open, as `run` does: which file to look at.
#[test]
fn serve_names_the_store_it_cannot_open() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let store = p.root.join("elsewhere");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("journal.redb"), "not a database, and not empty").unwrap();
    let o = p.cli_within(
        &[
            "serve",
            "--insecure-no-auth",
            "--addr",
            "127.0.0.1:0",
            "--store",
            store.to_str().unwrap(),
        ],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.contains("[MAG-SV002] cannot open the store")
            && said.contains(store.join("journal.redb").to_str().unwrap()),
        "{said}"
    );
}

/// A timeout of 0 seconds, or no claim at all, is refused when `serve` parses its flags (exit
/// 2), as a zero bound of connections is: a server taking it would leave requests unanswered.
#[test]
fn serve_refuses_zero_timeouts_and_claim_attempts() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    for flag in [
        "--header-read-timeout",
        "--body-read-timeout",
        "--idle-timeout",
        "--send-timeout",
        "--max-claim-attempts",
        "--max-connections",
    ] {
        let o = p.cli_within(
            &[
                "serve",
                "--insecure-no-auth",
                "--addr",
                "127.0.0.1:0",
                flag,
                "0",
            ],
            std::time::Duration::from_secs(60),
        );
        assert_eq!(code(&o), 2, "{flag} 0: {}", stderr(&o));
        assert!(stderr(&o).contains(flag), "{flag}: {}", stderr(&o));
    }
}

/// A server that cannot serve its control socket at start (here its key cannot be put in place;
/// on a full disk, nothing can be written) tries again until it can: once it has, the other
/// commands on its store work through it, with no restart.
#[test]
fn serve_serves_its_control_socket_once_it_can() {
    use crate::serve_child::{ServeChild, serve_command};
    use std::time::{Duration, Instant};
    let p = Project::new();
    p.workflow("hello", HELLO);
    let store = p.store();
    // A directory with something in it where the key goes: renaming the key there fails.
    std::fs::create_dir_all(store.join("control.key/in-the-way")).unwrap();
    let log = p.root.join("serve.log");
    let mut cmd = serve_command(&p.root);
    cmd.arg("--store").arg(&store).arg("--insecure-no-auth");
    let _server = ServeChild::spawn_logging_to(cmd, &log);
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(
        said.contains("[MAG-CS003]") && said.contains("trying again every 5 s"),
        "{said}"
    );
    let out = p.cli(&["--store", store.to_str().unwrap(), "runs", "list"]);
    assert_eq!(
        code(&out),
        1,
        "no owner takes commands yet: {}",
        stdout(&out)
    );
    std::fs::remove_dir_all(store.join("control.key")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !store.join("control.sock").exists() {
        assert!(
            Instant::now() < deadline,
            "the control socket was never served"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = p.cli(&["--store", store.to_str().unwrap(), "run", "hello", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
