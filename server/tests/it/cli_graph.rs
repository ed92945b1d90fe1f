//! `magrathea graph NAME --format reactflow`: the editor graph the HTTP API serves, placed by
//! the project's layout file when there is one; the other formats stay as they were.

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

fn node<'a>(graph: &'a Value, id: &str) -> &'a Value {
    graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id} in {graph}"))
}

/// A node of a Friday editor graph at the origin, with its `data`.
fn design_node(id: &str, data: Value) -> Value {
    json!({ "id": id, "type": "workflow_node", "position": { "x": 0, "y": 0 }, "data": data })
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

fn friday_graph(edges: &[(&str, &str)]) -> Value {
    let action = |id: &str| {
        json!({ "id": id, "type": "workflow_node", "position": { "x": 0, "y": 0 },
                "data": { "id": id, "type": "action", "name": id,
                          "config": { "actionType": "shell_task", "run": "true" } } })
    };
    let mut nodes: Vec<Value> = ["start", "a", "b", "join"]
        .iter()
        .map(|n| action(n))
        .collect();
    nodes.push(
        json!({ "id": "end", "type": "workflow_node", "position": { "x": 0, "y": 0 },
                       "data": { "id": "end", "type": "terminal", "name": "end", "config": {} } }),
    );
    let edges: Vec<Value> = edges
        .iter()
        .enumerate()
        .map(|(i, (s, t))| {
            json!({ "id": format!("e{i}"), "source": s, "target": t, "data": { "branch": "success" } })
        })
        .collect();
    json!({ "schemaVersion": "1.0", "nodes": nodes, "edges": edges })
}

#[test]
fn a_series_parallel_friday_graph_imports_as_a_parallel_task_draft() {
    let p = Project::new();
    let graph = friday_graph(&[
        ("start", "a"),
        ("start", "b"),
        ("a", "join"),
        ("b", "join"),
        ("join", "end"),
    ]);
    let file = p.dir.join("fan.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "fan"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let draft = p.dir.join("_vance/workflow-drafts/fan.yaml");
    let text = std::fs::read_to_string(&draft).unwrap();
    let loaded = load_workflow("fan.yaml", &text, &LoadOptions::default()).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert!(
        !text.trim_start().starts_with('{'),
        "the draft is written as YAML: {text}"
    );
    assert_eq!(doc["start"], "start");
    assert_eq!(doc["states"]["start"]["on"]["success"], "start_parallel");
    let fan = &doc["states"]["start_parallel"];
    assert_eq!(fan["type"], "parallel_task");
    assert_eq!(fan["on"]["success"], "join");
    assert_eq!(fan["branches"]["a"]["states"]["a"]["on"]["success"], "done");
    assert!(
        doc["states"].get("a").is_none(),
        "branch states live in the branch"
    );
    assert_eq!(
        loaded.plan.states.len(),
        4,
        "start, join, end and the parallel state"
    );
    // A second import under the same name leaves the draft as it is.
    std::fs::write(&draft, "# edited by hand\n").unwrap();
    let again = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "fan"]);
    assert_eq!(code(&again), 2);
    assert!(
        stderr(&again).contains("exists already"),
        "{}",
        stderr(&again)
    );
    assert_eq!(
        std::fs::read_to_string(&draft).unwrap(),
        "# edited by hand\n"
    );
}

