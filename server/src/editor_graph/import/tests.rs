use super::*;

fn node(data: Value) -> Value {
    json!({ "id": "gate", "type": "workflow_node", "data": data })
}

fn graph(nodes: Value, edges: Value) -> Value {
    json!({ "schemaVersion": "1.0", "nodes": nodes, "edges": edges })
}

fn n(id: &str, ty: &str, config: Value) -> Value {
    json!({ "id": id, "type": "workflow_node",
            "data": { "id": id, "type": ty, "name": id, "config": config } })
}

/// An action node running `true` in a shell.
fn shell(id: &str) -> Value {
    n(
        id,
        "action",
        json!({ "actionType": "shell_task", "run": "true" }),
    )
}

fn states(doc: &serde_yaml_ng::Value) -> Value {
    serde_json::to_value(&doc["states"]).unwrap()
}

/// A `switch` takes its rules from the cases, in their order (the first match wins), each
/// routed by the edge whose `data.condition` is the case's label; the `false` edge is the
/// `else`.
#[test]
fn a_switch_condition_routes_its_cases_in_their_order_and_the_false_edge_last() {
    let g = graph(
        json!([
            n(
                "route",
                "condition",
                json!({ "conditionType": "switch", "expression": "",
                "cases": [
                    { "label": "high", "expression": "#params['n'] > 100" },
                    { "label": "mid", "expression": "#params['n'] > 10" },
                ] })
            ),
            n("a", "terminal", json!({})),
            n("b", "terminal", json!({})),
            n("c", "terminal", json!({})),
        ]),
        json!([
            { "source": "route", "target": "c", "data": { "branch": "false" } },
            { "source": "route", "target": "b", "data": { "branch": "true", "condition": "mid" } },
            { "source": "route", "target": "a", "data": { "branch": "true", "condition": "high" } },
        ]),
    );
    let doc = import(&g).unwrap();
    assert_eq!(
        states(&doc)["route"],
        json!({ "type": "condition_task", "transitions": [
            { "if": "#params['n'] > 100", "to": "a" },
            { "if": "#params['n'] > 10", "to": "b" },
            { "else": "c" },
        ] })
    );
}

/// An `if` node with only its `false` edge goes there when its expression is false, and ends
/// the run when it holds: the expression is kept as a rule to the end, before the `else`.
#[test]
fn an_if_condition_with_only_its_false_edge_ends_where_the_expression_holds() {
    let g = graph(
        json!([
            n(
                "s",
                "condition",
                json!({ "conditionType": "if", "expression": "#params['n'] > 1" })
            ),
            n("b", "terminal", json!({})),
        ]),
        json!([{ "source": "s", "target": "b", "data": { "branch": "false" } }]),
    );
    let doc = import(&g).unwrap();
    assert_eq!(
        states(&doc)["s"],
        json!({ "type": "condition_task", "transitions": [
            { "if": "#params['n'] > 1", "to": "end" },
            { "else": "b" },
        ] })
    );
    assert_eq!(states(&doc)["end"], json!({ "type": "terminal" }));
}

/// A node whose edges leave only on a failure (or an approval only on reject) ends the run where
/// it goes on normally, as Friday runs only the nodes an outcome reaches: its normal outcome
/// leads to the end beside the edges it has.
#[test]
fn a_node_with_edges_but_none_for_its_normal_outcome_ends_there() {
    let g = graph(
        json!([
            n(
                "a",
                "action",
                json!({ "actionType": "shell_task", "run": "true" })
            ),
            n("b", "terminal", json!({})),
        ]),
        json!([{ "source": "a", "target": "b", "data": { "branch": "failure" } }]),
    );
    let doc = import(&g).unwrap();
    assert_eq!(
        states(&doc)["a"]["on"],
        json!({ "failure": "b", "success": "end" })
    );
    assert_eq!(states(&doc)["end"], json!({ "type": "terminal" }));
}

