//! The processes a shell step leaves outside its process group: a command that starts a
//! process in a session of its own (`setsid cmd &`) takes it out of the group that the step's
//! timeout, its cancellation and its end kill. While its parent lives it is still the step's
//! descendant, found here by the parent links in `/proc`, and killed with the group.

use std::collections::{HashMap, HashSet};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// One process as `/proc/<pid>/stat` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Proc {
    pid: i32,
    parent: i32,
    group: i32,
}

/// Parses the `pid`, `ppid` and `pgrp` fields of a `/proc/<pid>/stat` line. The command name
/// stands in parentheses and may hold spaces and parentheses itself, so the fields are read
/// after its last `)`.
fn parse_stat(line: &str) -> Option<Proc> {
    let (head, tail) = line.rsplit_once(')')?;
    let pid = head.split_once(' ')?.0.parse().ok()?;
    // After the name: state, ppid, pgrp, …
    let mut fields = tail.split_ascii_whitespace().skip(1);
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    Some(Proc { pid, parent, group })
}

/// Every process of this system that `/proc` shows; those that end while it is read are left
/// out.
fn processes() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|line| parse_stat(&line))
        .collect()
}

/// The processes descended from the members of the process group `group` (its leader, when it
/// still lives, among them) that are not members themselves, in `procs`.
fn strays(procs: &[Proc], group: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in procs {
        children.entry(p.parent).or_default().push(p);
    }
    // Only members are roots: a process numbered as the group that is not in it is not the
    // step's leader (a number in use as a group's is not given to another process).
    let mut seen: HashSet<i32> = procs
        .iter()
        .filter(|p| p.group == group)
        .map(|p| p.pid)
        .collect();
    let mut todo: Vec<i32> = seen.iter().copied().collect();
    let mut out = Vec::new();
    while let Some(pid) = todo.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if seen.insert(child.pid) {
                todo.push(child.pid);
                if child.group != group {
                    out.push(child.pid);
                }
            }
        }
    }
    out
}

/// Kills the process group `group` and every process descended from its members outside it,
/// with SIGKILL. The descendants are found before the group dies: once their parents are gone
/// they belong to `init` and nothing ties them to the step any more.
pub(super) fn kill_group_and_strays(group: i32) {
    let strays = strays(&processes(), group);
    let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    for pid in strays {
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_past_a_name_with_spaces_and_parentheses() {
        let line = "4242 (my (odd) name) S 17 4200 4200 0 -1 4194560 101 0 0 0";
        assert_eq!(
            parse_stat(line),
            Some(Proc {
                pid: 4242,
                parent: 17,
                group: 4200
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn strays_are_the_descendants_of_the_group_outside_it() {
        let p = |pid, parent, group| Proc { pid, parent, group };
        let procs = [
            p(1, 0, 1),
            // The group 10: its leader, a member, and what they started elsewhere.
            p(10, 5, 10),
            p(11, 10, 10),
            p(20, 10, 20), // setsid from the leader
            p(21, 20, 20), // its child
            p(30, 11, 30), // setsid from a member
            p(40, 1, 40),  // an orphan of no one here: out of reach
            p(50, 5, 50),  // the leader's sibling
            p(60, 1, 10),  // a member whose parent left
            p(61, 60, 61), // its child in a session of its own
        ];
        let mut found = strays(&procs, 10);
        found.sort_unstable();
        assert_eq!(found, [20, 21, 30, 61]);
        // With the leader gone (its children now `init`'s), its members' descendants are
        // still found.
        let without_leader: Vec<Proc> = procs
            .iter()
            .filter(|p| p.pid != 10)
            .map(|p| {
                if p.parent == 10 {
                    Proc { parent: 1, ..*p }
                } else {
                    *p
                }
            })
            .collect();
        let mut found = strays(&without_leader, 10);
        found.sort_unstable();
        assert_eq!(found, [30, 61]);
        // A process numbered as the group but outside it is no root.
        let renumbered = [p(10, 5, 99), p(70, 10, 70)];
        assert!(strays(&renumbered, 10).is_empty());
    }
}
