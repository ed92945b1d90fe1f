//! [`LaneSlots`]: an engine's handle on the lane slots of a store several workers share.

use std::fmt;
use std::sync::Arc;

use super::{LaneSlot, Leases, Store};
use crate::error::StoreError;

/// The lane slots of an engine's store (see [`Leases::acquire_slot`]), for executors that
/// limit how many tasks of a kind run at once across every worker of the store. Only a store
/// several workers share has them ([`Engine::lane_slots`](crate::Engine::lane_slots)); with
/// a store one process owns, a limit held in that process is already global.
///
/// Its calls wait for the database: call them from a thread that may block
/// (`tokio::task::spawn_blocking`), not from an async task.
#[derive(Clone)]
pub struct LaneSlots {
    store: Arc<dyn Store>,
}

impl fmt::Debug for LaneSlots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaneSlots")
            .field("worker", &self.leases().ok().map(Leases::worker))
            .finish()
    }
}

impl LaneSlots {
    /// The slots of `store`, if it is shared.
    pub(crate) fn of(store: &Arc<dyn Store>) -> Option<Self> {
        store.leases().is_some().then(|| Self {
            store: store.clone(),
        })
    }

    fn leases(&self) -> Result<&dyn Leases, StoreError> {
        // A store's `leases` does not change: `of` made sure there are some.
        self.store.leases().ok_or(StoreError::Closed)
    }

    /// Takes a free slot of `lane` (of `0..width`), or `None` while every slot is held (see
    /// [`Leases::acquire_slot`]).
    pub fn acquire(&self, lane: &str, width: u32) -> Result<Option<LaneSlot>, StoreError> {
        self.leases()?.acquire_slot(lane, width)
    }

    /// Gives `slot` back (see [`Leases::release_slot`]).
    pub fn release(&self, slot: &LaneSlot) -> Result<(), StoreError> {
        self.leases()?.release_slot(slot)
    }
}