/// A condition on an edge that leaves no condition node is refused, not dropped: the edge would
/// be taken whatever the condition says.
#[test]
fn an_edge_condition_outside_a_condition_node_is_refused() {
    let g = graph(
        json!([
            n(
                "a",
                "action",
                json!({ "actionType": "shell_task", "run": "true" })
            ),
            n("b", "terminal", json!({})),
        ]),
        json!([{ "source": "a", "target": "b", "data": { "condition": "#params['n'] > 100" } }]),
    );
    let e = import(&g).unwrap_err().to_string();
    assert!(
        e.contains("[MAG-GR010]") && e.contains("a -> b") && e.contains("no condition node"),
        "{e}"
    );
}

/// Two nodes of one id are refused, naming it: the second would replace the first.
#[test]
fn a_node_id_given_twice_is_refused() {
    let g = graph(
        json!([
            n(
                "a",
                "action",
                json!({ "actionType": "skill", "skillId": "first" })
            ),
            n("a", "approval", json!({})),
            n("b", "terminal", json!({})),
        ]),
        json!([{ "source": "a", "target": "b" }]),
    );
    let e = import(&g).unwrap_err().to_string();
    assert!(e.contains("[MAG-GR009]") && e.contains("'a'"), "{e}");
}

/// Built-in actions without what they need, a condition edge that is no rule, and a
/// transform node are refused naming the node and the field.
#[test]
fn incomplete_design_nodes_are_refused_naming_what_is_missing() {
    let with = |node: Value, edges: Value| {
        let g = graph(json!([node, n("end", "terminal", json!({}))]), edges);
        import(&g).unwrap_err().to_string()
    };
    let to_end = json!([{ "source": "x", "target": "end" }]);
    for (config, missing) in [
        (
            json!({ "actionType": "http_request", "method": "GET" }),
            "data.config.url",
        ),
        (json!({ "actionType": "skill" }), "data.config.skillId"),
        (
            json!({ "actionType": "ai_completion", "model": "m" }),
            "data.config.prompt",
        ),
    ] {
        let e = with(n("x", "action", config), to_end.clone());
        assert!(
            e.contains("[MAG-GR010]") && e.contains("'x'") && e.contains(missing),
            "{e}"
        );
    }
    let e = with(
        n("x", "condition", json!({ "conditionType": "if" })),
        json!([{ "source": "x", "target": "end", "data": { "branch": "true" } }]),
    );
    assert!(e.contains("no config.expression"), "{e}");
    let e = with(
        n(
            "x",
            "condition",
            json!({ "conditionType": "if", "expression": "true" }),
        ),
        json!([{ "source": "x", "target": "end", "data": { "branch": "approve" } }]),
    );
    assert!(e.contains("neither a case"), "{e}");
    let e = with(
        n("x", "transform", json!({ "transformType": "map" })),
        to_end.clone(),
    );
    assert!(
        e.contains("transform node") && e.contains("script_task"),
        "{e}"
    );
}

/// Friday ends a run at a node without outgoing edges: such a node's normal outcome
/// leads to a terminal state of its own name (`end`, or `end_2` when a node has that id).
#[test]
fn a_node_without_outgoing_edges_ends_the_run_at_a_terminal() {
    let g = graph(
        json!([
            n(
                "a",
                "action",
                json!({ "actionType": "shell_task", "run": "true" })
            ),
            n(
                "end",
                "action",
                json!({ "actionType": "timer_task", "duration": "1s" })
            ),
            n("ok", "approval", json!({})),
            n(
                "last",
                "action",
                json!({ "actionType": "shell_task", "run": "true" })
            ),
        ]),
        json!([
            { "source": "a", "target": "end", "data": { "branch": "success" } },
            { "source": "a", "target": "ok", "data": { "branch": "failure" } },
        ]),
    );
    let e = import(&g).unwrap_err();
    assert_eq!(e.code, "MAG-GR012", "two starts: {e}");
    let g = graph(
        g["nodes"].clone(),
        json!([
            { "source": "a", "target": "end", "data": { "branch": "success" } },
            { "source": "a", "target": "ok", "data": { "branch": "failure" } },
            { "source": "ok", "target": "last" },
        ]),
    );
    let doc = import(&g).unwrap();
    let s = states(&doc);
    assert_eq!(s["end"]["on"], json!({ "fired": "end_2" }), "{s}");
    assert_eq!(s["last"]["on"], json!({ "success": "end_2" }), "{s}");
    assert_eq!(s["end_2"], json!({ "type": "terminal" }), "{s}");
    // An unbranched edge out of an approval is its approval (seed 001 §5.7).
    assert_eq!(s["ok"]["on"], json!({ "approved": "last" }), "{s}");
    // Its rejection, with no reject edge, fails the run with APPROVAL_REJECTED (§5.8): the
    // design's default `onReject` is kept on the inbox.
    assert_eq!(s["ok"]["inbox"]["onReject"], "fail", "{s}");
    assert_eq!(
        s["a"]["on"],
        json!({ "success": "end", "failure": "ok" }),
        "{s}"
    );
}

