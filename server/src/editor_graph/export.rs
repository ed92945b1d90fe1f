//! A loaded workflow document as an [`EditorGraph`].

use magrathea_yaml::Loaded;
use magrathea_yaml::TaskType;
use magrathea_yaml::plan::Step;
use serde_json::Value;

use super::model::{EdgeData, EditorGraph, GraphEdge, GraphNode, NodeData, NodeType, Position};
use super::{Layout, REACT_FLOW_VERSION, SCHEMA_VERSION, auto_layout};

/// The key of a `parallel_task` node's `data.config` that lists its branches in the order the
/// document declares them, when that is not the order of their names (a JSON object's keys are
/// sorted).
pub(super) const BRANCH_ORDER: &str = "branchOrder";

/// The node type of the editor for a task type: `gate_task` → approval, `condition_task` →
/// condition, `terminal` → terminal, every other task → action.
pub fn node_type_of(task: TaskType) -> NodeType {
    match task {
        TaskType::GateTask => NodeType::Approval,
        TaskType::ConditionTask => NodeType::Condition,
        TaskType::Terminal => NodeType::Terminal,
        _ => NodeType::Action,
    }
}

/// Friday's branch word for an approval's `on:` outcome where one fits, else the outcome
/// itself.
fn branch_of_outcome(outcome: &str) -> &str {
    match outcome {
        "approved" => "approve",
        "rejected" => "reject",
        other => other,
    }
}

/// The editor graph of a valid document: its states as nodes (placed by `layout` where it
/// names them, else by [`auto_layout`]) and its transitions as edges.
pub fn export(loaded: &Loaded, layout: Option<&Layout>) -> EditorGraph {
    let plan = &loaded.plan;
    let mut edges = Vec::new();
    let mut pairs = Vec::new();
    for (from, state) in plan.states.iter().enumerate() {
        let mut n = 0usize;
        let mut add = |to: usize, label: String, condition: Option<String>, branch: String| {
            let id = format!("{}.{n}", state.name);
            n += 1;
            pairs.push((from, to));
            edges.push(GraphEdge {
                id,
                source: state.name.clone(),
                target: plan.states[to].name.clone(),
                label,
                data: EdgeData { condition, branch },
            });
        };
        if let Step::Condition { rules, otherwise } = &state.step {
            for (condition, to) in rules {
                let source = condition.source().to_string();
                add(*to, format!("if {source}"), Some(source), "true".into());
            }
            if let Some(to) = otherwise {
                add(*to, "else".into(), None, "false".into());
            }
        }
        for (outcome, to) in &state.on {
            // A DECISION's options are branch words as they are.
            let branch = if state.is_approval_gate() {
                branch_of_outcome(outcome)
            } else {
                outcome
            };
            add(*to, outcome.clone(), None, branch.into());
        }
        for (kind, to) in &state.catch {
            add(*to, format!("catch {kind}"), None, kind.to_string());
        }
    }
    let auto = auto_layout::positions(plan.states.len(), plan.start, &pairs);
    let nodes = plan
        .states
        .iter()
        .enumerate()
        .zip(auto)
        .map(|((index, state), auto)| {
            let spec = loaded.doc.states.get(&state.name);
            let placed = layout.and_then(|l| l.nodes.get(&state.name));
            let node_type = node_type_of(state.task_type);
            let mut config = spec.map_or(Value::Null, |s| s.raw.clone());
            if node_type == NodeType::Action
                && let Value::Object(map) = &mut config
            {
                map.insert(
                    "actionType".into(),
                    Value::String(state.task_type.as_str().into()),
                );
            }
            // A JSON object's keys are sorted; a parallel_task starts its branches in the order
            // they are written, which the import needs to write them back in.
            if let (Some(spec), Value::Object(map)) = (spec, &mut config)
                && let magrathea_yaml::TaskSpec::Parallel { branches, .. } = &spec.task
            {
                let declared: Vec<&str> = branches.iter().map(|b| b.name.as_str()).collect();
                if !declared.is_sorted() {
                    map.insert(BRANCH_ORDER.into(), serde_json::json!(declared));
                }
            }
            GraphNode {
                id: state.name.clone(),
                kind: "workflow_node",
                position: placed.map_or(auto, |p| Position { x: p.x, y: p.y }),
                width: placed.and_then(|p| p.width),
                height: placed.and_then(|p| p.height),
                data: NodeData {
                    id: state.name.clone(),
                    node_type,
                    name: placed
                        .and_then(|p| p.name.clone())
                        .unwrap_or_else(|| state.name.clone()),
                    start: index == plan.start,
                    config,
                    timeout_ms: spec
                        .and_then(|s| s.timeout_seconds)
                        .map(|s| (s * 1000.0).round() as u64),
                },
            }
        })
        .collect();
    EditorGraph {
        schema_version: SCHEMA_VERSION,
        react_flow_version: REACT_FLOW_VERSION,
        nodes,
        edges,
        viewport: layout.and_then(|l| l.viewport).unwrap_or_default(),
        config: (!loaded.doc.top_level.is_empty())
            .then(|| Value::Object(loaded.doc.top_level.clone())),
    }
}
