//! A document that is not UTF-8 text, or longer than the server reads of a file, is reported
//! like every other error of `validate`, at the line and column of its first byte that is not
//! (or at its start), and `run` says the same. What a document says reaches the terminal
//! without acting on it.

use crate::cli_common;

use cli_common::{Project, code, stderr};

#[test]
fn a_document_that_is_not_utf8_is_reported_at_its_first_bad_byte() {
    let p = Project::new();
    let dir = p.dir.join("_vance/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    // Latin-1 `é` on line 3, and a UTF-16 document with its byte-order mark.
    std::fs::write(
        dir.join("latin.yaml"),
        b"start: a\nstates:\n  a: { type: terminal, result: \"caf\xe9\" }\n",
    )
    .unwrap();
    std::fs::write(dir.join("wide.yaml"), b"\xff\xfes\x00t\x00").unwrap();

    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l.starts_with(
            "_vance/workflows/latin.yaml:3:36: [MAG-Y001] the file is not UTF-8 text (byte 0xE9)"
        )),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l
                .starts_with("_vance/workflows/wide.yaml:1:1: [MAG-Y001] the file is UTF-16 text")),
        "{err}"
    );

    // Named rather than given by path: the same diagnostic.
    let named = p.cli(&["validate", "latin"]);
    assert_eq!(code(&named), 1, "{}", stderr(&named));
    assert!(
        stderr(&named).lines().any(|l| l.starts_with(
            "_vance/workflows/latin.yaml:3:36: [MAG-Y001] the file is not UTF-8 text (byte 0xE9)"
        )),
        "{}",
        stderr(&named)
    );

    for command in ["run", "graph"] {
        let out = p.cli(&[command, "latin"]);
        assert_eq!(code(&out), 2, "{command}: {}", stderr(&out));
        assert!(
            stderr(&out).lines().any(|l| l
                == "_vance/workflows/latin.yaml:3:36: [MAG-Y001] the file is not UTF-8 text (byte \
                    0xE9): expected a UTF-8 document; save the file as UTF-8"),
            "{command}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn a_document_longer_than_the_server_reads_is_located_like_any_invalid_one() {
    let p = Project::new();
    let dir = p.dir.join("_vance/workflows");
    std::fs::create_dir_all(&dir).unwrap();
    let file = std::fs::File::create(dir.join("huge.yaml")).unwrap();
    // Sparse: 17 MiB of length, no 17 MiB written.
    file.set_len(17 << 20).unwrap();
    let expected = "_vance/workflows/huge.yaml:1:1: [MAG-Y002] the document is longer than 16 MiB, \
                    the most the server reads of a file of a project: a workflow document has at \
                    most 1 MiB";

    let named = p.cli(&["validate", "huge"]);
    assert_eq!(code(&named), 1, "{}", stderr(&named));
    assert!(
        stderr(&named).lines().any(|l| l == expected),
        "{}",
        stderr(&named)
    );

    let run = p.cli(&["run", "huge"]);
    assert_eq!(code(&run), 2, "{}", stderr(&run));
    let err = stderr(&run);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            expected,
            "error: workflow `huge` is invalid; nothing was started"
        ],
        "{err}"
    );
}

/// A state named with an escape sequence, a mark that reverses text and an invisible space:
/// the error names it with those characters escaped, so the terminal shows what the
/// document holds instead of recolouring itself or printing the name backwards.
#[test]
fn control_and_invisible_characters_of_a_document_are_printed_escaped() {
    let p = Project::new();
    p.workflow(
        "odd",
        "start: \"a\\e[31mRED\"\nstates:\n  \"a\\e[31mRED\":\n    type: condition_task\n    \
         transitions:\n      - else: \"done\\u200b\\u202e\"\n  done: { type: terminal }\n",
    );
    let o = p.cli(&["validate"]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let said = stderr(&o);
    assert!(
        said.contains("\\u001b[31mRED") && said.contains("done\\u200b\\u202e"),
        "{said}"
    );
    assert!(
        !said.contains(['\u{1b}', '\u{200b}', '\u{202e}']),
        "raw characters reach the terminal: {said:?}"
    );
}

/// `run` and `graph` name a document's mistakes and warnings as `validate` names them:
/// relative to the working directory, so each prints the same line for the same mistake.
#[test]
fn run_and_graph_name_a_documents_diagnostics_as_validate_does() {
    let p = Project::new();
    p.workflow(
        "broken",
        "start: a\nstates:\n  a: { type: terminal, result: \"x\" }\n  b: { type: nowhere }\n",
    );
    let first_error = |args: &[&str]| {
        let out = p.cli_in(&p.dir, args);
        let err = stderr(&out);
        err.lines()
            .find(|l| l.contains("[MAG-Y"))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("{args:?}: {err}"))
    };
    let validated = first_error(&["validate", "broken"]);
    assert!(
        validated.starts_with("_vance/workflows/broken.yaml:4:"),
        "{validated}"
    );
    assert_eq!(first_error(&["run", "broken"]), validated);
    assert_eq!(first_error(&["graph", "broken"]), validated);
}
