//! API tokens: who may call which route of which tenant.
//!
//! Tokens are configured in `<root>/_auth/tokens.yaml`, read once at start:
//!
//! ```yaml
//! tokens:
//!   - tokenSha256: 5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8
//!     tenant: acme          # the token works on this tenant's projects only
//!     subject: alice        # the default `startedBy` and `answeredBy`
//!     scopes: [workflow.read, workflow.write, workflow.run]
//!     roles: [ops]          # optional: the roles an approval gate's `approvers` may name
//!   - token: a-plain-secret # accepted, but prefer tokenSha256 (hex SHA-256 of the token)
//!     tenant: acme
//!     subject: ci
//!     scopes: [workflow.run]
//! ```
//!
//! Clients send `Authorization: Bearer <token>` (the WebSocket route also takes `?token=`).
//! The presented token is hashed and compared with every configured digest in constant time.
//!
//! Answers, in this order: no token or an unknown token → 401; a token of another tenant →
//! 404 (as if the route's tenant did not exist, so tenants are not revealed); a token without
//! the route's scope → 403. With no token configured every API route answers 401, unless the
//! server runs with `--insecure-no-auth`, where every request acts as subject `anonymous`
//! with every scope on every tenant.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use axum::http::HeaderMap;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::error::ApiError;

/// What a token allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApiScope {
    /// `workflow.read`: read runs, journals, the inbox and documents.
    Read,
    /// `workflow.write`: write documents.
    Write,
    /// `workflow.run`: start and cancel runs, answer gates.
    Run,
}

impl ApiScope {
    /// The scope's name in the token file.
    pub fn as_str(self) -> &'static str {
        match self {
            ApiScope::Read => "workflow.read",
            ApiScope::Write => "workflow.write",
            ApiScope::Run => "workflow.run",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [ApiScope::Read, ApiScope::Write, ApiScope::Run]
            .into_iter()
            .find(|scope| scope.as_str() == s)
    }
}

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Principal {
    /// The token's tenant; `None` (insecure mode only) for every tenant.
    pub tenant: Option<String>,
    /// Who the token stands for.
    pub subject: String,
    /// The roles the token's entry names (`roles: [ops]`), for approval gates' `approvers`.
    pub roles: Vec<String>,
    scopes: BTreeSet<ApiScope>,
}

impl Principal {
    /// Whether the caller presented no credential (a server started with
    /// `--insecure-no-auth`): it stands for nobody in particular.
    pub fn unauthenticated(&self) -> bool {
        self.tenant.is_none()
    }

    /// Whether the caller holds `scope`.
    pub fn has(&self, scope: ApiScope) -> bool {
        self.scopes.contains(&scope)
    }

    /// The names of the scopes the caller holds (`workflow.read`, …), in a stable order.
    pub fn scope_names(&self) -> Vec<&'static str> {
        self.scopes.iter().map(|s| s.as_str()).collect()
    }

    /// Whether the caller may act on `tenant`.
    pub fn may_access(&self, tenant: &str) -> bool {
        self.tenant.as_deref().is_none_or(|t| t == tenant)
    }

    /// 403 unless the caller holds `scope`.
    pub fn require(&self, scope: ApiScope) -> Result<(), ApiError> {
        if self.has(scope) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this token lacks the scope `{}`",
                scope.as_str()
            )))
        }
    }
}

/// Why the token file could not be used. The server does not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthFileError {
    /// The file exists but cannot be read: fix its permissions.
    #[error("[MAG-AUTH001] cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not valid YAML of the documented shape: fix it.
    #[error("[MAG-AUTH002] invalid token file {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a mapping with a `tokens:` list")]
struct TokenFile {
    #[serde(default)]
    tokens: Vec<TokenEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    rename_all = "camelCase",
    expecting = "a token: a mapping with `tenant`, `subject`, `scopes` and `tokenSha256` (or `token`)"
)]
struct TokenEntry {
    #[serde(default)]
    token_sha256: Option<String>,
    #[serde(default)]
    token: Option<String>,
    tenant: String,
    subject: String,
    #[serde(default)]
    scopes: Vec<String>,
    #[serde(default)]
    roles: Vec<String>,
}

#[derive(Debug)]
struct Token {
    digest: [u8; 32],
    principal: Principal,
}

/// The configured tokens and the insecure switch.
#[derive(Debug)]
pub struct Auth {
    tokens: Vec<Token>,
    insecure: bool,
    file: PathBuf,
}