/// A trigger that fans out (the design's "nodes reachable from the trigger, in parallel"): the
/// nodes it leads to are the graph's roots, and the draft starts with a `parallel_task` of
/// their branches instead of being refused for having several starts.
#[test]
fn a_trigger_that_fans_out_starts_the_draft_with_a_parallel_task() {
    let p = Project::new();
    let mut graph = friday_graph(&[
        ("start", "a"),
        ("start", "b"),
        ("a", "join"),
        ("b", "join"),
        ("join", "end"),
    ]);
    graph["nodes"][0]["data"] = json!({ "id": "start", "type": "trigger", "name": "hook",
        "config": { "triggerType": "webhook" } });
    let file = p.dir.join("hooked.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&[
        "graph",
        "import",
        file.to_str().unwrap(),
        "--name",
        "hooked",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(p.dir.join("_vance/workflow-drafts/hooked.yaml")).unwrap();
    let loaded = load_workflow("hooked.yaml", &text, &LoadOptions::default()).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(doc["start"], "start_parallel", "{text}");
    let fan = &doc["states"]["start_parallel"];
    assert_eq!(fan["type"], "parallel_task", "{text}");
    assert_eq!(fan["on"]["success"], "join", "{text}");
    for branch in ["a", "b"] {
        assert_eq!(
            fan["branches"][branch]["states"][branch]["on"]["success"], "done",
            "{text}"
        );
        assert!(doc["states"].get(branch).is_none(), "{text}");
    }
    assert!(
        doc["states"].get("start").is_none(),
        "a trigger is no state: {text}"
    );
    assert_eq!(
        loaded.plan.states.len(),
        3,
        "the parallel state, join and end"
    );

    // Roots that the trigger does not all lead to are still refused.
    let mut graph = friday_graph(&[
        ("start", "a"),
        ("a", "join"),
        ("b", "join"),
        ("join", "end"),
    ]);
    graph["nodes"][0]["data"] = json!({ "id": "start", "type": "trigger", "name": "hook",
        "config": { "triggerType": "webhook" } });
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "other"]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("MAG-GR012"), "{}", stderr(&out));
}

#[test]
fn a_graph_that_is_not_series_parallel_is_refused_naming_the_node_in_the_way() {
    let p = Project::new();
    // `b` forks again towards `end`: the branches of `start` do not simply meet at `join`.
    let graph = friday_graph(&[
        ("start", "a"),
        ("start", "b"),
        ("a", "join"),
        ("b", "join"),
        ("b", "end"),
        ("join", "end"),
    ]);
    let file = p.dir.join("knot.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "knot"]);
    assert_eq!(code(&out), 2);
    let err = stderr(&out);
    assert!(
        err.contains("[MAG-GR011] the fan-out at 'start' is not series-parallel: node 'b'")
            && err.contains("b -[success]-> join")
            && err.contains("b -[success]-> end"),
        "{err}"
    );
    assert!(!p.dir.join("_vance/workflow-drafts/knot.yaml").exists());
    let two_starts = friday_graph(&[("a", "join"), ("join", "end")]);
    std::fs::write(&file, two_starts.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "knot"]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("[MAG-GR012]"), "{}", stderr(&out));
}

