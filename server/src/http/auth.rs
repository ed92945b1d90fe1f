//! API tokens: who may call which route of which tenant.
//!
//! Tokens are configured in `<root>/_auth/tokens.yaml`, read at start and again whenever the
//! file changes (the server looks every [`RELOAD_EVERY`]), so a token added or revoked takes
//! effect without a restart. A file that is invalid at start stops the server; one edited into
//! an invalid state later is refused with an error in the log, and the tokens read before stay
//! in force until the file is fixed:
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
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use axum::http::HeaderMap;
use magrathea_exec::FileStamp;
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
#[derive(Debug, Clone, PartialEq)]
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
    /// The file or its directory is writable by every user of the machine: remove their
    /// write permission.
    #[error("[MAG-AUTH003] {message}")]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// What is wrong and how to fix it.
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

#[derive(Debug, PartialEq)]
struct Token {
    digest: [u8; 32],
    principal: Principal,
}

/// How often a server looks whether its token file changed.
pub const RELOAD_EVERY: Duration = Duration::from_secs(2);

/// The configured tokens and the insecure switch.
#[derive(Debug)]
pub struct Auth {
    tokens: RwLock<Arc<Tokens>>,
    insecure: bool,
    file: PathBuf,
    /// Counts the readings that changed the tokens, for the streams that must end when their
    /// token no longer stands ([`Auth::revoked`]).
    changes: tokio::sync::watch::Sender<u64>,
}

/// The tokens of one reading of the file, and what the file looked like then.
#[derive(Debug, Default)]
struct Tokens {
    list: Vec<Token>,
    /// `None` when the file was missing, or modified too recently for its stamp to tell a
    /// later edit apart (it is read again at the next look).
    stamp: Option<FileStamp>,
}

