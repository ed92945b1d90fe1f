//! `magrathea validate` checks the project's other documents as the server reads them: event
//! and hook documents by where they lie, and `_vance/settings.yaml`, whose mistakes would
//! otherwise show only as ignored settings at run time.

use crate::cli_common;
use cli_common::{Project, code, stderr, stdout};

const HELLO: &str = "start: done\nstates:\n  done:\n    type: terminal\n";

/// The reference's own event document (§8.6).
const GITHUB_PR: &str = "\
description: \"GitHub PR Hook → pr-review\"
workflow: pr-review
methods: [POST]
auth:
  tokenSetting: events.github.token
";

fn write(p: &Project, rel: &str, text: &str) {
    let path = p.dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn event_and_hook_documents_are_checked_as_the_server_reads_them() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(&p, "_vance/events/github-pr.yaml", GITHUB_PR);
    let ok = p.cli(&["validate", "_vance/events/github-pr.yaml"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert_eq!(stdout(&ok), "ok: _vance/events/github-pr.yaml\n");

    write(
        &p,
        "_vance/events/typo.yaml",
        "workflow: hello\nsubscribe:\n  event: workflow.run.faild\n",
    );
    write(
        &p,
        "_vance/hooks/notify.yaml",
        "on: workflow.run.failed\nscript: notify.js\nfrobnicate: true\n",
    );
    let bad = p.cli(&["validate"]);
    assert_eq!(code(&bad), 1, "{}", stdout(&bad));
    let out = stdout(&bad);
    assert!(
        out.contains("ok: _vance/workflows/hello.yaml")
            && out.contains("ok: _vance/events/github-pr.yaml"),
        "{out}"
    );
    let err = stderr(&bad);
    assert!(
        err.contains("_vance/events/typo.yaml") && err.contains("workflow.run.failed"),
        "the unknown event, with the one meant: {err}"
    );
    assert!(
        err.contains("_vance/hooks/notify.yaml:3:1:") && err.contains("frobnicate"),
        "the unknown key at its place: {err}"
    );
    assert!(err.contains("2 of 4 document(s) invalid"), "{err}");
}

/// An event document's mistakes past its keys are all said at once, each at its value.
#[test]
fn an_event_documents_mistakes_are_said_together_each_at_its_place() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(
        &p,
        "_vance/events/many.yaml",
        "workflow: \"\"\nmethods: [POST, FETCH]\nwebhook:\n  tokenSetting: webhooks.gh.path\n  \
         maxBodyBytes: 0\nsubscribe:\n  event: workflow.run.faild\n",
    );
    let out = p.cli(&["validate", "_vance/events/many.yaml"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    for expected in [
        "_vance/events/many.yaml:1:11: [MAG-TR005] workflow '' is not a workflow's name",
        "_vance/events/many.yaml:2:17: [MAG-TR005] methods: `FETCH`",
        "_vance/events/many.yaml:5:17: [MAG-WH010] invalid webhook block: maxBodyBytes is 0",
        "_vance/events/many.yaml:7:10: [MAG-HK010] unknown internal event `workflow.run.faild`",
    ] {
        assert!(err.contains(expected), "{expected}: {err}");
    }
}

#[test]
fn settings_that_would_be_ignored_at_run_time_are_errors_at_their_place() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(
        &p,
        "_vance/settings.yaml",
        "defaults:\n  taskTimeoutSeconds: 600\nlanes: { maxConcurrentTasks: 2 }\n",
    );
    let ok = p.cli(&["validate"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
    assert!(
        stdout(&ok).contains("ok: _vance/settings.yaml"),
        "{}",
        stdout(&ok)
    );

    write(
        &p,
        "_vance/settings.yaml",
        "defaults:\n  taskTimeoutSeconds: -5\n",
    );
    let bad = p.cli(&["validate"]);
    assert_eq!(code(&bad), 1);
    assert!(
        stderr(&bad).contains(
            "_vance/settings.yaml:2:23: [MAG-Y026] `defaults.taskTimeoutSeconds` is -5: expected a positive number of seconds"
        ),
        "{}",
        stderr(&bad)
    );

    // Also in a project without workflows yet.
    std::fs::remove_file(p.dir.join("_vance/workflows/hello.yaml")).unwrap();
    let bad = p.cli(&["validate"]);
    assert_eq!(code(&bad), 1, "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains("no workflows in _vance/workflows"),
        "{}",
        stderr(&bad)
    );
    assert!(
        stderr(&bad).contains("_vance/settings.yaml:2:23:"),
        "{}",
        stderr(&bad)
    );

    write(
        &p,
        "_vance/settings.yaml",
        "defaults:\n  taskTimeoutSeconds: 5\nworkspaces: [\n",
    );
    let bad = p.cli(&["validate", "_vance/settings.yaml"]);
    assert_eq!(code(&bad), 1);
    let err = stderr(&bad);
    assert!(
        err.starts_with("_vance/settings.yaml:") && err.contains("[MAG-Y001]"),
        "{err}"
    );
}

#[test]
fn a_default_timeout_above_the_tenant_s_bound_is_an_error_at_its_place() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(
        &p,
        "_vance/settings.yaml",
        "defaults:\n  taskTimeoutSeconds: 90000\n",
    );
    let bad = p.cli(&["validate"]);
    assert_eq!(code(&bad), 1, "{}", stderr(&bad));
    assert!(
        stderr(&bad).contains(
            "_vance/settings.yaml:2:23: [MAG-Y026] `defaults.taskTimeoutSeconds` is 90000: expected at most the tenant's bounds.maxTaskTimeoutSeconds (86400 s)"
        ),
        "{}",
        stderr(&bad)
    );
    // The tenant that raises its bound takes it.
    std::fs::create_dir_all(p.root.join("acme/_tenant/_vance")).unwrap();
    std::fs::write(
        p.root.join("acme/_tenant/_vance/settings.yaml"),
        "bounds: { maxTaskTimeoutSeconds: 100000 }\n",
    )
    .unwrap();
    let ok = p.cli(&["validate"]);
    assert_eq!(code(&ok), 0, "{}", stderr(&ok));
}

/// A schedule of a workflow that is not there is a warning, as a `workflow_task` of one is:
/// each tick would fail to start it.
#[test]
fn a_schedule_of_an_unknown_workflow_is_a_warning_at_its_workflow_name() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(
        &p,
        "_vance/scheduler/nightly.yaml",
        "cron: \"0 6 * * *\"\nworkflow: nope\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "a warning: {}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("_vance/scheduler/nightly.yaml:2:11: warning: [MAG-YA005] workflow 'nope'"),
        "{}",
        stderr(&out)
    );
    assert_eq!(code(&p.cli(&["validate", "--strict"])), 1);
}

/// An event document of a workflow that is not there is a warning too, with the close name
/// meant.
#[test]
fn an_event_of_an_unknown_workflow_is_a_warning_naming_the_close_one() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(&p, "_vance/events/ping.yaml", "workflow: helo\n");
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "a warning: {}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "_vance/events/ping.yaml:1:11: warning: [MAG-YA005] workflow 'helo' is neither the \
             project's nor its tenant's (_vance/workflows/helo.yaml): each request would fail \
             to start it (did you mean 'hello'?)"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(code(&p.cli(&["validate", "--strict"])), 1);
}

/// A document named `.yml` (or `.YAML`) is read by nothing: `validate` says so instead of
/// passing over it, and `--strict` fails on it.
#[test]
fn a_document_the_server_would_not_read_is_a_warning() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(&p, "_vance/workflows/bad.yml", "start: a\n");
    write(
        &p,
        "_vance/scheduler/nightly.YAML",
        "cron: \"0 6 * * *\"\nworkflow: hello\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "warnings: {}", stderr(&out));
    for (path, name) in [
        ("_vance/workflows/bad.yml", "bad"),
        ("_vance/scheduler/nightly.YAML", "nightly"),
    ] {
        assert!(
            stderr(&out).contains(&format!(
                "{path}:1:1: warning: [MAG-Y044] not read: documents are the files ending in \
                 `.yaml` (rename \
                 it `{name}.yaml`)"
            )),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(code(&p.cli(&["validate", "--strict"])), 1);
}

/// A `.yaml` name that is no regular file (a link that leads nowhere, a directory) is no
/// document: `validate` names each, and starting it says what is there instead of suggesting
/// its own name.
#[test]
fn a_yaml_name_that_is_no_file_is_named_by_validate_and_by_run() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let workflows = p.dir.join("_vance/workflows");
    std::os::unix::fs::symlink(p.dir.join("gone.yaml"), workflows.join("dangling.yaml")).unwrap();
    std::fs::create_dir(workflows.join("folder.yaml")).unwrap();
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "warnings: {}", stderr(&out));
    for name in ["dangling", "folder"] {
        assert!(
            stderr(&out).contains(&format!(
                "_vance/workflows/{name}.yaml:1:1: warning: [MAG-DOC003] not read: it is no \
                 regular file"
            )),
            "{}",
            stderr(&out)
        );
    }
    assert_eq!(code(&p.cli(&["validate", "--strict"])), 1);

    let run = p.cli(&["run", "dangling"]);
    assert_eq!(code(&run), 2, "{}", stderr(&run));
    let err = stderr(&run);
    assert!(
        err.contains("dangling.yaml` is there but is no regular file"),
        "{err}"
    );
    assert!(!err.contains("did you mean 'dangling'"), "{err}");
}

/// A hook document's mistakes are all said at once, each at its value, and a script the hook
/// would not find is one of them.
#[test]
fn a_hook_documents_mistakes_are_said_together_and_a_missing_script_is_one() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(
        &p,
        "_vance/hooks/bad.yaml",
        "on: workflow.run.faild\nfilter: \"#state['x']\"\nscript: ../x.js\ntimeoutSeconds: 600\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    for at in [
        "_vance/hooks/bad.yaml:1:5: [MAG-HK010]",
        "_vance/hooks/bad.yaml:2:9: [MAG-HK011]",
        "_vance/hooks/bad.yaml:3:9: [MAG-HK012]",
        "_vance/hooks/bad.yaml:4:17: [MAG-HK013]",
    ] {
        assert!(err.contains(at), "{at} in {err}");
    }

    std::fs::remove_file(p.dir.join("_vance/hooks/bad.yaml")).unwrap();
    write(
        &p,
        "_vance/hooks/notify.yaml",
        "on: workflow.run.failed\nscript: _vance/hooks/notify.js\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains(
            "_vance/hooks/notify.yaml:2:9: [MAG-HK012] hook script `_vance/hooks/notify.js` is \
             not there"
        ),
        "{}",
        stderr(&out)
    );
    write(&p, "_vance/hooks/notify.js", "export default () => {};\n");
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// An event document's misspelt keys are all said at once, each with the key meant.
#[test]
fn an_event_documents_misspelt_keys_are_said_together() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    write(
        &p,
        "_vance/events/typos.yaml",
        "workflo: hello\nmethod: [POST]\nauht: {}\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    for (at, meant) in [
        ("1:1: [MAG-TR005] unknown field `workflo`", "workflow"),
        ("2:1: [MAG-TR005] unknown field `method`", "methods"),
        ("3:1: [MAG-TR005] unknown field `auht`", "auth"),
    ] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("_vance/events/typos.yaml:{at}"))
                    && l.ends_with(&format!("(did you mean '{meant}'?)"))),
            "{at} in {err}"
        );
    }
    // The misspelt `workflow` says it is missing; a document without one is told so.
    assert!(!err.contains("missing field"), "{err}");
    write(&p, "_vance/events/typos.yaml", "methods: [POST]\n");
    let err = stderr(&p.cli(&["validate"]));
    assert!(
        err.contains("_vance/events/typos.yaml:1:1: [MAG-TR005] missing field `workflow`"),
        "{err}"
    );
}

