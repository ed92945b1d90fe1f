//! The automatic layered layout: where a state stands when no layout places it.
//!
//! The column of a state is the length of the longest path to it from `start:` over the
//! transitions that do not close a loop; its row is its place among the states of its column
//! in document order. Loops are broken where a depth-first walk from `start:` (transitions in
//! document order) finds an edge back to a state still on its path; states `start:` does not
//! reach are walked afterwards, in document order. The result depends only on the document,
//! so two exports of one document place every state alike.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Position;

/// Horizontal distance between columns.
pub const COLUMN_GAP: f64 = 280.0;

/// Vertical distance between rows.
pub const ROW_GAP: f64 = 140.0;

/// The `(column, row)` of each of `count` states, given the start state and the transitions
/// `(from, to)` in document order. Indices out of range are ignored.
pub fn cells(count: usize, start: usize, edges: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new(); count];
    for (i, &(from, to)) in edges.iter().enumerate() {
        if from < count && to < count {
            out[from].push((i, to));
        }
    }
    let back = back_edges(count, start, &out, edges.len());
    // Longest path over the edges that remain (a DAG), in a topological order that takes the
    // earliest state in document order first.
    let mut indegree = vec![0usize; count];
    for (i, &(from, to)) in edges.iter().enumerate() {
        if from < count && to < count && !back[i] {
            indegree[to] += 1;
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..count)
        .filter(|&v| indegree[v] == 0)
        .map(Reverse)
        .collect();
    let mut column = vec![0usize; count];
    while let Some(Reverse(v)) = ready.pop() {
        for &(i, to) in &out[v] {
            if back[i] {
                continue;
            }
            column[to] = column[to].max(column[v] + 1);
            indegree[to] -= 1;
            if indegree[to] == 0 {
                ready.push(Reverse(to));
            }
        }
    }
    let mut next_row = Vec::<usize>::new();
    column
        .iter()
        .map(|&c| {
            if next_row.len() <= c {
                next_row.resize(c + 1, 0);
            }
            let row = next_row[c];
            next_row[c] += 1;
            (c, row)
        })
        .collect()
}

/// The positions of [`cells`] on the canvas.
pub fn positions(count: usize, start: usize, edges: &[(usize, usize)]) -> Vec<Position> {
    cells(count, start, edges)
        .into_iter()
        .map(|(c, r)| Position {
            x: c as f64 * COLUMN_GAP,
            y: r as f64 * ROW_GAP,
        })
        .collect()
}

/// Which edges (by index) close a loop: found by a depth-first walk from `start`, then from
/// each state not yet reached, in document order.
fn back_edges(
    count: usize,
    start: usize,
    out: &[Vec<(usize, usize)>],
    edge_count: usize,
) -> Vec<bool> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    let mut back = vec![false; edge_count];
    let mut mark = vec![Mark::New; count];
    let roots = std::iter::once(start)
        .filter(|&s| s < count)
        .chain(0..count);
    for root in roots {
        if mark[root] != Mark::New {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        mark[root] = Mark::OnPath;
        while let Some(&(v, next)) = stack.last() {
            if let Some(&(i, to)) = out[v].get(next) {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                match mark[to] {
                    Mark::OnPath => back[i] = true,
                    Mark::New => {
                        mark[to] = Mark::OnPath;
                        stack.push((to, 0));
                    }
                    Mark::Done => {}
                }
            } else {
                mark[v] = Mark::Done;
                stack.pop();
            }
        }
    }
    back
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_longest_paths_from_start_and_rows_follow_document_order() {
        // 0 -> 1 -> 3, 0 -> 2, 2 -> 3: 3 sits after the longer branch.
        let cells = cells(4, 0, &[(0, 1), (0, 2), (1, 3), (2, 3)]);
        assert_eq!(cells, vec![(0, 0), (1, 0), (1, 1), (2, 0)]);
    }

    #[test]
    fn a_loop_back_to_an_earlier_state_does_not_move_it() {
        // 0 -> 1 -> 2, 2 -> 1 (retry loop), 1 -> 3.
        let cells = cells(4, 0, &[(0, 1), (1, 2), (2, 1), (1, 3)]);
        assert_eq!(cells, vec![(0, 0), (1, 0), (2, 0), (2, 1)]);
    }

    #[test]
    fn start_need_not_be_the_first_state_and_unreached_states_get_a_place() {
        // start = 2; 2 -> 0; 1 is unreached.
        let cells = cells(3, 2, &[(2, 0)]);
        assert_eq!(cells, vec![(1, 0), (0, 0), (0, 1)]);
    }
}
