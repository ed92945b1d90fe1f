//! The shape of the state graph: states never reached from `start`, and loops a run can go
//! round forever.

use std::collections::HashSet;

use crate::ast::{StateSpec, TaskSpec, TaskType, WorkflowDoc};
use crate::build::Ctx;
use crate::diagnostic::Code;

/// Every state `s` can go to next: `on:`, `catch:`, and a condition's rules and `else`.
fn targets(s: &StateSpec) -> impl Iterator<Item = &str> {
    let rules = match &s.task {
        TaskSpec::Condition { rules, otherwise } => Some(
            rules
                .iter()
                .map(|r| r.target.as_str())
                .chain(otherwise.iter().map(|o| o.value.as_str())),
        ),
        _ => None,
    };
    s.on.iter()
        .map(|t| t.target.as_str())
        .chain(s.catch.iter().map(|t| t.target.as_str()))
        .chain(rules.into_iter().flatten())
}

/// Warns (`MAG-Y027`) about every state never reached from `start`; returns the reached ones.
pub(super) fn unreachable<'d>(ctx: &mut Ctx<'_>, doc: &'d WorkflowDoc) -> HashSet<&'d str> {
    let mut seen: HashSet<&str> = HashSet::new();
    if !doc.states.contains_key(&doc.start.value) {
        return seen;
    }
    let mut todo = vec![doc.start.value.as_str()];
    while let Some(n) = todo.pop() {
        let Some((name, s)) = doc.states.get_key_value(n) else {
            continue;
        };
        if seen.insert(name.as_str()) {
            todo.extend(targets(s));
        }
    }
    for s in doc
        .states
        .values()
        .filter(|s| !seen.contains(s.name.as_str()))
    {
        ctx.warn(
            s.span,
            Code::Unreachable,
            format_args!(
                "state '{}' is never reached from start state '{}': expected a transition to it",
                s.name, doc.start.value
            ),
        );
    }
    seen
}

/// Warns (`MAG-YA006`) about every loop of reached states with no `timer_task` or
/// `gate_task` on it, when the workflow sets no `bounds` that stop a run
/// (`maxTaskSpawns`, `maxWallclockSeconds`): such a run can go round forever. One warning
/// per strongly connected group of states, at its first state in document order.
pub(super) fn unbounded_loops(ctx: &mut Ctx<'_>, doc: &WorkflowDoc, reached: &HashSet<&str>) {
    let bounded = doc
        .bounds
        .is_some_and(|b| b.max_task_spawns.is_some() || b.max_wallclock_seconds.is_some());
    if bounded {
        return;
    }
    // The graph without the states that wait (timers, gates): a loop left in it waits nowhere.
    let nodes: Vec<&StateSpec> = doc
        .states
        .values()
        .filter(|s| reached.contains(s.name.as_str()))
        .filter(|s| !matches!(s.task_type, TaskType::TimerTask | TaskType::GateTask))
        .collect();
    let index = |name: &str| nodes.iter().position(|s| s.name == name);
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|s| {
            let mut e: Vec<usize> = targets(s).filter_map(index).collect();
            e.sort_unstable();
            e.dedup();
            e
        })
        .collect();
    for group in strongly_connected(&edges) {
        let looping = group.len() > 1 || edges[group[0]].contains(&group[0]);
        if !looping {
            continue;
        }
        let first = nodes[group[0]];
        let names: Vec<String> = group
            .iter()
            .map(|&i| format!("'{}'", nodes[i].name))
            .collect();
        let shape = if group.len() == 1 {
            format!("state {} goes back to itself", names[0])
        } else {
            format!("states {} form a loop", names.join(", "))
        };
        ctx.warn(
            first.span,
            Code::UnboundedLoop,
            format_args!(
                "{shape} with no timer_task or gate_task on it, and the workflow sets no \
                 bounds: a run can loop forever; expected bounds.maxTaskSpawns or \
                 bounds.maxWallclockSeconds, or a timer or gate on the loop"
            ),
        );
    }
}

/// The strongly connected components of a graph given as adjacency lists (Kosaraju,
/// iterative so that no document can overflow the stack); each component's nodes are sorted,
/// and the components are ordered by their first node.
fn strongly_connected(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = edges.len();
    let mut order = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    for root in 0..n {
        if visited[root] {
            continue;
        }
        visited[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some((v, next)) = stack.last_mut() {
            let v = *v;
            if let Some(&w) = edges[v].get(*next) {
                *next += 1;
                if !visited[w] {
                    visited[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
                stack.pop();
            }
        }
    }
    let mut reverse = vec![Vec::new(); n];
    for (v, targets) in edges.iter().enumerate() {
        for &w in targets {
            reverse[w].push(v);
        }
    }
    let mut component = vec![usize::MAX; n];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &root in order.iter().rev() {
        if component[root] != usize::MAX {
            continue;
        }
        let id = groups.len();
        let mut group = Vec::new();
        component[root] = id;
        let mut todo = vec![root];
        while let Some(v) = todo.pop() {
            group.push(v);
            for &w in &reverse[v] {
                if component[w] == usize::MAX {
                    component[w] = id;
                    todo.push(w);
                }
            }
        }
        group.sort_unstable();
        groups.push(group);
    }
    groups.sort_by_key(|g| g[0]);
    groups
}

#[cfg(test)]
mod tests {
    use super::strongly_connected;

    #[test]
    fn components_of_a_small_graph() {
        // 0 -> 1 -> 2 -> 0, 2 -> 3, 3 -> 3, 4 alone.
        let edges = vec![vec![1], vec![2], vec![0, 3], vec![3], vec![]];
        assert_eq!(
            strongly_connected(&edges),
            vec![vec![0, 1, 2], vec![3], vec![4]]
        );
    }
}
