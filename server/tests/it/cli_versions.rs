//! `magrathea run --draft`, `publish`, `versions`, `archive` and `unarchive` on a project
//! directory, and the version each run records in `runs list --json` / `runs show`.

use crate::cli_common;

use cli_common::{Project, code, json, stderr, stdout};
use sha2::{Digest, Sha256};

const LIVE: &str = "start: done\nstates:\n  done: { type: terminal, result: live }\n";
const DRAFT: &str =
    "version: '2'\nstart: done\nstates:\n  done: { type: terminal, result: draft }\n";
const GATE: &str = "start: review\nstates:\n  review:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: \"Ship it?\" }\n    on:\n      approved: ok\n  ok: { type: terminal, result: approved }\n";

fn sha(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn draft(p: &Project, name: &str, text: &str) {
    let dir = p.dir.join("_vance/workflow-drafts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.yaml")), text).unwrap();
}

#[test]
fn run_starts_the_draft_only_with_draft_and_runs_show_its_version() {
    let p = Project::new();
    p.workflow("w", LIVE);
    draft(&p, "w", DRAFT);
    let live = json(&p.cli(&["run", "w", "--json"]));
    assert_eq!(live["result"], "live");
    assert_eq!(live["draft"], false);
    assert_eq!(live["definitionHash"], sha(LIVE));

    let out = p.cli(&["run", "w", "--draft", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let drafted = json(&out);
    assert_eq!(drafted["result"], "draft");
    assert_eq!(drafted["draft"], true);
    assert_eq!(drafted["workflowVersion"], "2+draft");
    assert_eq!(drafted["definitionHash"], sha(DRAFT));

    let listed = json(&p.cli(&["runs", "list", "--json"]));
    let hashes: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["definitionHash"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(hashes, [sha(DRAFT), sha(LIVE)]);
    // The table shows each run's version too.
    let table = stdout(&p.cli(&["runs", "list"]));
    assert!(table.contains("VERSION"), "{table}");
    assert!(
        table.contains(&format!("2+draft {}", &sha(DRAFT)[..12])),
        "the version's text and the hash it ran: {table}"
    );
    assert!(table.contains(&sha(LIVE)[..12]), "{table}");
    // A draft without `version:` is named by its hash, marked as a draft.
    p.workflow("bare", LIVE);
    let bare = "start: done\nstates:\n  done: { type: terminal, result: bare }\n";
    draft(&p, "bare", bare);
    assert_eq!(code(&p.cli(&["run", "bare", "--draft"])), 0);
    let table = stdout(&p.cli(&["runs", "list"]));
    assert!(
        table.contains(&format!("{}+draft", &sha(bare)[..12])),
        "the draft's hash, then +draft: {table}"
    );
    let id = drafted["workflowRunId"].as_str().unwrap();
    let show = p.cli(&["runs", "show", id]);
    assert!(
        stdout(&show).contains(&format!("definition: sha256 {} (draft)", sha(DRAFT))),
        "{}",
        stdout(&show)
    );

    // Without a draft, --draft starts nothing and exits 2.
    let out = p.cli(&["run", "other", "--draft"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("[MAG-VR002]"), "{}", stderr(&out));
}

#[test]
fn publish_moves_the_draft_live_keeps_history_and_versions_lists_both() {
    let p = Project::new();
    p.workflow("w", LIVE);
    draft(&p, "w", DRAFT);
    let out = p.cli(&["publish", "w", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(
        json(&out),
        serde_json::json!({"name": "w", "version": sha(DRAFT), "previous": sha(LIVE)})
    );
    let live = std::fs::read_to_string(p.dir.join("_vance/workflows/w.yaml")).unwrap();
    assert_eq!(live, DRAFT);
    let kept = p
        .dir
        .join(format!("_vance/workflow-history/w/{}.yaml", sha(LIVE)));
    assert_eq!(std::fs::read_to_string(kept).unwrap(), LIVE);
    assert!(!p.dir.join("_vance/workflow-drafts/w.yaml").exists());

    let out = p.cli(&["versions", "w"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let lines: Vec<_> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines[0], "w");
    assert!(
        lines[1].contains("live") && lines[1].contains(&sha(DRAFT)),
        "{lines:?}"
    );
    assert!(
        lines[2].contains("history") && lines[2].contains(&sha(LIVE)),
        "{lines:?}"
    );
    let v = json(&p.cli(&["versions", "w", "--json"]));
    assert_eq!(v["versions"].as_array().unwrap().len(), 2);

    let out = p.cli(&["versions", "nope"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("[MAG-DOC001]"), "{}", stderr(&out));
}

#[test]
fn publishing_an_invalid_draft_exits_2_with_diagnostics_and_changes_nothing() {
    let p = Project::new();
    p.workflow("w", LIVE);
    let broken = "start: nowhere\nstates:\n  a:\n    type: terminal\n";
    draft(&p, "w", broken);
    let out = p.cli(&["publish", "w"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    // Named as `validate` names it: from the project directory the command ran in.
    assert!(
        err.starts_with("_vance/workflow-drafts/w.yaml:1:8: [MAG-Y008]"),
        "{err}"
    );
    assert!(err.contains("[MAG-VR003]"), "{err}");
    let live = std::fs::read_to_string(p.dir.join("_vance/workflows/w.yaml")).unwrap();
    assert_eq!(live, LIVE);
    assert!(p.dir.join("_vance/workflow-drafts/w.yaml").exists());
    assert!(!p.dir.join("_vance/workflow-history").exists());
}

#[test]
fn an_archived_workflow_exits_2_on_run_while_a_waiting_run_finishes() {
    let p = Project::new();
    p.workflow("gate", GATE);
    let waiting = p.cli(&["run", "gate", "--json"]);
    assert_eq!(code(&waiting), 3, "{}", stderr(&waiting));

    let out = p.cli(&["archive", "gate"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = p.cli(&["run", "gate"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("[MAG-VR001]"), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was started"),
        "{}",
        stderr(&out)
    );
    let v = json(&p.cli(&["versions", "gate", "--json"]));
    assert_eq!(v["archived"], true);
    // A rerun on the frozen definition is a new start too.
    let run = json(&waiting)["workflowRunId"].as_str().unwrap().to_owned();
    let out = p.cli(&["runs", "rerun", &run, "--frozen"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("[MAG-VR001]"), "{}", stderr(&out));

    // The run started before the archive is answered and finishes.
    let items = json(&p.cli(&["inbox", "list", "--json"]));
    let id = items[0]["id"].as_str().unwrap().to_string();
    let answered = p.cli(&["inbox", "answer", &id, "--approve", "--json"]);
    assert_eq!(code(&answered), 0, "{}", stderr(&answered));
    assert_eq!(json(&answered)["result"], "approved");

    let out = p.cli(&["unarchive", "gate", "--json"]);
    assert_eq!(
        json(&out),
        serde_json::json!({"name": "gate", "archived": false})
    );
    let again = p.cli(&["run", "gate"]);
    assert_eq!(code(&again), 3, "{}", stderr(&again));

    let out = p.cli(&["archive", "nope"]);
    assert_eq!(code(&out), 2);
    // Unarchiving a workflow that does not exist is an error too, not "starts are accepted".
    let out = p.cli(&["unarchive", "nope"]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(stderr(&out).contains("[MAG-DOC001]"), "{}", stderr(&out));
}

#[test]
fn a_drafts_own_parameters_type_its_param_values() {
    let p = Project::new();
    p.workflow("w", LIVE);
    draft(
        &p,
        "w",
        "parameters:\n  n: { type: string, required: true }\nstart: done\nstates:\n  done: { type: terminal, result: \"${params.n}\" }\n",
    );
    let out = p.cli(&["run", "w", "--draft", "--param", "n=3", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json(&out)["params"]["n"], "3");
}

/// A schedule of an archived workflow starts nothing: it is listed as not active and its
/// workflow as archived, as the server lists it, until the workflow is unarchived.
#[test]
fn a_schedule_of_an_archived_workflow_is_listed_not_active() {
    let p = Project::new();
    p.workflow("live", LIVE);
    let dir = p.dir.join("_vance/scheduler");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("nightly.yaml"),
        "cron: \"0 3 * * *\"\nworkflow: live\n",
    )
    .unwrap();
    let listed = |p: &Project| json(&p.cli(&["schedules", "list", "--json"]))[0].clone();
    let before = listed(&p);
    assert_eq!(before["active"], true, "{before}");
    assert_eq!(before["workflowArchived"], false, "{before}");
    assert_eq!(code(&p.cli(&["archive", "live"])), 0);
    let archived = listed(&p);
    assert_eq!(archived["active"], false, "{archived}");
    assert_eq!(archived["workflowArchived"], true, "{archived}");
    assert_eq!(
        archived["nextFireTimes"],
        serde_json::json!([]),
        "{archived}"
    );
    assert_eq!(code(&p.cli(&["unarchive", "live"])), 0);
    assert_eq!(listed(&p)["active"], true);
}

/// A draft named `runs`, written beside the API, is not published: a workflow of that name
/// could not be reached over HTTP (`…/workflows/runs/…` are the routes of runs).
#[test]
fn a_draft_named_runs_is_not_published() {
    let p = Project::new();
    draft(&p, "runs", LIVE);
    let out = p.cli(&["publish", "runs"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[MAG-HTTP-RESERVED-NAME]"),
        "{}",
        stderr(&out)
    );
    assert!(!p.dir.join("_vance/workflows/runs.yaml").exists());
}
