//! The inbox over REST: the items gates open, and answering them.
//!
//! Items are scoped like runs: an item of a run of another tenant or project is 404.
//!
//! Answering needs `workflow.run`; the run in the reply is shown whole only to a token that
//! also has `workflow.read` (else its [`RunBrief`](super::visible::RunBrief): id, workflow,
//! status, current state).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use magrathea_core::{
    AnswerAck, DeliverError, GateAnswer, InboxItem, InboxPageError, InboxPageRequest, InboxStatus,
    RunFilter,
};
use serde::{Deserialize, Serialize};

use super::auth::{ApiScope, Principal};
use super::body::JsonBody;
use super::error::ApiError;
use super::state::AppState;

/// How many of the most recently started finished runs a listing of answered, expired or
/// closed items reads (besides every run still going).
pub const FINISHED_RUNS_LISTED: usize = 1000;

/// `{tenant}` and `{project}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ProjectPath {
    tenant: String,
    project: String,
}

/// An item of a project.
#[derive(Debug, Deserialize)]
pub(crate) struct ItemPath {
    tenant: String,
    project: String,
    item_id: String,
}

/// Query of `GET …/inbox`.
#[derive(Debug, Deserialize)]
pub(crate) struct InboxQuery {
    assignee: Option<String>,
    /// `pending` (default), `answered`, `timed_out`, `closed` or `all`.
    status: Option<String>,
    /// Page size (default and most [`MAX_ITEMS`]).
    limit: Option<super::error::QueryLimit>,
    /// The `X-Next-Cursor` of the previous page.
    cursor: Option<String>,
}

/// Most items in a page of a listing (and its default size).
pub const MAX_ITEMS: usize = 1000;

/// Most bytes of JSON in a page of a listing: a page ends before the item that would pass
/// them, and names the next page; a page holds at least one item whatever its size.
pub const MAX_PAGE_BYTES: usize = 8 << 20;

/// The inbox status `?status=` asks for (`None`: every status).
pub(crate) fn parse_status(status: Option<&str>) -> Result<Option<InboxStatus>, ApiError> {
    match status.unwrap_or("pending").to_ascii_lowercase().as_str() {
        "pending" => Ok(Some(InboxStatus::Pending)),
        "answered" => Ok(Some(InboxStatus::Answered)),
        "timed_out" | "timedout" => Ok(Some(InboxStatus::TimedOut)),
        "closed" => Ok(Some(InboxStatus::Closed)),
        "all" => Ok(None),
        other => Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-STATUS",
            format!(
                "unknown status `{other}`: pending, answered, timed_out, closed or all (on \
                 /v1/workflow-approvals also approved, rejected, expired or cancelled)"
            ),
        )),
    }
}

/// What a listing of items asks for.
pub(crate) struct Listing {
    /// The runs to read.
    pub(crate) runs: RunFilter,
    /// The inbox status (`None`: every status).
    pub(crate) status: Option<InboxStatus>,
    /// `?assignee=`.
    pub(crate) assignee: Option<String>,
    /// `?limit=`.
    pub(crate) limit: Option<super::error::QueryLimit>,
    /// `?cursor=`.
    pub(crate) cursor: Option<String>,
}

