//! Where a run of a graph with several triggers starts: where its own trigger leads.
//!
//! Friday starts a run "with trigger_node_id" and executes "only nodes reachable from
//! trigger_node_id" (seed 001 §5.2–5.3). A trigger document of an imported graph starts the
//! workflow with `params.triggerNodeId`; when the graph's triggers lead to different nodes, the
//! draft starts with a `condition_task` that goes where that trigger leads (a fan-out when it
//! leads to several nodes), and where the first trigger leads for a start that names no
//! trigger of the graph (a start by hand).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{Edge, ImportError, Out, Parallel, err, fan_out};

/// The name of the state that routes a start by its trigger.
const ROUTER: &str = "start_by_trigger";

/// Refuses an edge from a trigger node (`source`) that says more than where the run starts: a
/// trigger starts its run where it leads, whatever happens, so a condition or an outcome on
/// its edge would be dropped.
pub(super) fn check_trigger_edge(e: &Value, source: &str, target: &str) -> Result<(), ImportError> {
    let said = |k: &str| {
        e.pointer(&format!("/data/{k}"))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
    };
    if let Some(c) = said("condition") {
        return Err(err(
            "MAG-GR010",
            format!(
                "edge {source} -> {target} leaves a trigger node with data.condition `{c}`: a \
                 trigger starts its run where it leads; put a condition node after the trigger \
                 to decide where the run goes"
            ),
        ));
    }
    if let Some(b) = said("branch").filter(|b| *b != "success") {
        return Err(err(
            "MAG-GR010",
            format!(
                "edge {source} -> {target} leaves a trigger node with branch `{b}`: a trigger \
                 has no outcomes; leave the branch out"
            ),
        ));
    }
    Ok(())
}

/// Whether the triggers of `by_trigger` do not all lead to the same nodes.
pub(super) fn lead_apart(by_trigger: &[(String, Vec<Edge>)]) -> bool {
    fn targets(leads: &[Edge]) -> Vec<&str> {
        let mut t: Vec<&str> = leads.iter().map(|e| e.target.as_str()).collect();
        t.sort_unstable();
        t
    }
    by_trigger
        .iter()
        .any(|(_, leads)| targets(leads) != targets(&by_trigger[0].1))
}

/// The routing state (its name and spec) of `by_trigger` (each trigger, in the graph's order,
/// with the edges leaving it), adding the fan-outs of triggers that lead to several nodes to
/// `parallels` and the nodes those hold to `moved`.
pub(super) fn trigger_router(
    by_trigger: &[(String, Vec<Edge>)],
    states: &BTreeMap<String, Map<String, Value>>,
    out: &Out<'_>,
    inc: &dyn Fn(&str) -> usize,
    moved: &mut Vec<String>,
    parallels: &mut Vec<(String, Map<String, Value>)>,
) -> Result<(String, Map<String, Value>), ImportError> {
    let taken = |name: &str, parallels: &[(String, Map<String, Value>)]| {
        states.contains_key(name) || parallels.iter().any(|(p, _)| p == name)
    };
    let mut entries: Vec<(&str, String)> = Vec::new();
    for (trigger, leads) in by_trigger {
        // The id is written into the rule's expression as a quoted string.
        if trigger.contains(['\'', '\\']) {
            return Err(err(
                "MAG-GR010",
                format!(
                    "trigger node '{trigger}': an id with a quote or a backslash cannot be \
                     matched by the run's `triggerNodeId`; rename the node"
                ),
            ));
        }
        let entry = match leads.as_slice() {
            [single] => single.target.clone(),
            _ => {
                let (name, parallel, chain_nodes): Parallel =
                    fan_out(trigger, leads, states, out, inc)?;
                if taken(&name, parallels) {
                    return Err(err(
                        "MAG-GR010",
                        format!(
                            "the fan-out from trigger '{trigger}' would be the state '{name}', \
                             which is the id of a node: rename that node"
                        ),
                    ));
                }
                moved.extend(chain_nodes);
                parallels.push((name.clone(), parallel));
                name
            }
        };
        entries.push((trigger, entry));
    }
    let name = (1..)
        .map(|n| match n {
            1 => ROUTER.to_owned(),
            n => format!("{ROUTER}_{n}"),
        })
        .find(|name| !taken(name, parallels))
        .expect("a free name");
    let (first, rest) = entries.split_first().expect("two triggers or more");
    let mut transitions: Vec<Value> = rest
        .iter()
        .map(|(trigger, to)| json!({ "if": format!("#params['triggerNodeId'] == '{trigger}'"), "to": to }))
        .collect();
    transitions.push(json!({ "else": first.1 }));
    let mut spec = Map::new();
    spec.insert("type".into(), json!("condition_task"));
    spec.insert("transitions".into(), Value::Array(transitions));
    Ok((name, spec))
}
