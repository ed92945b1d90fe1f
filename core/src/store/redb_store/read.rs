//! Reading the store: a run's records, summaries and idempotency keys from the two places they
//! live (redb's tables and the unfolded set).

use std::collections::BTreeMap;
use std::sync::PoisonError;

use redb::{ReadableDatabase, ReadableTable};

use super::fold::{Gen, RunRecords};
use super::{ACTIVE, ACTIVE_BY_SCOPE, CHUNKS, JOURNAL, RUNS, RedbStore, chunk, io};
use crate::error::StoreError;
use crate::id::RunId;
use crate::store::{PageBound, RunFilter, RunSummary, prefix_end, summary_matches};

impl RedbStore {
    /// The records `bound` admits of a run's records from `from_seq` on, in seq order, each passed
    /// through `each` as `(seq, bytes)`: range scans of `journal` and `journal_chunks`, then
    /// the unfolded records past what the scans found. Only the slice asked for is copied.
    pub(super) fn read_run<T>(
        &self,
        run_id: RunId,
        from_seq: u64,
        bound: PageBound,
        mut each: impl FnMut(u64, &[u8]) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        if bound.is_empty() {
            return Ok(Vec::new());
        }
        let id = run_id.as_u128();
        // Unfolded records first, then the table: a fold that commits in between moves
        // records from the first place to the second, so this order never misses one.
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        let mut recent: RunRecords = Vec::new();
        // At most what the bound would admit of these alone: the page takes no more of them.
        let mut room = bound;
        // The folding generation holds a run's earlier records, the current one its later.
        for generation in unfolded
            .folding
            .as_deref()
            .into_iter()
            .chain([&unfolded.current])
        {
            if let Some(records) = generation.runs.get(&id) {
                let first = records.partition_point(|(seq, _)| *seq < from_seq);
                // Sized once: the filter below hides the count from `extend`, which would
                // grow the vector by doubling.
                recent.reserve(records.len() - first);
                recent.extend(
                    records[first..]
                        .iter()
                        .take_while(|(_, bytes)| room.admits(bytes.len()))
                        .cloned(),
                );
            }
        }
        drop(unfolded);
        self.with_db(|db| Self::read_run_in(db, id, from_seq, bound, recent, &mut each))
    }

