//! `GET /v1/me`: who the token is, what it may do and which tenants and projects it may open,
//! so a client (the web UI) can offer a tenant/project picker and hide what the token cannot
//! do.
//!
//! A token of a tenant sees that tenant only; the server's other tenants are never named.
//! Only `--insecure-no-auth` lists every tenant of the document root (its `tenant` is `null`).
//! A tenant's projects are the directories of `<root>/<tenant>/` that are plain names, except
//! `_tenant` (the tenant-wide documents) and symbolic links: sorted, at most [`MAX_LISTED`] of them, `truncated`
//! telling when more exist.

use std::path::Path;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use serde::Serialize;

use super::auth::bearer;
use super::error::ApiError;
use super::state::AppState;

/// Most tenants, and most projects of one tenant, that `/v1/me` lists.
pub const MAX_LISTED: usize = 1000;

/// The reply of `GET /v1/me`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    /// Who the token stands for (`anonymous` with `--insecure-no-auth`).
    pub subject: String,
    /// The token's tenant; `null` for every tenant (`--insecure-no-auth` only).
    pub tenant: Option<String>,
    /// The scopes the token holds (`workflow.read`, `workflow.write`, `workflow.run`).
    pub scopes: Vec<&'static str>,
    /// The roles the token's entry names.
    pub roles: Vec<String>,
    /// The tenants the token may open, with their projects, sorted by name.
    pub tenants: Vec<TenantEntry>,
    /// Whether there were more than [`MAX_LISTED`] tenants (insecure mode only).
    pub truncated: bool,
}

/// A tenant the token may open.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TenantEntry {
    /// The tenant.
    pub name: String,
    /// Its project directories, sorted, at most [`MAX_LISTED`].
    pub projects: Vec<String>,
    /// Whether the tenant has more projects than listed.
    pub truncated: bool,
}

/// `GET /v1/me` → [`Me`]; 401 without a valid token.
pub(crate) async fn me(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Me>, ApiError> {
    let who = state.auth.authenticate(bearer(&headers))?;
    let root = state.root().to_path_buf();
    let tenant = who.tenant.clone();
    let (tenants, truncated) = tokio::task::spawn_blocking(move || match tenant {
        Some(t) => (vec![tenant_entry(&root, &t)], false),
        None => {
            let mut names = crate::tree::tenant_names(&root);
            let truncated = bounded(&mut names);
            let tenants = names.iter().map(|t| tenant_entry(&root, t)).collect();
            (tenants, truncated)
        }
    })
    .await
    .map_err(ApiError::internal)?;
    Ok(Json(Me {
        subject: who.subject.clone(),
        tenant: who.tenant.clone(),
        scopes: who.scope_names(),
        roles: who.roles.clone(),
        tenants,
        truncated,
    }))
}

fn tenant_entry(root: &Path, tenant: &str) -> TenantEntry {
    let mut projects = if super::state::plain_name(tenant) {
        crate::tree::project_names(&root.join(tenant))
    } else {
        Vec::new()
    };
    let truncated = bounded(&mut projects);
    TenantEntry {
        name: tenant.to_string(),
        projects,
        truncated,
    }
}

/// Keeps the first [`MAX_LISTED`] of `names`; whether there were more.
fn bounded(names: &mut Vec<String>) -> bool {
    let truncated = names.len() > MAX_LISTED;
    names.truncate(MAX_LISTED);
    truncated
}
