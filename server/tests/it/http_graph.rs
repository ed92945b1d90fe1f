//! The editor graph over real HTTP: `GET …/workflows/{name}/graph` exports a workflow as the
//! editor's React Flow JSON, `PUT` stores only where its nodes stand, and the two round-trip.

use crate::http_common;

use http_common::*;
use serde_json::{Value, json};

/// A gate, a condition, a task with a `catch:` and a retry loop, and two terminals.
const REVIEW: &str = r##"
start: build
states:
  build:
    type: shell_task
    run: make
    timeoutSeconds: 30
    on:
      success: review
    catch:
      timeout: build
      technical_error: failed
  review:
    type: gate_task
    inbox: { kind: APPROVAL, title: "Ship it?" }
    on:
      approved: route
      rejected: failed
  route:
    type: condition_task
    transitions:
      - if: "#state['size'] == 'big'"
        to: failed
      - else: done
  done: { type: terminal, result: shipped }
  failed: { type: terminal, outcome: failure }
"##;

const GRAPH: &str = "/brain/acme/project/shop/workflows/review/graph";

fn server_with_review(s: &Server) {
    write(
        &s.root.join("acme/shop/_vance/workflows/review.yaml"),
        REVIEW,
    );
}

async fn export(s: &Server) -> Value {
    let r = s.get(GRAPH, Some(ACME)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

async fn put_graph(s: &Server, token: &str, body: &Value) -> reqwest::Response {
    auth(s.client.put(s.url(GRAPH)), Some(token))
        .json(body)
        .send()
        .await
        .unwrap()
}

fn node<'a>(graph: &'a Value, id: &str) -> &'a Value {
    graph["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no node {id} in {graph}"))
}

fn edge<'a>(graph: &'a Value, label: &str) -> &'a Value {
    graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["label"] == label)
        .unwrap_or_else(|| panic!("no edge {label} in {graph}"))
}

