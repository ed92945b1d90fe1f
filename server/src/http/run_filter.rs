//! The filters of `GET …/workflows/runs` beyond `workflow`: `status`, `startedBy`, `since`
//! and `until`. The stores index runs by scope and workflow only, so the server reads their
//! summaries newest first and keeps the matching ones, at most [`MAX_SCAN`] summaries per
//! request: when a page stops at that bound before `limit` runs matched, it still carries
//! a cursor (the last run looked at), and the next page goes on from there.
//!
//! `status` is one of the run statuses, in any case, or several separated by commas
//! (`status=FAILED,CANCELLED`: either); `since` and `until` are RFC 3339
//! instants (`2026-05-01T12:00:00Z`) or milliseconds since the epoch, compared with the run's
//! start time (`since` ≤ start < `until`); `startedBy` is compared with the run's journaled
//! starter exactly.

use magrathea_core::{Record, RunFilter, RunId, RunStatus, RunSummary};

use super::error::ApiError;
use super::state::AppState;

/// Most run summaries one filtered page reads.
pub(crate) const MAX_SCAN: usize = 10_000;

/// Summaries read from the store at a time.
const CHUNK: usize = 500;

/// The filters of a listing (`None`: not filtered by it).
#[derive(Debug, Default, Clone)]
pub(crate) struct Filters {
    /// The statuses a run may have (empty: any, unless `by_status`).
    pub(crate) statuses: Vec<RunStatus>,
    /// Whether `status=` was given: only Friday's `pending` leaves `statuses` empty then, and
    /// no run is pending here (a run runs from its start).
    pub(crate) by_status: bool,
    pub(crate) started_by: Option<String>,
    pub(crate) since: Option<u64>,
    pub(crate) until: Option<u64>,
}

const STATUSES: [RunStatus; 7] = [
    RunStatus::Running,
    RunStatus::Waiting,
    RunStatus::Paused,
    RunStatus::Done,
    RunStatus::Failed,
    RunStatus::Cancelled,
    RunStatus::Blocked,
];

impl Filters {
    /// The filters of the query's words; 400 for a status or time that is not one.
    pub(crate) fn parse(
        status: Option<&str>,
        started_by: Option<&str>,
        since: Option<&str>,
        until: Option<&str>,
    ) -> Result<Self, ApiError> {
        let mut statuses = Vec::new();
        let mut by_status = false;
        for word in nonempty(status).into_iter().flat_map(|s| s.split(',')) {
            let word = word.trim();
            by_status = true;
            // Friday's word for a run not yet started: none is, a run runs from its start.
            if word.eq_ignore_ascii_case("pending") {
                continue;
            }
            // Friday's word for a run that ended well (`FridayWorkflowRunStatus`).
            let named = if word.eq_ignore_ascii_case("completed") {
                "DONE"
            } else {
                word
            };
            let status = STATUSES
                .into_iter()
                .find(|s| s.as_str().eq_ignore_ascii_case(named))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "MAG-HTTP-UI-INVALID-STATUS",
                        format!(
                            "unknown status `{word}`: use one of RUNNING, WAITING, PAUSED, DONE \
                             (or completed), FAILED, CANCELLED, BLOCKED, or pending, which no run \
                             is (several separated by commas)"
                        ),
                    )
                })?;
            if !statuses.contains(&status) {
                statuses.push(status);
            }
        }
        Ok(Self {
            statuses,
            by_status,
            started_by: started_by.filter(|s| !s.is_empty()).map(str::to_owned),
            since: nonempty(since).map(|t| instant("since", t)).transpose()?,
            until: nonempty(until).map(|t| instant("until", t)).transpose()?,
        })
    }

    /// Whether any filter is set.
    pub(crate) fn any(&self) -> bool {
        self.by_status || self.started_by.is_some() || self.since.is_some() || self.until.is_some()
    }

    /// The query string of the filters (`&status=…`), for the next page's link.
    pub(crate) fn query(&self) -> String {
        let mut q = String::new();
        if self.by_status {
            let mut words: Vec<&str> = self.statuses.iter().map(|s| s.as_str()).collect();
            if words.is_empty() {
                words.push("pending");
            }
            q.push_str(&format!("&status={}", words.join(",")));
        }
        if let Some(s) = &self.started_by {
            q.push_str(&format!("&startedBy={}", encode(s)));
        }
        if let Some(t) = self.since {
            q.push_str(&format!("&since={t}"));
        }
        if let Some(t) = self.until {
            q.push_str(&format!("&until={t}"));
        }
        q
    }

    /// Whether a run now in `status` passes `status=`: a run listed by its summary may have
    /// moved on by the time its view is read, and is then left out of the page.
    pub(crate) fn status_matches(&self, status: RunStatus) -> bool {
        !self.by_status || self.statuses.contains(&status)
    }

    /// Whether `s` passes the filters that its summary answers.
    fn summary_matches(&self, s: &RunSummary) -> bool {
        (!self.by_status || self.statuses.contains(&s.status))
            && self.since.is_none_or(|t| s.created_ms >= t)
            && self.until.is_none_or(|t| s.created_ms < t)
    }
}

