//! The timer service: one task holding every pending durable timer of this process.
//!
//! Timers are journaled by their runs (`TimerSetRecord`); this service only keeps the due
//! times in memory (32 bytes per timer in a [`TimerQueue`], so a suspended run costs almost
//! nothing) and tells the run when one is due. After a restart, replaying a run registers its
//! timers again; a timer registered twice is delivered once. When a run ends, its pending
//! timers (a gate's timeout, a sleep that lost a select) are forgotten, so an ended run is
//! never loaded again just to drop a stale timer.

use std::sync::Weak;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

use super::timer_queue::{Due, TimerQueue};
use super::{EngineInner, Event};
use crate::id::RunId;
use crate::record::Step;

pub(crate) use crate::replay::TimerPurpose;

pub(crate) struct Registration {
    pub(crate) run: RunId,
    pub(crate) step: Step,
    pub(crate) purpose: TimerPurpose,
    pub(crate) at_ms: u64,
}

/// What the service is told.
enum Message {
    Register(Registration),
    /// The run ended: drop its pending timers.
    ForgetRun(RunId),
    /// How many timers are pending.
    #[cfg(test)]
    Count(tokio::sync::oneshot::Sender<usize>),
}

#[derive(Clone, Debug)]
pub(crate) struct Timers {
    tx: mpsc::UnboundedSender<Message>,
}

pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Timers {
    pub(crate) fn start(engine: Weak<EngineInner>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(engine, rx));
        Self { tx }
    }

    pub(crate) fn register(&self, r: Registration) {
        let _ = self.tx.send(Message::Register(r));
    }

    /// Drops the pending timers of `run`, which ended.
    pub(crate) fn forget_run(&self, run: RunId) {
        let _ = self.tx.send(Message::ForgetRun(run));
    }

    #[cfg(test)]
    async fn count(&self) -> usize {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = self.tx.send(Message::Count(tx));
        rx.await.unwrap_or(0)
    }
}

async fn run(engine: Weak<EngineInner>, mut rx: mpsc::UnboundedReceiver<Message>) {
    let mut queue = TimerQueue::default();
    loop {
        let message = match queue.next_due() {
            None => rx.recv().await,
            Some(at) => {
                let wait = Duration::from_millis(at.saturating_sub(now_ms()));
                tokio::select! {
                    r = rx.recv() => r,
                    () = tokio::time::sleep(wait) => {
                        let now = now_ms();
                        let Some(engine) = engine.upgrade() else { return };
                        while let Some(due) = queue.pop_due(now) {
                            let (step, purpose) = (due.step, due.purpose);
                            engine.deliver(due.run(), Event::TimerFired { step, purpose });
                        }
                        continue;
                    }
                }
            }
        };
        match message {
            None => return,
            Some(Message::Register(r)) => {
                queue.push(Due::new(r.at_ms, r.run, r.step, r.purpose));
            }
            Some(Message::ForgetRun(run)) => queue.forget_run(run),
            #[cfg(test)]
            Some(Message::Count(reply)) => {
                let _ = reply.send(queue.live_len());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_ended_runs_pending_timers_are_forgotten_and_others_kept() {
        let timers = Timers::start(Weak::new());
        let (ended, other) = (RunId::new(), RunId::new());
        let far = now_ms() + 3_600_000;
        for (run, step, purpose) in [
            (ended, 0, TimerPurpose::Sleep),
            (ended, 3, TimerPurpose::Retry),
            (ended, 7, TimerPurpose::GateTimeout),
            (other, 1, TimerPurpose::GateTimeout),
        ] {
            timers.register(Registration {
                run,
                step,
                purpose,
                at_ms: far,
            });
        }
        assert_eq!(timers.count().await, 4);
        timers.forget_run(ended);
        assert_eq!(
            timers.count().await,
            1,
            "only the other run's timer is left"
        );
        timers.forget_run(ended);
        assert_eq!(timers.count().await, 1);
    }
}
