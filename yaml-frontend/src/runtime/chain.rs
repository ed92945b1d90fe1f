//! Trigger chains: a run that an event subscription or a hook starts in reaction to another
//! run's event continues that run's chain, and so does a run that the `workflow_start` tool
//! starts from a run. Two subscriptions to `workflow.run.completed` of each other's workflows
//! (a hook starting what it reacts to, a workflow that starts itself with `workflow_start`)
//! would otherwise start runs for ever, and with a fan-out exponentially, filling the shared
//! store for every tenant.
//!
//! A sub-run (a `workflow_task`, a parallel branch) belongs to the chain of its tree's root, so
//! a loop through a sub-run is a chain too.
//!
//! A chain is bounded twice: at most [`MAX_DEPTH`] runs from its first run to its newest, and
//! at most [`MAX_RUNS`] runs started by triggers in all. A start past either bound is refused
//! (`[MAG-TR004]`): a subscription's delivery is recorded `rejected` with reason
//! `trigger_chain`, a hook's `workflows.start` throws, a `workflow_start` call fails.
//!
//! Both are kept in the store's catalog, so that they hold across restarts and across the
//! workers of a shared store: `trigger.chain` maps the idempotency key of each triggered start
//! (journaled in its run's `StartRecord`) to the chain it continues, and `trigger.chain.runs`
//! counts the runs of each chain by its first run.

use magrathea_core::{Catalog, Engine, Record, RunId, StartRecord, StoreError};
use serde::{Deserialize, Serialize};

/// The most runs from a chain's first run to its newest (the first run is at depth 0).
pub const MAX_DEPTH: u32 = 16;
/// The most runs triggers start in one chain.
pub const MAX_RUNS: u64 = 1_000;

/// The prefixes of the idempotency keys of starts that continue a chain: an event
/// subscription's, a hook's, the `workflow_start` tool's.
const CHAINED_KEYS: [&str; 3] = ["event:", "hook:", WORKFLOW_START_KEY];

/// The prefix of the idempotency key of a run the `workflow_start` tool starts.
pub const WORKFLOW_START_KEY: &str = "workflow_start:";

/// Triggered start's idempotency key → the chain its run continues.
const LINKS: &str = "trigger.chain";
/// A chain's first run → how many runs triggers started in it.
const COUNTS: &str = "trigger.chain.runs";

/// Where a run stands in its chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Link {
    /// The chain's first run: one that no trigger reacting to an event started.
    pub root: String,
    /// Runs from the first to this one (0 for the first).
    pub depth: u32,
}

/// The chain of `run`, whose start had the idempotency key `key`: the one its trigger
/// recorded in `catalog`, else a chain of its own.
pub fn of(catalog: Option<&dyn Catalog>, run: RunId, key: Option<&str>) -> Link {
    let own = || Link {
        root: run.to_string(),
        depth: 0,
    };
    let (Some(catalog), Some(key)) = (
        catalog,
        key.filter(|k| CHAINED_KEYS.iter().any(|p| k.starts_with(p))),
    ) else {
        return own();
    };
    match catalog.get(LINKS, key) {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or_else(|_| own()),
        Ok(None) => own(),
        Err(e) => {
            tracing::warn!(error = %e, run = %run, "could not read a run's trigger chain");
            own()
        }
    }
}

