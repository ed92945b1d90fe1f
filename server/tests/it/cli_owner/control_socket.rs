//! The owner's control socket: left behind by a killed owner, for the store's owner only,
//! keyed, and closed to malformed or oversized requests.

use super::*;

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
    // So are the store's other files, the served marker among them.
    for file in ["served", "journal.redb"] {
        let mode = std::fs::metadata(p.store().join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}: mode {mode:o}");
    }
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