/// A page of the items of the runs `listing.runs` selects whose scope satisfies `keep`,
/// filtered by status and assignee and by `also`, with the scope of each item's run; and the
/// cursor of the next page. Answered, expired and closed items are those of runs still going
/// and of the [`FINISHED_RUNS_LISTED`] most recently started finished ones.
pub(crate) async fn page(
    state: &AppState,
    listing: Listing,
    keep: impl Fn(&str) -> bool + Send + 'static,
    also: impl Fn(&InboxItem) -> bool + Send + 'static,
) -> Result<(Vec<(String, InboxItem)>, Option<String>), ApiError> {
    let request = InboxPageRequest {
        filter: if listing.status == Some(InboxStatus::Pending) {
            magrathea_core::InboxFilter::Pending
        } else {
            magrathea_core::InboxFilter::Recent(FINISHED_RUNS_LISTED)
        },
        runs: listing.runs,
        after: listing.cursor.filter(|c| !c.is_empty()),
        limit: super::error::page_limit(listing.limit.as_ref(), MAX_ITEMS)?,
        max_bytes: MAX_PAGE_BYTES,
    };
    let (status, assignee) = (listing.status, listing.assignee);
    let engine = state.engine.clone();
    // The runs' journals are read whole: within the tenant's share of such reads, and given
    // up when the client goes (the journal being read is finished, no other is begun).
    let tenant = request
        .runs
        .scope
        .as_deref()
        .or(request.runs.scope_prefix.as_deref())
        .and_then(|s| s.split('/').next())
        .unwrap_or_default()
        .to_owned();
    let _permit = state.journal_reads.acquire(&tenant).await;
    let gone = Arc::new(AtomicBool::new(false));
    let _gone_when_dropped = GoneWhenDropped(Arc::clone(&gone));
    // Journals are read from the disk: off the runtime's threads.
    tokio::task::spawn_blocking(move || {
        // Only the runs of the selection are read (on a store with an index by scope, not
        // even the summaries of the others); `keep` checks each once more. The scopes of the
        // runs kept are noted on the way.
        let scopes = RefCell::new(HashMap::new());
        let page = engine.inbox_page(
            &request,
            |summary| {
                if gone.load(Ordering::Relaxed) {
                    return false;
                }
                let kept = keep(summary.scope.as_str());
                if kept {
                    scopes
                        .borrow_mut()
                        .insert(summary.run_id, summary.scope.as_str().to_owned());
                }
                kept
            },
            |item| {
                status.is_none_or(|s| s == item.status)
                    && assignee.as_ref().is_none_or(|a| *a == item.assigned_to)
                    && also(item)
            },
        );
        let page = match page {
            Ok(page) => page,
            Err(InboxPageError::UnknownCursor(cursor)) => {
                return Err(ApiError::bad_request(
                    "MAG-HTTP-INVALID-CURSOR",
                    format!(
                        "unknown cursor `{cursor}`: pass the X-Next-Cursor of the previous page"
                    ),
                ));
            }
            Err(e) => return Err(ApiError::internal(e)),
        };
        let scopes = scopes.into_inner();
        let items = page
            .items
            .into_iter()
            .filter_map(|item| Some((scopes.get(&item.workflow_run_id)?.clone(), item)))
            .collect();
        Ok((items, page.next))
    })
    .await
    .map_err(ApiError::internal)?
}

/// Says, when dropped, that the request it belongs to is gone: a listing read off the
/// runtime's threads stops reading journals for a client that left.
struct GoneWhenDropped(Arc<AtomicBool>);

impl Drop for GoneWhenDropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// `body` as JSON, with the `X-Next-Cursor` header when `next` names a next page.
pub(crate) fn paged(body: impl Serialize, next: Option<String>) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut response = Json(body).into_response();
    if let Some(next) = next
        && let Ok(value) = axum::http::HeaderValue::from_str(&next)
    {
        response
            .headers_mut()
            .insert(super::runs::NEXT_CURSOR_HEADER, value);
    }
    response
}

/// `GET /brain/{tenant}/project/{project}/inbox?assignee=&status=&limit=&cursor=` → the
/// project's items, oldest first (pending ones by default), a page at a time: at most `limit`
/// (default and most [`MAX_ITEMS`]) and [`MAX_PAGE_BYTES`]; the `X-Next-Cursor` header, absent
/// on the last page, is the `cursor` of the next.
pub(crate) async fn list(
    State(state): State<AppState>,
    Path(p): Path<ProjectPath>,
    Query(q): Query<InboxQuery>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let key = state.scope(&p.tenant, &p.project)?.key();
    let listing = Listing {
        runs: RunFilter {
            scope: Some(key.clone()),
            ..RunFilter::default()
        },
        status: parse_status(q.status.as_deref())?,
        assignee: q.assignee,
        limit: q.limit,
        cursor: q.cursor,
    };
    let (items, next) = page(&state, listing, move |s| s == key, |_| true).await?;
    let items: Vec<InboxItem> = items.into_iter().map(|(_, i)| i).collect();
    Ok(paged(items, next))
}

