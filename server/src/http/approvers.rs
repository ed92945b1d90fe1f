//! Friday's approvers (§1, §5.8) on approval gates: who may answer, how many approvals it
//! takes, and whether the run's starter may approve it.
//!
//! ```yaml
//! review:
//!   type: gate_task
//!   inbox:
//!     kind: APPROVAL
//!     title: Deploy to production?
//!     approvers: { users: [alice], roles: [ops] }   # a token's `roles:` in the token file
//!     quorum: 2                                      # approvals from distinct approvers
//!     selfApproval: false                            # the run's starter may not answer
//! ```
//!
//! The rules travel in the gate's journaled `meta`, so they are the ones of the frozen
//! definition. Over HTTP (the inbox's answer route and `/v1/workflow-approvals/{id}/approve|
//! reject`), an answer from someone the rules leave out is refused with 403
//! `MAG-HTTP-NOT-APPROVER` and recorded (listed as `refusals` by `GET
//! /v1/workflow-approvals/{id}`; the first [`MAX_REFUSALS`] of an item), also once the
//! approval is answered or closed. With a quorum, each approval is kept (catalog table
//! `approval.vote`) and answered with `applied: false, pending: {approvals, quorum}` until the
//! quorum is reached (`ignored: true` for an approver's second approval, which counts once);
//! the last one answers the gate with `{approved: true, approvers}`. A rejection by an allowed
//! approver rejects at once. The local `magrathea inbox answer` is the
//! store owner's own hand and is not checked.
//!
//! Approvals arrive at once from many clients (and servers sharing a store), so each step that
//! decides is one atomic catalog operation: an approver's vote is inserted if new (a repeat is
//! told so exactly once), and the approval that reaches the quorum first inserts the decision
//! (table `approval.decided`), naming every vote kept by then; any later one sends that same
//! decision again (first answer wins at the gate, so a decider that stopped before sending is
//! covered), counted if the decision names it. A vote kept after its item stopped pending
//! (answered or closed meanwhile) is taken back and its answer goes to the gate as a late one,
//! which the engine records as ignored; so are the votes of a decision the gate closed before.

use magrathea_core::{Catalog, GateAnswer, InboxItem, InboxStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::auth::Principal;
use super::error::ApiError;
use super::state::AppState;

const VOTES: &str = "approval.vote";
/// The answer the quorum reached, by item: the first approval to reach it inserts it.
const DECIDED: &str = "approval.decided";
const REFUSALS: &str = "approval.refusal";
/// The most refusals recorded for one item.
pub(crate) const MAX_REFUSALS: usize = 100;

/// The approval rules of a gate, from its `meta`.
#[derive(Debug, Default)]
struct Rules {
    users: Vec<String>,
    roles: Vec<String>,
    restricted: bool,
    quorum: u32,
    self_approval: bool,
    started_by: Vec<String>,
}

fn rules(item: &InboxItem) -> Option<Rules> {
    let meta = &item.meta;
    meta.get("quorum")?;
    let list = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    let approvers = meta.get("approvers");
    Some(Rules {
        users: list(approvers.and_then(|a| a.get("users"))),
        roles: list(approvers.and_then(|a| a.get("roles"))),
        restricted: approvers.is_some(),
        quorum: meta
            .get("quorum")
            .and_then(Value::as_u64)
            .map_or(1, |q| u32::try_from(q).unwrap_or(1)),
        self_approval: meta
            .get("selfApproval")
            .and_then(Value::as_bool)
            .unwrap_or(true),
        started_by: list(meta.get("startedBy")),
    })
}

/// Whether `item` is for the approver `user` (Friday's `approverUserId`): it names `user`
/// among its approvers' users, or names no approvers and is assigned to `user`.
pub(crate) fn is_for_user(item: &InboxItem, user: &str) -> bool {
    match rules(item) {
        Some(r) if r.restricted => r.users.iter().any(|u| u == user),
        _ => item.assigned_to == user,
    }
}

/// Whether `item` names `role` among its approvers' roles (Friday's `approverRole`).
pub(crate) fn is_for_role(item: &InboxItem, role: &str) -> bool {
    rules(item).is_some_and(|r| r.roles.iter().any(|r| r == role))
}

/// A refused answer, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Refusal {
    /// Who answered.
    pub by: String,
    /// `not_an_approver` or `self_approval`.
    pub reason: String,
    /// When (ms since the epoch).
    pub at_ms: u64,
}

