//! The inbox, folded from the journals: listing the items gates opened (whole, or a page at a
//! time) and reading one item by id.
//!
//! Items have no index of their own; each listing reads the journals of the runs it selects.
//! It reads only runs that can hold what it asks for (a listing of pending items skips the
//! runs whose status says no gate is open), one journal at a time. A page
//! ([`Engine::inbox_page`]) keeps only the keys of its items while it reads, then builds them
//! from their runs' journals up to a byte budget, so neither the items a tenant has piled up
//! nor the size of their bodies decide how much memory a request takes.

use std::collections::{BinaryHeap, HashMap, HashSet};

use crate::error::{DeliverError, StoreError};
use crate::record::RunStatus;
use crate::store::{RunFilter, RunSummary};
use crate::view::{InboxItem, InboxStatus, inbox_items, parse_inbox_item_id};

use super::{Engine, InboxFilter};

/// What [`Engine::inbox_page`] lists.
#[derive(Debug, Clone)]
pub struct InboxPageRequest {
    /// Which runs' items, and whether only pending ones.
    pub filter: InboxFilter,
    /// The runs to read, by workflow, scope and scope prefix.
    pub runs: RunFilter,
    /// The id of the last item of the previous page, if this is not the first.
    pub after: Option<String>,
    /// Most items in the page (at least one is asked for).
    pub limit: usize,
    /// Most bytes of the page's items encoded as JSON. A page holds at least one item
    /// whatever its size; it ends before the item that would pass the budget.
    pub max_bytes: usize,
}

/// A page of inbox items, oldest first.
#[derive(Debug, Clone)]
pub struct InboxPage {
    /// The items.
    pub items: Vec<InboxItem>,
    /// The `after` of the next page; `None` on the last.
    pub next: Option<String>,
}