#[tokio::test]
async fn export_maps_states_to_friday_nodes_and_transitions_to_labelled_edges() {
    let s = Server::start().await;
    server_with_review(&s);
    let g = export(&s).await;
    assert_eq!(g["schemaVersion"], "1.0");
    assert_eq!(g["reactFlowVersion"], "11");
    assert_eq!(g["viewport"], json!({"x": 0.0, "y": 0.0, "zoom": 1.0}));
    let ids: Vec<&str> = g["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["build", "review", "route", "done", "failed"]);

    let build = node(&g, "build");
    assert_eq!(build["type"], "workflow_node");
    assert_eq!(build["data"]["type"], "action");
    assert_eq!(build["data"]["name"], "build");
    assert_eq!(build["data"]["config"]["actionType"], "shell_task");
    assert_eq!(build["data"]["config"]["run"], "make");
    assert_eq!(build["data"]["timeoutMs"], 30_000);
    assert_eq!(node(&g, "review")["data"]["type"], "approval");
    assert_eq!(node(&g, "route")["data"]["type"], "condition");
    assert_eq!(node(&g, "done")["data"]["type"], "terminal");
    assert_eq!(node(&g, "done")["data"]["config"]["result"], "shipped");

    let success = edge(&g, "success");
    assert_eq!(
        (&success["source"], &success["target"]),
        (&json!("build"), &json!("review"))
    );
    assert_eq!(success["data"]["branch"], "success");
    assert_eq!(edge(&g, "approved")["data"]["branch"], "approve");
    assert_eq!(edge(&g, "rejected")["data"]["branch"], "reject");
    let retry = edge(&g, "catch timeout");
    assert_eq!(
        (&retry["source"], &retry["target"]),
        (&json!("build"), &json!("build"))
    );
    assert_eq!(retry["data"]["branch"], "timeout");
    assert_eq!(
        edge(&g, "catch technical_error")["data"]["branch"],
        "technical_error"
    );
    let rule = edge(&g, "if #state['size'] == 'big'");
    assert_eq!(rule["data"]["branch"], "true");
    assert_eq!(rule["data"]["condition"], "#state['size'] == 'big'");
    assert_eq!(edge(&g, "else")["data"]["branch"], "false");
    let edge_ids: std::collections::HashSet<&str> = g["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        edge_ids.len(),
        g["edges"].as_array().unwrap().len(),
        "edge ids are unique"
    );

    // Automatic layout: the column is the longest path from start (the loop on build does
    // not count), rows follow document order.
    let x = |id| node(&g, id)["position"]["x"].as_f64().unwrap();
    assert_eq!(x("build"), 0.0);
    assert!(x("build") < x("review") && x("review") < x("route"), "{g}");
    assert!(x("route") < x("done"), "{g}");
    assert_eq!(x("failed"), x("done"), "{g}");
    assert_ne!(node(&g, "failed")["position"], node(&g, "done")["position"]);
    assert_eq!(export(&s).await, g, "the automatic layout is deterministic");
}

#[tokio::test]
async fn export_put_export_round_trips_to_the_identical_graph() {
    let s = Server::start().await;
    server_with_review(&s);
    let first = s
        .get(GRAPH, Some(ACME))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let body: Value = serde_json::from_str(&first).unwrap();
    let r = put_graph(&s, ACME, &body).await;
    assert_eq!(r.status(), 200);
    let answered: Value = r.json().await.unwrap();
    assert_eq!(answered, body);
    let second = s
        .get(GRAPH, Some(ACME))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(second, first);
    // The layout is a file of its own; the document is untouched.
    let dir = s.root.join("acme/shop/_vance/workflows");
    assert!(dir.join("review.layout.json").is_file());
    assert_eq!(
        std::fs::read_to_string(dir.join("review.yaml")).unwrap(),
        REVIEW
    );
}

#[tokio::test]
async fn moving_a_node_changes_only_its_position_and_the_viewport_is_kept() {
    let s = Server::start().await;
    server_with_review(&s);
    let before = export(&s).await;
    let mut moved = before.clone();
    for n in moved["nodes"].as_array_mut().unwrap() {
        if n["id"] == "review" {
            n["position"] = json!({"x": 1234.5, "y": -20.0});
            n["width"] = json!(180.0);
        }
    }
    moved["viewport"] = json!({"x": 10.0, "y": 20.0, "zoom": 0.75});
    // Edges and node data are ignored: the document is the truth.
    moved["edges"] = json!([]);
    moved["nodes"][0]["data"]["config"]["run"] = json!("rm -rf /");
    let r = put_graph(&s, ACME_WRITE, &moved).await;
    assert_eq!(r.status(), 200);
    let after = export(&s).await;
    assert_eq!(
        node(&after, "review")["position"],
        json!({"x": 1234.5, "y": -20.0})
    );
    assert_eq!(node(&after, "review")["width"], 180.0);
    assert_eq!(
        after["viewport"],
        json!({"x": 10.0, "y": 20.0, "zoom": 0.75})
    );
    let mut expected = before.clone();
    for n in expected["nodes"].as_array_mut().unwrap() {
        if n["id"] == "review" {
            n["position"] = json!({"x": 1234.5, "y": -20.0});
            n["width"] = json!(180.0);
        }
    }
    expected["viewport"] = after["viewport"].clone();
    assert_eq!(after, expected);
}

#[tokio::test]
async fn layout_survives_a_document_edit_and_new_states_are_placed_automatically() {
    let s = Server::start().await;
    server_with_review(&s);
    let mut g = export(&s).await;
    for n in g["nodes"].as_array_mut().unwrap() {
        n["position"]["y"] = json!(n["position"]["y"].as_f64().unwrap() + 500.0);
    }
    assert_eq!(put_graph(&s, ACME, &g).await.status(), 200);
    // An edit through the documents API: `route` goes, `notify` comes.
    let edited = REVIEW
        .replace("approved: route", "approved: notify")
        .replace(
            "  route:\n    type: condition_task\n    transitions:\n      - if: \"#state['size'] == 'big'\"\n        to: failed\n      - else: done\n",
            "  notify:\n    type: shell_task\n    run: echo shipped\n    on:\n      success: done\n",
        );
    assert!(
        edited.contains("notify:") && !edited.contains("route"),
        "{edited}"
    );
    let r = auth(
        s.client
            .put(s.url("/brain/acme/project/shop/documents/workflows/review.yaml")),
        Some(ACME),
    )
    .body(edited)
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let after = export(&s).await;
    for id in ["build", "review", "done", "failed"] {
        assert_eq!(
            node(&after, id)["position"],
            node(&g, id)["position"],
            "{id}"
        );
    }
    assert!(
        after["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["id"] != "route")
    );
    // The new state stands where the automatic layout puts it: y not shifted by 500.
    let notify = node(&after, "notify");
    assert_eq!(
        notify["position"]["x"],
        node(&export_auto(&s).await, "notify")["position"]["x"]
    );
    assert!(
        notify["position"]["y"].as_f64().unwrap() < 500.0,
        "{notify}"
    );
}

/// The automatic export, by removing the layout file.
async fn export_auto(s: &Server) -> Value {
    let file = s.root.join("acme/shop/_vance/workflows/review.layout.json");
    let saved = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let g = export(s).await;
    std::fs::write(&file, saved).unwrap();
    g
}

#[tokio::test]
async fn nodes_that_are_not_states_are_refused_with_422_and_nothing_is_stored() {
    let s = Server::start().await;
    server_with_review(&s);
    let mut g = export(&s).await;
    g["nodes"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "ghost", "type": "workflow_node", "position": {"x": 0, "y": 0}}));
    let r = put_graph(&s, ACME, &g).await;
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-GR004");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`ghost`") && message.contains("`build`"),
        "{message}"
    );
    assert!(
        !s.root
            .join("acme/shop/_vance/workflows/review.layout.json")
            .exists()
    );
}