    fn read_run_in<T>(
        db: &redb::Database,
        id: u128,
        from_seq: u64,
        mut bound: PageBound,
        recent: RunRecords,
        each: &mut impl FnMut(u64, &[u8]) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let tx = db.begin_read().map_err(io)?;
        let rows = tx.open_table(JOURNAL).map_err(io)?;
        let chunks = tx.open_table(CHUNKS).map_err(io)?;
        let rows_range = || rows.range((id, from_seq)..=(id, u64::MAX)).map_err(io);
        // The chunk holding `from_seq` starts at or before it; the others after it.
        let first_chunk = chunks
            .range((id, 0)..=(id, from_seq))
            .map_err(io)?
            .next_back()
            .transpose()
            .map_err(io)?
            .map_or(from_seq, |(k, _)| k.value().1);
        let chunk_range = || chunks.range((id, first_chunk)..=(id, u64::MAX)).map_err(io);
        // Seqs are dense from 0: the last folded one sizes the result (records are large
        // enough that growing a vector of ten thousand of them shows in replay times). A hint
        // only, capped so that a corrupt seq cannot ask for a huge allocation.
        let last_row = rows_range()?.next_back().transpose().map_err(io)?;
        let last_chunk = chunk_range()?.next_back().transpose().map_err(io)?;
        let folded_from = |last: Option<u64>| last.map_or(0, |l| l.saturating_sub(from_seq) + 1);
        let records = |folded: u64| {
            usize::try_from(folded)
                .unwrap_or(usize::MAX)
                .saturating_add(recent.len())
        };
        // A chunk's key is its first record's seq; its last one is read from its headers
        // (seq and length of each record, nothing decoded) when the page wants more records
        // than the first seq gives.
        let mut last_folded = [
            last_row.as_ref().map(|(k, _)| k.value().1),
            last_chunk.as_ref().map(|(k, _)| k.value().1),
        ]
        .into_iter()
        .flatten()
        .max();
        if let Some((_, v)) = &last_chunk
            && records(folded_from(last_folded)) < bound.records_left()
            && let Some(seq) = chunk::decode(v.value())
                .map_while(Result::ok)
                .map(|(seq, _)| seq)
                .last()
        {
            last_folded = last_folded.max(Some(seq));
        }
        let capacity = records(folded_from(last_folded))
            .min(bound.records_left())
            .min(1 << 20);
        let mut out = Vec::with_capacity(capacity);
        let mut folded_up_to: Option<u64> = None;
        // Rows (folded by older versions) hold a run's earliest records, chunks the later ones.
        for row in rows_range()? {
            let (k, v) = row.map_err(io)?;
            if !bound.admits(v.value().len()) {
                return Ok(out);
            }
            let seq = k.value().1;
            out.push(each(seq, v.value())?);
            folded_up_to = Some(seq);
        }
        for row in chunk_range()? {
            let (_, v) = row.map_err(io)?;
            for record in chunk::decode(v.value()) {
                let (seq, bytes) = record?;
                if seq < from_seq || folded_up_to.is_some_and(|last| seq <= last) {
                    continue;
                }
                if !bound.admits(bytes.len()) {
                    return Ok(out);
                }
                out.push(each(seq, bytes)?);
                folded_up_to = Some(seq);
            }
        }
        // A run's records are folded in seq order, so the folded ones are a prefix; a record
        // folded since `recent` was taken is in both places and kept once.
        for (seq, bytes) in recent {
            if folded_up_to.is_some_and(|last| seq <= last) {
                continue;
            }
            if !bound.admits(bytes.len()) {
                break;
            }
            out.push(each(seq, &bytes)?);
        }
        Ok(out)
    }
}

impl RedbStore {
    /// The run's summary if it changed since the last fold.
    pub(super) fn unfolded_summary(&self, run_id: RunId) -> Option<RunSummary> {
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        newest_first(&unfolded).find_map(|g| g.summaries.get(&run_id.as_u128()).cloned())
    }

    /// The run an idempotency key started, if it was committed since the last fold.
    pub(super) fn unfolded_key(&self, key: &str) -> Option<RunId> {
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        newest_first(&unfolded)
            .find_map(|g| g.keys.get(key).copied())
            .map(RunId::from_u128)
    }

    /// The summaries changed since the last fold that `filter` selects (ignoring its limit),
    /// newest first. Taken before the tables are read, like a run's unfolded records.
    pub(super) fn unfolded_summaries(&self, filter: &RunFilter) -> Vec<RunSummary> {
        let unfolded = self.unfolded.read().unwrap_or_else(PoisonError::into_inner);
        let upper = filter.before.map_or(u128::MAX, |b| b.as_u128());
        let mut newest: std::collections::BTreeMap<u128, &RunSummary> = Default::default();
        // Oldest generation first, so that the current one's summaries replace its.
        for generation in unfolded
            .folding
            .as_deref()
            .into_iter()
            .chain([&unfolded.current])
        {
            for (id, s) in generation.summaries.range(..=upper) {
                if (filter.before.is_none() || *id < upper) && summary_matches(s, filter) {
                    newest.insert(*id, s);
                }
            }
        }
        newest.into_values().rev().cloned().collect()
    }
}

/// The unfolded generations, the current one first.
fn newest_first(unfolded: &super::Unfolded) -> impl Iterator<Item = &Gen> {
    std::iter::once(&unfolded.current).chain(unfolded.folding.as_deref())
}

