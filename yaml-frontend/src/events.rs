//! Internal events: what the engine reports about its own runs and approvals, and how event
//! documents and hooks subscribe to them.
//!
//! An event document subscribes with a `subscribe:` block ([`Subscription`]):
//!
//! ```yaml
//! # _vance/events/notify-on-deploy-failure.yaml
//! workflow: notify-failure
//! subscribe:
//!   source: internal            # the engine's own events (the default, and the only source)
//!   event: workflow.run.failed  # one of INTERNAL_EVENTS
//!   filter: "#event['workflowName'] == 'deploy'"   # optional, the condition language
//! params: {channel: ops}        # static; the run also receives params.event = the event
//! ```
//!
//! [`check_subscription`] checks the block (a known event name, a filter that parses as an
//! event filter) and gives a [`CheckedSubscription`] that decides whether an event starts the
//! document's workflow.
//!
//! # The events and their JSON
//!
//! Run events ([`RunEvent`]): `workflow.run.started`, `workflow.run.completed`,
//! `workflow.run.failed`, `workflow.run.cancelled`:
//!
//! ```json
//! {"event": "workflow.run.failed", "runId": "0f2d…", "workflowName": "deploy",
//!  "tenant": "acme", "project": "shop", "status": "FAILED", "startedBy": "schedule:nightly",
//!  "error": {"kind": "technical_error", "message": "exit status 2"}}
//! ```
//!
//! `error` is present only when the run failed.
//!
//! Approval events ([`ApprovalEvent`]): `workflow.approval.requested`,
//! `workflow.approval.approved`, `workflow.approval.rejected`, `workflow.approval.expired`:
//!
//! ```json
//! {"event": "workflow.approval.approved", "runId": "0f2d…", "workflowName": "deploy",
//!  "tenant": "acme", "project": "shop", "itemId": "…", "step": "approve",
//!  "title": "Deploy to production?", "assignee": "@ops", "answeredBy": "alice",
//!  "comment": "go"}
//! ```
//!
//! `title`, `assignee`, `answeredBy` and `comment` are present when known (`answeredBy` and
//! `comment` only once the item is answered).

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::condition::{Condition, EvalError};

/// The names of the internal events, as documents write them.
pub const INTERNAL_EVENTS: &[&str] = &[
    "workflow.run.started",
    "workflow.run.completed",
    "workflow.run.failed",
    "workflow.run.cancelled",
    "workflow.approval.requested",
    "workflow.approval.approved",
    "workflow.approval.rejected",
    "workflow.approval.expired",
];

/// One internal event kind; its text is one of [`INTERNAL_EVENTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum InternalEvent {
    /// `workflow.run.started`: a run was started.
    RunStarted,
    /// `workflow.run.completed`: a run ended successfully.
    RunCompleted,
    /// `workflow.run.failed`: a run ended in failure.
    RunFailed,
    /// `workflow.run.cancelled`: a run was cancelled.
    RunCancelled,
    /// `workflow.approval.requested`: a gate put an item in the inbox.
    ApprovalRequested,
    /// `workflow.approval.approved`: an inbox item was answered positively.
    ApprovalApproved,
    /// `workflow.approval.rejected`: an inbox item was answered negatively.
    ApprovalRejected,
    /// `workflow.approval.expired`: an inbox item's gate timed out unanswered.
    ApprovalExpired,
}

impl InternalEvent {
    /// Every internal event, in the order of [`INTERNAL_EVENTS`].
    pub const ALL: [InternalEvent; 8] = [
        Self::RunStarted,
        Self::RunCompleted,
        Self::RunFailed,
        Self::RunCancelled,
        Self::ApprovalRequested,
        Self::ApprovalApproved,
        Self::ApprovalRejected,
        Self::ApprovalExpired,
    ];

    /// The event's name, e.g. `workflow.run.failed`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RunStarted => "workflow.run.started",
            Self::RunCompleted => "workflow.run.completed",
            Self::RunFailed => "workflow.run.failed",
            Self::RunCancelled => "workflow.run.cancelled",
            Self::ApprovalRequested => "workflow.approval.requested",
            Self::ApprovalApproved => "workflow.approval.approved",
            Self::ApprovalRejected => "workflow.approval.rejected",
            Self::ApprovalExpired => "workflow.approval.expired",
        }
    }

    /// Whether this is a run event ([`RunEvent`]) rather than an approval event
    /// ([`ApprovalEvent`]).
    #[must_use]
    pub fn is_run_event(self) -> bool {
        matches!(
            self,
            Self::RunStarted | Self::RunCompleted | Self::RunFailed | Self::RunCancelled
        )
    }
}

impl fmt::Display for InternalEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for InternalEvent {
    type Err = String;