/// What to do with an answer.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Answer the gate with this.
    Answer(GateAnswer),
    /// Answer the gate with the quorum's decision, which counts this approval: made by it
    /// (`decider`), or by another approval arriving with it and sent again here (the first
    /// answer wins at the gate, so a decider that stopped before sending is covered).
    Quorum {
        /// The decision: `{approved: true, approvers}`.
        answer: GateAnswer,
        /// Whether this approval made the decision: if the gate turns out closed before it,
        /// the votes it names are taken back.
        decider: bool,
    },
    /// An approval was counted; the quorum is not reached.
    Pending {
        /// Who approved so far.
        approvals: Vec<String>,
        /// How many it takes.
        quorum: u32,
        /// The approver had approved before: this approval changed nothing.
        repeated: bool,
        /// The approval as given, sent as a late answer if the item turns out closed.
        answer: GateAnswer,
        /// The vote this approval kept, if it kept one: taken back in that case.
        vote: Option<Vote>,
    },
}

/// A vote one approval kept, to take back when the answer it was for is not counted.
#[derive(Debug)]
pub(crate) struct Vote {
    key: String,
}

impl Vote {
    /// Removes the vote: the approval it stands for reached a gate that was no longer
    /// pending. A failure only leaves it listed, and is logged.
    pub(crate) fn take_back(self, state: &AppState) {
        delete_votes(state, std::slice::from_ref(&self.key));
    }
}

/// Takes back the votes a quorum's decision named: it reached a gate that had closed (its run
/// cancelled, its timeout fired) or that a rejection answered first, so none of them counted.
pub(crate) fn take_back_decision(state: &AppState, item: &InboxItem, decision: &Value) {
    let keys: Vec<String> = decision
        .get("approvers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|who| format!("{}/{who}", item.id))
        .collect();
    delete_votes(state, &keys);
}

fn delete_votes(state: &AppState, keys: &[String]) {
    if let Err(e) = catalog(state).and_then(|c| Ok(c.delete(VOTES, keys)?)) {
        tracing::warn!(votes = ?keys, error = ?e, "could not take back approvals' votes");
    }
}

fn catalog(state: &AppState) -> Result<&dyn Catalog, ApiError> {
    Ok(state.triggers.catalog()?)
}

fn refuse(state: &AppState, item: &InboxItem, who: &Principal, reason: &str) -> ApiError {
    let r = Refusal {
        by: who.subject.clone(),
        reason: reason.to_owned(),
        at_ms: u64::try_from(state.triggers.now_ms()).unwrap_or(0),
    };
    // The record of refusals is bounded: past MAX_REFUSALS for one item, a refusal is still
    // answered, and only the log tells of it.
    if let (Ok(c), Ok(bytes)) = (catalog(state), serde_json::to_vec(&r))
        && c.scan(REFUSALS, &format!("{}/", item.id), None, MAX_REFUSALS)
            .is_ok_and(|kept| kept.len() < MAX_REFUSALS)
    {
        let key = format!(
            "{}/{:020}/{}",
            item.id,
            r.at_ms,
            uuid::Uuid::now_v7().simple()
        );
        if let Err(e) = c.put(REFUSALS, &key, &bytes) {
            tracing::warn!(item = %item.id, error = %e, "could not record a refused answer");
        }
    } else {
        tracing::warn!(item = %item.id, by = %who.subject, reason, "refused answer not recorded");
    }
    let why = match reason {
        "self_approval" => {
            "this approval may not be answered by whoever started the run (selfApproval: false)"
        }
        _ => {
            "this approval names its approvers, and this token's subject and roles are not among them"
        }
    };
    ApiError::new(
        axum::http::StatusCode::FORBIDDEN,
        "MAG-HTTP-NOT-APPROVER",
        format!("`{}` may not answer: {why}", who.subject),
    )
}

/// Checks `answer` by `who` against the gate's rules.
pub(crate) fn check(
    state: &AppState,
    item: &InboxItem,
    answer: GateAnswer,
    who: &Principal,
) -> Result<Decision, ApiError> {
    let Some(rules) = rules(item) else {
        return Ok(Decision::Answer(answer));
    };
    // Who may answer is checked whatever the item's state: someone the rules leave out gets
    // the same refusal for an answered or closed item, and writes nothing to the run.
    if !rules.self_approval && rules.started_by.contains(&who.subject) {
        return Err(refuse(state, item, who, "self_approval"));
    }
    if rules.restricted
        && !rules.users.contains(&who.subject)
        && !who.roles.iter().any(|r| rules.roles.contains(r))
    {
        return Err(refuse(state, item, who, "not_an_approver"));
    }
    if item.status != InboxStatus::Pending {
        // The engine records a late answer as ignored.
        return Ok(Decision::Answer(answer));
    }
    let approves = answer.value.get("approved") == Some(&Value::Bool(true));
    if !approves || rules.quorum <= 1 {
        return Ok(Decision::Answer(answer));
    }
    let c = catalog(state)?;
    // One atomic insert: of an approver's approvals arriving together, one keeps the vote.
    let key = format!("{}/{}", item.id, who.subject);
    let repeated = c.insert_new(VOTES, &key, b"1")?.is_some();
    let vote = (!repeated).then_some(Vote { key });
    let approvals = votes(c, &item.id)?;
    if approvals.len() < rules.quorum as usize {
        return Ok(Decision::Pending {
            approvals,
            quorum: rules.quorum,
            repeated,
            answer,
            vote,
        });
    }
    // The quorum is reached: the first approval to see it decides, with the approvers kept
    // then; the others send that decision again and are not counted.
    let decided = json!({ "approved": true, "approvers": approvals });
    let bytes = serde_json::to_vec(&decided).map_err(ApiError::internal)?;
    let mut answer = answer;
    match c.insert_new(DECIDED, &item.id, &bytes)? {
        None => {
            answer.value = decided;
            Ok(Decision::Quorum {
                answer,
                decider: true,
            })
        }
        Some(earlier) => {
            let earlier: Value = serde_json::from_slice(&earlier).map_err(ApiError::internal)?;
            let counted = earlier
                .get("approvers")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(&who.subject)));
            answer.value = earlier;
            if counted {
                return Ok(Decision::Quorum {
                    answer,
                    decider: false,
                });
            }
            // Kept after the decision was made: not counted.
            if let Some(vote) = vote {
                vote.take_back(state);
            }
            Ok(Decision::Answer(answer))
        }
    }
}