pub(super) fn decode_summary(bytes: &[u8]) -> Result<RunSummary, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::CorruptIndex(format!("a run summary of the run index: {e}")))
}

/// The runs `filter` selects, newest first: the `runs` table's, with `recent` (the unfolded
/// summaries the filter selects, newest first) in place of the table's older copies.
pub(super) fn list_runs_in(
    db: &redb::Database,
    filter: &RunFilter,
    recent: Vec<RunSummary>,
) -> Result<Vec<RunSummary>, StoreError> {
    let folded = list_folded(db, filter)?;
    if recent.is_empty() {
        return Ok(folded);
    }
    // A summary's workflow and scope never change, so a run the filter selects in one place is
    // selected in the other; the newest `limit` of the union are among these two lists.
    let mut merged: std::collections::BTreeMap<u128, RunSummary> = folded
        .into_iter()
        .map(|s| (s.run_id.as_u128(), s))
        .collect();
    for s in recent {
        merged.insert(s.run_id.as_u128(), s);
    }
    let limit = if filter.limit == 0 {
        usize::MAX
    } else {
        filter.limit
    };
    Ok(merged.into_values().rev().take(limit).collect())
}

fn list_folded(db: &redb::Database, filter: &RunFilter) -> Result<Vec<RunSummary>, StoreError> {
    let tx = db.begin_read().map_err(io)?;
    let table = tx.open_table(RUNS).map_err(io)?;
    let upper = filter.before.map_or(u128::MAX, |b| b.as_u128());
    let limit = if filter.limit == 0 {
        usize::MAX
    } else {
        filter.limit
    };
    let mut out = Vec::new();
    for row in table.range(..upper).map_err(io)?.rev() {
        let (_, v) = row.map_err(io)?;
        let s = decode_summary(v.value())?;
        if summary_matches(&s, filter) {
            out.push(s);
            if out.len() >= limit {
                break;
            }
        }
    }
    if filter.before.is_none() && out.len() < limit {
        // `..u128::MAX` excludes the largest possible id; include it for completeness.
        if let Some(v) = table.get(u128::MAX).map_err(io)? {
            let s = decode_summary(v.value())?;
            if summary_matches(&s, filter) {
                out.insert(0, s);
            }
        }
    }
    Ok(out)
}

/// The folded active runs `filter` selects, by run id: through `active_runs_by_scope` when it
/// names a scope or a scope prefix, so that the other scopes' runs are not read at all.
pub(super) fn active_in(
    db: &redb::Database,
    filter: &RunFilter,
) -> Result<BTreeMap<u128, RunSummary>, StoreError> {
    let tx = db.begin_read().map_err(io)?;
    let runs = tx.open_table(RUNS).map_err(io)?;
    let mut ids = Vec::new();
    let prefix = filter.scope_prefix.as_deref().filter(|p| !p.is_empty());
    let by_scope = tx.open_table(ACTIVE_BY_SCOPE).map_err(io)?;
    let rows = match (filter.scope.as_deref(), prefix) {
        (Some(scope), _) => Some(by_scope.range((scope, 0)..=(scope, u128::MAX))),
        (None, Some(p)) => Some(match prefix_end(p) {
            Some(end) => by_scope.range((p, 0)..(end.as_str(), 0)),
            None => by_scope.range((p, 0)..),
        }),
        (None, None) => None,
    };
    if let Some(rows) = rows {
        for row in rows.map_err(io)? {
            ids.push(row.map_err(io)?.0.value().1);
        }
    } else {
        let active = tx.open_table(ACTIVE).map_err(io)?;
        for row in active.iter().map_err(io)? {
            ids.push(row.map_err(io)?.0.value());
        }
    }
    let mut found = BTreeMap::new();
    for id in ids {
        if let Some(v) = runs.get(id).map_err(io)? {
            let s = decode_summary(v.value())?;
            if summary_matches(&s, filter) {
                found.insert(id, s);
            }
        }
    }
    Ok(found)
}