/// A query value that is not empty once trimmed.
fn nonempty(v: Option<&str>) -> Option<&str> {
    v.map(str::trim).filter(|v| !v.is_empty())
}

/// An instant of the query: RFC 3339 or milliseconds since the epoch.
fn instant(name: &str, text: &str) -> Result<u64, ApiError> {
    if let Ok(ms) = text.parse::<u64>() {
        return Ok(ms);
    }
    text.parse::<jiff::Timestamp>()
        .ok()
        .and_then(|t| u64::try_from(t.as_millisecond()).ok())
        .ok_or_else(|| {
            ApiError::bad_request(
                "MAG-HTTP-UI-INVALID-TIME",
                format!(
                    "`{name}={text}` is not a time: use RFC 3339 (2026-05-01T12:00:00Z) or \
                     milliseconds since the epoch"
                ),
            )
        })
}

/// Percent-encodes a query value (everything but unreserved characters).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A page of filtered runs and the cursor of the next one.
pub(crate) struct Page {
    pub(crate) runs: Vec<RunSummary>,
    pub(crate) next: Option<RunId>,
}

/// The newest runs of `base` (scope, workflow, cursor) that pass `filters`, at most `limit`,
/// reading at most [`MAX_SCAN`] summaries.
pub(crate) fn scan(
    state: &AppState,
    base: &RunFilter,
    filters: &Filters,
    limit: usize,
) -> Result<Page, ApiError> {
    scan_in(
        |f| state.engine.list_runs(f).map_err(ApiError::from),
        |s| started_by_matches(state, filters, s),
        base,
        filters,
        limit,
        MAX_SCAN,
    )
}

/// [`scan`] over any listing (`list`), reading at most `max_scan` summaries; `started_by`
/// answers the filter that needs the run's journal.
fn scan_in(
    list: impl Fn(&RunFilter) -> Result<Vec<RunSummary>, ApiError>,
    started_by: impl Fn(&RunSummary) -> Result<bool, ApiError>,
    base: &RunFilter,
    filters: &Filters,
    limit: usize,
    max_scan: usize,
) -> Result<Page, ApiError> {
    let mut runs = Vec::new();
    let mut before = base.before;
    let mut scanned = 0;
    loop {
        let chunk = CHUNK.min(max_scan - scanned);
        if chunk == 0 {
            // The bound: go on from the last run looked at.
            return Ok(Page { runs, next: before });
        }
        let filter = RunFilter {
            workflow: base.workflow.clone(),
            scope: base.scope.clone(),
            scope_prefix: base.scope_prefix.clone(),
            before,
            limit: chunk,
        };
        let page = list(&filter)?;
        let exhausted = page.len() < chunk;
        for s in page {
            scanned += 1;
            before = Some(s.run_id);
            if !filters.summary_matches(&s) || !started_by(&s)? {
                continue;
            }
            if runs.len() == limit {
                // One more match: there is a next page, starting after the last one shown.
                let next = runs.last().map(|r: &RunSummary| r.run_id);
                return Ok(Page { runs, next });
            }
            runs.push(s);
        }
        if exhausted {
            return Ok(Page { runs, next: None });
        }
    }
}

