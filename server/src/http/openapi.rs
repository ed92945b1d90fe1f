//! `GET /openapi.json`: an OpenAPI 3.1 document generated from the route table.

use axum::Json;
use serde_json::{Map, Value, json};

use super::routes::{Access, Route, routes};

/// The OpenAPI path of an axum pattern: `{*path}` becomes `{path}`.
pub fn openapi_path(pattern: &str) -> String {
    pattern.replace("{*", "{")
}

fn parameters(route: &Route) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = route.path;
    while let Some(start) = rest.find('{') {
        let end = rest[start..].find('}').map_or(rest.len(), |e| start + e);
        let name = rest[start + 1..end].trim_start_matches('*');
        out.push(json!({
            "name": name, "in": "path", "required": true, "schema": { "type": "string" }
        }));
        rest = &rest[end..];
    }
    for q in route.query {
        let mut param =
            json!({ "name": q, "in": "query", "required": false, "schema": { "type": "string" } });
        if *q == "token" {
            // Browsers cannot set headers on a WebSocket; everything else sends the header.
            param["description"] = json!(
                "The API token, for a WebSocket upgrade only (a browser cannot set its headers); \
                 other requests send `Authorization: Bearer <token>`"
            );
        }
        out.push(param);
    }
    if route.operation == "workflows.start" || route.operation == "events.trigger" {
        out.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": false,
            "description": "A start with a key already used for this workflow (or event) answers 200 with the run it started",
            "schema": { "type": "string", "minLength": 1, "maxLength": 255 }
        }));
    }
    if route.operation == "workflows.runs.events" {
        out.push(json!({
            "name": "Last-Event-ID", "in": "header", "required": false,
            "description": "The seq of the last record the client holds (a reconnecting EventSource sends it): the stream starts after it; a seq the run's journal does not hold answers 400 MAG-RD001",
            "schema": { "type": "string", "pattern": "^[0-9]+$" }
        }));
    }
    if route.operation == "runs.rerun" || route.operation == "runs.retry" {
        out.push(json!({
            "name": "Idempotency-Key", "in": "header", "required": false,
            "description": "A rerun (or retry) of this run with a key already used answers 200 with the run it started",
            "schema": { "type": "string", "minLength": 1, "maxLength": 255 }
        }));
    }
    out
}

/// A success other than 200 that an operation answers, and errors beyond those of its access.
struct Answers {
    success: &'static [(&'static str, &'static str)],
    errors: &'static [&'static str],
}

/// What the operation `operation` answers besides 200 and the errors of its access.
fn answers(operation: &str) -> Answers {
    let (success, errors): (&[(&str, &str)], &[&str]) = match operation {
        "workflows.start" => (
            &[(
                "201",
                "Created: a new run (200: the run an Idempotency-Key started before)",
            )],
            &["409", "422", "429"],
        ),
        "runs.rerun" | "runs.retry" => (
            &[(
                "202",
                "Accepted: the new run (200: the run an Idempotency-Key started before)",
            )],
            &["409", "422"],
        ),
        // An invalid draft (with its diagnostics), a history that does not match.
        "workflows.publish" => (&[], &["409", "422"]),
        // A run in a state the request does not apply to (ended; not paused).
        "runs.pause" | "runs.resume" | "workflows.runs.pause" | "workflows.runs.resume" => {
            (&[], &["409"])
        }
        "workflows.runs.events" => (
            &[(
                "204",
                "No Content: the Last-Event-ID holds every record of a run that ended",
            )],
            &["400", "429"],
        ),
        // With Upgrade: websocket, the session; beyond the subject's follower places, 429
        // MAG-RD003.
        "workflows.events.stream" => (
            &[(
                "101",
                "Switching Protocols: the WebSocket session (with Upgrade: websocket)",
            )],
            &["400", "429"],
        ),
        // A wait beyond the subject's follower places (MAG-RD003).
        "workflows.runs.get" => (&[], &["429"]),
        "workflows.webhooks.invoke" => (
            &[(
                "202",
                "Accepted: a run was started (200: a duplicate inside the dedupe window)",
            )],
            // 422: the workflow it starts cannot be started (MAG-HTTP-TRIGGER-FAILED).
            &["400", "401", "404", "405", "409", "413", "422"],
        ),
        // 400: the workflow refuses the schedule's parameters; 409: paused, or archived.
        "project.schedules.trigger" => (
            &[("202", "Accepted: a run was started")],
            &["400", "409", "422"],
        ),
        // 409: the event document is switched off, or an operator paused it.
        "events.trigger" => (
            &[(
                "202",
                "Accepted: a run was started (200: the run an Idempotency-Key started before)",
            )],
            &["400", "409", "422"],
        ),
        "documents.put" => (
            &[("201", "Created: a new document (200: replaced)")],
            &["409", "413", "422", "507"],
        ),
        "documents.delete" => (&[("204", "No Content: the document was removed")], &["409"]),
        // Nodes that are not states; a layout that would leave the project or its quota.
        "workflows.graph.put" => (&[], &["403", "422", "507"]),
        // A workflow linked out of the project.
        "workflows.graph.get" => (&[], &["403"]),
        // After a failed journal commit: `{status: "unhealthy", reason}`.
        "health" => (&[], &["503"]),
        // The upgrade; a request that is no WebSocket handshake; another tenant's or an
        // unknown project (as any route of a tenant); without auth, a Host or Origin refused;
        // beyond the subject's sessions, MAG-RD005.
        "ws" => (
            &[("101", "Switching Protocols: the WebSocket session")],
            &["400", "403", "404", "421", "429"],
        ),
        _ => (&[], &[]),
    };
    Answers { success, errors }
}