/// Where no rule of a condition without a false edge holds, Friday runs nothing more:
/// the run completes at the added terminal.
#[test]
fn a_condition_without_a_false_edge_ends_the_run_where_no_rule_holds() {
    let g = graph(
        json!([
            n(
                "c",
                "condition",
                json!({ "conditionType": "if", "expression": "#params['n'] > 1" })
            ),
            n("a", "terminal", json!({})),
        ]),
        json!([{ "source": "c", "target": "a", "data": { "branch": "true" } }]),
    );
    let s = states(&import(&g).unwrap());
    assert_eq!(
        s["c"]["transitions"],
        json!([{ "if": "#params['n'] > 1", "to": "a" }, { "else": "end" }]),
        "{s}"
    );
    assert_eq!(s["end"], json!({ "type": "terminal" }), "{s}");
}

/// A condition goes one way: two edges of one rule, or a case no edge leads from, are
/// refused rather than imported as a rule never taken.
#[test]
fn a_condition_routing_one_rule_two_ways_or_a_case_nowhere_is_refused() {
    let end = |id: &str| n(id, "terminal", json!({}));
    let g = graph(
        json!([
            n(
                "c",
                "condition",
                json!({ "conditionType": "if", "expression": "true" })
            ),
            end("a"),
            end("b"),
        ]),
        json!([
            { "source": "c", "target": "a", "data": { "branch": "true" } },
            { "source": "c", "target": "b", "data": { "branch": "true" } },
        ]),
    );
    let e = import(&g).unwrap_err().to_string();
    assert!(
        e.contains("[MAG-GR010]") && e.contains("both 'a' and 'b'"),
        "{e}"
    );
    let g = graph(
        json!([
            n(
                "c",
                "condition",
                json!({ "conditionType": "switch", "expression": "",
                "cases": [
                    { "label": "hi", "expression": "#params['n'] > 9" },
                    { "label": "lo", "expression": "#params['n'] < 3" },
                ] })
            ),
            end("a"),
            end("b"),
        ]),
        json!([
            { "source": "c", "target": "a", "data": { "branch": "true", "condition": "hi" } },
            { "source": "c", "target": "b", "data": { "branch": "false" } },
        ]),
    );
    let e = import(&g).unwrap_err().to_string();
    assert!(e.contains("case 'lo' has no edge"), "{e}");
}

/// What a graph says that the import cannot keep is refused, not dropped.
#[test]
fn another_schema_version_a_node_of_two_names_and_an_unknown_on_reject_are_refused() {
    let end = n("end", "terminal", json!({}));
    let mut g = graph(json!([end.clone()]), json!([]));
    g["schemaVersion"] = json!("2.0");
    assert_eq!(import(&g).unwrap_err().code, "MAG-GR003");
    let mut twice = end.clone();
    twice["data"]["id"] = json!("other");
    let e = import(&graph(json!([twice]), json!([]))).unwrap_err();
    assert_eq!(e.code, "MAG-GR009", "{e}");
    let g = graph(
        json!([n("ok", "approval", json!({ "onReject": "explode" })), end]),
        json!([{ "source": "ok", "target": "end", "data": { "branch": "approve" } }]),
    );
    let e = import(&g).unwrap_err().to_string();
    assert!(e.contains("[MAG-GR010]") && e.contains("onReject"), "{e}");
}

