//! A child-workflow step: the child's run id is fixed when the step is journaled, so a restart
//! finds (or starts) the same child.
//!
//! ```text
//! ChildStarted ──▶ Running{child, request} ──ChildFinished / CancelRequested──▶ Finished{child}
//! ```

use crate::context::ChildRequest;
use crate::id::RunId;

/// A child step's phase.
#[derive(Debug)]
pub(crate) enum ChildStep {
    /// The child runs (or is to be started from `request`).
    Running {
        child: RunId,
        request: Box<ChildRequest>,
    },
    /// The child ended (or the parent's cancellation ended the wait).
    Finished { child: RunId },
}

impl ChildStep {
    pub(crate) fn child(&self) -> RunId {
        match self {
            ChildStep::Running { child, .. } | ChildStep::Finished { child } => *child,
        }
    }

    pub(crate) fn request(&self) -> Option<&ChildRequest> {
        match self {
            ChildStep::Running { request, .. } => Some(request),
            ChildStep::Finished { .. } => None,
        }
    }

    pub(crate) fn is_resolved(&self) -> bool {
        matches!(self, ChildStep::Finished { .. })
    }

    /// Ends the wait; returns whether it was running.
    pub(crate) fn finish(&mut self) -> bool {
        let child = self.child();
        !std::mem::replace(self, ChildStep::Finished { child }).is_resolved()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finishes_once_and_keeps_the_child_id() {
        let id = RunId::new();
        let mut c = ChildStep::Running {
            child: id,
            request: Box::new(ChildRequest::code("ship", serde_json::Value::Null)),
        };
        assert_eq!(c.request().map(|r| r.workflow.as_str()), Some("ship"));
        assert!(c.finish());
        assert!(c.is_resolved());
        assert!(!c.finish());
        assert_eq!(c.child(), id);
        assert!(c.request().is_none());
    }
}
