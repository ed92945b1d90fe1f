//! Webhook dedupe (Friday's `dedupe_window_sec`): the first delivery of a dedupe key within its
//! window starts a run; the others answer with that run and start nothing. Kept in the catalog
//! table `trigger.dedupe` (`{trigger id}/{SHA-256 of the key}` → [`Seen`]), written with
//! insert-if-absent and compare-and-swap so that two workers agree on which delivery was first.

use magrathea_core::{Catalog, StoreError};
use serde::{Deserialize, Serialize};

const DEDUPE: &str = "trigger.dedupe";

/// The first delivery of a key in its window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// When it came (ms).
    pub first_ms: i64,
    /// Its window (ms).
    pub window_ms: i64,
    /// The idempotency key its run starts with.
    pub start_key: String,
    /// Its run, once started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// What a delivery with a dedupe key is.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// The first in the window: start a run with `Seen::start_key`.
    First(Seen),
    /// A repeat inside the window of `Seen`.
    Repeat(Seen),
}

fn encode(seen: &Seen) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(seen).map_err(|e| StoreError::io(e.to_string()))
}

/// Claims `key_hash` for a delivery of trigger `trigger` at `now_ms`.
pub fn claim(
    catalog: &dyn Catalog,
    trigger: &str,
    trigger_key: &str,
    key_hash: &str,
    now_ms: i64,
    window_ms: i64,
) -> Result<Claim, StoreError> {
    let slot = format!("{trigger}/{key_hash}");
    let fresh = Seen {
        first_ms: now_ms,
        window_ms,
        start_key: format!("webhook:{trigger_key}:{key_hash}:{now_ms}"),
        run_id: None,
    };
    let bytes = encode(&fresh)?;
    // A few rounds at most: each lost race means another delivery just claimed the key.
    for _ in 0..8 {
        let Some(held) = catalog.insert_new(DEDUPE, &slot, &bytes)? else {
            return Ok(Claim::First(fresh));
        };
        let Ok(seen) = serde_json::from_slice::<Seen>(&held) else {
            catalog.delete(DEDUPE, std::slice::from_ref(&slot))?;
            continue;
        };
        if now_ms - seen.first_ms < seen.window_ms {
            return Ok(Claim::Repeat(seen));
        }
        // The window passed: this delivery is a new first one.
        if catalog.swap(DEDUPE, &slot, Some(&held), &bytes)? {
            return Ok(Claim::First(fresh));
        }
    }
    Err(StoreError::io("the dedupe key is contended; try again"))
}

/// Notes the run a first delivery started.
pub fn started(
    catalog: &dyn Catalog,
    trigger: &str,
    key_hash: &str,
    seen: &Seen,
    run: &str,
) -> Result<(), StoreError> {
    let slot = format!("{trigger}/{key_hash}");
    let before = encode(seen)?;
    let after = encode(&Seen {
        run_id: Some(run.to_owned()),
        ..seen.clone()
    })?;
    // Lost only if the window passed and another delivery took the key: nothing to note then.
    catalog.swap(DEDUPE, &slot, Some(&before), &after).map(drop)
}

/// Gives the key back after its first delivery's start was refused (nothing started): the
/// next delivery of the key is a first one again, as a sender retrying a failed delivery
/// expects. A no-op if another delivery has taken the key since.
pub fn release(
    catalog: &dyn Catalog,
    trigger: &str,
    key_hash: &str,
    seen: &Seen,
) -> Result<(), StoreError> {
    let slot = format!("{trigger}/{key_hash}");
    let before = encode(seen)?;
    // A window of nothing: the next claim finds it passed and takes the key, and a prune
    // removes it.
    let after = encode(&Seen {
        window_ms: 0,
        ..seen.clone()
    })?;
    catalog.swap(DEDUPE, &slot, Some(&before), &after).map(drop)
}

/// Deletes the keys whose window has passed; how many.
pub fn prune(catalog: &dyn Catalog, now_ms: i64) -> Result<usize, StoreError> {
    let mut doomed = Vec::new();
    magrathea_core::store::catalog::scan_all(catalog, DEDUPE, "", 1000, |key, bytes| {
        let expired = serde_json::from_slice::<Seen>(&bytes)
            .map_or(true, |s| now_ms - s.first_ms >= s.window_ms);
        if expired {
            doomed.push(key);
        }
        Ok(())
    })?;
    // Deleted in batches, so that one transaction stays small.
    let mut gone = 0;
    for batch in doomed.chunks(1000) {
        gone += catalog.delete(DEDUPE, batch)?;
    }
    Ok(gone)
}

#[cfg(test)]
mod tests {
    use magrathea_core::MemoryStore;

    use super::*;

    #[test]
    fn the_first_delivery_of_a_key_wins_inside_its_window_and_a_later_one_after_it() {
        let store = MemoryStore::new();
        let Claim::First(seen) = claim(&store, "t", "k", "h", 1_000, 300_000).unwrap() else {
            panic!("the first delivery is first");
        };
        started(&store, "t", "h", &seen, "run-1").unwrap();
        match claim(&store, "t", "k", "h", 300_999, 300_000).unwrap() {
            Claim::Repeat(s) => assert_eq!(s.run_id.as_deref(), Some("run-1")),
            other => panic!("{other:?}"),
        }
        // Other triggers and keys are apart.
        assert!(matches!(
            claim(&store, "u", "k", "h", 2_000, 300_000).unwrap(),
            Claim::First(_)
        ));
        assert!(matches!(
            claim(&store, "t", "k", "g", 2_000, 300_000).unwrap(),
            Claim::First(_)
        ));
        match claim(&store, "t", "k", "h", 301_000, 300_000).unwrap() {
            Claim::First(s) => {
                assert_eq!(s.first_ms, 301_000);
                assert_ne!(s.start_key, seen.start_key, "a new run, not the old one");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(prune(&store, 700_000).unwrap(), 3);
    }

    #[test]
    fn a_released_key_is_first_again_for_the_next_delivery() {
        let store = MemoryStore::new();
        let Claim::First(seen) = claim(&store, "t", "k", "h", 1_000, 300_000).unwrap() else {
            panic!("the first delivery is first");
        };
        release(&store, "t", "h", &seen).unwrap();
        let Claim::First(again) = claim(&store, "t", "k", "h", 1_500, 300_000).unwrap() else {
            panic!("a released key is claimed afresh");
        };
        assert_ne!(again.start_key, seen.start_key);
        // Releasing a claim another delivery has replaced leaves the new one alone.
        release(&store, "t", "h", &seen).unwrap();
        assert!(matches!(
            claim(&store, "t", "k", "h", 1_600, 300_000).unwrap(),
            Claim::Repeat(s) if s == again
        ));
    }
}
