//! Project lanes (reference §11): a project's synchronous tasks run one at a time by default,
//! so two runs never race in one workspace; `lanes.maxConcurrentTasks` in the project's
//! settings raises the limit. Lanes of different projects are independent.
//!
//! Each project has two lanes of that width: one for its shell steps ([`Lane::Shell`]) and one
//! for its script and tool steps ([`Lane::Tasks`]). Shell steps are the ones that touch the
//! workspace and the ones that may run for an hour; script and tool steps are short and
//! reach the workspace only through the tool layer. Keeping them apart means a slow shell
//! step of one run never holds up another run's script or tool steps, while two shell steps of
//! a project still never run in its workspace at once (with the default width of 1).
//!
//! The width is read from the settings each time a step enters a lane, so a changed limit
//! takes effect without a restart. The limit holds across every process driving the engine's
//! store. A store one process owns (redb, memory) has one engine driving it, so a semaphore in
//! that process is the lane. A store several workers share (PostgreSQL) keeps the lane's slots
//! itself ([`LaneSlots`]): a step takes one before it runs, polling with a short backoff while
//! all are held, and gives it back when it ends; a worker that dies holding slots loses them
//! after the store's lease grace period.
//!
//! A step that finds its lane full journals the wait and its end
//! ([`TaskContext::wait_for_admission`]): when the process stops while a step waits, recovery
//! runs the step again without counting an execution that never began, so a run queued behind
//! a long step survives any number of restarts.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use magrathea_core::store::{LaneSlot, LaneSlots};
use magrathea_core::{TaskContext, TaskError, WeakEngine};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::documents::{DocumentSource, Scope};

/// The first wait for a shared lane's slot while all are held; it doubles up to
/// [`SLOT_WAIT_MAX`].
const SLOT_WAIT_MIN: Duration = Duration::from_millis(10);
/// The longest wait between two asks for a shared lane's slot.
const SLOT_WAIT_MAX: Duration = Duration::from_millis(200);

/// Which of a project's two lanes a step waits in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lane {
    /// `shell_task` steps.
    Shell,
    /// `script_task` and `tool_task` steps (and hosts' own executors, through
    /// `Executors::enter_lane`).
    Tasks,
}

impl Lane {
    /// The lane's name in a shared store, after the scope's key.
    fn suffix(self) -> &'static str {
        match self {
            Self::Shell => "shell",
            Self::Tasks => "tasks",
        }
    }
}

pub(crate) struct Lanes {
    docs: DocumentSource,
    local: Mutex<HashMap<(String, Lane), LocalLane>>,
    /// The engine, once attached: its store decides whether lanes are local or shared. Weak,
    /// as everywhere in the executors (see `Inner::engine`).
    engine: OnceLock<WeakEngine>,
}

/// A lane of this process: a semaphore whose permits follow the width in the settings.
struct LocalLane {
    semaphore: Arc<Semaphore>,
    /// The width the permits were last set to.
    width: usize,
    /// Permits a narrowing still has to take away: they are held now, and are forgotten as
    /// they come back.
    debt: usize,
}

impl LocalLane {
    fn new(width: usize) -> Self {
        Self {
            semaphore: Arc::new(Semaphore::new(width)),
            width,
            debt: 0,
        }
    }

    /// Makes the lane `width` wide: a wider lane lets waiting steps in at once; a narrower
    /// one admits no new step until fewer than `width` hold a place.
    fn resize(&mut self, width: usize) {
        if width > self.width {
            let more = width - self.width;
            let repaid = more.min(self.debt);
            self.debt -= repaid;
            self.semaphore.add_permits(more - repaid);
        } else {
            self.debt += self.width - width;
        }
        self.width = width;
        if self.debt > 0 {
            self.debt -= self.semaphore.forget_permits(self.debt);
        }
    }
}

/// A place in a lane; dropping it frees the place.
pub(crate) enum LanePlace {
    /// A permit of this process's semaphore.
    Local(#[allow(dead_code, reason = "held for its drop")] OwnedSemaphorePermit),
    /// A slot of the shared store.
    Shared(SharedPlace),
}

impl fmt::Debug for LanePlace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Local(_) => f.write_str("LanePlace::Local"),
            Self::Shared(place) => f
                .debug_tuple("LanePlace::Shared")
                .field(&place.slot)
                .finish(),
        }
    }
}

/// A slot of a shared lane, given back on drop.
pub(crate) struct SharedPlace {
    slots: LaneSlots,
    slot: LaneSlot,
}

impl Drop for SharedPlace {
    fn drop(&mut self) {
        let (slots, slot) = (self.slots.clone(), self.slot.clone());
        let release = move || {
            if let Err(e) = slots.release(&slot) {
                // The store keeps it to release at its next heartbeat that reaches the
                // database, and does not renew it meanwhile.
                tracing::warn!(error = %e, lane = %slot.lane, "could not give a lane slot back");
            }
        };
        // The release waits for the database: off the async runtime's threads when on one.
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(release)),
            Err(_) => release(),
        }
    }
}

impl Lanes {
    pub(crate) fn new(docs: DocumentSource) -> Self {
        Self {
            docs,
            local: Mutex::new(HashMap::new()),
            engine: OnceLock::new(),
        }
    }

    /// Lets the lanes see the engine's store; later calls are ignored.
    pub(crate) fn attach(&self, engine: WeakEngine) {
        let _ = self.engine.set(engine);
    }