/// The item `id` if its run's scope satisfies `keep`; 404 otherwise.
pub(crate) async fn scoped_item(
    state: &AppState,
    tenant: &str,
    id: &str,
    keep: impl Fn(&str) -> bool + Send + 'static,
) -> Result<InboxItem, ApiError> {
    let not_found = || ApiError::not_found(format!("inbox item `{id}` not found"));
    // The scope is checked before the run's journal is read; the read is one of `tenant`'s
    // whole-journal reads.
    let owned = id.to_owned();
    let found = state
        .journal_read(tenant, move |engine| {
            engine.inbox_item_of(&owned, |summary| keep(summary.scope.as_str()))
        })
        .await?;
    match found {
        Ok(item) => Ok(item),
        Err(DeliverError::ItemNotFound(_)) => Err(not_found()),
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// `GET …/inbox/{item_id}` → the item, pending or not.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(p): Path<ItemPath>,
    headers: HeaderMap,
) -> Result<Json<InboxItem>, ApiError> {
    state.authorize(&headers, &p.tenant, ApiScope::Read)?;
    let key = state.scope(&p.tenant, &p.project)?.key();
    Ok(Json(
        scoped_item(&state, &p.tenant, &p.item_id, move |s| s == key).await?,
    ))
}

/// Body of `POST …/inbox/{item_id}/answer`: `{kind, option?, text?, comment?}`, or the
/// reference's answer as the journal keeps it, `{outcome, value?, comment?}` (`outcome`
/// `DECIDED` with `value` `{approved: bool}`, `{chosen: "<option>"}` or `{text}`;
/// `INSUFFICIENT_INFO`; `UNDECIDABLE`).
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct AnswerBody {
    /// `approve`, `reject`, `choose`, `text`, `insufficient_info` or `undecidable`.
    kind: Option<String>,
    /// The option, for `choose`.
    option: Option<String>,
    /// The text, for `text`.
    text: Option<String>,
    /// `DECIDED`, `INSUFFICIENT_INFO` or `UNDECIDABLE`, in place of `kind`.
    outcome: Option<String>,
    /// What was decided, with `outcome: DECIDED`.
    value: Option<serde_json::Value>,
    /// A comment (journaled with the answer).
    comment: Option<String>,
}

impl AnswerBody {
    fn answer(self) -> Result<GateAnswer, ApiError> {
        let invalid = |m: String| ApiError::bad_request("MAG-HTTP-INVALID-ANSWER", m);
        let answer = match (&self.kind, &self.outcome) {
            (Some(kind), None) => self.of_kind(kind)?,
            (None, Some(outcome)) => self.of_outcome(outcome)?,
            (Some(_), Some(_)) => {
                return Err(invalid(
                    "an answer has `kind` or `outcome`, not both".to_string(),
                ));
            }
            (None, None) => {
                return Err(invalid(
                    "an answer needs `kind` (approve, reject, choose, text, insufficient_info, \
                     undecidable) or `outcome` (DECIDED, INSUFFICIENT_INFO, UNDECIDABLE)"
                        .to_string(),
                ));
            }
        };
        Ok(match self.comment {
            Some(c) => answer.with_comment(c),
            None => answer,
        })
    }

    fn of_kind(&self, kind: &str) -> Result<GateAnswer, ApiError> {
        let missing = |field: &str| {
            ApiError::bad_request(
                "MAG-HTTP-INVALID-ANSWER",
                format!("`kind: {kind}` needs `{field}`"),
            )
        };
        Ok(match kind {
            "approve" => GateAnswer::approve(),
            "reject" => GateAnswer::reject(),
            "choose" => GateAnswer::choose(self.option.clone().ok_or_else(|| missing("option"))?),
            "text" => GateAnswer::text(self.text.clone().ok_or_else(|| missing("text"))?),
            "insufficient_info" => GateAnswer::insufficient_info(),
            "undecidable" => GateAnswer::undecidable(),
            other => {
                return Err(ApiError::bad_request(
                    "MAG-HTTP-INVALID-ANSWER",
                    format!(
                        "unknown answer kind `{other}`: approve, reject, choose, text, \
                         insufficient_info or undecidable"
                    ),
                ));
            }
        })
    }

    /// The reference's answer: an outcome, and for `DECIDED` the value that says what.
    fn of_outcome(&self, outcome: &str) -> Result<GateAnswer, ApiError> {
        let invalid = |m: String| ApiError::bad_request("MAG-HTTP-INVALID-ANSWER", m);
        match outcome.to_ascii_uppercase().as_str() {
            "INSUFFICIENT_INFO" => return Ok(GateAnswer::insufficient_info()),
            "UNDECIDABLE" => return Ok(GateAnswer::undecidable()),
            "DECIDED" => {}
            other => {
                return Err(invalid(format!(
                    "unknown answer outcome `{other}`: DECIDED, INSUFFICIENT_INFO or UNDECIDABLE"
                )));
            }
        }
        let value = self.value.as_ref().and_then(|v| v.as_object());
        let field = |name: &str| value.and_then(|v| v.get(name));
        if let Some(approved) = field("approved") {
            return match approved.as_bool() {
                Some(true) => Ok(GateAnswer::approve()),
                Some(false) => Ok(GateAnswer::reject()),
                None => Err(invalid("`value.approved` is true or false".to_string())),
            };
        }
        if let Some(chosen) = field("chosen") {
            return chosen
                .as_str()
                .map(GateAnswer::choose)
                .ok_or_else(|| invalid("`value.chosen` is the option's name".to_string()));
        }
        if let Some(text) = field("text") {
            return text
                .as_str()
                .map(GateAnswer::text)
                .ok_or_else(|| invalid("`value.text` is a string".to_string()));
        }
        Err(invalid(
            "`outcome: DECIDED` needs `value`: {approved: true|false} for an APPROVAL, \
             {chosen: \"<option>\"} for a DECISION, {text: \"…\"} for a FEEDBACK"
                .to_string(),
        ))
    }
}

/// Reply of an answer: whether it was applied, and the run afterwards.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Answered {
    /// The answer was journaled and drives the run on (for an approval towards a quorum:
    /// the quorum's decision, which counts it, was).
    pub applied: bool,
    /// The gate had already completed: the answer was journaled as ignored.
    pub ignored: bool,
    /// The run, right after the answer: the whole run view for a caller with
    /// `workflow.read`, else its [`RunBrief`](super::visible::RunBrief).
    pub run: serde_json::Value,
    /// An approval counted towards a quorum not yet reached: `{approvals, quorum}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<serde_json::Value>,
}

