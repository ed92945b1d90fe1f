//! `magrathea runs rerun`: the same parameters, on the current or the frozen definition.

use crate::cli_common;
use cli_common::{Project, code, json, stderr, stdout};

const V1: &str = "parameters:\n  n: { type: integer, required: true }\nstart: done\nstates:\n  done: { type: terminal, result: { version: 1, n: \"${params.n}\" } }\n";
const V2: &str = "parameters:\n  n: { type: integer, required: true }\nstart: done\nstates:\n  done: { type: terminal, result: { version: 2, n: \"${params.n}\" } }\n";

#[test]
fn rerun_starts_the_workflow_again_with_the_same_parameters() {
    let p = Project::new();
    p.workflow("versioned", V1);
    let first = json(&p.cli(&["run", "versioned", "--param", "n=7", "--json"]));
    let id = first["workflowRunId"].as_str().unwrap().to_owned();
    p.workflow("versioned", V2);
    let out = p.cli(&["runs", "rerun", &id, "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let again = json(&out);
    assert_ne!(again["workflowRunId"], first["workflowRunId"]);
    assert_eq!(again["params"], serde_json::json!({"n": 7}));
    assert_eq!(again["result"]["version"], 2);
    assert!(stderr(&out).contains(&format!("rerun of {id}")));
    let frozen = json(&p.cli(&["runs", "rerun", &id, "--frozen", "--json"]));
    assert_eq!(frozen["result"]["version"], 1);
    // The current document may be chosen explicitly too; not both at once.
    let current = json(&p.cli(&["runs", "rerun", &id, "--current", "--json"]));
    assert_eq!(current["result"]["version"], 2);
    let both = p.cli(&["runs", "rerun", &id, "--current", "--frozen"]);
    assert_eq!(code(&both), 2, "{}", stderr(&both));
    let shown = p.cli(&["runs", "show", frozen["workflowRunId"].as_str().unwrap()]);
    assert!(
        stdout(&shown).contains(&format!("rerun of {id} (frozen definition)")),
        "{}",
        stdout(&shown)
    );
    // A run that is not there: nothing was started, exit 2 (as `runs pause` and `retry`).
    for cmd in ["rerun", "retry"] {
        let out = p.cli(&["runs", cmd, "0123456789abcdef0123456789abcdef"]);
        assert_eq!(code(&out), 2, "{cmd}: {}", stderr(&out));
        assert!(stderr(&out).contains("[MAG-RN001]"), "{}", stderr(&out));
    }
}

/// `prepare` stores a variable; `check` fails until the file `fixed` exists.
const FLOW: &str = r#"
start: prepare
states:
  prepare:
    type: shell_task
    run: "echo x >> prepared.log; echo prepared"
    dirName: workspace
    storeAs: prep
    on: { success: check }
  check:
    type: shell_task
    run: "test -e fixed"
    dirName: workspace
    on: { success: done }
  done: { type: terminal, result: "${state.prep.stdout}" }
"#;

#[test]
fn retry_begins_at_the_failed_state_with_the_variables_the_run_had_there() {
    let p = Project::new();
    p.workflow("flow", FLOW);
    let out = p.cli(&["run", "flow", "--json"]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let id = json(&out)["workflowRunId"].as_str().unwrap().to_owned();

    let out = p.cli(&["runs", "retry", &id, "--from", "nowhere"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("never entered state `nowhere`"),
        "{}",
        stderr(&out)
    );

    std::fs::write(p.dir.join("fixed"), "").unwrap();
    let out = p.cli(&["runs", "retry", &id, "--frozen", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("retry of {id} from state check")),
        "{}",
        stderr(&out)
    );
    let again = json(&out);
    assert_eq!(again["status"], "DONE");
    assert_eq!(again["result"], "prepared\n");
    let log = std::fs::read_to_string(p.dir.join("prepared.log")).unwrap();
    assert_eq!(log.lines().count(), 1, "prepare did not run again");
    // `runs show` of the new run names the run it retries.
    let new = again["workflowRunId"].as_str().unwrap();
    let shown = p.cli(&["runs", "show", new]);
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    assert!(
        stdout(&shown).contains(&format!(
            "retry of {id} from state check (frozen definition)"
        )),
        "{}",
        stdout(&shown)
    );

    // A DONE run is not retried.
    let done = again["workflowRunId"].as_str().unwrap();
    let out = p.cli(&["runs", "retry", done]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("only a FAILED or CANCELLED"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn rerunning_or_retrying_a_sub_run_starts_nothing_and_exits_2() {
    let p = Project::new();
    p.workflow("versioned", V1);
    p.workflow(
        "parent",
        "start: call\nstates:\n  call:\n    type: workflow_task\n    workflow: versioned\n    params: { n: 3 }\n    on: { success: done }\n  done: { type: terminal }\n",
    );
    let out = p.cli(&["run", "parent", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let runs = json(&p.cli(&["runs", "list", "--json"]));
    let child = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["workflowName"] == "versioned")
        .expect("the sub-run is listed")["workflowRunId"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = p.cli(&["runs", "rerun", &child]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("is a sub-run"), "{}", stderr(&out));
    let out = p.cli(&["runs", "retry", &child]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let after = json(&p.cli(&["runs", "list", "--json"]));
    assert_eq!(
        after.as_array().unwrap().len(),
        runs.as_array().unwrap().len()
    );
}
