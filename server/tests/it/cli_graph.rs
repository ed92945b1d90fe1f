//! `magrathea graph NAME --format reactflow`: the editor graph the HTTP API serves, placed by
//! the project's layout file when there is one; the other formats stay as they were. And the
//! round trip: a graph exported, imported as a draft and exported again is the same graph.
//! (Friday's own graphs imported: `cli_graph_import`.)

use crate::cli_common;

use cli_common::*;
use magrathea_server::editor_graph::{self, Layout};
use magrathea_yaml::{LoadOptions, load_workflow};
use serde_json::{Value, json};

const FLOW: &str = "\
start: ask
states:
  ask:
    type: gate_task
    inbox: { kind: APPROVAL, title: Go? }
    on:
      approved: done
      rejected: stop
  done: { type: terminal, result: yes }
  stop: { type: terminal, outcome: failure }
";

pub(crate) fn node<'a>(graph: &'a Value, id: &str) -> &'a Value {
    graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id} in {graph}"))
}

/// A node of a Friday editor graph at the origin, with its `data`.
pub(crate) fn design_node(id: &str, data: Value) -> Value {
    json!({ "id": id, "type": "workflow_node", "position": { "x": 0, "y": 0 }, "data": data })
}

/// The format is read in any letter case, as over HTTP.
#[test]
fn the_format_is_read_in_any_letter_case() {
    let p = Project::new();
    p.workflow("flow", FLOW);
    let lower = p.cli(&["graph", "flow", "--format", "dot"]);
    let upper = p.cli(&["graph", "flow", "--format", "DOT"]);
    assert_eq!(code(&upper), 0, "{}", stderr(&upper));
    assert_eq!(stdout(&upper), stdout(&lower));
    assert!(stdout(&upper).starts_with("digraph"), "{}", stdout(&upper));
}

