//! `magrathea validate` checks scheduler documents, `_vance/scheduler/*.yaml`, next to the
//! workflows: every one of the project without names, or one by its path.

use crate::cli_common;
use cli_common::{Project, code, stderr, stdout};

const HELLO: &str = "start: done\nstates:\n  done:\n    type: terminal\n";

const NIGHTLY: &str = "\
description: \"Start Daily Audit Workflow at 06:00\"
cron: \"0 0 6 * * *\"
workflow: hello
timezone: Europe/Berlin
";

const BROKEN: &str = "\
cron: \"0 61 * * *\"
workflow: hello
recipe: audit
timezone: Mars/Olympus
";

fn schedule(p: &Project, name: &str, yaml: &str) {
    let dir = p.dir.join("_vance/scheduler");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.yaml")), yaml).unwrap();
}

#[test]
fn validate_without_names_checks_every_schedule_of_the_project() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    schedule(&p, "nightly", NIGHTLY);

    let ok = p.cli(&["validate"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert_eq!(
        stdout(&ok),
        "ok: _vance/workflows/hello.yaml\nok: _vance/scheduler/nightly.yaml\n"
    );

    schedule(&p, "broken", BROKEN);
    let bad = p.cli(&["validate"]);
    assert_eq!(code(&bad), 1);
    assert!(stdout(&bad).contains("ok: _vance/scheduler/nightly.yaml"));
    let err = stderr(&bad);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "_vance/scheduler/broken.yaml:1:10: [MAG-SC006] invalid cron expression '0 61 * * *': \
             the hour field '61' is refused: a number out of range; \
             expected 0-23, a list (1,2), a range (1-5), * or a step (*/5, steps from 1)",
            "_vance/scheduler/broken.yaml:3:1: [MAG-SC001] 'recipe' and 'workflow' are mutually \
             exclusive: expected only 'workflow: <name>'",
            "_vance/scheduler/broken.yaml:4:11: [MAG-SC007] unknown time zone 'Mars/Olympus': \
             expected an IANA name such as 'Europe/Berlin', 'America/New_York' or 'UTC'",
        ],
        "{err}"
    );
    assert!(err.ends_with("1 of 3 document(s) invalid\n"), "{err}");
}

#[test]
fn validate_reads_a_path_under_the_scheduler_directory_as_a_schedule() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    schedule(&p, "nightly", NIGHTLY);
    schedule(&p, "broken", BROKEN);

    let one = p.cli(&["validate", "_vance/scheduler/nightly.yaml"]);
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    assert_eq!(stdout(&one), "ok: _vance/scheduler/nightly.yaml\n");

    let bad = p.cli(&["validate", "./_vance/scheduler/broken.yaml"]);
    assert_eq!(code(&bad), 1);
    assert!(
        stderr(&bad).contains("./_vance/scheduler/broken.yaml:3:1: [MAG-SC001]"),
        "{}",
        stderr(&bad)
    );

    // The same text elsewhere is a workflow, and not a valid one.
    std::fs::write(p.dir.join("nightly.yaml"), NIGHTLY).unwrap();
    let elsewhere = p.cli(&["validate", "nightly.yaml"]);
    assert_eq!(code(&elsewhere), 1);
    assert!(
        stderr(&elsewhere).contains("[MAG-Y005] unknown field 'cron'"),
        "{}",
        stderr(&elsewhere)
    );
}

#[test]
fn validate_reports_an_unreadable_schedule() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let missing = p.cli(&["validate", "_vance/scheduler/none.yaml"]);
    assert_eq!(code(&missing), 1);
    assert!(
        stderr(&missing).contains("error: [MAG-DOC003] could not read _vance/scheduler/none.yaml"),
        "{}",
        stderr(&missing)
    );
}

/// A one-shot schedule whose `at:` has passed never fires: a warning at its value (and a
/// failure under `--strict`); one to come is fine.
#[test]
fn a_one_shot_schedule_in_the_past_is_a_warning() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    schedule(
        &p,
        "once",
        "workflow: hello\nat: \"2020-01-01T00:00:00Z\"\n",
    );
    schedule(
        &p,
        "later",
        "workflow: hello\nat: \"2999-01-01T00:00:00Z\"\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "a warning: {}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "_vance/scheduler/once.yaml:2:5: warning: [MAG-SC010] 'at' is \
             2020-01-01T00:00:00Z, in the past: this one-shot schedule never fires"
        ),
        "{err}"
    );
    assert!(!err.contains("later.yaml"), "{err}");
    assert_eq!(code(&p.cli(&["validate", "--strict"])), 1);
}

/// A schedule with an error and a workflow the project lacks is told both in one pass.
#[test]
fn an_invalid_schedule_of_a_missing_workflow_is_told_both() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    schedule(&p, "daily", "cron: \"0 99 * * *\"\nworkflow: helo\n");
    let out = p.cli(&["validate", "_vance/scheduler/daily.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("[MAG-SC006]"), "{err}");
    assert!(
        err.contains("_vance/scheduler/daily.yaml:2:11: warning: [MAG-YA005] workflow 'helo'"),
        "{err}"
    );
    assert!(err.contains("hello"), "the close name is suggested: {err}");
}