#[test]
fn a_timeout_edited_in_the_editor_becomes_the_states_timeout() {
    let (_, spec) = state_of(&node(json!({
        "type": "approval",
        "timeoutMs": 9000,
        "config": { "inbox": { "kind": "APPROVAL" }, "timeoutSeconds": 30 },
    })))
    .unwrap();
    assert_eq!(spec["timeoutSeconds"], json!(9));
    let (_, spec) = state_of(&node(json!({
        "type": "action",
        "timeoutMs": 1500,
        "config": { "actionType": "shell_task", "run": "true" },
    })))
    .unwrap();
    assert_eq!(spec["timeoutSeconds"], json!(1.5));
    // Without one, the config's stands.
    let (_, spec) = state_of(&node(json!({
        "type": "approval",
        "config": { "inbox": { "kind": "APPROVAL" }, "timeoutSeconds": 30 },
    })))
    .unwrap();
    assert_eq!(spec["timeoutSeconds"], json!(30));
    let e = state_of(&node(
        json!({ "type": "approval", "timeoutMs": "soon", "config": {} }),
    ))
    .unwrap_err();
    assert!(e.to_string().contains("data.timeoutMs"), "{e}");
}

/// Triggers leading to different nodes: the draft starts by routing on the run's
/// `triggerNodeId`, so a run goes only where its own trigger leads (seed 001 §5.3); a trigger
/// leading to several nodes fans out there, and a start naming no trigger goes where the
/// first one leads.
#[test]
fn triggers_leading_to_different_nodes_start_a_run_where_its_own_trigger_leads() {
    let g = graph(
        json!([
            n(
                "t1",
                "trigger",
                json!({ "triggerType": "cron", "cron": "0 0 6 * * *" })
            ),
            n("t2", "trigger", json!({})),
            shell("a"),
            shell("b"),
            shell("c"),
            shell("join"),
            n("end", "terminal", json!({})),
        ]),
        json!([
            { "source": "t1", "target": "a" },
            { "source": "t2", "target": "b" },
            { "source": "t2", "target": "c" },
            { "source": "a", "target": "end" },
            { "source": "b", "target": "join" },
            { "source": "c", "target": "join" },
            { "source": "join", "target": "end" },
        ]),
    );
    let doc = import(&g).unwrap();
    assert_eq!(doc["start"], "start_by_trigger");
    let s = states(&doc);
    assert_eq!(
        s["start_by_trigger"],
        json!({ "type": "condition_task", "transitions": [
            { "if": "#params['triggerNodeId'] == 't2'", "to": "t2_parallel" },
            { "else": "a" },
        ] })
    );
    assert_eq!(s["t2_parallel"]["type"], "parallel_task", "{s}");
    assert_eq!(s["t2_parallel"]["on"], json!({ "success": "join" }), "{s}");
    assert!(s.get("b").is_none() && s.get("c").is_none(), "{s}");

    // Triggers that all lead to the same nodes need no routing.
    let same = graph(
        json!([
            n("t1", "trigger", json!({})),
            n("t2", "trigger", json!({})),
            n("end", "terminal", json!({})),
        ]),
        json!([
            { "source": "t1", "target": "end" },
            { "source": "t2", "target": "end" },
        ]),
    );
    assert_eq!(import(&same).unwrap()["start"], "end");
}

#[test]
fn a_cycle_is_named_along_its_edges_and_a_dag_has_none() {
    let edge = |a: &str, b: &str| json!({ "source": a, "target": b });
    let looped =
        json!({ "edges": [edge("s", "a"), edge("a", "b"), edge("b", "a"), edge("b", "c")] });
    assert_eq!(
        first_cycle(&looped),
        Some(vec!["a".into(), "b".into(), "a".into()])
    );
    let diamond =
        json!({ "edges": [edge("s", "a"), edge("s", "b"), edge("a", "c"), edge("b", "c")] });
    assert_eq!(first_cycle(&diamond), None);
}