/// Who approved `item` so far.
pub(crate) fn votes(catalog: &dyn Catalog, item: &str) -> Result<Vec<String>, ApiError> {
    let prefix = format!("{item}/");
    let mut out = Vec::new();
    magrathea_core::store::catalog::scan_all(catalog, VOTES, &prefix, 1000, |key, _| {
        out.push(key[prefix.len()..].to_owned());
        Ok(())
    })?;
    Ok(out)
}

/// The approvals counted towards `item`'s quorum: for an approval its quorum answered, the
/// approvers its answer names; else those kept while it was short of its quorum, else (an
/// approval that needed one) the approver of its applied answer.
pub(crate) fn counted(catalog: &dyn Catalog, item: &InboxItem) -> Result<Vec<String>, ApiError> {
    let decided = item
        .answer
        .as_ref()
        .filter(|_| item.status == InboxStatus::Answered)
        .and_then(|a| a.value.get("approvers"))
        .and_then(Value::as_array);
    if let Some(approvers) = decided {
        return Ok(approvers
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect());
    }
    let kept = votes(catalog, &item.id)?;
    if !kept.is_empty() || item.status != InboxStatus::Answered {
        return Ok(kept);
    }
    Ok(item
        .answer
        .as_ref()
        .filter(|a| a.value.get("approved") == Some(&Value::Bool(true)))
        .filter(|a| !a.answered_by.is_empty())
        .map(|a| vec![a.answered_by.clone()])
        .unwrap_or_default())
}

/// The refused answers of `item`, oldest first.
pub(crate) fn refusals(state: &AppState, item: &str) -> Result<Vec<Refusal>, ApiError> {
    let c = catalog(state)?;
    let mut out = Vec::new();
    magrathea_core::store::catalog::scan_all(c, REFUSALS, &format!("{item}/"), 1000, |_, v| {
        if let Ok(r) = serde_json::from_slice(&v) {
            out.push(r);
        }
        Ok(())
    })?;
    Ok(out)
}