/// The token file under a root: `<root>/_auth/tokens.yaml`.
pub fn token_file(root: &Path) -> PathBuf {
    root.join(crate::tree::AUTH_DIR).join("tokens.yaml")
}

/// The hex SHA-256 of a token, as `tokenSha256` holds it.
pub fn token_sha256(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn parse_hex(s: &str) -> Option<[u8; 32]> {
    let s = s.trim();
    if s.len() != 64 || !s.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

impl Auth {
    /// Reads `file`; a missing file means no token is configured.
    pub fn load(file: PathBuf, insecure: bool) -> Result<Self, AuthFileError> {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(AuthFileError::Read { path: file, source }),
        };
        let invalid = |message: String| AuthFileError::Invalid {
            path: file.clone(),
            message,
        };
        let parsed: TokenFile = if text.trim().is_empty() {
            TokenFile { tokens: Vec::new() }
        } else {
            magrathea_exec::yaml_text::from_str(&text).map_err(|e| invalid(e.to_string()))?
        };
        let mut tokens = Vec::new();
        for (i, entry) in parsed.tokens.into_iter().enumerate() {
            let digest = match (&entry.token_sha256, &entry.token) {
                (Some(hex), None) => parse_hex(hex).ok_or_else(|| {
                    invalid(format!("tokens[{i}].tokenSha256 is not 64 hex digits"))
                })?,
                // An empty token could never be presented (an empty Bearer is no token).
                (None, Some(plain)) if plain.is_empty() => {
                    return Err(invalid(format!("tokens[{i}].token is empty")));
                }
                (None, Some(plain)) => Sha256::digest(plain.as_bytes()).into(),
                _ => {
                    return Err(invalid(format!(
                        "tokens[{i}] needs exactly one of tokenSha256 and token"
                    )));
                }
            };
            // The same token twice would act as the first entry only, whatever the second says
            // (another tenant, other scopes): an operator's mistake, said at start.
            if let Some(j) = tokens.iter().position(|t: &Token| t.digest == digest) {
                return Err(invalid(format!(
                    "tokens[{i}] is the same token as tokens[{j}]: give each entry its own"
                )));
            }
            // A tenant is a directory of the tree: a name a route cannot take (`../t`, `a/b`,
            // `_tenant`) would grant nothing, or something else than written.
            if !super::state::plain_name(&entry.tenant) {
                return Err(invalid(format!(
                    "tokens[{i}].tenant `{}` is not a tenant's name (letters, digits, `.`, `_` \
                     and `-`, not starting with `.`, not `_tenant`)",
                    entry.tenant
                )));
            }
            let mut scopes = BTreeSet::new();
            for s in &entry.scopes {
                scopes.insert(ApiScope::parse(s).ok_or_else(|| {
                    invalid(format!(
                        "tokens[{i}]: unknown scope `{s}` (workflow.read, workflow.write, \
                         workflow.run)"
                    ))
                })?);
            }
            tokens.push(Token {
                digest,
                principal: Principal {
                    tenant: Some(entry.tenant),
                    subject: entry.subject,
                    roles: entry.roles,
                    scopes,
                },
            });
        }
        Ok(Self {
            tokens,
            insecure,
            file,
        })
    }

    /// Whether requests are let through without a token.
    pub fn insecure(&self) -> bool {
        self.insecure
    }

    /// How many tokens are configured.
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }

    /// The caller presenting `token`: 401 without a token or with an unknown one.
    pub fn authenticate(&self, token: Option<&str>) -> Result<Principal, ApiError> {
        if self.insecure {
            return Ok(Principal {
                tenant: None,
                subject: "anonymous".into(),
                roles: Vec::new(),
                scopes: [ApiScope::Read, ApiScope::Write, ApiScope::Run].into(),
            });
        }
        let Some(token) = token else {
            return Err(ApiError::unauthorized(if self.tokens.is_empty() {
                format!(
                    "no API token is configured (in the served tree's {}); add one, or start \
                     the server with --insecure-no-auth on a trusted machine",
                    file_label(&self.file)
                )
            } else {
                "missing `Authorization: Bearer <token>`".to_string()
            }));
        };
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        // Every digest is compared, so the time taken does not tell which one matched.
        let mut found = None;
        for (i, t) in self.tokens.iter().enumerate() {
            if bool::from(t.digest.ct_eq(&presented)) && found.is_none() {
                found = Some(i);
            }
        }
        found
            .map(|i| self.tokens[i].principal.clone())
            .ok_or_else(|| ApiError::unauthorized("unknown token"))
    }

    /// The caller of a tenant's route: 401 (no or unknown token), 404 (another tenant),
    /// 403 (lacks `scope`).
    pub fn authorize(
        &self,
        token: Option<&str>,
        tenant: &str,
        scope: ApiScope,
    ) -> Result<Principal, ApiError> {
        let principal = self.authenticate(token)?;
        if !principal.may_access(tenant) {
            return Err(ApiError::not_found(format!("tenant `{tenant}` not found")));
        }
        principal.require(scope)?;
        Ok(principal)
    }
}