/// A graph in the design's own terms: a trigger node (what starts a run, not a state) leading to
/// an approval node configured with `approverRole`, `onReject` and `timeoutMs`, whose approve
/// and reject branches end the run. It imports as a gate with an APPROVAL inbox, and the draft
/// runs: published, it waits on that approval. A node leading to a trigger is refused.
#[test]
fn a_friday_graph_with_a_trigger_and_an_approval_node_imports_and_runs() {
    let p = Project::new();
    let graph = json!({
        "schemaVersion": "1.0",
        "reactFlowVersion": "11",
        "nodes": [
            design_node("t1", json!({ "id": "t1", "type": "trigger", "name": "nightly",
                               "config": { "triggerType": "cron", "cron": "0 0 6 * * *",
                                           "timezone": "UTC" } })),
            design_node("review", json!({ "id": "review", "type": "approval", "name": "Ship it?",
                                   "config": { "approverRole": "admin", "onReject": "fail",
                                               "timeoutMs": 60000 } })),
            design_node("shipped", json!({ "id": "shipped", "type": "terminal", "name": "shipped",
                                    "config": { "result": "shipped" } })),
            design_node("stopped", json!({ "id": "stopped", "type": "terminal", "name": "stopped",
                                    "config": { "result": "stopped" } })),
        ],
        "edges": [
            { "id": "e0", "source": "t1", "target": "review" },
            { "id": "e1", "source": "review", "target": "shipped", "data": { "branch": "approve" } },
            { "id": "e2", "source": "review", "target": "stopped", "data": { "branch": "reject" } },
        ],
    });
    let file = p.dir.join("ship.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "ship"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(p.dir.join("_vance/workflow-drafts/ship.yaml")).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    assert_eq!(doc["start"], "review", "{text}");
    assert!(doc["states"].get("t1").is_none(), "{text}");
    let review = &doc["states"]["review"];
    assert_eq!(review["type"], "gate_task", "{text}");
    assert_eq!(review["timeoutSeconds"], 60, "{text}");
    assert_eq!(
        review["inbox"],
        json!({ "kind": "APPROVAL", "title": "Ship it?", "approvers": { "roles": ["admin"] } }),
        "{text}"
    );
    assert_eq!(
        review["on"],
        json!({ "approved": "shipped", "rejected": "stopped" }),
        "{text}"
    );

    // The cron trigger node is a schedule the draft carries: it starts nothing until the
    // draft is published (Friday §5.1), and then starts the published workflow.
    let carried = p
        .dir
        .join("_vance/workflow-drafts/ship.triggers/scheduler/ship-t1.yaml");
    assert!(stdout(&out).contains("ship-t1.yaml"), "{}", stdout(&out));
    let schedule: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&carried).unwrap()).unwrap();
    assert_eq!(schedule["workflow"], "ship", "{schedule}");
    assert_eq!(schedule["cron"], "0 0 6 * * *", "{schedule}");
    assert_eq!(schedule["params"]["triggerNodeId"], "t1", "{schedule}");
    assert_eq!(json(&p.cli(&["schedules", "list", "--json"])), json!([]));

    let published = p.cli(&["publish", "ship"]);
    assert_eq!(code(&published), 0, "{}", stderr(&published));
    assert!(
        stdout(&published).contains("trigger: _vance/scheduler/ship-t1.yaml"),
        "{}",
        stdout(&published)
    );
    assert!(!carried.exists());
    let listed = json(&p.cli(&["schedules", "list", "--json"]));
    assert_eq!(listed[0]["name"], "ship-t1", "{listed}");
    assert_eq!(listed[0]["workflow"], "ship", "{listed}");
    assert_eq!(listed[0]["timezone"], "UTC", "{listed}");
    assert_eq!(listed[0]["active"], true, "{listed}");
    assert_eq!(listed[0]["triggerNodeId"], "t1", "{listed}");
    let ran = p.cli(&["run", "ship", "--json"]);
    assert_eq!(code(&ran), 3, "waits on the approval: {}", stderr(&ran));
    let items = json(&p.cli(&["inbox", "list", "--json"]));
    assert_eq!(items[0]["title"], "Ship it?", "{items}");

    let mut looped = graph.clone();
    looped["edges"]
        .as_array_mut()
        .unwrap()
        .push(json!({ "id": "e3", "source": "stopped", "target": "t1" }));
    std::fs::write(&file, looped.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "loop"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("[MAG-GR010] edge stopped -> t1 leads to a trigger node"),
        "{}",
        stderr(&out)
    );
}

/// One HTTP request answered 200 with a JSON body, on a real loopback socket: the request's
/// text (head and body) comes back through the handle.
fn one_request_server() -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // Read the head, then as many body bytes as Content-Length says.
        loop {
            let n = conn.read(&mut buf).unwrap();
            seen.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&seen).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let len = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if seen.len() >= end + 4 + len {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        let body = r#"{"accepted":true}"#;
        write!(
            conn,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        String::from_utf8_lossy(&seen).to_string()
    });
    (port, handle)
}

