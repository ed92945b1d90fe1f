//! The shape of the compiled plan: states never reached from `start`, and loops a run can go
//! round forever.

use crate::ast::WorkflowDoc;
use crate::build::Ctx;
use crate::diagnostic::Code;
use crate::plan::{Plan, StateId, Step};

/// Warns (`MAG-Y027`) about every state never reached from `start`; returns, per state of
/// the plan, whether it is reached.
pub(super) fn unreachable(ctx: &mut Ctx<'_>, doc: &WorkflowDoc, plan: &Plan) -> Vec<bool> {
    let mut seen = vec![false; plan.states.len()];
    let mut todo = vec![plan.start];
    // The fallback of `onFailure:` and the `compensate:` states are reached without a
    // transition.
    match plan.on_failure {
        crate::plan::OnFailure::Fallback(f)
        | crate::plan::OnFailure::PauseForApproval {
            fallback: Some(f), ..
        } => todo.push(f),
        _ => {}
    }
    while let Some(id) = todo.pop() {
        if !std::mem::replace(&mut seen[id], true) {
            todo.extend(plan.states[id].targets());
            todo.extend(plan.states[id].compensate);
        }
    }
    for (s, _) in doc.states.values().zip(&seen).filter(|(_, seen)| !**seen) {
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

/// Warns (`MAG-YA012`) when none of the `reached` states is a `terminal`: the run can never
/// end `DONE`, only by an outcome nothing routes (`FAILED`), a cancel or its bounds.
pub(super) fn no_terminal(ctx: &mut Ctx<'_>, doc: &WorkflowDoc, plan: &Plan, reached: &[bool]) {
    let ends = (0..plan.states.len())
        .any(|id| reached[id] && matches!(plan.states[id].step, Step::Terminal { .. }));
    if ends {
        return;
    }
    ctx.warn(
        doc.start.span,
        Code::NoTerminal,
        format_args!(
            "no terminal state is reached from start state '{}': a run never ends DONE, only \
             by an outcome no transition routes (FAILED), a cancel or its bounds; expected a \
             transition to a state of type terminal",
            doc.start.value
        ),
    );
}

/// Warns (`MAG-YA006`) about every loop of reached states with no `timer_task` or
/// `gate_task` on it, when the workflow sets no `bounds` that stop a run
/// (`maxTaskSpawns`, `maxWallclockSeconds`): such a run can go round forever. One warning
/// per strongly connected group of states, at its first state in document order.
pub(super) fn unbounded_loops(ctx: &mut Ctx<'_>, doc: &WorkflowDoc, plan: &Plan, reached: &[bool]) {
    let bounded =
        plan.bounds.max_task_spawns.is_some() || plan.bounds.max_wallclock_seconds.is_some();
    if bounded {
        return;
    }
    // The graph without the states that wait (timers, gates): a loop left in it waits nowhere.
    let nodes: Vec<StateId> = (0..plan.states.len())
        .filter(|&id| reached[id])
        .filter(|&id| !matches!(plan.states[id].step, Step::Timer(_) | Step::Gate(_)))
        .collect();
    let index = |id: StateId| nodes.iter().position(|n| *n == id);
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|&id| {
            let mut e: Vec<usize> = plan.states[id].targets().filter_map(index).collect();
            e.sort_unstable();
            e.dedup();
            e
        })
        .collect();
    let spec = |i: usize| &doc.states[nodes[i]];
    for group in strongly_connected(&edges) {
        let looping = group.len() > 1 || edges[group[0]].contains(&group[0]);
        if !looping {
            continue;
        }
        let names: Vec<String> = group
            .iter()
            .map(|&i| format!("'{}'", spec(i).name))
            .collect();
        let shape = if group.len() == 1 {
            format!("state {} goes back to itself", names[0])
        } else {
            format!("states {} form a loop", names.join(", "))
        };
        ctx.warn(
            spec(group[0]).span,
            Code::UnboundedLoop,
            format_args!(
                "{shape} with no timer_task or gate_task on it, and the workflow sets no \
                 bounds: a run loops until its tenant's default bounds stop it (10000 task \
                 spawns unless the tenant sets bounds.maxTaskSpawns); expected \
                 bounds.maxTaskSpawns or bounds.maxWallclockSeconds, or a timer or gate on the \
                 loop"
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