/// Answers `item` (already scope-checked) as `who`.
pub(crate) async fn answer_item(
    state: &AppState,
    item: &InboxItem,
    answer: GateAnswer,
    who: &Principal,
) -> Result<Answered, ApiError> {
    // Checked before anything counts it: an approval towards a quorum is held, not journaled.
    if let Some(comment) = &answer.comment
        && comment.len() > magrathea_core::MAX_ANSWER_COMMENT_BYTES
    {
        return Err(ApiError::bad_request(
            "MAG-HTTP-INVALID-ANSWER",
            format!(
                "[MAG-GT002] invalid answer for this {} gate: the comment holds {} bytes, more \
                 than the {} an answer may carry",
                item.kind.as_str(),
                comment.len(),
                magrathea_core::MAX_ANSWER_COMMENT_BYTES
            ),
        ));
    }
    let answer = answer.by(who.subject.clone());
    use super::approvers::Decision;
    let decision = super::approvers::check(state, item, answer, who)?;
    // An approval kept towards the quorum counts only if its item still pends now, or if the
    // quorum's decision that answered it meanwhile names it.
    let (pending, counted) = match &decision {
        Decision::Pending { .. } => match fresh_item(state, item).await {
            Ok(fresh) => (
                fresh
                    .as_ref()
                    .is_some_and(|i| i.status == InboxStatus::Pending),
                fresh.is_some_and(|i| names(&i, &who.subject)),
            ),
            Err(e) => {
                // Not known to count: the caller is told of the failure, and the vote goes.
                if let Decision::Pending {
                    vote: Some(vote), ..
                } = decision
                {
                    vote.take_back(state);
                }
                return Err(e);
            }
        },
        _ => (false, false),
    };
    let (answer, decider) = match decision {
        Decision::Answer(a) => (a, None),
        Decision::Quorum { answer, decider } => (answer, Some(decider)),
        Decision::Pending {
            approvals,
            quorum,
            repeated,
            ..
        } if pending => {
            let run = super::runs::dto(state, item.workflow_run_id).await?;
            return Ok(Answered {
                applied: false,
                // A second approval by the same approver is counted once, and says so.
                ignored: repeated,
                run: super::visible::visible_run(&run, &run.run, who),
                pending: Some(serde_json::json!({ "approvals": approvals, "quorum": quorum })),
            });
        }
        Decision::Pending { .. } if counted => {
            let run = super::runs::dto(state, item.workflow_run_id).await?;
            return Ok(Answered {
                applied: true,
                ignored: false,
                run: super::visible::visible_run(&run, &run.run, who),
                pending: None,
            });
        }
        // The item was answered or closed while the vote was kept: the vote is taken back
        // and the approval reaches the gate as a late answer (recorded as ignored).
        Decision::Pending { answer, vote, .. } => {
            if let Some(vote) = vote {
                vote.take_back(state);
            }
            (answer, None)
        }
    };
    let decision = decider.map(|d| (d, answer.value.clone()));
    let ack = match state.engine.answer_gate(&item.id, answer).await {
        Ok(ack) => ack,
        Err(DeliverError::InvalidAnswer(m)) => {
            return Err(ApiError::bad_request(
                "MAG-HTTP-INVALID-ANSWER",
                format!(
                    "[MAG-GT002] invalid answer for this {} gate: {m}; it takes {}",
                    item.kind.as_str(),
                    answer_kinds(item)
                ),
            ));
        }
        Err(DeliverError::ItemNotFound(_)) => {
            return Err(ApiError::not_found(format!(
                "inbox item `{}` not found",
                item.id
            )));
        }
        Err(e @ DeliverError::Blocked(..)) => {
            return Err(ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "MAG-HTTP-RUN-BLOCKED",
                e.to_string(),
            ));
        }
        Err(e) => return Err(ApiError::from(e)),
    };
    // A quorum's decision applies once, by whichever of its approvals reaches the gate first:
    // each approval it counts is told so. One the gate closed before counts no vote.
    let mut applied = ack == AnswerAck::Applied;
    if let Some((decider, value)) = decision.filter(|_| ack == AnswerAck::Ignored) {
        applied = fresh_item(state, item).await?.is_some_and(|i| {
            i.status == InboxStatus::Answered && i.answer.is_some_and(|a| a.value == value)
        });
        if decider && !applied {
            super::approvers::take_back_decision(state, item, &value);
        }
    }
    Ok(Answered {
        applied,
        ignored: !applied && ack == AnswerAck::Ignored,
        run: {
            let run = super::runs::dto(state, item.workflow_run_id).await?;
            super::visible::visible_run(&run, &run.run, who)
        },
        pending: None,
    })
}

