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
        out.push(
            json!({ "name": q, "in": "query", "required": false, "schema": { "type": "string" } }),
        );
    }
    out
}

fn operation(route: &Route, method: &str) -> Value {
    let error = json!({ "$ref": "#/components/responses/Error" });
    let mut responses = Map::new();
    responses.insert("200".into(), json!({ "description": "OK" }));
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
