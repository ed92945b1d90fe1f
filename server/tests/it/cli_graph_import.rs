//! `magrathea graph import FILE --name NAME` of Friday's own editor graphs: fan-outs, trigger
//! nodes, the design's action, approval and condition nodes, refusals, and the trigger
//! documents a published graph makes live.

use crate::cli_common;
use crate::cli_graph::design_node;

use cli_common::*;
use magrathea_yaml::{LoadOptions, load_workflow};
use serde_json::{Value, json};

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

/// `start` fanning out to `a` and `b`, which meet at `join`, then `end`.
fn fan_graph() -> Value {
    friday_graph(&[
        ("start", "a"),
        ("start", "b"),
        ("a", "join"),
        ("b", "join"),
        ("join", "end"),
    ])
}

#[test]
fn a_series_parallel_friday_graph_imports_as_a_parallel_task_draft() {
    let p = Project::new();
    let graph = fan_graph();
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

/// A graph saved with a byte-order mark (as Windows tools write JSON) imports, under a name
/// with a dot as every workflow name may have.
#[test]
fn a_graph_after_a_byte_order_mark_imports_under_a_dotted_name() {
    let p = Project::new();
    let graph = fan_graph();
    let file = p.dir.join("bom.graph.json");
    std::fs::write(&file, format!("\u{FEFF}{graph}")).unwrap();
    let out = p.cli(&[
        "graph",
        "import",
        file.to_str().unwrap(),
        "--name",
        "ship.v2",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(p.dir.join("_vance/workflow-drafts/ship.v2.yaml").is_file());
    // Names no workflow may have: hidden, or the runs route's.
    for refused in [".hidden", "runs"] {
        let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", refused]);
        assert_eq!(code(&out), 2, "{refused}: {}", stderr(&out));
        assert!(stderr(&out).contains("--name NAME"), "{}", stderr(&out));
    }
    // A file in another encoding is named with the place of its first byte that is not UTF-8.
    let latin = p.dir.join("latin.graph.json");
    std::fs::write(&latin, b"{\"nodes\": [], \"name\": \"caf\xe9\"}").unwrap();
    let out = p.cli(&[
        "graph",
        "import",
        latin.to_str().unwrap(),
        "--name",
        "latin",
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("[MAG-GR009]")
            && stderr(&out).contains("line 1, column 27: the file is not UTF-8 text (byte 0xE9)"),
        "{}",
        stderr(&out)
    );
}

/// A trigger that fans out (the design's "nodes reachable from the trigger, in parallel"): the
/// nodes it leads to are the graph's roots, and the draft starts with a `parallel_task` of
/// their branches instead of being refused for having several starts.
#[test]
fn a_trigger_that_fans_out_starts_the_draft_with_a_parallel_task() {
    let p = Project::new();
    let mut graph = fan_graph();
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
        json!({
            "kind": "APPROVAL",
            "title": "Ship it?",
            "approvers": { "roles": ["admin"] },
            "onReject": "fail",
        }),
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
/// no longer has takes its document with it; triggers written by hand stay, and a graph with no
/// trigger nodes at all (an export) leaves the triggers as they are.
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

    // A graph without trigger nodes (as an export is) leaves the live triggers alone...
    publish(graph(&[]));
    assert!(
        live("events/sync-t2.yaml"),
        "a graph without trigger nodes says nothing of triggers"
    );
    // ... one whose only trigger node is a manual start has no triggers left.
    let manual = json!({ "id": "t3", "type": "trigger", "name": "by hand", "config": {} });
    publish(graph(&[&manual]));
    assert!(
        !live("events/sync-t2.yaml"),
        "a graph without triggers keeps none"
    );
    assert!(
        live("scheduler/sync-manual.yaml"),
        "a hand-written trigger stays"
    );
}

/// A graph whose two triggers lead to different approvals: the run a trigger starts (with its
/// `triggerNodeId`, as the trigger's document starts it) opens only the approval its trigger
/// leads to (seed 001 §5.3), and a start by hand goes where the first trigger leads.
#[test]
fn a_run_executes_only_the_nodes_its_own_trigger_leads_to() {
    let p = Project::new();
    let approval = |id: &str| {
        design_node(
            id,
            json!({ "id": id, "type": "approval", "name": format!("approve {id}"),
                    "config": { "onReject": "fail" } }),
        )
    };
    let graph = json!({
        "schemaVersion": "1.0",
        "nodes": [
            design_node("t1", json!({ "id": "t1", "type": "trigger", "name": "nightly",
                               "config": { "triggerType": "cron", "cron": "0 0 6 * * *" } })),
            design_node("t2", json!({ "id": "t2", "type": "trigger", "name": "on failure",
                               "config": { "triggerType": "event",
                                           "event": "workflow.run.failed" } })),
            approval("a"),
            approval("b"),
            design_node("end", json!({ "id": "end", "type": "terminal", "name": "end",
                                "config": {} })),
        ],
        "edges": [
            { "id": "e0", "source": "t1", "target": "a" },
            { "id": "e1", "source": "t2", "target": "b" },
            { "id": "e2", "source": "a", "target": "end" },
            { "id": "e3", "source": "b", "target": "end" },
        ],
    });
    let file = p.dir.join("two.graph.json");
    std::fs::write(&file, graph.to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "two"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out = p.cli(&["publish", "two"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let titles = |args: &[&str]| {
        let ran = p.cli(&[&["run", "two", "--json"], args].concat());
        assert_eq!(code(&ran), 3, "waits on an approval: {}", stderr(&ran));
        let id = json(&ran)["workflowRunId"].as_str().unwrap().to_owned();
        let items = json(&p.cli(&["inbox", "list", "--json"]));
        let mut titles: Vec<String> = items
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["workflowRunId"] == id.as_str())
            .map(|i| i["title"].as_str().unwrap().to_owned())
            .collect();
        titles.sort();
        titles
    };
    assert_eq!(titles(&["--param", "triggerNodeId=t2"]), ["approve b"]);
    assert_eq!(titles(&["--param", "triggerNodeId=t1"]), ["approve a"]);
    assert_eq!(titles(&[]), ["approve a"]);
}

/// An edge whose branch its design node never ends with (an action's `approve`, an approval's
/// `true`) would leave the node it leads to unreachable: the import refuses it, naming the
/// state; a document's own state (an export's, its `config` naming its `type`) keeps its
/// routes as written, and the draft's warnings are shown.
#[test]
fn an_edge_for_an_outcome_its_node_never_has_is_refused() {
    let p = Project::new();
    let graph = |branch: &str| {
        json!({
            "schemaVersion": "1.0",
            "nodes": [
                design_node("a", json!({ "id": "a", "type": "action", "name": "a",
                                  "config": { "actionType": "shell_task", "run": "true" } })),
                design_node("b", json!({ "id": "b", "type": "terminal", "name": "b",
                                  "config": {} })),
            ],
            "edges": [{ "id": "e0", "source": "a", "target": "b", "data": { "branch": branch } }],
        })
    };
    let file = p.dir.join("never.graph.json");
    std::fs::write(&file, graph("approve").to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "never"]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains("[MAG-GR010] an edge's branch is no outcome of its source node")
            && stderr(&out).contains("state 'a'"),
        "{}",
        stderr(&out)
    );
    assert!(!p.dir.join("_vance/workflow-drafts/never.yaml").exists());

    std::fs::write(&file, graph("failure").to_string()).unwrap();
    let out = p.cli(&["graph", "import", file.to_str().unwrap(), "--name", "never"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}
