//! Starting a run's child workflows, and finding them again after a restart.

use serde_json::Value;

use super::Driver;
use crate::context::ChildOutcome;
use crate::engine::{Event, StartRequest};
use crate::record::{ParentRef, RunStatus, Step};

impl Driver {
    fn child_start_request(&self, step: Step) -> Option<StartRequest> {
        let (child_id, req) = self.state.child(step)?;
        let start = self.start.as_ref()?;
        Some(StartRequest {
            workflow: req.workflow.clone(),
            frontend: req.frontend.clone(),
            version: if req.version.is_empty() && req.frontend == "code" {
                None
            } else {
                Some(req.version.clone())
            },
            definition: req.definition.clone(),
            input: req.input.clone(),
            idempotency_key: None,
            started_by: start.started_by.clone(),
            scope: req.scope.clone().unwrap_or_else(|| start.scope.clone()),
            parent: Some(ParentRef {
                run_id: self.run_id,
                step,
                state: req.parent_state.clone(),
            }),
            run_id: Some(child_id),
        })
    }

    /// Starts the child of `step`; a child that cannot start ends the step as failed.
    pub(super) fn start_child(&mut self, step: Step) {
        let Some(req) = self.child_start_request(step) else {
            return;
        };
        let child_id = req.run_id.unwrap_or_default();
        let engine = self.engine.clone();
        let run = self.run_id;
        tokio::spawn(async move {
            if let Err(e) = engine.start(req).await {
                let outcome = ChildOutcome {
                    run_id: child_id,
                    status: RunStatus::Failed,
                    result: Value::Null,
                    reason: Some(e.to_string()),
                };
                engine.deliver(run, Event::ChildDone { step, outcome });
            }
        });
    }

    /// After a restart: starts the child of `step` if its start was never committed, delivers
    /// its outcome if it ended, and recovers it otherwise (it reports to this run when done).
    pub(super) fn check_child(&mut self, step: Step) {
        let Some((child_id, _)) = self.state.child(step) else {
            return;
        };
        match self.engine.store.run_summary(child_id) {
            Ok(None) => self.start_child(step),
            Ok(Some(s)) if s.status.is_terminal() => {
                let (result, reason) = match self.engine.store.read_journal(child_id) {
                    Ok(entries) => {
                        let v = crate::view::RunView::project(&entries, &s);
                        (v.result.unwrap_or(Value::Null), v.reason)
                    }
                    Err(_) => (Value::Null, None),
                };
                let outcome = ChildOutcome {
                    run_id: child_id,
                    status: s.status,
                    result,
                    reason,
                };
                self.engine
                    .deliver(self.run_id, Event::ChildDone { step, outcome });
            }
            Ok(Some(_)) => self.engine.recover(child_id),
            Err(e) => tracing::error!(run = %self.run_id, error = %e, "cannot read child run"),
        }
    }
}
