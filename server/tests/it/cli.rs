//! End-to-end tests of the `magrathea` binary in temporary project directories
//! (`<tmp>/acme/shop/_vance/workflows/`, tenant `acme`, project `shop`).

use std::process::Command;

use serde_json::Value;

use crate::cli_common;
use cli_common::{BIN, Project, code, json, stderr, stdout};

const HELLO: &str = "\
start: done
states:
  done:
    type: terminal
    result:
      greeting: \"hello ${params.who}\"
";

const FAIL: &str = "\
start: broken
states:
  broken:
    type: terminal
    outcome: failure
";

const REVIEW: &str = "\
start: review
parameters:
  pr_url: { type: string, required: true }
states:
  review:
    type: gate_task
    inbox:
      kind: APPROVAL
      title: \"Approve ${params.pr_url}?\"
    storeAs: decision
    on:
      approved: route
      rejected: escalate
  route:
    type: condition_task
    transitions:
      - if: \"#params['pr_url'] == 'urgent'\"
        to: escalate
      - else: done
  done:
    type: terminal
    result: { merged: true }
  escalate:
    type: terminal
    outcome: failure
";

const BAD: &str = "\
start: a
states:
  a:
    type: terminal
  b:
    type: shell_task
    run: \"true\"
    on:
      success: nowhere
";

#[test]
fn validate_reports_ok_and_every_error_with_its_position() {
    let p = Project::new();
    p.workflow("hello", HELLO).workflow("bad", BAD);

    let all = p.cli(&["validate"]);
    assert_eq!(code(&all), 1, "{}", stderr(&all));
    assert!(
        stdout(&all).contains("ok: _vance/workflows/hello.yaml"),
        "{}",
        stdout(&all)
    );
    let err = stderr(&all);
    let line = err
        .lines()
        .find(|l| l.starts_with("_vance/workflows/bad.yaml:") && l.contains("nowhere"))
        .unwrap_or_else(|| panic!("no positioned diagnostic in:\n{err}"));
    let mut parts = line.splitn(4, ':');
    let (_, l, c) = (parts.next(), parts.next().unwrap(), parts.next().unwrap());
    assert!(
        l.parse::<u32>().is_ok() && c.parse::<u32>().is_ok(),
        "{line}"
    );
    assert!(line.contains("[MAG-Y010]"), "{line}");

    let one = p.cli(&["validate", "hello"]);
    assert_eq!(code(&one), 0, "{}", stderr(&one));
    assert_eq!(stdout(&one).trim(), "ok: _vance/workflows/hello.yaml");

    // From elsewhere, paths are as the user would pass them.
    let outside = p.cli_in(&p.root, &["validate", "--project", "acme/shop"]);
    assert_eq!(code(&outside), 1);
    assert!(stdout(&outside).contains("ok: acme/shop/_vance/workflows/hello.yaml"));
    assert!(stderr(&outside).contains("acme/shop/_vance/workflows/bad.yaml:"));

    let missing = p.cli(&["validate", "nope"]);
    assert_eq!(code(&missing), 1);

    // A document `run` could not name is invalid, and one that is not UTF-8 says why.
    std::fs::remove_file(p.dir.join("_vance/workflows/bad.yaml")).unwrap();
    p.workflow("with space", HELLO);
    std::fs::write(
        p.dir.join("_vance/workflows/latin1.yaml"),
        b"start: caf\xe9\n",
    )
    .unwrap();
    let all = p.cli(&["validate"]);
    assert_eq!(code(&all), 1, "{}", stderr(&all));
    let err = stderr(&all);
    assert!(
        err.contains("_vance/workflows/with space.yaml: [MAG-DOC002]"),
        "{err}"
    );
    assert!(
        err.contains("_vance/workflows/latin1.yaml:1:11: [MAG-Y001] the file is not UTF-8 text"),
        "{err}"
    );
    assert!(stdout(&all).contains("ok: _vance/workflows/hello.yaml"));
}

/// `run` in a project directory that does not exist starts nothing and exits 2, as for an
/// unknown workflow.
#[test]
fn run_in_a_missing_project_directory_exits_2() {
    let p = Project::new();
    let missing = p.root.join("no/such/project");
    let out = p.cli(&["run", "hello", "--project", missing.to_str().unwrap()]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("does not exist"), "{}", stderr(&out));
    assert!(!missing.exists());
}

