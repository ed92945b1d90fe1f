//! An operator's controls of a run: [`Engine::pause`] and [`Engine::unpause`].

use tokio::sync::oneshot;

use super::{Control, ControlAck, Engine, Event};
use crate::error::{DeliverError, StoreError};
use crate::id::RunId;

impl Engine {
    /// Pauses a run: from the commit of its `PauseRequestedRecord` on, it dispatches nothing
    /// new — the task attempts (retries included), children, timers and gates its code asks
    /// for are held, as is its end — until [`Engine::unpause`]. A task attempt already running
    /// finishes and its result is journaled; a timer that comes due is journaled and its effect
    /// waits; gates may be answered and signals sent (journaled, acted on after the resume).
    /// The code sees nothing of the pause, so replay is unchanged. The run's status is
    /// `PAUSED`, and stays so when the engine reopens (a paused run is replayed, not driven:
    /// even an attempt that the process running it died in waits for the resume).
    ///
    /// Pausing a paused run does nothing ([`ControlAck::AlreadyPaused`]); a run that has
    /// ended, or whose cancellation is under way, is refused with
    /// [`DeliverError::NotPausable`]. [`Engine::cancel`] works on a paused run: the cancellation
    /// ends the pause, and what the run held ends cancelled without running.
    pub async fn pause(
        &self,
        run: RunId,
        by: &str,
        reason: Option<&str>,
    ) -> Result<ControlAck, DeliverError> {
        self.control(
            run,
            Control::Pause {
                by: by.into(),
                reason: reason.map(str::to_owned),
            },
        )
        .await
    }

    /// Resumes a paused run (see [`Engine::pause`]): journals its `ResumeRequestedRecord`,
    /// then dispatches what it held in the order its code asked. A run that is not paused is
    /// refused with [`DeliverError::NotPaused`]. (Named so because [`Engine::resume`] recovers
    /// a run.)
    pub async fn unpause(&self, run: RunId, by: &str) -> Result<ControlAck, DeliverError> {
        self.control(run, Control::Unpause { by: by.into() }).await
    }

    async fn control(&self, run: RunId, control: Control) -> Result<ControlAck, DeliverError> {
        if self.inner.store.run_summary(run)?.is_none() {
            return Err(DeliverError::RunNotFound(run));
        }
        let (reply, done) = oneshot::channel();
        self.inner.deliver(run, Event::Control { control, reply });
        done.await
            .map_err(|_| DeliverError::Store(StoreError::Closed))?
    }
}