/// Whether `item` was answered by a quorum's decision that names `who` among its approvers.
fn names(item: &InboxItem, who: &str) -> bool {
    item.status == InboxStatus::Answered
        && item
            .answer
            .as_ref()
            .and_then(|a| a.value.get("approvers"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(|a| a.iter().any(|n| n.as_str() == Some(who)))
}

/// `item` read again (an approval towards a quorum counts only as the item is now); `None`
/// once it is gone, an error when it cannot be read.
async fn fresh_item(state: &AppState, item: &InboxItem) -> Result<Option<InboxItem>, ApiError> {
    let id = item.id.clone();
    let fresh = state
        .journal_read(&state.tenant_of(item.workflow_run_id), move |engine| {
            engine.inbox_item_of(&id, |_| true)
        })
        .await?;
    match fresh {
        Ok(i) => Ok(Some(i)),
        Err(DeliverError::ItemNotFound(_)) => Ok(None),
        Err(e) => Err(ApiError::from(e)),
    }
}

/// The answer bodies an item of this kind takes, as this API spells them.
fn answer_kinds(item: &InboxItem) -> String {
    let also = "`{kind: insufficient_info}` or `{kind: undecidable}`";
    match item.kind {
        magrathea_core::GateKind::Approval => {
            format!("`{{kind: approve}}`, `{{kind: reject}}`, {also}")
        }
        magrathea_core::GateKind::Decision => format!(
            "`{{kind: choose, option}}` with `option` one of {:?}, {also}",
            item.options
        ),
        magrathea_core::GateKind::Feedback => format!("`{{kind: text, text}}`, {also}"),
    }
}

/// `POST …/inbox/{item_id}/answer` with `{kind, option?, text?, comment?}` → [`Answered`].
/// Answering a completed gate again is 200 with `applied: false, ignored: true`; an answer to
/// a gate that ended unanswered (its timeout fired first, its run ended) lands on the item,
/// which keeps its status, and the run does not react (reference §3.4).
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path(p): Path<ItemPath>,
    headers: HeaderMap,
    JsonBody(body): JsonBody<AnswerBody>,
) -> Result<Json<Answered>, ApiError> {
    let who = state.authorize(&headers, &p.tenant, ApiScope::Run)?;
    let body = body?;
    let key = state.scope(&p.tenant, &p.project)?.key();
    let item = scoped_item(&state, &p.tenant, &p.item_id, move |s| s == key).await?;
    let answer = body.answer()?;
    Ok(Json(answer_item(&state, &item, answer, &who).await?))
}
