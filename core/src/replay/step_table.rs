//! The steps of a run, by step number.

use crate::context::StepMap;
use crate::record::Step;

/// How far past the last dense slot a step may be and still be kept densely: the code makes
/// steps in order, so a new step is the next slot; a larger gap only comes from a damaged or
/// foreign journal, whose steps go to the map instead of growing the vector.
const DENSE_GAP: usize = 64;

/// A map from step number to `V`. Steps are numbered from 0 in the order the code makes them,
/// so they are kept in a vector indexed by step: inserting the next step is a push and a
/// lookup an index, where a hash map hashed every step of every record applied. A step far
/// beyond the others is kept in a map.
#[derive(Debug)]
pub(crate) struct StepTable<V> {
    dense: Vec<Option<V>>,
    sparse: StepMap<V>,
}

impl<V> Default for StepTable<V> {
    fn default() -> Self {
        Self {
            dense: Vec::new(),
            sparse: StepMap::default(),
        }
    }
}

impl<V> StepTable<V> {
    /// Room for `n` more steps.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.dense.reserve(n);
    }

    fn slot(step: Step) -> Option<usize> {
        usize::try_from(step).ok()
    }

    /// Inserts (or replaces) `step`.
    pub(crate) fn insert(&mut self, step: Step, value: V) {
        match Self::slot(step) {
            Some(s) if s < self.dense.len() => {
                self.forget_sparse(step);
                self.dense[s] = Some(value);
            }
            Some(s) if s <= self.dense.len() + DENSE_GAP => {
                if s > self.dense.len() {
                    self.dense.resize_with(s, || None);
                }
                self.forget_sparse(step);
                self.dense.push(Some(value));
            }
            _ => {
                self.sparse.insert(step, value);
            }
        }
    }

    /// Removes `step` from the map, where a step far beyond the others was kept. The map is
    /// empty in all but damaged journals: checking that spares hashing every step inserted.
    fn forget_sparse(&mut self, step: Step) {
        if !self.sparse.is_empty() {
            self.sparse.remove(&step);
        }
    }

    /// The value of `step`.
    pub(crate) fn get(&self, step: &Step) -> Option<&V> {
        match Self::slot(*step).and_then(|s| self.dense.get(s)) {
            Some(Some(v)) => Some(v),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(step),
        }
    }

    /// The value of `step`, to change.
    pub(crate) fn get_mut(&mut self, step: &Step) -> Option<&mut V> {
        match Self::slot(*step).and_then(|s| self.dense.get_mut(s)) {
            Some(Some(v)) => Some(v),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get_mut(step),
        }
    }

    /// Whether `step` is in the table.
    pub(crate) fn contains_key(&self, step: &Step) -> bool {
        self.get(step).is_some()
    }

    /// The steps in the table (the dense ones in order, then the others).
    pub(crate) fn keys(&self) -> impl Iterator<Item = Step> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_some())
            .map(|(s, _)| s as Step);
        dense.chain(self.sparse.keys().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_in_order_far_apart_and_replaced_are_all_found() {
        let mut t = StepTable::default();
        t.insert(0, "a");
        t.insert(2, "c"); // a gap of one step
        t.insert(1, "b");
        t.insert(1_000_000, "far"); // beyond the gap: kept in the map
        assert_eq!(t.get(&0), Some(&"a"));
        assert_eq!(t.get(&1), Some(&"b"));
        assert_eq!(t.get(&2), Some(&"c"));
        assert_eq!(t.get(&3), None);
        assert_eq!(t.get(&1_000_000), Some(&"far"));
        assert!(!t.contains_key(&999_999));
        *t.get_mut(&1_000_000).unwrap() = "far, changed";
        assert_eq!(t.get(&1_000_000), Some(&"far, changed"));
        t.insert(2, "c again");
        assert_eq!(t.get(&2), Some(&"c again"));
        let mut keys: Vec<Step> = t.keys().collect();
        keys.sort_unstable();
        assert_eq!(keys, vec![0, 1, 2, 1_000_000]);
    }

    #[test]
    fn a_step_first_kept_in_the_map_moves_to_the_vector_when_it_is_replaced() {
        let mut t = StepTable::default();
        t.insert(100, "early"); // past the gap of an empty table
        for s in 0..100 {
            t.insert(s, "x");
        }
        t.insert(100, "replaced");
        assert_eq!(t.get(&100), Some(&"replaced"));
        assert_eq!(t.keys().filter(|s| *s == 100).count(), 1, "kept once");
    }
}