/// What an edge or node says that the draft would silently drop is refused: a condition or an
/// outcome on a trigger's edge, a condition type the design does not have, an edge id given
/// twice.
#[test]
fn what_a_draft_would_drop_is_refused() {
    let trigger = n("t1", "trigger", json!({}));
    let a = n("a", "terminal", json!({}));
    for (data, needle) in [
        (
            json!({ "condition": "#params['x'] == 1" }),
            "edge t1 -> a leaves a trigger node with data.condition",
        ),
        (
            json!({ "branch": "failure" }),
            "edge t1 -> a leaves a trigger node with branch `failure`",
        ),
    ] {
        let g = graph(
            json!([trigger.clone(), a.clone()]),
            json!([{ "source": "t1", "target": "a", "data": data }]),
        );
        let e = import(&g).unwrap_err();
        assert_eq!(e.code, "MAG-GR010", "{e}");
        assert!(e.message.contains(needle), "{e}");
    }
    let plain = graph(
        json!([trigger.clone(), a.clone()]),
        json!([{ "source": "t1", "target": "a", "data": { "branch": "success" } }]),
    );
    assert_eq!(import(&plain).unwrap()["start"], "a");

    let looping = graph(
        json!([
            n(
                "c",
                "condition",
                json!({ "conditionType": "while", "expression": "true" })
            ),
            a.clone(),
        ]),
        json!([{ "source": "c", "target": "a", "data": { "branch": "true" } }]),
    );
    let e = import(&looping).unwrap_err();
    assert_eq!(e.code, "MAG-GR010", "{e}");
    assert!(
        e.message
            .contains("condition node 'c' has conditionType \"while\""),
        "{e}"
    );

    let twice = graph(
        json!([
            n(
                "s",
                "action",
                json!({ "actionType": "shell_task", "run": "true" })
            ),
            a
        ]),
        json!([
            { "id": "e0", "source": "s", "target": "a" },
            { "id": "e0", "source": "s", "target": "a", "data": { "branch": "failure" } },
        ]),
    );
    let e = import(&twice).unwrap_err();
    assert_eq!(e.code, "MAG-GR009", "{e}");
    assert!(e.message.contains("edge id 'e0'"), "{e}");
}

/// An approval node's `onReject` is kept on the gate: in its inbox when the node is in the
/// design's terms, where it was written when the node carries a document's gate.
#[test]
fn an_approval_keeps_its_on_reject() {
    let (_, spec) = state_of(&node(json!({
        "type": "approval",
        "config": { "onReject": "reject_branch" },
    })))
    .unwrap();
    assert_eq!(spec["inbox"]["onReject"], "reject_branch", "{spec:?}");
    let (_, spec) = state_of(&node(json!({
        "type": "approval",
        "config": { "inbox": { "kind": "APPROVAL" }, "onReject": "fail" },
    })))
    .unwrap();
    assert_eq!(spec["onReject"], "fail", "{spec:?}");
    assert!(spec["inbox"].get("onReject").is_none(), "{spec:?}");
    // In any case, as the loader reads it.
    let (_, spec) = state_of(&node(json!({
        "type": "approval",
        "config": { "inbox": { "kind": "APPROVAL" }, "onReject": "Reject_Branch" },
    })))
    .unwrap();
    assert_eq!(spec["onReject"], "Reject_Branch", "{spec:?}");
    let (_, spec) = state_of(&node(json!({
        "type": "approval",
        "config": { "inbox": { "kind": "APPROVAL" } },
    })))
    .unwrap();
    assert!(spec.get("onReject").is_none(), "{spec:?}");
}