/// Why [`Engine::inbox_page`] listed nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InboxPageError {
    /// `after` names no item the request may see.
    #[error("unknown cursor `{0}`")]
    UnknownCursor(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The order of a listing: opened at, then id.
type ItemKey = (u64, String);

impl Engine {
    /// Inbox items of non-terminal runs, oldest first, as `filter` says.
    pub fn inbox(&self, filter: InboxFilter) -> Result<Vec<InboxItem>, StoreError> {
        self.inbox_of(filter, &RunFilter::default(), |_| true)
    }

    /// [`Engine::inbox`] of the runs `runs` selects by workflow, scope and scope prefix (a
    /// project's scope, or a tenant's prefix) whose summary also satisfies `keep`: the
    /// journals of the other runs are not read, and a store with an index by scope does not
    /// read their summaries either. [`InboxFilter::Recent`] counts the finished runs of the
    /// selection only.
    ///
    /// It holds every item it finds; a listing for someone else (a request) wants
    /// [`Engine::inbox_page`].
    pub fn inbox_of(
        &self,
        filter: InboxFilter,
        runs: &RunFilter,
        keep: impl Fn(&RunSummary) -> bool,
    ) -> Result<Vec<InboxItem>, StoreError> {
        let mut items = Vec::new();
        for summary in self.inbox_runs(filter, runs)? {
            if !keep(&summary) {
                continue;
            }
            if let Some(found) = self.items_of(&summary) {
                items.extend(found.into_iter().filter(|i| wanted(filter, i)));
            }
        }
        items.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(items)
    }

    /// A page of [`Engine::inbox_of`]: the items after `request.after` whose run satisfies
    /// `keep_run` and that satisfy `keep_item`, oldest first, at most `request.limit` of them
    /// and `request.max_bytes` of JSON.
    ///
    /// It holds one journal and the keys of one page while it reads, then the page. An item
    /// that stops satisfying `keep_item` between the two reads (answered meanwhile, say) is
    /// left out of the page. `after` may name an item that no longer satisfies `keep_item`
    /// (the last of a page of pending items, answered since): the page goes on from where
    /// it was.
    pub fn inbox_page(
        &self,
        request: &InboxPageRequest,
        keep_run: impl Fn(&RunSummary) -> bool,
        keep_item: impl Fn(&InboxItem) -> bool,
    ) -> Result<InboxPage, InboxPageError> {
        let after = match &request.after {
            Some(id) => Some(self.cursor_key(id, &keep_run)?),
            None => None,
        };
        let limit = request.limit.max(1);
        let summaries = self.inbox_runs(request.filter, &request.runs)?;
        // The `limit + 1` smallest keys after the cursor: one more than the page tells
        // whether another page follows.
        let mut smallest: BinaryHeap<(ItemKey, usize)> = BinaryHeap::new();
        for (at, summary) in summaries.iter().enumerate() {
            if !keep_run(summary) {
                continue;
            }
            for item in self.items_of(summary).into_iter().flatten() {
                if !wanted(request.filter, &item) || !keep_item(&item) {
                    continue;
                }
                let key = (item.created_at, item.id);
                if after.as_ref().is_some_and(|a| key <= *a) {
                    continue;
                }
                if smallest.len() <= limit {
                    smallest.push((key, at));
                } else if smallest.peek().is_some_and(|(largest, _)| key < *largest) {
                    smallest.pop();
                    smallest.push((key, at));
                }
            }
        }
        let more = smallest.len() > limit;
        let mut keys = smallest.into_sorted_vec();
        keys.truncate(limit);

        // Only the page's items of each run are kept from its journal.
        let in_page: HashSet<String> = keys.iter().map(|((_, id), _)| id.clone()).collect();
        let mut built: HashMap<String, InboxItem> = HashMap::new();
        let mut read = vec![false; summaries.len()];
        let mut items = Vec::new();
        let mut bytes = 0usize;
        let mut last = None;
        let mut cut = false;
        for ((_, id), at) in keys {
            if !read[at] {
                read[at] = true;
                let summary = &summaries[at];
                built.extend(
                    self.items_of(summary)
                        .into_iter()
                        .flatten()
                        .filter(|item| in_page.contains(&item.id))
                        .map(|item| (item.id.clone(), item)),
                );
            }
            if let Some(item) = built.remove(&id)
                && wanted(request.filter, &item)
                && keep_item(&item)
            {
                let size = crate::json_len::json_len(&item);
                if !items.is_empty() && bytes.saturating_add(size) > request.max_bytes {
                    cut = true;
                    break;
                }
                bytes = bytes.saturating_add(size);
                items.push(item);
            }
            last = Some(id);
        }
        Ok(InboxPage {
            items,
            next: if cut || more { last } else { None },
        })
    }

    /// One inbox item, pending or not.
    pub fn inbox_item(&self, id: &str) -> Result<InboxItem, DeliverError> {
        self.inbox_item_of(id, |_| true)
    }

    /// [`Engine::inbox_item`] when its run's summary satisfies `keep` (the caller's scope,
    /// say), and [`DeliverError::ItemNotFound`] otherwise: the run's journal is read only
    /// after the check.
    pub fn inbox_item_of(
        &self,
        id: &str,
        keep: impl Fn(&RunSummary) -> bool,
    ) -> Result<InboxItem, DeliverError> {
        let (run, _) =
            parse_inbox_item_id(id).ok_or_else(|| DeliverError::ItemNotFound(id.into()))?;
        let summary = self
            .inner
            .store
            .run_summary(run)?
            .filter(|s| keep(s))
            .ok_or_else(|| DeliverError::ItemNotFound(id.into()))?;
        let entries = self.inner.store.read_journal(run)?;
        inbox_items(&entries, &summary)
            .into_iter()
            .find(|i| i.id == id)
            .ok_or_else(|| DeliverError::ItemNotFound(id.into()))
    }

    /// The summaries of the runs whose items `filter` lists, among those `runs` selects.
    fn inbox_runs(
        &self,
        filter: InboxFilter,
        runs: &RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError> {
        let selection = RunFilter {
            before: None,
            limit: 0,
            ..runs.clone()
        };
        let mut summaries = self.inner.store.active_summaries(&selection)?;
        match filter {
            // A run's status is `RUNNING` only while it has no gate open (`WAITING` while it
            // has, `PAUSED` or `BLOCKED` whatever it has), and it is journaled in the commit
            // that opens or closes one. A `BLOCKED` run takes no answer until fixed code
            // unblocks it: its gates are not pending for anyone meanwhile.
            InboxFilter::Pending => {
                summaries.retain(|s| !matches!(s.status, RunStatus::Running | RunStatus::Blocked));
            }
            InboxFilter::All => {}
            InboxFilter::Recent(n) => {
                summaries.extend(self.recent_finished(n, selection)?);
                // A run that ended between the two reads is in both.
                summaries.sort_by_key(|s| s.run_id);
                summaries.dedup_by_key(|s| s.run_id);
            }
        }
        Ok(summaries)
    }

    /// The `n` most recently started runs `selection` selects that have ended, newest first:
    /// runs that have not ended do not count (a thousand runs waiting on timers hide no
    /// answered item). The store's runs are read newest first, a page at a time, until `n` are
    /// found or none are left.
    fn recent_finished(
        &self,
        n: usize,
        selection: RunFilter,
    ) -> Result<Vec<RunSummary>, StoreError> {
        const PAGE: usize = 1_000;
        let mut found = Vec::new();
        let mut before = None;
        while found.len() < n {
            let page = self.inner.store.list_runs(&RunFilter {
                before,
                limit: PAGE,
                ..selection.clone()
            })?;
            let Some(last) = page.last().map(|s| s.run_id) else {
                break;
            };
            let full = page.len() == PAGE;
            found.extend(page.into_iter().filter(|s| s.status.is_terminal()));
            if !full {
                break;
            }
            before = Some(last);
        }
        found.truncate(n);
        Ok(found)
    }

    /// The items of the run, or `None` (with a warning) if its journal cannot be read: one
    /// unreadable run must not hide every other run's items.
    fn items_of(&self, summary: &RunSummary) -> Option<Vec<InboxItem>> {
        let run = summary.run_id;
        match self.inner.store.read_journal(run) {
            Ok(entries) => Some(inbox_items(&entries, summary)),
            Err(e) => {
                tracing::warn!(%run, error = %e, "inbox: skipping a run whose journal cannot be read");
                None
            }
        }
    }

    /// Where the page after item `id` starts: the item's key, if its run satisfies `keep`.
    fn cursor_key(
        &self,
        id: &str,
        keep: impl Fn(&RunSummary) -> bool,
    ) -> Result<ItemKey, InboxPageError> {
        match self.inbox_item_of(id, keep) {
            Ok(item) => Ok((item.created_at, item.id)),
            Err(DeliverError::Store(e)) => Err(InboxPageError::Store(e)),
            Err(_) => Err(InboxPageError::UnknownCursor(id.to_owned())),
        }
    }
}

/// Whether `filter` lists `item` (pending listings list pending items only).
fn wanted(filter: InboxFilter, item: &InboxItem) -> bool {
    filter != InboxFilter::Pending || item.status == InboxStatus::Pending
}