/// The bearer token of a request's `Authorization` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The tokens file as a client may read it: `_auth/tokens.yaml`, never a path of the server.
fn file_label(file: &Path) -> String {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    match file.parent() {
        Some(dir) if name(dir) == crate::tree::AUTH_DIR => {
            format!("{}/{}", crate::tree::AUTH_DIR, name(file))
        }
        _ => name(file),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(yaml: &str) -> Auth {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.yaml");
        std::fs::write(&file, yaml).unwrap();
        Auth::load(file, false).unwrap()
    }

    /// The 401 of a server without tokens says where to add one, without a path of the
    /// server's disk.
    #[test]
    fn without_tokens_the_401_names_the_file_from_the_tree() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("_auth/tokens.yaml");
        let a = Auth::load(file, false).unwrap();
        let e = a.authenticate(None).unwrap_err();
        assert_eq!(e.status, 401);
        assert!(e.message.contains("_auth/tokens.yaml"), "{}", e.message);
        let root = dir.path().display().to_string();
        assert!(!e.message.contains(&root), "{}", e.message);
    }

    #[test]
    fn a_token_file_of_the_wrong_shape_says_what_was_expected_not_a_type_name() {
        for (yaml, expected) in [
            ("- tenant: acme\n", "a mapping with a `tokens:` list"),
            (
                "tokens:\n  - just-a-string\n",
                "a token: a mapping with `tenant`",
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let file = dir.path().join("tokens.yaml");
            std::fs::write(&file, yaml).unwrap();
            let e = Auth::load(file, false).unwrap_err().to_string();
            assert!(e.contains(expected), "{yaml}: {e}");
            assert!(!e.contains("struct"), "{yaml}: {e}");
        }
    }

    #[test]
    fn hashed_and_plain_tokens_authenticate_and_scopes_are_checked() {
        let a = auth(&format!(
            "tokens:\n  - tokenSha256: {}\n    tenant: acme\n    subject: alice\n    scopes: [workflow.read]\n  - token: plain\n    tenant: other\n    subject: bob\n    scopes: [workflow.run]\n",
            token_sha256("secret")
        ));
        let p = a.authorize(Some("secret"), "acme", ApiScope::Read).unwrap();
        assert_eq!(p.subject, "alice");
        let e = a
            .authorize(Some("secret"), "acme", ApiScope::Run)
            .unwrap_err();
        assert_eq!(e.status, 403);
        let e = a
            .authorize(Some("secret"), "other", ApiScope::Read)
            .unwrap_err();
        assert_eq!(e.status, 404);
        let e = a
            .authorize(Some("wrong"), "acme", ApiScope::Read)
            .unwrap_err();
        assert_eq!(e.status, 401);
        let e = a.authorize(None, "acme", ApiScope::Read).unwrap_err();
        assert_eq!(e.status, 401);
        assert_eq!(
            a.authorize(Some("plain"), "other", ApiScope::Run)
                .unwrap()
                .subject,
            "bob"
        );
    }

    #[test]
    fn bad_files_are_rejected_with_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.yaml");
        std::fs::write(
            &file,
            "tokens:\n  - token: x\n    tenant: a\n    subject: s\n    scopes: [admin]\n",
        )
        .unwrap();
        let e = Auth::load(file.clone(), false).unwrap_err().to_string();
        assert!(e.contains("unknown scope `admin`"), "{e}");
        std::fs::write(
            &file,
            "tokens:\n  - tokenSha256: abc\n    tenant: a\n    subject: s\n",
        )
        .unwrap();
        let e = Auth::load(file, false).unwrap_err().to_string();
        assert!(e.contains("64 hex"), "{e}");
    }

    #[test]
    fn no_file_means_every_request_is_refused() {
        let a = Auth::load(PathBuf::from("/nonexistent/tokens.yaml"), false).unwrap();
        let e = a.authorize(Some("x"), "acme", ApiScope::Read).unwrap_err();
        assert_eq!(e.status, 401);
        let e = a.authorize(None, "acme", ApiScope::Read).unwrap_err();
        assert!(e.message.contains("--insecure-no-auth"), "{}", e.message);
    }
}