/// The design's own action and condition nodes (§1, §4: every action is a skill) import as
/// the document's states: `http_request` → a `tool_task` of the `http_request` tool, `skill`
/// → a `tool_task` of that tool with `inputMapping` as its params, `ai_completion` → an
/// `agent_task` of the `ai-completion` recipe; an `if` condition with `true`/`false` edges →
/// a `condition_task` whose rule is its expression. Published, the draft runs: the condition
/// picks the branch, and the HTTP request reaches a real server with its method, header and
/// body.
#[test]
fn a_friday_graph_of_built_in_actions_and_an_if_condition_imports_and_runs() {
    let p = Project::new();
    let (port, server) = one_request_server();
    let settings = format!("egress:\n  allowHosts: [\"127.0.0.1:{port}\"]\n");
    let dir = p.root.join("acme/_tenant/_vance");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("settings.yaml"), settings).unwrap();
    let node = |id: &str, ty: &str, config: Value| {
        json!({ "id": id, "type": "workflow_node", "position": { "x": 0, "y": 0 },
                "data": { "id": id, "type": ty, "name": id, "config": config } })
    };
    let graph = json!({
        "schemaVersion": "1.0",
        "reactFlowVersion": "11",
        "nodes": [
            node("hook", "trigger", json!({ "triggerType": "webhook", "method": "POST" })),
            node("big", "condition", json!({ "conditionType": "if",
                                             "expression": "#params['amount'] > 100" })),
            node("notify", "action", json!({ "actionType": "http_request", "method": "POST",
                                             "url": format!("http://127.0.0.1:{port}/hooks"),
                                             "headers": { "x-order": "${params.amount}" },
                                             "body": { "amount": "${params.amount}" } })),
            node("summarise", "action", json!({ "actionType": "ai_completion",
                                                "prompt": "Summarise the order",
                                                "model": "gpt-4o-mini", "temperature": 0 })),
            node("label", "action", json!({ "actionType": "skill", "skillId": "doc_read",
                                            "inputMapping": { "path": "orders.md" } })),
            node("done", "terminal", json!({ "result": "${state.sent.status}" })),
            node("small", "terminal", json!({ "result": "small" })),
        ],
        "edges": [
            { "id": "e0", "source": "hook", "target": "big" },
            { "id": "e1", "source": "big", "target": "notify", "data": { "branch": "true" } },
            { "id": "e2", "source": "big", "target": "small", "data": { "branch": "false" } },
            { "id": "e3", "source": "notify", "target": "done", "data": { "branch": "success" } },
            { "id": "e4", "source": "summarise", "target": "label", "data": { "branch": "success" } },
            { "id": "e5", "source": "label", "target": "done", "data": { "branch": "success" } },
        ],
    });
    let file = p.dir.join("orders.graph.json");
    let import = |graph: &Value| {
        std::fs::write(&file, graph.to_string()).unwrap();
        p.cli(&[
            "graph",
            "import",
            file.to_str().unwrap(),
            "--name",
            "orders",
        ])
    };
    let out = import(&graph);
    // `summarise` has no incoming edge: two starts.
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(stderr(&out).contains("MAG-GR012"), "{}", stderr(&out));

    // `small` leads on to `summarise`, so the graph has one start.
    let mut graph = graph;
    graph["edges"].as_array_mut().unwrap().push(
        json!({ "id": "e6", "source": "small", "target": "summarise", "data": { "branch": "success" } }),
    );
    graph["nodes"][6] = node(
        "small",
        "action",
        json!({ "actionType": "shell_task", "run": "true" }),
    );
    let out = import(&graph);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = std::fs::read_to_string(p.dir.join("_vance/workflow-drafts/orders.yaml")).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
    let states = &doc["states"];
    assert_eq!(doc["start"], "big", "{text}");
    assert_eq!(
        doc["allowedTools"],
        json!([
            "web_search",
            "doc_read",
            "doc_list",
            "inbox_read",
            "http_request"
        ]),
        "the default pool and the graph's own tools: {text}"
    );
    assert_eq!(
        states["big"],
        json!({ "type": "condition_task", "transitions": [
            { "if": "#params['amount'] > 100", "to": "notify" }, { "else": "small" } ] }),
        "{text}"
    );
    assert_eq!(states["notify"]["type"], "tool_task", "{text}");
    assert_eq!(states["notify"]["tool"], "http_request", "{text}");
    assert_eq!(states["notify"]["params"]["method"], "POST", "{text}");
    assert_eq!(
        states["summarise"],
        json!({ "type": "agent_task", "recipe": "ai-completion",
                "params": { "prompt": "Summarise the order", "model": "gpt-4o-mini",
                            "temperature": 0 },
                "on": { "success": "label" } }),
        "{text}"
    );
    assert_eq!(
        states["label"],
        json!({ "type": "tool_task", "tool": "doc_read", "params": { "path": "orders.md" },
                "on": { "success": "done" } }),
        "{text}"
    );

    // The HTTP request keeps its output for the terminal: store it.
    let text = text.replace("  notify:\n", "  notify:\n    storeAs: sent\n");
    std::fs::write(p.dir.join("_vance/workflow-drafts/orders.yaml"), text).unwrap();
    let published = p.cli(&["publish", "orders"]);
    assert_eq!(code(&published), 0, "{}", stderr(&published));
    let ran = p.cli(&["run", "orders", "--param", "amount=250", "--json"]);
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    assert_eq!(json(&ran)["result"], 200, "{}", stdout(&ran));
    let request = server.join().unwrap();
    assert!(request.starts_with("POST /hooks HTTP/1.1"), "{request}");
    assert!(
        request.to_ascii_lowercase().contains("x-order: 250"),
        "{request}"
    );
    assert!(
        request.ends_with(r#"{"amount":250}"#) || request.ends_with(r#"{"amount":"250"}"#),
        "{request}"
    );
}