/// The JSON Schema of `T`, to stand in an OpenAPI 3.1 document.
fn schema<T: schemars::JsonSchema>() -> Value {
    let mut v = serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
    }
    v
}

/// The body operation `operation` takes and the body of its success, as the types the route
/// (de)serialises describe them.
fn bodies(operation: &str) -> (Option<Value>, Option<Value>) {
    use super::{approvals, inbox, pause, rerun, retry, runs, triggers};
    match operation {
        "workflows.start" => (
            Some(schema::<runs::StartBody>()),
            Some(schema::<runs::Started>()),
        ),
        "workflows.runs.cancel" => (Some(schema::<runs::CancelBody>()), None),
        "runs.retry" => (Some(schema::<retry::RetryBody>()), None),
        "runs.pause" | "runs.resume" | "workflows.runs.pause" | "workflows.runs.resume" => {
            (Some(schema::<pause::PauseBody>()), None)
        }
        "runs.rerun" => (Some(schema::<rerun::RerunBody>()), None),
        "inbox.answer" => (
            Some(schema::<inbox::AnswerBody>()),
            Some(schema::<inbox::Answered>()),
        ),
        "workflows.approvals.approve" | "workflows.approvals.reject" => (
            Some(schema::<approvals::CommentBody>()),
            Some(schema::<approvals::Decided>()),
        ),
        "workflows.triggers.update" | "project.triggers.update" => {
            (Some(schema::<triggers::TriggerPatch>()), None)
        }
        _ => (None, None),
    }
}

