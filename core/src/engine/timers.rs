//! The timer service: one task holding every pending durable timer of this process.
//!
//! Timers are journaled by their runs (`TimerSetRecord`); this service only keeps the due
//! times in memory (a few dozen bytes per timer, so a suspended run costs almost nothing) and
//! tells the run when one is due. After a restart, replaying a run registers its timers again;
//! registrations are deduplicated by `(run, step, purpose)`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Weak;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::mpsc;

use super::{EngineInner, Event};
use crate::id::RunId;
use crate::record::Step;

pub(crate) use crate::replay::TimerPurpose;

type Key = (RunId, Step, TimerPurpose);

pub(crate) struct Registration {
    pub(crate) run: RunId,
    pub(crate) step: Step,
    pub(crate) purpose: TimerPurpose,
    pub(crate) at_ms: u64,
}

#[derive(Clone, Debug)]
pub(crate) struct Timers {
    tx: mpsc::UnboundedSender<Registration>,
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
        let _ = self.tx.send(r);
    }
}

async fn run(engine: Weak<EngineInner>, mut rx: mpsc::UnboundedReceiver<Registration>) {
    let mut due: BTreeSet<(u64, Key)> = BTreeSet::new();
    let mut by_key: HashMap<Key, u64> = HashMap::new();
    loop {
        let next = due.first().map(|(at, _)| *at);
        let registration = match next {
            None => rx.recv().await,
            Some(at) => {
                let wait = Duration::from_millis(at.saturating_sub(now_ms()));
                tokio::select! {
                    r = rx.recv() => r,
                    () = tokio::time::sleep(wait) => {
                        let now = now_ms();
                        let Some(engine) = engine.upgrade() else { return };
                        while let Some(&(at, key)) = due.first() {
                            if at > now {
                                break;
                            }
                            due.pop_first();
                            by_key.remove(&key);
                            let (run, step, purpose) = key;
                            engine.deliver(run, Event::TimerFired { step, purpose });
                        }
                        continue;
                    }
                }
            }
        };
        let Some(r) = registration else { return };
        let key = (r.run, r.step, r.purpose);
        if by_key.contains_key(&key) {
            continue;
        }
        by_key.insert(key, r.at_ms);
        due.insert((r.at_ms, key));
    }
}
