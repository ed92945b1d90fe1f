//! The route table: every route once, with what the OpenAPI document says about it. The
//! router and `/openapi.json` are both built from [`routes`], so they cannot disagree.

use axum::routing::{MethodRouter, any, delete, get, patch, post, put};

use super::auth::ApiScope;
use super::graph;
use super::state::AppState;
use super::{
    approvals, documents, events, health, inbox, journal, live_events, me, metrics, openapi, pause,
    rerun, retry, runs, schemas, sse, triggers, ui, versions, webhooks, workflows, ws,
};

/// Who may call a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Anyone (health, metrics, the OpenAPI document, the document schemas).
    Public,
    /// An API token of the route's tenant holding this scope.
    Token(ApiScope),
    /// Any valid API token, whatever its scopes (`/v1/me`).
    AnyToken,
    /// The event document's own Bearer token when it names one (`auth.tokenSetting`), else an
    /// API token of the route's tenant with `workflow.run`.
    EventToken,
}

/// One route of the server.
#[derive(Debug, Clone)]
pub struct Route {
    /// HTTP methods, upper case.
    pub methods: &'static [&'static str],
    /// The axum path pattern (`{param}`, `{*rest}`).
    pub path: &'static str,
    /// A stable operation id.
    pub operation: &'static str,
    /// One line for people.
    pub summary: &'static str,
    /// Query parameters it reads.
    pub query: &'static [&'static str],
    /// Who may call it.
    pub access: Access,
    /// The handlers of its methods.
    pub(crate) handler: fn() -> MethodRouter<AppState>,
}