/// A workflow named with its file's `.yaml`, or misspelt, is found or offered: `validate`
/// takes `x.yaml` for the workflow `x` when no such file is beside the command, and `run`
/// says which name was meant.
#[test]
fn a_workflow_named_as_its_file_or_misspelt_is_offered_by_its_name() {
    let p = Project::new();
    p.workflow(
        "hello",
        "start: done\nstates:\n  done: { type: terminal }\n",
    );
    let out = p.cli(&["validate", "hello.yaml"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = p.cli(&["run", "hello.yaml"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("without `.yaml`: did you mean 'hello'?"),
        "{}",
        stderr(&out)
    );
    let out = p.cli(&["run", "helo"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("(did you mean 'hello'?)"),
        "{}",
        stderr(&out)
    );
}

/// A document `run` refuses lists its warnings with the `warning:` label `validate` gives
/// them, so that they are not taken for errors.
#[test]
fn run_labels_the_warnings_of_a_document_it_refuses() {
    let p = Project::new();
    p.workflow(
        "both",
        "start: a\nstates:\n  a: { type: timer_task, durationSeconds: 0, on: { fired: fin } }\n  \
         fin: { type: terminal, result: \"${param.x}\" }\n",
    );
    let out = p.cli(&["run", "both"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("[MAG-Y")).collect();
    assert!(
        lines.iter().any(|l| l.contains("warning: [MAG-Y024]")),
        "{err}"
    );
    assert!(
        lines
            .iter()
            .any(|l| !l.contains("warning:") && l.contains("durationSeconds")),
        "{err}"
    );
}

#[test]
fn run_of_a_terminal_workflow_is_done() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let out = p.cli(&[
        "run",
        "hello",
        "--param",
        "who=world",
        "--param",
        "n=3",
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "DONE");
    assert_eq!(run["workflowName"], "hello");
    assert_eq!(run["currentState"], "done");
    assert_eq!(run["params"]["n"], 3);
    assert_eq!(run["params"]["who"], "world");
    assert_eq!(run["result"]["greeting"], "hello world");
    assert!(run.get("reason").is_some_and(Value::is_null), "{run}");
    assert_eq!(run["workflowRunId"].as_str().unwrap().len(), 32);
    assert!(stderr(&out).contains("→ state done"), "{}", stderr(&out));

    let human = p.cli(&["run", "hello"]);
    assert_eq!(code(&human), 0);
    assert!(stdout(&human).contains("DONE"), "{}", stdout(&human));
}

#[test]
fn a_failure_terminal_exits_1_with_a_reason() {
    let p = Project::new();
    p.workflow("fail", FAIL);
    let out = p.cli(&["run", "fail", "--json"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "FAILED");
    assert!(run["reason"].is_string(), "{run}");
    assert!(run.get("result").is_some(), "{run}");
}

#[test]
fn a_gate_waits_and_its_answer_drives_the_run_on() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let out = p.cli(&[
        "run",
        "review",
        "--params",
        r#"{"pr_url": "pr/1"}"#,
        "--json",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "WAITING");
    assert_eq!(run["currentState"], "review");

    let list = p.cli(&["inbox", "list", "--json"]);
    assert_eq!(code(&list), 0);
    let items = json(&list);
    let items = items.as_array().unwrap();
    assert_eq!(items.len(), 1, "{items:?}");
    let item = &items[0];
    assert_eq!(item["kind"], "APPROVAL");
    assert_eq!(item["title"], "Approve pr/1?");
    assert_eq!(item["workflowRunId"], run["workflowRunId"]);
    assert_eq!(item["workflowState"], "review");
    assert_eq!(item["status"], "PENDING");
    for field in ["id", "body", "options", "assignedTo"] {
        assert!(item.get(field).is_some(), "{field} missing in {item}");
    }
    let id = item["id"].as_str().unwrap();

    // An answer that does not fit the gate changes nothing.
    let wrong = p.cli(&["inbox", "answer", id, "--choose", "maybe"]);
    assert_eq!(code(&wrong), 2, "{}", stderr(&wrong));
    assert!(stderr(&wrong).contains("MAG-GT002"), "{}", stderr(&wrong));

    let answered = p.cli(&[
        "inbox",
        "answer",
        id,
        "--approve",
        "--comment",
        "lgtm",
        "--json",
    ]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    let done = json(&answered);
    assert_eq!(done["status"], "DONE");
    assert_eq!(done["result"]["merged"], true);
    assert!(done["vars"]["decision"].is_object(), "{done}");

    let empty = p.cli(&["inbox", "list", "--json"]);
    assert_eq!(json(&empty), Value::Array(vec![]));

    // A second answer is ignored and says so.
    let again = p.cli(&["inbox", "answer", id, "--reject"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert!(
        stderr(&again).contains("answer ignored"),
        "{}",
        stderr(&again)
    );

    let unknown = p.cli(&["inbox", "answer", "nope-1", "--approve"]);
    assert_eq!(code(&unknown), 1);
}

/// A project of a served tree has no store of its own: the server keeps its runs in the
/// tree's. A reading command there says where they are rather than only "no runs".
#[test]
fn a_project_without_a_store_points_to_its_trees_store() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let tree_store = p.root.join(".magrathea");
    let tree_store = tree_store.to_str().unwrap();
    let out = p.cli(&["run", "hello", "--store", tree_store, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = json(&out)["workflowRunId"].as_str().unwrap().to_owned();

    let here = p.cli(&["runs", "list"]);
    assert_eq!(code(&here), 0, "{}", stderr(&here));
    let note = format!(
        "the runs of the tree it lies in (as `magrathea serve --root` keeps them) are in {tree_store}: pass --store {tree_store}"
    );
    assert!(stderr(&here).contains(&note), "{}", stderr(&here));
    assert!(stderr(&here).contains("no runs"), "{}", stderr(&here));
    let there = p.cli(&["runs", "list", "--store", tree_store]);
    assert!(stdout(&there).contains(&id), "{}", stdout(&there));
    assert!(!stderr(&there).contains("note:"), "{}", stderr(&there));
    // A project with a store of its own reads it, with no note.
    assert_eq!(code(&p.cli(&["run", "hello"])), 0);
    let own = p.cli(&["runs", "list"]);
    assert!(!stderr(&own).contains("note:"), "{}", stderr(&own));
}

/// The answer a waiting run's output suggests acts on the same project and store when typed
/// where the command was; a command acting on a run or an item of a project that has no store
/// finds none and creates no store beside the tree's.
#[test]
fn a_suggested_answer_names_the_store_and_a_missing_store_is_not_created() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let tree_store = p.root.join(".magrathea");
    let tree_store = tree_store.to_str().unwrap();
    let out = p.cli(&[
        "run", "review", "--store", tree_store, "--param", "pr_url=u",
    ]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let hint = stdout(&out)
        .lines()
        .find_map(|l| l.trim().strip_prefix("answer: magrathea "))
        .unwrap_or_else(|| panic!("{}", stdout(&out)))
        .to_owned();
    assert!(
        hint.ends_with(&format!("--approve | --reject --store {tree_store}")),
        "{hint}"
    );
    let id = hint.split_whitespace().nth(2).unwrap().to_owned();

    // Typed without the store: nothing of this project is found, and no store is made.
    for args in [
        vec!["inbox", "answer", id.as_str(), "--approve"],
        vec!["cancel", &id[..32]],
        vec!["runs", "retry", &id[..32]],
        vec!["runs", "rerun", &id[..32]],
    ] {
        let out = p.cli(&args);
        assert_ne!(code(&out), 0, "{args:?}");
        assert!(
            stderr(&out).contains("not found"),
            "{args:?}: {}",
            stderr(&out)
        );
        assert!(!p.store().exists(), "{args:?} created a store");
    }
    // From the tree's root, which is no project, an empty listing says so and names the
    // project below it.
    for args in [["runs", "list"], ["inbox", "list"]] {
        let out = p.cli_in(&p.root, &[args[0], args[1], "--store", tree_store]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(
            stderr(&out).contains("is no project (it has no _vance/)")
                && stderr(&out).contains("(below it: acme/shop)"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    // As suggested, it answers.
    let out = p.cli(&["inbox", "answer", &id, "--approve", "--store", tree_store]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let own = p.cli(&["runs", "list", "--store", tree_store]);
    assert!(!stderr(&own).contains("is no project"), "{}", stderr(&own));
}

#[test]
fn a_line_break_in_a_gate_title_cannot_add_a_row_to_the_listings() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    // A caller's parameter, spliced into the title, tries to add an item row of its own.
    let forged = "0123456789abcdef0123456789abcdef-9  APPROVAL Ship the fix?";
    let params = serde_json::json!({ "pr_url": format!("x\n{forged}") }).to_string();
    let out = p.cli(&["run", "review", "--params", &params]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let progress = stdout(&out);
    let runs = json(&p.cli(&["runs", "list", "--json"]));
    let id = runs[0]["workflowRunId"].as_str().unwrap();
    for args in [vec!["inbox", "list"], vec!["runs", "show", id]] {
        let out = p.cli(&args);
        assert_eq!(code(&out), 0, "{args:?}: {}", stderr(&out));
        let text = stdout(&out);
        assert!(
            !text.lines().any(|l| l.starts_with("0123456789abcdef")),
            "{args:?}: {text}"
        );
        assert!(
            text.contains("Approve x\\n0123456789abcdef"),
            "{args:?}: {text}"
        );
    }
    assert!(
        !progress.lines().any(|l| l.starts_with("0123")),
        "{progress}"
    );
}

#[test]
fn invalid_parameters_exit_2_and_start_nothing() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let out = p.cli(&["run", "review", "--json"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("pr_url"), "{}", stderr(&out));
    assert!(stdout(&out).is_empty());
    let runs = p.cli(&["runs", "list", "--json"]);
    assert_eq!(code(&runs), 0, "{}", stderr(&runs));
    assert_eq!(json(&runs), Value::Array(vec![]));

    // The problem is named at the parameter's declaration, as a document's diagnostics are.
    assert!(
        stderr(&out).lines().any(|l| l.ends_with(
            "review.yaml:3:3: [MAG-YP001] missing required parameter 'pr_url' (type string)"
        )),
        "{}",
        stderr(&out)
    );
    let wrong = p.cli(&["run", "review", "--params", r#"{"pr_url": 7}"#]);
    assert_eq!(code(&wrong), 2, "{}", stderr(&wrong));
    assert!(
        stderr(&wrong).contains("review.yaml:3:3: [MAG-YP001] parameter 'pr_url' is a number"),
        "{}",
        stderr(&wrong)
    );

    let bad_json = p.cli(&["run", "review", "--params", "[1]"]);
    assert_eq!(code(&bad_json), 2);
    let bad_pair = p.cli(&["run", "review", "--param", "novalue"]);
    assert_eq!(code(&bad_pair), 2);
}

#[test]
fn an_integer_parameter_given_as_a_whole_float_is_that_integer() {
    let p = Project::new();
    p.workflow(
        "count",
        "start: done\nparameters:\n  n: { type: integer, required: true }\n  m: { type: integer, default: 2.0, enum: [2, 4] }\nstates:\n  done:\n    type: terminal\n    result: { text: \"n=${params.n} m=${params.m}\" }\n",
    );
    for given in ["n=3.0", "n=3"] {
        let out = p.cli(&["run", "count", "--param", given, "--json"]);
        assert_eq!(code(&out), 0, "{given}: {}", stderr(&out));
        let run = json(&out);
        assert_eq!(run["params"]["n"], serde_json::json!(3), "{run}");
        assert!(run["params"]["n"].is_i64(), "{run}");
        assert_eq!(run["result"]["text"], "n=3 m=2", "{run}");
    }
    // An enum of integers holds a whole float given for one of them.
    let out = p.cli(&[
        "run",
        "count",
        "--params",
        r#"{"n": 1e1, "m": 4.0}"#,
        "--json",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["result"]["text"], "n=10 m=4");
    let out = p.cli(&["run", "count", "--param", "n=2.5"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
}

#[test]
fn an_invalid_document_exits_2_with_positioned_diagnostics() {
    let p = Project::new();
    p.workflow("bad", BAD);
    let out = p.cli(&["run", "bad"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out)
            .lines()
            .any(|l| l.contains("bad.yaml:") && l.contains("[MAG-Y")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn an_unknown_workflow_exits_2_naming_both_places_searched() {
    let p = Project::new();
    let out = p.cli(&["run", "nope"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("acme/shop/_vance/workflows/nope.yaml"),
        "{err}"
    );
    assert!(
        err.contains("acme/_tenant/_vance/workflows/nope.yaml"),
        "{err}"
    );
    // A start refused before it began leaves no store behind.
    assert!(!p.store().exists(), "a store was created for nothing");
}

#[test]
fn tenant_workflows_are_the_fallback() {
    let p = Project::new();
    let tenant = p.root.join("acme/_tenant/_vance/workflows");
    std::fs::create_dir_all(&tenant).unwrap();
    std::fs::write(tenant.join("shared.yaml"), HELLO).unwrap();
    let out = p.cli(&["run", "shared", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["workflowName"], "shared");
}

#[test]
fn journal_lines_each_name_their_record_type() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    let run = json(&p.cli(&["run", "hello", "--json"]));
    let id = run["workflowRunId"].as_str().unwrap();
    let out = p.cli(&["journal", id, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let records: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(records.len() >= 3);
    assert_eq!(records[0]["type"], "StartRecord");
    assert_eq!(
        records[0]["runId"], *id,
        "the first record holds the run's id, for replay tests"
    );
    assert!(
        records
            .iter()
            .all(|r| r["type"].is_string() && r["seq"].is_u64())
    );
    assert!(records.iter().any(|r| r["type"] == "StatusRecord"));

    // Read by a program (not a terminal), the plain command prints the same JSON lines.
    let plain = p.cli(&["journal", id]);
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    assert_eq!(stdout(&plain), stdout(&out), "the records as JSON lines");
    let human = p.cli(&["journal", id, "--table"]);
    let table = stdout(&human);
    assert!(
        table
            .lines()
            .any(|l| l.contains("StateEnteredRecord") && !l.starts_with('{')),
        "{table}"
    );

    let file = p.dir.join("hello.jsonl");
    let exported = p.cli(&["journal", id, "--export", file.to_str().unwrap()]);
    assert_eq!(code(&exported), 0, "{}", stderr(&exported));
    assert!(
        stdout(&exported).is_empty(),
        "the export goes to the file only"
    );
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines, records,
        "the export holds the records `--json` prints"
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "the export is as private as the store");
    assert_eq!(mode(&p.dir.join(".magrathea")), 0o700);
    assert_eq!(mode(&p.dir.join(".magrathea/journal.redb")), 0o600);
    // `-` is standard output, not a file named `-`.
    let dash = p.cli(&["journal", id, "--export", "-"]);
    assert_eq!(code(&dash), 0, "{}", stderr(&dash));
    assert_eq!(stdout(&dash), stdout(&out));
    assert!(!p.dir.join("-").exists());
    let entries: Vec<magrathea_core::Entry> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        entries.len(),
        records.len(),
        "each line reads back as a journal entry"
    );

    let unknown = p.cli(&["journal", "0123456789abcdef0123456789abcdef"]);
    assert_eq!(code(&unknown), 1);
    assert!(
        stderr(&unknown).contains("not found"),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn runs_list_filters_by_workflow_and_show_reads_one() {
    let p = Project::new();
    p.workflow("hello", HELLO).workflow("fail", FAIL);
    let first = json(&p.cli(&["run", "hello", "--json"]));
    p.cli(&["run", "fail"]);
    let second = json(&p.cli(&["run", "hello", "--json"]));

    let all = json(&p.cli(&["runs", "list", "--json"]));
    assert_eq!(all.as_array().unwrap().len(), 3);
    let hello = json(&p.cli(&["runs", "list", "--workflow", "hello", "--json"]));
    let ids: Vec<&Value> = hello
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["workflowRunId"])
        .collect();
    // Newest first.
    assert_eq!(ids, [&second["workflowRunId"], &first["workflowRunId"]]);

    // By status: a list of statuses, and the limit counts only the runs that match.
    let failed = json(&p.cli(&["runs", "list", "--status", "failed", "--json"]));
    assert_eq!(failed.as_array().unwrap().len(), 1, "{failed}");
    assert_eq!(failed[0]["workflowName"], "fail");
    let done = json(&p.cli(&["runs", "list", "--status", "DONE", "--limit", "1", "--json"]));
    assert_eq!(done.as_array().unwrap().len(), 1, "{done}");
    assert_eq!(done[0]["workflowRunId"], second["workflowRunId"]);
    let either = json(&p.cli(&["runs", "list", "--status", "done,failed", "--json"]));
    assert_eq!(either.as_array().unwrap().len(), 3, "{either}");
    let bogus = p.cli(&["runs", "list", "--status", "finished"]);
    assert_eq!(code(&bogus), 2, "{}", stderr(&bogus));
    assert!(stderr(&bogus).contains("finished"), "{}", stderr(&bogus));

    let id = first["workflowRunId"].as_str().unwrap();
    let show = p.cli(&["runs", "show", id, "--json"]);
    assert_eq!(code(&show), 0);
    assert_eq!(json(&show)["status"], "DONE");

    let missing = p.cli(&["runs", "show", "0123456789abcdef0123456789abcdef"]);
    assert_eq!(code(&missing), 1);
    let malformed = p.cli(&["runs", "show", "xyz"]);
    assert_eq!(code(&malformed), 1);
    assert!(
        stderr(&malformed).contains("MAG-ID001"),
        "{}",
        stderr(&malformed)
    );
}

#[test]
fn graph_labels_every_transition() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let out = p.cli(&["graph", "review"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with("stateDiagram-v2"), "{text}");
    assert!(text.contains("review --> route : approved"), "{text}");
    assert!(text.contains("review --> escalate : rejected"), "{text}");
    assert!(text.contains("route --> done : else"), "{text}");
    assert!(text.contains("route --> escalate : if"), "{text}");

    let dot = p.cli(&["graph", "review", "--format", "dot"]);
    assert_eq!(code(&dot), 0);
    assert!(
        stdout(&dot).contains("[label=\"approved\"]"),
        "{}",
        stdout(&dot)
    );
}

#[test]
fn resume_prints_every_unfinished_run() {
    let p = Project::new();
    p.workflow("review", REVIEW);
    let nothing = p.cli(&["resume"]);
    assert_eq!(code(&nothing), 0);
    let waiting = json(&p.cli(&["run", "review", "--param", "pr_url=x", "--json"]));
    let out = p.cli(&["resume", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["workflowRunId"], waiting["workflowRunId"]);
    assert_eq!(lines[0]["status"], "WAITING");
}

/// While a `run` holds the store, `runs list` asks it (see `cli_owner.rs`); so does `resume`,
/// which leaves the runs to the owner that drives them and prints them.
#[test]
fn a_store_in_use_is_read_through_its_owner_and_resume_waits_for_it() {
    let p = Project::new();
    p.workflow(
        "slow",
        "start: wait\nstates:\n  wait:\n    type: shell_task\n    run: \"sleep 3\"\n    dirName: workspace\n    on:\n      success: done\n  done:\n    type: terminal\n",
    );
    let mut child = Command::new(BIN)
        .args(["run", "slow"])
        .current_dir(&p.dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let journal = p.dir.join(".magrathea/journal.redb");
    for _ in 0..100 {
        if journal.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = p.cli(&["runs", "list"]);
    let resume = p.cli(&["resume"]);
    let status = child.wait().unwrap();
    assert!(status.success(), "the slow run failed");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("slow"), "{}", stdout(&out));
    // The owner, a `run`, drives its own run only: `resume` waits for it to let the store go,
    // and then finds the run finished.
    assert_eq!(code(&resume), 0, "{}", stderr(&resume));
    assert!(
        stderr(&resume).contains("drives only its own runs")
            && stderr(&resume).contains("nothing to resume"),
        "{}",
        stderr(&resume)
    );
}

#[test]
fn a_typed_parameter_reaches_a_sub_workflow_as_its_type() {
    let p = Project::new();
    p.workflow(
        "child",
        "start: done\nparameters:\n  n: { type: integer, required: true }\nstates:\n  done:\n    type: terminal\n    result: { n: \"${params.n}\", text: \"n is ${params.n}\" }\n",
    );
    p.workflow(
        "parent",
        "start: call\nparameters:\n  n: { type: integer, required: true }\nstates:\n  call:\n    type: workflow_task\n    workflow: child\n    params: { n: \"${params.n}\" }\n    storeAs: sub\n    on: { success: done }\n  done:\n    type: terminal\n    result: \"${state.sub}\"\n",
    );
    let out = p.cli(&["run", "parent", "--param", "n=3", "--json"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let run = json(&out);
    assert_eq!(run["status"], "DONE", "{run}");
    assert_eq!(run["result"]["n"], 3, "{run}");
    assert_eq!(run["result"]["text"], "n is 3", "{run}");
}

/// `run` of a valid document says its warnings before it runs, as `validate` says them: a
/// misspelt placeholder would otherwise run as text unnoticed.
#[test]
fn run_says_a_valid_documents_warnings() {
    let p = Project::new();
    p.workflow(
        "typo",
        "start: a\nparameters:\n  x: { type: string, default: hi }\nstates:\n  a: { type: terminal, result: \"${param.x}\" }\n",
    );
    let out = p.cli(&["run", "typo"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let warning =
        "_vance/workflows/typo.yaml:5:33: warning: [MAG-Y024] '${param.x}' is left as text";
    assert!(stderr(&out).contains(warning), "{}", stderr(&out));
}

#[test]
fn validate_prints_warnings_and_fails_on_them_only_with_strict() {
    let p = Project::new();
    p.workflow("hello", HELLO).workflow(
        "poll",
        "\
start: check
states:
  check:
    type: shell_task
    run: \"true\"
    dirName: workspace
    on: { success: done }
    catch: { business_error: check }
  sub:
    type: workflow_task
    workflow: missing
    on: { success: done, failure: done }
  done: { type: terminal }
",
    );
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("ok: _vance/workflows/poll.yaml"));
    let err = stderr(&out);
    let warnings: Vec<&str> = err.lines().collect();
    assert_eq!(
        warnings,
        [
            "_vance/workflows/poll.yaml:3:3: warning: [MAG-YA003] a `technical_error` or `timeout` of shell_task `check` would fail the run: no 'on:' or 'catch:' routes them",
            "_vance/workflows/poll.yaml:3:3: warning: [MAG-YA006] state 'check' goes back to itself with no timer_task or gate_task on it, and the workflow sets no bounds: a run loops until its tenant's default bounds stop it (10000 task spawns unless the tenant sets bounds.maxTaskSpawns); expected bounds.maxTaskSpawns or bounds.maxWallclockSeconds, or a timer or gate on the loop",
            "_vance/workflows/poll.yaml:9:3: warning: [MAG-Y027] state 'sub' is never reached from start state 'check': expected a transition to it",
            "_vance/workflows/poll.yaml:11:15: warning: [MAG-YA005] workflow_task 'sub' starts workflow 'missing', which is not a workflow of the project or its tenant: expected _vance/workflows/missing.yaml; the task would end with 'failure'",
        ]
    );

    let strict = p.cli(&["validate", "--strict"]);
    assert_eq!(code(&strict), 1, "{}", stderr(&strict));
    assert!(
        stderr(&strict).contains("4 warning(s), and --strict fails on warnings"),
        "{}",
        stderr(&strict)
    );
    // A document --strict fails is not reported ok; one without warnings is.
    assert!(
        !stdout(&strict).contains("ok: _vance/workflows/poll.yaml"),
        "{}",
        stdout(&strict)
    );
    assert!(stdout(&strict).contains("ok: _vance/workflows/hello.yaml"));
    // A document without warnings passes --strict.
    let clean = p.cli(&["validate", "--strict", "hello"]);
    assert_eq!(code(&clean), 0, "{}", stderr(&clean));
    assert_eq!(stderr(&clean), "");

    // The workflow it starts may come from the tenant.
    let tenant = p.root.join("acme/_tenant/_vance/workflows");
    std::fs::create_dir_all(&tenant).unwrap();
    std::fs::write(tenant.join("missing.yaml"), HELLO).unwrap();
    let out = p.cli(&["validate", "poll"]);
    assert!(!stderr(&out).contains("[MAG-YA005]"), "{}", stderr(&out));

    // A near name of a workflow the project or its tenant has is suggested.
    std::fs::write(
        p.dir.join("_vance/workflows/poll.yaml"),
        std::fs::read_to_string(p.dir.join("_vance/workflows/poll.yaml"))
            .unwrap()
            .replace("workflow: missing", "workflow: hellp"),
    )
    .unwrap();
    let out = p.cli(&["validate", "poll"]);
    assert!(
        stderr(&out).lines().any(|l| l
            == "_vance/workflows/poll.yaml:11:15: warning: [MAG-YA005] workflow_task 'sub' starts workflow 'hellp', which is not a workflow of the project or its tenant: expected _vance/workflows/hellp.yaml; the task would end with 'failure' (did you mean 'hello'?)"),
        "{}",
        stderr(&out)
    );
}

/// A document with errors also gets its other findings that do not depend on them: the
/// workflow_task naming a missing workflow is reported with the error, in one pass.
#[test]
fn validate_reports_an_unknown_sub_workflow_along_with_errors() {
    let p = Project::new();
    p.workflow(
        "parent",
        "start: sub\nstates:\n  sub:\n    type: workflow_task\n    workflow: missing\n    on: { success: nowhere, failure: done }\n  done: { type: terminal }\n",
    );
    let out = p.cli(&["validate", "parent"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines,
        [
            "_vance/workflows/parent.yaml:5:15: warning: [MAG-YA005] workflow_task 'sub' starts workflow 'missing', which is not a workflow of the project or its tenant: expected _vance/workflows/missing.yaml; the task would end with 'failure'",
            "_vance/workflows/parent.yaml:6:20: [MAG-Y010] unknown transition target 'nowhere': expected one of the states [sub, done]",
            "1 of 1 workflow(s) invalid",
        ],
        "{err}"
    );
}

/// A shell_task's literal `dirName` is looked up among the project's workspaces: one the
/// project does not declare is a warning at the value (the step would end technical_error),
/// and the document stays valid; a placeholder is resolved at run time and not looked up.
#[test]
fn validate_warns_of_a_shell_workspace_the_project_does_not_declare() {
    let p = Project::new();
    let doc = |dir: &str| {
        format!(
            "start: s\nstates:\n  s:\n    type: shell_task\n    run: \"true\"\n    dirName: {dir}\n    on: {{ success: done }}\n    catch: {{ technical_error: done, business_error: done, timeout: done }}\n  done: {{ type: terminal }}\n"
        )
    };
    p.workflow("declared", &doc("build"))
        .workflow("project", &doc("workspace"))
        .workflow("templated", &doc("\"${params.d}\""))
        .workflow("undeclared", &doc("nope"));
    std::fs::write(
        p.dir.join("_vance/settings.yaml"),
        "workspaces:\n  build: out\n",
    )
    .unwrap();
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let warning = "_vance/workflows/undeclared.yaml:6:14: warning: [MAG-Y042] shell_task 's' runs in workspace 'nope', which the project does not declare";
    assert!(err.lines().any(|l| l.contains(warning)), "{warning}\n{err}");
    assert_eq!(err.matches("MAG-Y042").count(), 1, "{err}");
    // As a warning, it fails only a strict validation.
    let strict = p.cli(&["validate", "--strict", "undeclared"]);
    assert_eq!(code(&strict), 1, "{}", stderr(&strict));
}

/// An agent_task's literal recipe is looked up by the cascade a run uses (project, then
/// tenant): one neither has is a warning at the recipe, as the task would end
/// `technical_error` when the run reaches it.
#[test]
fn validate_warns_of_an_agent_recipe_neither_the_project_nor_its_tenant_has() {
    let p = Project::new();
    let doc = |recipe: &str| {
        format!(
            "start: s\nstates:\n  s:\n    type: agent_task\n    recipe: {recipe}\n    params: {{ prompt: hi }}\n    on: {{ success: done }}\n    catch: {{ technical_error: done }}\n  done: {{ type: terminal }}\n"
        )
    };
    p.workflow("own", &doc("mine"))
        .workflow("shared", &doc("theirs"))
        .workflow("templated", &doc("\"${params.r}\""))
        .workflow("missing", &doc("jeltz"));
    let recipe = "engine: chat\nbaseUrl: http://127.0.0.1:9/v1\nmodel: m\n";
    std::fs::create_dir_all(p.dir.join("_vance/recipes")).unwrap();
    std::fs::write(p.dir.join("_vance/recipes/mine.yaml"), recipe).unwrap();
    let tenant = p.root.join("acme/_tenant/_vance/recipes");
    std::fs::create_dir_all(&tenant).unwrap();
    std::fs::write(tenant.join("theirs.yaml"), recipe).unwrap();
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let warning = "_vance/workflows/missing.yaml:5:13: warning: [MAG-YA007] agent_task 's' uses recipe 'jeltz', which is not a recipe of the project or its tenant: expected _vance/recipes/jeltz.yaml";
    assert!(err.lines().any(|l| l.contains(warning)), "{warning}\n{err}");
    assert_eq!(err.matches("MAG-YA007").count(), 1, "{err}");
    let strict = p.cli(&["validate", "--strict", "missing"]);
    assert_eq!(code(&strict), 1, "{}", stderr(&strict));
}

/// A shell or script step whose timeout the tenant's bound does not allow never starts: its
/// timeout (its own, or the document's default) is a warning at the number, against the bound
/// the tenant's settings set (a day by default).
#[test]
fn validate_warns_of_a_step_timeout_above_the_tenants_bound() {
    let p = Project::new();
    let doc = |defaults: &str, timeout: &str| {
        format!(
            "{defaults}start: s\nstates:\n  s:\n    type: shell_task\n    dirName: workspace\n    run: \"true\"\n{timeout}    on: {{ success: done }}\n    catch: {{ technical_error: done }}\n  done: {{ type: terminal }}\n"
        )
    };
    p.workflow("own", &doc("", "    timeoutSeconds: 100000\n"))
        .workflow(
            "default",
            &doc("defaults: { taskTimeoutSeconds: 90000 }\n", ""),
        )
        .workflow("day", &doc("", "    timeoutSeconds: 86400\n"));
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    let own = "_vance/workflows/own.yaml:7:21: warning: [MAG-YA009] the shell_task `s` asks for a timeout of 100000 s, above the tenant's bounds.maxTaskTimeoutSeconds (86400 s)";
    assert!(err.lines().any(|l| l.contains(own)), "{own}\n{err}");
    let default = "_vance/workflows/default.yaml:1:33: warning: [MAG-YA009] the shell_task `s` asks for a timeout of 90000 s";
    assert!(err.lines().any(|l| l.contains(default)), "{default}\n{err}");
    assert_eq!(err.matches("MAG-YA009").count(), 2, "{err}");

    // The tenant's administrator raised the bound: nothing to say.
    let settings = p.root.join("acme/_tenant/_vance/settings.yaml");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "bounds:\n  maxTaskTimeoutSeconds: 200000\n").unwrap();
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(!stderr(&out).contains("MAG-YA009"), "{}", stderr(&out));
}

/// The timeouts a run takes from the settings count as the document's own do: a gate that
/// times out by the project's `defaults:` has a `catch: timeout` that is taken (no warning
/// that it never is), and one without that route would fail the run (a warning).
#[test]
fn validate_judges_timeouts_by_the_settings_defaults_a_run_takes() {
    let p = Project::new();
    let gate = |catch: &str| {
        format!(
            "start: g\nstates:\n  g:\n    type: gate_task\n    inbox: {{ kind: APPROVAL, title: ok? }}\n    on: {{ approved: done, rejected: done, insufficient_info: done, undecidable: done }}\n{catch}  done: {{ type: terminal }}\n"
        )
    };
    p.workflow("routed", &gate("    catch: { timeout: done }\n"))
        .workflow("unrouted", &gate(""));
    let before = stderr(&p.cli(&["validate"]));
    assert!(
        before.contains("_vance/workflows/routed.yaml:7:14: warning: [MAG-YA002]"),
        "{before}"
    );
    assert!(!before.contains("unrouted.yaml"), "{before}");

    std::fs::write(
        p.dir.join("_vance/settings.yaml"),
        "defaults:\n  gateTimeoutSeconds: 60\n",
    )
    .unwrap();
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let after = stderr(&out);
    assert!(!after.contains("MAG-YA002"), "{after}");
    assert!(
        after.contains("unrouted.yaml:3:3: warning: [MAG-YA003] a `timeout` of gate_task `g` would fail the run"),
        "{after}"
    );
}

/// A sub-run that would be refused its parameters is said before anything runs: a required
/// parameter left out, or one written as a value of another type.
#[test]
fn validate_warns_of_a_workflow_task_that_would_not_pass_its_parameters() {
    let p = Project::new();
    p.workflow(
        "child",
        "parameters:\n  n: { type: integer, required: true }\n  o: { type: object }\n  d: { type: string, required: true, default: x }\nstart: done\nstates:\n  done: { type: terminal }\n",
    );
    let parent = |params: &str| {
        format!(
            "start: sub\nstates:\n  sub:\n    type: workflow_task\n    workflow: child\n{params}    on: {{ success: done, failure: done }}\n  done: {{ type: terminal }}\n"
        )
    };
    p.workflow("none", &parent(""))
        .workflow("typed", &parent("    params: { n: abc, o: [1] }\n"))
        .workflow("good", &parent("    params: { n: 4, o: { a: 1 } }\n"))
        .workflow("templated", &parent("    params: { n: \"${params.n}\" }\n"));
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    for warning in [
        "_vance/workflows/none.yaml:5:15: warning: [MAG-YA008] workflow_task 'sub' starts workflow 'child' without its required parameter 'n' (integer)",
        "_vance/workflows/typed.yaml:6:18: warning: [MAG-YA008] workflow_task 'sub' passes parameter 'n' of workflow 'child' as a string: expected integer",
        "_vance/workflows/typed.yaml:6:26: warning: [MAG-YA008] workflow_task 'sub' passes parameter 'o' of workflow 'child' as an array: expected object",
    ] {
        assert!(err.lines().any(|l| l.contains(warning)), "{warning}\n{err}");
    }
    assert_eq!(err.matches("MAG-YA008").count(), 3, "{err}");
    // What validate warned of is what a run is refused.
    let run = p.cli(&["run", "none"]);
    let said = format!("{}{}", stdout(&run), stderr(&run));
    assert!(said.contains("MAG-YR002") && said.contains("'n'"), "{said}");
}

/// A script_task's literal script path is looked up where a run would look for it: a missing
/// script or a path out of the project is an error at the path, before anything runs.
#[test]
fn validate_reports_a_script_path_a_run_would_not_find() {
    let p = Project::new();
    let doc = |path: &str| {
        format!(
            "start: s\nstates:\n  s:\n    type: script_task\n    path: {path}\n    on: {{ success: done }}\n    catch: {{ technical_error: done, timeout: done }}\n  done: {{ type: terminal }}\n"
        )
    };
    p.workflow("missing", &doc("_vance/scripts/none.js"))
        .workflow("escapes", &doc("../../x.js"))
        .workflow("templated", &doc("\"_vance/scripts/${params.n}.js\""));
    let out = p.cli(&["validate"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let err = stderr(&out);
    for (name, why) in [
        ("escapes", "[MAG-JS002] invalid script path `../../x.js`"),
        (
            "missing",
            "[MAG-JS003] script `_vance/scripts/none.js` not found: looked for ",
        ),
    ] {
        let prefix = format!(
            "_vance/workflows/{name}.yaml:5:11: [MAG-Y040] the path of script_task 's' names no \
             script it can run, so the task would end with 'technical_error': {why}"
        );
        assert!(
            err.lines().any(|l| l.starts_with(&prefix)),
            "{prefix}\n{err}"
        );
    }
    assert!(err.contains("2 of 3 workflow(s) invalid"), "{err}");
    assert!(stdout(&out).contains("ok: _vance/workflows/templated.yaml"));

    // Once the script is there, the document is valid.
    std::fs::create_dir_all(p.dir.join("_vance/scripts")).unwrap();
    std::fs::write(p.dir.join("_vance/scripts/none.js"), "return 1;\n").unwrap();
    let out = p.cli(&["validate", "missing"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// The reference's loader takes a transition that is never taken; `validate` warns of it
/// and of the outcome nothing routes, and the document is valid.
#[test]
fn validate_warns_of_a_transition_the_task_can_never_take() {
    let p = Project::new();
    p.workflow(
        "wait",
        "start: wait\nstates:\n  wait:\n    type: timer_task\n    duration: 5m\n    on:\n      success: done\n  done: { type: terminal }\n",
    );
    let out = p.cli(&["validate", "wait"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.lines().any(|l| l.starts_with(
            "_vance/workflows/wait.yaml:7:7: warning: [MAG-YA001] state 'wait' has 'on: success', \
             but a timer_task never ends that way: it ends with fired"
        )),
        "{err}"
    );
    // And the outcome it does end with is named as unrouted.
    assert!(
        err.contains("wait.yaml:3:3: warning: [MAG-YA003] a `fired` of timer_task `wait`"),
        "{err}"
    );
}

/// An answer that decides nothing is shown as what it is, not as an empty value.
#[test]
fn an_answer_that_decides_nothing_is_shown_as_such() {
    let p = Project::new();
    p.workflow(
        "ask",
        "start: ask\nstates:\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: Ship? }\n    on: { approved: done, rejected: done, insufficient_info: done, undecidable: done }\n  done: { type: terminal }\n",
    );
    for (flag, shown) in [
        (
            "--insufficient-info",
            "gate answered: insufficient information",
        ),
        ("--undecidable", "gate answered: undecidable"),
    ] {
        let out = p.cli(&["run", "ask"]);
        assert_eq!(code(&out), 3, "{}", stderr(&out));
        let items = json(&p.cli(&["inbox", "list", "--json"]));
        let id = items[0]["id"].as_str().unwrap().to_owned();
        let out = p.cli(&["inbox", "answer", &id, flag]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        assert!(stderr(&out).contains(shown), "{}", stderr(&out));
        assert!(!stderr(&out).contains("answered: null"), "{}", stderr(&out));
    }
}

#[test]
fn progress_says_why_a_condition_a_timer_or_a_tool_failed() {
    let p = Project::new();
    p.workflow(
        "cond",
        "parameters:\n  n: { type: string }\nstart: check\nstates:\n  check:\n    type: condition_task\n    transitions:\n      - if: \"#params['n'] > 5\"\n        to: done\n      - else: done\n  done: { type: terminal }\n",
    )
    .workflow(
        "nap",
        "parameters:\n  d: { type: string }\nstart: nap\nstates:\n  nap:\n    type: timer_task\n    duration: \"${params.d}\"\n    on: { fired: done }\n  done: { type: terminal }\n",
    )
    .workflow(
        "tool",
        "start: call\nallowedTools: [doc_read]\nstates:\n  call:\n    type: tool_task\n    tool: http_request\n    params: { url: \"http://127.0.0.1:1/\" }\n    on: { success: done }\n  done: { type: terminal }\n",
    );
    for (args, whys) in [
        (
            vec!["run", "cond", "--param", "n=abc"],
            &["condition_task check: technical_error", "— [MAG-YC002]"][..],
        ),
        (
            vec!["run", "nap", "--param", "d=soon"],
            &["timer_duration failed — [MAG-Y017]"][..],
        ),
        (
            vec!["run", "tool"],
            &["tool_permission: denied — not in the workflow's allowedTools"][..],
        ),
    ] {
        let out = p.cli(&args);
        assert_eq!(code(&out), 1, "{args:?}: {}", stderr(&out));
        for why in whys {
            assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
        }
    }
}

/// A command line that cannot be read exits 2 with the usage on stderr, before anything is
/// done, whatever the command (`--help` says so): no run starts, nothing is printed on stdout.
#[test]
fn a_command_line_that_cannot_be_read_exits_2_and_does_nothing() {
    let p = Project::new();
    p.workflow("hello", HELLO);
    for args in [
        &["validate", "--bogus"][..],
        &["resume", "--bogus"],
        &["run", "hello", "--bogus"],
        &["run"],
        &["runs", "show"],
    ] {
        let out = p.cli(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("Usage:"),
            "{args:?}: {}",
            stderr(&out)
        );
    }
    let listed = json(&p.cli(&["runs", "list", "--json"]));
    assert_eq!(listed, serde_json::json!([]), "no run was started");
    let help = stdout(&p.cli(&["--help"]));
    assert!(
        help.contains("cannot be read") && help.contains("exits 2"),
        "{help}"
    );
}