fn operation(route: &Route, method: &str) -> Value {
    let error = json!({ "$ref": "#/components/responses/Error" });
    let mut responses = Map::new();
    responses.insert("200".into(), json!({ "description": "OK" }));
    let more = answers(route.operation);
    for (code, description) in more.success {
        responses.insert((*code).into(), json!({ "description": description }));
    }
    for code in more.errors {
        responses.insert((*code).into(), error.clone());
    }
    let mut op = json!({
        "operationId": if route.methods.len() == 1 {
            route.operation.to_string()
        } else {
            format!("{}.{}", route.operation, method.to_ascii_lowercase())
        },
        "summary": route.summary,
        "parameters": parameters(route),
    });
    match route.access {
        Access::Public => {}
        Access::Token(scope) => {
            op["security"] = json!([{ "bearer": [scope.as_str()] }]);
            op["x-scope"] = json!(scope.as_str());
            for code in ["400", "401", "403", "404"] {
                responses.insert(code.into(), error.clone());
            }
        }
        Access::AnyToken => {
            op["security"] = json!([{ "bearer": [] }]);
            responses.insert("401".into(), error.clone());
        }
        Access::EventToken => {
            op["security"] = json!([{ "eventToken": [] }, { "bearer": ["workflow.run"] }]);
            for code in ["401", "403", "404", "405", "413"] {
                responses.insert(code.into(), error.clone());
            }
        }
    }
    // A route of a tenant reads or writes the store: while its commits fail (a full disk),
    // 503 `MAG-HTTP-STORE-UNAVAILABLE` with `Retry-After`.
    if !matches!(route.access, Access::Public) {
        responses.insert("503".into(), error.clone());
    }
    // Every request that may carry a body is bounded in size and in the time it takes to
    // arrive (the server's body limit and `--body-read-timeout`), whatever the route.
    if matches!(method, "POST" | "PUT" | "PATCH") {
        for code in ["408", "413"] {
            responses.insert(code.into(), error.clone());
        }
    }
    let (request, reply) = bodies(route.operation);
    if let Some(schema) = request {
        // A body whose schema requires a field must be sent.
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|fields| !fields.is_empty());
        op["requestBody"] = json!({
            "required": required,
            "content": { "application/json": { "schema": schema } },
        });
    }
    if let Some(schema) = reply {
        // Every success of the operation answers the same shape (a start's 201, and its 200
        // for a repeated Idempotency-Key).
        for code in ["200", "201"] {
            if let Some(r) = responses.get_mut(code) {
                r["content"] = json!({ "application/json": { "schema": schema.clone() } });
            }
        }
    }
    op["responses"] = Value::Object(responses);
    op
}

/// The document.
pub fn openapi() -> Value {
    let mut paths = Map::new();
    for route in routes() {
        let item = paths
            .entry(openapi_path(route.path))
            .or_insert_with(|| json!({}));
        for method in route.methods {
            item[method.to_ascii_lowercase()] = operation(&route, method);
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Magrathea",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Durable workflow runs, inbox, events and documents. Errors are \
                {error: {code: \"MAG-HTTP-…\", message}}.",
        },
        "paths": paths,
        "components": {
            "securitySchemes": {
                "bearer": { "type": "http", "scheme": "bearer", "description": "API token of <root>/_auth/tokens.yaml" },
                "eventToken": { "type": "http", "scheme": "bearer", "description": "The event document's auth.tokenSetting" },
            },
            "responses": {
                "Error": {
                    "description": "{error: {code, message, diagnostics?}}",
                    "content": { "application/json": { "schema": {
                        "type": "object",
                        "properties": { "error": { "type": "object", "properties": {
                            "code": { "type": "string" },
                            "message": { "type": "string" },
                            "diagnostics": { "type": "array", "items": { "type": "string" } },
                        } } },
                    } } },
                },
            },
        },
    })
}

