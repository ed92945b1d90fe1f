//! `GET /healthz`: liveness, without authentication.

use axum::Json;
use serde_json::{Value, json};

/// 200 `{"status": "ok"}` while the server answers.
pub(crate) async fn healthz() -> Json<Value> {
    Json(json!({ "status": "ok" }))
}
