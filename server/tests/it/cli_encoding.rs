//! A document that is not UTF-8 text is reported like every other error of `validate`, at the
//! line and column of its first byte that is not, and `run` names where too.

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

    let run = p.cli(&["run", "latin"]);
    assert_eq!(code(&run), 2, "{}", stderr(&run));
    assert!(
        stderr(&run).lines().any(|l| l.ends_with(
            "_vance/workflows/latin.yaml:3:36: [MAG-Y001] the file is not UTF-8 text (byte 0xE9): \
             expected a UTF-8 document; save the file as UTF-8"
        )),
        "{}",
        stderr(&run)
    );
}