    /// The event named `name` exactly; otherwise a `[MAG-HK010]` message listing the known
    /// names, with a suggestion for a near miss.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "[MAG-HK010] unknown internal event `{name}`{}; expected one of {}",
                    magrathea_exec::suggest::hint(name, INTERNAL_EVENTS.iter().copied()),
                    INTERNAL_EVENTS.join(", ")
                )
            })
    }
}

/// The JSON Schema of an event name: one of [`INTERNAL_EVENTS`].
#[derive(Debug)]
pub struct InternalEventName;

impl JsonSchema for InternalEventName {
    fn schema_name() -> Cow<'static, str> {
        "InternalEvent".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "enum": INTERNAL_EVENTS,
            "description": "An internal event of the engine."
        })
    }
}

/// Where a subscription's events come from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum EventSource {
    /// The engine's own run and approval events (`workflow.run.*`, `workflow.approval.*`).
    #[default]
    Internal,
}

/// The `subscribe:` block of an event document: start the document's workflow whenever an
/// internal event of this kind passes the filter.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct Subscription {
    /// Where the events come from: `internal` (default), the engine's own events.
    #[serde(default)]
    pub source: EventSource,
    /// The event to subscribe to, e.g. `workflow.run.failed`.
    #[schemars(with = "InternalEventName")]
    pub event: String,
    /// A condition over `#event` (the event's JSON), e.g.
    /// `#event['workflowName'] == 'deploy'`; without it every event of the kind matches.
    #[serde(default)]
    pub filter: Option<String>,
}

impl Subscription {
    /// A subscription to `event` from the engine, without a filter.
    pub fn new(event: impl Into<String>) -> Self {
        Self {
            source: EventSource::Internal,
            event: event.into(),
            filter: None,
        }
    }

    /// With `filter`.
    pub fn filter(mut self, filter: impl Into<String>) -> Self {
        self.filter = Some(filter.into());
        self
    }
}

/// A checked [`Subscription`]: a known event and a parsed filter.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckedSubscription {
    /// Where the events come from.
    pub source: EventSource,
    /// The event subscribed to.
    pub event: InternalEvent,
    /// The filter, parsed with [`Condition::parse_filter`].
    pub filter: Option<Condition>,
}

impl CheckedSubscription {
    /// Whether `event` (an event's JSON, as documented in this module) starts the
    /// subscription's workflow: its `event` field names the subscribed event and it passes the
    /// filter. A filter that cannot be evaluated (e.g. it is not boolean) is an error: the
    /// caller records it and starts nothing.
    pub fn matches(&self, event: &serde_json::Value) -> Result<bool, EvalError> {
        event_matches(self.event, self.filter.as_ref(), event)
    }
}

/// Checks a subscription block: the event must be one of [`INTERNAL_EVENTS`] (else an error
/// listing them, with a suggestion), and the filter must parse as an event filter.
pub fn check_subscription(sub: &Subscription) -> Result<CheckedSubscription, String> {
    Ok(CheckedSubscription {
        source: sub.source,
        event: sub.event.parse()?,
        filter: check_filter("subscribe.filter", sub.filter.as_deref())?,
    })
}

/// `source` parsed as an event filter; `field` names it in the error.
pub(crate) fn check_filter(field: &str, source: Option<&str>) -> Result<Option<Condition>, String> {
    let Some(source) = source else {
        return Ok(None);
    };
    Condition::parse_filter(source).map(Some).map_err(|e| {
        format!(
            "[MAG-HK011] invalid `{field}` `{source}` at character {}: {}",
            e.char_offset(source) + 1,
            e.message
        )
    })
}

/// Whether `event` is of kind `kind` and passes `filter`.
pub(crate) fn event_matches(
    kind: InternalEvent,
    filter: Option<&Condition>,
    event: &serde_json::Value,
) -> Result<bool, EvalError> {
    if event.get("event").and_then(serde_json::Value::as_str) != Some(kind.as_str()) {
        return Ok(false);
    }
    match filter {
        Some(f) => f.matches_event(event),
        None => Ok(true),
    }
}

/// The JSON of a run event (`workflow.run.*`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEvent {
    /// The event's name, e.g. `workflow.run.failed`.
    pub event: String,
    /// The run.
    pub run_id: String,
    /// The run's workflow.
    pub workflow_name: String,
    /// The run's tenant.
    pub tenant: String,
    /// The run's project.
    pub project: String,
    /// The run's status: `RUNNING`, `COMPLETED`, `FAILED`, `CANCELLED`, ….
    pub status: String,
    /// Who started the run (`startedBy`).
    pub started_by: String,
    /// Why the run failed (failed runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunEventError>,
}

/// Why a run failed, in a [`RunEvent`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEventError {
    /// The error kind (e.g. `technical_error`).
    pub kind: String,
    /// The error's message.
    pub message: String,
}

impl RunEventError {
    /// An error of `kind` with `message`.
    pub fn new(kind: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            kind: kind.into(),
            message: message.into(),
        }
    }
}

