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

/// The longest the service sleeps before it looks at the wall clock again. Timers are due at
/// a wall-clock time (journaled), but a sleep runs on the monotonic clock: after the wall
/// clock steps forward (an NTP correction, a virtual machine resumed after days) a timer that
/// is due by then fires within this time, not when the sleep begun before the step ends.
const CLOCK_RECHECK: Duration = Duration::from_secs(1);

async fn run(engine: Weak<EngineInner>, rx: mpsc::UnboundedReceiver<Message>) {
    serve(rx, now_ms, |due| {
        let Some(engine) = engine.upgrade() else {
            return false;
        };
        let (step, purpose) = (due.step, due.purpose);
        engine.deliver(due.run(), Event::TimerFired { step, purpose });
        true
    })
    .await;
}

/// The service's loop, on the wall clock `clock`; `fire` delivers a due timer and says
/// whether the engine is still there to deliver to.
async fn serve(
    mut rx: mpsc::UnboundedReceiver<Message>,
    clock: impl Fn() -> u64,
    mut fire: impl FnMut(Due) -> bool,
) {
    let mut queue = TimerQueue::default();
    loop {
        let message = match queue.next_due() {
            None => rx.recv().await,
            Some(at) => {
                let wait = Duration::from_millis(at.saturating_sub(clock())).min(CLOCK_RECHECK);
                tokio::select! {
                    r = rx.recv() => r,
                    () = tokio::time::sleep(wait) => {
                        let now = clock();
                        while let Some(due) = queue.pop_due(now) {
                            if !fire(due) {
                                return;
                            }
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

    /// The wall clock steps an hour forward while a timer an hour away waits (no monotonic
    /// time passes): the timer fires at once, not an hour of running time later.
    #[tokio::test(start_paused = true)]
    async fn a_timer_due_after_the_wall_clock_steps_forward_fires_at_once() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicU64, Ordering};
        let start = 1_800_000_000_000;
        let wall = Arc::new(AtomicU64::new(start));
        let (tx, rx) = mpsc::unbounded_channel();
        let (fired_tx, mut fired) = mpsc::unbounded_channel();
        let clock = wall.clone();
        tokio::spawn(serve(
            rx,
            move || clock.load(Ordering::SeqCst),
            move |due| fired_tx.send(due.at_ms).is_ok(),
        ));
        let at_ms = start + 3_600_000;
        let registration = Registration {
            run: RunId::new(),
            step: 0,
            purpose: TimerPurpose::Sleep,
            at_ms,
        };
        tx.send(Message::Register(registration)).unwrap();
        // The service is asleep on the timer before the clock steps.
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(fired.try_recv().is_err(), "not due yet");
        wall.store(at_ms + 1, Ordering::SeqCst);
        let got = tokio::time::timeout(Duration::from_secs(60), fired.recv()).await;
        assert_eq!(got.ok().flatten(), Some(at_ms), "fired within a minute");
    }
}
