//! A Friday editor graph (`FridayWorkflowEditorGraphV1`: nodes and branch-labelled edges) →
//! a workflow draft. Chains become states routed by `on:`; a fan-out whose branches are simple
//! chains meeting again at one node becomes a `parallel_task` with inline branches. Trigger
//! nodes are not states: the draft starts where they lead. Anything else a DAG can draw
//! (branches that never meet, meet elsewhere, or fork again inside a branch) is refused, naming
//! the nodes and edges in the way.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value, json};

mod design_nodes;
mod trigger_routes;
mod triggers;
mod version_config;

pub use design_nodes::design_node_ids;
use design_nodes::{action_state, allowed_tools, approval_inbox, condition_rules};
use trigger_routes::trigger_router;
pub use triggers::{TriggerDocument, trigger_documents};

/// Why a graph does not import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// `MAG-GR009` … `MAG-GR012`.
    pub code: &'static str,
    /// What is wrong, naming nodes and edges.
    pub message: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for ImportError {}

fn err(code: &'static str, message: String) -> ImportError {
    ImportError { code, message }
}

/// One edge: source, target, branch word.
#[derive(Debug, Clone)]
struct Edge {
    source: String,
    target: String,
    branch: String,
    /// A `catch:` route (the export labels it `catch <kind>`), not an `on:` one.
    catch: bool,
    /// `data.condition`: a condition rule's expression, or a `switch` case's label.
    condition: Option<String>,
}

impl fmt::Display for Edge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} -[{}]-> {}", self.source, self.branch, self.target)
    }
}

/// The outcome a Friday branch word stands for from the state `spec`: an approval's `approve`
/// and `reject` are its `approved` and `rejected`; a DECISION's options are its words as
/// they are (an option may be called `approve`).
fn outcome_of<'a>(spec: &Map<String, Value>, branch: &'a str) -> &'a str {
    let chosen = spec
        .get("inbox")
        .and_then(|inbox| inbox.get("kind"))
        .and_then(Value::as_str)
        .is_some_and(|k| !k.eq_ignore_ascii_case("APPROVAL"));
    match branch {
        "approve" if !chosen => "approved",
        "reject" if !chosen => "rejected",
        "" => "success",
        other => other,
    }
}