/// `GET /openapi.json`.
pub(crate) async fn document() -> Json<Value> {
    Json(openapi())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation the answers table names is a route, so the table cannot drift from
    /// the route table unnoticed.
    #[test]
    fn every_operation_with_more_answers_is_a_route() {
        let operations: Vec<&str> = routes().iter().map(|r| r.operation).collect();
        for op in [
            "workflows.start",
            "runs.rerun",
            "runs.retry",
            "workflows.runs.events",
            "workflows.webhooks.invoke",
            "project.schedules.trigger",
            "events.trigger",
            "documents.put",
        ] {
            assert!(operations.contains(&op), "{op} is not a route");
            assert!(!answers(op).success.is_empty(), "{op}");
        }
    }

    /// Every operation the bodies table names is a route and has a body.
    #[test]
    fn every_operation_with_a_body_is_a_route() {
        let operations: Vec<&str> = routes().iter().map(|r| r.operation).collect();
        for op in [
            "workflows.start",
            "workflows.runs.cancel",
            "runs.retry",
            "runs.rerun",
            "inbox.answer",
            "workflows.approvals.approve",
            "workflows.approvals.reject",
            "workflows.triggers.update",
            "project.triggers.update",
        ] {
            assert!(operations.contains(&op), "{op} is not a route");
            assert!(bodies(op).0.is_some(), "{op}");
        }
    }

    /// The routes of the Friday design carry its operation ids and scopes.
    #[test]
    fn the_friday_routes_have_the_designs_operation_ids_and_scopes() {
        let doc = openapi();
        for (method, path, id, scope) in [
            (
                "get",
                "/v1/workflows/{workflowId}/triggers",
                "workflows.triggers.list",
                Some("workflow.read"),
            ),
            (
                "patch",
                "/v1/workflow-triggers/{id}",
                "workflows.triggers.update",
                Some("workflow.write"),
            ),
            (
                "post",
                "/v1/workflows/{workflowId}/triggers/resync",
                "workflows.triggers.resync",
                Some("workflow.write"),
            ),
            (
                "post",
                "/v1/workflow-webhooks/{pathToken}",
                "workflows.webhooks.invoke",
                None,
            ),
            (
                "get",
                "/v1/workflow-approvals",
                "workflows.approvals.list",
                Some("workflow.run"),
            ),
            (
                "get",
                "/v1/workflow-approvals/{id}",
                "workflows.approvals.get",
                Some("workflow.run"),
            ),
            (
                "post",
                "/v1/workflow-approvals/{id}/approve",
                "workflows.approvals.approve",
                Some("workflow.run"),
            ),
            (
                "post",
                "/v1/workflow-approvals/{id}/reject",
                "workflows.approvals.reject",
                Some("workflow.run"),
            ),
            (
                "post",
                "/v1/workflow-runs/{runId}/resume",
                "workflows.runs.resume",
                Some("workflow.run"),
            ),
        ] {
            let op = &doc["paths"][path][method];
            assert_eq!(op["operationId"], id, "{method} {path}: {op}");
            assert_eq!(op["x-scope"].as_str(), scope, "{method} {path}: {op}");
        }
        let resume = &doc["paths"]["/v1/workflow-runs/{runId}/resume"]["post"]["responses"];
        assert!(resume.get("409").is_some(), "409 missing in {resume}");
        let publish = &doc["paths"]["/brain/{tenant}/project/{project}/workflows/{name}/publish"]["post"]
            ["responses"];
        assert!(publish.get("422").is_some(), "422 missing in {publish}");
    }

    /// What a route answers besides its success: the health check's 503, the WebSocket's
    /// upgrade and refusals, and the 503 of a failing store on every route of a tenant.
    #[test]
    fn the_health_check_the_websocket_and_a_failing_store_are_documented() {
        let doc = openapi();
        let health = &doc["paths"]["/healthz"]["get"]["responses"];
        assert!(health.get("503").is_some(), "{health}");
        let ws = &doc["paths"]["/brain/{tenant}/project/{project}/ws"]["get"]["responses"];
        for code in ["101", "400", "401", "403", "404", "421", "429"] {
            assert!(ws.get(code).is_some(), "{code} missing in {ws}");
        }
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if op.get("security").is_some() {
                    assert!(
                        op["responses"].get("503").is_some(),
                        "503 missing in {method} {path}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_route_that_takes_a_body_documents_its_size_and_time_bounds() {
        let doc = openapi();
        let mut seen = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                if matches!(method.as_str(), "post" | "put" | "patch") {
                    seen += 1;
                    for code in ["408", "413"] {
                        assert!(
                            op["responses"].get(code).is_some(),
                            "{code} missing in {method} {path}"
                        );
                    }
                }
            }
        }
        assert!(seen > 20, "{seen} operations with a body");
    }

    #[test]
    fn a_start_is_documented_as_201_with_its_refusals() {
        let doc = openapi();
        let start = &doc["paths"]["/brain/{tenant}/project/{project}/workflows/{name}/start"]["post"]
            ["responses"];
        for code in ["200", "201", "409", "422"] {
            assert!(start.get(code).is_some(), "{code} missing in {start}");
        }
        let hook = &doc["paths"]["/v1/workflow-webhooks/{pathToken}"]["post"]["responses"];
        for code in ["202", "401", "405", "413"] {
            assert!(hook.get(code).is_some(), "{code} missing in {hook}");
        }
    }

    #[test]
    fn the_main_operations_show_the_bodies_they_take_and_answer() {
        let doc = openapi();
        let op = |method: &str, path: &str| doc["paths"][path][method].clone();
        let start = op(
            "post",
            "/brain/{tenant}/project/{project}/workflows/{name}/start",
        );
        let body = &start["requestBody"]["content"]["application/json"]["schema"];
        for field in ["params", "startedBy", "draft"] {
            assert!(body["properties"].get(field).is_some(), "{field}: {body}");
        }
        assert_eq!(body["additionalProperties"], false, "{body}");
        for code in ["200", "201"] {
            let reply = &start["responses"][code]["content"]["application/json"]["schema"];
            for field in ["workflowRunId", "workflowName"] {
                assert!(
                    reply["properties"].get(field).is_some(),
                    "{code} {field}: {reply}"
                );
            }
        }
        let key = start["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "Idempotency-Key")
            .cloned();
        assert_eq!(key.map(|k| k["in"].clone()), Some(json!("header")));
        let events = op("get", "/v1/workflow-events");
        for code in ["101", "429"] {
            assert!(events["responses"].get(code).is_some(), "{code}: {events}");
        }
        let follow = op(
            "get",
            "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/events",
        );
        assert!(
            follow["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "Last-Event-ID" && p["in"] == "header"),
            "{follow}"
        );
        let token = events["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "token")
            .cloned()
            .unwrap();
        assert!(
            token["description"]
                .as_str()
                .is_some_and(|d| d.contains("WebSocket")),
            "{token}"
        );
        for path in [
            "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/rerun",
            "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/retry",
        ] {
            let key = op("post", path)["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "Idempotency-Key");
            assert!(key, "{path} takes an Idempotency-Key");
        }

        let answer = op(
            "post",
            "/brain/{tenant}/project/{project}/inbox/{item_id}/answer",
        );
        let body = &answer["requestBody"]["content"]["application/json"]["schema"];
        for field in ["kind", "option", "text", "outcome", "value", "comment"] {
            assert!(body["properties"].get(field).is_some(), "{field}: {body}");
        }
        let reply = &answer["responses"]["200"]["content"]["application/json"]["schema"];
        for field in ["applied", "ignored", "run"] {
            assert!(reply["properties"].get(field).is_some(), "{field}: {reply}");
        }
        let approve = op("post", "/v1/workflow-approvals/{id}/approve");
        let body = &approve["requestBody"]["content"]["application/json"]["schema"];
        assert!(body["properties"].get("comment").is_some(), "{body}");
        let reply =
            approve["responses"]["200"]["content"]["application/json"]["schema"].to_string();
        for field in ["applied", "ignored", "run", "approval", "status"] {
            assert!(reply.contains(&format!("\"{field}\"")), "{field}: {reply}");
        }
        for path in [
            "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/pause",
            "/v1/workflow-runs/{runId}/resume",
        ] {
            let body = &op("post", path)["requestBody"]["content"]["application/json"]["schema"];
            assert!(body["properties"].get("reason").is_some(), "{path}: {body}");
        }
        let patch = op("patch", "/v1/workflow-triggers/{id}");
        let body = &patch["requestBody"]["content"]["application/json"]["schema"];
        assert!(body["properties"].get("enabled").is_some(), "{body}");
        // What the server refuses a body without is required there, and so is the body.
        assert_eq!(body["required"], json!(["enabled"]), "{body}");
        assert_eq!(body["properties"]["enabled"]["type"], "boolean", "{body}");
        assert_eq!(patch["requestBody"]["required"], true, "{patch}");
        let retry = op(
            "post",
            "/brain/{tenant}/project/{project}/workflows/runs/{run_id}/retry",
        );
        let body = &retry["requestBody"]["content"]["application/json"]["schema"];
        assert_eq!(body["required"], json!(["definition"]), "{body}");
        assert_eq!(retry["requestBody"]["required"], true, "{retry}");
        let start = op(
            "post",
            "/brain/{tenant}/project/{project}/workflows/{name}/start",
        );
        assert_eq!(start["requestBody"]["required"], false, "{start}");
    }
}