/// `graph import` without its FILE, with a FILE that is not there, and the import's arguments
/// given to a plain `graph` are usage errors (exit 2), said as such.
#[test]
fn misused_import_arguments_exit_2_saying_what_is_wrong() {
    let p = Project::new();
    p.workflow("ok", "start: done\nstates:\n  done: { type: terminal }\n");
    for (args, says) in [
        (vec!["graph", "import"], "needs the graph's FILE"),
        (
            vec!["graph", "import", "/nonexistent/g.json", "--name", "g"],
            "cannot read the graph",
        ),
        (vec!["graph", "ok", "--name", "x"], "--name is for"),
        (vec!["graph", "ok", "g.json"], "a FILE is for"),
        (
            vec!["graph", "ok", "--project", "/nonexistent/project"],
            "the project directory /nonexistent/project does not exist",
        ),
    ] {
        let out = p.cli(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    // A workflow named `import` is drawn when no FILE follows.
    p.workflow(
        "import",
        "start: done\nstates:\n  done: { type: terminal }\n",
    );
    let out = p.cli(&["graph", "import"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("stateDiagram-v2"),
        "{}",
        stdout(&out)
    );
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
    let file = p.dir.join("routed.graph.json");
    std::fs::write(&file, stdout(&first)).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "again"]);
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
    let file = p.dir.join("flow.graph.json");
    std::fs::write(&file, stdout(&first)).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "drawn"]);
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
    let file = p.dir.join("loop.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&[
        "graph",
        "import",
        file.to_str().unwrap(),
        "--name",
        "looped",
    ]);
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

/// The reference's review loops back to its start when rejected, so no node is without
/// incoming edges: the export marks the start, and the import starts there.
#[test]
fn a_start_a_loop_leads_back_to_survives_export_and_import() {
    let p = Project::new();
    p.workflow(
        "review",
        include_str!("../../../yaml-frontend/tests/fixtures/pr-review.yaml"),
    );
    let first = p.cli(&["graph", "review", "--format", "reactflow"]);
    assert_eq!(code(&first), 0, "{}", stderr(&first));
    let exported = json(&first);
    assert_eq!(node(&exported, "plan")["data"]["start"], true);
    assert_eq!(node(&exported, "merge")["data"].get("start"), None);
    let file = p.dir.join("review.graph.json");
    std::fs::write(&file, stdout(&first)).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "again"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let draft = std::fs::read_to_string(p.dir.join("_vance/workflow-drafts/again.yaml")).unwrap();
    let doc: Value = serde_yaml_ng::from_str(&draft).unwrap();
    assert_eq!(doc["start"], "plan", "{draft}");
    p.workflow("again", &draft);
    let second = p.cli(&["graph", "again", "--format", "reactflow"]);
    assert_eq!(code(&second), 0, "{}", stderr(&second));
    assert_eq!(
        json(&second),
        exported,
        "export, import, export is identical"
    );
}