/// The workflow document of an editor graph, its states in the order of the graph's nodes.
///
/// # Errors
/// `MAG-GR009` the JSON is not an editor graph; `MAG-GR010` a node cannot be a state;
/// `MAG-GR011` the graph is not series-parallel; `MAG-GR012` it has no single start.
pub fn import(graph: &Value) -> Result<serde_yaml_ng::Value, ImportError> {
    let (Some(nodes), Some(edges)) = (
        graph.get("nodes").and_then(Value::as_array),
        graph.get("edges").and_then(Value::as_array),
    ) else {
        return Err(err(
            "MAG-GR009",
            "expected an editor graph: an object with 'nodes' and 'edges' arrays".into(),
        ));
    };
    if let Some(version) = graph.get("schemaVersion")
        && version != "1.0"
    {
        return Err(err(
            "MAG-GR003",
            format!("schemaVersion {version}: expected \"1.0\" (FridayWorkflowEditorGraphV1)"),
        ));
    }
    let mut states: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    let mut order = Vec::new();
    // Trigger nodes say what starts a run (a schedule, a webhook, an event): they are not
    // states, and the node they lead to is where the workflow starts.
    let mut triggers: Vec<&str> = Vec::new();
    // Node ids name nodes (React Flow needs them unique): a second node of an id would
    // silently replace the first.
    let mut seen = std::collections::BTreeSet::new();
    for id in nodes
        .iter()
        .filter_map(|n| n.get("id").and_then(Value::as_str))
    {
        if !seen.insert(id) {
            return Err(err(
                "MAG-GR009",
                format!("node id '{id}' is given to more than one node: each node needs its own"),
            ));
        }
    }
    for n in nodes {
        if n.pointer("/data/type").and_then(Value::as_str) == Some("trigger") {
            triggers.extend(n.get("id").and_then(Value::as_str));
            continue;
        }
        let (id, spec) = state_of(n)?;
        order.push(id.clone());
        states.insert(id, spec);
    }
    // Edge ids name edges as node ids name nodes (React Flow needs them unique).
    let mut edge_ids = std::collections::BTreeSet::new();
    for id in edges
        .iter()
        .filter_map(|e| e.get("id").and_then(Value::as_str))
    {
        if !edge_ids.insert(id) {
            return Err(err(
                "MAG-GR009",
                format!("edge id '{id}' is given to more than one edge: each edge needs its own"),
            ));
        }
    }
    let mut all = Vec::new();
    let mut from_triggers: Vec<Edge> = Vec::new();
    // Each trigger with the nodes it leads to, in the order of the graph's nodes and edges.
    let mut by_trigger: Vec<(String, Vec<Edge>)> = triggers
        .iter()
        .map(|t| ((*t).to_owned(), Vec::new()))
        .collect();
    for e in edges {
        let text = |k: &str| e.get(k).and_then(Value::as_str).map(str::to_owned);
        let (Some(source), Some(target)) = (text("source"), text("target")) else {
            return Err(err(
                "MAG-GR009",
                format!("edge {e} has no 'source' and 'target' node ids"),
            ));
        };
        if triggers.contains(&target.as_str()) {
            return Err(err(
                "MAG-GR010",
                format!(
                    "edge {source} -> {target} leads to a trigger node: a trigger starts a run, \
                     nothing leads to it"
                ),
            ));
        }
        if triggers.contains(&source.as_str()) {
            trigger_routes::check_trigger_edge(e, &source, &target)?;
            if let Some((_, leads)) = by_trigger.iter_mut().find(|(t, _)| *t == source)
                && states.contains_key(&target)
                && !leads.iter().any(|e| e.target == target)
            {
                leads.push(Edge {
                    source: source.clone(),
                    target: target.clone(),
                    branch: "success".into(),
                    catch: false,
                    condition: None,
                });
            }
            // Where a run starts; several nodes from the triggers are a fan-out at the start.
            if states.contains_key(&target)
                && !from_triggers.iter().any(|e: &Edge| e.target == target)
            {
                from_triggers.push(Edge {
                    source,
                    target,
                    branch: "success".into(),
                    catch: false,
                    condition: None,
                });
            }
            continue;
        }
        for end in [&source, &target] {
            if !states.contains_key(end) {
                return Err(err(
                    "MAG-GR009",
                    format!("edge {source} -> {target} names node '{end}', which is not a node"),
                ));
            }
        }
        // An edge without a branch is the node's normal way on (seed 001 §5.7: an approval
        // continues "from approve branch (or normal outbound if unbranched)").
        let branch = e
            .pointer("/data/branch")
            .and_then(Value::as_str)
            .unwrap_or_else(|| normal_branch(&states[&source]))
            .to_owned();
        // A `catch:` route as the export labels it: `catch <kind>` over the branch `<kind>`
        // (a DECISION option that reads `catch timeout` is an option, its branch the same).
        let catch = e
            .get("label")
            .and_then(Value::as_str)
            .and_then(|l| l.strip_prefix("catch "))
            .is_some_and(|kind| kind == branch && !kind.contains(' '));
        let condition = e
            .pointer("/data/condition")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_owned);
        // A condition on an edge routes a condition node's rules: from any other node it would
        // be dropped, the edge taken whatever it says.
        if let Some(c) = &condition
            && states[&source].get("type") != Some(&json!("condition_task"))
        {
            return Err(err(
                "MAG-GR010",
                format!(
                    "edge {source} -> {target} has data.condition `{c}`, but '{source}' is no \
                     condition node: put a condition node before '{target}' to decide whether \
                     the run goes there"
                ),
            ));
        }
        all.push(Edge {
            source,
            target,
            branch,
            catch,
            condition,
        });
    }
    // A node marked `data.start` (as the export marks the document's `start:`) is the start,
    // even when a loop leads back to it; else the one node nothing leads to; else, when loops
    // lead back to every node, where the triggers lead.
    let marked: Vec<&String> = order
        .iter()
        .filter(|id| {
            nodes.iter().any(|n| {
                n.get("id").and_then(Value::as_str) == Some(id.as_str())
                    && n.pointer("/data/start") == Some(&Value::Bool(true))
            })
        })
        .collect();
    // No edge leads to the node the failure policy falls back to: beside another root, no start.
    let fallback = graph.pointer("/config/failurePolicy/fallbackNodeId");
    let mut roots: Vec<&String> = order
        .iter()
        .filter(|id| !all.iter().any(|e| &e.target == *id))
        .collect();
    if roots.len() > 1 {
        roots.retain(|id| fallback.and_then(Value::as_str) != Some(id.as_str()));
    }
    let triggered: Vec<&String> = order
        .iter()
        .filter(|id| from_triggers.iter().any(|e| &e.target == *id))
        .collect();
    let marked_start = !marked.is_empty();
    let starts: Vec<&String> = if !marked.is_empty() {
        marked
    } else if roots.is_empty() {
        triggered
    } else {
        roots
    };
    let out = |id: &str| {
        all.iter()
            .filter(|e| e.source == id)
            .cloned()
            .collect::<Vec<_>>()
    };
    let inc = |id: &str| all.iter().filter(|e| e.target == id).count();
    let mut top: Vec<String> = Vec::new();
    let mut moved: Vec<String> = Vec::new();
    let mut parallels: Vec<(String, Map<String, Value>)> = Vec::new();
    // A trigger leading to several nodes, the roots of the graph, is a fork at the start: a
    // `parallel_task` of their branches is where the workflow starts.
    let forked = from_triggers.len() > 1
        && starts.len() == from_triggers.len()
        && from_triggers.iter().all(|e| starts.contains(&&e.target));
    by_trigger.retain(|(_, leads)| !leads.is_empty());
    // Triggers leading to different nodes: a run goes only where its own trigger leads (seed
    // 001 §5.3), chosen by the `triggerNodeId` its trigger document starts it with.
    let routed = trigger_routes::lead_apart(&by_trigger);
    let mut router: Option<(String, Map<String, Value>)> = None;
    let start = match starts.as_slice() {
        _ if routed && !marked_start => {
            let (name, spec) =
                trigger_router(&by_trigger, &states, &out, &inc, &mut moved, &mut parallels)?;
            router = Some((name.clone(), spec));
            name
        }
        [start] => (*start).clone(),
        _ if forked => {
            let fork = &from_triggers[0].source;
            let (name, parallel, chain_nodes) = fan_out(fork, &from_triggers, &states, &out, &inc)?;
            if states.contains_key(&name) {
                return Err(err(
                    "MAG-GR010",
                    format!(
                        "the fan-out from trigger '{fork}' would be the state '{name}', which \
                         is the id of a node: rename that node"
                    ),
                ));
            }
            moved.extend(chain_nodes);
            parallels.push((name.clone(), parallel));
            name
        }
        _ => {
            return Err(err(
                "MAG-GR012",
                format!(
                    "expected exactly one node without incoming edges (the start), found {:?}",
                    starts
                ),
            ));
        }
    };
    // Each state's `on:` and `catch:`, in the order of the graph's edges.
    let mut routes: BTreeMap<String, Routes> = BTreeMap::new();
    // Conditions with no `else` edge: where no rule holds, Friday runs nothing more.
    let mut open_conditions: Vec<(String, design_nodes::EndRule)> = Vec::new();
    for id in &order {
        if moved.contains(id) {
            continue;
        }
        let is_condition = states[id].get("type") == Some(&json!("condition_task"));
        let (catches, edges): (Vec<Edge>, Vec<Edge>) = out(id).into_iter().partition(|e| e.catch);
        if is_condition && !states[id].contains_key("transitions") {
            let spec = states.get_mut(id).expect("a node");
            if let Some(end) = condition_rules(id, spec, &edges)? {
                open_conditions.push((id.clone(), end));
            }
        }
        // Outcomes in the order of their first edge, as export numbers a state's edges in the
        // order of its `on:`: export, import, export gives the same edges and ids.
        let mut by_branch: Vec<(String, Vec<Edge>)> = Vec::new();
        // A condition routes by its `transitions`: its edges are rules, never a fan-out.
        for e in edges.into_iter().filter(|_| !is_condition) {
            match by_branch.iter_mut().find(|(b, _)| *b == e.branch) {
                Some((_, group)) => group.push(e),
                None => by_branch.push((e.branch.clone(), vec![e])),
            }
        }
        let mut on = Vec::new();
        for (branch, group) in by_branch {
            if let [single] = group.as_slice() {
                on.push((
                    outcome_of(&states[id], &branch).to_owned(),
                    single.target.clone(),
                ));
                continue;
            }
            // A fan-out: each branch a chain, all meeting at one join.
            let (name, parallel, chain_nodes) = fan_out(id, &group, &states, &out, &inc)?;
            on.push((outcome_of(&states[id], &branch).to_owned(), name.clone()));
            moved.extend(chain_nodes);
            parallels.push((name, parallel));
        }
        // `catch <kind>` edges route error kinds, as the document's `catch:` did.
        let catch: Vec<(String, String)> =
            catches.into_iter().map(|e| (e.branch, e.target)).collect();
        routes.insert(id.clone(), (on, catch));
        top.push(id.clone());
    }
    // States in the order of the graph's nodes (a JSON map would sort them by name), so that
    // exporting the draft gives its nodes in the order they were imported.
    let yaml = |v: Value| serde_yaml_ng::to_value(v).unwrap_or(serde_yaml_ng::Value::Null);
    let mut doc_states = serde_yaml_ng::Mapping::new();
    if let Some((name, spec)) = router {
        doc_states.insert(name.into(), yaml(Value::Object(spec)));
    }
    for id in top.iter().filter(|id| !moved.contains(id)) {
        let mut state = yaml(Value::Object(states[id].clone()));
        if let serde_yaml_ng::Value::Mapping(spec) = &mut state {
            order_branches(spec);
        }
        if let (serde_yaml_ng::Value::Mapping(spec), Some((on, catch))) =
            (&mut state, routes.get(id))
        {
            for (key, routes) in [("on", on), ("catch", catch)] {
                if !routes.is_empty() {
                    let map = routes
                        .iter()
                        .map(|(k, to)| (k.as_str().into(), to.as_str().into()))
                        .collect();
                    spec.insert(key.into(), serde_yaml_ng::Value::Mapping(map));
                }
            }
        }
        doc_states.insert(id.as_str().into(), state);
    }
    let config = graph.get("config").and_then(Value::as_object);
    let max_parallelism = version_config::max_parallelism(config);
    for (name, mut p) in parallels {
        if let Some(n) = &max_parallelism {
            p.entry("maxParallelism").or_insert_with(|| n.clone());
        }
        doc_states.insert(name.into(), yaml(Value::Object(p)));
    }
    // Friday ends a run at a node without outgoing edges; a document at a terminal state. A
    // node that is a document's state as written (an export's: its config names its `type`)
    // keeps its routes as they were, none included.
    let written = |id: &str| {
        nodes.iter().any(|n| {
            n.get("id").and_then(Value::as_str) == Some(id)
                && n.pointer("/data/config/type").is_some()
        })
    };
    let leaves: Vec<&String> = top
        .iter()
        .filter(|id| !moved.contains(id))
        .filter(|id| !written(id))
        // No edge for its normal way on (none at all, or only a failure's, a reject's, a
        // timeout's): where it goes on, the path ends (seed 001 §5.3: only reachable nodes run).
        .filter(|id| {
            let normal = outcome_of(&states[*id], normal_branch(&states[*id]));
            routes
                .get(*id)
                .is_none_or(|(on, _)| !on.iter().any(|(outcome, _)| outcome == normal))
        })
        .filter(|id| {
            // A decision has no one normal answer: its leaf is left for `validate` to name.
            let decision = states[*id]
                .get("inbox")
                .and_then(|inbox| inbox.get("kind"))
                .and_then(Value::as_str)
                .is_some_and(|k| k.eq_ignore_ascii_case("DECISION"));
            !decision
                && !matches!(
                    states[*id].get("type").and_then(Value::as_str),
                    Some("terminal" | "condition_task")
                )
        })
        .collect();
    let open_conditions: Vec<&(String, design_nodes::EndRule)> = open_conditions
        .iter()
        .filter(|(id, _)| !moved.contains(id))
        .collect();
    if !leaves.is_empty() || !open_conditions.is_empty() {
        let end = (1..)
            .map(|n| {
                if n == 1 {
                    "end".to_owned()
                } else {
                    format!("end_{n}")
                }
            })
            .find(|name| !doc_states.contains_key(name.as_str()) && !states.contains_key(name))
            .expect("a free name");
        for id in leaves {
            if let Some(serde_yaml_ng::Value::Mapping(spec)) = doc_states.get_mut(id.as_str()) {
                let normal = outcome_of(&states[id], normal_branch(&states[id]));
                let on = spec
                    .entry("on".into())
                    .or_insert_with(|| serde_yaml_ng::Value::Mapping(Default::default()));
                if let serde_yaml_ng::Value::Mapping(on) = on {
                    on.insert(normal.into(), end.as_str().into());
                }
            }
        }
        for (id, rule) in open_conditions {
            if let Some(serde_yaml_ng::Value::Mapping(spec)) = doc_states.get_mut(id.as_str())
                && let Some(serde_yaml_ng::Value::Sequence(rules)) = spec.get_mut("transitions")
            {
                match rule {
                    design_nodes::EndRule::Else => {
                        let mut otherwise = serde_yaml_ng::Mapping::new();
                        otherwise.insert("else".into(), end.as_str().into());
                        rules.push(serde_yaml_ng::Value::Mapping(otherwise));
                    }
                    design_nodes::EndRule::When(expression) => {
                        let mut when = serde_yaml_ng::Mapping::new();
                        when.insert("if".into(), yaml(expression.clone()));
                        when.insert("to".into(), end.as_str().into());
                        rules.insert(0, serde_yaml_ng::Value::Mapping(when));
                    }
                }
            }
        }
        doc_states.insert(end.into(), yaml(json!({ "type": "terminal" })));
    }
    let mut doc = serde_yaml_ng::Mapping::new();
    doc.insert("start".into(), start.into());
    // The workflow's own settings an export carries (`parameters`, `bounds`, `onFailure`, …),
    // and Friday's version config.
    let settings = config.map(version_config::document_settings);
    for (key, value) in settings.into_iter().flatten() {
        doc.insert(key.as_str().into(), yaml(value));
    }
    // A workflow that declares its tools keeps them as declared; otherwise the graph's own
    // actions may use theirs.
    let declared = config.is_some_and(|c| c.contains_key("allowedTools"));
    if let Some(tools) = allowed_tools(nodes).filter(|_| !declared) {
        doc.insert("allowedTools".into(), yaml(json!(tools)));
    }
    doc.insert("states".into(), serde_yaml_ng::Value::Mapping(doc_states));
    Ok(serde_yaml_ng::Value::Mapping(doc))
}