/// The JSON of an approval event (`workflow.approval.*`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalEvent {
    /// The event's name, e.g. `workflow.approval.requested`.
    pub event: String,
    /// The run that waits at the gate.
    pub run_id: String,
    /// The run's workflow.
    pub workflow_name: String,
    /// The run's tenant.
    pub tenant: String,
    /// The run's project.
    pub project: String,
    /// The inbox item.
    pub item_id: String,
    /// The gate's state.
    pub step: String,
    /// The item's title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Whom the item is assigned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignee: Option<String>,
    /// Who answered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// The answer's comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_event_names_and_the_enum_agree() {
        let names: Vec<&str> = InternalEvent::ALL.iter().map(|e| e.as_str()).collect();
        assert_eq!(names, INTERNAL_EVENTS);
        for name in INTERNAL_EVENTS {
            assert_eq!(name.parse::<InternalEvent>().map(|e| e.as_str()), Ok(*name));
        }
        assert!(InternalEvent::RunCancelled.is_run_event());
        assert!(!InternalEvent::ApprovalExpired.is_run_event());
    }

    #[test]
    fn an_unknown_event_lists_the_known_ones_and_suggests_the_nearest() {
        let err = check_subscription(&Subscription::new("workflow.run.faild")).unwrap_err();
        assert!(err.starts_with("[MAG-HK010]"), "{err}");
        assert!(err.contains("did you mean 'workflow.run.failed'"), "{err}");
        assert!(err.contains("workflow.approval.expired"), "{err}");
        let err = check_subscription(&Subscription::new("deploy.done")).unwrap_err();
        assert!(!err.contains("did you mean"), "{err}");
    }

    #[test]
    fn a_subscription_filter_must_be_an_event_filter() {
        let sub = Subscription::new("workflow.run.failed").filter("#state['x'] == 1");
        let err = check_subscription(&sub).unwrap_err();
        assert!(
            err.starts_with("[MAG-HK011] invalid `subscribe.filter`"),
            "{err}"
        );
        assert!(err.contains("at character 1"), "{err}");
        assert!(err.contains("event filters see only #event"), "{err}");
        let sub = Subscription::new("workflow.run.failed").filter("#event['x'] ==");
        let err = check_subscription(&sub).unwrap_err();
        assert!(err.contains("at character 15"), "{err}");
    }

    #[test]
    fn a_checked_subscription_matches_its_event_through_its_filter() {
        let sub =
            Subscription::new("workflow.run.failed").filter("#event['workflowName'] == 'deploy'");
        let checked = check_subscription(&sub).unwrap();
        let event = |name: &str, workflow: &str| {
            serde_json::to_value(RunEvent {
                event: name.into(),
                run_id: "r1".into(),
                workflow_name: workflow.into(),
                tenant: "acme".into(),
                project: "shop".into(),
                status: "FAILED".into(),
                started_by: "alice".into(),
                error: Some(RunEventError::new("technical_error", "boom")),
            })
            .unwrap()
        };
        assert_eq!(
            checked.matches(&event("workflow.run.failed", "deploy")),
            Ok(true)
        );
        assert_eq!(
            checked.matches(&event("workflow.run.failed", "build")),
            Ok(false)
        );
        assert_eq!(
            checked.matches(&event("workflow.run.completed", "deploy")),
            Ok(false)
        );
        let all = check_subscription(&Subscription::new("workflow.run.failed")).unwrap();
        assert_eq!(
            all.matches(&event("workflow.run.failed", "build")),
            Ok(true)
        );
    }

    #[test]
    fn the_event_json_has_the_documented_shape() {
        let run = RunEvent {
            event: "workflow.run.failed".into(),
            run_id: "r1".into(),
            workflow_name: "deploy".into(),
            tenant: "acme".into(),
            project: "shop".into(),
            status: "FAILED".into(),
            started_by: "alice".into(),
            error: Some(RunEventError::new("technical_error", "boom")),
        };
        assert_eq!(
            serde_json::to_value(&run).unwrap(),
            json!({"event": "workflow.run.failed", "runId": "r1", "workflowName": "deploy",
                   "tenant": "acme", "project": "shop", "status": "FAILED",
                   "startedBy": "alice",
                   "error": {"kind": "technical_error", "message": "boom"}})
        );
        let approval = ApprovalEvent {
            event: "workflow.approval.requested".into(),
            run_id: "r1".into(),
            workflow_name: "deploy".into(),
            tenant: "acme".into(),
            project: "shop".into(),
            item_id: "i1".into(),
            step: "approve".into(),
            title: Some("Go?".into()),
            assignee: None,
            answered_by: None,
            comment: None,
        };
        assert_eq!(
            serde_json::to_value(&approval).unwrap(),
            json!({"event": "workflow.approval.requested", "runId": "r1",
                   "workflowName": "deploy", "tenant": "acme", "project": "shop",
                   "itemId": "i1", "step": "approve", "title": "Go?"})
        );
    }
}
