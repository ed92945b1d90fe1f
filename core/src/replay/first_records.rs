//! Where each step of a journal begins: the index of its first record, for replay to match
//! the step the code asks for against it.

use crate::context::StepMap;
use crate::record::{Entry, Step};

use super::step_of;

/// No record of this step (or it was taken).
const NONE: u32 = u32::MAX;

/// The index in a journal of each step's first record, until the step is taken (requested
/// again by the code). Steps are numbered from 0 in the order the code makes them, so a
/// journal of `n` records has its steps below `n`: they are kept in a vector indexed by step
/// (one pass to build, no hashing on the replay path); a step number beyond that, which only a
/// damaged or foreign journal holds, is kept in a map.
#[derive(Debug, Default)]
pub(crate) struct FirstRecords {
    dense: Vec<u32>,
    sparse: StepMap<usize>,
    /// Steps not taken yet.
    left: usize,
}

impl FirstRecords {
    /// The first record of every step of `entries`.
    pub(crate) fn of(entries: &[Entry]) -> Self {
        let mut first = Self {
            dense: vec![NONE; entries.len()],
            sparse: StepMap::default(),
            left: 0,
        };
        for (i, e) in entries.iter().enumerate() {
            let Some(step) = step_of(&e.record) else {
                continue;
            };
            match usize::try_from(step)
                .ok()
                .filter(|&s| s < first.dense.len())
            {
                Some(s) if first.dense[s] == NONE => {
                    // `i` < `entries.len()` = `dense.len()`, which fits: journals are far
                    // below 4 billion records (a run's journal is bounded in bytes).
                    first.dense[s] = u32::try_from(i).unwrap_or(NONE);
                    first.left += 1;
                }
                Some(_) => {}
                None => {
                    if let std::collections::hash_map::Entry::Vacant(v) = first.sparse.entry(step) {
                        v.insert(i);
                        first.left += 1;
                    }
                }
            }
        }
        first
    }

    /// The index of `step`'s first record, unless it was taken.
    pub(crate) fn get(&self, step: Step) -> Option<usize> {
        match usize::try_from(step).ok().and_then(|s| self.dense.get(s)) {
            Some(&NONE) => None,
            Some(&i) => Some(i as usize),
            None => self.sparse.get(&step).copied(),
        }
    }

    /// Takes `step`: the index of its first record, if it has one and was not taken.
    pub(crate) fn take(&mut self, step: Step) -> Option<usize> {
        let taken = match usize::try_from(step)
            .ok()
            .and_then(|s| self.dense.get_mut(s))
        {
            Some(slot) => match std::mem::replace(slot, NONE) {
                NONE => None,
                i => Some(i as usize),
            },
            None => self.sparse.remove(&step),
        };
        if taken.is_some() {
            self.left -= 1;
        }
        taken
    }

    /// Whether every step was taken.
    pub(crate) fn is_empty(&self) -> bool {
        self.left == 0
    }

    /// The steps not taken, each with the index of its first record.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Step, usize)> + '_ {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter(|(_, i)| **i != NONE)
            .map(|(s, i)| (s as Step, *i as usize));
        dense.chain(self.sparse.iter().map(|(s, i)| (*s, *i)))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::Record;

    fn entry(seq: u64, record: Record) -> Entry {
        Entry {
            seq,
            at_ms: 0,
            record,
        }
    }

    fn started(step: Step) -> Record {
        Record::TaskStarted {
            step,
            attempt: 1,
            task: "t".into(),
            name: "t".into(),
            input_hash: 0,
            input: json!(null),
        }
    }

    #[test]
    fn each_step_maps_to_its_first_record_until_taken() {
        let entries = vec![
            entry(0, started(0)),
            entry(1, started(1)),
            entry(2, started(0)),
            // A step number beyond the journal's length (a foreign journal) still counts.
            entry(3, started(1_000)),
        ];
        let mut first = FirstRecords::of(&entries);
        assert_eq!(first.get(0), Some(0), "the first record, not a later one");
        assert_eq!(first.get(1), Some(1));
        assert_eq!(first.get(1_000), Some(3));
        assert_eq!(first.get(2), None);
        let mut left: Vec<_> = first.iter().collect();
        left.sort_unstable();
        assert_eq!(left, vec![(0, 0), (1, 1), (1_000, 3)]);

        assert_eq!(first.take(1), Some(1));
        assert_eq!(first.take(1), None, "a step is taken once");
        assert_eq!(first.get(1), None);
        assert!(!first.is_empty());
        assert_eq!(first.take(1_000), Some(3));
        assert_eq!(first.take(0), Some(0));
        assert!(first.is_empty());
        assert_eq!(first.iter().count(), 0);
    }
}