/// A cycle of the graph's edges, as the node ids along it (the first again at the end), if it
/// has one. Friday's editor draws DAGs; the document format loops (a rejected review back to
/// its planning), so an import keeps a cycle as a loop and the command says where it is.
pub fn first_cycle(graph: &Value) -> Option<Vec<String>> {
    let edges: Vec<(&str, &str)> = graph
        .get("edges")
        .and_then(Value::as_array)?
        .iter()
        .filter_map(|e| Some((e.get("source")?.as_str()?, e.get("target")?.as_str()?)))
        .collect();
    let mut nodes: Vec<&str> = edges.iter().flat_map(|(a, b)| [*a, *b]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    // Depth-first, iteratively: 0 unseen, 1 on the path, 2 done.
    let mut mark = vec![0u8; nodes.len()];
    let index = |id: &str| nodes.binary_search(&id).ok();
    for root in 0..nodes.len() {
        if mark[root] != 0 {
            continue;
        }
        let mut path: Vec<(usize, usize)> = vec![(root, 0)];
        mark[root] = 1;
        while let Some((node, next)) = path.last_mut() {
            let node = *node;
            let out: Vec<usize> = edges
                .iter()
                .filter(|(a, _)| *a == nodes[node])
                .filter_map(|(_, b)| index(b))
                .collect();
            if let Some(&to) = out.get(*next) {
                *next += 1;
                match mark[to] {
                    0 => {
                        mark[to] = 1;
                        path.push((to, 0));
                    }
                    1 => {
                        let from = path.iter().position(|(n, _)| *n == to).unwrap_or(0);
                        let mut cycle: Vec<String> = path[from..]
                            .iter()
                            .map(|(n, _)| nodes[*n].to_owned())
                            .collect();
                        cycle.push(nodes[to].to_owned());
                        return Some(cycle);
                    }
                    _ => {}
                }
            } else {
                mark[node] = 2;
                path.pop();
            }
        }
    }
    None
}

/// The branch word of a state's normal way on, for an edge that names none: an approval's
/// `approve`, a timer's `fired`, any other task's `success`.
fn normal_branch(spec: &Map<String, Value>) -> &'static str {
    match spec.get("type").and_then(Value::as_str) {
        Some("timer_task") => "fired",
        Some("gate_task")
            if spec
                .get("inbox")
                .and_then(|inbox| inbox.get("kind"))
                .and_then(Value::as_str)
                .is_none_or(|k| k.eq_ignore_ascii_case("APPROVAL")) =>
        {
            "approve"
        }
        _ => "success",
    }
}

