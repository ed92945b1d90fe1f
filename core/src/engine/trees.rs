//! The trees of runs: which child runs descend from which root run, counted so that one start
//! cannot grow without bound ([`EngineBuilder::max_runs_per_tree`]).
//!
//! Every other bound is a run's own (its task spawns, its journal, its nesting depth), and a
//! workflow that starts itself several times per level stays inside all of them while its tree
//! multiplies at every level: four children a level and the default depth of 32 is 4^32 runs,
//! each with a journal on disk. A parent starts a child only while its tree has started fewer
//! runs than the bound.
//!
//! A tree's count is of the runs started in it while its root is active, ended ones included:
//! what one start may grow into, on disk as in memory. A child joins its tree when its parent
//! starts it here and when it is recovered here (after a restart the count begins with the
//! runs recovered); when a root ends its tree is forgotten (its children end with it). On a
//! store several workers share, each worker counts the runs it started or recovered.
//!
//! [`EngineBuilder::max_runs_per_tree`]: crate::EngineBuilder::max_runs_per_tree

use std::sync::Mutex;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::id::RunId;

/// A run's place in its tree: how deep it is nested (a root is at 0) and the root's id.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    pub(crate) depth: u32,
    pub(crate) root: RunId,
}

/// The child runs of each tree, by root.
#[derive(Default)]
pub(crate) struct Trees {
    inner: Mutex<Members>,
}

#[derive(Default)]
struct Members {
    root_of: FxHashMap<RunId, RunId>,
    trees: FxHashMap<RunId, Tree>,
}

/// One tree's children: those active, and how many were started.
#[derive(Default)]
struct Tree {
    active: FxHashSet<RunId>,
    started: u32,
}

impl Members {
    fn join(&mut self, root: RunId, run: RunId) {
        if self.root_of.insert(run, root).is_none() {
            let tree = self.trees.entry(root).or_default();
            tree.active.insert(run);
            tree.started = tree.started.saturating_add(1);
        }
    }

    /// The runs the tree of `root` holds: its root and the children started in it.
    fn held(&self, root: RunId) -> u32 {
        self.trees.get(&root).map_or(0, |t| t.started)
    }
}

impl Trees {
    fn lock(&self) -> std::sync::MutexGuard<'_, Members> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts `run` in the tree of `root` if the tree holds fewer than `limit` runs under its
    /// root (the root itself not counted: a root may start `limit` sub-runs), or counts `run`
    /// already; otherwise returns how many sub-runs it holds.
    pub(crate) fn admit(&self, root: RunId, run: RunId, limit: u32) -> Result<(), u32> {
        let mut m = self.lock();
        if m.root_of.contains_key(&run) {
            return Ok(());
        }
        let held = m.held(root);
        if held >= limit {
            return Err(held);
        }
        m.join(root, run);
        Ok(())
    }

    /// Counts `run` in the tree of `root`, whatever the tree holds (a run that is active
    /// already, recovered after a restart).
    pub(crate) fn join(&self, root: RunId, run: RunId) {
        if root != run {
            self.lock().join(root, run);
        }
    }

    /// `run` ended (or never started): it is no longer active in its tree (it still counts);
    /// if `run` is a root, its tree is forgotten.
    pub(crate) fn leave(&self, run: RunId) {
        let mut m = self.lock();
        if let Some(root) = m.root_of.remove(&run)
            && let Some(tree) = m.trees.get_mut(&root)
        {
            tree.active.remove(&run);
        }
        if let Some(tree) = m.trees.remove(&run) {
            for child in tree.active {
                m.root_of.remove(&child);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_admits_runs_up_to_its_limit_until_its_root_ends() {
        let trees = Trees::default();
        let root = RunId::new();
        let kids: Vec<RunId> = (0..4).map(|_| RunId::new()).collect();
        // The root is not counted: a limit of 2 is two sub-runs.
        assert_eq!(trees.admit(root, kids[0], 2), Ok(()));
        assert_eq!(trees.admit(root, kids[1], 2), Ok(()));
        assert_eq!(trees.admit(root, kids[2], 2), Err(2));
        // Counting a run twice does not count it twice.
        assert_eq!(trees.admit(root, kids[1], 2), Ok(()));
        trees.join(root, kids[1]);
        assert_eq!(trees.lock().held(root), 2);
        // Children that ended still count.
        trees.leave(kids[0]);
        trees.leave(kids[1]);
        assert_eq!(trees.admit(root, kids[2], 2), Err(2));
        assert!(trees.lock().root_of.is_empty());
        // Once the root ends, a tree of the same root (recovered, say) counts again.
        trees.leave(root);
        assert_eq!(trees.admit(root, kids[2], 2), Ok(()));
        assert_eq!(trees.admit(root, kids[3], 2), Ok(()));
        // Another tree counts its own runs.
        let other = RunId::new();
        assert_eq!(trees.admit(other, RunId::new(), 1), Ok(()));
        assert_eq!(trees.admit(other, RunId::new(), 1), Err(1));
    }

    #[test]
    fn a_root_that_ends_takes_its_tree_with_it() {
        let trees = Trees::default();
        let root = RunId::new();
        let kid = RunId::new();
        trees.join(root, kid);
        trees.leave(root);
        assert_eq!(trees.lock().held(root), 0);
        assert!(trees.lock().root_of.is_empty());
        // The child's own end, later, finds nothing to remove.
        trees.leave(kid);
        assert!(trees.lock().trees.is_empty());
    }

    #[test]
    fn a_root_joins_no_tree_but_its_own() {
        let trees = Trees::default();
        let root = RunId::new();
        trees.join(root, root);
        assert_eq!(trees.lock().held(root), 0);
        assert!(trees.lock().root_of.is_empty());
    }
}
