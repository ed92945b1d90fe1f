//! A wait for a named signal, and the buffer of signals that arrived before any wait.
//!
//! ```text
//! SignalAwaited ──▶ Waiting ──SignalReceived{step} / SignalDelivered──▶ Received
//! SignalReceived{step: None} ──▶ buffered until a wait of that name takes it
//! ```

use std::collections::VecDeque;

use serde_json::Value;

/// A signal wait's phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignalStep {
    /// No signal yet.
    Waiting,
    /// A signal completed the wait (or cancellation ended it).
    Received,
}

impl SignalStep {
    pub(crate) fn is_resolved(self) -> bool {
        self == SignalStep::Received
    }
}

/// A signal that arrived while no wait of its name was pending, in arrival order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Buffered {
    /// The journal seq of its `SignalReceivedRecord`.
    pub(crate) seq: u64,
    pub(crate) name: String,
    pub(crate) payload: Value,
}

/// Signals received and not yet taken by a wait.
#[derive(Debug, Default)]
pub(crate) struct SignalBuffer {
    queue: VecDeque<Buffered>,
}

impl SignalBuffer {
    pub(crate) fn push(&mut self, signal: Buffered) {
        self.queue.push_back(signal);
    }

    /// The seq of the oldest buffered signal named `name`.
    pub(crate) fn first_named(&self, name: &str) -> Option<u64> {
        self.queue.iter().find(|s| s.name == name).map(|s| s.seq)
    }

    /// Takes the buffered signal journaled at `seq`.
    pub(crate) fn take(&mut self, seq: u64) -> Option<Buffered> {
        let i = self.queue.iter().position(|s| s.seq == seq)?;
        self.queue.remove(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffered_signals_are_taken_oldest_first_by_name() {
        let mut b = SignalBuffer::default();
        for (seq, name) in [(3, "a"), (5, "b"), (7, "a")] {
            b.push(Buffered {
                seq,
                name: name.into(),
                payload: Value::from(seq),
            });
        }
        assert_eq!(b.first_named("a"), Some(3));
        assert_eq!(b.take(3).map(|s| s.payload), Some(Value::from(3)));
        assert_eq!(b.first_named("a"), Some(7));
        assert_eq!(b.first_named("c"), None);
        assert!(b.take(3).is_none(), "a signal is taken once");
    }
}