/// `seconds` as a whole number when it is one.
fn seconds_value(seconds: f64) -> Value {
    if seconds.fract() == 0.0 && seconds.abs() < 1e15 {
        json!(seconds as i64)
    } else {
        json!(seconds)
    }
}

/// The state of a node: its `config` with `type` from the node type (an action's
/// `actionType`), without routing (edges route).
/// A `parallel_task`'s `branches:` in the order its `branchOrder` (written by the export)
/// names them, which is the order its sub-runs start in; `branchOrder` itself is no field of
/// the document.
fn order_branches(spec: &mut serde_yaml_ng::Mapping) {
    let Some(order) = spec.remove(super::export::BRANCH_ORDER) else {
        return;
    };
    let Some(serde_yaml_ng::Value::Mapping(branches)) = spec.get_mut("branches") else {
        return;
    };
    let mut ordered = serde_yaml_ng::Mapping::new();
    for name in order.as_sequence().into_iter().flatten() {
        if let Some((k, v)) = branches.remove_entry(name) {
            ordered.insert(k, v);
        }
    }
    // Branches the list leaves out keep their place after those it names.
    ordered.extend(std::mem::take(branches));
    *branches = ordered;
}

fn state_of(n: &Value) -> Result<(String, Map<String, Value>), ImportError> {
    let Some(id) = n.get("id").and_then(Value::as_str) else {
        return Err(err("MAG-GR009", format!("node {n} has no 'id'")));
    };
    if let Some(data_id) = n.pointer("/data/id").and_then(Value::as_str)
        && data_id != id
    {
        return Err(err(
            "MAG-GR009",
            format!("node '{id}' has data.id '{data_id}': a node's id and data.id are one name"),
        ));
    }
    let mut spec = n
        .pointer("/data/config")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let ty = match n.pointer("/data/type").and_then(Value::as_str) {
        Some("action") => {
            let action = spec
                .remove("actionType")
                .and_then(|t| t.as_str().map(str::to_owned))
                .ok_or_else(|| {
                    err(
                        "MAG-GR010",
                        format!(
                            "action node '{id}' has no data.config.actionType (a task type, or \
                             skill, http_request or ai_completion)"
                        ),
                    )
                })?;
            action_state(id, &action, &mut spec)?
        }
        Some("approval") => {
            approval_inbox(n, id, &mut spec)?;
            "gate_task".into()
        }
        Some("condition") => "condition_task".into(),
        Some("terminal") => "terminal".into(),
        Some("transform") => {
            return Err(err(
                "MAG-GR010",
                format!(
                    "node '{id}' is a transform node: a document has no transform state; write \
                     it as a script_task (a JavaScript file returning the new value, kept with \
                     storeAs) and import the graph with that action node instead"
                ),
            ));
        }
        other => {
            return Err(err(
                "MAG-GR010",
                format!(
                    "node '{id}' has type {other:?}: expected trigger, action, approval, \
                     condition or terminal"
                ),
            ));
        }
    };
    spec.remove("actionType");
    // Edges route: the config's own routes would add to (or contradict) the edited ones.
    if ty != "condition_task" {
        spec.remove("on");
    }
    spec.remove("catch");
    // The editor edits a node's timeout as `data.timeoutMs` (export writes it from
    // `timeoutSeconds`): it wins over the config's. A terminal state has none.
    if ty != "terminal"
        && let Some(ms) = n.pointer("/data/timeoutMs").filter(|v| !v.is_null())
    {
        let seconds = ms.as_f64().ok_or_else(|| {
            err(
                "MAG-GR010",
                format!("node '{id}' has data.timeoutMs {ms}: expected a number of milliseconds"),
            )
        })? / 1000.0;
        spec.insert("timeoutSeconds".into(), seconds_value(seconds));
    }
    spec.insert("type".into(), json!(ty));
    Ok((id.to_owned(), spec))
}