#[tokio::test]
async fn bodies_that_are_not_editor_graphs_are_refused_naming_what_was_expected() {
    let s = Server::start().await;
    server_with_review(&s);
    for (body, status, expected) in [
        ("{\"nodes\": 3}", 400, "MAG-GR002"),
        ("not json", 400, "MAG-GR002"),
        (
            "{\"schemaVersion\": \"2.0\", \"nodes\": []}",
            422,
            "MAG-GR003",
        ),
        (
            "{\"nodes\": [], \"viewport\": {\"x\": 0, \"y\": 0, \"zoom\": -1}}",
            422,
            "MAG-GR006",
        ),
    ] {
        let r = auth(s.client.put(s.url(GRAPH)), Some(ACME))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), status, "{body}");
        let answer: Value = r.json().await.unwrap();
        assert_eq!(answer["error"]["code"], expected, "{body}: {answer}");
    }
    let r = auth(s.client.put(s.url(GRAPH)), Some(ACME))
        .body("[]")
        .send()
        .await
        .unwrap();
    let answer: Value = r.json().await.unwrap();
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expected JSON"),
        "{answer}"
    );
}

#[tokio::test]
async fn other_formats_are_the_graph_commands_and_unknown_ones_are_named() {
    let s = Server::start().await;
    server_with_review(&s);
    let r = s
        .get(&format!("{GRAPH}?format=mermaid"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        text.starts_with("stateDiagram-v2") && text.contains("review --> route : approved"),
        "{text}"
    );
    let r = s
        .get(&format!("{GRAPH}?format=dot"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert!(r.text().await.unwrap().starts_with("digraph workflow"));
    let explicit: Value = s
        .get(&format!("{GRAPH}?format=reactflow"), Some(ACME))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(explicit, export(&s).await);
    // `?format=` with nothing names no format: the default.
    let empty: Value = s.get_json(&format!("{GRAPH}?format="), Some(ACME)).await;
    assert_eq!(empty, explicit);
    let r = s
        .get(&format!("{GRAPH}?format=svg"), Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-GR001");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("reactflow, mermaid, dot")
    );
}

#[tokio::test]
async fn unknown_and_invalid_workflows_answer_404_and_422() {
    let s = Server::start().await;
    let r = s
        .get("/brain/acme/project/shop/workflows/nope/graph", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(code(r).await, (404, "MAG-HTTP-WORKFLOW-NOT-FOUND".into()));
    let r = s
        .get(
            "/brain/acme/project/shop/workflows/broken/graph",
            Some(ACME),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    let diags = body["error"]["diagnostics"].to_string();
    assert!(
        diags.contains("acme/shop/_vance/workflows/broken.yaml"),
        "{diags}"
    );
    assert!(!diags.contains(s.root.to_str().unwrap()), "{diags}");

    // Two errors and a warning (a shell step without `dirName:`): the message counts the
    // errors, and the warning says it is one.
    write(
        &s.root.join("acme/shop/_vance/workflows/two.yaml"),
        "start: a\nstates:\n  a: { type: shell_task, run: \"true\", on: { success: done } }\n  done: { type: terminal, outcome: maybe }\n  b: { type: nonsense }\n",
    );
    let r = s
        .get("/brain/acme/project/shop/workflows/two/graph", Some(ACME))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body["error"]["message"], "invalid workflow document (2 error(s))",
        "{body}"
    );
    let diags = body["error"]["diagnostics"].as_array().unwrap();
    let warnings: Vec<&str> = diags
        .iter()
        .filter_map(Value::as_str)
        .filter(|d| d.contains(": warning: "))
        .collect();
    // The state without errors of its own is checked in full, its outcomes included.
    assert_eq!(warnings.len(), 2, "{body}");
    assert!(warnings.iter().any(|w| w.contains("MAG-Y041")), "{body}");
    assert!(warnings.iter().any(|w| w.contains("MAG-YA003")), "{body}");
}

#[tokio::test]
async fn a_broken_layout_file_is_reported_and_a_put_replaces_it() {
    let s = Server::start().await;
    server_with_review(&s);
    let file = s.root.join("acme/shop/_vance/workflows/review.layout.json");
    write(&file, "{ not json");
    let r = s.get(GRAPH, Some(ACME)).send().await.unwrap();
    assert_eq!(r.status(), 422);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "MAG-GR007");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("_vance/workflows/review.layout.json"),
        "{message}"
    );
    assert!(!message.contains(s.root.to_str().unwrap()), "{message}");
    let fresh = json!({"nodes": [{"id": "done", "position": {"x": 1, "y": 2}}]});
    assert_eq!(put_graph(&s, ACME, &fresh).await.status(), 200);
    assert_eq!(
        node(&export(&s).await, "done")["position"],
        json!({"x": 1.0, "y": 2.0})
    );
}

#[tokio::test]
async fn another_tenant_gets_404_and_a_read_only_token_cannot_put() {
    let s = Server::start().await;
    server_with_review(&s);
    let g = export(&s).await;
    let r = s.get(GRAPH, Some(GLOBEX)).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert_eq!(put_graph(&s, GLOBEX, &g).await.status(), 404);
    let r = s.get(GRAPH, Some(ACME_READ)).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        code(put_graph(&s, ACME_READ, &g).await).await,
        (403, "MAG-HTTP-403".into())
    );
    assert_eq!(code(put_graph(&s, ACME_RUN, &g).await).await.0, 403);
    assert_eq!(s.get(GRAPH, None).send().await.unwrap().status(), 401);
    assert!(
        !s.root
            .join("acme/shop/_vance/workflows/review.layout.json")
            .exists()
    );
}

#[tokio::test]
async fn layout_files_are_not_taken_for_workflows() {
    let s = Server::start().await;
    server_with_review(&s);
    let g = export(&s).await;
    assert_eq!(put_graph(&s, ACME, &g).await.status(), 200);
    // The documents listing shows the file, but nothing treats it as a workflow: the run
    // catalogue's names come from `*.yaml`, and starting `review.layout` finds nothing.
    let r = s
        .post(
            "/brain/acme/project/shop/workflows/review.layout/start",
            Some(ACME),
        )
        .json(&json!({"params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    let listing: Value = s
        .get_json(
            "/brain/acme/project/shop/documents?dir=workflows",
            Some(ACME),
        )
        .await;
    assert!(
        item_names(&listing).contains(&"review.layout.json"),
        "{listing}"
    );
    // Writing the layout through the documents API is not validated as a workflow either.
    let r = auth(
        s.client
            .put(s.url("/brain/acme/project/shop/documents/workflows/review.layout.json")),
        Some(ACME),
    )
    .body(serde_json::to_string(&json!({"schemaVersion": "1.0", "nodes": {}})).unwrap())
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        export(&s).await["nodes"][0]["position"],
        json!({"x": 0.0, "y": 0.0})
    );
}

#[tokio::test]
async fn a_tenant_workflow_is_laid_out_per_project() {
    let s = Server::start().await;
    write(
        &s.root.join("acme/_tenant/_vance/workflows/shared.yaml"),
        REVIEW,
    );
    let shop = "/brain/acme/project/shop/workflows/shared/graph";
    let lab = "/brain/acme/project/lab/workflows/shared/graph";
    let r = auth(s.client.put(s.url(shop)), Some(ACME))
        .json(&json!({"nodes": [{"id": "build", "position": {"x": 99, "y": 99}}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        s.root
            .join("acme/shop/_vance/workflows/shared.layout.json")
            .is_file()
    );
    assert!(
        !s.root
            .join("acme/_tenant/_vance/workflows/shared.layout.json")
            .exists()
    );
    let in_shop: Value = s.get_json(shop, Some(ACME)).await;
    let in_lab: Value = s.get_json(lab, Some(ACME)).await;
    assert_eq!(
        node(&in_shop, "build")["position"],
        json!({"x": 99.0, "y": 99.0})
    );
    assert_eq!(
        node(&in_lab, "build")["position"],
        json!({"x": 0.0, "y": 0.0})
    );
}

#[tokio::test]
async fn an_unreadable_layout_answers_500_without_a_server_path() {
    let s = Server::start().await;
    server_with_review(&s);
    let file = s.root.join("acme/shop/_vance/workflows/review.layout.json");
    std::fs::create_dir_all(&file).unwrap();
    for r in [
        s.get(GRAPH, Some(ACME)).send().await.unwrap(),
        put_graph(&s, ACME, &json!({"nodes": []})).await,
    ] {
        assert_eq!(r.status(), 500);
        let body = r.text().await.unwrap();
        assert!(body.contains("MAG-HTTP-500"), "{body}");
        assert!(!body.contains(s.root.to_str().unwrap()), "{body}");
    }
}