/// Friday's version config becomes the document's own settings: the run's deadline, the
/// nodes' default timeout, the failure policy (its fallback node a state) and the fan-outs'
/// parallelism; the document's own fields, where an export wrote them, win.
#[test]
fn fridays_version_config_becomes_the_documents_settings() {
    let nodes = json!([
        shell("a"),
        shell("b"),
        shell("c"),
        shell("join"),
        n("end", "terminal", json!({})),
    ]);
    let edges = json!([
        { "source": "a", "target": "b" },
        { "source": "a", "target": "c" },
        { "source": "b", "target": "join" },
        { "source": "c", "target": "join" },
        { "source": "join", "target": "end" },
    ]);
    let mut g = graph(nodes.clone(), edges.clone());
    g["config"] = json!({
        "runTimeoutMs": 60000,
        "defaultNodeTimeoutMs": 1500,
        "maxParallelism": 2,
        "failurePolicy": { "onFailure": "fallback_step", "fallbackNodeId": "end" },
        "description": "kept",
    });
    let doc = import(&g).unwrap();
    let doc_json: Value = serde_json::to_value(&doc).unwrap();
    assert_eq!(
        doc_json["bounds"],
        json!({ "runTimeoutMs": 60000 }),
        "{doc_json}"
    );
    assert_eq!(doc_json["defaults"], json!({ "taskTimeoutSeconds": 1.5 }));
    assert_eq!(
        doc_json["onFailure"],
        json!({ "policy": "fallback_step", "fallback": "end" })
    );
    assert_eq!(doc_json["description"], "kept");
    for friday in [
        "runTimeoutMs",
        "defaultNodeTimeoutMs",
        "maxParallelism",
        "failurePolicy",
    ] {
        assert!(doc_json.get(friday).is_none(), "{friday}: {doc_json}");
    }
    let fan_outs: Vec<&Value> = doc_json["states"]
        .as_object()
        .unwrap()
        .values()
        .filter(|s| s["type"] == "parallel_task")
        .collect();
    assert_eq!(fan_outs.len(), 1, "{doc_json}");
    assert_eq!(fan_outs[0]["maxParallelism"], 2);
    // The document loads as imported.
    let text = serde_yaml_ng::to_string(&doc).unwrap();
    magrathea_yaml::load_workflow("wf.yaml", &text, &Default::default())
        .unwrap_or_else(|d| panic!("{d}\n{text}"));

    // A document's own settings (an export) win over Friday's names for the same thing.
    let mut g = graph(nodes, edges);
    g["config"] = json!({
        "runTimeoutMs": 60000,
        "bounds": { "maxWallclockSeconds": 30 },
        "failurePolicy": { "onFailure": "continue_on_error" },
        "onFailure": "fail_fast",
    });
    let doc_json: Value = serde_json::to_value(import(&g).unwrap()).unwrap();
    assert_eq!(doc_json["bounds"], json!({ "maxWallclockSeconds": 30 }));
    assert_eq!(doc_json["onFailure"], "fail_fast");
}

/// The node a version's failure policy falls back to has no edge leading to it, as in any
/// Friday graph: it is a state the policy reaches, not a second start beside the one the
/// trigger leads to.
#[test]
fn a_fallback_node_reached_only_by_the_failure_policy_is_no_start() {
    let mut g = graph(
        json!([
            n("t", "trigger", json!({})),
            shell("a"),
            n("ok", "terminal", json!({})),
            n("fbk", "terminal", json!({ "outcome": "failure" })),
        ]),
        json!([
            { "source": "t", "target": "a" },
            { "source": "a", "target": "ok" },
        ]),
    );
    g["config"] = json!({
        "failurePolicy": { "onFailure": "fallback_step", "fallbackNodeId": "fbk" },
    });
    let doc = import(&g).unwrap_or_else(|e| panic!("{e}"));
    let doc_json: Value = serde_json::to_value(&doc).unwrap();
    assert_eq!(doc_json["start"], "a", "{doc_json}");
    assert_eq!(
        doc_json["onFailure"],
        json!({ "policy": "fallback_step", "fallback": "fbk" })
    );
    assert!(doc_json["states"].get("fbk").is_some(), "{doc_json}");
    let text = serde_yaml_ng::to_string(&doc).unwrap();
    magrathea_yaml::load_workflow("wf.yaml", &text, &Default::default())
        .unwrap_or_else(|d| panic!("{d}\n{text}"));
}

/// A fallback node that is also the graph's one root (the policy falls back to the start) is
/// the start: only beside another root is it set aside.
#[test]
fn a_fallback_node_that_is_the_only_root_is_the_start() {
    let mut g = graph(
        json!([shell("a"), n("ok", "terminal", json!({}))]),
        json!([{ "source": "a", "target": "ok" }]),
    );
    g["config"] = json!({
        "failurePolicy": { "onFailure": "fallback_step", "fallbackNodeId": "a" },
    });
    let doc = import(&g).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(serde_json::to_value(&doc).unwrap()["start"], "a");
}