/// A state's routes: `on:` (outcome, next state) and `catch:` (error kind, next state).
type Routes = (Vec<(String, String)>, Vec<(String, String)>);

type Out<'a> = dyn Fn(&str) -> Vec<Edge> + 'a;

/// A fan-out as imported: the `parallel_task`'s name, its spec, the nodes moved into it.
type Parallel = (String, Map<String, Value>, Vec<String>);

/// A fan-out from `fork` along `group` as a `parallel_task`: its state name, the state, and
/// the nodes moved into its branches.
fn fan_out(
    fork: &str,
    group: &[Edge],
    states: &BTreeMap<String, Map<String, Value>>,
    out: &Out<'_>,
    inc: &dyn Fn(&str) -> usize,
) -> Result<Parallel, ImportError> {
    let not_sp = |why: String| {
        err(
            "MAG-GR011",
            format!("the fan-out at '{fork}' is not series-parallel: {why}"),
        )
    };
    let mut join: Option<String> = None;
    let mut branches = Map::new();
    let mut moved = Vec::new();
    for first in group {
        let mut chain: Vec<(String, Edge)> = Vec::new();
        let mut at = first.target.clone();
        loop {
            if inc(&at) > 1 {
                break; // the join
            }
            let next = out(&at);
            let [edge] = next.as_slice() else {
                let shown: Vec<String> = next.iter().map(ToString::to_string).collect();
                return Err(not_sp(format!(
                    "node '{at}' in the branch from edge {first} has {} outgoing edges ({}): \
                     expected one, leading on to where the branches meet",
                    next.len(),
                    shown.join(", ")
                )));
            };
            chain.push((at.clone(), edge.clone()));
            at = edge.target.clone();
        }
        match &join {
            None => join = Some(at.clone()),
            Some(j) if *j != at => {
                return Err(not_sp(format!(
                    "the branch from edge {first} meets the others' path at '{at}', not at '{j}'"
                )));
            }
            Some(_) => {}
        }
        if chain.is_empty() {
            continue;
        }
        let mut sub = Map::new();
        for (node, edge) in &chain {
            let mut spec = states[node].clone();
            let to = if edge.target == at {
                "done".to_string()
            } else {
                edge.target.clone()
            };
            spec.insert(
                "on".into(),
                json!({ outcome_of(&states[node], &edge.branch): to }),
            );
            sub.insert(node.clone(), Value::Object(spec));
            moved.push(node.clone());
        }
        sub.insert("done".into(), json!({ "type": "terminal" }));
        branches.insert(
            chain[0].0.clone(),
            json!({ "start": chain[0].0, "states": sub }),
        );
    }
    let join = join.expect("a fan-out has edges");
    if inc(&join) != group.len() {
        return Err(not_sp(format!(
            "'{join}', where its branches meet, has {} incoming edges but the fan-out has {} \
             branches: another path enters it",
            inc(&join),
            group.len()
        )));
    }
    let name = format!("{fork}_parallel");
    let mut p = Map::new();
    p.insert("type".into(), json!("parallel_task"));
    p.insert("branches".into(), Value::Object(branches));
    p.insert("on".into(), json!({ "success": join }));
    Ok((name, p, moved))
}

#[cfg(test)]
mod tests;