/// Makes room in `from`'s chain for the run a trigger starts with the idempotency key `key`,
/// before it is started. `Err` with the message of the refusal when the chain is too deep or
/// holds too many runs. The same key twice (an event seen twice starts one run) counts once.
pub fn extend(catalog: &dyn Catalog, from: &Link, key: &str) -> Result<(), String> {
    let next = Link {
        root: from.root.clone(),
        depth: from.depth + 1,
    };
    if next.depth > MAX_DEPTH {
        return Err(format!(
            "[MAG-TR004] trigger chain too deep: {MAX_DEPTH} runs were started one from \
             another after run {} (by triggers reacting to their events, or by \
             `workflow_start`); no more are started from it",
            next.root
        ));
    }
    let io = |e: StoreError| format!("could not record the run's trigger chain: {e}");
    let value = serde_json::to_vec(&next).map_err(|e| e.to_string())?;
    if catalog
        .insert_new(LINKS, key, &value)
        .map_err(io)?
        .is_some()
    {
        return Ok(());
    }
    loop {
        let now = catalog.get(COUNTS, &next.root).map_err(io)?;
        let runs = now
            .as_deref()
            .and_then(|b| std::str::from_utf8(b).ok()?.parse::<u64>().ok())
            .unwrap_or(0);
        if runs >= MAX_RUNS {
            // The link goes: a later delivery of the same event is refused the same way.
            let _ = catalog.delete(LINKS, &[key.to_owned()]);
            return Err(format!(
                "[MAG-TR004] trigger chain too large: {MAX_RUNS} runs were started from run {} \
                 and from the runs started from it (by triggers reacting to their events, or \
                 by `workflow_start`); no more are started from it",
                next.root
            ));
        }
        let counted = (runs + 1).to_string();
        if catalog
            .swap(COUNTS, &next.root, now.as_deref(), counted.as_bytes())
            .map_err(io)?
        {
            return Ok(());
        }
    }
}

/// The `StartRecord` of `run`: its journal's first record.
pub fn start_of(engine: &Engine, run: RunId) -> Option<StartRecord> {
    let first = engine
        .store()
        .read_journal_range(run, 0, 1, usize::MAX)
        .ok()?;
    let (_, bytes) = first.first()?;
    match magrathea_core::codec::decode(bytes).ok()? {
        (Record::Start(s), _) => Some(*s),
        _ => None,
    }
}

/// The most parents walked up to find a sub-run's chain (trees are far shallower).
const MAX_TREE_WALK: usize = 256;

/// The trigger chain of `run` (started as `start` says). A sub-run belongs to the chain of its
/// tree's root: a trigger reacting to a sub-run's events continues the chain of the run that
/// started the tree, so a loop through a `workflow_task` or a parallel branch is bounded too.
pub fn of_run(engine: &Engine, run: RunId, start: &StartRecord) -> Link {
    let (mut root, mut key) = (run, start.idempotency_key.clone());
    let mut parent = start.parent.as_ref().map(|p| p.run_id);
    for _ in 0..MAX_TREE_WALK {
        let Some(up) = parent else { break };
        let Some(s) = start_of(engine, up) else { break };
        (root, key, parent) = (up, s.idempotency_key, s.parent.map(|p| p.run_id));
    }
    let catalog = engine.catalog();
    of(
        catalog.as_ref().map(|c| c as &dyn Catalog),
        root,
        key.as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use magrathea_core::MemoryStore;

    fn catalog() -> std::sync::Arc<MemoryStore> {
        std::sync::Arc::new(MemoryStore::new())
    }

    #[test]
    fn a_chain_is_followed_by_its_keys_and_stops_at_its_depth() {
        let store = catalog();
        let first = RunId::new();
        let mut link = of(Some(&*store), first, Some("api-key"));
        assert_eq!(link.depth, 0);
        for depth in 1..=MAX_DEPTH {
            let key = format!("event:t:{depth}");
            extend(&*store, &link, &key).unwrap();
            link = of(Some(&*store), RunId::new(), Some(&key));
            assert_eq!(
                (link.root.as_str(), link.depth),
                (&*first.to_string(), depth)
            );
        }
        let refused = extend(&*store, &link, "event:t:last").unwrap_err();
        assert!(
            refused.starts_with("[MAG-TR004] trigger chain too deep"),
            "{refused}"
        );
    }

    #[test]
    fn a_chain_holds_at_most_max_runs_and_a_key_counts_once() {
        let store = catalog();
        let first = of(Some(&*store), RunId::new(), None);
        for n in 0..MAX_RUNS {
            extend(&*store, &first, &format!("hook:h:{n}")).unwrap();
        }
        // The same start again is the same run: not counted, not refused.
        extend(&*store, &first, "hook:h:0").unwrap();
        let refused = extend(&*store, &first, "hook:h:more").unwrap_err();
        assert!(
            refused.starts_with("[MAG-TR004] trigger chain too large"),
            "{refused}"
        );
        // Another chain is not affected.
        let other = of(Some(&*store), RunId::new(), None);
        extend(&*store, &other, "hook:h:other").unwrap();
    }
}
