//! Applying a record to the run state, and handing the completions it causes to the code's
//! step futures: once per record live, and once per journaled record on every replay.

use super::Driver;
use crate::context::{Link, lock};
use crate::record::Record;
use crate::replay::Resolved;

impl Driver {
    /// Applies a record to the run state and feeds the completions it causes to the code.
    pub(super) fn apply(&mut self, seq: u64, record: &Record) {
        match record {
            Record::CancelRequested { reason } => {
                // The code learns of it before it sees its pending steps end.
                lock(&self.shared).cancelled = Some(reason.clone());
            }
            Record::TimerFired { step } => {
                let mut s = lock(&self.shared);
                if s.deadline.as_ref().is_some_and(|(at, _)| at == step) {
                    s.deadline_fired = true;
                }
            }
            _ => {}
        }
        let mut resolved = std::mem::take(&mut self.resolved_buf);
        let applied = self.state.apply(seq, record, &mut resolved);
        match applied {
            Ok(()) => Self::deliver(&self.shared, &mut resolved),
            Err(nd) => {
                let mut reason = nd.to_string();
                // Code that failed before it reached the journaled step (an input or output
                // that no longer decodes as its type) says why, or the report would only say
                // that the step is no longer requested.
                if let Some(Err(e)) = self.replay.as_ref().and_then(|c| c.result.as_ref()) {
                    reason.push_str(&format!(" (the code ended before this step: {e})"));
                }
                self.block_diverged(reason, nd)
            }
        }
        resolved.clear();
        self.resolved_buf = resolved;
    }

    /// Hands completions (taking them from `resolved`) to the step futures (not to dropped
    /// ones: nobody awaits those).
    fn deliver(shared: &Link, resolved: &mut Vec<Resolved>) {
        match resolved.len() {
            0 => {}
            // The common case (one step completed): no list of wakers.
            1 => {
                let waker = {
                    let mut s = lock(shared);
                    resolved.pop().and_then(|r| {
                        if s.dropped.contains(&r.step) {
                            return None;
                        }
                        s.resolved.insert(r.step, (r.seq, r.resolution));
                        s.wakers.remove(&r.step)
                    })
                };
                if let Some(w) = waker {
                    w.wake();
                }
            }
            _ => {
                let mut wake = Vec::new();
                {
                    let mut s = lock(shared);
                    for r in resolved.drain(..) {
                        if s.dropped.contains(&r.step) {
                            continue;
                        }
                        s.resolved.insert(r.step, (r.seq, r.resolution));
                        wake.extend(s.wakers.remove(&r.step));
                    }
                }
                for w in wake {
                    w.wake();
                }
            }
        }
    }
}