    fn width(&self, scope_key: &str) -> usize {
        Scope::parse(scope_key)
            .map(|s| self.docs.settings(&s).lanes.max_concurrent_tasks)
            .unwrap_or(1)
            .max(1)
    }

    /// Waits for a place in the scope's lane `lane` for the attempt `ctx`. A place free at
    /// once is taken without a record; a wait is journaled
    /// ([`TaskContext::wait_for_admission`]), so that a process stopping while the attempt
    /// waits does not count an execution that never began.
    pub(crate) async fn enter(
        &self,
        scope_key: &str,
        lane: Lane,
        ctx: &TaskContext,
    ) -> Result<LanePlace, TaskError> {
        let shared = self
            .engine
            .get()
            .and_then(WeakEngine::upgrade)
            .and_then(|engine| engine.lane_slots());
        match shared {
            Some(slots) => {
                let name = format!("{scope_key}/{}", lane.suffix());
                if let Some(place) = self.ask_shared(&slots, scope_key, &name).await {
                    return Ok(LanePlace::Shared(place));
                }
                let wait = self.enter_shared(slots, scope_key, &name);
                Ok(LanePlace::Shared(ctx.wait_for_admission(wait).await?))
            }
            None => {
                let semaphore = self.local_lane(scope_key, lane);
                if let Ok(permit) = semaphore.clone().try_acquire_owned() {
                    return Ok(LanePlace::Local(permit));
                }
                // The semaphore is never closed.
                let wait = async move {
                    semaphore
                        .acquire_owned()
                        .await
                        .expect("lane semaphores are never closed")
                };
                Ok(LanePlace::Local(ctx.wait_for_admission(wait).await?))
            }
        }
    }

    /// This process's semaphore of the lane, made as wide as the settings say now: the width
    /// is read at each entry, so a changed limit takes effect without a restart.
    fn local_lane(&self, scope_key: &str, lane: Lane) -> Arc<Semaphore> {
        let width = self.width(scope_key);
        let mut lanes = self.local.lock().unwrap_or_else(|p| p.into_inner());
        let local = lanes
            .entry((scope_key.to_string(), lane))
            .or_insert_with(|| LocalLane::new(width));
        local.resize(width);
        local.semaphore.clone()
    }

    /// Asks the shared store once for a slot of the lane `name`; `None` while all are held
    /// (or the store does not answer). The width is read from the settings at each ask, so a
    /// raised limit takes effect without a restart.
    async fn ask_shared(
        &self,
        slots: &LaneSlots,
        scope_key: &str,
        name: &str,
    ) -> Option<SharedPlace> {
        let width = u32::try_from(self.width(scope_key)).unwrap_or(u32::MAX);
        let (asking, lane_name) = (slots.clone(), name.to_owned());
        // The ask runs on a blocking thread; if this future is dropped meanwhile (the step was
        // cancelled), a slot it took is given back when its place is dropped there.
        let taken = tokio::task::spawn_blocking(move || {
            asking.acquire(&lane_name, width).map(|slot| {
                slot.map(|slot| SharedPlace {
                    slots: asking.clone(),
                    slot,
                })
            })
        })
        .await;
        match taken {
            Ok(Ok(place)) => place,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, lane = %name, "cannot ask the store for a lane slot");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, lane = %name, "the ask for a lane slot failed");
                None
            }
        }
    }

    /// Polls the shared store for a slot, backing off while all are held.
    async fn enter_shared(&self, slots: LaneSlots, scope_key: &str, name: &str) -> SharedPlace {
        let mut wait = SLOT_WAIT_MIN;
        loop {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(SLOT_WAIT_MAX);
            if let Some(place) = self.ask_shared(&slots, scope_key, name).await {
                return place;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lane_follows_its_width_up_and_down() {
        let mut lane = LocalLane::new(1);
        let held = lane.semaphore.clone().try_acquire_owned().unwrap();
        assert!(lane.semaphore.clone().try_acquire_owned().is_err());

        lane.resize(3);
        let second = lane.semaphore.clone().try_acquire_owned().unwrap();
        let third = lane.semaphore.clone().try_acquire_owned().unwrap();
        assert!(lane.semaphore.clone().try_acquire_owned().is_err());

        // Narrowed to 1 while three hold a place: none enters until two have left.
        lane.resize(1);
        drop(held);
        lane.resize(1);
        assert!(lane.semaphore.clone().try_acquire_owned().is_err());
        drop(second);
        lane.resize(1);
        assert!(lane.semaphore.clone().try_acquire_owned().is_err());
        drop(third);
        lane.resize(1);
        let only = lane.semaphore.clone().try_acquire_owned().unwrap();
        assert!(lane.semaphore.clone().try_acquire_owned().is_err());
        drop(only);

        // Widened again while a narrowing is still owed: the debt is repaid first, so the lane
        // ends exactly as wide as it was asked to be.
        lane.resize(2);
        let one = lane.semaphore.clone().try_acquire_owned().unwrap();
        let two = lane.semaphore.clone().try_acquire_owned().unwrap();
        lane.resize(1);
        lane.resize(2);
        assert!(lane.semaphore.clone().try_acquire_owned().is_err());
        drop((one, two));
        assert_eq!(lane.semaphore.available_permits(), 2);
    }
}