/// The token file's stamp; `None` when it is missing, or was modified too recently for a
/// later write to be told apart by its stamp.
fn stamp_of(file: &Path) -> Option<FileStamp> {
    let stamp = FileStamp::of(&std::fs::metadata(file).ok()?)?;
    stamp.settled(SystemTime::now()).then_some(stamp)
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
        let tokens = read_tokens(&file)?;
        Ok(Self {
            tokens: RwLock::new(Arc::new(tokens)),
            insecure,
            file,
            changes: tokio::sync::watch::Sender::new(0),
        })
    }

    /// Reads the file again if it changed since it was last read: `Ok(true)` when the tokens
    /// were replaced. An invalid or unreadable file is an error, and the tokens stay as they
    /// were (an edit half-way must not lock everyone out, nor let anyone in).
    pub fn reload(&self) -> Result<bool, AuthFileError> {
        let current = self.current();
        if current.stamp.is_some() && current.stamp == stamp_of(&self.file) {
            return Ok(false);
        }
        let tokens = read_tokens(&self.file)?;
        let changed = tokens.list != current.list;
        *self.tokens.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tokens);
        if changed {
            self.changes.send_modify(|n| *n = n.wrapping_add(1));
        }
        Ok(changed)
    }

    /// Resolves once `token` no longer stands for `who` (removed from the file, or given
    /// another tenant, subject, roles or scopes): a stream or session it opened ends then.
    /// Never resolves without a token (`--insecure-no-auth`).
    pub async fn revoked(&self, token: Option<&str>, who: &Principal) {
        let Some(token) = token else {
            return std::future::pending().await;
        };
        let mut changes = self.changes.subscribe();
        loop {
            if changes.changed().await.is_err() {
                return std::future::pending().await;
            }
            if self.authenticate(Some(token)).ok().as_ref() != Some(who) {
                return;
            }
        }
    }

    /// The tokens as last read.
    fn current(&self) -> Arc<Tokens> {
        self.tokens
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Reads the token file (see the module docs); a missing file means no token.
fn read_tokens(file: &Path) -> Result<Tokens, AuthFileError> {
    // Taken before the reading: what is read is at least as new as the stamp.
    let stamp = stamp_of(file);
    if let Some(message) = super::token_file_mode::world_writable(file) {
        return Err(AuthFileError::Unsafe {
            path: file.to_path_buf(),
            message,
        });
    }
    let file = file.to_path_buf();
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
    let plain = parsed.tokens.iter().any(|t| t.token.is_some());
    for warning in super::token_file_mode::warnings(&file, plain) {
        tracing::warn!("{warning}");
    }
    let mut tokens = Vec::new();
    for (i, entry) in parsed.tokens.into_iter().enumerate() {
        let digest = match (&entry.token_sha256, &entry.token) {
            (Some(hex), None) => parse_hex(hex)
                .ok_or_else(|| invalid(format!("tokens[{i}].tokenSha256 is not 64 hex digits")))?,
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
    Ok(Tokens {
        list: tokens,
        stamp,
    })
}

impl Auth {
    /// Whether requests are let through without a token.
    pub fn insecure(&self) -> bool {
        self.insecure
    }

    /// How many tokens are configured.
    pub fn token_count(&self) -> usize {
        self.current().list.len()
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
        let tokens = self.current();
        let Some(token) = token else {
            return Err(ApiError::unauthorized(if tokens.list.is_empty() {
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
        for (i, t) in tokens.list.iter().enumerate() {
            if bool::from(t.digest.ct_eq(&presented)) && found.is_none() {
                found = Some(i);
            }
        }
        found
            .map(|i| tokens.list[i].principal.clone())
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

/// Reads the token file again when it changes, every [`RELOAD_EVERY`], for as long as the
/// server holds `auth`. A file that cannot be used is said in the log once per error, and the
/// tokens read before stay in force.
pub(crate) fn spawn_reload(auth: &Arc<Auth>) {
    let auth = Arc::downgrade(auth);
    tokio::spawn(async move {
        let mut said: Option<String> = None;
        loop {
            tokio::time::sleep(RELOAD_EVERY).await;
            let Some(auth) = auth.upgrade() else {
                return;
            };
            let Ok(reloaded) = tokio::task::spawn_blocking(move || auth.reload()).await else {
                return;
            };
            match reloaded {
                Ok(changed) => {
                    if changed {
                        tracing::info!("the token file changed: its tokens are in force");
                    }
                    said = None;
                }
                Err(e) => {
                    let text = e.to_string();
                    if said.as_deref() != Some(text.as_str()) {
                        tracing::error!(
                            error = %text,
                            "the token file changed and cannot be used; the tokens read before \
                             stay in force"
                        );
                        said = Some(text);
                    }
                }
            }
        }
    });
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

    /// A token file of one plain token of acme, subject `s`, scope `workflow.read`.
    fn entry(token: &str) -> String {
        format!(
            "tokens:\n  - token: {token}\n    tenant: acme\n    subject: s\n    scopes: [workflow.read]\n"
        )
    }

    /// A reload takes an edited file's tokens, keeps the tokens in force when the edit is
    /// invalid, and takes a removed file as no token.
    #[test]
    fn a_reload_follows_the_file_and_an_invalid_edit_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.yaml");
        std::fs::write(&file, entry("first")).unwrap();
        let a = Auth::load(file.clone(), false).unwrap();
        assert!(!a.reload().unwrap(), "nothing changed");
        std::fs::write(&file, entry("second")).unwrap();
        assert!(a.reload().unwrap());
        assert!(a.authenticate(Some("second")).is_ok());
        assert_eq!(a.authenticate(Some("first")).unwrap_err().status, 401);

        std::fs::write(&file, "tokens:\n  - token: x\n").unwrap();
        let e = a.reload().unwrap_err();
        assert!(e.to_string().contains("[MAG-AUTH002]"), "{e}");
        assert!(
            a.authenticate(Some("second")).is_ok(),
            "the tokens in force stay"
        );

        std::fs::remove_file(&file).unwrap();
        assert!(a.reload().unwrap());
        assert_eq!(a.token_count(), 0);
    }

    /// A file every user may write is not trusted: at start it is an error, later its edits
    /// are refused and the tokens read before stay.
    #[test]
    fn a_token_file_every_user_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tokens.yaml");
        let chmod = |m: u32| {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(m)).unwrap();
        };
        std::fs::write(&file, entry("first")).unwrap();
        chmod(0o666);
        let e = Auth::load(file.clone(), false).unwrap_err();
        assert!(matches!(e, AuthFileError::Unsafe { .. }), "{e}");
        assert!(e.to_string().contains("[MAG-AUTH003]"), "{e}");

        chmod(0o600);
        let a = Auth::load(file.clone(), false).unwrap();
        std::fs::write(&file, entry("intruder")).unwrap();
        chmod(0o666);
        let e = a.reload().unwrap_err();
        assert!(e.to_string().contains("[MAG-AUTH003]"), "{e}");
        assert!(
            a.authenticate(Some("first")).is_ok(),
            "the tokens in force stay"
        );
        assert_eq!(a.authenticate(Some("intruder")).unwrap_err().status, 401);
    }
}