#[test]
fn reactflow_prints_the_editor_graph_the_library_exports() {
    let p = Project::new();
    p.workflow("flow", FLOW);
    let out = p.cli(&["graph", "flow", "--format", "reactflow"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = json(&out);
    assert_eq!(printed["schemaVersion"], "1.0");
    assert_eq!(node(&printed, "ask")["data"]["type"], "approval");
    assert_eq!(node(&printed, "stop")["data"]["type"], "terminal");
    let loaded = load_workflow("flow", FLOW, &LoadOptions::default()).unwrap();
    let library = serde_json::to_value(editor_graph::export(&loaded, None)).unwrap();
    assert_eq!(printed, library);
}

#[test]
fn reactflow_places_nodes_where_the_layout_file_says() {
    let p = Project::new();
    p.workflow("flow", FLOW);
    let graph = json!({
        "nodes": [{"id": "done", "position": {"x": 7.5, "y": -3}, "height": 40}],
        "viewport": {"x": 1, "y": 2, "zoom": 2}
    });
    let states = ["ask", "done", "stop"].map(String::from);
    let layout = Layout::from_editor_graph(graph.to_string().as_bytes(), "flow", &states).unwrap();
    layout
        .write(&editor_graph::layout_path(&p.dir, "flow"), "flow")
        .unwrap();
    let printed = json(&p.cli(&["graph", "flow", "--format", "reactflow"]));
    assert_eq!(
        node(&printed, "done")["position"],
        json!({"x": 7.5, "y": -3.0})
    );
    assert_eq!(node(&printed, "done")["height"], 40.0);
    assert_eq!(
        node(&printed, "ask")["position"],
        json!({"x": 0.0, "y": 0.0})
    );
    assert_eq!(
        printed["viewport"],
        json!({"x": 1.0, "y": 2.0, "zoom": 2.0})
    );
    // The layout file is not a workflow: validating the project checks only the document.
    let validate = p.cli(&["validate"]);
    assert_eq!(code(&validate), 0, "{}", stderr(&validate));
    assert!(
        !stdout(&validate).contains("layout"),
        "{}",
        stdout(&validate)
    );
}

#[test]
fn a_broken_layout_file_exits_2_naming_it_and_mermaid_stays_the_default() {
    let p = Project::new();
    p.workflow("flow", FLOW);
    std::fs::write(p.dir.join("_vance/workflows/flow.layout.json"), "[1,2]").unwrap();
    let out = p.cli(&["graph", "flow", "--format", "reactflow"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("MAG-GR007") && err.contains("flow.layout.json"),
        "{err}"
    );
    // The text formats do not read layout at all.
    let mermaid = p.cli(&["graph", "flow"]);
    assert_eq!(code(&mermaid), 0);
    assert!(stdout(&mermaid).starts_with("stateDiagram-v2"));
    let missing = p.cli(&["graph", "nope", "--format", "reactflow"]);
    assert_eq!(code(&missing), 2);
}

const FAN: &str = "\
start: fan
states:
  fan:
    type: parallel_task
    branches:
      build: { workflow: build }
      lint:
        start: run
        states:
          run: { type: shell_task, run: 'true', on: { success: ok } }
          ok: { type: terminal }
    maxParallelism: 2
    on: { success: each, failure: stop }
  each:
    type: foreach_task
    items: [1, 2]
    workflow: build
    on: { success: done }
  done: { type: terminal }
  stop: { type: terminal, outcome: failure }
";

#[test]
fn fan_out_states_are_drawn_in_every_format_as_actions_of_their_type() {
    let p = Project::new();
    p.workflow("fan", FAN);
    let mermaid = p.cli(&["graph", "fan"]);
    assert_eq!(code(&mermaid), 0, "{}", stderr(&mermaid));
    let text = stdout(&mermaid);
    assert!(
        text.contains("fan --> each") || text.contains("fan -->"),
        "{text}"
    );
    let dot = p.cli(&["graph", "fan", "--format", "dot"]);
    assert_eq!(code(&dot), 0, "{}", stderr(&dot));
    assert!(
        stdout(&dot).contains("\"fan\" -> \"each\""),
        "{}",
        stdout(&dot)
    );
    let out = p.cli(&["graph", "fan", "--format", "reactflow"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let printed = json(&out);
    for (id, ty) in [("fan", "parallel_task"), ("each", "foreach_task")] {
        assert_eq!(node(&printed, id)["data"]["type"], "action");
        assert_eq!(node(&printed, id)["data"]["config"]["actionType"], ty);
    }
}

/// The editor graph `magrathea graph NAME --format reactflow` prints.
fn exported(p: &Project, name: &str) -> Value {
    let out = p.cli(&["graph", name, "--format", "reactflow"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    json(&out)
}

/// The draft an import wrote as `name`: its text, and as JSON.
fn draft(p: &Project, name: &str) -> (String, Value) {
    let path = p.dir.join(format!("_vance/workflow-drafts/{name}.yaml"));
    let text = std::fs::read_to_string(path).unwrap();
    let doc = serde_yaml_ng::from_str(&text).unwrap();
    (text, doc)
}

/// Imports the graph `first` as the draft `again`: its text, and as JSON.
fn import_as_draft(p: &Project, first: &Value) -> (String, Value) {
    let out = import_graph(p, &first.to_string(), "again");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    draft(p, "again")
}

/// Makes `text` the live workflow `again` and checks that it exports as `first`.
fn exports_as(p: &Project, text: &str, first: &Value) {
    p.workflow("again", text);
    assert_eq!(
        &exported(p, "again"),
        first,
        "export, import, export is identical"
    );
}

/// Writes `graph` (JSON text) into the project and imports it as the draft `name`.
pub(crate) fn import_graph(p: &Project, graph: &str, name: &str) -> std::process::Output {
    let file = p.dir.join(format!("{name}.graph.json"));
    std::fs::write(&file, graph).unwrap();
    p.cli(&["graph", "import", file.to_str().unwrap(), "--name", name])
}

/// Exporting a workflow, importing the export as a draft and exporting that gives the same
/// graph: `catch:` routes come back as `catch:` (not as `on:` as well), and the states keep
/// the order of the nodes.
#[test]
fn export_import_export_gives_the_same_graph() {
    let p = Project::new();
    // Routes written out of alphabetical order: the draft keeps them in the graph's order,
    // so the edges' ids (`<state>.<n>`, in the order of `on:` and `catch:`) come out the same.
    p.workflow(
        "routed",
        "start: zeta\nstates:\n  zeta:\n    type: shell_task\n    run: \"exit 3\"\n    \
         dirName: workspace\n    on: { success: route }\n    catch: { technical_error: mid, \
         business_error: alpha }\n  route:\n    type: condition_task\n    transitions:\n      \
         - { if: \"#params['n'] == 1\", to: mid }\n      - { if: \"#params['n'] == 2\", to: alpha }\n      \
         - { else: ask }\n  ask:\n    type: gate_task\n    inbox: { kind: APPROVAL, title: Go? }\n    \
         on: { rejected: alpha, approved: mid }\n  mid: { type: terminal, result: ok }\n  alpha: { type: \
         terminal, outcome: failure }\n",
    );
    let first = p.cli(&["graph", "routed", "--format", "reactflow"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let out = import_graph(&p, &stdout(&first), "again");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let draft = std::fs::read_to_string(p.dir.join("_vance/workflow-drafts/again.yaml")).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&draft).unwrap();
    assert_eq!(
        doc["states"]["zeta"]["on"],
        json!({"success": "route"}),
        "{draft}"
    );
    assert_eq!(
        doc["states"]["zeta"]["catch"],
        json!({"business_error": "alpha", "technical_error": "mid"}),
        "{draft}"
    );
    let ordered: serde_yaml_ng::Value = serde_yaml_ng::from_str(&draft).unwrap();
    let keys = |state: &str, field: &str| -> Vec<String> {
        let serde_yaml_ng::Value::Mapping(map) = &ordered["states"][state][field] else {
            panic!("{state}.{field} is no mapping: {draft}");
        };
        map.keys().map(|k| k.as_str().unwrap().to_owned()).collect()
    };
    assert_eq!(keys("ask", "on"), ["rejected", "approved"], "{draft}");
    assert_eq!(
        keys("zeta", "catch"),
        ["technical_error", "business_error"],
        "{draft}"
    );
    p.workflow("again", &draft);
    let second = p.cli(&["graph", "again", "--format", "reactflow"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    let (a, b): (Value, Value) = (
        serde_json::from_str(&stdout(&first)).unwrap(),
        serde_json::from_str(&stdout(&second)).unwrap(),
    );
    assert_eq!(a, b, "export, import, export is identical");
}

/// Where the editor put the nodes, their sizes, the names it shows and the viewport survive an
/// import: the draft carries them, publishing makes them the workflow's layout file, and the
/// published workflow exports as the graph that was imported.
#[test]
fn an_imported_graph_keeps_its_layout_through_publish() {
    let p = Project::new();
    p.workflow("flow", FLOW);
    let layout = json!({
        "schemaVersion": "1.0",
        "nodes": {
            "ask": { "x": 12.5, "y": -40.0, "width": 180.0, "name": "Ship it?" },
            "done": { "x": 400.0, "y": 7.0, "height": 60.0 }
        },
        "viewport": { "x": 5.0, "y": 6.0, "zoom": 0.5 }
    });
    std::fs::write(
        p.dir.join("_vance/workflows/flow.layout.json"),
        layout.to_string(),
    )
    .unwrap();
    let first = p.cli(&["graph", "flow", "--format", "reactflow"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let exported = json(&first);
    assert_eq!(node(&exported, "ask")["data"]["name"], "Ship it?");
    let out = import_graph(&p, &stdout(&first), "drawn");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        p.dir
            .join("_vance/workflow-drafts/drawn.layout.json")
            .is_file(),
        "{}",
        stdout(&out)
    );
    let out = p.cli(&["publish", "drawn"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        !p.dir
            .join("_vance/workflow-drafts/drawn.layout.json")
            .exists()
    );
    let again = p.cli(&["graph", "drawn", "--format", "reactflow"]);
    assert_eq!(code(&again), 0, "{}", stderr(&again));
    assert_eq!(
        json(&again),
        exported,
        "export, import, publish, export is identical"
    );
}

/// A cycle imports as a loop (documents loop; their exports must import again), and the
/// command says where it is.
#[test]
fn a_cycle_imports_as_a_loop_with_a_warning_naming_it() {
    let p = Project::new();
    let shell = |id: &str| {
        design_node(
            id,
            json!({ "id": id, "type": "action", "name": id,
                                "config": { "actionType": "shell_task", "run": "true",
                                            "dirName": "workspace" } }),
        )
    };
    let edge = |id: &str, s: &str, t: &str, branch: &str| json!({ "id": id, "source": s, "target": t, "data": { "branch": branch } });
    let graph = json!({
        "schemaVersion": "1.0",
        "nodes": [shell("plan"), shell("check"), shell("fix"),
                  design_node("done", json!({ "id": "done", "type": "terminal", "name": "done", "config": {} }))],
        "edges": [edge("e0", "plan", "check", "success"), edge("e1", "check", "fix", "failure"),
                  edge("e2", "fix", "check", "success"), edge("e3", "check", "done", "success")],
    });
    let out = import_graph(&p, &graph.to_string(), "looped");
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("cycle (check -> fix -> check)"),
        "{}",
        stderr(&out)
    );
    let draft = std::fs::read_to_string(p.dir.join("_vance/workflow-drafts/looped.yaml")).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&draft).unwrap();
    assert_eq!(doc["states"]["check"]["on"]["failure"], "fix", "{draft}");
}

/// What the graph does not draw travels with it: the document's own settings (parameters,
/// bounds, onFailure, …) are the graph's `config`, and the import writes them back, so the
/// imported workflow behaves as the exported one. A DECISION's options named `approve` and
/// `reject` stay its options (only an approval's approve and reject are its outcomes).
#[test]
fn the_workflows_settings_and_a_decisions_options_survive_the_round_trip() {
    let p = Project::new();
    p.workflow(
        "settled",
        "description: settled\nparameters:\n  n: { type: number, default: 1 }\nbounds:\n  \
         maxTaskSpawns: 9\nonFailure: { policy: fallback, fallback: rescue }\nstart: pick\n\
         states:\n  pick:\n    type: gate_task\n    inbox: { kind: DECISION, title: Which?, \
         options: [approve, reject] }\n    on: { approve: work, reject: rescue, insufficient_info: \
         rescue, undecidable: rescue }\n  work:\n    type: shell_task\n    run: exit 1\n    \
         dirName: workspace\n    on: { success: rescue }\n  rescue: { type: terminal, result: rescued }\n",
    );
    let first = exported(&p, "settled");
    assert_eq!(
        first["config"]["onFailure"]["fallback"], "rescue",
        "{first}"
    );
    let (text, doc) = import_as_draft(&p, &first);
    assert_eq!(doc["parameters"]["n"]["default"], 1, "{text}");
    assert_eq!(doc["bounds"]["maxTaskSpawns"], 9, "{text}");
    assert_eq!(doc["onFailure"]["policy"], "fallback", "{text}");
    assert_eq!(doc["states"]["pick"]["on"]["approve"], "work", "{text}");
    exports_as(&p, &text, &first);
}

/// A parallel_task starts its branches in the order they are written: the export says that
/// order (a JSON object's keys are sorted), and the import writes the branches back in it.
#[test]
fn a_parallel_tasks_branch_order_survives_the_round_trip() {
    let p = Project::new();
    p.workflow(
        "fan",
        "start: fan\nstates:\n  fan:\n    type: parallel_task\n    maxParallelism: 1\n    \
         branches:\n      zeta:\n        start: z\n        states:\n          z: { type: \
         terminal, result: z }\n      alpha:\n        start: a\n        states:\n          a: \
         { type: terminal, result: a }\n    on: { success: done, failure: done }\n  done: { \
         type: terminal }\n",
    );
    let first = exported(&p, "fan");
    let fan = first["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == "fan")
        .unwrap();
    assert_eq!(
        fan["data"]["config"]["branchOrder"],
        json!(["zeta", "alpha"]),
        "{first}"
    );
    let (text, _) = import_as_draft(&p, &first);
    // In the order the text has them (a JSON value would sort them).
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let names: Vec<&str> = doc["states"]["fan"]["branches"]
        .as_mapping()
        .unwrap()
        .keys()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(names, ["zeta", "alpha"], "{text}");
    assert!(!text.contains("branchOrder"), "{text}");
    exports_as(&p, &text, &first);

    // Branches written in the order of their names need no list.
    p.workflow(
        "sorted",
        &std::fs::read_to_string(p.dir.join("_vance/workflows/fan.yaml"))
            .unwrap()
            .replace("zeta", "omega")
            .replace("alpha", "zeta")
            .replace("omega", "alpha"),
    );
    let sorted = exported(&p, "sorted");
    assert!(!sorted.to_string().contains("branchOrder"), "{sorted}");
}

/// An export imports as the document it came from: a state without routes (a compensation)
/// gets none, a tool the document did not allow is not allowed by the import, and a
/// DECISION option that reads like a catch label stays an option.
#[test]
fn an_export_imports_without_routes_or_tools_the_document_lacked() {
    let p = Project::new();
    p.workflow(
        "lean",
        "start: pick\nonFailure: compensate\nstates:\n  pick:\n    type: gate_task\n    inbox: \
         { kind: DECISION, title: Which?, options: [\"catch timeout\", go] }\n    on: { \
         \"catch timeout\": fetch, go: fetch, insufficient_info: done, undecidable: done }\n  \
         fetch:\n    type: tool_task\n    tool: http_request\n    params: { url: \
         \"http://127.0.0.1:9/x\" }\n    compensate: undo\n    on: { success: done }\n  \
         undo:\n    type: shell_task\n    run: \"true\"\n    dirName: workspace\n  done: { type: terminal }\n",
    );
    let first = exported(&p, "lean");
    let (text, doc) = import_as_draft(&p, &first);
    assert_eq!(doc.get("allowedTools"), None, "{text}");
    assert_eq!(doc["states"].get("end"), None, "{text}");
    assert_eq!(doc["states"]["undo"].get("on"), None, "{text}");
    assert_eq!(
        doc["states"]["pick"]["on"]["catch timeout"], "fetch",
        "{text}"
    );
    exports_as(&p, &text, &first);
}

/// The reference's review loops back to its start when rejected, so no node is without
/// incoming edges: the export marks the start, and the import starts there.
#[test]
fn a_start_a_loop_leads_back_to_survives_export_and_import() {
    let p = Project::new();
    p.workflow(
        "review",
        include_str!("../../../yaml-frontend/tests/fixtures/pr-review.yaml"),
    );
    let first = exported(&p, "review");
    assert_eq!(node(&first, "plan")["data"]["start"], true);
    assert_eq!(node(&first, "merge")["data"].get("start"), None);
    let (text, doc) = import_as_draft(&p, &first);
    assert_eq!(doc["start"], "plan", "{text}");
    exports_as(&p, &text, &first);
}
