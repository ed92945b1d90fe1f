//! `GET /schemas/{name}.schema.json`: the JSON Schemas of the documents under `_vance/`
//! (`workflow`, `settings`, `recipe`, `event`, `scheduler`), without authentication, for editors: point a
//! YAML language server at them to complete and check documents while they are written.
//! They are generated from the same types as the repository's `schemas/` files.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use magrathea_yaml::schema::{DOCUMENTS, schema};

use super::error::ApiError;

/// 200 with the schema (`application/schema+json`); 404 naming the schemas there are.
pub(crate) async fn get(Path(file): Path<String>) -> Result<Response, ApiError> {
    let found = file.strip_suffix(".schema.json").and_then(schema);
    let Some(value) = found else {
        let names: Vec<String> = DOCUMENTS
            .iter()
            .map(|(name, _)| format!("{name}.schema.json"))
            .collect();
        return Err(ApiError::not_found(format!(
            "no schema `{file}`: expected one of {}",
            names.join(", ")
        )));
    };
    let body = serde_json::to_string_pretty(&value).map_err(ApiError::internal)?;
    Ok(([(header::CONTENT_TYPE, "application/schema+json")], body).into_response())
}