/// Every route, in the order the OpenAPI document lists them.
pub fn routes() -> Vec<Route> {
    use Access::{AnyToken, EventToken, Public, Token};
    use ApiScope::{Read, Run, Write};
    vec![
        Route {
            methods: &["GET"],
            path: "/healthz",
            operation: "health",
            summary: "Health: 200 {status: \"ok\"}, or 503 {status: \"unhealthy\", reason} after a failed journal commit",
            query: &[],
            access: Public,
            handler: || get(health::healthz),
        },
        Route {
            methods: &["GET"],
            path: "/metrics",
            operation: "metrics",
            summary: "Prometheus text exposition",
            query: &[],
            access: Public,
            handler: || get(metrics::metrics),
        },
        Route {
            methods: &["GET"],
            path: "/openapi.json",
            operation: "openapi",
            summary: "This document",
            query: &[],
            access: Public,
            handler: || get(openapi::document),
        },
        Route {
            methods: &["GET"],
            path: "/schemas/{file}",
            operation: "schemas.get",
            summary: "JSON Schema of a document: workflow|settings|recipe|event|scheduler|hook.schema.json",
            query: &[],
            access: Public,
            handler: || get(schemas::get),
        },
        Route {
            methods: &["GET"],
            path: "/v1/me",
            operation: "me",
            summary: "The token: {subject, tenant (null: every tenant, --insecure-no-auth), scopes, roles, tenants: [{name, projects, truncated}], truncated}; projects sorted, at most 1000 per tenant",
            query: &[],
            access: AnyToken,
            handler: || get(me::me),
        },
        Route {
            methods: &["GET"],
            path: "/ui",
            operation: "ui.index",
            summary: "The web UI (HTML); it signs in with an API token kept in the browser session",
            query: &[],
            access: Public,
            handler: || get(ui::index),
        },
        Route {
            methods: &["GET"],
            path: "/ui/{*path}",
            operation: "ui.asset",
            summary: "A file of the web UI (CSS, ES modules), embedded in the binary",
            query: &[],
            access: Public,
            handler: || get(ui::file),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/start",
            operation: "workflows.start",
            summary: "Start a run: {params, startedBy?, draft?} (or ?draft=true: the project's draft; 409 MAG-VR001 when archived) (+ Idempotency-Key header) -> 201 {workflowRunId, workflowName}, 200 when the key started it before; startedBy = the token's subject, a body startedBy is recorded as requestedBy",
            query: &["draft"],
            access: Token(Run),
            handler: || post(runs::start),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows",
            operation: "workflows.list",
            summary: "Every workflow document the project's cascade sees (project, then tenant), sorted by name, at most 1000, each validated: [{name, path, source: project|tenant, valid, description?, version?, archived, hasDraft, diagnostics: [{severity, code, message, line, column}] (at most 100), diagnosticCount}]",
            query: &[],
            access: Token(Read),
            handler: || get(workflows::list),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/runs",
            operation: "workflows.runs.list",
            summary: "Runs, newest first: a JSON array; X-Next-Cursor / Link headers name the next page. Filters: workflow, status (RUNNING|WAITING|PAUSED|DONE|FAILED|CANCELLED|BLOCKED, any case; completed for DONE), startedBy, since/until (RFC 3339 or epoch ms, on the start time; since <= start < until); a filtered page reads at most 10000 runs and may hold fewer than limit with a next cursor",
            query: &[
                "workflow",
                "status",
                "startedBy",
                "since",
                "until",
                "limit",
                "cursor",
            ],
            access: Token(Read),
            handler: || get(runs::list),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}",
            operation: "workflows.runs.get",
            summary: "The run (status, currentState, vars, params, result, timestamps, reExecutions); with wait (30s, PT30S, 500ms or whole seconds, at most 60 s) answered once the run has ended (until=ended, the default: DONE, FAILED, CANCELLED, BLOCKED) or settled (until=settled: also WAITING, PAUSED, or RUNNING on sub-runs' gates only), or as it is when the wait is over or the server stops; a wait holds a follower slot (429 MAG-RD003)",
            query: &["wait", "until"],
            access: Token(Read),
            handler: || get(runs::get),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/cancel",
            operation: "workflows.runs.cancel",
            summary: "Request cancellation: {reason?} -> {cancel, run}; run is {workflowRunId, workflowName, status, currentState} without workflow.read",
            query: &[],
            access: Token(Run),
            handler: || post(runs::cancel),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/pause",
            operation: "runs.pause",
            summary: "Pause the run: {reason?} -> {pause: paused|alreadyPaused, run}; it starts nothing new until resumed; 409 MAG-HTTP-PAUSE-STATE for a run that has ended",
            query: &[],
            access: Token(Run),
            handler: || post(pause::pause),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/resume",
            operation: "runs.resume",
            summary: "Resume a paused run: -> {resume: resumed, run}; 409 MAG-HTTP-PAUSE-STATE for a run that is not paused",
            query: &[],
            access: Token(Run),
            handler: || post(pause::resume),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/rerun",
            operation: "runs.rerun",
            summary: "A new run of the same workflow with the same parameters: {definition?: current|frozen} → 202 {workflowRunId, workflowName, rerunOf, definition}",
            query: &[],
            access: Token(Run),
            handler: || post(rerun::rerun),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/retry",
            operation: "runs.retry",
            summary: "A new run of a FAILED or CANCELLED YAML run, beginning at a state with the variables the original had there: {fromState?, definition: current|frozen} → 202 {workflowRunId, workflowName, retryOf, fromState, definition}",
            query: &[],
            access: Token(Run),
            handler: || post(retry::retry),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/origin",
            operation: "runs.origin",
            summary: "Where a run came from: {rerunOf, definition} for a rerun, {kind: retry, retryOf, fromState, definition} for a retry, {} otherwise",
            query: &[],
            access: Token(Read),
            handler: || get(rerun::origin),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/journal",
            operation: "workflows.runs.journal",
            summary: "The run's journal records, in order, paged: a JSON array of at most `limit` (default 1000, max 10000) from `cursor`; X-Next-Cursor / Link headers name the next page",
            query: &["cursor", "limit"],
            access: Token(Read),
            handler: || get(journal::journal),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/events",
            operation: "workflows.runs.events",
            summary: "Server-sent events: the run's records until it ends",
            query: &[],
            access: Token(Read),
            handler: || get(sse::events),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/inbox",
            operation: "inbox.list",
            summary: "The project's inbox items, oldest first (pending by default): a JSON array of at most `limit` (default and max 1000) and 8 MiB; X-Next-Cursor names the next page",
            query: &["assignee", "status", "limit", "cursor"],
            access: Token(Read),
            handler: || get(inbox::list),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/inbox/{item_id}",
            operation: "inbox.get",
            summary: "One inbox item",
            query: &[],
            access: Token(Read),
            handler: || get(inbox::get),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/inbox/{item_id}/answer",
            operation: "inbox.answer",
            summary: "Answer: {kind, option?, text?, comment?} or the reference's {outcome: DECIDED|INSUFFICIENT_INFO|UNDECIDABLE, value?: {approved|chosen|text}, comment?} -> {applied, ignored, run}; run is brief without workflow.read",
            query: &[],
            access: Token(Run),
            handler: || post(inbox::answer),
        },
        Route {
            methods: &["POST"],
            path: "/v1/workflow-runs/{runId}/pause",
            operation: "workflows.runs.pause",
            summary: "Pause a run of the token's tenant: {reason?} -> {pause: paused|alreadyPaused, status (Friday's word), run}; 409 MAG-HTTP-PAUSE-STATE for a run that has ended",
            query: &[],
            access: Token(Run),
            handler: || post(pause::v1_pause),
        },
        Route {
            methods: &["POST"],
            path: "/v1/workflow-runs/{runId}/resume",
            operation: "workflows.runs.resume",
            summary: "Resume a paused run of the token's tenant, or one waiting on the decision of onFailure: pause_for_approval (answered retry): -> {resume: resumed, status (Friday's word: running|paused|completed|failed|cancelled), run}; 409 MAG-HTTP-PAUSE-STATE for a run that is neither",
            query: &[],
            access: Token(Run),
            handler: || post(pause::v1_resume),
        },
        Route {
            methods: &["GET"],
            path: "/v1/workflow-approvals",
            operation: "workflows.approvals.list",
            summary: "Approvals of the token's tenant, oldest first, with Friday's status words (pending|approved|rejected|expired|cancelled); pages with limit and cursor (X-Next-Cursor)",
            query: &[
                "assignee",
                "approverUserId",
                "approverRole",
                "status",
                "limit",
                "cursor",
            ],
            access: Token(Run),
            handler: || get(approvals::list),
        },
        Route {
            methods: &["GET"],
            path: "/v1/workflow-approvals/{id}",
            operation: "workflows.approvals.get",
            summary: "One approval",
            query: &[],
            access: Token(Run),
            handler: || get(approvals::get),
        },
        Route {
            methods: &["POST"],
            path: "/v1/workflow-approvals/{id}/approve",
            operation: "workflows.approvals.approve",
            summary: "Approve: {comment?} -> {applied, ignored, run, approval, status}; approval as it now stands, status the run's in Friday's words; run is brief without workflow.read",
            query: &[],
            access: Token(Run),
            handler: || post(approvals::approve),
        },
        Route {
            methods: &["POST"],
            path: "/v1/workflow-approvals/{id}/reject",
            operation: "workflows.approvals.reject",
            summary: "Reject: {comment?} -> {applied, ignored, run, approval, status}; approval as it now stands, status the run's in Friday's words; run is brief without workflow.read",
            query: &[],
            access: Token(Run),
            handler: || post(approvals::reject),
        },
        Route {
            methods: &["GET"],
            path: "/v1/workflow-events",
            operation: "workflows.events.stream",
            summary: "Server-sent events of the token's tenant: workflow.run.started|completed|failed|cancelled|paused|resumed and workflow.approval.requested|approved|rejected|expired, each named after itself with the event's JSON; with Upgrade: websocket, the same events as WebSocket messages {type: workflow-event, data} (token in the header or ?token=)",
            query: &["project", "token"],
            access: Token(Read),
            handler: || get(live_events::stream),
        },
        Route {
            methods: &["GET"],
            path: "/v1/workflows/{workflowId}/triggers",
            operation: "workflows.triggers.list",
            summary: "Every trigger of a workflow (`<project>:<name>`, or a bare name for every project of the token's tenant): schedules with their next fire times, webhooks, event subscriptions, each with its last delivery",
            query: &[],
            access: Token(Read),
            handler: || get(triggers::list_for_workflow),
        },
        Route {
            methods: &["POST"],
            path: "/v1/workflows/{workflowId}/triggers/resync",
            operation: "workflows.triggers.resync",
            summary: "Rebuilds the trigger registrations of the workflow's projects from their documents",
            query: &[],
            access: Token(Write),
            handler: || post(triggers::resync_workflow),
        },
        Route {
            methods: &["PATCH"],
            path: "/v1/workflow-triggers/{id}",
            operation: "workflows.triggers.update",
            summary: "Enables or disables (pauses) a trigger: {enabled}; enabling also needs workflow.run",
            query: &[],
            access: Token(Write),
            handler: || patch(triggers::patch),
        },
        Route {
            methods: &["GET"],
            path: "/v1/workflow-triggers/{id}/deliveries",
            operation: "workflows.triggers.deliveries",
            summary: "A trigger's delivery records, newest first: {deliveries, next?}",
            query: &["status", "cursor", "limit"],
            access: Token(Read),
            handler: || get(triggers::deliveries_of),
        },
        Route {
            methods: &["POST"],
            path: "/v1/workflow-webhooks/{pathToken}",
            operation: "workflows.webhooks.invoke",
            summary: "A webhook delivery: verified by the event document's `webhook:` block (HMAC signature, timestamp, dedupe); 202 {workflowRunId, workflowName, duplicate: false}, or 200 with duplicate: true",
            query: &[],
            access: Public,
            // Every method reaches the handler, so that a wrong one is recorded as a delivery.
            handler: || any(webhooks::invoke),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/triggers",
            operation: "project.triggers.list",
            summary: "Every trigger of the project, with next fire times and last deliveries",
            query: &[],
            access: Token(Read),
            handler: || get(triggers::list_project),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/triggers/resync",
            operation: "project.triggers.resync",
            summary: "Rebuilds the project's trigger registrations from its documents",
            query: &[],
            access: Token(Write),
            handler: || post(triggers::resync_project),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/triggers/deliveries",
            operation: "project.triggers.deliveries",
            summary: "The project's delivery records, newest first: {deliveries, next?}",
            query: &["trigger", "status", "cursor", "limit"],
            access: Token(Read),
            handler: || get(triggers::deliveries_of_project),
        },
        Route {
            methods: &["PATCH"],
            path: "/brain/{tenant}/project/{project}/triggers/{name}",
            operation: "project.triggers.update",
            summary: "Enables or disables (pauses) a trigger of the project, by id or document name: {enabled}; enabling also needs workflow.run",
            query: &[],
            access: Token(Write),
            handler: || patch(triggers::patch_project),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/triggers",
            operation: "project.workflow.triggers",
            summary: "Every trigger of one workflow of the project",
            query: &[],
            access: Token(Read),
            handler: || get(triggers::list_project_workflow),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/schedules/{name}/trigger",
            operation: "project.schedules.trigger",
            summary: "Fires a schedule now: 202 {workflowRunId, workflowName, delivery}; 409 MAG-HTTP-TRIGGER-DISABLED when its document says enabled: false or an operator paused it",
            query: &[],
            access: Token(Run),
            handler: || post(triggers::fire_schedule),
        },
        Route {
            methods: &["GET", "POST"],
            path: "/brain/{tenant}/event/{project}/{event}",
            operation: "events.trigger",
            summary: "Event trigger: starts the event document's workflow -> 202 (+ Idempotency-Key header: 200 with the run the key started before); needs the event's token (auth.tokenSetting) or else an API token with workflow.run; 401 before any 404; 409 MAG-HTTP-TRIGGER-DISABLED when its document says enabled: false or an operator paused it",
            query: &[],
            access: EventToken,
            // Methods the event document does not list answer 405 from the handler; others
            // (PUT, DELETE, …) the router's 405.
            handler: || get(events::trigger).post(events::trigger),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/graph",
            operation: "runs.graph.get",
            summary: "The graph of the definition the run started with (its StartRecord's frozen document), in the formats of workflows.graph.get; 404 MAG-HTTP-NO-GRAPH for a code workflow's run",
            query: &["format"],
            access: Token(Read),
            handler: || get(graph::get_run),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/graph",
            operation: "workflows.graph.get",
            summary: "The workflow's graph: format=reactflow (default; the editor's React Flow JSON, positions from the layout file or automatic), mermaid or dot (text)",
            query: &["format"],
            access: Token(Read),
            handler: || get(graph::get),
        },
        Route {
            methods: &["PUT"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/graph",
            operation: "workflows.graph.put",
            summary: "Stores node positions, sizes, names and the viewport of an editor graph in _vance/workflows/<name>.layout.json (edges and the rest of node data are ignored) -> the graph as stored; 422 for nodes that are not states",
            query: &[],
            access: Token(Write),
            handler: || put(graph::put),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/ws",
            operation: "ws",
            summary: "WebSocket session with a token of workflow.read or workflow.run: workflow-start (workflow.run), subscribe and subscribe-events (workflow.read)",
            query: &["token"],
            access: AnyToken,
            handler: || get(ws::connect),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/documents",
            operation: "documents.list",
            summary: "Documents of a directory under _vance/: {items, next?}, sorted by name, at most limit (default and max 1000) a page; next (also X-Next-Cursor) is the cursor of the next page",
            query: &["dir", "limit", "cursor"],
            access: Token(Read),
            handler: || get(documents::list),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/documents/{*path}",
            operation: "documents.get",
            summary: "A document under _vance/, with its ETag (the SHA-256 of its bytes); settings.yaml needs workflow.write and workflow.run",
            query: &[],
            access: Token(Read),
            handler: || get(documents::get),
        },
        Route {
            methods: &["PUT"],
            path: "/brain/{tenant}/project/{project}/documents/{*path}",
            operation: "documents.put",
            summary: "Write a document under _vance/ (answered with its new ETag); If-Match / If-None-Match make it conditional (412 MAG-HTTP-PRECONDITION-FAILED); workflows are validated first (422); settings.yaml needs workflow.run too",
            query: &[],
            access: Token(Write),
            handler: || put(documents::put),
        },
        Route {
            methods: &["DELETE"],
            path: "/brain/{tenant}/project/{project}/documents/{*path}",
            operation: "documents.delete",
            summary: "Remove a document under _vance/ (204); If-Match makes it conditional (412); trigger documents and settings.yaml need workflow.run too; the history is kept (409)",
            query: &[],
            access: Token(Write),
            handler: || delete(documents::delete),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/publish",
            operation: "workflows.publish",
            summary: "Publish the draft: validate it (422), keep the live document in the history under its SHA-256, make the draft live -> {name, version, previous}",
            query: &[],
            access: Token(Write),
            handler: || post(versions::publish),
        },
        Route {
            methods: &["GET"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/versions",
            operation: "workflows.versions",
            summary: "The live document and its history, newest first: {name, archived, draft, versions: [{hash, state, at, size}]}",
            query: &[],
            access: Token(Read),
            handler: || get(versions::list),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/archive",
            operation: "workflows.archive",
            summary: "Archive: new starts are refused (409 MAG-VR001), running runs finish -> {name, archived: true}",
            query: &[],
            access: Token(Write),
            handler: || post(versions::archive),
        },
        Route {
            methods: &["POST"],
            path: "/brain/{tenant}/project/{project}/workflows/{name}/unarchive",
            operation: "workflows.unarchive",
            summary: "Unarchive: starts are accepted again -> {name, archived: false}",
            query: &[],
            access: Token(Write),
            handler: || post(versions::unarchive),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_operations_are_unique() {
        let routes = routes();
        let mut seen = std::collections::HashSet::new();
        for r in &routes {
            assert!(seen.insert(r.operation), "{}", r.operation);
            assert!(r.path.starts_with('/'));
        }
    }
}
