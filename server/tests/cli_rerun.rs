//! `magrathea runs rerun`: the same parameters, on the current or the frozen definition.

mod cli_common;
use cli_common::{Project, code, json, stderr};

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
    let out = p.cli(&["runs", "rerun", "0123456789abcdef0123456789abcdef"]);
    assert_eq!(code(&out), 1);
}