/// Whether the run's journaled starter is the filter's (true without the filter).
fn started_by_matches(
    state: &AppState,
    filters: &Filters,
    s: &RunSummary,
) -> Result<bool, ApiError> {
    let Some(wanted) = &filters.started_by else {
        return Ok(true);
    };
    let first = state
        .engine
        .store()
        .read_journal_range(s.run_id, 0, 1, usize::MAX)
        .map_err(ApiError::internal)?;
    Ok(first.first().is_some_and(|(_, bytes)| {
        matches!(
            magrathea_core::codec::decode(bytes),
            Ok((Record::Start(start), _)) if &start.started_by == wanted
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use magrathea_core::{Frontend, RunScope};

    /// `n` runs, newest first, every third one DONE, created one ms apart.
    fn runs(n: u128) -> Vec<RunSummary> {
        (1..=n)
            .rev()
            .map(|i| RunSummary {
                run_id: RunId::from_u128(i),
                workflow_name: "w".into(),
                frontend: Frontend::from("yaml"),
                status: if i % 3 == 0 {
                    RunStatus::Done
                } else {
                    RunStatus::Failed
                },
                created_ms: i as u64,
                updated_ms: i as u64,
                parent: None,
                scope: RunScope::from("a/b"),
            })
            .collect()
    }

    fn lister(all: Vec<RunSummary>) -> impl Fn(&RunFilter) -> Result<Vec<RunSummary>, ApiError> {
        move |f| {
            Ok(all
                .iter()
                .filter(|s| f.before.is_none_or(|b| s.run_id < b))
                .take(f.limit)
                .cloned()
                .collect())
        }
    }

    fn done() -> Filters {
        Filters::parse(Some("done"), None, None, None).unwrap()
    }

    #[test]
    fn a_scan_stops_at_its_bound_and_names_where_to_go_on() {
        let list = lister(runs(3000));
        let base = RunFilter::default();
        // 1200 summaries read hold 400 DONE runs: fewer than the limit, and a cursor.
        let page = scan_in(&list, |_| Ok(true), &base, &done(), 1000, 1200).unwrap();
        assert_eq!(page.runs.len(), 400);
        assert!(page.runs.iter().all(|r| r.status == RunStatus::Done));
        assert_eq!(page.next, Some(RunId::from_u128(3000 - 1199)));
        // Going on from the cursor finds the rest, and the last page has no cursor.
        let mut seen = page.runs.len();
        let mut next = page.next;
        while let Some(before) = next {
            let base = RunFilter {
                before: Some(before),
                ..RunFilter::default()
            };
            let page = scan_in(&list, |_| Ok(true), &base, &done(), 1000, 1200).unwrap();
            seen += page.runs.len();
            next = page.next;
        }
        assert_eq!(seen, 1000, "every DONE run once");
    }

    #[test]
    fn a_full_page_names_the_next_only_when_another_match_exists() {
        let list = lister(runs(9));
        let base = RunFilter::default();
        let page = scan_in(&list, |_| Ok(true), &base, &done(), 2, MAX_SCAN).unwrap();
        let ids: Vec<u128> = page.runs.iter().map(|r| r.run_id.as_u128()).collect();
        assert_eq!(ids, [9, 6]);
        assert_eq!(page.next, Some(RunId::from_u128(6)));
        let page = scan_in(&list, |_| Ok(true), &base, &done(), 3, MAX_SCAN).unwrap();
        assert_eq!(page.runs.len(), 3);
        assert_eq!(page.next, None, "no fourth DONE run");
    }

    #[test]
    fn statuses_and_times_parse_or_are_refused() {
        let f = Filters::parse(
            Some("Waiting"),
            None,
            Some("1000"),
            Some("2026-05-01T12:00:00Z"),
        )
        .unwrap();
        assert_eq!(f.statuses, [RunStatus::Waiting]);
        let either = Filters::parse(Some("failed, CANCELLED,failed"), None, None, None).unwrap();
        assert_eq!(either.statuses, [RunStatus::Failed, RunStatus::Cancelled]);
        assert_eq!(either.query(), "&status=FAILED,CANCELLED");
        assert_eq!(f.since, Some(1000));
        assert_eq!(f.until, Some(1_777_636_800_000));
        let friday = Filters::parse(Some("completed,running"), None, None, None).unwrap();
        assert_eq!(friday.statuses, [RunStatus::Done, RunStatus::Running]);
        // Friday's `pending`: a filter that no run passes (a run runs from its start).
        let pending = Filters::parse(Some("pending"), None, None, None).unwrap();
        assert!(pending.any() && pending.statuses.is_empty());
        assert_eq!(pending.query(), "&status=pending");
        let either = Filters::parse(Some("pending,failed"), None, None, None).unwrap();
        assert_eq!(either.statuses, [RunStatus::Failed]);
        let e = Filters::parse(Some("asleep"), None, None, None).unwrap_err();
        assert_eq!(e.code, "MAG-HTTP-UI-INVALID-STATUS");
        let e = Filters::parse(None, None, Some("yesterday"), None).unwrap_err();
        assert_eq!(e.code, "MAG-HTTP-UI-INVALID-TIME");
        assert!(
            !Filters::parse(Some(""), Some(""), None, None)
                .unwrap()
                .any()
        );
    }
}