/// Friday ends a run at a node without outgoing edges: imported, published and run, a graph
/// whose last node is an action completes there.
#[test]
fn an_imported_graph_completes_at_its_last_node() {
    let p = Project::new();
    let graph = json!({
        "schemaVersion": "1.0",
        "reactFlowVersion": "11",
        "nodes": [
            design_node("first", json!({ "id": "first", "type": "action", "name": "first",
                                  "config": { "actionType": "shell_task", "run": "echo one",
                                              "dirName": "workspace" } })),
            design_node("nap", json!({ "id": "nap", "type": "action", "name": "nap",
                                "config": { "actionType": "timer_task", "duration": "0s" } })),
        ],
        "edges": [{ "id": "e0", "source": "first", "target": "nap" }],
    });
    let file = p.dir.join("leaf.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "leaf"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let published = p.cli(&["publish", "leaf"]);
    assert_eq!(code(&published), 0, "{}", stderr(&published));
    let ran = p.cli(&["run", "leaf", "--json"]);
    assert_eq!(code(&ran), 0, "{}", stderr(&ran));
    assert_eq!(json(&ran)["status"], "DONE");
}

/// Publishing a graph's draft syncs the graph's triggers (Friday §5.1): a trigger node the graph
/// no longer has takes its document with it; triggers written by hand stay.
#[test]
fn republishing_a_graph_removes_the_triggers_of_nodes_it_no_longer_has() {
    let p = Project::new();
    let cron = json!({ "id": "t1", "type": "trigger", "name": "nightly",
                       "config": { "triggerType": "cron", "cron": "0 0 6 * * *", "timezone": "UTC" } });
    let event = json!({ "id": "t2", "type": "trigger", "name": "on failure",
                        "config": { "triggerType": "event", "event": "workflow.run.failed" } });
    let graph = |triggers: &[&Value]| {
        let mut nodes: Vec<Value> = triggers
            .iter()
            .map(|t| design_node(t["id"].as_str().unwrap(), (*t).clone()))
            .collect();
        nodes.push(design_node(
            "done",
            json!({ "id": "done", "type": "terminal", "name": "done", "config": {} }),
        ));
        let edges: Vec<Value> = triggers
            .iter()
            .map(|t| json!({ "source": t["id"], "target": "done" }))
            .collect();
        json!({ "schemaVersion": "1.0", "nodes": nodes, "edges": edges })
    };
    let publish = |g: Value| {
        let file = p.dir.join("sync.graph.json");
        std::fs::write(&file, g.to_string()).unwrap();
        let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "sync"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        let out = p.cli(&["publish", "sync"]);
        assert_eq!(code(&out), 0, "{}", stderr(&out));
        stdout(&out)
    };
    let live = |rel: &str| p.dir.join("_vance").join(rel).exists();
    publish(graph(&[&cron, &event]));
    assert!(live("scheduler/sync-t1.yaml") && live("events/sync-t2.yaml"));
    std::fs::write(
        p.dir.join("_vance/scheduler/sync-manual.yaml"),
        "cron: \"0 0 7 * * *\"\nworkflow: sync\n",
    )
    .unwrap();

    let out = publish(graph(&[&event]));
    assert!(
        out.contains("removed trigger: _vance/scheduler/sync-t1.yaml"),
        "{out}"
    );
    assert!(!live("scheduler/sync-t1.yaml"));
    assert!(live("events/sync-t2.yaml") && live("scheduler/sync-manual.yaml"));

    publish(graph(&[]));
    assert!(
        !live("events/sync-t2.yaml"),
        "a graph without triggers keeps none"
    );
    assert!(
        live("scheduler/sync-manual.yaml"),
        "a hand-written trigger stays"
    );
}
