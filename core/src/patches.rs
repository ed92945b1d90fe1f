//! Patch markers: changing a workflow's code while runs of the old code are in flight.

use serde_json::Value;

use crate::codec::str_hash;
use crate::context::{CommandDetail, WorkflowContext};
use crate::record::{Record, Step, StepKind};
use crate::replay::{Replayed, patch_marker};

impl WorkflowContext {
    /// Whether this run takes the code path added by patch `id`: a way to change the code of a
    /// workflow while runs of the old code are still in flight.
    ///
    /// New runs, and runs that reach this call for the first time after the change, record a
    /// patch marker and get `true`. A run whose journal was written by the old code (it has
    /// another step where the marker would be) gets `false` and records nothing, so it goes on
    /// replaying the old path. Once no run of the old code is left, replace the call with
    /// [`deprecate_patch`](Self::deprecate_patch) and keep only the new path; once no run
    /// with the marker is left, remove that call too.
    ///
    /// ```text
    /// if ctx.patched("send-receipt") { ctx.task("send_receipt", order).await?; }
    /// ```
    ///
    /// Replay: a recorded marker of another patch at this step is a non-determinism error
    /// (`[MAG-ND005]`); patch calls must stay in the order the runs recorded them.
    pub fn patched(&self, id: &str) -> bool {
        let marker = patch_marker(id);
        let step = self.lock().next_step;
        let recorded = match self.lock().replayed(step) {
            None => None,
            Some(Replayed::Value { name, .. }) if name.starts_with("patch:") => {
                Some(Some(name.to_string()))
            }
            // The journal holds a step of the old code here.
            Some(_) => Some(None),
        };
        match recorded {
            Some(None) => return false,
            Some(Some(name)) if name != marker => {
                let mut s = self.lock();
                s.patch_conflicts.push((step, name, marker));
                self.shared.left_work();
                return true;
            }
            _ => {}
        }
        self.push_marker(step, marker);
        true
    }

    /// Marks patch `id` as the only path: the marker is no longer recorded, and one that a run
    /// recorded at this step is accepted. See [`patched`](Self::patched).
    pub fn deprecate_patch(&self, id: &str) {
        let marker = patch_marker(id);
        let step = self.lock().next_step;
        let recorded = matches!(self.lock().replayed(step),
            Some(Replayed::Value { name, .. }) if name == marker);
        if recorded {
            self.push_marker(step, marker);
        }
    }

    fn push_marker(&self, step: Step, marker: String) {
        let record = Record::SideEffect {
            step,
            name: marker.clone(),
            value: Value::Bool(true),
        };
        let hash = str_hash(&marker);
        self.push(
            StepKind::SideEffect,
            marker,
            hash,
            CommandDetail::Record { record },
        );
    }
}