/// A value of a webhook block that does not read (a duration) is placed at the value, not at
/// the block that holds it.
#[test]
fn a_webhook_value_that_does_not_read_is_placed_at_the_value() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let doc = "workflow: hello\nwebhook:\n  tokenSetting: webhooks.gh.path\n  signature:\n    \
               secretSetting: webhooks.gh.secret\n    tolerance: 5 minutes\n";
    write(&p, "_vance/events/gh.yaml", doc);
    let err = stderr(&p.cli(&["validate"]));
    assert!(
        err.lines().any(|l| l.starts_with(
            "_vance/events/gh.yaml:6:16: [MAG-TR005] webhook.signature: invalid duration '5 minutes'"
        )),
        "{err}"
    );
    write(
        &p,
        "_vance/events/gh.yaml",
        &format!("{doc}  dedupe:\n    header: X-Id\n    window: forever\n")
            .replace("5 minutes", "5m"),
    );
    let err = stderr(&p.cli(&["validate"]));
    assert!(
        err.lines().any(|l| l.starts_with(
            "_vance/events/gh.yaml:9:13: [MAG-TR005] webhook.dedupe: invalid duration 'forever'"
        )),
        "{err}"
    );
}

/// A hook document's misspelt keys are said the same way: all at once, each with the key
/// meant, and a required key that is missing is named.
#[test]
fn a_hook_documents_misspelt_keys_are_said_together() {
    let p = Project::new();
    write(
        &p,
        "_vance/hooks/typos.yaml",
        "on: workflow.run.failed\nscirpt: _vance/hooks/x.js\ntimeoutSecond: 5\n",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 1);
    let err = stderr(&out);
    for (at, meant) in [
        ("2:1: [MAG-TR005] unknown field `scirpt`", "script"),
        (
            "3:1: [MAG-TR005] unknown field `timeoutSecond`",
            "timeoutSeconds",
        ),
    ] {
        assert!(
            err.lines()
                .any(|l| l.starts_with(&format!("_vance/hooks/typos.yaml:{at}"))
                    && l.ends_with(&format!("(did you mean '{meant}'?)"))),
            "{at} in {err}"
        );
    }
    assert!(!err.contains("missing field"), "{err}");
    write(&p, "_vance/hooks/typos.yaml", "script: _vance/hooks/x.js\n");
    let err = stderr(&p.cli(&["validate"]));
    assert!(
        err.contains(
            "_vance/hooks/typos.yaml:1:1: [MAG-TR005] missing field `on`: expected the event \
             the hook reacts to"
        ),
        "{err}"
    );
}

#[test]
fn a_workflows_directory_that_cannot_be_read_is_not_called_missing() {
    let p = Project::new();
    let workflows = p.dir.join("_vance/workflows");
    std::fs::remove_dir_all(&workflows).unwrap();
    std::fs::write(&workflows, "not a directory").unwrap();
    let o = p.cli(&["validate"]);
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    assert!(
        stderr(&o).contains("[MAG-DOC003] could not read")
            && !stderr(&o).contains("does not exist"),
        "{}",
        stderr(&o)
    );

    std::fs::remove_file(&workflows).unwrap();
    let o = p.cli(&["validate"]);
    assert_ne!(code(&o), 0, "{}", stdout(&o));
    assert!(stderr(&o).contains("does not exist"), "{}", stderr(&o));
}
